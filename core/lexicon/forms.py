"""The form a description asks for (issue 60, 2): "sticks of wax that burn" asks for a plural (candles),
"bigger than all the others" for a superlative (biggest). The candidates are lemmas; the answer is shown in
the form asked, with its lemma's senses (one entry a word stays the rule; the form is how it is written).

    form = asked_form("bigger than all the others")     # "superlative"
    inflect("big", form)                                 # "biggest"
    shown_form("big", form, {"a"})                       # "biggest": an adjective takes the form
    lemmas_of("biggest", form)                           # ["big", ...]: what could be shown as "biggest"

`asked_form` reads rules on the description's words (no model); `inflect` follows English spelling rules with
a short list of irregular words (WordNet's exception lists are not shipped).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable, Sequence

from .dictionary import load_wordnet_lemmas

FORMS = ("plural", "comparative", "superlative", "past", "ing")
FORM_POS = {"plural": "n", "comparative": "a", "superlative": "a", "past": "v", "ing": "v"}  # who takes it

_IRREGULAR = {
    "plural": {"man": "men", "woman": "women", "child": "children", "foot": "feet", "tooth": "teeth",
               "goose": "geese", "mouse": "mice", "louse": "lice", "person": "people", "ox": "oxen",
               "sheep": "sheep", "deer": "deer", "fish": "fish", "moose": "moose", "series": "series",
               "species": "species", "knife": "knives", "wife": "wives", "life": "lives", "leaf": "leaves",
               "wolf": "wolves", "half": "halves", "calf": "calves", "loaf": "loaves", "thief": "thieves",
               "shelf": "shelves", "elf": "elves", "potato": "potatoes", "tomato": "tomatoes", "hero": "heroes",
               "cactus": "cacti", "fungus": "fungi", "crisis": "crises", "phenomenon": "phenomena"},
    "comparative": {"good": "better", "well": "better", "bad": "worse", "badly": "worse", "far": "farther",
                    "little": "less", "much": "more", "many": "more"},
    "superlative": {"good": "best", "well": "best", "bad": "worst", "badly": "worst", "far": "farthest",
                    "little": "least", "much": "most", "many": "most"},
    "past": {"be": "was", "have": "had", "do": "did", "go": "went", "come": "came", "see": "saw", "eat": "ate",
             "take": "took", "give": "gave", "get": "got", "make": "made", "run": "ran", "say": "said",
             "find": "found", "think": "thought", "bring": "brought", "buy": "bought", "catch": "caught",
             "teach": "taught", "fight": "fought", "seek": "sought", "know": "knew", "grow": "grew",
             "throw": "threw", "fly": "flew", "draw": "drew", "write": "wrote", "ride": "rode", "drive": "drove",
             "rise": "rose", "speak": "spoke", "break": "broke", "choose": "chose", "freeze": "froze",
             "steal": "stole", "wake": "woke", "sing": "sang", "ring": "rang", "drink": "drank", "swim": "swam",
             "begin": "began", "sink": "sank", "sit": "sat", "stand": "stood", "understand": "understood",
             "tell": "told", "sell": "sold", "feel": "felt", "keep": "kept", "sleep": "slept", "leave": "left",
             "meet": "met", "lead": "led", "feed": "fed", "hold": "held", "win": "won", "lose": "lost",
             "send": "sent", "spend": "spent", "build": "built", "lend": "lent", "bend": "bent", "hear": "heard",
             "pay": "paid", "lay": "laid", "lie": "lay", "fall": "fell", "forget": "forgot", "hide": "hid",
             "bite": "bit", "shoot": "shot", "wear": "wore", "tear": "tore", "bear": "bore", "swear": "swore",
             "hang": "hung", "dig": "dug", "stick": "stuck", "strike": "struck", "swing": "swung",
             "shine": "shone", "light": "lit", "slide": "slid", "spin": "spun", "win over": "won over",
             "blow": "blew", "shake": "shook", "forgive": "forgave", "become": "became", "flee": "fled",
             "put": "put", "cut": "cut", "hit": "hit", "let": "let", "set": "set", "shut": "shut", "hurt": "hurt",
             "cost": "cost", "quit": "quit", "spread": "spread", "read": "read", "bet": "bet", "burst": "burst"},
    "ing": {"be": "being", "see": "seeing", "flee": "fleeing", "agree": "agreeing", "lie": "lying",
            "die": "dying", "tie": "tying", "dye": "dyeing"},
}
_VOWELS = "aeiou"
_SUPERLATIVE = re.compile(r"\bthan (all|any|every|everything|everyone|anyone|anything)\b|\bthe most\b"
                          r"|\b(\w+est|most \w+) (of|in) (all|them|the world)\b")
_COMPARATIVE = re.compile(r"\b(more \w+|less \w+|\w+er) than\b")
_PAST = re.compile(r"\b(in the past|yesterday|ago|last (night|week|month|year)|previously|already happened)\b")
_ING = re.compile(r"\b(right now|at the moment|at this moment|currently|in the process of|in the middle of)\b")
_SINGULAR_START = re.compile(r"^(a|an|one|the act|to|when|if|someone|somebody|something|anyone|this|that|it)\b")
_NOT_HEAD = {"of", "that", "which", "who", "whom", "whose", "with", "for", "used", "made", "in", "on", "you",
             "to", "from", "where", "when", "at", "by", "and", "or", "are", "is", "have", "has", "can", "like",
             "people", "we", "they", "found", "such", "as"}
_NOT_PLURAL = re.compile(r"(ss|us|is|ous|news|ics)$")


_ACTION_START = re.compile(r"^\s*(to|when|if|the act of|an act of|act of)\b", re.IGNORECASE)


def describes_action(description: str) -> bool:
    """Whether the description is of an action or a state in the shapes people use for them: "to ...",
    "when ...", "if ...", "the act of ..." (issue 60, 1: the shapes the reverse dictionary answers worst)."""
    return bool(_ACTION_START.match(description))


def asked_form(description: str) -> str | None:
    """The form the description asks for (one of FORMS), or None for a lemma. Rules: a superlative for
    "the most ...", "... than all/any (the) others", "...est of all"; a comparative for "more X than", "Xer than";
    a past form for "in the past", "yesterday", "ago"...; an -ing form for "right now", "currently", "in the
    process of"...; a plural when the description's first noun phrase ends in a plural ("sticks of wax").
    A description that begins "a ...", "to ...", "when ..." asks for none."""
    text = " ".join(re.findall(r"[a-z]+(?:'[a-z]+)?", description.lower()))
    if _SUPERLATIVE.search(text):
        return "superlative"
    if _COMPARATIVE.search(text):
        return "comparative"
    if _PAST.search(text):
        return "past"
    if _ING.search(text):
        return "ing"
    if text and not _SINGULAR_START.match(text) and _is_plural(_head(text.split())):
        return "plural"
    return None


def _head(words: list[str]) -> str:
    """The last word of the description's first noun phrase: the word before the first of `_NOT_HEAD`."""
    for i, word in enumerate(words):
        if word in _NOT_HEAD:
            return words[i - 1] if i else ""
    return words[-1] if words else ""


def _is_plural(word: str) -> bool:
    if word in _IRREGULAR["plural"].values() and word not in _IRREGULAR["plural"]:
        return True
    return len(word) > 3 and word.endswith("s") and not _NOT_PLURAL.search(word)


def inflect(word: str, form: str) -> str:
    """`word` (a lemma: "candle", "big", "give up") in `form` (one of FORMS) by English spelling rules and a
    short list of irregular words; a phrase inflects its last word for a plural, its first for a verb form,
    and takes "more" / "most" for a comparison."""
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}: use one of {', '.join(FORMS)}")
    words = word.split(" ")
    if len(words) > 1:
        if form in ("comparative", "superlative"):
            return ("more " if form == "comparative" else "most ") + word
        at = -1 if form == "plural" else 0
        words[at] = inflect(words[at], form)
        return " ".join(words)
    if word in _IRREGULAR[form]:
        return _IRREGULAR[form][word]
    return _RULES[form](word)


_THIRD_PERSON = {"be": "is", "have": "has", "do": "does", "go": "goes", "undo": "undoes", "outdo": "outdoes"}


def third_person(verb: str) -> str:
    """`verb` (a lemma: "cut", "try", "give up") as "somebody ..." takes it: "cuts", "tries", "gives up"; the
    first word of a phrase is conjugated."""
    first, _, rest = verb.partition(" ")
    if first in _THIRD_PERSON:
        written = _THIRD_PERSON[first]
    elif first.endswith("o") and len(first) > 1 and first[-2] not in _VOWELS:  # veto -> vetoes
        written = first + "es"
    else:
        written = _plural(first)  # the same spelling rules: pushes, tries, plays
    return f"{written} {rest}" if rest else written


def _plural(w: str) -> str:
    if w.endswith(("s", "x", "z", "ch", "sh")):
        return w + "es"
    if w.endswith("y") and len(w) > 1 and w[-2] not in _VOWELS:
        return w[:-1] + "ies"
    return w + "s"


def _compare(w: str, ending: str) -> str:
    """big -> bigg+er, happy -> happi+er, large -> larg+er; long adjectives take "more" / "most"."""
    if _syllables(w) > 2 or (_syllables(w) == 2 and not w.endswith(("y", "le", "ow", "er"))):
        return ("more " if ending == "er" else "most ") + w
    if w.endswith("e"):
        return w + ending[1:]
    if w.endswith("y") and len(w) > 1 and w[-2] not in _VOWELS:
        return w[:-1] + "i" + ending
    return (w + w[-1] if _doubles(w) else w) + ending


def _past(w: str) -> str:
    if w.endswith("e"):
        return w + "d"
    if w.endswith("y") and len(w) > 1 and w[-2] not in _VOWELS:
        return w[:-1] + "ied"
    return (w + w[-1] if _doubles(w) else w) + "ed"


def _ing(w: str) -> str:
    if w.endswith("ie"):
        return w[:-2] + "ying"
    if w.endswith("e") and not w.endswith(("ee", "ye", "oe")) and len(w) > 2:
        return w[:-1] + "ing"
    return (w + w[-1] if _doubles(w) else w) + "ing"


def _doubles(w: str) -> bool:
    """One syllable ending consonant-vowel-consonant (not w, x, y): big -> bigger, stop -> stopped."""
    return (len(w) >= 3 and _syllables(w) == 1 and w[-1] not in _VOWELS + "wxy" and w[-2] in _VOWELS
            and w[-3] not in _VOWELS)


def _syllables(w: str) -> int:
    groups = len(re.findall(r"[aeiouy]+", w))
    return max(1, groups - (1 if w.endswith("e") and not w.endswith(("le", "ee")) and groups > 1 else 0))


_RULES = {"plural": _plural, "comparative": lambda w: _compare(w, "er"),
          "superlative": lambda w: _compare(w, "est"), "past": _past, "ing": _ing}


def shown_form(word: str, form: str | None, pos_tags: Iterable[str]) -> str:
    """How an answer is written for a description asking for `form`: `inflect(word, form)` when the word has
    the part of speech that takes that form (a noun for a plural, an adjective or adverb for a comparison, a
    verb for a past or -ing form), else `word` as it is."""
    if form is None:
        return word
    tags = set(pos_tags)
    takes = FORM_POS[form] in tags or (FORM_POS[form] == "a" and ({"s", "r"} & tags))
    return inflect(word, form) if takes else word


def lemmas_of(written: str, form: str) -> list[str]:
    """The lemmas that `inflect` could write as `written` in `form` (candidates, not all real words):
    what an answer shown as "biggest" stands for, to find it among the lemmas."""
    if " " in written and not written.startswith(("more ", "most ")):  # a phrase: its inflected word
        words = written.split(" ")
        at = len(words) - 1 if form == "plural" else 0
        return [" ".join(words[:at] + [lemma] + words[at + 1:]) for lemma in lemmas_of(words[at], form)]
    found = [lemma for lemma, inflected in _IRREGULAR[form].items() if inflected == written]
    stems = {"plural": ("s", "es"), "comparative": ("er", "r"), "superlative": ("est", "st"), "past": ("ed", "d"),
             "ing": ("ing",)}[form]
    for ending in stems:
        if written.endswith(ending) and len(written) > len(ending):
            stem = written[:-len(ending)]
            found += [stem, stem + "e", stem[:-1], stem[:-1] + "y", stem[:-1] + "ie"]
    for phrase_word in ("more ", "most "):
        if written.startswith(phrase_word):
            found.append(written[len(phrase_word):])
    return [lemma for lemma in dict.fromkeys(found) if lemma and inflect(lemma, form) == written]


def written_forms(description: str, words: Sequence[str]) -> list[str]:
    """Each of `words` (lemmas answering `description`) as `shown_form` writes it for the form the description
    asks for (`asked_form`), with their parts of speech in the shipped WordNet dictionary."""
    form = asked_form(description)
    if form is None:
        return list(words)
    tags = _pos_tags()
    return [shown_form(word, form, tags.get(word, ())) for word in words]


@lru_cache(maxsize=1)
def _pos_tags() -> dict[str, frozenset[str]]:
    """word or phrase -> its parts of speech among every WordNet lemma (built once). The words share the few
    distinct sets: 147k frozensets of their own were a tenth of a test process's objects, walked by every full
    garbage collection."""
    tags: dict = {}  # word -> its set, then its shared frozenset
    for entry in load_wordnet_lemmas():
        tags.setdefault(entry.word, set()).add(entry.pos)
    shared: dict[frozenset[str], frozenset[str]] = {}
    for word, pos in tags.items():
        key = frozenset(pos)
        tags[word] = shared.setdefault(key, key)
    return tags


def pos_tags(word: str) -> frozenset[str]:
    """The parts of speech (n, v, a, s, r) of `word` among every WordNet lemma; empty if it is none."""
    return _pos_tags().get(word, frozenset())


def takes_form(lemma: str, form: str) -> bool:
    """Whether the WordNet lemma `lemma` can be written in `form`: a noun or a verb in the plural (a verb's
    third person), an adjective or adverb compared, a verb in the past or -ing form."""
    wanted = {"plural": {"n", "v"}, "past": {"v"}, "ing": {"v"}}.get(form, {"a", "s", "r"})
    return bool(pos_tags(lemma) & wanted)


def is_noun(word: str) -> bool:
    """Whether `word` is a WordNet noun."""
    return "n" in pos_tags(word)


def is_lemma(word: str) -> bool:
    """Whether `word` is a WordNet lemma (of any part of speech)."""
    return word in _pos_tags()


def lemmas_written_as(written: str, form: str) -> list[str]:
    """The WordNet lemmas `shown_form` writes as `written` in `form` ("biggest": big): an answer shown so is
    right for a description of `written`."""
    tags = _pos_tags()
    return [lemma for lemma in lemmas_of(written, form) if shown_form(lemma, form, tags.get(lemma, ())) == written]
