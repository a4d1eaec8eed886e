"""Static guards: no code path in core/, app/ or app.py unpickles, evaluates or shells out.

The scan walks each file's syntax tree, so comments and docstrings that mention these calls are
fine; a regression (say `torch.load(path)` without `weights_only=True`) fails here.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCANNED = sorted([*(REPO / "core").rglob("*.py"), *(REPO / "app").rglob("*.py"), REPO / "app.py"])
UNPICKLING_MODULES = {"pickle", "cPickle", "_pickle", "dill", "joblib", "marshal", "shelve", "cloudpickle"}
EVALUATING_BUILTINS = {"eval", "exec", "compile", "__import__"}
SHELL_CALLS = {("os", "system"), ("os", "popen"), ("os", "execl"), ("os", "execlp"), ("os", "execv"),
               ("os", "execvp"), ("os", "spawnl"), ("os", "spawnv"), ("subprocess", "getoutput"),
               ("subprocess", "getstatusoutput")}


def _keyword(call: ast.Call, name: str) -> object:
    """The constant value passed as keyword `name` (None when absent or not a constant)."""
    for keyword in call.keywords:
        if keyword.arg == name and isinstance(keyword.value, ast.Constant):
            return keyword.value.value
    return None


def _dotted(node: ast.AST) -> tuple[str, ...]:
    """("torch", "load") for `torch.load`, ("eval",) for `eval`; () for anything else."""
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute):
        owner = _dotted(node.value)
        return (*owner, node.attr) if owner else ()
    return ()


def unsafe_calls(source: str) -> list[str]:
    """Descriptions (with line numbers) of calls that could unpickle, evaluate or reach a shell."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"line {node.lineno}: imports {m}" for m in modules if m.split(".")[0] in UNPICKLING_MODULES]
        if not isinstance(node, ast.Call):
            continue
        name, line = _dotted(node.func), f"line {node.lineno}: "
        if name[-2:] == ("torch", "load") and _keyword(node, "weights_only") is not True:
            found.append(line + "torch.load without weights_only=True")
        if name[-1:] == ("load",) and name[:1] in {("np",), ("numpy",)} and _keyword(node, "allow_pickle") is True:
            found.append(line + "np.load with allow_pickle=True")
        if name[-1:] == ("load",) and name[:1] == ("yaml",) and "Safe" not in ast.unparse(node):
            found.append(line + "yaml.load without a safe loader")
        if len(name) == 1 and name[0] in EVALUATING_BUILTINS:
            found.append(line + f"{name[0]}()")
        if name[-2:] in SHELL_CALLS or _keyword(node, "shell") is True:
            found.append(line + f"shell: {'.'.join(name)}")
        if _keyword(node, "trust_remote_code") is True:
            found.append(line + "trust_remote_code=True runs code from a model folder")
    return found


@pytest.mark.parametrize("source, problem", [
    ("import torch\ntorch.load('x.pt')", "torch.load without weights_only=True"),
    ("import torch\ntorch.load('x.pt', weights_only=False)", "torch.load without weights_only=True"),
    ("import pickle\npickle.loads(b'')", "imports pickle"),
    ("from joblib import load", "imports joblib"),
    ("import numpy as np\nnp.load('x.npy', allow_pickle=True)", "allow_pickle=True"),
    ("import yaml\nyaml.load(text)", "yaml.load"),
    ("eval(user_text)", "eval()"),
    ("__import__('os')", "__import__()"),
    ("import os\nos.system('ls ' + name)", "shell: os.system"),
    ("import subprocess\nsubprocess.run(command, shell=True)", "shell: subprocess.run"),
    ("AutoModel.from_pretrained(path, trust_remote_code=True)", "trust_remote_code"),
])
def test_the_scan_catches_unsafe_calls(source, problem):
    assert any(problem in finding for finding in unsafe_calls(source))


def test_the_scan_allows_safe_forms():
    safe = ("import torch, numpy as np\ntorch.load('x.pt', weights_only=True)\nnp.load('x.npy')\n"
            "model.eval()\nsubprocess.run(['dpkg', '-x', deb, root], check=True)\n"
            "from safetensors.torch import load_file\nload_file('x.safetensors')\n")
    assert unsafe_calls(safe) == []


@pytest.mark.parametrize("path", SCANNED, ids=[str(p.relative_to(REPO)) for p in SCANNED])
def test_no_unpickling_evaluation_or_shell_in_the_code(path):
    assert unsafe_calls(path.read_text(encoding="utf-8")) == []
