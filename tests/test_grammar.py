"""Agreement repairs of a chosen sentence (core/vec2sent/grammar.py) and the analogy's choice of sentence."""
from __future__ import annotations

import numpy as np
import pytest

from core.vec2sent.grammar import RepairSettings, agreement_variants, repair, sentence_key


@pytest.mark.parametrize("slip, repaired", [
    ("Four mouse are running.", "Four mice are running."),
    ("She has two sister.", "She has two sisters."),
    ("Three woman are jumping.", "Three women are jumping."),
    ("Three women is jumping.", "Three women are jumping."),
    ("The dogs is barking.", "The dogs are barking."),
    ("Are he tired?", "Is he tired?"),
    ("They runs fast.", "They run fast."),
    ("He run fast.", "He runs fast."),
    ("She do her work.", "She does her work."),
    ("He saw a elephant.", "He saw an elephant."),
    ("I saw one birds.", "I saw one bird."),
    # session 49 (issue 74's misses): a form written by spelling rules alone, a verb after do-support
    ("Two loafs are fresh.", "Two loaves are fresh."),
    ("She taked the bus.", "She took the bus."),
    ("Did we booked the flight?", "Did we book the flight?"),
    ("He did not took the bus.", "He did not take the bus."),
    ("He didn't ate the soup.", "He didn't eat the soup."),
    ("Does the shop sells shoes?", "Does the shop sell shoes?"),
])
def test_a_slip_of_agreement_has_its_repair_among_the_variants(slip, repaired):
    assert repaired in agreement_variants(slip)


@pytest.mark.parametrize("text", ["Our neighbour watched television.", "Is he tired?", "Two sheep are sleeping.",
                                  "I like dogs.", "We sell the car.", "A dog runs on the grass.", "They were at home.",
                                  "He did the dishes.", "Did you see the film?", "The leaf falls."])
def test_a_sentence_that_agrees_has_no_variants(text):
    assert agreement_variants(text) == []


def fake_encode(vectors: dict[str, list[float]]):
    return lambda texts: np.array([vectors[t] for t in texts], dtype=np.float32)


def test_repair_takes_the_variant_the_language_model_prefers_if_it_still_fits():
    slip, fixed = "She has two sister.", "She has two sisters."
    encode = fake_encode({slip: [1.0, 0.0], fixed: [0.96, 0.28]})  # cosine .96 to the vector: .04 lower
    prefer_fixed = lambda texts: np.array([-10.0 if t == fixed else -12.0 for t in texts])  # noqa: E731
    vector = np.array([1.0, 0.0], dtype=np.float32)
    assert repair(slip, vector, encode, prefer_fixed, RepairSettings(gain=1.0, margin=0.05)) == fixed
    assert repair(slip, vector, encode, prefer_fixed, RepairSettings(gain=1.0, margin=0.03)) == slip  # fits too badly
    assert repair(slip, vector, encode, prefer_fixed, RepairSettings(gain=3.0, margin=0.05)) == slip  # gains too little


def test_an_analogys_repair_may_fit_a_tenth_worse():
    """Session 49: "Two loafs are fresh." (the decoding of "One roll is fresh." : "Two rolls are fresh." :: "One loaf is
    fresh.") fitted b - a + c .969, the lexicon's "Two loaves are fresh." .882 (Gemma: -39.9 against -36.7 nats); the
    paths' repair (core.readout.PATH_REPAIR) takes it, as it did not at the margin of .05."""
    from core.readout import PATH_REPAIR

    slip, fixed = "Two loafs are fresh.", "Two loaves are fresh."
    encode = fake_encode({slip: [0.969, np.sqrt(1 - 0.969 ** 2)], fixed: [0.882, -np.sqrt(1 - 0.882 ** 2)]})
    nats = {slip: -39.9, fixed: -36.7}
    vector = np.array([1.0, 0.0], dtype=np.float32)
    assert repair(slip, vector, encode, lambda texts: np.array([nats[t] for t in texts]), PATH_REPAIR) == fixed


def test_two_slips_are_repaired_in_two_rounds():
    slip = "Three woman is jumping."
    texts = [slip, "Three women is jumping.", "Three woman are jumping.", "Three women are jumping."]
    encode = fake_encode({t: [1.0, 0.0] for t in texts})
    nats = {slip: -30.0, texts[1]: -27.0, texts[2]: -28.0, texts[3]: -20.0}
    log_probs = lambda batch: np.array([nats[t] for t in batch])  # noqa: E731
    vector = np.array([1.0, 0.0], dtype=np.float32)
    assert repair(slip, vector, encode, log_probs, RepairSettings(rounds=2)) == texts[3]
    assert repair(slip, vector, encode, log_probs, RepairSettings(rounds=1)) == texts[1]


@pytest.mark.parametrize("bad", [dict(gain=-1), dict(margin=0.6), dict(rounds=0), dict(rounds=5)])
def test_repair_settings_are_bounded(bad):
    with pytest.raises(ValueError, match="a repair needs"):
        RepairSettings(**bad)


def test_the_sentence_key_ignores_case_punctuation_and_spelling():
    assert sentence_key("Our neighbor paints the fence.") == sentence_key("our neighbour paints the fence")
    assert sentence_key("He is afraid.") != sentence_key("He is not afraid.")


def test_a_verb_after_a_plural_noun_agrees_with_it():
    """Session 47: "Two geese sleeps." had no variant (only a plural pronoun made a verb lose its -s)."""
    assert agreement_variants("Two geese sleeps.") == ["Two geese sleep."]
    assert agreement_variants("The dogs runs home.") == ["The dogs run home."]
    assert agreement_variants("The dog runs home.") == []


def test_what_a_given_sentence_says_up_to_its_articles_is_told_unless_the_analogy_is_about_articles():
    from core.vec2sent.grammar import is_told, told_keys

    told = told_keys(["We open the box.", "We opened the box.", "They ride a horse."])
    assert is_told("They ride the horse", told) and is_told("they ride a horse!", told)
    assert not is_told("They rode a horse.", told) and not is_told("They ride a horses.", told)
    about_articles = told_keys(["I saw a dog.", "I saw the dog.", "I saw a cat."])
    assert is_told("I saw a cat", about_articles) and not is_told("I saw the cat.", about_articles)
