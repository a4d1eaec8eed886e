"""Markdown tables of results, next to the papers' reference rows."""
from __future__ import annotations

import numpy as np

from .base import TaskResult
from .reference import REFERENCE_TABLES, ReferenceTable


def markdown_report(model: str, results: dict[str, TaskResult]) -> str:
    """One section per task: a table (reference rows, then ours in bold) and notes."""
    sections = [f"# Evaluation of `{model}`"]
    sections += [task_markdown(task, result, model) for task, result in results.items()]
    return "\n\n".join(sections) + "\n"


def task_markdown(task: str, result: TaskResult, model: str) -> str:
    """The section of one task. Avg. is over the columns shown, for the reference rows too, so a
    run that skipped datasets is still compared like for like."""
    reference = REFERENCE_TABLES.get(task)
    columns = _shown_columns(result, reference)
    lines = [f"## {reference.title if reference else task}", ""]  # the task's key only where it has no title
    if columns:
        lines += _table(columns, _rows(result, reference, model, columns), result.averaged)
    else:
        lines.append("Nothing was scored: see why below.")
    notes = ([f"Reference rows: {reference.source}."] if reference else [])
    shown = "the one column shown" if len(columns) == 1 else f"the {len(columns)} columns shown"
    notes += [f"Avg. over {shown}."] if columns and result.averaged else []
    notes += result.notes + [f"Skipped {message}" for message in result.missing.values()]
    notes.append(f"Time: {result.seconds:.0f} s.")
    return "\n".join(lines + [""] + [f"- {note}" for note in notes])


def _shown_columns(result: TaskResult, reference: ReferenceTable | None) -> list[str]:
    ours = [column for row in result.rows.values() for column in row]
    ordered = [column for column in (reference.columns if reference else ()) if column in ours]
    return ordered + [column for column in dict.fromkeys(ours) if column not in ordered]


def _rows(result: TaskResult, reference: ReferenceTable | None, model: str,
          columns: list[str]) -> list[tuple[str, list[float | None]]]:
    rows = []
    if reference:
        for name, scores in reference.rows.items():
            by_column = dict(zip(reference.columns, scores, strict=True))
            rows.append((name, [by_column.get(column) for column in columns]))
    for aggregation, scores in result.rows.items():
        label = f"**{model}**" if len(result.rows) == 1 else f"**{model}** ({aggregation})"
        rows.append((label, [scores.get(column) for column in columns]))
    return rows


def _table(columns: list[str], rows: list[tuple[str, list[float | None]]], averaged: bool = True) -> list[str]:
    header = columns + ["Avg."] if averaged else columns
    lines = ["| Model | " + " | ".join(header) + " |", "|---" * (len(header) + 1) + "|"]
    for label, values in rows:
        present = [value for value in values if value is not None]
        average = [float(np.mean(present)) if present else None] if averaged else []
        lines.append(f"| {label} | " + " | ".join(_cell(value) for value in values + average) + " |")
    return lines


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"
