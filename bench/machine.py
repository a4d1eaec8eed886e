"""How fast this machine is at the moment of a benchmark: on this 2-core VM the same command's
latency varies by up to 2x between hours (docs/results.md, Speed), so every benchmark prints a
reference number beside its own. Small-batch inference reads its weights from memory at every call, so the
reference that tracks it is a memory-bound product (a Python loop, CPU speed, did not track it)."""
from __future__ import annotations

import statistics
import time

import torch


def matrix_vector_ms(rows: int = 32_768, cols: int = 512, repeats: int = 21) -> float:
    """Median ms of one vector times a float32 (cols, rows) matrix, 64 MB by default (memory speed)."""
    matrix, vector = torch.randn(cols, rows), torch.randn(1, cols)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        vector @ matrix
        times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times)


def machine_line() -> str:
    """One line for a benchmark's header."""
    return f"machine: a 64 MB float32 matrix-vector product took {matrix_vector_ms():.1f} ms"
