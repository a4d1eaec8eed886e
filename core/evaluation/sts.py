"""Unsupervised semantic textual similarity (DefSent Table 3, SBERT Table 1).

Score = Spearman's rho x100 between cos(u, v) and the gold score; nothing is trained. STS12-16
are read from a folder in SentEval's layout and aggregated two ways: "all" pools every pair of
the year into one correlation (DefSent's protocol), "mean" averages the per-subset correlations
(SentEval's). STS-B (test split) and SICK-R (test set) have one subset, so both agree there.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

import numpy as np

from .base import EvaluationConfig, SentenceEmbeddings, TaskResult, TextEncoder, run_datasets
from .files import MissingDataError, SentencePairs, load_files, read_lines, read_tsv
from .metrics import paired_cosine, spearman_x100

STS_YEARS = ("STS12", "STS13", "STS14", "STS15", "STS16")
STS_BENCHMARK_TEST = "STS/STSBenchmark/sts-test.csv"
SICK_TEST = "SICK/SICK_test_annotated.txt"
AGGREGATION_NOTES = [
    "all: Spearman over all pairs of a dataset pooled (DefSent's protocol).",
    "mean: mean of per-subset Spearman (SentEval's); equal to all for STS-B and SICK-R.",
]


@dataclass(frozen=True)
class StsScore:
    """Spearman x100 pooled over all pairs, averaged over subsets, and per subset."""

    all: float
    mean: float
    subsets: dict[str, float]
    pairs: int


def load_sts_benchmark(path: Path) -> SentencePairs:
    """STS-B split file: genre, file, year, id, score, sentence1, sentence2 [, extra columns ignored]."""
    return _pairs(read_tsv(path, columns=7), first=5, second=6, score=4)


def load_sick_relatedness(path: Path) -> SentencePairs:
    """SICK file with header: pair_ID, sentence_A, sentence_B, relatedness_score, entailment_judgment."""
    return _pairs(read_tsv(path, columns=4, skip_header=True), first=1, second=2, score=3)


def load_sts_year(folder: Path, dataset: str = "") -> dict[str, SentencePairs]:
    """All subsets of one SemEval STS year in SentEval's layout, keyed by subset name.

    Each subset is STS.input.<subset>.txt (sentence1 TAB sentence2 [TAB ...]) with a line-aligned
    STS.gs.<subset>.txt; pairs whose gold line is empty are skipped, as SentEval does.
    """
    dataset = dataset or folder.name
    inputs = sorted(folder.glob("STS.input.*.txt"))
    if not inputs:
        raise MissingDataError(dataset, [folder / "STS.input.<subset>.txt" if folder.is_dir() else folder])
    golds = [folder / path.name.replace("STS.input.", "STS.gs.", 1) for path in inputs]
    missing = [gold for gold in golds if not gold.is_file()]
    if missing:
        raise MissingDataError(dataset, missing)
    return {path.name[len("STS.input."):-len(".txt")]: _load_sts_subset(path, gold)
            for path, gold in zip(inputs, golds, strict=True)}


def evaluate_sts(encoder: TextEncoder, subsets: dict[str, SentencePairs], *, desc: str = "STS",
                 show_progress: bool = True) -> StsScore:
    """Score one STS dataset (one or more subsets); every unique sentence is encoded once."""
    embeddings = SentenceEmbeddings(encoder, (s for pairs in subsets.values() for s in pairs.sentences),
                                    desc=desc, show_progress=show_progress)
    predicted = {name: paired_cosine(embeddings[pairs.first], embeddings[pairs.second])
                 for name, pairs in subsets.items()}
    per_subset = {name: spearman_x100(predicted[name], pairs.labels) for name, pairs in subsets.items()}
    pooled = spearman_x100(np.concatenate(list(predicted.values())),
                           np.concatenate([pairs.labels for pairs in subsets.values()]))
    return StsScore(pooled, float(np.mean(list(per_subset.values()))), per_subset,
                    sum(len(pairs.first) for pairs in subsets.values()))


SINGLE_FILE_DATASETS = {"STS-B": (STS_BENCHMARK_TEST, load_sts_benchmark),
                        "SICK-R": (SICK_TEST, load_sick_relatedness)}


def sts_loaders(config: EvaluationConfig) -> dict[str, Callable[[], dict[str, SentencePairs]]]:
    """Dataset name -> loader, in the papers' column order."""
    sts_dir = config.sts_dir or config.data_dir / "STS"
    loaders = {year: partial(load_sts_year, sts_dir / f"{year}-en-test", year) for year in STS_YEARS}
    for name, (relative_path, load) in SINGLE_FILE_DATASETS.items():
        loaders[name] = partial(load_files, name, config.data_dir, [relative_path], partial(_one_subset, load))
    return loaders


def run_sts(encoder: TextEncoder, config: EvaluationConfig) -> TaskResult:
    """The "sts" task: STS12-16 (when present), STS-B and SICK-R; rows "all" and "mean"."""
    def score(name: str, subsets: dict[str, SentencePairs]) -> tuple[dict[str, float], dict]:
        result = evaluate_sts(encoder, subsets, desc=name, show_progress=config.show_progress)
        return {"all": result.all, "mean": result.mean}, {"subsets": result.subsets, "pairs": result.pairs}

    result = run_datasets(sts_loaders(config), score)
    result.notes.extend(AGGREGATION_NOTES)
    return result


def _one_subset(load: Callable[[Path], SentencePairs], path: Path) -> dict[str, SentencePairs]:
    return {"test": load(path)}


def _pairs(rows: list[list[str]], first: int, second: int, score: int) -> SentencePairs:
    return SentencePairs([row[first].strip() for row in rows], [row[second].strip() for row in rows],
                         np.array([float(row[score]) for row in rows]))


def _load_sts_subset(input_path: Path, gold_path: Path) -> SentencePairs:
    lines, gold = read_lines(input_path), [score.strip() for score in read_lines(gold_path)]
    if len(lines) != len(gold):
        raise ValueError(f"{input_path} has {len(lines)} lines but {gold_path} has {len(gold)}")
    rows = []
    for number, (line, score) in enumerate(zip(lines, gold, strict=True), start=1):
        fields = line.split("\t")
        if len(fields) < 2:
            raise ValueError(f"{input_path}:{number}: expected sentence1 TAB sentence2")
        if score:
            rows.append([fields[0], fields[1], score])
    return _pairs(rows, first=0, second=1, score=2)
