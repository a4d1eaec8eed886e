"""DefSent Studio engine: DefSent encoder, frozen word head, reverse dictionary (no UI code here).

`Engine`, `CheckpointError` and `WordFilter` are imported on first use (PEP 562), so that `python -m core
--help` and the command line's light commands do not pay for torch and transformers before they need them.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .checkpoint import CheckpointError
    from .engine import Engine
    from .words.vocabulary import WordFilter

__all__ = ["Engine", "CheckpointError", "WordFilter"]
_HOMES = {"Engine": ".engine", "CheckpointError": ".checkpoint", "WordFilter": ".words.vocabulary"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name], __name__), name)
    globals()[name] = value  # once: later lookups do not come here
    return value
