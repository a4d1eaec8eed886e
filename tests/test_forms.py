"""Issue 60, 2: the form a description asks for (core/lexicon/forms.py), on pairs made by rule."""
from __future__ import annotations

import pytest

from core.lexicon.dictionary import load_wordnet_lemmas
from core.lexicon.forms import (FORMS, asked_form, attested, describes_action, inflect, lemmas_written_as,
                                shown_form, written_forms)

# (template, form): a description asking for `form` of an answer made from a WordNet word of the right kind
TEMPLATES = {
    "plural": ["{noun}s that you find in a house", "small {noun}s used for work", "{noun}s of every kind"],
    "comparative": ["more {adjective} than the others", "somewhat more {adjective} than before"],
    "superlative": ["more {adjective} than all the others", "the most {adjective} one", "the one {adjective}er than any other"],
    "past": ["what you did yesterday", "something that happened in the past"],
    "ing": ["what you are doing right now", "in the process of changing"],
}
LEMMA_FORMS = [("candle", "plural", "candles"), ("city", "plural", "cities"), ("box", "plural", "boxes"),
               ("child", "plural", "children"), ("knife", "plural", "knives"), ("ice cream", "plural", "ice creams"),
               ("big", "superlative", "biggest"), ("quick", "comparative", "quicker"),
               ("happy", "comparative", "happier"), ("large", "superlative", "largest"),
               ("good", "comparative", "better"), ("beautiful", "superlative", "most beautiful"),
               ("stop", "past", "stopped"), ("cry", "past", "cried"), ("visit", "past", "visited"),
               ("go", "past", "went"), ("give up", "past", "gave up"), ("run", "ing", "running"),
               ("make", "ing", "making"), ("lie", "ing", "lying"), ("see", "ing", "seeing")]


@pytest.mark.parametrize("form", FORMS)
def test_descriptions_made_by_rule_ask_for_their_form(form):
    for template in TEMPLATES[form]:
        for noun, adjective in (("stick", "quick"), ("table", "narrow"), ("bottle", "heavy")):
            text = template.format(noun=noun, adjective=adjective)
            assert asked_form(text) == form, text


@pytest.mark.parametrize("text", ["a large grey animal with a trunk", "to find out who somebody is",
                                  "when you take what somebody hands you", "a glass for drinking",
                                  "something that is very fast", "the act of eating"])
def test_a_description_of_one_thing_or_an_action_asks_for_no_form(text):
    assert asked_form(text) is None


@pytest.mark.parametrize("lemma, form, written", LEMMA_FORMS)
def test_lemmas_are_inflected_and_found_again_from_their_forms(lemma, form, written):
    assert inflect(lemma, form) == written
    assert lemma in lemmas_written_as(written, form)


def test_regular_forms_of_wordnet_words_lead_back_to_their_lemma():
    """Pairs made by rule from WordNet's single-word nouns, adjectives and verbs: each form shown (an attested
    one; the others are shown as the lemma) leads back to its lemma."""
    kinds = {"n": "plural", "a": "superlative", "v": "past"}
    seen = {form: 0 for form in kinds.values()}
    for entry in load_wordnet_lemmas()[::97]:
        form = kinds.get(entry.pos)
        if form and entry.word.isalpha():
            written = shown_form(entry.word, form, {entry.pos})
            assert written == entry.word or entry.word in lemmas_written_as(written, form), entry.word
            seen[form] += written != entry.word
    assert min(seen.values()) > 50


def test_only_a_word_of_the_part_of_speech_that_takes_the_form_is_inflected():
    assert shown_form("candle", "plural", {"n"}) == "candles"
    assert shown_form("quickly", "plural", {"r"}) == "quickly"
    assert shown_form("big", "superlative", {"s"}) == "biggest"  # WordNet's satellite adjectives too
    assert shown_form("candle", None, {"n"}) == "candle"
    assert written_forms("sticks of wax that burn to give light", ["candle", "quickly"]) == ["candles", "quickly"]
    assert written_forms("a stick of wax that burns", ["candle"]) == ["candle"]
    with pytest.raises(ValueError, match="unknown form"):
        inflect("candle", "dual")


@pytest.mark.parametrize("word, pos, form", [
    ("offspring", "n", "plural"), ("young", "n", "plural"), ("little", "n", "plural"), ("dog breeding", "n", "plural"),
    ("monetary", "a", "comparative"), ("economic", "a", "comparative"), ("ovenbird", "n", "plural"),
])
def test_a_form_no_lexicon_or_word_list_knows_is_not_shown(word, pos, form):
    """Issue 76, 3: offsprings, youngs, littles, dog breedings, more monetary, more economic were answers."""
    assert shown_form(word, form, {pos}) == word
    assert attested(word, form) in (None, word)


@pytest.mark.parametrize("lemma, form, written", [
    ("ox", "plural", "oxen"), ("sheep", "plural", "sheep"), ("woman", "plural", "women"), ("person", "plural", "people"),
    ("take", "past", "took"), ("take", "participle", "taken"), ("sing", "past", "sang"), ("sing", "participle", "sung"),
    ("begin", "past", "began"), ("feed", "past", "fed"), ("be", "past", "was"), ("run", "participle", "run"),
    ("show", "participle", "shown"), ("eat", "third", "eats"), ("go", "third", "goes"), ("good", "superlative", "best"),
    ("beautiful", "comparative", "more beautiful"), ("candle", "plural", "candles"),
])
def test_irregular_and_regular_forms_are_attested(lemma, form, written):
    assert attested(lemma, form) == written == inflect(lemma, form)


def test_sticks_of_wax_are_candles_and_the_young_of_an_animal_stay_young():
    assert written_forms("sticks of wax that burn", ["candle", "offspring", "young", "little"]) == [
        "candles", "offspring", "young", "little"]
    assert written_forms("more money than the others", ["monetary", "rich"]) == ["monetary", "richer"]


@pytest.mark.parametrize("description, action", [
    ("to cut through something with teeth", True), ("When something is being built", True),
    ("if you win everything", True), ("The act of making musical sounds", True), ("act of hitting a ball", True),
    ("a large grey animal with a trunk", False), ("tomorrow's weather", False), ("the tool to open a can", False),
])
def test_describes_action(description, action):
    assert describes_action(description) is action


@pytest.mark.parametrize("written, forms", [("loafs", ["loaves"]), ("foots", ["feet"]), ("taked", ["took", "taken"]),
                                            ("bringed", ["brought"]), ("sheeps", ["sheep"]), ("dogs", []),
                                            ("walked", []), ("leafs", []), ("blorfs", [])])
def test_a_word_written_by_spelling_rules_alone_stands_for_the_attested_forms(written, forms):
    """Session 49: "Two loafs are fresh." was an analogy's answer; the lexicon writes "loaves". An attested word
    ("leafs": the verb's third person) and a word of no lemma stand for nothing."""
    from core.lexicon.forms import regularised

    assert regularised(written) == forms
