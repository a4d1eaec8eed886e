"""Id, PERM, Id/PERM, BLEU and the word-head round trip on hand-made examples with known answers."""
from __future__ import annotations

import math

import numpy as np
import pytest

from core.vec2sent.fit import mean_cosine
from core.vec2sent.diagnostics import (canonical_tokens, format_table, read_test_sentences, round_trip_agreement,
                                       score_reconstructions)


def test_canonical_tokens_ignore_spacing_and_case():
    assert canonical_tokens("Don't stop, John!") == canonical_tokens("don ' t stop , john !") == \
        ["don", "'", "t", "stop", ",", "john", "!"]


def test_identity_and_permutation_counts():
    references = ["the dog runs .", "the dog runs .", "the dog runs .", "the dog runs ."]
    hypotheses = ["The dog runs.", "runs the dog .", "the cat runs .", "the dog runs"]
    scores = score_reconstructions(references, hypotheses)
    assert scores.n == 4
    assert scores.identity == 25.0  # only the first
    assert scores.permutation == 50.0  # the first two
    assert scores.identity_over_permutation == 50.0


def test_bleu_known_values():
    reference = "a b c d e f g h"
    assert score_reconstructions([reference], [reference]).bleu == pytest.approx(100.0)
    assert score_reconstructions([reference], ["x y z w"]).bleu == pytest.approx(0.0)
    # a 4-token prefix: every n-gram precision is 1, brevity penalty exp(1 - 8/4)
    assert score_reconstructions([reference], ["a b c d"]).bleu == pytest.approx(100 * math.exp(-1), abs=0.01)


def test_no_permutation_gives_undefined_ratio():
    scores = score_reconstructions(["a b c"], ["d e f"])
    assert scores.permutation == 0.0 and math.isnan(scores.identity_over_permutation)
    assert "n/a" in format_table({"greedy": (scores, None)})


def test_mismatched_lengths_are_rejected():
    with pytest.raises(ValueError):
        score_reconstructions(["a"], ["a", "b"])


def test_round_trip_agreement_counts_same_top_word():
    def top_word(texts):
        assert all(t.strip() for t in texts)  # empty outputs are never sent to the encoder
        return [t.split()[-1] for t in texts]

    references = ["a large dog", "a small cat", "red wine", "blue sky"]
    hypotheses = ["the big dog", "one small mouse", "", "sky"]
    assert round_trip_agreement(references, hypotheses, top_word) == 50.0


def test_table_lists_every_setting():
    scores = score_reconstructions(["a b"], ["a b"])
    table = format_table({"greedy": (scores, 100.0), "beam 4": (scores, None)})
    assert "greedy" in table and "beam 4" in table and "100.0" in table


def test_mean_cosine_re_encodes_outputs_and_scores_empty_ones_zero():
    table = {"a b": [1.0, 0.0], "c": [0.0, 2.0]}
    encode = lambda texts: np.array([table[t] for t in texts])  # noqa: E731
    vectors = np.array([[3.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    assert mean_cosine(vectors, ["a b", "c", " "], encode) == pytest.approx((1.0 + 2 ** -0.5 + 0.0) / 3)


def test_test_sentences_come_from_lines_or_json_lines_with_genres(tmp_path):
    plain = tmp_path / "t.txt"
    plain.write_text("one two\n\nthree four\n", encoding="utf-8")
    assert read_test_sentences(plain) == (["one two", "three four"], [None, None])
    rich = tmp_path / "t.jsonl"
    rich.write_text('{"text": "A b.", "genre": "news"}\n{"text": "C d?", "genre": "questions"}\n', encoding="utf-8")
    assert read_test_sentences(rich, limit=1) == (["A b."], ["news"])
