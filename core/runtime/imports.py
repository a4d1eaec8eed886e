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
    """transformers' `names`, in order: a top-level name ("AutoTokenizer", "__version__") or a submodule
    ("utils.logging"), imported under one lock, so that no thread sees the package half made by another's first
    import. ImportError for a name this version lacks.

    The lock covers these imports, not the model loading after them: transformers resolves further names of its
    own while `from_pretrained` runs (the app loads one model at a time per model, so a first load of two
    models of new kinds at once is the case left)."""
    with _TRANSFORMERS:
        transformers = importlib.import_module("transformers")
        return tuple(importlib.import_module(f"transformers.{name}") if "." in name else _name(transformers, name)
                     for name in names)


def _name(transformers, name: str) -> Any:
    try:
        return getattr(transformers, name)
    except AttributeError:
        raise ImportError(f"cannot import name {name!r} from transformers {transformers.__version__}") from None
