"""Where and how the engine computes: `device` (CPU, CUDA or MPS, one setting), `hardware` (threads,
precision, int8 products), `distributed` (torchrun) and `cancel` (work that stops when its request does)."""
from .cancel import Cancelled, CancelToken, cancellable, check_cancelled, uncancellable
from .device import DeviceError, resolve_device, resolve_precision
from .hardware import freeze_long_lived, return_freed_memory

__all__ = [
    "cancellable",
    "Cancelled",
    "CancelToken",
    "check_cancelled",
    "DeviceError",
    "freeze_long_lived",
    "resolve_device",
    "resolve_precision",
    "return_freed_memory",
    "uncancellable",
]
