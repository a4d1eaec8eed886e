"""Which vocabulary tokens the word head may answer with, and the filters over them.

Only whole words are candidates: never special tokens ([CLS], [PAD], [unused0], <s>), `##`
continuation pieces, punctuation or numbers. Filters are boolean masks over the vocabulary, applied
before top-k, so a filter never shortens the list that comes back.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

_WORD = re.compile(r"^[a-z][a-z'-]*[a-z]$|^[a-z]$")
ROBERTA_SPACE = "\u0120"  # byte-level BPE marks a word start with "Ġ"
PART_OF_SPEECH = {"n": "noun", "v": "verb", "a": "adjective", "r": "adverb"}  # WordNet's tags
POS_TAGS = tuple(PART_OF_SPEECH)
MASKS_KEPT = 256  # filters' masks a vocabulary keeps (`WordVocabulary.mask`)


def surface_form(token: str, word_start_marker: str | None) -> str | None:
    """The word a vocabulary token spells, or None if it is not a whole-word token."""
    if word_start_marker:  # byte-level BPE (RoBERTa): only tokens that start a word count
        if not token.startswith(word_start_marker):
            return None
        token = token[len(word_start_marker):]
    word = token.lower()
    return word if _WORD.match(word) else None


def letters(word: str) -> int:
    """The length filter's length: letters only, so "ice cream" has 8 (as in a crossword)."""
    return sum(ch.isalpha() for ch in word)


@dataclass(frozen=True)
class WordFilter:
    """Constraints on predicted words. Empty fields mean "no constraint"."""
    pos: str = ""           # one of n, v, a, r (WordNet parts of speech), checked in the dictionary
    min_length: int = 0
    max_length: int = 0
    initial: str = ""       # first letter(s)
    pattern: str = ""       # wildcard: ? one letter, * any run of letters

    def is_empty(self) -> bool:
        return self == WordFilter()


class Wildcard:
    """A `?`/`*` pattern over whole words: `?` is one character, `*` any run (also empty); other
    characters match literally. `match` never backtracks across stars, so its time is linear in the
    word's length whatever the stars (the regex `^.*.*...q$` backtracks for minutes).

    Why no backtracking is needed: the star-free pieces between the stars have fixed lengths, and
    if any placement of them matches, so does placing each at its leftmost fit after the last.
    """

    MAX_LENGTH = 64

    def __init__(self, pattern: str):
        pattern = pattern.strip().lower()
        if not pattern or len(pattern) > self.MAX_LENGTH:
            raise ValueError(f"a wildcard pattern needs 1 to {self.MAX_LENGTH} characters, e.g. 'l?ad*'")
        self.pattern = pattern
        self._pieces = pattern.split("*")  # [head, *middle, tail]; one piece when there is no star
        self._regexes = [re.compile("".join("." if ch == "?" else re.escape(ch) for ch in piece), re.DOTALL)
                         for piece in self._pieces]
        self._letters = sum(map(len, self._pieces))  # the shortest word that can match

    def match(self, word: str) -> bool:
        """True if the whole of `word` matches the pattern."""
        if len(self._pieces) == 1:
            return len(word) == self._letters and self._regexes[0].match(word) is not None
        if len(word) < self._letters:
            return False
        head, *middle, tail = self._regexes
        tail_start = len(word) - len(self._pieces[-1])
        if head.match(word) is None or tail.match(word, tail_start) is None:
            return False
        position = len(self._pieces[0])
        for piece in middle:  # leftmost fit of each, between the head and the tail
            found = piece.search(word, position, tail_start)
            if found is None:
                return False
            position = found.end()
        return True


class WordVocabulary:
    """Vocabulary tokens as words, with masks for candidates and filters (arrays of length V)."""

    def __init__(self, tokens: list[str], word_start_marker: str | None = None,
                 pos_of: Mapping[str, Iterable[str]] | None = None):
        self._set_words([surface_form(t, word_start_marker) for t in tokens], pos_of)

    @classmethod
    def of_words(cls, words: Sequence[str],
                 pos_of: Mapping[str, Iterable[str]] | Callable[[], Mapping[str, Iterable[str]]] | None = None,
                 lengths: np.ndarray | None = None) -> "WordVocabulary":
        """Filters over a list of words and phrases as they are ("ice cream"), each a candidate; `pos_of` a
        mapping or a function giving one when first asked for; `lengths` their `letters`, when known."""
        vocab = cls.__new__(cls)
        vocab._set_words(list(words), pos_of, lengths)
        return vocab

    def _set_words(self, words: list[str | None],
                   pos_of: Mapping[str, Iterable[str]] | Callable[[], Mapping[str, Iterable[str]]] | None,
                   lengths: np.ndarray | None = None) -> None:
        self.words = words  # None where a token is not a word
        self.candidate_mask = np.array([w is not None for w in words], dtype=bool)
        self.lengths = np.array([letters(w) if w else 0 for w in words]) if lengths is None else lengths
        self.id_of = {w: i for i, w in enumerate(words) if w is not None}
        # the masks of the filters asked for, kept with this vocabulary (a cache on the class kept every
        # vocabulary it had seen alive, a dropped model's too)
        self._masks: dict[WordFilter, np.ndarray] = {}
        self._pos_source = pos_of if callable(pos_of) else None
        if not callable(pos_of):
            self.__dict__["_pos_of"] = _as_sets(pos_of)

    @functools.cached_property
    def _pos_of(self) -> dict[str, set[str]]:
        """word -> its parts of speech; from a function given instead of a mapping, called on first use (the
        head's words: reading WordNet for them took 1 s of every process start that never filters)."""
        return _as_sets(self._pos_source())

    def main_pos(self, word: str) -> str:
        """The word's first part of speech in WordNet's order (noun, verb, adjective, adverb) as a name;
        "" when it has none."""
        tags = self._pos_of.get(word, ())
        return next((PART_OF_SPEECH[tag] for tag in POS_TAGS if tag in tags), "")

    @classmethod
    def from_tokenizer(cls, tokenizer, size: int,
                       pos_of: Mapping[str, Iterable[str]] | Callable[[], Mapping[str, Iterable[str]]] | None = None
                       ) -> "WordVocabulary":
        """Vocabulary of `size` rows (the model's embedding rows; ids past the tokenizer are blank); `pos_of`
        a mapping, or a function giving one when a part of speech is first asked for."""
        vocab = tokenizer.get_vocab()
        tokens = [""] * size
        for token, i in vocab.items():
            if i < len(tokens):
                tokens[i] = token
        marker = ROBERTA_SPACE if any(t.startswith(ROBERTA_SPACE) for t in tokens[:2000]) else None
        return cls(tokens, marker, pos_of)

    def __len__(self) -> int:
        return len(self.words)

    def token_id(self, word: str) -> int | None:
        """The id of the single vocabulary token spelling `word`, or None."""
        return self.id_of.get(word.strip().lower())

    def mask(self, word_filter: WordFilter = WordFilter()) -> np.ndarray:
        """Boolean mask (V,): True where a token is a whole word that passes the filter."""
        mask = self._masks.get(word_filter)
        if mask is None:
            if len(self._masks) >= MASKS_KEPT:  # a user's many patterns stay bounded (clear: atomic, threads)
                self._masks.clear()
            mask = self._masks[word_filter] = self._computed_mask(word_filter)
        return mask.copy()

    def _computed_mask(self, f: WordFilter) -> np.ndarray:
        if f.pos and f.pos.strip().lower()[:1] not in POS_TAGS:
            raise ValueError(f"unknown part of speech {f.pos!r}: use n, v, a or r")
        if f.pos and not self._pos_of:
            raise ValueError("the part-of-speech filter needs the WordNet dictionary (core/data)")
        mask = self.candidate_mask.copy()
        if f.min_length:
            mask &= self.lengths >= f.min_length
        if f.max_length:
            mask &= self.lengths <= f.max_length
        if f.initial or f.pattern or f.pos:
            test = _word_test(f, self._pos_of)
            mask &= np.array([m and test(w) for m, w in zip(mask, self.words)])
        return mask


def _as_sets(pos_of: Mapping[str, Iterable[str]] | None) -> dict[str, set[str]]:
    return {w: set(p) for w, p in (pos_of or {}).items()}


def _word_test(f: WordFilter, pos_of: Mapping[str, set[str]]):
    initial = f.initial.strip().lower()
    wildcard = Wildcard(f.pattern) if f.pattern else None
    pos = f.pos.strip().lower()[:1]

    def test(word: str) -> bool:
        return ((not initial or word.startswith(initial))
                and (wildcard is None or wildcard.match(word))
                and (not pos or pos in pos_of.get(word, ())))
    return test
