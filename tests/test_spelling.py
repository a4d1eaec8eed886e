"""One word's spellings (core/lexicon/spelling.py)."""
from __future__ import annotations

from core.lexicon.dictionary import Entry
from core.lexicon.spelling import spelling_groups, spelling_key, spellings


def test_spellings_are_words_of_one_synset_that_one_rewrite_joins():
    entries = [Entry("grey", "a colour", "n", (), "1-n"), Entry("gray", "a colour", "n", (), "1-n"),
               Entry("colour", "a hue", "n", (), "2-n"), Entry("color", "a hue", "n", (), "2-n"),
               Entry("colour", "a quality", "n", (), "3-n"), Entry("coloring", "a quality", "n", (), "3-n"),
               Entry("pond", "still water", "n", (), "4-n"), Entry("pool", "still water", "n", (), "4-n"),
               Entry("four", "a number", "n", (), "5-n"), Entry("for", "towards", "r", (), "6-r"),
               Entry("peck", "eat in small bites", "v", (), "7-v"), Entry("pick", "eat in small bites", "v", (), "7-v"),
               Entry("organisation", "a group", "n", (), "8-n"), Entry("organization", "a group", "n", (), "8-n")]
    assert spelling_groups(entries) == {"grey": "gray", "gray": "gray", "colour": "color", "color": "color",
                                        "organisation": "organisation", "organization": "organisation"}


def test_wordnet_gives_the_british_and_american_spellings():
    assert spellings("grey") == ("grey", "gray") and spellings("traveller") == ("traveller", "traveler")
    assert spelling_key("colour") == spelling_key("color") and spelling_key("centre") == spelling_key("center")
    assert spellings("four") == ("four",) and spelling_key("pond") != spelling_key("pool")


def test_the_shipped_table_is_what_the_shipped_wordnet_gives():
    from core.lexicon.dictionary import load_wordnet_lemmas
    from core.lexicon.spelling import read_groups

    assert read_groups() == spelling_groups(load_wordnet_lemmas())  # else: python scripts/build_spellings.py
