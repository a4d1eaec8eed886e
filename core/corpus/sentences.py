"""What a sentence of the modern corpus is: cased normalisation, the key duplicates are found by,
splitting prose into sentences, and the test a sentence must pass to count as prose.

The word-count bounds and the filters applied per source live with the builder (core/corpus/modern.py).
"""
from __future__ import annotations

import re
import unicodedata

from core.text import detokenize, match_key

_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "`": "'",
                         "\u00b4": "'", "\u2032": "'"})


def normalize_cased(text: str) -> str:
    """NFKC, straight quotes, single spaces: `core.text.normalize` without lower-casing.

    Case, digits and names survive ("Obama", "2013", "U.S."). As there, double quotes are dropped
    from a sentence with an odd number of them (a quotation spanning several sentences).
    """
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    if text.count('"') % 2:
        text = text.replace('"', " ")
    text = " ".join(text.split())
    return re.sub(r" (?=[.,;:?!](?:\s|$))", "", text)


def dedup_key(text: str) -> str:
    """The case-insensitive key duplicates and benchmark overlaps are found by (words only)."""
    return match_key(text)


def word_count(sentence: str) -> int:
    return len(sentence.split())


_PTB = {"-lrb-": "(", "-rrb-": ")", "-lsb-": "[", "-rsb-": "]", "-lcb-": "{", "-rcb-": "}"}


def untokenize_lowercased(sentence: str) -> str:
    """A tokenised, lower-cased benchmark sentence ("it 's a film , i think .") made readable:
    detokenised, first letter and the pronoun "I" upper-cased ("It's a film, I think.")."""
    words = [_PTB.get(w, w).replace("\\/", "/").replace("\\*", "*") for w in sentence.split()]
    words = ["I" if w == "i" else "I'm" if w == "i'm" else w for w in words]
    text = detokenize(words)
    text = re.sub(r" (?=[.,;:?!])", "", text)
    return text[:1].upper() + text[1:]


_ABBREVIATION_END = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|Fig|No|Vol|approx|resp|Inc|Ltd|Co|Mr|Mrs|Dr|St|Jr|Sr)\.$",
                               re.I)
_SENTENCE_END = re.compile(r"""[.!?]["')\]]*\s+(?=["'(\[]*[A-Z0-9])""")


def split_sentences(paragraph: str) -> list[str]:
    """Split prose at . ! ? followed by a capital or digit, not after "e.g.", "Mr." and the like."""
    sentences, start = [], 0
    for end in _SENTENCE_END.finditer(paragraph):
        if _ABBREVIATION_END.search(paragraph[start:end.start() + 1]):
            continue
        sentences.append(paragraph[start:end.end()].strip())
        start = end.end()
    sentences.append(paragraph[start:].strip())
    return [s for s in sentences if s]


# Technical prose is full of code; a sentence is kept only if it reads as prose.
_NOT_PROSE = re.compile(r"[{}\[\]<>|\\=_#@*~^$%]|::|->|\(\)|https?:|www\.|\.\w{1,4}/|(?:^|\s)/\w|\w/\w+/|\.\.\.|\s-\w"
                        r"|\b\w+\.\w+\(|;\s*$")
_START = re.compile(r"""^["'(]?[A-Z0-9]""")
_END = re.compile(r"""[.!?]["')]?$""")


def is_whole_sentence(sentence: str) -> bool:
    """It starts with a capital or digit (after an opening quote or bracket) and ends with . ! or ?."""
    return bool(_START.match(sentence) and _END.search(sentence))


def is_prose(sentence: str) -> bool:
    """A sentence of words: it starts with a capital or digit, ends with . ! or ?, has no code
    characters, paths or links, no word over 25 characters, is not shouted, and 80 % of its
    tokens are plain words."""
    if not is_whole_sentence(sentence) or _NOT_PROSE.search(sentence):
        return False
    if _ABBREVIATION_END.search(sentence):
        return False
    tokens = sentence.split()
    if any(len(t) > 25 for t in tokens) or re.search(r"\b[A-Z]{3,}[a-z]{2,}", sentence):  # "XREFdir"
        return False
    letters = [c for c in sentence if c.isalpha()]
    if not letters or sum(c.isupper() for c in letters) > 0.3 * len(letters):
        return False
    wordlike = sum(bool(re.fullmatch(r"""["'(]*[A-Za-z][a-z'-]*[.,;:!?"')]*""", t)) for t in tokens)
    return wordlike >= 0.8 * len(tokens)
