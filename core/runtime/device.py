"""Where the engine computes: the one definition of the device setting and of how it is resolved.

    resolve_device("auto")    # CUDA (under torchrun: this process's GPU), else Apple's MPS, else the CPU
    resolve_device("cuda:1")  # that GPU; DeviceError naming what this machine has when it is absent

The engine, the CLI (`--device`), both training recipes, the app's fine-tune jobs and
`python app.py --device` all take a name from `DEVICES` (or "cuda:N") and resolve it here. The CPU
stays the default wherever there is no GPU, and every number measured on the CPU stays as it was.
"""
from __future__ import annotations

import os
from contextlib import nullcontext

import torch

from . import hardware

DEVICES = ("auto", "cpu", "cuda", "mps")  # and "cuda:N" for the N-th GPU


class DeviceError(ValueError):
    """A device this machine does not have, or a name that is no device."""


class OutOfDeviceMemory(RuntimeError):
    """A training step did not fit in the device's memory: nothing was saved half-written, and the
    message suggests a smaller batch."""


def available_devices() -> list[str]:
    """The devices this machine can compute on: "cpu", then "cuda:0".. and "mps" when present."""
    found = ["cpu"]
    if torch.cuda.is_available():
        found += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if _mps_available():
        found.append("mps")
    return found


def resolve_device(name: str | torch.device = "auto") -> torch.device:
    """`name` as a torch.device: "auto" is CUDA when present, else MPS, else the CPU. Under torchrun
    "auto" and a bare "cuda" are the GPU of this process's LOCAL_RANK (DeviceError when there are more
    processes than GPUs). A device this machine lacks: DeviceError saying which it has."""
    if isinstance(name, torch.device):
        name = str(name)
    if name in ("auto", "cuda") and torch.cuda.is_available() and "LOCAL_RANK" in os.environ:
        rank, gpus = int(os.environ["LOCAL_RANK"]), torch.cuda.device_count()
        if rank >= gpus:
            raise DeviceError(f"torchrun process {rank} has no GPU of its own: this machine has {gpus}; "
                              f"start at most {gpus} processes per node")
        return torch.device("cuda", rank)
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("mps" if _mps_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise DeviceError(f"unknown device {name!r}; choose one of {', '.join(DEVICES)} or cuda:N") from None
    if device.type not in DEVICES:
        raise DeviceError(f"unknown device {name!r}; choose one of {', '.join(DEVICES)} or cuda:N")
    if device.type == "cuda" and device.index is None and torch.cuda.is_available():
        device = torch.device("cuda", torch.cuda.current_device())
    if str(device) not in available_devices():
        raise DeviceError(f"device {name!r} is not available on this machine; it has: "
                          f"{', '.join(available_devices())}")
    return device


def bfloat16_native(device: torch.device) -> bool:
    """Whether matrix products in bfloat16 are fast on `device` (CUDA from Ampere on; CPUs with
    AVX512-BF16 or AMX, see core.runtime.hardware)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        return hardware.native_bfloat16()
    return False


def resolve_precision(precision: str, device: torch.device | str = "cpu") -> str:
    """`precision` with "auto" replaced: "bfloat16" on a CPU that multiplies it natively (2.8x faster
    encoding there), else "float32". On a GPU too: there bfloat16 autocast made MiniLM slower, 6,268
    against 8,079 sentences/s on an H200 (docs/results.md, On a GPU)."""
    if precision != "auto":
        return precision
    device = torch.device(device)
    return "bfloat16" if device.type == "cpu" and bfloat16_native(device) else "float32"


def autocast(device: torch.device, bfloat16: bool):
    """Autocast matrix products to bfloat16 on `device` inside when `bfloat16` (weights stay float32);
    a no-op context otherwise, and on devices without bfloat16 autocast (MPS)."""
    if not bfloat16 or device.type not in ("cpu", "cuda"):
        return nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16)


def module_device(module: torch.nn.Module) -> torch.device:
    """The device of `module`'s first parameter (the CPU for a module without any)."""
    return next((p.device for p in module.parameters()), torch.device("cpu"))


def out_of_memory_message(what: str, batch_size: int, device: torch.device) -> str:
    """What a user reads when `what` ran out of `device` memory at `batch_size`."""
    return (f"{what} ran out of memory on {device} at batch size {batch_size}: try a smaller batch "
            f"(e.g. {max(1, batch_size // 2)}); nothing was saved")


def release_cached_memory(device: torch.device) -> None:
    """Hand the memory PyTorch's allocator keeps cached on a GPU back (after an out-of-memory error)."""
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())
