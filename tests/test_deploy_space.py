"""scripts/deploy_space.py: the dry run lists and checks what a Space would get (no network)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("deploy_space", REPO / "scripts" / "deploy_space.py")
deploy = importlib.util.module_from_spec(spec)
spec.loader.exec_module(deploy)


def test_the_dry_run_of_this_tree_lists_the_app_and_passes_its_checks(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert deploy.main(["--space", "someone/defsent-studio", "--dry-run"]) == 0
    out = capsys.readouterr().out
    listed = [line.split("MB  ", 1)[1] for line in out.splitlines() if "MB  " in line and " files" not in line]
    assert listed == deploy.space_files(REPO)
    for name in ("app.py", "README.md", "requirements.txt", "app/ui.py", "core/engine.py", "core/data/wordnet.jsonl.gz",
                 "checkpoints/defsent-minilm/manifest.json", "checkpoints/vec2sent-defsent-minilm/manifest.json"):
        assert name in listed
    allowed = ("app/", "core/", "checkpoints/defsent-minilm/", "checkpoints/vec2sent-defsent-minilm/")
    assert all(name in deploy.FILES or name.startswith(allowed) for name in listed)
    assert not [name for name in listed if "__pycache__" in name or "/." in name or name.endswith(".pyc")]
    assert "checks passed: front matter, sizes, the app imports" in out and "nothing uploaded" in out


def test_only_the_app_and_the_shipped_checkpoints_are_listed_and_bad_front_matter_is_refused(tmp_path, capsys):
    for name, text in {"README.md": "# no front matter\n", "requirements.txt": "gradio==6.31.0\n", "app.py": "",
                       "app/ui.py": "", "app/__pycache__/ui.cpython-311.pyc": "", "core/engine.py": "",
                       "core/data/wordnet.jsonl.gz": "x", "checkpoints/defsent-minilm/manifest.json": "{}",
                       "checkpoints/defsent-minilm/.claim": "", "checkpoints/my-finetune/manifest.json": "{}",
                       "checkpoints/.defsent-minilm.tmp-1/manifest.json": "{}", "tests/test_x.py": "",
                       "research/probe.py": "", "bench/b.py": "", "data/cache/corpus/train.txt": "",
                       "docs/app.md": "", "checkpoints/defsent-minilm/open-vocab/key.safetensors": "x"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    files = deploy.space_files(tmp_path)
    assert files == ["README.md", "app.py", "app/ui.py", "checkpoints/defsent-minilm/manifest.json",
                     "core/data/wordnet.jsonl.gz", "core/engine.py", "requirements.txt"]  # vectors: asked for only
    shipped = tmp_path / "checkpoints/defsent-minilm/open-vocab/key.safetensors"
    assert "checkpoints/defsent-minilm/open-vocab/key.safetensors" in deploy.space_files(tmp_path, shipped)
    problems = deploy.check(tmp_path, files)
    assert "missing: checkpoints/vec2sent-defsent-minilm/manifest.json" in problems
    assert "README.md front matter: app_file is None, not 'app.py'" in problems
    assert deploy.main(["--space", "someone/x", "--dry-run", "--root", str(tmp_path)]) == 1
    assert "problem: missing: checkpoints/vec2sent-defsent-minilm/manifest.json" in capsys.readouterr().err


def test_the_import_check_sees_a_module_the_list_leaves_out():
    files = [name for name in deploy.space_files(REPO) if name != "core/checkpoint.py"]
    assert "core.checkpoint" in deploy.import_problem(REPO, files)
