"""Candidates made of word edits (core/vec2sent/paths.py) and the walk along an interpolation."""
from __future__ import annotations

import numpy as np
import pytest

from core.vec2sent.paths import apply_edits, edit_path, path_candidates, transfer_edit, walk, word_edits


@pytest.mark.parametrize("a, b, c, expected", [
    ("The man is walking.", "The woman is walking.", "The man is running.", "The woman is running."),
    ("I like tea.", "I do not like tea.", "I like coffee.", "I do not like coffee."),
    ("You are happy.", "Are you happy?", "You are tired.", "Are you tired?"),  # the moved word loses its capital
    ("I bought a car.", "I sold a car.", "I bought a house.", "I sold a house."),
    ("It is sunny in Rome.", "It is cloudy in Rome.", "It is sunny in Oslo.", "It is cloudy in Oslo."),
    # a word c does not share, at the same place: its ending changes as a's word's did
    ("A dog is sleeping.", "Two dogs are sleeping.", "A cat is eating.", "Two cats are eating."),
    ("A baby is sleeping.", "Two babies are sleeping.", "A puppy is eating.", "Two puppies are eating."),
    ("She opens the door.", "She opened the door.", "He closes the window.", "He closed the window."),
    # no word of c at the edited word's place: the change goes to c's word in the same form
    ("She eats an apple.", "She ate an apple.", "He drinks tea.", "He drank tea."),
    ("He eats an apple.", "He ate an apple.", "Our neighbour finds the keys.", "Our neighbour found the keys."),
    ("She writes a letter.", "She wrote a letter.", "Our neighbour cleans the kitchen.",
     "Our neighbour cleaned the kitchen."),
])
def test_an_analogys_edit_carries_over_to_c(a, b, c, expected):
    assert transfer_edit(a, b, c) == expected


@pytest.mark.parametrize("a, b, c, expected", [
    # issue 76, 3: "eats" read as a lemma was put in the past as "eatsed"; a tense change leaves the person behind
    ("I eat an apple.", "I ate an apple.", "She eats an apple.", "She ate an apple."),
    ("They go home.", "They went home.", "She goes home.", "She went home."),
    # irregular forms from WordNet's exception lists, not spelling rules ("oxes", "sheeps", "gooses")
    ("One horse runs.", "Two horses run.", "One ox runs.", "Two oxen run."),
    ("One horse runs.", "Two horses run.", "One sheep runs.", "Two sheep run."),
    ("A goose flies.", "Two geese fly.", "A mouse sleeps.", "Two mice sleep."),
    ("He eats an apple.", "He ate an apple.", "He takes a nap.", "He took a nap."),
])
def test_an_edit_writes_only_attested_forms(a, b, c, expected):
    assert transfer_edit(a, b, c) == expected


@pytest.mark.parametrize("a, b, c, expected", [
    # issue 74: b's words that are forms of a's replaced word take c's word ("did not take" copied "take")
    ("She sings a song.", "She is singing a song.", "He paints a wall.", "He is painting a wall."),
    ("We cleaned the car.", "We did not clean the car.", "We sold the house.", "We did not sell the house."),
    ("The cup is full.", "The cups are not full.", "The jar is empty.", "The jars are not empty."),
])
def test_a_replacement_carries_c_s_own_word_in_b_s_form(a, b, c, expected):
    assert transfer_edit(a, b, c) == expected


def test_an_edit_whose_form_is_not_attested_is_not_made():
    """"offspring" has no attested plural but itself, "monetary" no comparative: no sentence is made up."""
    assert transfer_edit("A horse runs.", "Two horses run.", "A ovenbird runs.") is None
    assert transfer_edit("The tall tree.", "The taller tree.", "The monetary tree.") is None


@pytest.mark.parametrize("a, b, c", [
    ("She eats an apple.", "She ate an apple.", "The tea is hot."),  # no word of c is in the third person
    ("He eats pizza.", "He visits Italy.", "She drinks wine."),
    ("The same.", "The same.", "Another one."),  # no edit at all
])
def test_no_transfer_where_an_edit_does_not_apply(a, b, c):
    assert transfer_edit(a, b, c) is None


def test_word_edits_split_a_replacement_word_by_word_and_rebuild_the_target():
    x, y = "a dog is here".split(), "two dogs are here today".split()
    edits = word_edits(x, y)
    assert [e for e in edits if e[1] - e[0] == 1][:3] == [(0, 1, ["two"]), (1, 2, ["dogs"]), (2, 3, ["are"])]
    assert apply_edits(x, edits) == y


def test_an_edit_path_holds_every_partial_sentence_and_neither_end():
    path = edit_path("She opened the window.", "He closed the door quietly.")
    assert "He opened the window." in path and "She opened the door quietly." in path
    assert not {"She opened the window.", "He closed the door quietly."} & set(path)
    assert len(path) == len(set(path)) == 2 ** 3 - 2  # three edits: she/he, opened/closed, window/door quietly


def test_a_long_edit_path_is_capped():
    x = " ".join(f"w{i}" for i in range(12))
    y = " ".join(f"v{i}" if i % 2 else f"w{i}" for i in range(12)) + " end"
    assert 0 < len(edit_path(x, y, limit=20)) <= 20


def test_walk_keeps_the_cosine_to_the_start_from_rising():
    # candidate 1 fits point 2 best but is nearer the start than candidate 2, chosen at point 1
    fits = np.array([[1.0, 0.1, 0.2], [0.3, 0.5, 0.8], [0.1, 0.9, 0.85]])
    to_start = np.array([1.0, 0.6, 0.4])
    chosen = walk(fits, to_start, np.zeros_like(fits))
    assert chosen == [0, 2, 2]
    assert np.all(np.diff(to_start[chosen]) <= 0)
    # without the rule, each point's best fit would be [0, 2, 1]: the path would turn back
    assert list(fits.argmax(1)) == [0, 2, 1]


def test_walk_prefers_a_bonus_within_its_margin_and_obeys_minus_infinity():
    fits = np.array([[1.0, 0.5], [0.80, 0.79], [0.2, 0.3]])
    to_start = np.array([1.0, 0.7])
    assert walk(fits, to_start, np.zeros_like(fits)) == [0, 0, 1]
    bonus = np.zeros_like(fits)
    bonus[1, 1] = 0.02
    assert walk(fits, to_start, bonus) == [0, 1, 1]
    bonus[1, 1] = -np.inf
    assert walk(fits, to_start, bonus)[1] == 0


def test_an_interpolations_candidates_leave_out_edited_sentences_that_slip_on_agreement():
    """Session 50: 13.9 % of the sentences of their own the walk showed on the dev pairs slipped on agreement, made by
    applying some of x -> y's edits ("Pakistanis votes in landmark election")."""
    from core.vec2sent.grammar import agreement_variants

    x, y = "Two dogs are running in the park.", "A cat is sleeping in the park."
    decoded = ["Two dogs are sleeping in the park."]
    edited = edit_path(x, y)
    assert "Two dogs is running in the park." in edited
    candidates = path_candidates(x, y, decoded)
    assert candidates[:3] == [x, y, decoded[0]]
    assert set(candidates[3:]) == {t for t in edited if not agreement_variants(t)} - set(decoded)
    assert "Two dogs is running in the park." not in candidates and len(candidates) > 3
    assert path_candidates(x, y, decoded, edits=False) == [x, y, decoded[0]]
