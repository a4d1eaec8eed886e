"""The open vocabulary's candidate list (`Candidates`: every WordNet word and phrase, their definitions, parts
of speech and filters) kept in the user cache as plain arrays, so a process answering its first word query reads
it (a few hundred ms) instead of building it (reading and indexing 147k lemmas and 117k definitions: 5-11 s on
2 busy cores).

The file is an uncompressed `.npz` of numbers and UTF-8 bytes only, read with `allow_pickle=False`: it holds no
objects, so reading it runs no code, whoever wrote it. It is named by a hash of everything the list is built from
(`candidates_key`: the dictionary and word-frequency files' bytes, the head's vocabulary, `FORMAT` and the source
of the modules that build a list), written atomically (a temporary file, then a rename), and checked when read
(its members, their types and lengths, every index in range, the words in order): a damaged, foreign or stale
file is ignored and the list built again and written anew, never an error. Only WordNet's own list is kept
(`WordScorer.candidates`): a user's words never go to this shared folder.
"""
from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from ..atomic import atomic_file
from ..lexicon import dictionary
from . import open_vocab, vocabulary, word_prior
from .open_vocab import Candidates
from .vocabulary import WordVocabulary

FORMAT = 1  # raised whenever what the file holds, or how a list is made of it, changes
SUFFIX = ".candidates.npz"
SEPARATOR = "\0"  # between the texts of one list (a list with a text holding it is not kept)
MAX_BYTES = 1 << 30  # what the members may claim in all: the real file is about 20 MB
_MEMBERS = {"meta": np.uint8, "words": np.uint8, "definitions": np.uint8, "definition_pos": np.uint8,
            "token_ids": np.int64, "lengths": np.int64, "pos_bits": np.uint16, "pair_definition": np.int64,
            "pair_word": np.int64, "zipf": np.float32}


class UnusableCache(ValueError):
    """A cache file that cannot stand for the list asked for: damaged, foreign or of other sources."""


def candidates_key(dictionary_file: Path, vocabulary_words: Iterable[str | None],
                   frequency_file: Path = word_prior.FREQUENCY_FILE) -> str:
    """A name for the candidate list built from `dictionary_file` for a head of `vocabulary_words` (its
    `WordVocabulary.words`), with the word prior of `frequency_file`, by this version of the code."""
    digest = hashlib.sha256(f"defsent-candidates\0{FORMAT}\0".encode())
    for path in (dictionary_file, frequency_file, *_BUILDERS):
        digest.update(hashlib.sha256(Path(path).read_bytes()).digest())
    digest.update("\0".join(w if w is not None else "\1" for w in vocabulary_words).encode())
    return digest.hexdigest()[:24]


def cached_candidates(build: Callable[[], Candidates], key: str, folder: Path, vocab: WordVocabulary) -> Candidates:
    """The candidates of cache `key` in `folder` (made for the head vocabulary `vocab`), else `build()`, written
    there (atomically) for the next process and returned."""
    path = Path(folder) / (key + SUFFIX)
    if path.is_file():
        try:
            return load_candidates(path, key, vocab)
        except UnusableCache:
            pass  # built again below, and replaced
    candidates = build()
    try:
        save_candidates(candidates, path, key)
    except (OSError, UnusableCache):
        pass  # a read-only or full cache, or a list that cannot be kept: built each time, as without a cache
    return candidates


def save_candidates(candidates: Candidates, path: Path, key: str) -> None:
    """Write `candidates` to `path` for cache `key`: a temporary file beside it, then renamed over it (a reader
    never sees half a file; of two writers, the last one's whole file stays). UnusableCache if a text holds
    `SEPARATOR` or the list has more parts of speech than `pos_bits` holds."""
    pos_of = candidates.filters._pos_of
    tags = sorted({tag for word in candidates.words for tag in pos_of.get(word, ())})
    if len(tags) > 16:
        raise UnusableCache(f"{len(tags)} parts of speech: at most 16 are kept")
    bit = {tag: 1 << i for i, tag in enumerate(tags)}
    pos_bits = np.array([sum(bit[tag] for tag in pos_of.get(word, ())) for word in candidates.words], dtype=np.uint16)
    meta = {"format": FORMAT, "key": key, "words": len(candidates.words), "definitions": len(candidates.definitions),
            "pairs": len(candidates.pair_word), "tags": tags}
    arrays = {"meta": _bytes(json.dumps(meta)), "words": _texts(candidates.words),
              "definitions": _texts(candidates.definitions), "definition_pos": _texts(candidates.definition_pos),
              "token_ids": candidates.token_ids, "lengths": candidates.filters.lengths, "pos_bits": pos_bits,
              "pair_definition": candidates.pair_definition, "pair_word": candidates.pair_word, "zipf": candidates.zipf}
    arrays = {name: np.ascontiguousarray(array, dtype=_MEMBERS[name]) for name, array in arrays.items()}
    with atomic_file(path) as partial, open(partial, "wb") as out:
        np.savez(out, **arrays)


def load_candidates(path: Path, key: str, vocab: WordVocabulary) -> Candidates:
    """The candidates `save_candidates` wrote to `path` for cache `key`, checked (module docstring); UnusableCache
    for a file that is damaged, of another key or does not hold a list of this head vocabulary `vocab`."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            infos = stored.zip.infolist()
            if {info.filename for info in infos} != {name + ".npy" for name in _MEMBERS}:
                raise UnusableCache(f"{path} holds other members")
            if sum(info.file_size for info in infos) > MAX_BYTES:
                raise UnusableCache(f"{path} claims too many bytes")
            arrays = {name: stored[name] for name in _MEMBERS}  # each member's CRC is checked as it is read
    except UnusableCache:
        raise
    except (OSError, EOFError, ValueError, KeyError, MemoryError, zipfile.BadZipFile) as err:
        raise UnusableCache(f"{path}: {err}") from err
    for name, dtype in _MEMBERS.items():
        if arrays[name].dtype != dtype or arrays[name].ndim != 1:
            raise UnusableCache(f"{path}: {name} is not a 1-d array of {np.dtype(dtype)}")
    try:
        meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
        words, definitions, definition_pos = (_split(arrays[name]) for name in ("words", "definitions", "definition_pos"))
    except ValueError as err:  # UnicodeDecodeError and JSONDecodeError among them
        raise UnusableCache(f"{path}: {err}") from err
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("key") != key:
        raise UnusableCache(f"{path} was written for another list or format")
    tags = meta.get("tags")
    if not isinstance(tags, list) or len(tags) > 16 or not all(isinstance(tag, str) for tag in tags):
        raise UnusableCache(f"{path}: its parts of speech are unreadable")
    C, G, P = len(words), len(definitions), len(arrays["pair_word"])
    if (meta.get("words"), meta.get("definitions"), meta.get("pairs")) != (C, G, P) or C == 0:
        raise UnusableCache(f"{path}: its lists disagree on their lengths")
    if (len(definition_pos) != G or len(arrays["pair_definition"]) != P
            or any(len(arrays[name]) != C for name in ("token_ids", "lengths", "pos_bits", "zipf"))):
        raise UnusableCache(f"{path}: its arrays disagree on their lengths")
    _check_indices(path, arrays, words, C, G, len(vocab), len(tags))
    return _candidates(words, definitions, definition_pos, arrays, tags)


def _check_indices(path: Path, arrays: dict[str, np.ndarray], words: list[str], C: int, G: int, V: int,
                   tags: int) -> None:
    """UnusableCache unless what `Candidates` relies on holds: the words sorted and distinct, each word's pairs
    together (in word order) and every word with one, definitions numbered by first appearance, every index and
    token id in range."""
    pair_word, pair_definition, token_ids = arrays["pair_word"], arrays["pair_definition"], arrays["token_ids"]
    if not all(a < b for a, b in zip(words, words[1:])):
        raise UnusableCache(f"{path}: its words are not sorted and distinct")
    steps = np.diff(pair_word)
    if pair_word[0] != 0 or pair_word[-1] != C - 1 or steps.min(initial=0) < 0 or steps.max(initial=0) > 1:
        raise UnusableCache(f"{path}: its pairs do not go word by word")
    if pair_definition.min() < 0 or pair_definition.max() != G - 1:
        raise UnusableCache(f"{path}: a pair names no definition")
    _, first = np.unique(pair_definition, return_index=True)  # (G,) where each definition first appears
    if len(first) != G or np.any(np.diff(first) <= 0):
        raise UnusableCache(f"{path}: its definitions are not numbered by first appearance")
    if token_ids.min() < -1 or token_ids.max() >= V or arrays["lengths"].min() < 0:
        raise UnusableCache(f"{path}: a token id or length is out of range")
    if np.any(arrays["pos_bits"] >> tags) or not np.all(np.isfinite(arrays["zipf"])):
        raise UnusableCache(f"{path}: a part of speech or a prior is out of range")


def _candidates(words: list[str], definitions: list[str], definition_pos: list[str], arrays: dict[str, np.ndarray],
                tags: list[str]) -> Candidates:
    """A `Candidates` of read parts, as `Candidates.__init__` would have made it; the parts of speech of its filters
    are read out of `pos_bits` when first asked for."""
    candidates = object.__new__(Candidates)
    candidates.words = words
    candidates.token_ids = arrays["token_ids"]
    pos_bits = arrays["pos_bits"]

    def pos_of() -> dict[str, set[str]]:
        sets = {bits: {tag for i, tag in enumerate(tags) if bits >> i & 1} for bits in np.unique(pos_bits).tolist()}
        return {word: set(sets[bits]) for word, bits in zip(words, pos_bits.tolist())}

    candidates.filters = WordVocabulary.of_words(words, pos_of, lengths=arrays["lengths"])
    candidates.definitions = definitions
    candidates.definition_pos = definition_pos
    candidates.pair_definition, candidates.pair_word = arrays["pair_definition"], arrays["pair_word"]
    candidates.zipf = arrays["zipf"]
    return candidates


def _bytes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def _texts(texts: list[str]) -> np.ndarray:
    """One UTF-8 array of `texts` joined by SEPARATOR; UnusableCache if one holds it."""
    joined = SEPARATOR.join(texts)
    if joined.count(SEPARATOR) != len(texts) - 1:
        raise UnusableCache("a text holds the separator")
    return _bytes(joined)


def _split(array: np.ndarray) -> list[str]:
    return array.tobytes().decode("utf-8").split(SEPARATOR)


# The modules whose code decides what a Candidates object holds (and this one, which reads it)
_BUILDERS = [Path(module.__file__) for module in (open_vocab, vocabulary, word_prior, dictionary)] + [Path(__file__)]
