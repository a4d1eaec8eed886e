"""The everyday expert's reading of a query: a small residual network that moves a description's embedding
towards the word a person means (issue 53).

    u_e = u + W2 gelu(W1 LayerNorm(u))          # (B, d) -> (B, d); W2 starts at zero: u_e = u

The encoder, the word head, the word tower and every cached vector stay as they are: only the everyday
expert of the open vocabulary (core/words/open_vocab.py) reads u_e instead of u, so sentence similarity,
the dictionary expert and everything cached keep their numbers. It is trained on descriptions people
wrote (core/lexicon/norms.py) mixed with dictionary glosses (core/words/adapter_fit.py), through the
whole mixture's probability of the described word among every candidate.

A checkpoint holds it as EVERYDAY_ADAPTER (its weights) and the manifest's "everyday_adapter" (its
config, how it was trained and on what).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

EVERYDAY_ADAPTER = "everyday_adapter.safetensors"


@dataclass(frozen=True)
class AdapterConfig:
    dim: int = 384      # the encoder's embedding size
    hidden: int = 512   # the residual branch's width

    def to_dict(self) -> dict:
        return asdict(self)


class QueryAdapter(nn.Module):
    """u (B, d) -> u + branch(u); the identity until trained (the branch's last layer starts at zero)."""

    def __init__(self, config: AdapterConfig):
        super().__init__()
        self.config = config
        self.norm = nn.LayerNorm(config.dim)
        self.up = nn.Linear(config.dim, config.hidden)
        self.down = nn.Linear(config.hidden, config.dim)
        nn.init.zeros_(self.down.weight)
        nn.init.zeros_(self.down.bias)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        u = u.float()  # (B, d)
        return u + self.down(nn.functional.gelu(self.up(self.norm(u))))  # (B, d)


def save_adapter(adapter: QueryAdapter, path: Path) -> dict:
    """Write the weights to `path`; returns the config for the manifest."""
    save_file({k: v.detach().contiguous() for k, v in adapter.state_dict().items()}, str(path))
    return adapter.config.to_dict()


def load_adapter(path: Path, config: dict) -> QueryAdapter:
    """The adapter `save_adapter` wrote, in eval mode and without gradients."""
    adapter = QueryAdapter(AdapterConfig(**{k: config[k] for k in ("dim", "hidden")}))
    adapter.load_state_dict(load_file(str(path)))
    return adapter.eval().requires_grad_(False)
