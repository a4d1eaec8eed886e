"""The Evaluate tab's computations: word prediction on WordNet's held-out words, and STS and the
SentEval transfer tasks on the SentEval data when it is present, reported next to the papers' numbers.

The SentEval data is read only from a fixed list of folders (`data_folders`), named by their place
relative to the repository: a user cannot make the server read, or tell whether there is, any other
folder, and no message shows an absolute server path.

core.evaluation (scipy, scikit-learn) is imported on first use, not at launch.
"""
from __future__ import annotations

import os
import random
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from core.paths import REPO_ROOT, SENTEVAL_DIR
from core.lexicon import Entry, load_wordnet, split_by_word
from core.words import evaluate_words

from .services import Progress, no_progress

STS_DATASETS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R")  # core.evaluation.sts's
QUICK_STS = ("STS-B",)  # the quickest: about 2,700 sentences
TRANSFER_TASKS = ("MR", "CR", "SUBJ", "MPQA", "SST-2", "TREC", "MRPC")  # core.evaluation.senteval's
# Run size -> (examples per split, 0 = all; cross-validation folds). The quick run of all 7 tasks
# took 130 s on the shipped model (one thread, busy machine); the full protocol takes many minutes.
TRANSFER_SIZES = {"quick: 1,000 examples per split, 5 folds": (1000, 5), "full SentEval protocol": (0, 10)}
DEFAULT_DATA_DIR = SENTEVAL_DIR
# The folders the Evaluate tab reads SentEval data from, by the name a user gives: the repository's
# own data/senteval (git-ignored), and ../shared/data/senteval of development machines. An operator
# adds folders with $DEFSENT_EVALUATION_DATA (absolute paths separated by os.pathsep), given by that path.
DATA_FOLDERS = {"data/senteval": REPO_ROOT / "data" / "senteval", "../shared/data/senteval": DEFAULT_DATA_DIR}
DATA_FOLDERS_ENV = "DEFSENT_EVALUATION_DATA"
SENTEVAL_URL = "https://github.com/facebookresearch/SentEval"
FETCH_SCRIPT = "scripts/fetch_senteval.sh"
GET_DATA = (f"To get SentEval's data (online, once), run `bash {FETCH_SCRIPT}` in DefSent Studio's folder: it runs "
            f"the download script of the SentEval repository ({SENTEVAL_URL}) and puts what it fetched (STS/, SICK/, "
            "MR/, CR/, ...) into data/senteval, where this tab reads it. By hand: clone SentEval, run "
            "`./get_transfer_data.bash` in its data/downstream folder, and copy or link that folder's contents into "
            "data/senteval.")
# The bundled smoke set (app/data/smoke_sts.tsv): hand-written groups of a sentence, a paraphrase and a
# sentence with one detail changed, scored by construction. It lets the tab show something offline
# and on a public server; it is no benchmark.
SMOKE_SET = Path(__file__).parents[1] / "data" / "smoke_sts.tsv"  # app/data
SMOKE_SCORES = {"paraphrase": 5.0, "one detail changed": 3.0, "unrelated": 0.0}
SMOKE_NOTE = ("Smoke set bundled with the app: {pairs} pairs built from {groups} hand-written sentences, each with a "
              "paraphrase (scored 5) and a version with one detail changed (scored 3), and paired with an unrelated "
              "sentence (0; paired by position, so a few share a subject such as \"a man\"). The scores are given by "
              "construction, not by raters: this shows the model and the tab "
              "at work offline; it is not a benchmark, and its numbers are not comparable with STS or SICK.")


def data_folders() -> dict[str, Path]:
    """{name a user gives: folder} of every folder the Evaluate tab may read."""
    extra = (path.strip() for path in os.environ.get(DATA_FOLDERS_ENV, "").split(os.pathsep))
    return {**DATA_FOLDERS, **{path: Path(path) for path in extra if path and Path(path).is_absolute()}}


def default_data_dir() -> str:
    """The name of the first data folder that exists on this server, else ""."""
    return next((name for name, folder in data_folders().items() if folder.is_dir()), "")


@lru_cache(maxsize=1)
def smoke_pairs() -> tuple[tuple[str, str, float, str], ...]:
    """(sentence, sentence, score, kind) of the bundled smoke set: per line, sentence-paraphrase (5),
    sentence-changed and paraphrase-changed (3), and the sentence with the sentence of the line half the
    file away (0)."""
    lines = [line.split("\t") for line in SMOKE_SET.read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")][1:]  # the header row
    paraphrase, changed, unrelated = SMOKE_SCORES.values()
    pairs = []
    for i, (sentence, para, other) in enumerate(lines):
        stranger = lines[(i + len(lines) // 2) % len(lines)][0]
        pairs += [(sentence, para, paraphrase, "paraphrase"), (sentence, other, changed, "one detail changed"),
                  (para, other, changed, "one detail changed"), (sentence, stranger, unrelated, "unrelated")]
    return tuple(pairs)


def smoke_markdown(models: dict, progress: Progress = no_progress) -> str:
    """Spearman x100 of each named engine's cosines against the smoke set's scores, and its mean cosine per
    kind of pair, as Markdown with the set's honest description."""
    from core.evaluation import paired_cosine, spearman_x100

    pairs = smoke_pairs()
    gold = np.array([score for _, _, score, _ in pairs])
    kinds = list(SMOKE_SCORES)
    rows = [f"| model | Spearman x100 | {' | '.join(f'mean cosine: {kind}' for kind in kinds)} |",
            "|---|---:|" + "---:|" * len(kinds)]
    for i, (name, engine) in enumerate(models.items()):
        progress(i / len(models), desc=f"encoding for {name}")
        cosine = paired_cosine(engine.encode([a for a, _, _, _ in pairs]), engine.encode([b for _, b, _, _ in pairs]))
        means = [float(np.mean([c for c, p in zip(cosine, pairs) if p[3] == kind])) for kind in kinds]
        rows.append(f"| {name} | {spearman_x100(cosine, gold):.2f} | {' | '.join(f'{m:.3f}' for m in means)} |")
    groups = len(pairs) // 4
    return "\n".join(rows) + "\n\n" + SMOKE_NOTE.format(pairs=len(pairs), groups=groups)


@lru_cache(maxsize=1)
def wordnet_test() -> tuple[Entry, ...]:
    """The WordNet test split: words never seen in training (split seed 0, as the shipped model)."""
    return tuple(split_by_word(load_wordnet(), seed=0).test)


def held_out_sample(engine, size: int, seed: int = 0) -> list[Entry]:
    """A fixed sample of the test entries whose word the engine's head can predict."""
    entries = [e for e in wordnet_test() if engine.head_words.token_id(e.word) is not None]
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
    from core.evaluation import EvaluationConfig
    from core.evaluation import SINGLE_FILE_DATASETS, evaluate_sts, sts_loaders

    folder = _data_folder(data_dir)
    _check_choice(datasets, STS_DATASETS, "datasets")
    loaders = sts_loaders(EvaluationConfig(folder, show_progress=False))
    # "mean" (of per-subset scores) differs from "all" (pooled) only for the STS years' several subsets:
    # STS-B and SICK-R alone would show two identical rows.
    aggregations = ("all", "mean") if any(name not in SINGLE_FILE_DATASETS for name in datasets) else ("all",)

    def score(name: str, subsets) -> tuple[dict[str, float], dict]:
        result = evaluate_sts(engine, subsets, desc=name, show_progress=False)
        return {key: getattr(result, key) for key in aggregations}, {"pairs": result.pairs}

    return _task_markdown("sts", model_name, folder, {name: loaders[name] for name in datasets}, score, progress)


def senteval_markdown(engine, model_name: str, data_dir: str, tasks: list[str], size: str,
                      progress: Progress = no_progress) -> str:
    """Accuracy % on the chosen SentEval transfer tasks as Markdown, beside the papers' rows.
    `size` is a key of TRANSFER_SIZES (a quick subsample or the full protocol)."""
    from core.evaluation import EvaluationConfig
    from core.evaluation import evaluate_transfer, sample_splits, transfer_loaders

    folder = _data_folder(data_dir)
    _check_choice(tasks, TRANSFER_TASKS, "tasks")
    if size not in TRANSFER_SIZES:
        raise ValueError(f"Choose a run size among: {'; '.join(TRANSFER_SIZES)}.")
    examples, kfold = TRANSFER_SIZES[size]
    loaders = transfer_loaders(EvaluationConfig(folder, kfold=kfold, show_progress=False))

    def score(name: str, splits) -> tuple[dict[str, float], dict]:
        splits = sample_splits(splits, examples) if examples else splits
        result = evaluate_transfer(engine, splits, kfold=kfold, desc=name, show_progress=False)
        return {"accuracy": result.accuracy}, {"sizes": result.sizes}

    note = (f"Quick run: at most {examples:,} examples per split and {kfold}-fold cross-validation, so the scores "
            "are indicative, not comparable to the papers' full protocol." if examples else "")
    return _task_markdown("senteval", model_name, folder, {name: loaders[name] for name in tasks}, score, progress,
                          note)


def _data_folder(data_dir: str) -> Path:
    """The allowed folder named `data_dir` (empty: the first that exists). The messages name the
    allowed folders only, never the text given, and say the same whether a given path exists or not."""
    folders = data_folders()
    name = (data_dir or "").strip() or default_data_dir()
    if not name:
        raise ValueError(f"No SentEval data folder on this server yet. {GET_DATA}")
    if name not in folders:
        raise ValueError(f"No SentEval data folder of that name: this server reads SentEval data only from "
                         f"{' or '.join(DATA_FOLDERS)} (or a folder its operator lists in ${DATA_FOLDERS_ENV}).")
    if not folders[name].is_dir():
        raise ValueError(f"No SentEval data folder at {name} on this server yet. {GET_DATA}")
    return folders[name]


def _check_choice(chosen: list[str], allowed: tuple[str, ...], what: str) -> None:
    if not chosen or any(name not in allowed for name in chosen):
        raise ValueError(f"Choose {what} among {', '.join(allowed)}.")


def _task_markdown(task: str, model_name: str, folder: Path, loaders: dict, score, progress: Progress,
                   note: str = "") -> str:
    """Run `score` over the datasets of `loaders` (reporting progress per dataset) and format the
    task's section; missing files are named in its notes, relative to the data `folder`, with how to
    get the data."""
    from core.evaluation import run_datasets
    from core.evaluation import task_markdown

    done: list[str] = []

    def scored(name: str, data) -> tuple[dict[str, float], dict]:
        progress(len(done) / len(loaders), desc=f"{name} ({len(done) + 1} of {len(loaders)})")
        done.append(name)
        return score(name, data)

    start = time.perf_counter()
    result = run_datasets(loaders, scored)
    result.seconds = time.perf_counter() - start
    result.notes += [note] if note else []
    # core names the missing files by their full path: shown relative to the data folder instead
    result.missing = {name: message.replace(f"{folder}{os.sep}", "") for name, message in result.missing.items()}
    result.notes += [GET_DATA] if result.missing else []
    return task_markdown(task, result, model_name)
