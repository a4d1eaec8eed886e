"""Scores as the papers report them: Spearman's rho x100 and accuracy in %."""
from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr


def paired_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(a[i], b[i]) for each row i; 0 where either vector is all zeros (e.g. all-OOV GloVe)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dots = np.einsum("ij,ij->i", a, b)
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def spearman_x100(predicted: np.ndarray, gold: np.ndarray) -> float:
    """Spearman's rank correlation x100 (ties get average ranks)."""
    return float(100 * spearmanr(predicted, gold).statistic)


def accuracy_percent(gold: np.ndarray, predicted: np.ndarray) -> float:
    """Share of exact label matches, in %."""
    gold, predicted = np.asarray(gold), np.asarray(predicted)
    if gold.shape != predicted.shape or gold.size == 0:
        raise ValueError(f"need two non-empty label arrays of one shape, got {gold.shape} and {predicted.shape}")
    return float(100 * np.mean(gold == predicted))
