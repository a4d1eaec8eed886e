"""A dictionary file a user uploads (TSV, CSV or JSONL): read under bounds, row by row, into Entries and a
report of what was kept and why rows were rejected (`read_user_dictionary`).
"""
from __future__ import annotations

import codecs
import csv
import io
import json
import os
import re
import stat
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..spreadsheet import inert
from .dictionary import Entry, is_predictable, is_word_or_phrase

REQUIRED_COLUMNS = ("word", "definition")
KNOWN_COLUMNS = (*REQUIRED_COLUMNS, "pos")
_FORMATS_BY_SUFFIX = {".tsv": "tsv", ".tab": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
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
    return '"' + inert(text) + '"'


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
