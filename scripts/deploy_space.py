"""Deploy the current tree to a Hugging Face Space (the app on the Hub's free CPU tier).

    python scripts/deploy_space.py --space USER/NAME --dry-run   # list and check what would be uploaded
    python scripts/deploy_space.py --space USER/NAME             # upload (a token: `hf auth login` or HF_TOKEN)

What goes up is the app and what it runs on, nothing else: app.py, app/, core/ (with core/data),
the two shipped checkpoints, requirements.txt and README.md, whose front matter makes the repository
a Gradio Space. No tests, research, bench, docs, caches, user-saved checkpoints, hidden files
(checkpoints being written, name claims) or __pycache__. Before uploading, and with --dry-run
instead of it, the list is checked: the front matter (sdk gradio at the version requirements.txt
pins, app_file app.py), each file's size and the total, and that the app's modules import from
those files alone. The upload is one commit of HfApi.upload_folder; the Hub stores large and binary
files (the checkpoints, core/data) in its LFS storage itself, so this git repository needs no Git
LFS. Remote files that are no longer in the list are deleted in the same commit.

With --vectors the shipped model's open-vocabulary vectors (264k texts, about 100 MB, too large for
this repository) go up too, in checkpoints/defsent-minilm/open-vocab/: copied from the user cache when
the app or `python -m core words` already embedded them there, else embedded now (minutes). The Space
then answers with the full vocabulary seconds after it starts instead of minutes (docs/results.md).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from core.words.open_vocabulary import SHIPPED_VECTORS as VECTORS  # a checkpoint's folder of precomputed vectors

REPO = Path(__file__).resolve().parents[1]
FILES = ("app.py", "requirements.txt", "README.md")
FOLDERS = ("app", "core", "checkpoints/defsent-minilm", "checkpoints/vec2sent-defsent-minilm")
MAX_FILE_BYTES = 100 * 2**20   # above the largest file (the open-vocabulary vectors, 97 MB): a bigger one is a mistake
MAX_TOTAL_BYTES = 1 * 2**30    # a Space repository is meant to stay small; this one is ~62 MB (~163 MB with --vectors)
# The modules `python app.py` imports before it serves: the import check loads them from the list.
APP_MODULES = ("app.settings", "app.handlers", "app.shared.models", "app.server.request_limits", "app.ui",
               "core.checkpoint")


def space_files(root: Path = REPO, vectors: Path | None = None) -> list[str]:
    """The files to upload, as sorted POSIX paths relative to `root`; precomputed open-vocabulary
    vectors only as `vectors` (the file `ship_vectors` returns), never others left in their folder."""
    files = [name for name in FILES if (root / name).is_file()]
    for folder in FOLDERS:
        for path in (root / folder).rglob("*"):
            relative = path.relative_to(root)
            if path.is_file() and path.suffix != ".pyc" and not any(
                    part.startswith(".") or part in ("__pycache__", VECTORS) for part in relative.parts):
                files.append(relative.as_posix())
    if vectors is not None:
        files.append(vectors.relative_to(root).as_posix())
    return sorted(files)


def ship_vectors(root: Path) -> Path:
    """The shipped model's open-vocabulary vectors in its SHIPPED_VECTORS folder: copied from the user
    cache if they are there, else embedded now (minutes, with a progress bar). Returns the file."""
    from core.engine import Engine
    from core.paths import user_cache_dir

    engine = Engine.load(root / FOLDERS[2], open_vocabulary=False, decoder=None, device="cpu")
    name = engine.vocabulary.cache_name(engine.words.candidates())
    target = root / FOLDERS[2] / VECTORS / name
    cached = user_cache_dir("open-vocab") / name
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        if cached.is_file():
            shutil.copyfile(cached, target)
        else:
            engine.vocabulary.defer()
            engine.predict_words("a word")  # embeds them into the user cache, with a progress bar
            shutil.copyfile(cached, target)
    return target


def front_matter(readme: str) -> dict[str, str]:
    """The `key: value` lines of README.md's leading `---` block ({} when it has none)."""
    match = re.match(r"---\n(.*?)\n---\n", readme, re.S)
    if not match:
        return {}
    pairs = (line.split(":", 1) for line in match.group(1).splitlines() if ":" in line)
    return {key.strip(): value.strip().strip('"') for key, value in pairs}


def check(root: Path, files: list[str]) -> list[str]:
    """Problems that would make the Space fail or oversized; [] when there are none."""
    problems = [f"missing: {name}" for name in (*FILES, *(f"{folder}/manifest.json" for folder in FOLDERS[2:]))
                if name not in files]
    meta = front_matter((root / "README.md").read_text(encoding="utf-8")) if "README.md" in files else {}
    pinned = re.search(r"^gradio==(\S+)", (root / "requirements.txt").read_text(encoding="utf-8"), re.M) \
        if "requirements.txt" in files else None
    expected = {"sdk": "gradio", "app_file": "app.py", "sdk_version": pinned.group(1) if pinned else None}
    problems += [f"README.md front matter: {key} is {meta.get(key)!r}, not {value!r}"
                 for key, value in expected.items() if meta.get(key) != value]
    sizes = {name: (root / name).stat().st_size for name in files}
    problems += [f"{name}: {size / 2**20:.1f} MB is over {MAX_FILE_BYTES / 2**20:.0f} MB"
                 for name, size in sizes.items() if size > MAX_FILE_BYTES]
    if sum(sizes.values()) > MAX_TOTAL_BYTES:
        problems.append(f"{sum(sizes.values()) / 2**20:.0f} MB in all is over {MAX_TOTAL_BYTES / 2**20:.0f} MB")
    return problems


def import_problem(root: Path, files: list[str], timeout: float = 300) -> str | None:
    """Import the app's modules and load app.py in a fresh Python that sees only `files` (copied,
    large ones linked): None if that works, else the error. Catches a module the app needs but the
    list leaves out."""
    with tempfile.TemporaryDirectory(prefix="space-") as staging:
        for name in files:
            target = Path(staging) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if name.endswith(".py"):
                shutil.copyfile(root / name, target)
            else:
                target.symlink_to(root / name)
        code = ("import importlib, importlib.util, sys\n"
                # an editable install of this project (pip install -e .) would find what the list leaves out
                "sys.meta_path[:] = [f for f in sys.meta_path if not str(getattr(f, '__module__', '')).startswith('__editable__')]\n"
                "sys.path[:] = [p for p in sys.path if not p.startswith('__editable__')]\n"
                f"for name in {APP_MODULES!r}: importlib.import_module(name)\n"
                "spec = importlib.util.spec_from_file_location('space_app', 'app.py')\n"
                "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
                "assert callable(module.main)\n")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(HF_HUB_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False", PYTHONDONTWRITEBYTECODE="1")
        done = subprocess.run([sys.executable, "-c", code], cwd=staging, env=env, capture_output=True,
                              text=True, timeout=timeout)
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["exit code %d" % done.returncode])[-1]


def report(root: Path, files: list[str]) -> str:
    sizes = [(root / name).stat().st_size for name in files]
    lines = [f"{size / 2**20:9.2f} MB  {name}" for name, size in zip(files, sizes)]
    return "\n".join(lines + [f"{sum(sizes) / 2**20:9.2f} MB  in {len(files)} files"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--space", required=True, help="the Space, USER/NAME (created if it does not exist)")
    parser.add_argument("--dry-run", action="store_true", help="list and check what would be uploaded; upload nothing")
    parser.add_argument("--vectors", action="store_true",
                        help="also upload the shipped model's open-vocabulary vectors (embedded first if needed)")
    parser.add_argument("--root", type=Path, default=REPO, help=argparse.SUPPRESS)  # tests point it at a fixture tree
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", args.space):
        parser.error(f"--space must be USER/NAME, not {args.space!r}")
    vectors = ship_vectors(args.root) if args.vectors else None
    files = space_files(args.root, vectors)
    print(report(args.root, files))
    problems = check(args.root, files)
    if not problems and (failure := import_problem(args.root, files)):
        problems.append(f"the app does not import from these files alone: {failure}")
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    if problems:
        return 1
    print("checks passed: front matter, sizes, the app imports")
    if args.dry_run:
        print(f"dry run: nothing uploaded to spaces/{args.space}")
        return 0
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(args.space, repo_type="space", space_sdk="gradio", exist_ok=True)
    commit = api.upload_folder(folder_path=args.root, repo_id=args.space, repo_type="space",
                               allow_patterns=files, delete_patterns="*",
                               commit_message="Deploy DefSent Studio (scripts/deploy_space.py)")
    print(f"uploaded {len(files)} files: {commit.commit_url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
