"""The `?`/`*` word filter: the same answers as a glob, in time linear in the word's length
(a regex translation backtracked for minutes on `***...*q` and froze the server, issue 27)."""
from __future__ import annotations

import fnmatch
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.words.vocabulary import Wildcard, WordFilter, WordVocabulary

REPO = Path(__file__).resolve().parents[1]
letters = st.text(alphabet="ab-'", max_size=12)
patterns = st.text(alphabet="ab-'?*", min_size=1, max_size=10)


@settings(max_examples=2000, deadline=None)
@given(patterns, letters)
def test_wildcard_matches_exactly_what_a_glob_matches(pattern, word):
    assert Wildcard(pattern).match(word) == fnmatch.fnmatchcase(word, pattern)


@pytest.mark.parametrize("pattern, word, expected", [
    ("l?ad*", "leader", True), ("l?ad*", "lad", False), ("*er", "leader", True),
    ("*", "", True), ("a*b*c", "abc", True), ("a*b*c", "acb", False), ("?", "ab", False),
    ("*ab*ab*", "abab", True), ("*ab*ab*", "aab", False), ("ice cream", "ice cream", True),
])
def test_wildcard_examples(pattern, word, expected):
    assert Wildcard(pattern).match(word) is expected


def test_pattern_length_is_bounded():
    with pytest.raises(ValueError, match="1 to 64"):
        Wildcard("*" * 65)
    with pytest.raises(ValueError, match="1 to 64"):
        Wildcard("   ")


def test_hostile_pattern_does_not_backtrack():
    """63 stars then a letter that never comes, over long words: the regex translation did not
    finish in minutes. Run apart so that a regression fails after 60 s instead of hanging."""
    code = ("from core.words.vocabulary import WordVocabulary, WordFilter\n"
            "vocab = WordVocabulary(['a' * n for n in range(20, 60)] + ['leader'])\n"
            "print(int(vocab.mask(WordFilter(pattern='*' * 63 + 'q')).sum()),"
            " int(vocab.mask(WordFilter(pattern='*' * 62 + 'er')).sum()))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["0", "1"], done.stderr


def test_vocabulary_filter_uses_the_wildcard():
    vocab = WordVocabulary(["leader", "lead", "loader", "ladder", "[CLS]"])
    mask = vocab.mask(WordFilter(pattern="l?ad*"))
    assert [w for w, m in zip(vocab.words, mask) if m] == ["leader", "lead", "loader"]
