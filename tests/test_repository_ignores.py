"""What the app writes into the repository stays out of git: checkpoints saved from the Fine-tune tab
(with their save temporaries and name claims) and SentEval data; the shipped checkpoints stay tracked."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def ignored(path: str) -> bool:
    """Whether .gitignore's rules match `path` (tracked or not: --no-index)."""
    result = subprocess.run(["git", "check-ignore", "--quiet", "--no-index", path], cwd=REPO, check=False)
    assert result.returncode in (0, 1), f"git check-ignore failed on {path}"
    return result.returncode == 0


@pytest.fixture(autouse=True)
def git_checkout():
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")


@pytest.mark.parametrize("path", ["checkpoints/my-dictionary-v1/manifest.json",
                                  "checkpoints/DEFSENT-MINILM-2/encoder_delta.safetensors",
                                  "checkpoints/.mine.tmp-123-abc/head.safetensors", "checkpoints/.mine.claim",
                                  "data/senteval/STS/STSBenchmark/sts-test.csv",
                                  "checkpoints/defsent-minilm/open-vocab/0123-abcd-4567.safetensors"])
def test_what_the_app_writes_is_ignored(path):
    assert ignored(path)


@pytest.mark.parametrize("path", ["checkpoints/defsent-minilm/manifest.json",
                                  "checkpoints/defsent-minilm/a-new-file.safetensors",
                                  "checkpoints/vec2sent-defsent-minilm/model.safetensors", "core/checkpoint.py"])
def test_the_shipped_checkpoints_are_not(path):
    assert not ignored(path)


def test_every_shipped_checkpoint_file_is_still_tracked():
    tracked = subprocess.run(["git", "ls-files", "checkpoints"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split()
    assert {Path(p).parts[1] for p in tracked} == {"defsent-minilm", "vec2sent-defsent-minilm"}
    assert not any(ignored(p) for p in tracked)
