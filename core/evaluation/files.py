"""Reading SentEval-layout data files: encodings, line splitting, missing-file reporting."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence, TypeVar

import numpy as np

T = TypeVar("T")


class MissingDataError(FileNotFoundError):
    """Files a dataset needs are absent; the message names the dataset and every missing path."""

    def __init__(self, dataset: str, paths: Sequence[Path]) -> None:
        self.dataset = dataset
        self.paths = list(paths)
        super().__init__(f"{dataset}: missing {', '.join(str(p) for p in self.paths)}")


@dataclass(frozen=True)
class LabeledTexts:
    """Single sentences with one label each (labels: int or str array, len(texts))."""

    texts: list[str]
    labels: np.ndarray

    @property
    def sentences(self) -> list[str]:
        return self.texts


@dataclass(frozen=True)
class SentencePairs:
    """Sentence pairs (first[i], second[i]) with one label or gold score each."""

    first: list[str]
    second: list[str]
    labels: np.ndarray

    @property
    def sentences(self) -> list[str]:
        return self.first + self.second


def load_files(dataset: str, root: Path, relative_paths: Sequence[str], loader: Callable[..., T]) -> T:
    """Call `loader(*paths)` on root/relative_paths, or raise MissingDataError naming all absent ones."""
    paths = [root / relative for relative in relative_paths]
    missing = [path for path in paths if not path.is_file()]
    if missing:
        raise MissingDataError(dataset, missing)
    return loader(*paths)


def read_lines(path: Path) -> list[str]:
    """Lines of a UTF-8 or Latin-1 text file, without line ends; a UTF-8 BOM is dropped.

    Only "\\n" (and a "\\r" before it) ends a line: MR and SUBJ contain byte 0x85, which
    `str.splitlines()` would wrongly treat as a line break after Latin-1 decoding.
    """
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:  # SentEval's MR, SUBJ and TREC files are Latin-1
        text = raw.decode("latin-1")
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if lines and lines[-1] == "" else lines


def read_sentences(path: Path) -> list[str]:
    """Non-blank lines of a one-sentence-per-line file, stripped."""
    return [line.strip() for line in read_lines(path) if line.strip()]


def read_tsv(path: Path, columns: int, skip_header: bool = False) -> list[list[str]]:
    """Rows of a TAB-separated file (no quoting), cut to their first `columns` fields.

    Extra trailing fields are ignored (STS-B has rows with source columns appended); a row with
    fewer fields raises ValueError naming file and line. Blank lines are skipped.
    """
    rows = []
    for number, line in enumerate(read_lines(path), start=1):
        if (skip_header and number == 1) or not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < columns:
            raise ValueError(f"{path}:{number}: expected {columns} TAB-separated fields, got {len(fields)}")
        rows.append(fields[:columns])
    return rows
