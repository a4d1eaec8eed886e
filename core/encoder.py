"""Sentence encoder: a Hugging Face transformer plus a pooling layer.

`SentenceEncoder.from_pretrained(path)` accepts any Hugging Face checkpoint directory or hub id
(BERT, RoBERTa, ...), with or without a masked-LM head; the head, when present, is kept aside so the
word head can be built from it (see core/words/word_head.py).
"""
from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn

from .bert import Unsupported, load_bert
from .runtime.cancel import check_cancelled
from .runtime.device import autocast, module_device, resolve_precision
from .runtime.hardware import PRECISIONS, quantize_int8
from .runtime.imports import from_transformers
from .tokenizer import load_tokenizer, tokenize_padded

log = logging.getLogger(__name__)

POOLINGS = ("cls", "mean", "max")


def pool(hidden: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """Pool token states (B, T, H) with attention mask (B, T) into sentence vectors (B, H).

    Padding never contributes: it is excluded from the mean and set to -inf before the max.
    """
    if pooling == "cls":
        return hidden[:, 0]  # (B, H): [CLS] for BERT, <s> for RoBERTa
    m = mask.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
    if pooling == "mean":
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)
    if pooling == "max":
        return hidden.masked_fill(m == 0, torch.finfo(hidden.dtype).min).max(1).values
    raise ValueError(f"unknown pooling {pooling!r}; choose one of {POOLINGS}")


def check_texts(texts: Sequence[str]) -> list[str]:
    """Return `texts` as a list; raise ValueError for empty or whitespace-only entries."""
    texts = [texts] if isinstance(texts, str) else list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"text #{i} is empty or not a string: {text!r}")
    return texts


class SentenceEncoder(nn.Module):
    """Transformer backbone + pooling. `forward` maps token ids to sentence vectors (B, H)."""

    def __init__(self, backbone: nn.Module, tokenizer, pooling: str = "mean", max_length: int = 128):
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {pooling!r}; choose one of {POOLINGS}")
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.max_length = min(max_length, _model_max_length(backbone, tokenizer))
        self.precision = "float32"
        # Inference mode once, here: `encode` never switches modes, since another thread may be
        # in the middle of a forward pass (dropout switched on under it changes its answer).
        # Training switches to train mode on its own copy and back (core/train.py).
        self.eval()

    @classmethod
    def from_pretrained(cls, path: str | Path, pooling: str = "mean", max_length: int = 128
                        ) -> tuple["SentenceEncoder", nn.Module | None]:
        """Load a checkpoint; return (encoder, masked-LM head module or None if it has none)."""
        tokenizer = load_tokenizer(path)  # a BERT folder's without importing transformers (core/tokenizer.py)
        backbone, mlm_head = _load_backbone_and_head(str(path))
        return cls(backbone, tokenizer, pooling, max_length), mlm_head

    @property
    def hidden_size(self) -> int:
        return self.backbone.config.hidden_size

    @property
    def device(self) -> torch.device:
        """Where the encoder computes (`.to(device)` moves it; see core/runtime/device.py)."""
        return module_device(self)

    @property
    def word_embeddings(self) -> torch.Tensor:
        """The input token embedding matrix E (V, H); the word head's decoder is tied to it."""
        return self.backbone.get_input_embeddings().weight

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, H)
        return pool(hidden, attention_mask, self.pooling)  # (B, H)

    def set_precision(self, precision: str) -> None:
        """Compute `encode` in `precision` from now on (inference; training stays float32).

        "bfloat16": matrix products autocast to bfloat16, weights kept in float32 (fast on CPUs with
        AVX512-BF16 or AMX, slower than float32 on others). "int8": dynamic int8 quantisation
        (per output channel) of the backbone's Linear layers; it replaces them, so it cannot be
        undone, and runs on the CPU only. "auto": bfloat16 on a GPU or CPU that multiplies it natively
        (`core.runtime.device.bfloat16_native`), else float32. A bad value raises ValueError and changes nothing.
        """
        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}; choose one of {PRECISIONS}")
        precision = resolve_precision(precision, self.device)
        if precision == "int8" and self.device.type != "cpu":
            raise ValueError(f"int8 encoding runs on the CPU only, not on {self.device}: use bfloat16 there")
        if self.precision == "int8" and precision != "int8":
            raise ValueError("int8 quantisation cannot be undone: load the model again for another precision")
        if precision == "int8" and self.precision != "int8":
            quantize_int8(self.backbone)
        self.precision = precision

    def tokenize(self, texts: list[str], device: torch.device | None = None) -> dict[str, torch.Tensor]:
        """Tokenise with padding and truncation, on `device` (default: the CPU); warn when a text is
        cut at the model's maximum."""
        batch = tokenize_padded(self.tokenizer, texts, self.max_length)
        if batch["input_ids"].shape[1] == self.max_length:
            full = [len(ids) for ids in self.tokenizer(texts, add_special_tokens=True)["input_ids"]]
            cut = sum(n > self.max_length for n in full)
            if cut:
                warnings.warn(f"{cut} text(s) longer than {self.max_length} tokens were truncated",
                              stacklevel=3)
        if device is not None and device.type != "cpu":
            return {k: batch[k].pin_memory().to(device, non_blocking=True) for k in ("input_ids", "attention_mask")}
        return {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}

    @torch.inference_mode()
    def encode(self, texts: Sequence[str], batch_size: int = 64, normalize: bool = False,
               progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        """Embed texts: float32 array (n, H), row i for texts[i].

        Batches are formed from texts sorted by length (less padding), and the original order is
        restored. `normalize=True` returns unit vectors. `progress(done, total)` is called per batch.
        Cancelled (core.runtime.cancel) before a batch once the work was cancelled.
        Computed in `self.precision` (see `set_precision`) on `self.device`. Raises RuntimeError in train mode:
        dropout would make the vectors random, and switching modes here would race other threads.
        """
        texts = check_texts(texts)
        if self.training:
            raise RuntimeError("encode needs eval mode (dropout off): call .eval() first")
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.empty((len(texts), self.hidden_size), dtype=np.float32)
        device = self.device
        for start in range(0, len(texts), batch_size):
            check_cancelled()
            idx = order[start:start + batch_size]
            batch = self.tokenize([texts[i] for i in idx], device)
            with autocast(device, self.precision == "bfloat16"):
                vectors = self(**batch).float()  # (b, H)
            if normalize:
                vectors = nn.functional.normalize(vectors, dim=-1)
            out[idx] = vectors.cpu().numpy()
            if progress:
                progress(min(start + batch_size, len(texts)), len(texts))
        return out


def _model_max_length(backbone: nn.Module, tokenizer) -> int:
    positions = getattr(backbone.config, "max_position_embeddings", 512)
    if getattr(backbone.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
        positions -= 2  # RoBERTa offsets positions by the padding index
    tok_max = getattr(tokenizer, "model_max_length", positions) or positions
    return int(min(positions, tok_max))


def _load_backbone_and_head(path: str) -> tuple[nn.Module, nn.Module | None]:
    """Load with a masked-LM head when the checkpoint has trained head weights, else the bare model.

    BERT folders load with core/bert.py (no transformers import: seconds off the app's launch);
    anything else with transformers. A checkpoint saved without a head (all-MiniLM-L6-v2) would get
    a randomly initialised head from AutoModelForMaskedLM; we detect that from the loading info and
    return None for the head.
    """
    try:
        return load_bert(path, random_start=False)  # the file's weights only: no random start drawn first
    except Unsupported as err:
        log.info("loading %s with transformers (%s)", path, err)
    AutoModel, AutoModelForMaskedLM, hf_logging = from_transformers("AutoModel", "AutoModelForMaskedLM", "utils.logging")

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the "newly initialized weights" warning is expected here
    try:
        try:
            mlm, info = AutoModelForMaskedLM.from_pretrained(path, output_loading_info=True)
        except (ValueError, KeyError, OSError) as err:  # architectures without a masked-LM class
            log.info("no masked-LM class for %s (%s); loading the bare model", path, err)
            return AutoModel.from_pretrained(path, add_pooling_layer=False), None
        head_missing = [k for k in info.get("missing_keys", []) if not _is_tied_decoder_key(k)]
        backbone = mlm.base_model
        if head_missing:
            return backbone, None
        return backbone, _mlm_head_module(mlm)
    finally:
        hf_logging.set_verbosity(verbosity)


def _is_tied_decoder_key(key: str) -> bool:
    # The decoder weight is tied to the input embeddings, so its absence from the file is normal.
    return key.endswith("decoder.weight") or key.endswith("decoder.bias")


def _mlm_head_module(mlm: nn.Module) -> nn.Module:
    """The head module of a *ForMaskedLM model: BERT's `cls.predictions`, RoBERTa's `lm_head`."""
    if hasattr(mlm, "cls") and hasattr(mlm.cls, "predictions"):
        return mlm.cls.predictions
    if hasattr(mlm, "lm_head"):
        return mlm.lm_head
    raise ValueError(f"don't know where the masked-LM head of {type(mlm).__name__} is")


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """x (..., d) as float32 with each row scaled to length 1 (zero rows stay zero)."""
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def semantic_search(query_embeddings: np.ndarray, corpus_embeddings: np.ndarray,
                    top_k: int = 10) -> list[list[dict]]:
    """For each query, the top_k corpus rows by cosine: [{"corpus_id": j, "score": s}, ...]."""
    scores = l2_normalize(np.atleast_2d(query_embeddings)) @ l2_normalize(np.atleast_2d(corpus_embeddings)).T
    k = min(top_k, scores.shape[1])
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return [[{"corpus_id": int(j), "score": float(row[j])} for j in idx]
            for row, idx in zip(scores, top)]
