"""Reading vectors back as sentences: how (`DecodeSettings`, with the API's, the paths' and the app's settings
named once here) and the one way, which `Engine.decode` (core/readout.py) and `vec2sent-diagnostics` share, so
that what is measured is what users get:

    found = hypotheses(decoder, vectors, settings, encode)   # the beam's, every correction round's, or refined
    chosen(found, vectors, settings, encode)                  # the sentence shown for each vector
    read(decoder, vectors, settings, encode)                  # the two at once
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from core.vec2sent.checkpoint import Vec2Sent
from core.vec2sent.decode import LENGTH_ALPHA
from core.vec2sent.fit import Encode, best_by_cosine, fit_cosines
from core.vec2sent.fluency import FluencyModel, FluencySettings, LogProbs, choose_fluent, competitors
from core.vec2sent.refine import CorrectSettings, RefineSettings, embedding_once
from core.vec2sent.refine import correct as correct_by_vectors
from core.vec2sent.refine import refine as refine_by_edits

VectorWords = Callable[[np.ndarray, int], list[list[str]]]  # vectors (n, d), k -> the top-k words each points to

# The app's decodings (and scripts/analogies.py): a wider beam than the API's 5, because an interactive user reads
# few sentences and wants them exact; its "Refine" corrects seven times by steps of 0.5, without word edits, which
# traded fluency for cosine on analogies' vectors. What each setting measured: docs/vec2sent.md, the table of
# settings under "Everyday English".
APP_BEAM = 20
ONE_CORRECTION = CorrectSettings()  # the API's: one round by 0.25 (CorrectSettings)
EXACT_CORRECTION = CorrectSettings(rounds=7, step=0.5)


@dataclass(frozen=True)
class DecodeSettings:
    """How vectors are read back as sentences.

    beam: the beam's width (1: greedy); max_length: pieces at most (None: the decoder's); alpha: the beam's
    length normalisation; rerank: the beam's hypothesis that fits the vector best (cosine of its embedding)
    rather than the likeliest; correct: rounds of decoding from targets moved along what the last output missed,
    whose hypotheses all compete by fit (None: off; on 1,000 held-out sentences one round lifts BLEU from 27.3 to
    30.2 for about twice the time, docs/vec2sent.md); refine: then one-word edits of the best towards the vector
    (slower, more exact); fluency: hypotheses that fit about as well as the best compete on a language model's
    log-probability too (with a fluency model)."""
    beam: int = 5
    max_length: int | None = None
    alpha: float = LENGTH_ALPHA
    rerank: bool = True
    correct: CorrectSettings | None = ONE_CORRECTION
    refine: RefineSettings | None = None
    fluency: FluencySettings | None = None

    def __post_init__(self) -> None:
        if isinstance(self.beam, bool) or not isinstance(self.beam, (int, np.integer)) or self.beam < 1:
            raise ValueError(f"beam must be a whole number >= 1, not {self.beam!r}")

    def changed(self, **changes: Any) -> DecodeSettings:
        """These settings with `changes` (field names: beam=20, correct=None, ...); TypeError for another name."""
        return replace(self, **changes) if changes else self

    def app(self, exact: bool = False) -> DecodeSettings:
        """These settings as the app decodes: a beam of APP_BEAM and, when `exact` (its "Refine"), EXACT_CORRECTION."""
        return replace(self, beam=APP_BEAM, correct=EXACT_CORRECTION if exact else self.correct)

    @property
    def takes_first(self) -> bool:
        """Whether each vector's sentence is its first hypothesis as found (refined, or neither reranked nor
        corrected) rather than chosen among them."""
        return self.refine is not None or (self.correct is None and not (self.rerank and self.beam > 1))


# Every decoding corrects once by default (beam 5 reranked: BLEU 27.3, Id 15.1 %, cosine .910 in 93 ms a sentence;
# corrected once: 30.2, 18.8 %, .928 in 196 ms; docs/vec2sent.md).
API_DEFAULT = DecodeSettings()  # engine.decode's
# Analogies and interpolations read vectors that are no sentence's, where the decoder slips on grammar: there a
# language model's log-probability helps choose (core/vec2sent/fluency.py; docs/vec2sent.md, Paths).
PATH_DEFAULT = DecodeSettings(fluency=FluencySettings())  # engine.analogy's and engine.interpolate's
APP = API_DEFAULT.app()  # the app's Decode box
MOST_EXACT = API_DEFAULT.app(exact=True)  # the app's Decode box with "Refine"


def hypotheses(decoder: Vec2Sent, vectors: np.ndarray, settings: DecodeSettings, encode: Encode,
               vector_words: VectorWords | None = None) -> list[list[str]]:
    """Per row of `vectors` (n, d), the decoder's hypotheses, likeliest first (with `settings.correct`, every
    round's), or with `settings.refine` the refined text alone; `vector_words` (needed to refine): the words each
    vector points to, which edits may insert."""
    def search(targets: np.ndarray) -> list[list[str]]:
        return decoder.hypotheses(targets, beam_width=int(settings.beam), alpha=settings.alpha,
                                  max_length=settings.max_length)

    correct = settings.correct
    found = search(vectors) if correct is None else correct_by_vectors(search, vectors, encode, correct)
    if settings.refine is None:
        return found
    if vector_words is None:
        raise ValueError("refining needs the words each vector points to (vector_words)")
    words = vector_words(np.atleast_2d(vectors), settings.refine.pool)
    return [[decoder.cased(text)] for text in refine_by_edits(found, vectors, encode, words, settings.refine)]


def choose(rows: Sequence[Sequence[str]], vectors: np.ndarray, encode: Encode, fluency: FluencySettings | None = None,
           log_probs: LogProbs | None = None) -> list[str]:
    """Per row, the text that fits its vector best (ties: the earlier) or, with `fluency` and `log_probs` (a
    fluency model's, `FluencyModel.log_probs`), `choose_fluent`'s pick among the distinct non-blank texts; every
    distinct text is embedded once."""
    vectors = np.atleast_2d(vectors)
    if fluency is None or log_probs is None:
        return [texts[i] for texts, (i, _) in zip(rows, best_by_cosine(rows, vectors, encode))]
    rows = [list(dict.fromkeys(t for t in texts if t.strip())) or [""] for texts in rows]
    cosines = fit_cosines(rows, vectors, encode)
    competing = [competitors(cos, fluency) for cos in cosines]
    asked = list(dict.fromkeys(row[i] for row, idx in zip(rows, competing) if len(idx) > 1 for i in idx))
    nats = dict(zip(asked, log_probs(asked))) if asked else {}  # every row's rivals in one batch
    return [row[choose_fluent(cos, idx, [nats.get(row[i], 0.0) for i in idx], fluency)]
            for row, cos, idx in zip(rows, cosines, competing)]


def chosen(found: list[list[str]], vectors: np.ndarray, settings: DecodeSettings, encode: Encode,
           fluency_model: FluencyModel | None = None) -> list[str]:
    """Per row, the sentence shown among the `hypotheses` found for it under `settings`."""
    if settings.takes_first:
        return [texts[0] for texts in found]
    return choose(found, vectors, encode, settings.fluency, fluency_model.log_probs if fluency_model else None)


def read(decoder: Vec2Sent, vectors: np.ndarray, settings: DecodeSettings, encode: Encode,
         vector_words: VectorWords | None = None, fluency_model: FluencyModel | None = None) -> list[str]:
    """One sentence per row of `vectors` (n, d): `chosen` among the `hypotheses` found, every distinct text
    embedded once by `encode`."""
    encode = embedding_once(encode)
    return chosen(hypotheses(decoder, vectors, settings, encode, vector_words), vectors, settings, encode,
                  fluency_model)
