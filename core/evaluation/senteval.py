"""SentEval transfer tasks (DefSent Table 4, SBERT Table 5): logistic regression on frozen embeddings.

Protocol, as SentEval's scikit-learn path runs it (accuracy in %):
- MR, CR, SUBJ, MPQA: nested stratified k-fold CV (k=10, shuffled with seed 1111). In each outer
  fold, C is chosen by an inner k-fold CV on the outer training part, then refit on all of it.
- SST-2: C chosen on the dev split; fit on train, scored on test.
- TREC (6 coarse classes), MRPC: C chosen by k-fold CV on train; refit on train, scored on test.
- MRPC features are [|u - v|, u * v], as in SentEval.
- Unlike SentEval, features are standardised (the scaler is fitted on each training part only),
  so lbfgs converges in few iterations and C means the same for every encoder. SentEval searches
  C in 2^-2..2^3 on raw features; a C on raw features acts like C * variance on standardised
  ones (variance ~2^-8.6 per dimension for unit-norm 384-d embeddings: SentEval's grid maps to
  about 2^-10.6..2^-5.6). C_GRID = 2^-12, 2^-10, ..., 2^2 covers that and the weaker
  regularisation that low-dimensional GloVe prefers. The first best C (strongest regularisation)
  wins ties; each grid fit warm-starts from the previous C.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Union

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from core.runtime.cancel import check_cancelled

from .base import SENTEVAL_SEED, EvaluationConfig, SentenceEmbeddings, TaskResult, TextEncoder, run_datasets
from .files import LabeledTexts, SentencePairs, load_files, read_sentences, read_tsv
from .metrics import accuracy_percent

C_GRID = tuple(2.0 ** exponent for exponent in range(-12, 3, 2))
MAX_ITER = 1000

Split = Union[LabeledTexts, SentencePairs]
Features = tuple[np.ndarray, np.ndarray]  # (X, y)


@dataclass(frozen=True)
class TransferScore:
    """Test accuracy (%), the C chosen (one per outer fold for CV tasks) and the split sizes."""

    accuracy: float
    chosen_c: list[float]
    sizes: dict[str, int]


def load_binary(positive: Path, negative: Path) -> dict[str, LabeledTexts]:
    """MR, CR, SUBJ, MPQA: one sentence a line per class file; a single split "all" (label 1 = positive)."""
    pos, neg = read_sentences(positive), read_sentences(negative)
    return {"all": LabeledTexts(pos + neg, np.array([1] * len(pos) + [0] * len(neg)))}


def load_sst2(train: Path, dev: Path, test: Path) -> dict[str, LabeledTexts]:
    """SST/binary/sentiment-{train,dev,test}: `sentence TAB label` (0/1)."""
    return _named_splits(_read_sst, train=train, dev=dev, test=test)


def load_trec(train: Path, test: Path) -> dict[str, LabeledTexts]:
    """TREC/train_5500.label, TREC_10.label: `COARSE:fine question`; labels are the 6 coarse classes."""
    return _named_splits(_read_trec, train=train, test=test)


def load_mrpc(train: Path, test: Path) -> dict[str, SentencePairs]:
    """MRPC/msr_paraphrase_{train,test}.txt: TSV with header `Quality #1 ID #2 ID #1 String #2 String`."""
    return _named_splits(_read_mrpc, train=train, test=test)


TRANSFER_TASKS: dict[str, tuple[tuple[str, ...], Callable[..., dict[str, Split]]]] = {
    "MR": (("MR/rt-polarity.pos", "MR/rt-polarity.neg"), load_binary),
    "CR": (("CR/custrev.pos", "CR/custrev.neg"), load_binary),
    "SUBJ": (("SUBJ/subj.objective", "SUBJ/subj.subjective"), load_binary),
    "MPQA": (("MPQA/mpqa.pos", "MPQA/mpqa.neg"), load_binary),
    "SST-2": (("SST/binary/sentiment-train", "SST/binary/sentiment-dev", "SST/binary/sentiment-test"), load_sst2),
    "TREC": (("TREC/train_5500.label", "TREC/TREC_10.label"), load_trec),
    "MRPC": (("MRPC/msr_paraphrase_train.txt", "MRPC/msr_paraphrase_test.txt"), load_mrpc),
}


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """SentEval's MRPC features: [|u - v|, u * v], shape (n, 2d)."""
    return np.hstack([np.abs(u - v), u * v])


def validation_accuracies(train: Features, validation: Features) -> list[float]:
    """Validation accuracy (%) for each C of C_GRID, fitted on `train`."""
    model = _classifier(C_GRID[0])
    scores = []
    for c in C_GRID:  # ascending C: each fit warm-starts from the previous, more regularised one
        check_cancelled()  # a fit takes up to seconds: a cancelled evaluation stops between fits
        model.set_params(logisticregression__C=c).fit(*train)
        scores.append(accuracy_percent(validation[1], model.predict(validation[0])))
    return scores


def select_c_by_cv(train: Features, kfold: int = 10, seed: int = SENTEVAL_SEED) -> float:
    """The C of C_GRID with the best mean validation accuracy over stratified k folds of `train`."""
    X, y = train
    folds = StratifiedKFold(n_splits=kfold, shuffle=True, random_state=seed).split(X, y)
    mean_scores = np.mean([validation_accuracies((X[a], y[a]), (X[b], y[b])) for a, b in folds], axis=0)
    return C_GRID[int(np.argmax(mean_scores))]


def select_c_on_dev(train: Features, dev: Features) -> float:
    """The C of C_GRID with the best accuracy on `dev`."""
    return C_GRID[int(np.argmax(validation_accuracies(train, dev)))]


def heldout_accuracy(train: Features, test: Features, c: float) -> float:
    """Fit on `train` with C=c; accuracy (%) on `test`."""
    model = _classifier(c).fit(*train)
    return accuracy_percent(test[1], model.predict(test[0]))


def nested_cv_accuracy(data: Features, kfold: int = 10, seed: int = SENTEVAL_SEED,
                       show_progress: bool = False) -> tuple[float, list[float]]:
    """Mean outer-fold test accuracy (%) with C chosen by inner CV; also the C of each fold."""
    X, y = data
    folds = StratifiedKFold(n_splits=kfold, shuffle=True, random_state=seed).split(X, y)
    accuracies, chosen = [], []
    for a, b in tqdm(list(folds), desc="folds", leave=False, disable=not show_progress):
        chosen.append(select_c_by_cv((X[a], y[a]), kfold, seed))
        accuracies.append(heldout_accuracy((X[a], y[a]), (X[b], y[b]), chosen[-1]))
    return float(np.mean(accuracies)), chosen


def evaluate_transfer(encoder: TextEncoder, splits: dict[str, Split], *, kfold: int = 10,
                      seed: int = SENTEVAL_SEED, desc: str = "transfer", show_progress: bool = True
                      ) -> TransferScore:
    """Score one transfer task. Splits {"all"} -> nested CV; {"train", "dev", "test"} -> C on dev;
    {"train", "test"} -> C by CV on train. Every unique sentence is encoded once."""
    embeddings = SentenceEmbeddings(encoder, (s for split in splits.values() for s in split.sentences),
                                    desc=desc, show_progress=show_progress)
    features = {name: (_features(embeddings, split), split.labels) for name, split in splits.items()}
    sizes = {name: len(split.labels) for name, split in splits.items()}
    # Hundreds of small lbfgs fits: one BLAS thread each is several times faster than two
    # threads contending, especially on a shared machine.
    with threadpool_limits(limits=1):
        if set(features) == {"all"}:
            return TransferScore(*nested_cv_accuracy(features["all"], kfold, seed, show_progress), sizes)
        train, test = features["train"], features["test"]
        c = select_c_on_dev(train, features["dev"]) if "dev" in features else select_c_by_cv(train, kfold, seed)
        return TransferScore(heldout_accuracy(train, test, c), [c], sizes)


def sample_splits(splits: dict[str, Split], size: int, seed: int = SENTEVAL_SEED) -> dict[str, Split]:
    """At most `size` examples of each split: a fixed random sample, order kept (for a quick,
    approximate run; scores are not comparable to the full protocol's)."""
    if size < 1:
        raise ValueError(f"sample size must be >= 1, not {size}")
    return {name: _sample(split, size, seed) for name, split in splits.items()}


def transfer_loaders(config: EvaluationConfig) -> dict[str, Callable[[], dict[str, Split]]]:
    """Task name -> loader, in the papers' column order."""
    return {name: partial(load_files, name, config.data_dir, files, loader)
            for name, (files, loader) in TRANSFER_TASKS.items()}


def run_senteval(encoder: TextEncoder, config: EvaluationConfig) -> TaskResult:
    """The "senteval" task: the 7 transfer tasks present in config.data_dir; row "accuracy"."""
    def score(name: str, splits: dict[str, Split]) -> tuple[dict[str, float], dict]:
        result = evaluate_transfer(encoder, splits, kfold=config.kfold, seed=config.seed, desc=name,
                                   show_progress=config.show_progress)
        return {"accuracy": result.accuracy}, {"chosen_c": result.chosen_c, "sizes": result.sizes}

    result = run_datasets(transfer_loaders(config), score)
    low, high = (int(np.log2(c)) for c in (C_GRID[0], C_GRID[-1]))
    result.notes.append(f"Logistic regression on standardised frozen embeddings; C in 2^{low}..2^{high} "
                        f"(x4 steps) chosen by inner {config.kfold}-fold CV (MR, CR, SUBJ, MPQA: nested CV; "
                        f"TREC, MRPC: CV on train) or on dev (SST-2).")
    return result


def _classifier(c: float) -> Pipeline:
    return make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=MAX_ITER, warm_start=True))


def _features(embeddings: SentenceEmbeddings, split: Split) -> np.ndarray:
    if isinstance(split, SentencePairs):
        return pair_features(embeddings[split.first], embeddings[split.second])
    return embeddings[split.texts]


def _sample(split: Split, size: int, seed: int) -> Split:
    if len(split.labels) <= size:
        return split
    keep = np.sort(np.random.default_rng(seed).choice(len(split.labels), size, replace=False))
    if isinstance(split, SentencePairs):
        return SentencePairs([split.first[i] for i in keep], [split.second[i] for i in keep], split.labels[keep])
    return LabeledTexts([split.texts[i] for i in keep], split.labels[keep])


def _named_splits(read: Callable[[Path], Split], **paths: Path) -> dict[str, Split]:
    return {name: read(path) for name, path in paths.items()}


def _read_sst(path: Path) -> LabeledTexts:
    rows = read_tsv(path, columns=2)
    return LabeledTexts([row[0].strip() for row in rows], np.array([int(row[1]) for row in rows]))


def _read_trec(path: Path) -> LabeledTexts:
    labels, questions = [], []
    for line in read_sentences(path):
        label, _, question = line.partition(" ")
        if ":" not in label or not question.strip():
            raise ValueError(f"{path}: not `COARSE:fine question`: {line!r}")
        labels.append(label.split(":", 1)[0])
        questions.append(question.strip())
    return LabeledTexts(questions, np.array(labels))


def _read_mrpc(path: Path) -> SentencePairs:
    rows = read_tsv(path, columns=5, skip_header=True)
    return SentencePairs([row[3].strip() for row in rows], [row[4].strip() for row in rows],
                         np.array([int(row[0]) for row in rows]))
