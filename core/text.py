"""Text conventions shared by the corpus, the vocabulary and the diagnostics.

Corpus sentences are stored normalised (see `normalize`); decoded pieces are joined back into text
with the same spacing rules (`detokenize`); duplicates and benchmark overlaps are found by words
alone (`match_key`); a word's inflections by its crude singular (`singular`) and a query's own
words by `query_words`. Why something failed is told in one bounded line (`short_reason`).
"""
from __future__ import annotations

import re
import unicodedata
from typing import Iterable

_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "`": "'"})
# Tokens written without a space before them (closing punctuation, clitics) or after them.
_NO_SPACE_BEFORE = {".", ",", ";", ":", "?", "!", ")", "]", "}", "%", "n't",
                    "'", "'s", "'t", "'re", "'ve", "'ll", "'d", "'m"}
_NO_SPACE_AFTER = {"(", "[", "{", "$"}
_QUERY_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
REASON_CHARS = 300  # of a failure's reason as a user reads it (a notice, a job's status)


def normalize(text: str) -> str:
    """NFKC, straight quotes, lower case, single spaces: the form every corpus sentence takes.

    Double quotes are dropped from a sentence that has an odd number of them: they belong to a
    quotation that spans several sentences, and a decoder cannot know where it started.
    """
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).lower()
    if text.count('"') % 2:
        text = text.replace('"', " ")
    text = " ".join(text.split())
    return re.sub(r" (?=[.,;:?!])", "", text)  # a dropped closing quote leaves "word ."


def match_key(text: str) -> str:
    """The words of `text`, without punctuation: two sentences with the same key are duplicates.

    Punctuation and spacing are ignored so that a Brown sentence detokenised by us still matches the
    same sentence as typed in STS-B or SICK.
    """
    return " ".join(re.findall(r"\w+", normalize(text)))


def canonical_tokens(text: str) -> list[str]:
    """Words and single punctuation marks of the normalised text: the unit the diagnostics compare
    and the refinement edits."""
    return re.findall(r"\w+|[^\w\s]", normalize(text))


def detokenize(tokens: Iterable[str]) -> str:
    """Join word tokens with English spacing: `( `` a '' , b )` -> `("a", b)`.

    Brown's `` and '' are opening and closing double quotes; straight double quotes alternate:
    odd ones open (glued to the next token), even ones close (glued to the previous one).
    """
    text, glue_next, quotes = "", True, 0
    for token in tokens:
        if token in ('"', "``", "''"):
            quotes += 1
            opening = token == "``" or (token == '"' and quotes % 2 == 1)
            text += '"' if (glue_next or not opening) else ' "'
            glue_next = opening
            continue
        text += token if (glue_next or token in _NO_SPACE_BEFORE) else " " + token
        glue_next = token in _NO_SPACE_AFTER
    return text


def singular(word: str) -> str:
    """A crude English singular (plural endings stripped): what counts as one word's inflections."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def query_words(text: str) -> list[str]:
    """The lowercase words of a query, with simple inflections, for "exclude my query's words"."""
    words = _QUERY_WORD.findall(text.lower())
    return words + [w[:-1] for w in words if w.endswith("s") and len(w) > 3]


def short_reason(err: BaseException, told: tuple[type[BaseException], ...] = (ValueError,)) -> str:
    """Why `err` happened, for the user, in one line of at most REASON_CHARS characters (then "..."): the message
    of an error of a `told` kind as it is (written for the user: a ValueError, the app's JobFailed), an OSError's
    reason and file, else the error's type and message; whitespace runs (newlines, a traceback) made single spaces."""
    if isinstance(err, told) and str(err):
        text = str(err)
    elif isinstance(err, OSError) and err.strerror:
        text = err.strerror + (f": {err.filename}" if err.filename else "")
    else:
        text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    text = " ".join(text.split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."
