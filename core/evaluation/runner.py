"""The task registry and the evaluation run: encoder + config in, TaskResults and files out.

Other diagnostics (word prediction through the word head, Vec2Sent round trips) plug in with
`register_task("wordpred", run_word_prediction)`: a function (encoder, config) -> TaskResult.
A task with a table in reference.REFERENCE_TABLES gets the papers' rows beside its own.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Sequence

from .base import EvaluationConfig, TaskResult, TextEncoder
from .report import markdown_report
from .senteval import run_senteval
from .sts import run_sts

TaskFn = Callable[[TextEncoder, EvaluationConfig], TaskResult]
TASKS: dict[str, TaskFn] = {"sts": run_sts, "senteval": run_senteval}
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data" / "senteval"


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
