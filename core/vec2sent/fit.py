"""How well a text fits a vector: the cosine between the text's embedding and the vector (1 = the encoder
sees no difference). Every choice of a sentence for a vector (reranking, corrections, edits, fluency, paths) and
every measure of a decoding (`mean_cosine`) reads fits from `fit_cosines`, so all of them embed and compare alike.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from core.encoder import l2_normalize

Encode = Callable[[list[str]], np.ndarray]  # texts -> (n, d)


def fit_cosines(rows: Sequence[Sequence[str]], vectors: np.ndarray, encode: Encode) -> list[list[float]]:
    """Per row i, each text's fit to vectors[i] (vectors (n, d)): the cosine of its embedding to the vector.
    Every distinct non-blank text is embedded once, all rows in one `encode` call (sorted); a blank text fits
    nothing (-inf)."""
    texts = sorted({t for row in rows for t in row if t.strip()})
    embedded = dict(zip(texts, l2_normalize(encode(texts)))) if texts else {}
    return [[float(embedded[t] @ vector) if t in embedded else -np.inf for t in row]
            for row, vector in zip(rows, l2_normalize(np.atleast_2d(vectors)), strict=True)]


def fits_of(texts: Sequence[str], vector: np.ndarray, encode: Encode) -> list[float]:
    """Each text's fit to the one `vector` (d,) (`fit_cosines`)."""
    return fit_cosines([texts], vector[None], encode)[0]


def best_by_cosine(rows: Sequence[Sequence[str]], vectors: np.ndarray, encode: Encode) -> list[tuple[int, float]]:
    """Per row i: (index of the text of rows[i] that fits vectors[i] best, that fit); ties go to the earlier
    text; (0, -inf) for a row without a non-blank text (`fit_cosines`)."""
    best = []
    for scores in fit_cosines(rows, vectors, encode):
        i = int(np.argmax(scores)) if scores else 0
        best.append((i, scores[i] if scores else -np.inf))
    return best


def closest_hypotheses(beams: Sequence[Sequence[str]], vectors: np.ndarray, encode: Encode) -> list[str]:
    """Per row i, the text of beams[i] that fits vectors[i] best (ties: the earlier, likelier one); empty texts
    win only when alone."""
    return [hypotheses[i] for hypotheses, (i, _) in zip(beams, best_by_cosine(beams, vectors, encode))]


def mean_cosine(vectors: np.ndarray, hypotheses: Sequence[str], encode: Encode) -> float:
    """Mean fit of each decoded sentence to its vector (n, d); an empty decoding counts 0."""
    fits = np.array([row[0] for row in fit_cosines([[h] for h in hypotheses], vectors, encode)])
    return float(np.where(np.isfinite(fits), fits, 0.0).mean())
