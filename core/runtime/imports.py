"""Names from transformers, imported safely from any thread.

transformers is a lazy module: its names are imported on first access. A thread that asks for one while another
thread's first import of transformers is still running gets "ImportError: cannot import name 'AutoTokenizer'
from 'transformers'" (the public server answered concurrent reverse-dictionary requests so: bench/load_test.py).
Every lazy import of transformers in core goes through `from_transformers`, which takes one process-wide lock.
"""
from __future__ import annotations

import importlib
import threading
from typing import Any

_TRANSFORMERS = threading.RLock()


def from_transformers(*names: str) -> tuple[Any, ...]:
    """transformers' `names`, in order: a top-level name ("AutoTokenizer", "__version__"; None where this
    version has no such name) or a submodule ("utils.logging"), imported under one lock, so that no thread sees
    the package half made by another's first import."""
    with _TRANSFORMERS:
        transformers = importlib.import_module("transformers")
        return tuple(importlib.import_module(f"transformers.{name}") if "." in name else getattr(transformers, name, None)
                     for name in names)
