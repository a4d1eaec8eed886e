"""The Evaluate tab's computations: word prediction on WordNet's held-out words, and STS on the
SentEval data when it is present, reported next to the papers' numbers.

core.evaluation (scipy, scikit-learn) is imported on first use, not at launch.
"""
from __future__ import annotations

import random
import time
from functools import lru_cache
from pathlib import Path

from core.checkpoint import REPO_ROOT
from core.dictionary import Entry, load_wordnet, split_by_word
from core.word_eval import evaluate_words

from .services import Progress, no_progress

STS_DATASETS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R")  # core.evaluation.sts's
QUICK_STS = ("STS-B",)  # the quickest: about 2,700 sentences
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data" / "senteval"  # as core.evaluation.runner's


def default_data_dir() -> str:
    """../shared/data/senteval beside the repository if it exists, else ""."""
    return str(DEFAULT_DATA_DIR) if DEFAULT_DATA_DIR.is_dir() else ""


@lru_cache(maxsize=1)
def wordnet_test() -> tuple[Entry, ...]:
    """The WordNet test split: words never seen in training (split seed 0, as the shipped model)."""
    return tuple(split_by_word(load_wordnet(), seed=0).test)


def held_out_sample(engine, size: int, seed: int = 0) -> list[Entry]:
    """A fixed sample of the test entries whose word the engine's head can predict."""
    entries = [e for e in wordnet_test() if engine.vocab.token_id(e.word) is not None]
    return random.Random(seed).sample(entries, min(size, len(entries)))


def word_prediction_rows(models: dict, size: int, progress: Progress = no_progress) -> list[list]:
    """[model, n, MRR, top-1, top-3, top-10] for each named engine on a WordNet test sample."""
    rows = []
    for i, (name, engine) in enumerate(models.items()):
        progress(i / len(models), desc=f"scoring {name}")
        m = evaluate_words(engine, held_out_sample(engine, int(size)))
        rows.append([name, m["n"], *(round(m[key], 4) for key in ("mrr", "top1", "top3", "top10"))])
    return rows


def sts_markdown(engine, model_name: str, data_dir: str, datasets: list[str],
                 progress: Progress = no_progress) -> str:
    """Spearman x100 on the chosen STS datasets as Markdown, beside the papers' rows."""
    from core.evaluation.base import EvaluationConfig, run_datasets
    from core.evaluation.report import task_markdown
    from core.evaluation.sts import evaluate_sts, sts_loaders

    folder = Path((data_dir or "").strip())
    if not str(folder) or not folder.is_dir():
        raise ValueError(f"No SentEval data folder at {str(folder)!r}: give the folder that holds STS/ and SICK/ "
                         "(SentEval's data/downstream layout).")
    unknown = [d for d in datasets if d not in STS_DATASETS]
    if unknown or not datasets:
        raise ValueError(f"Choose datasets among {', '.join(STS_DATASETS)}.")
    loaders = {name: load for name, load in sts_loaders(EvaluationConfig(folder, show_progress=False)).items()
               if name in datasets}
    done: list[str] = []

    def score(name: str, subsets) -> tuple[dict[str, float], dict]:
        progress(len(done) / len(loaders), desc=f"encoding {name}")
        done.append(name)
        result = evaluate_sts(engine, subsets, desc=name, show_progress=False)
        return {"all": result.all, "mean": result.mean}, {"pairs": result.pairs}

    start = time.perf_counter()
    result = run_datasets(loaders, score)
    result.seconds = time.perf_counter() - start
    return task_markdown("sts", result, model_name)
