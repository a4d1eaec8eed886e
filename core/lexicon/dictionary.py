"""(word, definition) dictionaries: the Entry type, the shipped WordNet file and a leak-free split by word
(a user's upload is read by `user_files`).

`python -m core dictionary [FILE]` prints the split report for a dictionary file (default: the shipped WordNet).
"""
from __future__ import annotations

import gzip
import json
import random
import re
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path

from ..atomic import atomic_file
from ..paths import CORE_DATA_DIR
from ..text import match_key

WORDNET_PATH = CORE_DATA_DIR / "wordnet.jsonl.gz"
WORDNET_SYNSETS_PATH = WORDNET_PATH.with_name("wordnet-synsets.jsonl.gz")


@dataclass(frozen=True)
class Entry:
    """One dictionary pair. `word` is lowercase; `pos` is n/v/a/r for WordNet, free text (often "") for user data."""

    word: str
    definition: str
    pos: str = ""
    examples: tuple[str, ...] = ()
    synset: str = ""


def read_vocab(path: str | Path) -> frozenset[str]:
    """The tokens of a BERT `vocab.txt` (one token a line)."""
    return frozenset(Path(path).read_text(encoding="utf-8").splitlines())


def is_predictable(word: str, vocab: Collection[str]) -> bool:
    """True if the word-prediction head can output `word`: it is one whole, alphabetic vocabulary token.

    Being alphabetic rules out '##' word pieces, '[CLS]'-style specials, numbers and punctuation.
    """
    return word.isalpha() and word in vocab


# A dictionary headword: letters (any script) and digits, with spaces, hyphens, apostrophes and
# periods inside ("ice cream", "o'clock", "u.s.", "café"), at least one letter.
_WORD_OR_PHRASE = re.compile(r"(?=.*[^\W\d_])[^\W_](?:[^\W_]|[' .-])*")


def is_word_or_phrase(word: str) -> bool:
    """True if `word` can be a reverse-dictionary answer (see `_WORD_OR_PHRASE`): not a token
    like [CLS] or ##s, a number, a formula or punctuation."""
    return _WORD_OR_PHRASE.fullmatch(word) is not None


def load_wordnet(path: str | Path | None = None) -> list[Entry]:
    """The WordNet entries shipped in core/data (or the gzip JSONL file at `path`); parsed once, then cached."""
    return list(_load_jsonl_gz(Path(path or WORDNET_PATH).resolve()))


@lru_cache(maxsize=4)
def _load_jsonl_gz(path: Path) -> tuple[Entry, ...]:
    return tuple(read_entries(path))


def read_entries(path: Path) -> list[Entry]:
    """The entries of a gzip JSONL file written by `write_entries` (not cached)."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [_entry_from_json(json.loads(line)) for line in lines]


def write_entries(entries: Iterable[Entry], out: Path) -> None:
    """Write gzip JSONL atomically; mtime 0 in the gzip header keeps the bytes reproducible."""
    with atomic_file(out) as tmp, tmp.open("wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as stream:
        for entry in entries:
            stream.write((entry_to_json(entry) + "\n").encode("utf-8"))


def load_wordnet_lemmas(path: str | Path | None = None) -> list[Entry]:
    """One entry per (lemma, synset) of all WordNet 3.0: single words, hyphenated words and
    multi-word expressions ("ice cream"), lowercased; cached after the first call."""
    return list(_load_lemmas(Path(path or WORDNET_SYNSETS_PATH).resolve()))


@lru_cache(maxsize=2)
def _load_lemmas(path: Path) -> tuple[Entry, ...]:
    entries: dict[tuple[str, str], Entry] = {}
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for synset in map(json.loads, lines):
            for lemma in synset["lemmas"]:
                word = lemma.lower()
                entries.setdefault((word, synset["synset"]),
                                   Entry(word, synset["definition"], synset["pos"], (), synset["synset"]))
    return tuple(entries.values())


def _entry_from_json(obj: dict) -> Entry:
    return Entry(**{**obj, "examples": tuple(obj.get("examples", ()))})


def entry_to_json(entry: Entry) -> str:
    """One JSONL line (without newline) for `entry`, in the shipped file's format."""
    return json.dumps(asdict(entry), ensure_ascii=False)


# ---------------------------------------------------------------------------------------------- split


@dataclass
class DictionarySplit:
    """Train/dev/test pairs with disjoint words and no dev/test definition text in train (nor test text in dev)."""

    train: list[Entry]
    dev: list[Entry]
    test: list[Entry]
    seed: int
    dropped_from_train: int
    dropped_from_dev: int
    leak_rate_before: float  # fraction of test pairs whose definition text was in train before the leak rule

    def stats(self) -> dict:
        parts = {"train": self.train, "dev": self.dev, "test": self.test}
        return {
            "seed": self.seed,
            "pairs": {name: len(entries) for name, entries in parts.items()},
            "words": {name: len({entry.word for entry in entries}) for name, entries in parts.items()},
            "dropped_by_leak_rule": {"train": self.dropped_from_train, "dev": self.dropped_from_dev},
            "test_definitions_in_train_before_rule": round(self.leak_rate_before, 4),
        }

    def report(self) -> str:
        stats = self.stats()
        lines = [f"split by word, seed {self.seed}"]
        for name, pairs in stats["pairs"].items():
            lines.append(f"  {name:<5} {pairs:>7} pairs {stats['words'][name]:>7} words")
        lines.append(f"  leak rule dropped {self.dropped_from_train} train and {self.dropped_from_dev} dev pairs")
        lines.append(f"  before the rule {self.leak_rate_before:.1%} of test definitions also appeared in train")
        return "\n".join(lines)


def definition_key(definition: str) -> str:
    """The normalised definition text that leak checks compare (lowercase, whitespace collapsed)."""
    return " ".join(definition.lower().split())


def split_by_word(entries: Iterable[Entry], seed: int = 0,
                  ratios: tuple[float, float, float] = (0.8, 0.1, 0.1)) -> DictionarySplit:
    """Split the WORDS train/dev/test by `ratios` with a fixed seed, then drop leaking pairs.

    The result depends only on the set of entries and the seed, not on their order; each part is sorted.
    WordNet synonyms share one gloss, so train pairs whose definition text occurs in dev or test are dropped,
    and dev pairs whose definition text occurs in test.
    """
    if len(ratios) != 3 or min(ratios) < 0 or abs(sum(ratios) - 1) > 1e-6:
        raise ValueError(f"ratios must be three non-negative numbers summing to 1, got {ratios}")
    ordered = _sorted_entries(entries)
    part_of = _assign_words(sorted({entry.word for entry in ordered}), seed, ratios)
    return _split_by_parts(ordered, part_of, seed)


def extend_split(split: DictionarySplit, entries: Iterable[Entry],
                 ratios: tuple[float, float, float] = (0.8, 0.1, 0.1)) -> DictionarySplit:
    """A split of a larger dictionary `entries` that a model trained on `split.train` can be
    evaluated on without leaks: `split`'s words keep their part; a new word that shares a definition
    text with a `split.train` pair joins train (that text was trained on); the other new words are
    split by `ratios` with `split.seed`. Then the leak rule of `split_by_word`, and dev or test
    pairs whose text `split.train` holds are dropped."""
    ordered = _sorted_entries(entries)
    part_of = {entry.word: part for part, name in enumerate(("train", "dev", "test"))
               for entry in getattr(split, name)}
    trained = _definition_keys(split.train)
    new = sorted({entry.word for entry in ordered} - set(part_of))
    joins_train = {entry.word for entry in ordered
                   if entry.word not in part_of and definition_key(entry.definition) in trained}
    part_of |= {word: 0 for word in joins_train}
    part_of |= _assign_words([word for word in new if word not in joins_train], split.seed, ratios)
    extended = _split_by_parts(ordered, part_of, split.seed)
    # A kept word can bring a text trained under another lemma ("Hell" -> hell): not evaluated.
    return replace(extended, dev=_without_definitions(extended.dev, trained),
                   test=_without_definitions(extended.test, trained))


def lemma_split(seed: int = 0) -> DictionarySplit:
    """All WordNet lemmas split as a model trained on the shipped WordNet's `split_by_word(seed)` is
    evaluated without leaks (`extend_split`): what the open vocabulary's evaluation and probes use."""
    return extend_split(split_by_word(load_wordnet(), seed=seed), load_wordnet_lemmas())


def _sorted_entries(entries: Iterable[Entry]) -> list[Entry]:
    return sorted(entries, key=lambda e: (e.word, e.definition, e.pos, e.synset, e.examples))


def _split_by_parts(ordered: list[Entry], part_of: dict[str, int], seed: int) -> DictionarySplit:
    """Entries by their word's part (0 train, 1 dev, 2 test), then the leak rule: train pairs whose
    definition text occurs in dev or test are dropped, and dev pairs whose text occurs in test."""
    train, dev, test = ([entry for entry in ordered if part_of[entry.word] == part] for part in range(3))
    train_texts, dev_texts, test_texts = (_definition_keys(part) for part in (train, dev, test))
    leaked = sum(definition_key(entry.definition) in train_texts for entry in test)
    kept_train = _without_definitions(train, dev_texts | test_texts)
    kept_dev = _without_definitions(dev, test_texts)
    return DictionarySplit(kept_train, kept_dev, test, seed, len(train) - len(kept_train),
                           len(dev) - len(kept_dev), leaked / len(test) if test else 0.0)


def add_training_entries(split: DictionarySplit, extra: Iterable[Entry]) -> tuple[DictionarySplit, dict[str, int]]:
    """A copy of `split` whose training part also holds the pairs of another dictionary, and what became of them.

    Dev and test stay as they are: an extra pair is dropped when its word is a dev or test word, or when its
    definition, compared without case and punctuation, is a dev or test text (or already a training pair).
    """
    held_out_words = {entry.word for entry in split.dev + split.test}
    held_out_texts = {match_key(entry.definition) for entry in split.dev + split.test}
    seen = {(entry.word, match_key(entry.definition)) for entry in split.train}
    added, counts = [], Counter()
    for entry in extra:
        key = (entry.word, match_key(entry.definition))
        fate = ("dropped: dev/test word" if entry.word in held_out_words
                else "dropped: dev/test definition" if key[1] in held_out_texts
                else "dropped: already in train" if key in seen else "added")
        counts[fate] += 1
        if fate == "added":
            seen.add(key)
            added.append(entry)
    return replace(split, train=split.train + added), dict(counts)


def _assign_words(words: list[str], seed: int, ratios: tuple[float, float, float]) -> dict[str, int]:
    """Part index (0 train, 1 dev, 2 test) of each word; `words` must come sorted so that only the seed matters."""
    shuffled = list(words)
    random.Random(seed).shuffle(shuffled)
    n_train, n_dev = round(ratios[0] * len(shuffled)), round(ratios[1] * len(shuffled))
    return {word: 0 if i < n_train else 1 if i < n_train + n_dev else 2 for i, word in enumerate(shuffled)}


def _definition_keys(entries: Iterable[Entry]) -> set[str]:
    return {definition_key(entry.definition) for entry in entries}


def _without_definitions(entries: list[Entry], texts: set[str]) -> list[Entry]:
    return [entry for entry in entries if definition_key(entry.definition) not in texts]


def largest_shared_definition_group(entries: Iterable[Entry]) -> int:
    """How many words the largest group holds when words sharing a definition text are joined (transitively)."""
    parent: dict[str, str] = {}

    def root(word: str) -> str:
        while parent.setdefault(word, word) != word:
            parent[word] = parent[parent[word]]  # path halving keeps the trees flat
            word = parent[word]
        return word

    first_word_of: dict[str, str] = {}
    for entry in entries:
        other = first_word_of.setdefault(definition_key(entry.definition), entry.word)
        parent[root(entry.word)] = root(other)
    return max(Counter(root(word) for word in list(parent)).values(), default=0)
