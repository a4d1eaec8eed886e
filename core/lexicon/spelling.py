"""One word's spellings ("grey" and "gray", "colour" and "color", "traveller" and "traveler", "sulphur" and
"sulfur").

The reverse dictionary treats them as one word (issue 38, item 4): a query's word in either spelling is
left out of its answers, as the word itself is ("a large grey animal" does not answer "gray"), and two
spellings of one word do not both take a place in the list (traveller, traveler).

Two words are spellings of one word when WordNet puts them in one synset and one rewrite of REWRITES
turns one into the other: the rewrites alone would join "four" and "for", the synset alone "pond" and
"pool". A pair joins for all its senses where WordNet shares one (timber, timbre: only the sense of tone);
then the lower-ranked of the two is the one hidden, rarely the word meant. The groups of all WordNet lemmas
are shipped as core/data/spellings.tsv (`word<TAB>the spelling that stands for its group`), read in
milliseconds where building them takes seconds:

    python scripts/build_spellings.py
"""
from __future__ import annotations

import functools
import itertools
import os
from pathlib import Path
from typing import Iterable

from ..paths import CORE_DATA_DIR
from .dictionary import Entry

SPELLINGS_FILE = CORE_DATA_DIR / "spellings.tsv"

# Pieces of a word and their other spelling (the British or older one first), rewritten once, anywhere in it: colour,
# mould, centre, organisation, traveller, defence, grey, whiskey, anaemia, foetus, catalogue, tyre,
# programme, plough, sulphur, sceptic, aluminium, judgement, ageing, axe, yoghurt, jewellery, enquire,
# despatch, artefact, euclidean, liquefy. Single letters only for s/z: e/i would join peck and pick.
REWRITES = (("ou", "o"), ("ou", "u"), ("re", "er"), ("s", "z"), ("ll", "l"), ("ence", "ense"), ("ey", "ay"),
            ("ey", "y"), ("ae", "e"), ("oe", "e"), ("ogue", "og"), ("yre", "ire"), ("mme", "m"), ("ough", "ow"),
            ("ph", "f"), ("sc", "sk"), ("ium", "um"), ("ement", "ment"), ("eing", "ing"), ("xe", "x"), ("gh", "g"),
            ("ellery", "elry"), ("en", "in"), ("es", "is"), ("te", "ti"), ("ean", "ian"), ("ef", "if"))


def spelling_groups(entries: Iterable[Entry]) -> dict[str, str]:
    """{word: the spelling that stands for its group (the alphabetically first)} for each word with
    another spelling among `entries` (module docstring); words with one spelling are not keys."""
    synsets: dict[str, set[str]] = {}
    for entry in entries:
        if entry.synset:
            synsets.setdefault(entry.synset, set()).add(entry.word)
    parent: dict[str, str] = {}  # union-find, each group's root its alphabetically first word
    for words in synsets.values():
        for word, other in itertools.combinations(sorted(words), 2):
            if _differ_little(word, other) and other in _rewritten(word):
                a, b = _root(parent, word), _root(parent, other)
                parent[a], parent[b] = min(a, b), min(a, b)
    return {word: _root(parent, word) for word in parent}


def _differ_little(a: str, b: str) -> bool:
    """True when a and b differ in at most 4 letters in one place: a cheap test that never changes the
    groups (no rewrite changes more), only halves the time to build them."""
    if abs(len(a) - len(b)) > 2:
        return False
    head = len(os.path.commonprefix([a, b]))
    tail = len(os.path.commonprefix([a[head:][::-1], b[head:][::-1]]))
    return max(len(a), len(b)) - head - tail <= 4


def _rewritten(word: str) -> set[str]:
    """`word` with one piece of REWRITES replaced by its other spelling (both ways), once."""
    out = set()
    for a, b in REWRITES:
        for old, new in ((a, b), (b, a)):
            start = word.find(old)
            while start >= 0:
                out.add(word[:start] + new + word[start + len(old):])
                start = word.find(old, start + 1)
    return out


def _root(parent: dict[str, str], word: str) -> str:
    """The root of `word`'s group in the union-find `parent` (itself when it has none)."""
    while parent.get(word, word) != word:
        word = parent[word]
    return word


def write_groups(groups: dict[str, str], path: Path = SPELLINGS_FILE) -> None:
    """`groups` as `word<TAB>its group's spelling` lines, sorted."""
    path.write_text("".join(f"{word}\t{first}\n" for word, first in sorted(groups.items())), encoding="utf-8")


def read_groups(path: Path = SPELLINGS_FILE) -> dict[str, str]:
    """The groups `write_groups` wrote."""
    return dict(line.split("\t") for line in path.read_text(encoding="utf-8").splitlines())


@functools.cache
def _shipped_groups() -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """The shipped groups: ({word: its group's spelling}, {group's spelling: the group's words}), read once."""
    groups = read_groups()
    members: dict[str, list[str]] = {}
    for word, first in sorted(groups.items()):
        members.setdefault(first, []).append(word)
    return groups, {first: tuple(words) for first, words in members.items()}


def spelling_key(word: str) -> str:
    """The spelling that stands for `word` and its other spellings (WordNet's): `word` if it has none."""
    return _shipped_groups()[0].get(word, word)


def spellings(word: str) -> tuple[str, ...]:
    """`word` and its other spellings (WordNet's), `word` first."""
    others = _shipped_groups()[1].get(spelling_key(word), ())
    return (word, *(w for w in others if w != word))
