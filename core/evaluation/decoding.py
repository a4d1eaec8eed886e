"""The "vec2sent" task: Vec2Sent diagnostics (Id, PERM, Id/PERM, BLEU, word-head round trip) of the
decoder trained on the model's embeddings, greedy and with beam search.

Needs an Engine whose `decoder` is set (Engine.load finds the checkpoint trained on its encoder
fingerprint); without one the task is skipped with a note. Sentences: the modern corpus' held-out set
(data/cache/corpus-modern/heldout.jsonl, from sources the decoder never trained on; built by
`python -m core vec2sent-corpus --modern`) or config.decoder_test (.jsonl or one sentence a line).
"""
from __future__ import annotations

import math
from functools import partial

from core.paths import HELDOUT_SENTENCES

from .base import EvaluationConfig, TaskResult, TextEncoder
from .files import MissingDataError

DEFAULT_TEST = HELDOUT_SENTENCES
BEAMS = {"greedy": (1, False), "beam 5": (5, False), "beam 5, reranked": (5, True)}  # (width, rerank), uncorrected
DATASET = "Vec2Sent"


def run_vec2sent(encoder: TextEncoder, config: EvaluationConfig) -> TaskResult:
    """Rows "greedy", "beam 5" and "beam 5, reranked" (by cosine to the vector): Id, PERM, Id/PERM, BLEU and top word (all %, BLEU 0-100)."""
    from core.vec2sent.diagnostics import read_test_sentences, round_trip_agreement, score_reconstructions
    from core.vec2sent.encoder_link import top_words
    from core.vec2sent.reading import DecodeSettings, read

    decoder, reason = _decoder(encoder)
    test = config.decoder_test or DEFAULT_TEST
    if decoder is None:
        return _skipped(reason)
    if not test.is_file():
        return _skipped(str(MissingDataError(DATASET, [test])) + " (build it: python -m core vec2sent-corpus --modern)")
    references, _ = read_test_sentences(test, config.decoder_sentences)
    vectors = encoder.encode(references)
    rows = {}
    for name, (width, rerank) in BEAMS.items():
        hypotheses = read(decoder, vectors, DecodeSettings(beam=width, rerank=rerank, correct=None), encoder.encode)
        scores = score_reconstructions(references, hypotheses)
        values = {"Id": scores.identity, "PERM": scores.permutation, "Id/PERM": scores.identity_over_permutation,
                  "BLEU": scores.bleu, "top word": round_trip_agreement(references, hypotheses, partial(top_words, encoder))}
        rows[name] = {column: value for column, value in values.items() if not math.isnan(value)}
    note = (f"{len(references):,} sentences of {test}; Id/PERM is left out when no output is a permutation; "
            "top word: % of decoded sentences whose word-head top word equals the original's.")
    return TaskResult(rows=rows, averaged=False, notes=[note],
                      details={DATASET: {"sentences": len(references), "file": str(test)}})


def _decoder(encoder: TextEncoder):
    """(the encoder's Vec2Sent decoder, None) or (None, why there is none)."""
    if not hasattr(encoder, "decoder"):
        return None, f"{DATASET}: the model is not an Engine, so it has no Vec2Sent decoder"
    if encoder.decoder is None:
        return None, (f"{DATASET}: no decoder trained on this encoder (fingerprint {encoder.fingerprint}) was "
                      "found beside the checkpoint; train one with python -m core vec2sent-train")
    return encoder.decoder, ""


def _skipped(reason: str) -> TaskResult:
    return TaskResult(rows={}, missing={DATASET: reason}, averaged=False)
