"""(word, definition) dictionaries: the shipped WordNet file, user uploads, and a leak-free split by word.

`python -m core dictionary [FILE]` prints the split report for a dictionary file (default: the shipped WordNet).
"""
from __future__ import annotations

import codecs
import csv
import gzip
import io
import json
import os
import random
import re
import stat
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

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
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as stream:
        for entry in entries:
            stream.write((entry_to_json(entry) + "\n").encode("utf-8"))
    os.replace(tmp, out)


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


# ---------------------------------------------------------------------------------------------- user files

REQUIRED_COLUMNS = ("word", "definition")
KNOWN_COLUMNS = (*REQUIRED_COLUMNS, "pos")
_FORMATS_BY_SUFFIX = {".tsv": "tsv", ".tab": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
# Spreadsheets evaluate a cell that starts with one of these; echoed user text gets a "'" in front.
# (Tab and CR, the other risky starts, never reach the output: _display turns them into spaces.)
_FORMULA_STARTS = ("=", "+", "-", "@")
_SUMMARY_ROWS = 20
# Bounds on what one file can make the reader build or echo. The csv reader turns every delimiter of a
# line into a field before any check runs: a 19 MB header of 6.4 million columns took 1.45 GB and
# gave a 51 MB report. A row needs at most `max_columns` fields plus the delimiters quoted inside
# its text (a definition has at most 1,000 characters), so a line with more delimiters than this is
# refused before it is parsed; a JSONL line longer than this many characters is rejected unparsed.
_MAX_LINE_DELIMITERS = 10_000
_MAX_JSONL_LINE_CHARS = 100_000
_LISTED_COLUMNS = 10  # header names echoed when a required column is missing
MAX_REPORT_CHARS = 10_000  # a summary is cut here, whatever the file held
# Lone surrogates: how _read_text marks bytes that are not UTF-8 (JSON "\ud800" escapes give them too).
_UNDECODABLE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class RejectedRow:
    """A row left out: `row` is its line number (the header is line 1), `value` the user text it concerns."""

    row: int
    reason: str
    value: str = ""


@dataclass
class ValidationReport:
    """What `read_user_dictionary` made of one file.

    `error` is set when the file as a whole is refused (then `ok` is False, no entries are returned and no
    rows are counted) or when no row is usable. `set_aside` holds valid rows whose word the head cannot predict
    (not a single vocabulary token). Always rows_read == rows_accepted + len(rejected) + len(set_aside).
    """

    file: str
    format: str = ""
    error: str = ""
    rows_read: int = 0
    rows_accepted: int = 0
    rejected: list[RejectedRow] = field(default_factory=list)
    set_aside: list[Entry] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error and self.rows_accepted > 0

    def unpredictable_words(self) -> dict[str, int]:
        """Set-aside words with how many rows each had, most frequent first."""
        return dict(Counter(entry.word for entry in self.set_aside).most_common())

    def to_dict(self) -> dict:
        """Plain JSON-ready data (user text as is, not neutralised)."""
        return {
            "file": self.file, "format": self.format, "ok": self.ok, "error": self.error,
            "rows_read": self.rows_read, "rows_accepted": self.rows_accepted,
            "rows_rejected": len(self.rejected), "rows_set_aside": len(self.set_aside),
            "rejected": [asdict(row) for row in self.rejected],
            "unpredictable_words": self.unpredictable_words(),
        }

    def summary(self) -> str:
        """A human-readable account; user text is shortened and cannot start like a spreadsheet formula.
        At most MAX_REPORT_CHARS characters."""
        lines = [
            f"{_display(self.file)} ({self.format or 'unknown format'}): {self.rows_read} rows read, "
            f"{self.rows_accepted} accepted, {len(self.rejected)} rejected, {len(self.set_aside)} set aside."
        ]
        if self.error:
            lines.append(f"Not usable: {self.error}")
        if self.rejected:
            lines.append("Rejected rows:")
            lines += [f"  row {r.row}: {r.reason}" + (f" ({_display(r.value)})" if r.value else "")
                      for r in self.rejected[:_SUMMARY_ROWS]]
            if len(self.rejected) > _SUMMARY_ROWS:
                lines.append(f"  ... and {len(self.rejected) - _SUMMARY_ROWS} more")
        if self.set_aside:
            words = self.unpredictable_words()
            listed = _first([f"{_display(word)} x{count}" for word, count in words.items()], _SUMMARY_ROWS)
            lines.append(f"Set aside, {len(words)} words the head cannot predict "
                         f"(not a single vocabulary token): {listed}")
        return _cut("\n".join(lines), MAX_REPORT_CHARS)


def _display(value: str, limit: int = 40) -> str:
    """User text made safe to echo: one printable line, shortened, never starting like a spreadsheet formula."""
    text = "".join(ch if ch.isprintable() else " " for ch in value)
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return '"' + ("'" if text.startswith(_FORMULA_STARTS) else "") + text + '"'


def _first(items: list[str], limit: int) -> str:
    """The first `limit` items, comma-separated, and how many more there are."""
    more = f", ... and {len(items) - limit:,} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def _cut(text: str, limit: int) -> str:
    """`text`, cut to at most `limit` characters with a note saying so."""
    note = f"\n... (cut at {limit:,} characters)"
    return text if len(text) <= limit else text[: limit - len(note)] + note


def _without_undecodable(text: str) -> str:
    """`text` with its lone surrogates shown as U+FFFD, so that it can be encoded."""
    return _UNDECODABLE.sub("\ufffd", text)


class _Limits(NamedTuple):
    max_bytes: int
    max_rows: int
    max_definition_chars: int
    max_word_chars: int
    max_columns: int


class _RawRow(NamedTuple):
    line: int
    fields: dict[str, object]
    problem: str = ""  # set when the row could not be split into fields


class _FileRejected(Exception):
    """The file as a whole cannot be used; the message says why."""


def read_user_dictionary(
    path: str | Path,
    vocab: Callable[[str], bool] | Collection[str] | None = None,
    *,
    max_bytes: int = 20_000_000,
    max_rows: int = 200_000,
    max_definition_chars: int = 1000,
    max_word_chars: int = 50,
    max_columns: int = 100,
) -> tuple[list[Entry], ValidationReport]:
    """Read a user dictionary (TSV, CSV or JSONL with columns word, definition and optional pos).

    The format comes from the extension (.tsv/.tab, .csv, .jsonl/.ndjson), else it is sniffed from the first line.
    TSV/CSV need a header row; column names are case-insensitive, other columns are ignored. The text must be UTF-8
    (a BOM is fine); a row with undecodable bytes is rejected. Words are normalised (stripped, lowercased),
    definitions get their whitespace collapsed, duplicate (word, definition) pairs are rejected.
    With `vocab` (a predicate, or a vocabulary checked with `is_predictable`), rows whose word the head cannot
    predict are not returned but kept in `report.set_aside`. The size limits are checked before reading the file;
    a header of more than `max_columns` columns refuses the file, a JSONL row with more keys is rejected.
    Raises FileNotFoundError for a missing file; every problem with the content goes into the report instead.
    """
    path = Path(path)
    file_stat = path.stat()
    report = ValidationReport(file=_without_undecodable(path.name))
    limits = _Limits(max_bytes, max_rows, max_definition_chars, max_word_chars, max_columns)
    predictable = vocab if callable(vocab) or vocab is None else (lambda word: is_predictable(word, vocab))
    try:
        text = _read_text(path, file_stat, limits)
        report.format = _detect_format(path, text)
        entries = _collect_entries(_ROW_READERS[report.format](text, limits), limits, predictable, report)
    except _FileRejected as refusal:  # a refused file counts no rows: only the reason is reported
        report.error, report.rows_read = str(refusal), 0
        report.rejected.clear()
        report.set_aside.clear()
        return [], report
    if not entries:
        report.error = _why_nothing_usable(report)
    return entries, report


def _read_text(path: Path, file_stat: os.stat_result, limits: _Limits) -> str:
    if not stat.S_ISREG(file_stat.st_mode):
        raise _FileRejected("not a regular file")
    if file_stat.st_size > limits.max_bytes:
        raise _FileRejected(f"the file has {file_stat.st_size:,} bytes, over the limit of {limits.max_bytes:,} bytes")
    with path.open("rb") as stream:
        data = stream.read(limits.max_bytes + 1)  # the file may have grown since stat()
    if len(data) > limits.max_bytes:
        raise _FileRejected(f"the file has more than the limit of {limits.max_bytes:,} bytes")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise _FileRejected("the file is UTF-16 text; save it as UTF-8")
    if b"\x00" in data:
        raise _FileRejected("binary file (it contains NUL bytes), not UTF-8 text")
    # Undecodable bytes become lone surrogates here, so only the rows holding them get rejected.
    text = data.decode("utf-8-sig", errors="surrogateescape")
    if not text.strip():
        raise _FileRejected("the file is empty")
    return text


def _detect_format(path: Path, text: str) -> str:
    known = _FORMATS_BY_SUFFIX.get(path.suffix.lower())
    if known:
        return known
    first_line = next(line for line in text.split("\n") if line.strip()).strip()
    if first_line.startswith("{"):
        return "jsonl"
    if "\t" in first_line:
        return "tsv"
    if "," in first_line:
        return "csv"
    raise _FileRejected("cannot tell the format: name the file .tsv, .csv or .jsonl, "
                        "with a header row naming the columns word and definition")


def _delimited_rows(text: str, limits: _Limits, delimiter: str, quoting: int) -> Iterator[_RawRow]:
    # strict: a quote left open would otherwise swallow the rest of the file into one field
    reader = csv.reader(_bounded_lines(text, delimiter), delimiter=delimiter, quoting=quoting, strict=True)
    next_line = 1
    try:
        header = next((row for row in reader if any(cell.strip() for cell in row)), None)
        if header is None:
            raise _FileRejected("no header row")
        columns = _header_columns(header, limits.max_columns)
        next_line = reader.line_num + 1
        for record in reader:
            line, next_line = next_line, reader.line_num + 1
            if not any(cell.strip() for cell in record):
                continue
            # A short row only lacks columns (checked per field later); a long one would lose text.
            problem = "" if len(record) <= len(columns) else (
                f"{len(record)} fields but the header has {len(columns)} (quote fields that contain the delimiter)")
            yield _RawRow(line, dict(zip(columns, record)), problem)
    except csv.Error as err:
        raise _FileRejected(f"cannot parse the row that starts on line {next_line} ({err}); check its quotes") from None


def _bounded_lines(text: str, delimiter: str) -> Iterator[str]:
    """The text's lines for the csv reader; _FileRejected for a line with more delimiters than a row can need."""
    for number, line in enumerate(io.StringIO(text, newline=""), start=1):
        if line.count(delimiter) > _MAX_LINE_DELIMITERS:
            shown = "tab" if delimiter == "\t" else repr(delimiter)
            raise _FileRejected(f"line {number} holds more than {_MAX_LINE_DELIMITERS:,} {shown} delimiters, more "
                                "than any row of a dictionary needs; keep only the columns word, definition and pos")
        yield line


def _header_columns(header: list[str], max_columns: int) -> list[str]:
    if len(header) > max_columns:
        raise _FileRejected(f"the header has {len(header):,} columns, over the limit of {max_columns:,}; "
                            "keep only the columns word, definition and pos")
    columns = [cell.strip().lower() for cell in header]
    repeated = [name for name in KNOWN_COLUMNS if columns.count(name) > 1]
    if repeated:
        raise _FileRejected(f"the header names the column {repeated[0]!r} more than once")
    missing = [name for name in REQUIRED_COLUMNS if name not in columns]
    if missing:
        found = _first([_display(name) for name in columns], _LISTED_COLUMNS)
        raise _FileRejected(f"missing column {' and '.join(missing)}: the first row must be a header "
                            f"naming the columns word and definition (found: {found})")
    return columns


def _jsonl_rows(text: str, limits: _Limits) -> Iterator[_RawRow]:
    for line_number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if len(line) > _MAX_JSONL_LINE_CHARS:  # rejected unparsed: parsing it could build millions of values
            yield _RawRow(line_number, {}, f"line longer than {_MAX_JSONL_LINE_CHARS:,} characters")
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as err:  # deep nesting ("[[[[...") ends in RecursionError
            yield _RawRow(line_number, {}, f"invalid JSON ({getattr(err, 'msg', 'nested too deeply')})")
            continue
        if isinstance(obj, dict) and len(obj) > limits.max_columns:
            yield _RawRow(line_number, {}, f"{len(obj):,} keys, over the limit of {limits.max_columns:,}")
        elif isinstance(obj, dict):
            yield _RawRow(line_number, {str(key).strip().lower(): value for key, value in obj.items()})
        else:
            yield _RawRow(line_number, {}, "not a JSON object")


_ROW_READERS: dict[str, Callable[[str, _Limits], Iterator[_RawRow]]] = {
    # TSV has no quoting: '"' is just text
    "tsv": lambda text, limits: _delimited_rows(text, limits, "\t", csv.QUOTE_NONE),
    "csv": lambda text, limits: _delimited_rows(text, limits, ",", csv.QUOTE_MINIMAL),
    "jsonl": _jsonl_rows,
}


def _collect_entries(rows: Iterable[_RawRow], limits: _Limits, predictable: Callable[[str], bool] | None,
                     report: ValidationReport) -> list[Entry]:
    entries: list[Entry] = []
    first_row_of: dict[tuple[str, str], int] = {}
    for raw in rows:
        report.rows_read += 1
        if report.rows_read > limits.max_rows:
            raise _FileRejected(f"more than {limits.max_rows:,} rows, over the limit; split the file")
        entry = _row_to_entry(raw, limits, report)
        if entry is None:
            continue
        first = first_row_of.setdefault((entry.word, entry.definition), raw.line)
        if first != raw.line:
            duplicate = f"duplicate (word, definition) pair of row {first}"
            report.rejected.append(RejectedRow(raw.line, duplicate, entry.word))
        elif predictable is not None and not predictable(entry.word):
            report.set_aside.append(entry)
        else:
            entries.append(entry)
    report.rows_accepted = len(entries)
    return entries


def _row_to_entry(raw: _RawRow, limits: _Limits, report: ValidationReport) -> Entry | None:
    """The row as an Entry, or None after recording in `report` why it was rejected."""
    values = {name: "" if raw.fields.get(name) is None else raw.fields[name] for name in KNOWN_COLUMNS}
    word = values["word"].strip().lower() if isinstance(values["word"], str) else ""
    problem = raw.problem or _field_problem(raw.fields, values, limits)
    if not problem and not is_word_or_phrase(word):
        problem = "not a word or phrase (letters and digits, with spaces, hyphens, apostrophes or periods inside)"
    if problem:
        report.rejected.append(RejectedRow(raw.line, problem, _without_undecodable(word)))
        return None
    return Entry(word, " ".join(values["definition"].split()), pos=values["pos"].strip().lower())


def _field_problem(fields: dict[str, object], values: dict[str, object], limits: _Limits) -> str:
    """Why the row's fields are unusable, or "" if they are fine."""
    for name in REQUIRED_COLUMNS:
        if name not in fields:
            return f"missing column {name!r}"
    for name, value in values.items():
        if not isinstance(value, str):
            return f"{name!r} is not text"
        if _UNDECODABLE.search(value):
            return f"undecodable bytes (not UTF-8) in {name!r}"
    for name, limit in (("word", limits.max_word_chars), ("definition", limits.max_definition_chars)):
        text = values[name].strip()
        if not text:
            return f"empty {name}"
        if len(text) > limit:
            return f"{name} longer than {limit} characters"
    return ""


def _why_nothing_usable(report: ValidationReport) -> str:
    if report.rows_read == 0:
        return "no data rows after the header"
    return (f"no usable rows: {len(report.rejected)} of {report.rows_read} rows rejected, "
            f"{len(report.set_aside)} set aside because their word is not a single vocabulary token")


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
