"""Refinement by one-word edits (core/vec2sent/refine.py), with a stand-in encoder whose cosine
rises as a text's words and word order come closer to the target's."""
from __future__ import annotations

import numpy as np
import pytest

from core.vec2sent.fit import closest_hypotheses
from core.vec2sent.refine import CorrectSettings, RefineSettings, correct, edit_pool, one_word_edits, refine

WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "rug", "augusta", "walk", "we", "shall", ",", "?", "."]


class BagOfBigrams:
    """Counts of each word and of each ordered pair of neighbouring words: the same text gives
    cosine 1, and every word or order fixed brings a text closer. Records the batches it embeds."""

    def __init__(self):
        self.batches: list[list[str]] = []
        self.index = {w: i for i, w in enumerate(WORDS)}

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.batches.append(list(texts))
        n = len(WORDS)
        out = np.zeros((len(texts), n + n * n), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = [self.index[w] for w in text.replace(",", " ,").replace("?", " ?").split()]
            for i in ids:
                out[row, i] += 1
            for i, j in zip(ids, ids[1:]):
                out[row, n + i * n + j] += 1
        return out


def test_one_word_edits_by_hand():
    assert set(one_word_edits(["a", "b"], ["c"])) == {
        ("b",), ("a",),                                  # deletions
        ("b", "a"),                                      # swap
        ("c", "b"), ("a", "c"),                          # substitutions
        ("c", "a", "b"), ("a", "c", "b"), ("a", "b", "c"),  # insertions
    }
    assert one_word_edits(["a"], []) == []  # deleting the only word leaves nothing: not an edit
    assert ("a", "a") in one_word_edits(["a"], ["a"]) and ("a",) not in one_word_edits(["a"], ["a"])


def test_edit_pool_takes_vector_words_then_frequent_hypothesis_words():
    hypotheses = [["the", "cat", "sat"], ["the", "dog", "sat"], ["a", "dog", "dog"]]
    # counts over hypotheses, once per hypothesis: dog 2, a 1, cat 1 ("the", "sat" are there already)
    assert edit_pool(["the", "sat"], ["mat", "rug", "walk"], hypotheses, size=2) == ["mat", "rug", "dog", "a"]
    assert edit_pool(["the"], ["dog"], hypotheses, size=1) == ["dog"]  # duplicates once


def test_refine_finds_a_missed_rare_word_through_the_vector_words():
    encode = BagOfBigrams()
    target = encode(["shall we walk, augusta?"])
    out = refine([["shall we walk, the?", "shall we walk?"]], target, encode, [["augusta", "mat"]])
    assert out == ["shall we walk, augusta?"]


def test_refine_climbs_several_edits_in_one_batch_per_round():
    encode = BagOfBigrams()
    targets = encode(["the cat sat on the mat", "a dog sat"])
    encode.batches.clear()
    hypotheses = [["the cat sat the rug"], ["dog a sat"]]
    out = refine(hypotheses, targets, encode, [["mat", "on"], []], RefineSettings(rounds=3, pool=2))
    assert out == ["the cat sat on the mat", "a dog sat"]
    # the start (closest hypothesis), then at most one embedding call per round for all sentences
    assert len(encode.batches) <= 1 + 3


def test_refine_keeps_a_hypothesis_it_cannot_improve_as_written():
    encode = BagOfBigrams()
    target = encode(["the cat sat"])
    encode.batches.clear()
    # already the target: nothing is embedded after the start, and the decoder's text is kept
    assert refine([["The cat  sat"]], target, encode, [["mat"]]) == ["The cat  sat"]
    assert len(encode.batches) == 1
    # no decoded text at all: nothing to edit
    assert refine([[""]], target, encode, [["cat"]]) == [""]


def test_refine_never_lowers_the_cosine_of_the_reranked_choice():
    encode = BagOfBigrams()
    rng = np.random.default_rng(0)
    targets = encode([" ".join(rng.choice(WORDS[:10], size=5)) for _ in range(8)])
    hypotheses = [[" ".join(rng.choice(WORDS[:10], size=4)) for _ in range(3)] for _ in range(8)]
    out = refine(hypotheses, targets, encode, [list(rng.choice(WORDS[:10], size=3)) for _ in range(8)])

    def cos(texts, vectors):
        a, b = encode(texts), vectors
        return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)

    best_start = np.array([max(cos(hs, np.repeat(t[None], len(hs), 0))) for hs, t in zip(hypotheses, targets)])
    assert (cos(out, targets) >= best_start - 1e-6).all()
    assert (cos(out, targets) > best_start + 1e-6).any()


def test_refine_checks_its_inputs():
    with pytest.raises(ValueError, match="2 vectors"):
        refine([["a"]], np.ones((2, 3), dtype=np.float32), BagOfBigrams(), [[], []])


class RecordingSearch:
    """A stand-in decoder: row i of a target gets the texts answers[call][i]; records the targets."""

    def __init__(self, answers: list[list[list[str]]]):
        self.answers, self.targets = answers, []

    def __call__(self, targets: np.ndarray) -> list[list[str]]:
        self.targets.append(np.array(targets))
        return self.answers[len(self.targets) - 1]


def unit(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_correct_moves_the_target_along_what_the_closest_output_missed():
    encode = BagOfBigrams()
    v = encode(["the cat sat", "a dog"])
    search = RecordingSearch([[["the dog sat", "the cat"], ["a dog"]],
                              [["the cat sat on"], ["a dog", "dog"]],
                              [["the cat sat"], [""]]])
    encode.batches.clear()
    found = correct(search, v, encode, CorrectSettings(rounds=2, step=0.5))
    assert found == [["the dog sat", "the cat", "the cat sat on", "the cat sat"], ["a dog", "a dog", "dog", ""]]
    embedded = [t for batch in encode.batches for t in batch]
    assert len(embedded) == len(set(embedded))  # every text embedded once
    assert len(search.targets) == 3
    np.testing.assert_allclose(search.targets[0], unit(v), atol=1e-6)
    # round 0's closest to "the cat sat" is "the cat" (2 words and 1 pair in common)
    u0 = unit(encode(["the cat", "a dog"]))
    t1 = unit(unit(v) + 0.5 * (unit(v) - u0))
    np.testing.assert_allclose(search.targets[1], t1, atol=1e-6)
    np.testing.assert_allclose(search.targets[2], unit(t1 + 0.5 * (unit(v) - unit(encode(["the cat sat on", "a dog"])))),
                               atol=1e-6)
    assert correct(RecordingSearch([[["the dog"]]]), v[:1], encode, CorrectSettings(rounds=0)) == [["the dog"]]
    # shown: the closest of all rounds' ("a dog" of round 0 before its tie in round 1)
    assert closest_hypotheses(found, v, encode) == ["the cat sat", "a dog"]


@pytest.mark.parametrize("rounds, step", [(-1, 0.25), (9, 0.25), (2, 0.0), (2, 5.0)])
def test_correct_settings_are_bounded(rounds, step):
    with pytest.raises(ValueError, match="correction rounds"):
        CorrectSettings(rounds=rounds, step=step)
