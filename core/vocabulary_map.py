"""One map of every word: a 2-D layout of the open vocabulary's 147k words and phrases, computed once per
model and kept, so that the map stays the same and can be learned like a real one (issue 39, item 2).

    python -m core vocabulary-map          # UMAP of the shipped model's words: minutes on 2 cores, once

The layout is UMAP (cosine, 15 neighbours) of the word vectors the reverse dictionary scores
(`OpenScorer.vectors_of("word")`), saved in the user cache under the open vocabulary's cache name, so a
fine-tuned model gets its own. New points (a description, an analogy's vector) land on it without
recomputing: on their nearest word. Measured (research/placement_probe.py, docs/results.md) against a
cosine-weighted mean of the 10 nearest words' positions, UMAP's own transform and a regression: the
nearest word keeps the most of a new point's 10 nearest words around it on the map.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from .open_vocab import OpenScorer
from .paths import user_cache_dir
from .word_prior import zipf_frequencies

LABEL_LEVELS = (12, 48, 192)  # regions named at each zoom level: the whole map, about x4, about x16
LABEL_WORDS = 2  # words that name a region
LABEL_POOL = 200  # a region's words nearest its mean vector, of which the most common name it
PLACEMENT_NEIGHBOURS = 1  # the nearest word's position: a mean of several lands between their clusters
UMAP_NEIGHBOURS = 15


def layout_path(cache_name: str) -> Path:
    """Where the layout of the open vocabulary cached as `cache_name` is kept (the user cache)."""
    return user_cache_dir("vocabulary-map") / cache_name.replace(".safetensors", ".npy")


def build_layout(scorer: OpenScorer, seed: int = 0) -> np.ndarray:
    """(C, 2) float32 positions of `scorer.candidates.words`: UMAP of their unit word vectors."""
    import umap

    vectors = scorer.vectors_of("word", torch.arange(len(scorer.candidates))).numpy()  # (C, d)
    neighbours = min(UMAP_NEIGHBOURS, len(vectors) - 1)
    reducer = umap.UMAP(n_components=2, n_neighbors=neighbours, metric="cosine", random_state=seed,
                        low_memory=True, init="spectral" if len(vectors) > neighbours + 2 else "random")
    return reducer.fit_transform(vectors).astype(np.float32)


def save_layout(coords: np.ndarray, path: Path) -> None:
    """Write atomically: a killed build leaves no half layout."""
    partial = path.with_name(f"{path.stem}.partial-{os.getpid()}.npy")
    np.save(partial, coords)
    os.replace(partial, path)


def place(scorer: OpenScorer, coords: np.ndarray, vectors: np.ndarray, k: int = PLACEMENT_NEIGHBOURS) -> np.ndarray:
    """(B, 2) positions of vectors (B, d) on the layout `coords` (C, 2): the mean position of their k
    nearest words (cosine), weighted by those cosines (clipped at a small positive floor)."""
    unit = torch.nn.functional.normalize(torch.from_numpy(np.atleast_2d(vectors)).float(), dim=1)  # (B, d)
    top = scorer.cosines(unit, "word").topk(min(k, len(coords)))  # (B, k)
    weights = top.values.clamp(min=1e-3).numpy()  # (B, k)
    return (coords[top.indices.numpy()] * weights[..., None]).sum(1) / weights.sum(1, keepdims=True)


@dataclass
class Region:
    """A named part of the map: its members' mean position, the words that name it, its members' rows."""
    x: float
    y: float
    name: str
    members: np.ndarray = field(repr=False)

    @property
    def size(self) -> int:
        return len(self.members)


def region_labels(scorer: OpenScorer, coords: np.ndarray, levels: tuple[int, ...] = LABEL_LEVELS,
                  seed: int = 0) -> list[list[Region]]:
    """For each level n, the layout's n k-means regions (in 2-D), each named by its most common words
    among the LABEL_POOL nearest (cosine) to its members' mean vector: central and readable."""
    from sklearn.cluster import MiniBatchKMeans

    unit = scorer.vectors_of("word", torch.arange(len(coords))).float().numpy()  # (C, d)
    common = zipf_frequencies(scorer.candidates.words)  # (C,)
    result = []
    for n in levels:
        n = min(n, len(coords))
        assigned = MiniBatchKMeans(n, random_state=seed, n_init=1, batch_size=4096).fit_predict(coords)  # (C,)
        result.append([_region(unit, common, scorer.candidates.words, coords, np.flatnonzero(assigned == c))
                       for c in range(n) if (assigned == c).any()])
    return result


def _region(unit: np.ndarray, common: np.ndarray, words: list[str], coords: np.ndarray,
            members: np.ndarray) -> Region:
    central = members[np.argsort(-(unit[members] @ unit[members].mean(0)))[:LABEL_POOL]]  # (<= POOL,)
    named = central[np.argsort(-common[central], kind="stable")[:LABEL_WORDS]]
    x, y = coords[members].mean(0)
    return Region(float(x), float(y), ", ".join(words[i] for i in named), members)
