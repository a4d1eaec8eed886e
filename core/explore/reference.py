"""The open vocabulary's texts as reference collections: every WordNet definition (117k) or every word
and phrase (147k) for semantic search, an analogy's or an interpolation's nearest sentences (issue 39).

They are searched exactly, through the vectors and int8 products the reverse dictionary already holds
(`OpenScorer.cosines`): no memory added, no index to build, ready as soon as the open vocabulary is
(docs/results.md, "Reference collections"). Texts embedded on demand (a sample, a user's file) are
`core.readout.EmbeddedTexts`; both are a `core.readout.Reference`.
"""
from __future__ import annotations

import numpy as np
import torch

from ..words.open_vocab import Candidates, OpenScorer
from ..readout import Reference

KINDS = {"definition": "WordNet definitions", "word": "WordNet words and phrases"}
WORDS_SHOWN = 3  # words named before a definition they share ("king, monarch: a man who rules ...")


class VocabularyTexts(Reference):
    """The open vocabulary's definitions (kind "definition", shown as "word: definition") or its
    candidate words and phrases (kind "word"), searched as `scorer.cosines` scores them."""

    def __init__(self, scorer: OpenScorer, kind: str):
        if kind not in KINDS:
            raise ValueError(f"unknown collection {kind!r}; choose one of {', '.join(KINDS)}")
        self.scorer, self.kind = scorer, kind
        candidates = scorer.candidates
        self.texts = definition_texts(candidates) if kind == "definition" else list(candidates.words)
        self.name = f"{len(self.texts):,} {KINDS[kind]}"

    def nearest(self, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        unit = torch.nn.functional.normalize(torch.from_numpy(np.atleast_2d(vectors)).float(), dim=1)  # (B, d)
        top = self.scorer.cosines(unit, self.kind).topk(min(k, len(self.texts)))  # (B, k)
        return [list(zip(rows, cosines)) for rows, cosines in zip(top.indices.tolist(), top.values.tolist())]

    def rows(self, indices: list[int]) -> np.ndarray:
        return self.scorer.vectors_of(self.kind, torch.tensor(indices, dtype=torch.long)).numpy()


def definition_texts(candidates: Candidates) -> list[str]:
    """"word, word: definition" for each of `candidates.definitions`, naming up to WORDS_SHOWN words."""
    words = [[candidates.words[i] for i in rows] for rows in candidates.defined_rows]
    return [f"{', '.join(named[:WORDS_SHOWN])}{', ...' if len(named) > WORDS_SHOWN else ''}: {definition}"
            for named, definition in zip(words, candidates.definitions)]
