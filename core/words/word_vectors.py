"""Word vectors: each candidate word's own embedding, a second score for the reverse dictionary.

The word head scores a sentence vector u against the (frozen) input embedding rows E. The encoder
also embeds every vocabulary word on its own, w = encode("leader"), and a definition of a word lies
close to that word's embedding in the same space. Adding

    scores = head(u) + scale * cos(u, w)

ranks the right word higher than either score alone (WordNet test MRR .158 -> .191 for an earlier
model, docs/training.md). The vectors come from the encoder they are stored with, so they are recomputed
after training (`Engine.add_word_vectors`); on disk they are int8 (unit rows, quantised per row;
the per-row factor cancels in the cosine), 8 MB for MiniLM's 21.7k whole words.

    python -m core word-vectors --model checkpoints/defsent-minilm --sweep 0 10 15 20 --split dev
    python -m core word-vectors --model checkpoints/defsent-minilm --scale 15 --write
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from ..runtime.hardware import RowwiseInt8Product

WORD_VECTORS = "word_vectors.safetensors"
DEFAULT_SCALE = 15.0  # chosen on the WordNet dev split: docs/training.md, "What was tried"


class WordVectors:
    """Unit-length embeddings (n, H) of the vocabulary ids (n,) and the weight of their cosine."""

    def __init__(self, ids: torch.Tensor, vectors: torch.Tensor, scale: float = DEFAULT_SCALE):
        if vectors.ndim != 2 or ids.shape != (vectors.shape[0],):
            raise ValueError(f"need ids (n,) and vectors (n, H), got {tuple(ids.shape)} and {tuple(vectors.shape)}")
        self.ids = ids.long()
        self.vectors = torch.nn.functional.normalize(vectors.float(), dim=1)  # (n, H)
        self.vectors_t = self.vectors.T.contiguous()  # (H, n): read in order, 2x faster per query
        self._int8_product: RowwiseInt8Product | None = None  # made on first int8 use
        self.scale = float(scale)

    @classmethod
    def compute(cls, encode: Callable[[list[str]], np.ndarray], words: Sequence[str | None],
                scale: float = DEFAULT_SCALE) -> "WordVectors":
        """Embed every word of `words` (indexed by vocabulary id; None = not a word) with `encode`."""
        ids = [i for i, w in enumerate(words) if w is not None]
        vectors = encode([words[i] for i in ids])
        return cls(torch.tensor(ids), torch.as_tensor(np.asarray(vectors, dtype=np.float32)), scale)

    def scores(self, u: torch.Tensor, vocab_size: int, int8: bool = False) -> torch.Tensor:
        """scale * cos(u[b], w[v]) for every vocabulary id v with a vector, 0 elsewhere: (B, V).
        `int8`: the product in int8 (`RowwiseInt8Product`) when no gradient is wanted."""
        unit = torch.nn.functional.normalize(u.float(), dim=1)  # (B, H)
        if int8 and not torch.is_grad_enabled():
            if self._int8_product is None:
                self._int8_product = RowwiseInt8Product(self.vectors_t)
            cos = self._int8_product(unit)  # (B, n)
        else:
            cos = unit @ self.vectors_t  # (B, n)
        out = torch.zeros(u.shape[0], vocab_size)
        out[:, self.ids] = self.scale * cos
        return out

    def save(self, path: Path) -> None:
        """int8 rows (each scaled so its largest entry is 127) and their ids."""
        q = (self.vectors / self.vectors.abs().amax(dim=1, keepdim=True) * 127).round().to(torch.int8)
        save_file({"ids": self.ids.int().contiguous(), "vectors": q.contiguous()}, str(path))

    @classmethod
    def load(cls, path: Path, scale: float) -> "WordVectors":
        tensors = load_file(str(path))
        return cls(tensors["ids"], tensors["vectors"], scale)
