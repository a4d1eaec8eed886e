"""The open vocabulary's candidate list (`Candidates`: every WordNet word and phrase, their definitions,
parts of speech and filters) kept in the user cache: building it reads and indexes 147k lemmas and 117k
definitions, 7-11 s on 2 busy cores, every time a process first answers a word query; reading it back is
a pickle of about 20 MB, 0.3 s. The cache file is named by everything the list is built from: the
dictionary file (path, size, time), extra entries, the head's vocabulary and the source of the modules that
build it, so a change to any of them builds it anew. Only WordNet's own list is kept (`WordScorer.candidates`):
a user's words never go to this shared folder.
"""
from __future__ import annotations

import gc
import hashlib
import os
import pickle
from pathlib import Path
from typing import Callable, Iterable

from ..lexicon import dictionary
from ..lexicon.dictionary import Entry
from . import open_vocab, vocabulary, word_prior
from .open_vocab import Candidates

SUFFIX = ".candidates.pickle"


def candidates_key(dictionary_file: Path, extra: Iterable[Entry], vocabulary_words: Iterable[str | None]) -> str:
    """A name for the candidates built from `dictionary_file`, the `extra` entries and a head vocabulary."""
    digest = hashlib.sha256()
    stat = Path(dictionary_file).stat()
    digest.update(f"{Path(dictionary_file).resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    for entry in extra:
        digest.update(repr(entry).encode())
    digest.update("\0".join(w or "" for w in vocabulary_words).encode())
    for module in _BUILDERS:
        digest.update(Path(module).read_bytes())
    return digest.hexdigest()[:24]


def cached_candidates(build: Callable[[], Candidates], key: str, folder: Path) -> Candidates:
    """The candidates of cache `key` in `folder`, else `build()` saved there (atomically) and returned."""
    path = Path(folder) / (key + SUFFIX)
    if path.is_file():
        try:
            return _read(path)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            pass  # a damaged or foreign file: built again below, and replaced
    candidates = build()
    candidates.fingerprint()  # computed once, kept in the file
    partial = path.with_name(f"{path.name}.partial-{os.getpid()}")
    with open(partial, "wb") as out:
        pickle.dump(candidates, out, protocol=pickle.HIGHEST_PROTOCOL)
    partial.replace(path)
    return candidates


def _read(path: Path) -> Candidates:
    gc.disable()  # hundreds of thousands of new objects: the collector's passes would take 0.8 s of the 1 s
    try:
        with open(path, "rb") as stream:
            candidates = pickle.load(stream)
    finally:
        gc.enable()
    if not isinstance(candidates, Candidates):
        raise pickle.UnpicklingError(f"{path} holds no candidate list")
    return candidates


# The modules whose code decides what a Candidates object holds
_BUILDERS = [module.__file__ for module in (open_vocab, vocabulary, word_prior, dictionary)]
