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
from typing import Mapping

import numpy as np

from core.text import canonical_tokens
from core.vec2sent.encoder_link import TopWord
from core.vec2sent.reading import DecodeSettings, read
from core.vec2sent.refine import CorrectSettings, RefineSettings


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


def diagnostic_settings(width: int, alpha: float, rerank: bool, refine: bool,
                        correct: CorrectSettings | None = None) -> dict[str, DecodeSettings]:
    """name -> decode settings of each row for one beam width: the likeliest hypothesis; with `rerank` / `refine`
    (width > 1) the beam's hypotheses reranked by fit / refined by edits; with `correct`, those of corrected
    targets too (and refined with `refine`)."""
    name = "greedy" if width == 1 else f"beam {width}"
    likeliest = DecodeSettings(beam=width, alpha=alpha, rerank=False, correct=None)
    reranked = likeliest.changed(rerank=True)
    rows = {name: likeliest}
    if width > 1 and rerank:
        rows[f"{name}, reranked"] = reranked
    if width > 1 and refine:
        rows[f"{name}, refined"] = reranked.changed(refine=RefineSettings())
    if correct is not None:
        rows[f"{name}, corrected"] = reranked.changed(correct=correct)
        if refine:
            rows[f"{name}, corrected, refined"] = reranked.changed(correct=correct, refine=RefineSettings())
    return rows


def decodings(decoder, link, vectors: np.ndarray, settings: Mapping[str, DecodeSettings]
              ) -> dict[str, tuple[list[str], float]]:
    """name -> (the sentences that `Engine.decode` shows for `vectors` under the row's settings, by the same
    `core.vec2sent.reading.read`; the seconds that took)."""
    out = {}
    for name, row in settings.items():
        start = time.perf_counter()
        out[name] = (read(decoder, vectors, row, link.encode, link.vector_words), time.perf_counter() - start)
    return out
