"""Vec2Sent diagnostics (Kerscher & Eger, 2020) and a word-head round trip.

    python -m core vec2sent-diagnostics --decoder CKPT --encoder CKPT --test data/cache/corpus-modern/heldout.jsonl

Id: % of decoded sentences equal to their input. PERM: % that are a permutation of the input's
tokens. Id/PERM: % of the permutations that are in the right order. BLEU: corpus BLEU (sacrebleu).
Sentences are compared as lower-cased word and punctuation tokens, so spacing differences from
detokenisation ("don't" vs "don ' t") never count as errors. The round trip re-encodes each decoded
sentence and reports how often the word head's top word equals the one for the original sentence.
"""
from __future__ import annotations

import json
import math
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.vec2sent.checkpoint import closest_hypotheses
from core.vec2sent.refine import CorrectSettings, RefineSettings
from core.vec2sent.refine import correct as correct_by_vectors
from core.vec2sent.refine import refine as refine_by_edits
from core.text import canonical_tokens
from core.vec2sent.encoder_link import TopWord


@dataclass(frozen=True)
class Scores:
    """Diagnostic scores in percent over `n` sentence pairs; identity_over_permutation is NaN when
    no output is a permutation."""
    n: int
    identity: float
    permutation: float
    identity_over_permutation: float
    bleu: float


def score_reconstructions(references: list[str], hypotheses: list[str]) -> Scores:
    """Id, PERM, Id/PERM and corpus BLEU of `hypotheses` against `references` (paired by index)."""
    import sacrebleu

    if len(references) != len(hypotheses) or not references:
        raise ValueError(f"need equally many references and hypotheses, got {len(references)} "
                         f"and {len(hypotheses)}")
    refs = [canonical_tokens(r) for r in references]
    hyps = [canonical_tokens(h) for h in hypotheses]
    identical = sum(r == h for r, h in zip(refs, hyps))
    permuted = sum(Counter(r) == Counter(h) for r, h in zip(refs, hyps))
    bleu = sacrebleu.corpus_bleu([" ".join(h) for h in hyps], [[" ".join(r) for r in refs]],
                                 tokenize="none").score  # already tokenised
    n = len(refs)
    return Scores(n=n, identity=100 * identical / n, permutation=100 * permuted / n,
                  identity_over_permutation=100 * identical / permuted if permuted else math.nan,
                  bleu=bleu)


def read_test_sentences(path: Path, limit: int | None = None) -> tuple[list[str], list[str | None]]:
    """The first `limit` sentences of a test file and their genres: one sentence a line, or JSON
    lines {"text": ..., "genre": ...} (.jsonl); genres are None for a plain file."""
    lines = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()][:limit]
    if Path(path).suffix != ".jsonl":
        return lines, [None] * len(lines)
    rows = [json.loads(line) for line in lines]
    return [r["text"] for r in rows], [r.get("genre") for r in rows]


def round_trip_agreement(references: list[str], hypotheses: list[str], top_word: TopWord) -> float:
    """% of pairs whose decoded sentence gets the same top word as the original (empty output: no)."""
    decoded = [i for i, h in enumerate(hypotheses) if h.strip()]
    original_words = top_word(references)
    decoded_words = top_word([hypotheses[i] for i in decoded])
    agree = sum(original_words[i] == word for i, word in zip(decoded, decoded_words))
    return 100 * agree / len(references)


def format_table(rows: dict[str, tuple]) -> str:
    """A plain-text table: one row per decoding setting, (scores, round-trip agreement or None
    [, mean cosine of the re-encoded output])."""
    width = max(10, *map(len, rows))
    header = (f"{'decoding':<{width}} {'n':>6} {'Id %':>7} {'PERM %':>7} {'Id/PERM %':>10} {'BLEU':>6} "
              f"{'top word %':>11} {'cos':>6}")
    lines = [header, "-" * len(header)]
    for name, (s, agreement, *cosine) in rows.items():
        ratio = "n/a" if math.isnan(s.identity_over_permutation) else f"{s.identity_over_permutation:.1f}"
        agree = "-" if agreement is None else f"{agreement:.1f}"
        cos = f"{cosine[0]:.3f}" if cosine and cosine[0] is not None else "-"
        lines.append(f"{name:<{width}} {s.n:>6} {s.identity:>7.1f} {s.permutation:>7.1f} {ratio:>10} "
                     f"{s.bleu:>6.1f} {agree:>11} {cos:>6}")
    return "\n".join(lines)


def decodings(decoder, link, vectors: np.ndarray, width: int, alpha: float, rerank: bool, refine: bool,
              correct: CorrectSettings | None = None) -> dict[str, tuple[list[str], float]]:
    """name -> (decoded sentences, seconds taken) for one beam width: the likeliest hypotheses, and
    with `rerank` / `refine` (width > 1) the same n-best reranked by cosine / refined by edits; with
    `correct`, the hypotheses of corrected targets too, chosen by cosine (and refined with `refine`).
    The seconds of a derived row include its searches."""
    start = time.perf_counter()
    beams = decoder.hypotheses(vectors, beam_width=width, alpha=alpha)
    searched = time.perf_counter() - start
    name = "greedy" if width == 1 else f"beam {width}"
    out = {name: ([h[0] for h in beams], searched)}
    if width > 1 and rerank:
        start = time.perf_counter()
        out[f"{name}, reranked"] = (closest_hypotheses(beams, vectors, link.encode),
                                    searched + time.perf_counter() - start)
    if width > 1 and refine:
        start = time.perf_counter()
        out[f"{name}, refined"] = (_refined(beams, vectors, link), searched + time.perf_counter() - start)
    if correct is not None:
        start = time.perf_counter()
        found = correct_by_vectors(lambda targets: decoder.hypotheses(targets, beam_width=width, alpha=alpha),
                                   vectors, link.encode, correct)
        searched = time.perf_counter() - start
        out[f"{name}, corrected"] = (found.closest, searched)
        if refine:
            start = time.perf_counter()
            out[f"{name}, corrected, refined"] = (_refined(found.hypotheses, vectors, link),
                                                  searched + time.perf_counter() - start)
    return out


def _refined(hypotheses: list[list[str]], vectors: np.ndarray, link) -> list[str]:
    settings = RefineSettings()
    return refine_by_edits(hypotheses, vectors, link.encode, link.vector_words(vectors, settings.pool), settings)
