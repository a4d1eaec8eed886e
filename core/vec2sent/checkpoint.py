"""A Vec2Sent checkpoint directory, and the loaded decoder that turns vectors into sentences.

    config.json        Vec2SentConfig
    model.safetensors  weights in fp16 (only safetensors is ever read: nothing is unpickled)
    vocab.json         compact vocabulary with its mapping to the encoder's token ids
    truecase.json      (optional) usual capitals of words, learned from a cased corpus (truecase.py)
    manifest.json      the encoder whose embeddings it decodes (name + fingerprint), training stats

A decoder only understands the embedding space it was trained on, so loading requires the
fingerprint of the encoder in use and refuses a different one.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from core.checkpoint import atomic_directory
from core.runtime.device import module_device, resolve_precision
from core.runtime.hardware import PRECISIONS, quantised_engine
from core.vec2sent.decode import LENGTH_ALPHA, beam_search_nbest, greedy_decode
from core.vec2sent.model import Vec2SentConfig, Vec2SentDecoder
from core.vec2sent.transformer import TransformerConfig, TransformerDecoder
from core.vec2sent.truecase import TrueCaser
from core.vec2sent.vocab import PieceVocab

CONFIG, WEIGHTS, VOCAB, MANIFEST = "config.json", "model.safetensors", "vocab.json", "manifest.json"
TRUECASE = "truecase.json"
FORMAT = "vec2sent/1"


DecoderConfig = Vec2SentConfig | TransformerConfig
Decoder = Vec2SentDecoder | TransformerDecoder


def read_config(path: Path) -> DecoderConfig:
    """The config.json of either architecture (one without an "architecture" key is an LSTM's)."""
    architecture = json.loads(Path(path).read_text(encoding="utf-8")).get("architecture", "lstm")
    if architecture not in ("lstm", "transformer"):
        raise ValueError(f"{path}: unknown decoder architecture {architecture!r}")
    return (TransformerConfig if architecture == "transformer" else Vec2SentConfig).load(Path(path))


def build_decoder(config: DecoderConfig) -> Decoder:
    """A freshly initialised decoder of the config's architecture."""
    return TransformerDecoder(config) if isinstance(config, TransformerConfig) else Vec2SentDecoder(config)


class EncoderMismatchError(ValueError):
    """The decoder was trained on another encoder's embeddings."""


@dataclass
class Vec2Sent:
    """A trained decoder with its vocabulary: `decode(vectors) -> sentences`."""
    model: Decoder
    vocab: PieceVocab
    manifest: dict
    truecaser: TrueCaser | None = None  # restores capitals in the output (the vocabulary is uncased)

    def decode(self, vectors: np.ndarray, beam_width: int = 1, alpha: float = LENGTH_ALPHA,
               max_length: int | None = None, batch_size: int = 256) -> list[str]:
        """The likeliest sentence for each row of `vectors` (n, sent_dim); greedy when beam_width == 1. The
        sentence that means the vector best is often another of the beam's: reranked, corrected and refined
        decodings are `core.vec2sent.reading.read`'s (docs/vec2sent.md)."""
        return [hypotheses[0] for hypotheses in self.hypotheses(vectors, beam_width, alpha, max_length, batch_size)]

    def hypotheses(self, vectors: np.ndarray, beam_width: int = 1, alpha: float = LENGTH_ALPHA,
                   max_length: int | None = None, batch_size: int = 256) -> list[list[str]]:
        """Per row of `vectors` (n, sent_dim), the texts of the final beam, likeliest first (one
        text, the greedy one, when beam_width == 1)."""
        vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if vectors.ndim != 2 or vectors.shape[1] != self.model.config.sent_dim:
            raise ValueError(f"vectors have shape {vectors.shape}, the decoder expects (n, "
                             f"{self.model.config.sent_dim})")
        bad = np.flatnonzero(~np.isfinite(vectors).all(1) | ~vectors.any(1))
        if len(bad):
            raise ValueError(f"vector {bad[0]} is {'zero' if np.isfinite(vectors[bad[0]]).all() else 'not finite'}: "
                             "only a finite vector with a direction can be decoded (a - a has none)")
        max_length = max_length or self.model.config.max_length
        if self.model.int8_output is not None:
            # int8 products quantise each call's inputs with one scale: sentences decoded together
            # would change each other's output, so each is decoded on its own
            batch_size = 1
        texts = []
        for start in range(0, len(vectors), batch_size):
            batch = torch.from_numpy(vectors[start:start + batch_size]).to(module_device(self.model))
            if beam_width == 1:
                texts.extend([self._text(row)] for row in greedy_decode(self.model, batch, max_length))
            else:
                texts.extend([self._text(h) for h in hypotheses]
                             for hypotheses in beam_search_nbest(self.model, batch, beam_width, alpha, max_length))
        return texts

    def _text(self, ids: list[int]) -> str:
        return self.cased(self.vocab.to_text(ids))

    def cased(self, text: str) -> str:
        """`text` with the capitals the truecaser restores (as it is without one)."""
        return self.truecaser.apply(text) if self.truecaser else text


def save_checkpoint(target: Path, model: Decoder, vocab: PieceVocab, manifest: dict,
                    truecaser: TrueCaser | None = None) -> Path:
    """Write the checkpoint atomically: into a temporary folder beside `target`, fsynced, then renamed.

    `manifest` must name the encoder: {"encoder": {"name": ..., "fingerprint": ...}, ...}. An existing
    `target` is replaced only once the new checkpoint is complete; on any error nothing is left behind.
    """
    target = Path(target)
    _encoder_fingerprint(manifest, target)  # refuse to write a checkpoint that could never be loaded
    with atomic_directory(target) as staging:
        model.config.save(staging / CONFIG)
        weights = {k: v.detach().to("cpu", torch.float16).contiguous() for k, v in model.state_dict().items()}
        save_file(weights, str(staging / WEIGHTS))
        (staging / VOCAB).write_text(json.dumps(vocab.to_json()) + "\n", encoding="utf-8")
        (staging / MANIFEST).write_text(json.dumps({"format": FORMAT, **manifest}, indent=2) + "\n",
                                        encoding="utf-8")
        if truecaser is not None:
            truecaser.save(staging / TRUECASE)
    return target


def read_checkpoint(path: Path) -> tuple[Decoder, PieceVocab, dict]:
    """The float32 model, vocabulary and manifest of a checkpoint, whichever encoder it was trained
    on (to decode, use `load_checkpoint`, which checks the encoder)."""
    path = Path(path)
    manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {FORMAT} checkpoint (format {manifest.get('format')!r})")
    config = read_config(path / CONFIG)
    vocab = PieceVocab.from_json(json.loads((path / VOCAB).read_text(encoding="utf-8")))
    if len(vocab) != config.vocab_size:
        raise ValueError(f"{path}: vocab.json has {len(vocab)} pieces, config says {config.vocab_size}")
    model = build_decoder(config)
    model.load_state_dict({k: v.float() for k, v in load_file(str(path / WEIGHTS)).items()}, strict=True)
    return model, vocab, manifest


def load_checkpoint(path: Path, encoder_fingerprint: str, precision: str = "auto",
                    device: torch.device | None = None) -> Vec2Sent:
    """Load a checkpoint for the encoder with `encoder_fingerprint`; raise EncoderMismatchError if it
    was trained on another encoder.

    `precision` of the weights for decoding: "float32", "bfloat16" (~2x faster than float32 on CPUs
    with native bfloat16 instructions), "int8" (the output layer and the LSTM's matrices in int8, the
    rest in bfloat16 where native, else float32: another ~1.8x, the same BLEU and Id on 1,000 held-out
    sentences) or "auto" (int8 where torch has a quantised engine, else as bfloat16 where native,
    else float32; see bench/bench_decode.py and docs/vec2sent.md). On another `device` than the CPU
    (core/runtime/device.py), where int8 is refused, "auto" is bfloat16 where the device multiplies it natively.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown decoder precision {precision!r}; choose one of {PRECISIONS}")
    device = device or torch.device("cpu")
    model, vocab, manifest = read_checkpoint(path)
    trained_on = _encoder_fingerprint(manifest, path)
    if trained_on != encoder_fingerprint:
        raise EncoderMismatchError(
            f"Vec2Sent decoder {path} decodes embeddings of encoder {manifest['encoder'].get('name')!r} "
            f"(fingerprint {trained_on}), but the encoder in use has fingerprint {encoder_fingerprint}; "
            f"train a decoder for this encoder (python -m core vec2sent-train)")
    if precision == "int8" and device.type != "cpu":
        raise ValueError(f"int8 decoding runs on the CPU only, not on {device}: use bfloat16 there")
    if precision == "auto" and quantised_engine() and device.type == "cpu":
        precision = "int8"
    if resolve_precision("auto" if precision == "int8" else precision, device) == "bfloat16":
        model = model.to(torch.bfloat16)
    if precision == "int8":
        model.quantize()
    model.to(device)
    truecaser = TrueCaser.load(path / TRUECASE) if (Path(path) / TRUECASE).is_file() else None
    return Vec2Sent(model.eval(), vocab, manifest, truecaser)


def _encoder_fingerprint(manifest: dict, where: Path) -> str:
    fingerprint = manifest.get("encoder", {}).get("fingerprint")
    if not fingerprint:
        raise ValueError(f"{where}: manifest names no encoder fingerprint")
    return fingerprint
