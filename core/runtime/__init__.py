"""Where and how the engine computes: `device` (CPU, CUDA or MPS, one setting), `hardware` (threads,
precision, int8 products), `distributed` (torchrun), `cancel` (work that stops when its request does) and
`imports` (transformers imported safely from any thread).

The names below are imported on first use (PEP 562): the command line reads `hardware`'s precision names
to build its flags without importing torch.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cancel import Cancelled, CancelToken, cancellable, check_cancelled, uncancellable
    from .device import DeviceError, resolve_device, resolve_precision
    from .hardware import freeze_long_lived, return_freed_memory

_HOMES = {"cancellable": ".cancel", "Cancelled": ".cancel", "CancelToken": ".cancel",
          "check_cancelled": ".cancel", "uncancellable": ".cancel", "DeviceError": ".device",
          "resolve_device": ".device", "resolve_precision": ".device", "freeze_long_lived": ".hardware",
          "return_freed_memory": ".hardware"}
__all__ = sorted(_HOMES, key=str.lower)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name], __name__), name)
    globals()[name] = value
    return value
