"""The task registry and the evaluation run: encoder + config in, TaskResults and files out.

Tasks: sts, senteval, words (word prediction through the word head), vec2sent (decoder
diagnostics). More plug in with `register_task(name, fn)`: a function (encoder, config) -> TaskResult.
A task with a table in reference.REFERENCE_TABLES gets the papers' rows beside its own.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Sequence

from core.paths import SENTEVAL_DIR

from .base import EvaluationConfig, TaskResult, TextEncoder
from .decoding import run_vec2sent
from .report import markdown_report
from .senteval import run_senteval
from .sts import run_sts
from .words import run_words

TaskFn = Callable[[TextEncoder, EvaluationConfig], TaskResult]
TASKS: dict[str, TaskFn] = {"sts": run_sts, "senteval": run_senteval, "words": run_words,
                            "vec2sent": run_vec2sent}
DEFAULT_DATA_DIR = SENTEVAL_DIR


def register_task(name: str, run: TaskFn) -> None:
    """Make a task selectable by name in `evaluate` and the CLI's --tasks."""
    TASKS[name] = run


def evaluate(encoder: TextEncoder, config: EvaluationConfig,
             tasks: Sequence[str] = ("sts", "senteval")) -> dict[str, TaskResult]:
    """Run the named tasks in order; each result records its wall time in `seconds`."""
    unknown = [task for task in tasks if task not in TASKS]
    if unknown:
        raise ValueError(f"unknown task(s) {', '.join(unknown)}; known: {', '.join(TASKS)}")
    results = {}
    for task in tasks:
        start = time.perf_counter()
        results[task] = TASKS[task](encoder, config)
        results[task].seconds = time.perf_counter() - start
    return results


def save_results(path: Path, model: str, config: EvaluationConfig, results: dict[str, TaskResult],
                 **extra: object) -> tuple[Path, Path]:
    """Write `path` (JSON: config, every score and detail, `extra`) and the Markdown report beside
    it (same name, .md); return both paths."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"model": model, "config": {key: str(value) if isinstance(value, Path) else value
                                         for key, value in asdict(config).items()},
              **extra, "tasks": {task: asdict(result) for task, result in results.items()}}
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    markdown = path.with_suffix(".md")
    markdown.write_text(markdown_report(model, results), encoding="utf-8")
    return path, markdown
