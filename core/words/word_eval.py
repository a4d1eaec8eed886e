"""Word-prediction evaluation (DefSent Table 2 protocol): MRR and top-1/3/10 accuracy.

The gold word of a definition is ranked among all vocabulary tokens by the word head's score.

    python -m core eval --tasks words                    # the shipped model on the WordNet test split
    python -m core eval --model checkpoints/NAME --tasks words --words-split dev
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..runtime.cancel import check_cancelled

TOPS = (1, 3, 10)


def rank_metrics(logits: torch.Tensor, gold: torch.Tensor) -> dict[str, float]:
    """MRR and top-k accuracy of gold ids (n,) under logits (n, V)."""
    return metrics_from_ranks(rank_of_gold(logits, gold))


def metrics_from_ranks(ranks: torch.Tensor) -> dict:
    """MRR, top-1/3/10 accuracy and n from 1-based ranks (n,)."""
    ranks = ranks.float()
    if not len(ranks):
        raise ValueError("no examples to evaluate")
    result = {"mrr": float((1.0 / ranks).mean())}
    for k in TOPS:
        result[f"top{k}"] = float((ranks <= k).float().mean())
    result["n"] = int(len(ranks))
    return result


def rank_of_gold(logits: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    """1-based rank (n,) of each gold id among the logits (n, V); ties count against the gold."""
    gold_scores = logits.gather(1, gold.view(-1, 1))  # (n, 1)
    others = torch.ones_like(logits, dtype=torch.bool).scatter_(1, gold.view(-1, 1), False)
    return ((logits >= gold_scores) & others).sum(1) + 1


def definition_pairs(entries, vocab) -> tuple[list[str], np.ndarray]:
    """(definitions, gold token ids) for entries whose word is one vocabulary token."""
    texts, ids = [], []
    for entry in entries:
        token_id = vocab.token_id(entry.word)
        if token_id is not None:
            texts.append(entry.definition)
            ids.append(token_id)
    return texts, np.array(ids, dtype=np.int64)


def evaluate_vectors(engine, vectors: np.ndarray, gold: np.ndarray, batch_size: int = 512) -> dict:
    """Rank metrics for precomputed sentence vectors (n, d) against gold ids (n,)."""
    ranks = []
    for start in range(0, len(gold), batch_size):
        check_cancelled()
        logits = engine.words.logits(vectors[start:start + batch_size])
        ranks.append(rank_of_gold(logits, torch.from_numpy(gold[start:start + batch_size])))
    return metrics_from_ranks(torch.cat(ranks) if ranks else torch.zeros(0))


def evaluate_words(engine, entries, batch_size: int = 128, progress=None) -> dict:
    """MRR / top-1/3/10 of `engine` on dictionary entries (words that are not one token skipped)."""
    texts, gold = definition_pairs(entries, engine.words.vocab)
    if not texts:
        raise ValueError("none of the entries has a word the head can predict (one vocabulary token)")
    return evaluate_vectors(engine, engine.encode(texts, batch_size=batch_size, progress=progress), gold)


def write_word_scoring(engine, model, split, parts: Sequence[str], label: str) -> dict[str, dict]:
    """Evaluate `engine` on the `parts` of `split` ("dev", "test") and store its word vectors and
    hubness correction in the checkpoint `model` with those metrics, rows named "PART, LABEL"."""
    metrics = {f"{part}, {label}": evaluate_words(engine, getattr(split, part)) for part in parts}
    engine.save_word_scoring(model, metrics)
    print(format_table(metrics))
    return metrics


def format_table(rows: dict[str, dict]) -> str:
    """Markdown table: one row per model name."""
    lines = ["| model | n | MRR | top-1 | top-3 | top-10 |", "|---|---:|---:|---:|---:|---:|"]
    for name, m in rows.items():
        lines.append(f"| {name} | {m['n']} | {m['mrr']:.4f} | {m['top1']:.4f} | {m['top3']:.4f} | {m['top10']:.4f} |")
    return "\n".join(lines)
