"""Issue 60, 1: dictionary glosses of actions and states rewritten into people's shapes (core/lexicon/action_shapes.py),
on pairs made by rule."""
from __future__ import annotations

import pytest

from core.lexicon.action_shapes import (STATE_SHAPES, VERB_SHAPES, action_queries, action_shapes,
                                        glosses_and_shapes)
from core.lexicon.dictionary import Entry
from core.lexicon.forms import describes_action, third_person
from core.text import query_words


@pytest.mark.parametrize("gloss, shape, written", [
    ("cut or make a notch into", "when somebody", "when somebody cuts or makes a notch into"),
    ("cut or make a notch into", "the act of", "the act of cutting or making a notch into"),
    ("try or attempt", "when somebody", "when somebody tries or attempts"),
    ("to say again or imitate", "to", "to say again or imitate"),
    ("be expensive for someone", "when you", "when you are expensive for someone"),
    ("be expensive for someone", "when somebody", "when somebody is expensive for someone"),
    ("be expensive for someone", "the act of", "the act of being expensive for someone"),
    ("have on one's person", "when you", "when you have on your person"),
    ("have on one's person", "when somebody", "when somebody has on their person"),
    ("not go to bed", "when somebody", "when somebody does not go to bed"),
    ("not go to bed", "the act of", "the act of not going to bed"),
    ("move fast; run", "if you", "if you move fast"),
    ("give money, usually in exchange for goods", "when you", "when you give money, usually in exchange for goods"),
    ("become crude or savage", "when somebody", "when somebody becomes crude or savage"),  # savage: no verb here
    ("go away", "when somebody", "when somebody goes away"),
])
def test_verb_glosses_take_people_shapes_conjugated(gloss, shape, written):
    assert action_shapes(gloss, "v")[shape] == written


@pytest.mark.parametrize("gloss, shape, written", [
    ("not in active use", "when something", "when something is not in active use"),
    ("(color) giving no sensation of warmth", "when you", "when you are giving no sensation of warmth"),
    ("having great size", "when something", "when something has great size"),
    ("having great size", "if you", "if you have great size"),
])
def test_adjective_glosses_become_states(gloss, shape, written):
    assert action_shapes(gloss, "s")[shape] == written


@pytest.mark.parametrize("gloss, pos", [("of or relating to glycogen", "a"), ("a large animal", "n"),
                                        ("", "v"), ("quickly", "r")])
def test_glosses_that_name_no_action_or_state_take_no_shape(gloss, pos):
    assert action_shapes(gloss, pos) == {}


@pytest.mark.parametrize("verb, written", [("cut", "cuts"), ("try", "tries"), ("play", "plays"), ("push", "pushes"),
                                           ("go", "goes"), ("veto", "vetoes"), ("be", "is"), ("give up", "gives up")])
def test_third_person(verb, written):
    assert third_person(verb) == written


def test_every_shape_reads_as_an_action_description():
    for shapes, pos, gloss in ((VERB_SHAPES, "v", "laugh boisterously"), (STATE_SHAPES, "a", "very old")):
        written = action_shapes(gloss, pos)
        assert list(written) == list(shapes)
        assert all(describes_action(text) for text in written.values())


def test_the_dev_slice_takes_only_the_given_entries_in_turn_of_shapes_without_its_own_word():
    entries = [Entry(f"verb{i}", f"walk slowly to place {i}", "v") for i in range(12)]
    entries += [Entry("laugh", "laugh boisterously", "v"), Entry("old", "very old", "a"), Entry("big", "large", "s"),
                Entry("dog", "a domestic animal", "n")]
    queries = action_queries(entries, verbs=6, states=5, seed=3)
    assert len([q for q in queries if q.pos == "v"]) == 6 and {q.word for q in queries if q.pos != "v"} == {"big"}
    assert all(q.word not in query_words(q.definition) for q in queries)  # "very old" holds old: left out
    verb_shapes = [next(s for s in VERB_SHAPES if q.definition.startswith(s + " ")) for q in queries if q.pos == "v"]
    assert verb_shapes == [*VERB_SHAPES, VERB_SHAPES[0]]
    assert queries == action_queries(entries, verbs=6, states=5, seed=3)


def test_an_index_leaves_out_a_held_out_gloss_with_its_shapes():
    texts = glosses_and_shapes([Entry("guffaw", "laugh boisterously", "v"), Entry("dog", "a domestic animal", "n")])
    assert texts == ["laugh boisterously", *action_shapes("laugh boisterously", "v").values(), "a domestic animal"]
