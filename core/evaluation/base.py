"""The encoder contract, encode-once embedding tables and the result type every task returns."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Protocol, Sequence, TypeVar

import numpy as np
from tqdm.auto import tqdm

from .files import MissingDataError

log = logging.getLogger(__name__)
D = TypeVar("D")

SENTEVAL_SEED = 1111  # SentEval's default seed for fold shuffling


class TextEncoder(Protocol):
    """Anything that embeds texts: `encode(texts)` returns a float32 array (len(texts), d)."""

    def encode(self, texts: list[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class EvaluationConfig:
    """Where the data is and how to evaluate; shared by every task function."""

    data_dir: Path
    sts_dir: Path | None = None  # SentEval's data/downstream/STS (holds STS12-en-test, ...); default data_dir/STS
    kfold: int = 10
    seed: int = SENTEVAL_SEED
    show_progress: bool = True
    decoder_test: Path | None = None  # sentences for the Vec2Sent diagnostics; default: the modern corpus' held-out set
    decoder_sentences: int = 500  # first N of them
    words_split: str = "test"  # the WordNet split of the words task: "dev" or "test"


@dataclass
class TaskResult:
    """Scores of one task group.

    `rows` maps an aggregation name (one table row, e.g. "all" / "mean" for STS) to
    {dataset column: score}. `missing` maps a skipped dataset to the reason; `details` holds
    per-dataset extras for the JSON (subset scores, sizes, chosen C); `notes` explain the rows.
    `averaged`: whether the report adds an Avg. column (not when the columns are different metrics).
    """

    rows: dict[str, dict[str, float]]
    details: dict[str, dict] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    averaged: bool = True


class SentenceEmbeddings:
    """Embeddings of a collection of sentences, each unique sentence encoded exactly once.

    `embeddings[texts]` returns the rows (len(texts), d) for any texts of the collection.
    """

    def __init__(self, encoder: TextEncoder, sentences: Iterable[str], *, desc: str = "encode",
                 chunk_size: int = 256, show_progress: bool = True) -> None:
        # Similar lengths end up in the same chunk, so transformer batches carry less padding;
        # ties are broken by text so the order (and float rounding) is the same on every run.
        unique = sorted(set(sentences), key=lambda s: (len(s), s))
        self._row = {sentence: i for i, sentence in enumerate(unique)}
        parts = []
        with tqdm(total=len(unique), desc=desc, unit="sent", disable=not show_progress) as bar:
            for start in range(0, len(unique), chunk_size):
                chunk = unique[start:start + chunk_size]
                parts.append(_checked_encode(encoder, chunk))
                bar.update(len(chunk))
        self.matrix = np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)

    def __getitem__(self, sentences: Sequence[str]) -> np.ndarray:
        return self.matrix[[self._row[s] for s in sentences]]


def _checked_encode(encoder: TextEncoder, texts: list[str]) -> np.ndarray:
    vectors = np.asarray(encoder.encode(texts), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(f"encoder returned shape {vectors.shape} for {len(texts)} texts; expected (n, d)")
    return vectors


def run_datasets(loaders: dict[str, Callable[[], D]],
                 score: Callable[[str, D], tuple[dict[str, float], dict]]) -> TaskResult:
    """Load and score each dataset in turn; a dataset whose files are missing is logged and skipped.

    `score(name, data)` returns ({row: value}, details); values land in result.rows[row][name].
    """
    result = TaskResult(rows={})
    for name, load in loaders.items():
        try:
            data = load()
        except MissingDataError as error:
            log.warning("skipping %s", error)
            result.missing[name] = str(error)
            continue
        values, result.details[name] = score(name, data)
        for row, value in values.items():
            result.rows.setdefault(row, {})[name] = value
    return result
