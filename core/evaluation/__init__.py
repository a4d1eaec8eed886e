"""Evaluation suite: unsupervised STS and SentEval transfer tasks for any text encoder; word
prediction and Vec2Sent diagnostics for Engine checkpoints.

    from core.evaluation import EvaluationConfig, evaluate, load_encoder
    encoder = load_encoder("glove")                   # or anything with encode(texts) -> (n, d)
    results = evaluate(encoder, EvaluationConfig(Path("../shared/data/senteval")))
    results["sts"].rows["all"]["STS-B"]              # Spearman x100

Command line: `python -m core eval --model minilm-st --out results/minilm-st.json`.
New tasks plug in through `register_task`.
"""
from .base import EvaluationConfig, SentenceEmbeddings, TaskResult, TextEncoder
from .baselines import ENCODERS, GloveAverageEncoder, load_encoder
from .files import LabeledTexts, MissingDataError, SentencePairs
from .metrics import accuracy_percent, paired_cosine, spearman_x100
from .report import markdown_report
from .runner import TASKS, evaluate, register_task, save_results
from .senteval import evaluate_transfer, run_senteval
from .sts import evaluate_sts, run_sts

__all__ = [
    "ENCODERS", "TASKS", "EvaluationConfig", "GloveAverageEncoder", "LabeledTexts", "MissingDataError",
    "SentenceEmbeddings", "SentencePairs", "TaskResult", "TextEncoder", "accuracy_percent", "evaluate",
    "evaluate_sts", "evaluate_transfer", "load_encoder", "markdown_report", "paired_cosine",
    "register_task", "run_senteval", "run_sts", "save_results", "spearman_x100",
]
