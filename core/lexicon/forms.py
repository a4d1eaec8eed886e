"""The form a description asks for (issue 60, 2): "sticks of wax that burn" asks for a plural (candles),
"bigger than all the others" for a superlative (biggest). The candidates are lemmas; the answer is shown in
the form asked, with its lemma's senses (one entry a word stays the rule; the form is how it is written).

    form = asked_form("bigger than all the others")     # "superlative"
    inflect("big", form)                                 # "biggest"
    shown_form("big", form, {"a"})                       # "biggest": an adjective takes the form
    lemmas_of("biggest", form)                           # ["big", ...]: what could be shown as "biggest"

`asked_form` reads rules on the description's words (no model). `inflect` writes irregular forms as the shipped
table of attested forms (word-forms.tsv.gz, built from WordNet's exception lists and wordfreq by
scripts/build_word_forms.py) has them and other forms by English spelling rules; `attested` writes only a form
that table knows ("offspring" has no plural "offsprings", "monetary" no "more monetary"): what is shown to users.
"""
from __future__ import annotations

import re
import gzip
from collections import defaultdict
from functools import lru_cache
from typing import Iterable, Sequence

from ..paths import CORE_DATA_DIR
from .dictionary import load_wordnet_lemmas

FORMS = ("plural", "comparative", "superlative", "past", "ing")
FORM_POS = {"plural": "n", "comparative": "a", "superlative": "a", "past": "v", "ing": "v"}  # who takes it
# The forms of the table of attested forms: FORMS, a verb's third person and its past participle
ALL_FORMS = (*FORMS, "third", "participle")
FORMS_FILE = CORE_DATA_DIR / "word-forms.tsv.gz"

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
    irregular = [lemma for lemma, form in _written_as().get(word, ()) if form == "plural"]
    if irregular and word not in irregular:
        return True
    return len(word) > 3 and word.endswith("s") and not _NOT_PLURAL.search(word)


def inflect(word: str, form: str) -> str:
    """`word` (a lemma: "candle", "big", "give up") in `form` (one of ALL_FORMS) as the table of attested forms
    writes it (mice, took, better), else by English spelling rules (`rule_form`), attested or not; a phrase
    inflects its last word for a plural, its first for a verb form, and takes "more" / "most" for a comparison."""
    return _inflected(word, form, lambda w: _attested_forms().get((w, form)) or rule_form(w, form))


def attested(word: str, form: str) -> str | None:
    """`word` (a lemma) in `form` (one of ALL_FORMS) when the table of attested forms knows that form (a
    phrase: its inflected word's; "more" / "most" + a phrase never), else None: "candle" -> "candles",
    "goose" -> "geese", "offspring" -> "offspring" (its plural), "monetary" -> None for "comparative"."""
    if " " in word and form in ("comparative", "superlative"):
        return None
    written = _inflected(word, form, lambda w: _attested_forms().get((w, form)) or "")
    return None if "" in written.split(" ") else written


def _inflected(word: str, form: str, one_word) -> str:
    """`word` with `one_word` (a single word -> its form) applied to the word of a phrase that takes `form`."""
    if form not in ALL_FORMS:
        raise ValueError(f"unknown form {form!r}: use one of {', '.join(ALL_FORMS)}")
    words = word.split(" ")
    if len(words) > 1 and form in ("comparative", "superlative"):
        return ("more " if form == "comparative" else "most ") + word
    at = -1 if form == "plural" else 0
    words[at] = one_word(words[at])
    return " ".join(words)


def rule_form(word: str, form: str) -> str:
    """One word (a lemma) in `form` (one of ALL_FORMS) by English spelling rules alone: "goose" -> "gooses"."""
    return _RULES[form](word)


_THIRD_PERSON = {"be": "is", "have": "has", "do": "does", "go": "goes", "undo": "undoes", "outdo": "outdoes"}


def third_person(verb: str) -> str:
    """`verb` (a lemma: "cut", "try", "give up") as "somebody ..." takes it: "cuts", "tries", "gives up"; the
    first word of a phrase is conjugated."""
    return inflect(verb, "third")


def _third(first: str) -> str:
    if first in _THIRD_PERSON:
        return _THIRD_PERSON[first]
    if first.endswith("o") and len(first) > 1 and first[-2] not in _VOWELS:  # veto -> vetoes
        return first + "es"
    return _plural(first)  # the same spelling rules: pushes, tries, plays


@lru_cache(maxsize=1)
def _attested_forms() -> dict[tuple[str, str], str]:
    """(lemma, form) -> written, for every attested form in FORMS_FILE (read once)."""
    with gzip.open(FORMS_FILE, "rt", encoding="utf-8") as lines:
        return {(lemma, form): written for lemma, form, written in (line.rstrip("\n").split("\t") for line in lines)}


def readings(written: str) -> tuple[tuple[str, str], ...]:
    """The (lemma, form)s the table of attested forms writes as `written`: "took" -> (("take", "past"),)."""
    return _written_as().get(written, ())


@lru_cache(maxsize=1)
def _written_as() -> dict[str, tuple[tuple[str, str], ...]]:
    """written -> its (lemma, form)s in the table of attested forms."""
    found: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for (lemma, form), written in _attested_forms().items():
        found[written].append((lemma, form))
    return {written: tuple(pairs) for written, pairs in found.items()}


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


_RULES = {"plural": _plural, "comparative": lambda w: _compare(w, "er"), "superlative": lambda w: _compare(w, "est"),
          "past": _past, "ing": _ing, "third": _third, "participle": _past}


def shown_form(word: str, form: str | None, pos_tags: Iterable[str]) -> str:
    """How an answer is written for a description asking for `form`: `attested(word, form)` when the word has
    the part of speech that takes that form (a noun for a plural, an adjective or adverb for a comparison, a
    verb for a past or -ing form) and that form is attested, else `word` as it is (never "offsprings")."""
    if form is None:
        return word
    tags = set(pos_tags)
    takes = FORM_POS[form] in tags or (FORM_POS[form] == "a" and ({"s", "r"} & tags))
    return (attested(word, form) or word) if takes else word


def lemmas_of(written: str, form: str) -> list[str]:
    """The lemmas that `inflect` could write as `written` in `form` (candidates, not all real words):
    what an answer shown as "biggest" stands for, to find it among the lemmas."""
    if " " in written and not written.startswith(("more ", "most ")):  # a phrase: its inflected word
        words = written.split(" ")
        at = len(words) - 1 if form == "plural" else 0
        return [" ".join(words[:at] + [lemma] + words[at + 1:]) for lemma in lemmas_of(words[at], form)]
    found = [lemma for lemma, its_form in _written_as().get(written, ()) if its_form == form]
    stems = {"plural": ("s", "es"), "third": ("s", "es"), "comparative": ("er", "r"), "superlative": ("est", "st"),
             "past": ("ed", "d"), "participle": ("ed", "d"), "ing": ("ing",)}[form]
    for ending in stems:
        if written.endswith(ending) and len(written) > len(ending):
            stem = written[:-len(ending)]
            found += [stem, stem + "e", stem[:-1], stem[:-1] + "y", stem[:-1] + "ie"]
    for phrase_word in ("more ", "most "):
        if written.startswith(phrase_word):
            found.append(written[len(phrase_word):])
    return [lemma for lemma in dict.fromkeys(found) if lemma and inflect(lemma, form) == written]


# The forms an over-regularised word can stand for: a plural or a third person by "-s", a past or participle by "-ed"
_REGULARISED = {"plural": ("s", "es"), "third": ("s", "es"), "past": ("ed", "d"), "participle": ("ed", "d")}


def regularised(written: str) -> list[str]:
    """The attested forms that `written`, a word no table knows written by spelling rules alone, stands for: "loafs"
    -> ["loaves"], "taked" -> ["took", "taken"], "foots" -> ["feet"]; [] for an attested word or any other."""
    if readings(written) or " " in written:
        return []
    found = []
    for form, endings in _REGULARISED.items():
        for ending in endings:
            stem = written[:-len(ending)] if written.endswith(ending) else ""
            for lemma in dict.fromkeys([stem, stem[:-1]] if stem else []):  # "taked" / "stopped": a doubled letter
                shown = attested(lemma, form) if lemma else None
                if shown not in (None, written) and rule_form(lemma, form) == written:
                    found.append(shown)
    return list(dict.fromkeys(found))


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
