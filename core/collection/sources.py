"""A user's corpus read into one Arrow table: `row_id` (the row's index in the file, stable across runs),
`text` (whitespace collapsed, cut to MAX_TEXT_CHARS) and every other column of the file as metadata.

Formats, by the file's ending: .txt (one sentence a line), .csv, .tsv, .jsonl (one JSON object a line),
.parquet. Bad input raises ValueError with a one-line message before anything is written: no such file or
format, a binary or non-UTF-8 file, no text column (the columns there are named), no text at all, more
than MAX_ROWS rows (`limit` reads the first rows only).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
from pyarrow import compute

MAX_ROWS = 10_000_000  # rows of one collection: 15 GB of float32 vectors at 384 dimensions (docs/scale.md)
MAX_TEXT_CHARS = 1_000  # longer texts are cut: the encoder reads their first 128 tokens anyway
ROW_ID, TEXT, VECTOR = "row_id", "text", "vector"
RESERVED = (ROW_ID, VECTOR)  # columns the table makes itself: a file's column of that name is refused
FORMATS = (".txt", ".csv", ".tsv", ".jsonl", ".parquet")
SNIFF_BYTES = 8_192  # a text file's first bytes hold no NUL byte


def read_corpus(path: Path, text_column: str | None = None, limit: int = 0) -> pa.Table:
    """The rows of `path` with a non-empty text, as (row_id int64, text, metadata columns...).
    `text_column`: the column holding the texts (default: "text", else the file's only string column;
    ignored for .txt). `limit`: the first `limit` rows of the file (0: all, at most MAX_ROWS)."""
    if not 0 <= limit <= MAX_ROWS:
        raise ValueError(f"--limit must be from 0 (all) to {MAX_ROWS:,}, not {limit}")
    bound = limit or MAX_ROWS
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"{path.name}: a corpus is a {', '.join(FORMATS)} file")
    if not path.is_file():
        raise ValueError(f"no file {path}")
    _check_text_file(path)
    table = _READERS[path.suffix.lower()](path, bound + 1)  # one row past the bound tells that it is over
    if len(table) > bound:
        if limit:
            table = table.slice(0, limit)
        else:
            raise ValueError(f"{path.name} has more than {MAX_ROWS:,} rows: pass --limit, or split it")
    column = _text_column(table, path, text_column)
    reserved = [c for c in table.column_names if c in RESERVED and c != column]
    if reserved:
        raise ValueError(f"{path.name}: a column named {reserved[0]!r} is the table's own: rename it")
    table = table.append_column(ROW_ID, pa.array(range(len(table)), pa.int64()))
    texts = pa.array([" ".join(str(t).split())[:MAX_TEXT_CHARS] if t is not None else ""
                      for t in table.column(column).to_pylist()], pa.string())
    metadata = [c for c in table.column_names if c not in (column, ROW_ID)]
    table = pa.table([table.column(ROW_ID), texts] + [table.column(c) for c in metadata],
                     names=[ROW_ID, TEXT] + metadata)
    table = table.filter(compute.not_equal(table.column(TEXT), ""))
    if not len(table):
        raise ValueError(f"{path.name} holds no text")
    return table


def corpus_digest(corpus: pa.Table) -> str:
    """A fingerprint of a corpus's row ids and texts: a table is resumed only from the same corpus."""
    digest = hashlib.sha1(corpus.column(ROW_ID).to_numpy().tobytes())
    for chunk in corpus.column(TEXT).chunks:
        digest.update("\n".join(chunk.to_pylist()).encode())  # values, not buffers: a slice shares its parent's
    return digest.hexdigest()


def _check_text_file(path: Path) -> None:
    """ValueError for a binary file given as text (a NUL byte in its first bytes) or a Parquet file that is not."""
    with open(path, "rb") as f:
        head = f.read(SNIFF_BYTES)
    if path.suffix.lower() == ".parquet":
        if not head.startswith(b"PAR1"):
            raise ValueError(f"{path.name} is not a Parquet file")
    elif b"\0" in head:
        raise ValueError(f"{path.name} is a binary file, not text")


def _text_column(table: pa.Table, path: Path, given: str | None) -> str:
    """The column of texts: `given`, else "text", else the only string column; ValueError naming the columns."""
    strings = [f.name for f in table.schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    columns = ", ".join(table.column_names)
    if given is not None:
        if given not in table.column_names:
            raise ValueError(f"{path.name} has no column {given!r} (its columns: {columns})")
        if given not in strings:
            raise ValueError(f"{path.name}: column {given!r} does not hold text (its columns: {columns})")
        return given
    if TEXT in strings:
        return TEXT
    if len(strings) == 1:
        return strings[0]
    raise ValueError(f"{path.name}: which column holds the text? pass --text-column (its columns: {columns})")


def _lines(path: Path, rows: int) -> list[str]:
    """The first `rows` lines of a UTF-8 file (ValueError when it is not UTF-8)."""
    lines = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                lines.append(line.rstrip("\n"))
                if len(lines) == rows:
                    break
    except UnicodeDecodeError as err:
        raise ValueError(f"{path.name} is not UTF-8 text (byte {err.start} of a line)") from None
    return lines


def _read_txt(path: Path, rows: int) -> pa.Table:
    return pa.table({TEXT: pa.array([line for line in _lines(path, rows) if line.strip()], pa.string())})


def _read_jsonl(path: Path, rows: int) -> pa.Table:
    records = []
    for number, line in enumerate(_lines(path, rows), 1):
        if line.strip():
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path.name}, line {number}: not JSON ({err.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path.name}, line {number}: not a JSON object")
            records.append(record)
    try:
        return pa.Table.from_pylist(records)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise ValueError(f"{path.name}: a column holds values of different types ({err})".splitlines()[0]) from None


def _read_delimited(path: Path, rows: int) -> pa.Table:
    from pyarrow import csv

    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        reader = csv.open_csv(path, parse_options=csv.ParseOptions(delimiter=delimiter, newlines_in_values=True),
                              read_options=csv.ReadOptions(block_size=1 << 22))
        table = _first_rows(reader, reader.schema, rows)
    except (pa.ArrowInvalid, UnicodeDecodeError) as err:
        raise ValueError(f"{path.name} is not a {path.suffix.lower()[1:].upper()} file ({err})".splitlines()[0]) from None
    return table.slice(0, rows)


def _read_parquet(path: Path, rows: int) -> pa.Table:
    from pyarrow import parquet

    try:
        file = parquet.ParquetFile(path)
        table = _first_rows(file.iter_batches(batch_size=65_536), file.schema_arrow, rows)
    except (pa.ArrowInvalid, OSError) as err:
        raise ValueError(f"{path.name} is not a readable Parquet file ({err})".splitlines()[0]) from None
    return table.slice(0, rows)


def _first_rows(batches, schema: pa.Schema, rows: int) -> pa.Table:
    """The record batches of `batches` read until they hold `rows` rows (a huge file is not read whole)."""
    kept, count = [], 0
    for batch in batches:
        kept.append(batch)
        count += len(batch)
        if count >= rows:
            break
    return pa.Table.from_batches(kept, schema)


_READERS = {".txt": _read_txt, ".csv": _read_delimited, ".tsv": _read_delimited, ".jsonl": _read_jsonl,
            ".parquet": _read_parquet}
