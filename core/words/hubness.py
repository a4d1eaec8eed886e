"""Hubness correction for the reverse dictionary (CSLS, Conneau et al. 2018).

In a high-dimensional space a few words ("hubs", often general ones) score high for almost any text
and crowd the top of every ranking. CSLS lowers each word's score by how high it scores on the
reference texts nearest to it:

    score'(u, v) = score(u, v) - weight * r[v],   r[v] = mean of the k highest score(x, v) over references x

The references are training definitions, and a definition never counts for the words it defines:
the encoder was fitted to rank those words first, so counting it would push every word seen in
training down and every unseen word up, which would flatter a split by word without helping users.
Like the word vectors, r comes from the encoder it is stored with and is recomputed after training.

    python -m core hubness --model checkpoints/defsent-minilm --sweep-k 5 10 20 --sweep-weight 0.4 0.5 0.6
    python -m core hubness --model checkpoints/defsent-minilm --k 10 --weight 0.5 --write
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from safetensors.torch import load_file, save_file

HUB_PENALTY = "hub_penalty.safetensors"
DEFAULT_K, DEFAULT_WEIGHT = 10, 0.5  # chosen on the WordNet dev split: docs/training.md, "What was tried"
TUNED_REFERENCES = 24_781  # the WordNet training definitions DEFAULT_K and DEFAULT_WEIGHT were chosen with


def scaled_k(k: int, references: int) -> int:
    """k for `references` reference texts such that the k nearest are the same share of them as `k` of
    TUNED_REFERENCES (the penalty's scale, for which the weight was chosen): `k` for as many or more, fewer
    (at least 1) for fewer. A glossary's 32 definitions with k = 10 made every word's penalty a mean of a
    third of them (docs/results.md, "Fine-tuning a small glossary")."""
    return k if references >= TUNED_REFERENCES else max(1, round(k * references / TUNED_REFERENCES))


@dataclass
class HubPenalty:
    """r (V,): each word's mean score over its k nearest references; subtracted `weight` times."""
    penalty: torch.Tensor
    k: int
    weight: float
    references: int

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        return logits - self.weight * self.penalty  # (n, V)

    @classmethod
    def compute(cls, score: Callable[[np.ndarray], torch.Tensor], vectors: np.ndarray,
                defined: Sequence[Sequence[int]], k: int = DEFAULT_K, weight: float = DEFAULT_WEIGHT,
                batch_size: int = 1024) -> "HubPenalty":
        """`score(vectors) -> (n, V)` word scores; `defined[i]`: the ids reference i defines (not counted)."""
        if k < 1 or len(vectors) == 0:
            raise ValueError("the hubness correction needs k >= 1 and at least one reference text")
        best = None  # (V, k') highest scores so far, per word
        for start in range(0, len(vectors), batch_size):
            s = score(vectors[start:start + batch_size]).clone()  # (b, V)
            rows = [i for i, ids in enumerate(defined[start:start + len(s)]) for _ in ids]
            cols = [v for ids in defined[start:start + len(s)] for v in ids]
            s[rows, cols] = float("-inf")
            s = s.T.contiguous()  # (V, b): top-k along rows is many times faster than down columns
            if best is not None:
                s = torch.cat([best, s], dim=1)
            best = s.topk(min(k, s.shape[1]), dim=1).values
        best = torch.where(torch.isfinite(best), best, torch.nan)
        penalty = best.nanmean(dim=1).nan_to_num(0.0)  # a word defined by every reference: no penalty
        return cls(penalty.float(), k, float(weight), len(vectors))

    def save(self, path: Path) -> None:
        save_file({"penalty": self.penalty.contiguous()}, str(path))

    @classmethod
    def load(cls, path: Path, k: int, weight: float, references: int) -> "HubPenalty":
        return cls(load_file(str(path))["penalty"], k, weight, references)

    def describe(self) -> dict:
        return {"file": HUB_PENALTY, "k": self.k, "weight": self.weight, "references": self.references}


def group_definitions(texts: Sequence[str], gold: Sequence[int]) -> tuple[list[str], list[list[int]]]:
    """Distinct definition texts and, for each, every word id it defines (synonyms share a gloss).
    A negative id is a word with no column (one of several pieces): its text is a reference that
    counts for every word."""
    defined: dict[str, list[int]] = {}
    for text, word in zip(texts, gold, strict=True):
        ids = defined.setdefault(text, [])
        if int(word) >= 0 and int(word) not in ids:
            ids.append(int(word))
    return list(defined), list(defined.values())
