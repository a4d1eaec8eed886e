"""Evaluation suite: unsupervised STS and SentEval transfer tasks for any text encoder; word
prediction and Vec2Sent diagnostics for Engine checkpoints.

    from core.evaluation import EvaluationConfig, evaluate, load_encoder
    encoder = load_encoder("glove")                   # or anything with encode(texts) -> (n, d)
    results = evaluate(encoder, EvaluationConfig(Path("../shared/data/senteval")))
    results["sts"].rows["all"]["STS-B"]              # Spearman x100

Command line: `python -m core eval --model minilm-st --out results/minilm-st.json`.
New tasks plug in through `register_task`.
"""
from .base import (
    EvaluationConfig,
    SentenceEmbeddings,
    TaskResult,
    TextEncoder,
    run_datasets,
)
from .baselines import ENCODERS, GloveAverageEncoder, load_encoder
from .files import LabeledTexts, MissingDataError, SentencePairs
from .metrics import accuracy_percent, paired_cosine, spearman_x100
from .report import markdown_report, task_markdown
from .runner import TASKS, evaluate, register_task, save_results
from .senteval import evaluate_transfer, run_senteval, sample_splits, transfer_loaders
from .sts import SINGLE_FILE_DATASETS, evaluate_sts, run_sts, sts_loaders

__all__ = [
    "accuracy_percent",
    "ENCODERS",
    "evaluate",
    "evaluate_sts",
    "evaluate_transfer",
    "EvaluationConfig",
    "GloveAverageEncoder",
    "LabeledTexts",
    "load_encoder",
    "markdown_report",
    "MissingDataError",
    "paired_cosine",
    "register_task",
    "run_datasets",
    "run_senteval",
    "run_sts",
    "sample_splits",
    "save_results",
    "SentenceEmbeddings",
    "SentencePairs",
    "SINGLE_FILE_DATASETS",
    "spearman_x100",
    "sts_loaders",
    "task_markdown",
    "TaskResult",
    "TASKS",
    "TextEncoder",
    "transfer_loaders",
]
