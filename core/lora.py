"""Low-rank training of the encoder (LoRA, Hu et al. 2021).

Each Linear weight W0 (out, in) of the transformer layers is trained as W0 + B @ A with A (r, in)
and B (out, r), W0 and every other weight frozen; B starts at zero, so training starts from the base
model. A checkpoint then needs r * (in + out) numbers per matrix instead of in * out: a fine-tuned
12-layer 768-d base fits in a few MB where its fp16 delta takes 170 MB.

    factors = add_low_rank(backbone, rank=16)   # trainable A, B; everything else frozen
    ...train...
    delta = merge_low_rank(backbone)            # plain Linear layers again: {name: (B, A)}

In a checkpoint's `encoder_delta.safetensors` the pair is stored as `<name>.lora_B` and
`<name>.lora_A` (fp16) instead of `<name>`; `dense_delta` expands a file's tensors back into
(trained - base) per weight.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn.utils import parametrize

SUFFIX_A, SUFFIX_B = ".lora_A", ".lora_B"


class LowRankDelta(nn.Module):
    """Parametrisation W0 -> W0 + B @ A of one Linear weight (out, in)."""

    def __init__(self, out_features: int, in_features: int, rank: int):
        super().__init__()
        # A as LoRA initialises it (Kaiming-uniform), B at zero: the product starts at 0.
        self.A = nn.Parameter(torch.empty(rank, in_features).uniform_(-1, 1) / math.sqrt(in_features))
        self.B = nn.Parameter(torch.zeros(out_features, rank))

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        return weight + self.B @ self.A  # (out, in)


def low_rank_targets(backbone: nn.Module) -> dict[str, nn.Linear]:
    """The Linear layers inside the transformer layers (attention and feed-forward), by name."""
    layers = getattr(getattr(backbone, "encoder", None), "layer", None)
    if layers is None:
        raise ValueError(f"{type(backbone).__name__} has no encoder.layer list: low-rank training "
                         "supports BERT-like backbones (BERT, RoBERTa, MPNet, ...)")
    return {f"encoder.layer.{i}.{name}": module for i, layer in enumerate(layers)
            for name, module in layer.named_modules() if isinstance(module, nn.Linear)}


def add_low_rank(backbone: nn.Module, rank: int, targets: list[nn.Linear] | None = None) -> list[nn.Parameter]:
    """Freeze every weight of `backbone` and give each target Linear (default: `low_rank_targets`)
    a trainable rank-`rank` delta.

    Returns the new parameters (A and B of every target), to hand to the optimiser.
    """
    if rank < 1:
        raise ValueError(f"rank must be a positive integer, not {rank!r}")
    for p in backbone.parameters():
        p.requires_grad_(False)
    factors = []
    for module in targets if targets is not None else low_rank_targets(backbone).values():
        delta = LowRankDelta(module.out_features, module.in_features, rank).to(module.weight.device)
        parametrize.register_parametrization(module, "weight", delta)
        factors += [delta.A, delta.B]
    return factors


def merge_low_rank(backbone: nn.Module, prefix: str = "") -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Fold each delta into its weight (plain Linear layers again); return {weight name: (B, A)}.

    Names are `prefix` + the backbone's state-dict names ("encoder.layer.0.attention.self.query.weight").
    """
    merged = {}
    for name, module in low_rank_targets(backbone).items():
        if not parametrize.is_parametrized(module, "weight"):
            continue
        delta = module.parametrizations.weight[0]
        merged[f"{prefix}{name}.weight"] = (delta.B.detach().clone(), delta.A.detach().clone())
        parametrize.remove_parametrizations(module, "weight", leave_parametrized=True)
    return merged


def is_low_rank(backbone: nn.Module) -> bool:
    """True while low-rank deltas are attached (between `add_low_rank` and `merge_low_rank`)."""
    return any(parametrize.is_parametrized(m) for m in backbone.modules())


def stored_factors(tensors: dict[str, torch.Tensor]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """{weight name: (B, A)} (float32) of the factor pairs in a checkpoint's delta tensors."""
    names = {k[: -len(suffix)] for k in tensors for suffix in (SUFFIX_A, SUFFIX_B) if k.endswith(suffix)}
    for name in sorted(names):
        if name + SUFFIX_A not in tensors or name + SUFFIX_B not in tensors:
            raise ValueError(f"{name} has only one of its two factors ({SUFFIX_B}, {SUFFIX_A})")
    return {name: (float32(tensors[name + SUFFIX_B]), float32(tensors[name + SUFFIX_A])) for name in names}


def dense_delta(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A checkpoint's delta tensors with every `.lora_B`/`.lora_A` pair expanded to B @ A (float32)."""
    dense = {k: float32(v) for k, v in tensors.items() if not k.endswith((SUFFIX_A, SUFFIX_B))}
    dense.update({name: B @ A for name, (B, A) in stored_factors(tensors).items()})  # (out, in)
    return dense


# Why numpy below: each torch operation on a tensor of more than 32k numbers is an OpenMP region, and on a busy
# 2-core machine every region waited milliseconds for its second thread; a checkpoint's 96 delta tensors, converted
# and added, took 0.85 s of a cold start instead of 0.1 s (docs/results.md, issue 62). numpy's conversion and
# addition run in one thread and give the same numbers: float16 -> float32 is exact, and a float32 sum is
# rounded once either way.

def float32(t: torch.Tensor) -> torch.Tensor:
    """`t.float()`: float16 on the CPU converted by numpy (a new tensor; see above)."""
    if t.dtype == torch.float16 and t.device.type == "cpu" and not t.requires_grad:
        return torch.from_numpy(t.numpy().astype(np.float32))
    return t.float()


def add_into(weight: torch.Tensor, delta: torch.Tensor) -> None:
    """`weight.add_(delta.to(weight))` without recording a gradient: float32 pairs of one shape on the CPU summed
    by numpy into the weight's own memory (see above), its version counted as add_ counts it."""
    if weight.device.type == delta.device.type == "cpu" and weight.dtype == delta.dtype == torch.float32 \
            and weight.shape == delta.shape:
        values = weight.detach().numpy()
        np.add(values, delta.detach().numpy(), out=values)
        torch.autograd.graph.increment_version(weight)
        return
    with torch.no_grad():
        weight.add_(delta.to(weight))


def factored_delta(delta: dict[str, torch.Tensor], low_rank: dict[str, tuple[torch.Tensor, torch.Tensor]]
                   ) -> dict[str, torch.Tensor]:
    """Replace each dense entry of `delta` that equals its recorded B @ A by the two factors.

    An entry that changed since (trained on without low rank) stays dense: the checkpoint is exact.
    """
    out = dict(delta)
    for key, (B, A) in low_rank.items():
        if key in out and torch.allclose(out[key], B.float() @ A.float(), rtol=1e-3, atol=1e-5):
            del out[key]
            out[key + SUFFIX_B], out[key + SUFFIX_A] = B, A
    return out
