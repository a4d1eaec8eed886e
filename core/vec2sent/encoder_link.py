"""What Vec2Sent needs from the sentence encoder, taken from the lead's `core.engine.Engine`.

Training and diagnostics are written against `EncoderLink`, so tests can use a tiny stand-in.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

Encode = Callable[[list[str]], np.ndarray]  # texts -> (n, sent_dim) float32, not normalised
TopWord = Callable[[list[str]], list[str]]  # texts -> the word head's top-1 word for each
VectorWords = Callable[[np.ndarray, int], list[list[str]]]  # vectors (n, d), k -> the head's top-k words


@dataclass
class EncoderLink:
    """An encoder as Vec2Sent sees it. `tokenizer` is a Hugging Face tokenizer with its vocabulary."""
    name: str
    fingerprint: str
    encode: Encode
    tokenizer: Any
    top_word: TopWord | None = None
    vector_words: VectorWords | None = None
    precision: str = "float32"  # of `encode`; embeddings cached in another precision are kept apart

    @property
    def precision_tag(self) -> str:
        return "" if self.precision == "float32" else f"-{self.precision}"


def link_engine(path: Path, batch_size: int = 64, precision: str = "float32", device="cpu") -> EncoderLink:
    """Load the encoder checkpoint at `path` with core.engine.Engine, encoding at `precision` on `device`."""
    from core.engine import Engine

    path = Path(path)
    engine = Engine.load(path, precision=precision, device=device)
    return EncoderLink(
        name=engine.manifest.get("name", path.name),
        fingerprint=engine.fingerprint,
        encode=lambda texts: engine.encode(texts, batch_size=batch_size, normalize=False),
        tokenizer=engine.encoder.tokenizer,
        top_word=lambda texts: top_words(engine, texts),
        vector_words=lambda vectors, k: [[w for w, _ in ranked] for ranked in engine.words.ranked(vectors, k)],
        precision=precision,
    )


def top_words(engine, texts: list[str]) -> list[str]:
    """The word head's top-1 word for each text (for the round-trip check: a text's own words count, so that
    a sentence and its decoding are compared on the same terms)."""
    return [ranked[0][0] for ranked in engine.predict_words_batch(texts, k=1, exclude_query_words=False)]

