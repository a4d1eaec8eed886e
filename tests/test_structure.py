"""Issue 74: changes of a sentence's structure (core/vec2sent/structure.py) and the analogy candidates made of them
(core/vec2sent/paths.py `transfer_edits`)."""
from __future__ import annotations

import pytest

from core.vec2sent.paths import transfer_edits
from core.vec2sent.structure import active, affirmed, asked, negated, passive, past, stated


@pytest.mark.parametrize("change, text, expected", [
    (negated, "He ate the soup.", "He did not eat the soup."),
    (negated, "She likes tea.", "She does not like tea."),
    (negated, "They play chess.", "They do not play chess."),
    (negated, "She can swim.", "She cannot swim."),
    (negated, "They will come.", "They will not come."),
    (negated, "The lamp is bright.", "The lamp is not bright."),
    (negated, "He did not eat.", None),  # negated already
    (affirmed, "He did not take the bus.", "He took the bus."),
    (affirmed, "She cannot swim.", "She can swim."),
    (affirmed, "He took the bus.", None),
    (asked, "She likes tea.", "Does she like tea?"),
    (asked, "They went home.", "Did they go home?"),
    (asked, "He can swim.", "Can he swim?"),
    (asked, "The shop is open.", "Is the shop open?"),
    (stated, "Did she feed the cat?", "She fed the cat."),
    (stated, "Can we dance?", "We can dance."),
    (stated, "She fed the cat.", None),
    (passive, "The wind broke the branch.", "The branch was broken by the wind."),
    (passive, "The dog chases the cats.", "The cats are chased by the dog."),
    (passive, "She caught them.", "They were caught by her."),
    (passive, "The baby cries at night.", None),  # no object
    (active, "The vase was broken by the cat.", "The cat broke the vase."),
    (active, "The songs are sung by the choir.", "The choir sings the songs."),
    (active, "The vase was broken.", None),  # no agent
    (past, "They go home.", "They went home."),
    (past, "She is tired.", "She was tired."),
    (past, "He can swim.", None),
])
def test_a_change_of_structure(change, text, expected):
    assert change(text) == expected


@pytest.mark.parametrize("a, b, c, expected", [
    ("He took the bus.", "He did not take the bus.", "He ate the soup.", "He did not eat the soup."),
    ("She can sing.", "She cannot sing.", "My friend can cook.", "My friend cannot cook."),
    ("The lamp is bright.", "The lamps are not bright.", "The road is wet.", "The roads are not wet."),
    ("She plays tennis.", "Does she play tennis?", "She drinks coffee.", "Does she drink coffee?"),
    ("The wind broke the branch.", "The branch was broken by the wind.", "The cat caught the mouse.",
     "The mouse was caught by the cat."),
    ("The vase was broken by the cat.", "The cat broke the vase.", "The cake was eaten by the dog.",
     "The dog ate the cake."),
    ("I open the box.", "I opened the box.", "They go home.", "They went home."),
])
def test_an_analogys_change_of_structure_is_among_its_candidates(a, b, c, expected):
    """The word edits alone made "He did not take the soup.", "The lamps are not wet." or nothing."""
    assert expected in transfer_edits(a, b, c)


def test_no_candidates_for_no_change():
    assert transfer_edits("The same.", "The same.", "Another one.") == []


def test_cs_verb_of_two_readings_is_read_in_the_form_as_verb_is_in():
    """Session 47: "I read novels." was read in the past whatever a said ("I watch the news." -> "Do I watch the
    news?" made "Did I read novels?")."""
    assert asked("I read novels.", like="plain") == "Do I read novels?"
    assert asked("I read novels.", like="past") == "Did I read novels?"
    assert negated("They put the cups away.", like="plain") == "They do not put the cups away."
    assert transfer_edits("I watch the news.", "Do I watch the news?", "I read novels.") == ["Do I read novels?"]
    assert transfer_edits("I watched the news.", "Did I watch the news?", "I read novels.") == ["Did I read novels?"]
    assert transfer_edits("I watch the news.", "I do not watch the news.", "I read novels.") == ["I do not read novels."]
