"""Several processes, one run: training and encoding across the processes torchrun starts.

    torchrun --nproc_per_node 2 -m core train --out checkpoints/NAME ...   # the flags of one process

torchrun sets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; `start` joins that process
group: NCCL when the run computes on CUDA (each process on GPU LOCAL_RANK, `core.runtime.device.resolve_device`),
gloo on the CPU. Training wraps the encoder in DistributedDataParallel: each process takes
its shard of every batch, the gradients are averaged, and only rank 0 evaluates and saves
(`is_main`). Run as one process, everything here is a no-op and nothing is imported from
torch.distributed's backends.
"""
from __future__ import annotations

import os
from typing import Callable, Sequence, TypeVar

import numpy as np
import torch
import torch.distributed as dist

T = TypeVar("T")


def start(device: torch.device = torch.device("cpu")) -> bool:
    """Join the process group described by torchrun's environment, for a run computing on `device`
    (NCCL on CUDA, whose current GPU becomes `device`; gloo elsewhere); False (and nothing done) for
    a process torchrun did not start (RANK unset). A torchrun run of one process joins a group of one:
    the DDP path, on one GPU."""
    if "RANK" not in os.environ:
        return False
    if not dist.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)  # NCCL's collectives run on the current GPU
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return True


def backend() -> str | None:
    """The process group's backend ("nccl", "gloo"), or None outside one."""
    return dist.get_backend() if dist.is_initialized() else None


def stop() -> None:
    """Leave the process group, if any (so that every process exits cleanly)."""
    if dist.is_initialized():
        dist.destroy_process_group()


def rank() -> int:
    return dist.get_rank() if dist.is_initialized() else 0


def world_size() -> int:
    return dist.get_world_size() if dist.is_initialized() else 1


def is_main() -> bool:
    """True in the process that evaluates, prints and saves (rank 0, or the only process)."""
    return rank() == 0


def shard(items: Sequence[T]) -> Sequence[T]:
    """This process's share of `items`: every world_size-th item from its rank on."""
    return items[rank()::world_size()]


def average(value: torch.Tensor) -> torch.Tensor:
    """The mean of `value` over the processes (itself in a single process)."""
    if world_size() == 1:
        return value
    value = value.detach().clone()
    dist.all_reduce(value)  # on the value's device: the loss is on the GPU under NCCL
    return value / world_size()


def merge_shards(parts: Sequence[np.ndarray | None], n: int) -> np.ndarray:
    """The rows of `n` items from the shards of `shard`: parts[r] holds rows r, r + w, r + 2w, ...
    (w = len(parts); None for a process that had no items)."""
    present = [p for p in parts if p is not None]
    if not present:
        raise ValueError("no shard holds any row")
    out = np.empty((n, *present[0].shape[1:]), dtype=present[0].dtype)
    for r, part in enumerate(parts):
        if part is not None:
            out[r::len(parts)] = part
    return out


def encode_sharded(encode: Callable[[list[str]], np.ndarray], texts: Sequence[str]) -> np.ndarray:
    """`encode(texts)` shared among the processes: each encodes its shard, and every process gets
    all the rows in order. Every process must call it, with the same texts."""
    if world_size() == 1:
        return encode(list(texts))
    mine = list(shard(texts))
    parts: list[np.ndarray | None] = [None] * world_size()
    dist.all_gather_object(parts, encode(mine) if mine else None)
    return merge_shards(parts, len(texts))
