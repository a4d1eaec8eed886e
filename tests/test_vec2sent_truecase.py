"""Truecasing decoded text from the usual forms of words in a cased corpus."""
from __future__ import annotations

import pytest

from core.vec2sent.truecase import TrueCaser

CORPUS = ["Yesterday Obama visited the U.S. embassy in Paris.", "Then Obama left for the U.S. again.",
          "He said Paris was lovely in 2013.", "The Apple fell.", "An apple a day.", "I saw an apple.",
          "Obviously the apple is red."]


def test_learns_usual_forms_outside_the_first_word():
    forms = TrueCaser.learn(CORPUS).forms
    assert forms["obama"] == "Obama" and forms["u.s"] == "U.S" and forms["paris"] == "Paris"
    assert "apple" not in forms  # lower case twice, capitalised once
    assert "yesterday" not in forms and "then" not in forms  # only ever sentence-initial


def test_apply_restores_names_and_the_first_capital():
    caser = TrueCaser.learn(CORPUS)
    assert caser.apply("then obama went to the u.s. in 2013.") == "Then Obama went to the U.S. in 2013."
    assert caser.apply("paris, 2013") == "Paris, 2013"
    assert caser.apply("2013 was good") == "2013 was good"
    assert caser.apply('"i saw it," he said') == '"I saw it," he said'
    assert caser.apply("") == ""


def test_round_trip_and_bad_files(tmp_path):
    caser = TrueCaser.learn(CORPUS)
    caser.save(tmp_path / "t.json")
    assert TrueCaser.load(tmp_path / "t.json") == caser
    (tmp_path / "bad.json").write_text('{"obama": "Clinton"}', encoding="utf-8")
    with pytest.raises(ValueError, match="truecasing table"):
        TrueCaser.load(tmp_path / "bad.json")
