"""Atomic file writes: a reader (or a process started after a kill) sees a file's old content or its
new content, never half of it. Every writer of a file that others read goes through `atomic_file`.

    with atomic_file(path) as partial:      # a unique hidden file beside `path`
        write(partial)                      # fsynced and renamed over `path` when the block ends
    save_npy_atomically(path, array); save_text_atomically(path, text); save_json_atomically(path, data)
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Iterator

import numpy as np


@contextlib.contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside `path` to write a file at; when the block ends without an error
    the file is fsynced and renamed over `path`, so readers see the old file or the new one, never
    half of one. On an error (or Ctrl-C) the temporary file is removed and `path` is untouched.

    The temporary name is unique (mkstemp) and keeps `path`'s suffix (np.save and np.savez append
    theirs otherwise), so two writers of one path never write into each other's file: the one that
    finishes last wins whole. It is hidden (dot-prefixed) and names the writer's pid."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.stem}.partial-{os.getpid()}-", suffix=path.suffix,
                                    dir=path.parent)
    os.close(handle)
    partial = Path(name)
    try:
        yield partial
        with open(partial, "rb") as written:
            os.fsync(written.fileno())
        os.chmod(partial, 0o644)  # mkstemp makes it private; caches are ordinary readable files
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def save_npy_atomically(path: Path, array: np.ndarray) -> Path:
    """Write `array` to `path` (.npy) atomically (`atomic_file`)."""
    with atomic_file(path) as partial:
        np.save(partial, array)
    return Path(path)


def save_text_atomically(path: Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically (`atomic_file`)."""
    with atomic_file(path) as partial:
        partial.write_text(text, encoding="utf-8")
    return Path(path)


def save_json_atomically(path: Path, data: object, indent: int | None = 1) -> Path:
    """Write `data` as JSON to `path` atomically (`atomic_file`)."""
    return save_text_atomically(path, json.dumps(data, indent=indent))
