"""The TensorFlow Embedding Projector's files: vectors.tsv and metadata.tsv (issue 39, item 4).

vectors.tsv holds one point a line, its numbers separated by tabs. metadata.tsv holds one line a point
too: a single column without a header, or several columns under a header line (the Projector's rule).
`read_projector` checks everything before returning, so bad files load nothing; `write_projector` writes
points in the same form, for the Projector and other tools.
"""
from __future__ import annotations

import itertools
import math
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from ..spreadsheet import inert

MAX_POINTS = 200_000  # the Projector itself loads 100k points
MAX_WIDTH = 4_096
MAX_COLUMNS = 100  # metadata columns (a table of texts too): each is a colouring to choose
MAX_FILE_BYTES = 300_000_000
VECTORS, METADATA = "vectors.tsv", "metadata.tsv"


@dataclass
class ProjectorPoints:
    """Points read from (or to write as) Projector files: vectors (n, d) and metadata columns of n values."""
    vectors: np.ndarray
    columns: dict[str, list[str]]

    @property
    def labels(self) -> list[str]:
        """Each point's label: its first metadata column, else "point i"."""
        first = next(iter(self.columns.values()), None)
        return list(first) if first is not None else [f"point {i + 1}" for i in range(len(self.vectors))]


def read_projector(vectors: Path, metadata: Path | None = None, max_points: int = MAX_POINTS) -> ProjectorPoints:
    """Read vectors.tsv (and metadata.tsv); ValueError naming the file and line of the first problem:
    a file over MAX_FILE_BYTES, more than `max_points` points, a row of another width or over MAX_WIDTH, a
    value that is not a finite number, metadata rows that do not match the vectors in number."""
    lines = _lines(vectors)
    if not lines:
        raise ValueError(f"{vectors.name} holds no vectors")
    if len(lines) > max_points:  # before any is parsed: a file of many short rows parses to far more memory
        raise ValueError(f"{vectors.name} holds {len(lines):,} points; at most {max_points:,} can be loaded")
    rows = [_vector_row(line, number, vectors.name) for number, line in enumerate(lines, 1)]
    width = len(rows[0])
    for number, row in enumerate(rows, 1):
        if len(row) != width:
            raise ValueError(f"{vectors.name} line {number}: {len(row)} numbers, where line 1 has {width}")
    columns = _metadata(metadata, len(rows)) if metadata is not None else {}
    return ProjectorPoints(np.array(rows, dtype=np.float32), columns)


def write_projector(folder: Path, points: ProjectorPoints) -> tuple[Path, Path]:
    """Write `folder`/vectors.tsv and `folder`/metadata.tsv (a header line, one line a point); returns them."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in _projector_files(points):
        with open(folder / name, "w", encoding="utf-8") as f:
            f.writelines(lines)
    return folder / VECTORS, folder / METADATA


def zip_projector(archive: Path, points: ProjectorPoints, folder: str) -> Path:
    """Write `archive` (a zip) holding `folder`/vectors.tsv and `folder`/metadata.tsv as `write_projector` writes
    them, line by line: the files never exist uncompressed (the zip is about 0.4 of their size)."""
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, lines in _projector_files(points):
            with zipped.open(f"{folder}/{name}", "w") as f:
                for line in lines:
                    f.write(line.encode("utf-8"))
    return archive


def _projector_files(points: ProjectorPoints) -> list[tuple[str, Iterator[str]]]:
    """(file name, its lines) of the Projector's two files for `points`."""
    names = list(points.columns) or ["label"]
    values = list(points.columns.values()) or [points.labels]
    vectors = ("\t".join(f"{x:.6g}" for x in row) + "\n" for row in points.vectors)
    metadata = itertools.chain(["\t".join(_cell(name) for name in names) + "\n"],
                               ("\t".join(_cell(column[i]) for column in values) + "\n"
                                for i in range(len(points.vectors))))
    return [(VECTORS, vectors), (METADATA, metadata)]


def _lines(path: Path) -> list[str]:
    return _split_lines(_read(path))


def _read(path: Path) -> str:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"{path.name} is {size / 1e6:.0f} MB; at most {MAX_FILE_BYTES / 1e6:.0f} MB can be loaded")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path.name} is not UTF-8 text (byte {err.start})") from None


def _split_lines(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines  # an empty line inside is an empty label, or a bad vector


def _vector_row(line: str, number: int, name: str) -> list[float]:
    cells = line.rstrip("\r").split("\t")
    if len(cells) > MAX_WIDTH:
        raise ValueError(f"{name} line {number}: {len(cells)} numbers; vectors of at most {MAX_WIDTH} can be loaded")
    try:
        row = [float(cell) for cell in cells]
    except ValueError:
        raise ValueError(f"{name} line {number}: not a row of numbers separated by tabs") from None
    if not all(math.isfinite(x) for x in row):
        raise ValueError(f"{name} line {number}: NaN or infinite value")
    return row


def table_columns(text: str, name: str, first_line: int = 1) -> dict[str, list[str]]:
    """The columns of a tab-separated `text` (a file named `name`, of which it starts at line `first_line`)
    by the Projector's metadata rule: one column without a header ("label"), or several under a header line
    naming them; ValueError naming the line of a header naming a column twice, or of a row whose width
    differs from the header's. Uploaded tables of texts are read so too."""
    rows = [line.rstrip("\r").split("\t") for line in _split_lines(text)]
    header = rows[0] if rows and len(rows[0]) > 1 else None  # the Projector: a header only with several columns
    body = rows[1:] if header else rows
    names = [column.strip() for column in header] if header else ["label"]
    if len(names) > MAX_COLUMNS:
        raise ValueError(f"{name} line {first_line}: {len(names):,} columns; at most {MAX_COLUMNS} can be read")
    twice = [column for column, count in Counter(names).items() if count > 1]
    if twice:  # one column would hide the other
        raise ValueError(f"{name} line {first_line}: the column name {twice[0]!r} is used twice")
    for number, row in enumerate(body, first_line + 1 if header else first_line):
        if len(row) != len(names):
            raise ValueError(f"{name} line {number}: {len(row)} columns, where the header has {len(names)}")
    return {column: [row[j] for row in body] for j, column in enumerate(names)}


def holds_vectors(path: Path) -> bool:
    """Whether `path` reads as a vectors.tsv: its first cell is a number (a table of texts starts with a
    header naming its columns, a list of texts with a text); the rest is checked by `read_projector`."""
    if not path.is_file():  # gone, or e.g. a FIFO, which would block the read: not vectors to read
        return False
    with open(path, encoding="utf-8", errors="replace") as f:
        first = f.readline(64).split("\t")[0]
    try:
        float(first)
    except ValueError:
        return False
    return True


def _metadata(path: Path, points: int) -> dict[str, list[str]]:
    columns = table_columns(_read(path), path.name)
    rows = len(next(iter(columns.values())))
    if rows != points:
        raise ValueError(f"{path.name} has {rows:,} rows{' under its header' if len(columns) > 1 else ''} "
                         f"for {points:,} vectors")
    return columns


def _cell(value: str) -> str:
    """A metadata cell: one line without tabs, shown as text by a spreadsheet (core.spreadsheet)."""
    return inert(" ".join(str(value).split()))
