"""What the CPU can do fast, for choosing a default precision; and the mode modules run in."""
from __future__ import annotations

import functools
from contextlib import contextmanager
from pathlib import Path

BFLOAT16_FLAGS = {"avx512_bf16", "amx_bf16"}  # CPUs with bfloat16 matrix instructions


@functools.cache
def native_bfloat16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """True when the CPU multiplies bfloat16 matrices natively (Linux flags); False when unknown.

    On such CPUs a bfloat16 matrix-vector product is ~4x faster than float32 (memory-bound decoding);
    on others PyTorch emulates bfloat16 and it is slower, so float32 stays the default there.
    """
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return bool(BFLOAT16_FLAGS & set(flags))


def quantised_engine() -> bool:
    """Whether this torch build can run int8 matrix products (fbgemm / x86 / onednn / qnnpack)."""
    import torch

    return any(engine != "none" for engine in torch.backends.quantized.supported_engines)


def quantize_int8(module):
    """Replace `module`'s Linear layers (or `module` itself, in a wrapper) by int8 ones in place:
    dynamic quantisation, weights per output channel, inputs per call. Returns the quantised module."""
    import warnings

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    wrapper = torch.nn.Sequential(module)  # quantize_dynamic swaps children, never the root
    with warnings.catch_warnings():  # torch deprecates eager-mode quantisation in favour of torchao
        warnings.simplefilter("ignore")
        quantize_dynamic(wrapper, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8, inplace=True)
    return wrapper[0]


PRECISIONS = ("float32", "bfloat16", "int8", "auto")  # of encoding and decoding weights
TRAINING_PRECISIONS = ("float32", "bfloat16")


def check_training_precision(precision: str) -> None:
    """ValueError unless `precision` is one training can use ("auto" must be resolved first)."""
    if precision not in TRAINING_PRECISIONS:
        raise ValueError(f"precision must be one of {TRAINING_PRECISIONS}, not {precision!r}")


class RowwiseInt8Product:
    """x (B, H) -> x @ matrix_t (B, N) for a fixed float32 `matrix_t` (H, N), computed with int8
    weights (one scale per column of `matrix_t`). Dynamic quantisation scales a whole call's input by
    one factor, so each row of x is multiplied on its own: a row's result never depends on the other
    rows of its batch. For inference on vocabulary-sized matrices, which a single query otherwise
    spends most of its time reading from memory (docs/results.md, Speed)."""

    def __init__(self, matrix_t):
        import torch

        linear = torch.nn.Linear(*matrix_t.shape, bias=False)
        with torch.no_grad():
            linear.weight.copy_(matrix_t.T)
        self.columns = matrix_t.shape[1]
        self.linear = quantize_int8(linear)

    def __call__(self, x):
        import torch

        rows = [self.linear(row) for row in x.float().split(1)]  # each (1, N)
        return torch.cat(rows) if rows else x.new_zeros(0, self.columns)

    def columns_of(self, indices):
        """matrix_t[:, indices].T (n, H) as the int8 weights hold it (float32): the rows' integers and
        scales only (dequantizing the whole matrix took 0.35 s for 117k rows, this 0.04 s)."""
        weight = self.linear.weight()  # (N, H), one scale and zero point per row
        integers = weight.int_repr()[indices].float()  # (n, H)
        scales = weight.q_per_channel_scales()[indices].float()[:, None]
        zero_points = weight.q_per_channel_zero_points()[indices].float()[:, None]
        return (integers - zero_points) * scales


@contextmanager
def train_mode(module):
    """`module` in train mode (dropout on) inside, back in eval mode after, whatever happens.

    Models live in eval mode, and inference never switches modes: a switch made by one request
    would change the answer of another running at the same time. Only training, on a model of
    its own, switches, for its forward passes."""
    module.train()
    try:
        yield module
    finally:
        module.eval()


def freeze_long_lived() -> None:
    """Collect garbage, then put every object alive now out of the garbage collector's walks (`gc.freeze`).

    Call it once a model and its vocabulary are loaded: with them, a full collection walked ~750,000
    objects and held the GIL 250-800 ms, and every request of every visitor stood still meanwhile (each
    cancelled request ran one: issue 55). Frozen objects are still freed by their reference counts; a
    cycle among them (a model let go) waits for the next call, which thaws them first."""
    import gc

    gc.unfreeze()
    gc.collect()
    gc.freeze()


def return_freed_memory() -> None:
    """Hand memory the process has freed back to the system (glibc's malloc_trim; no-op elsewhere).

    Building large int8 matrices goes through float32 copies (several hundred MB); glibc keeps their
    freed heap in its arenas, so without this the process stays ~430 MB larger (docs/results.md)."""
    import gc

    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    """glibc's malloc_trim, or None: looked up among the symbols the process has loaded (not with
    ctypes.util.find_library, which runs ldconfig in a subprocess at every call)."""
    import ctypes

    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):
        return None
