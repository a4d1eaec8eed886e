"""The dictionaries: definitions as data (`dictionary`: the Entry type, WordNet's shipped lemmas, splits),
a user's upload (`user_files`), the form a description asks for (`forms`: "candles", "biggest"), WordNet 3.0 read from Debian's `wordnet-base` (`wordnet`) and GCIDE from `dict-gcide`
(`gcide`)."""
from .dictionary import (
    DictionarySplit,
    Entry,
    load_wordnet,
    load_wordnet_lemmas,
    split_by_word,
)
from .forms import written_forms
from .user_files import read_user_dictionary

__all__ = [
    "DictionarySplit",
    "Entry",
    "load_wordnet",
    "load_wordnet_lemmas",
    "read_user_dictionary",
    "split_by_word",
    "written_forms",
]
