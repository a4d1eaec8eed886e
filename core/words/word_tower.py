"""The word tower of the open vocabulary: the encoder with its own low-rank delta (core/lora.py),
trained so that a candidate's embedding predicts the definitions of that candidate.

    factors = fit_word_tower(encoder, definitions, gold, words)   # the DefSent objective, 147k words
    tower = word_tower(encoder, factors)                           # a copy; `encoder` is untouched
    vectors = tower.encode(words)                                  # what OpenScorer's word channel uses

The objective is DefSent's with the roles of the two sides kept: a definition's embedding u (the
frozen encoder, as every query is embedded) must pick its word among all candidates,
softmax_c(tau * cos(u, tower(c))), with sampled negatives. Unlike a free output vector per word,
the tower embeds any string, so it reaches words it never trained on (the leak-free evaluation's
held-out words). It replaced a linear map of the frozen encoder's word vectors: leak-free WordNet
test acc@10 .296 -> .318 after one epoch (docs/results.md, "Open vocabulary").
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch
from safetensors.torch import load_file, save_file

from ..checkpoint import fingerprint
from ..runtime.device import autocast
from ..encoder import SentenceEncoder
from ..lora import SUFFIX_A, SUFFIX_B, add_low_rank, merge_low_rank, stored_factors

WORD_TOWER = "open_vocab_tower.safetensors"
Factors = dict[str, tuple[torch.Tensor, torch.Tensor]]  # {backbone weight name: (B, A)}


@dataclass(frozen=True)
class WordTowerConfig:
    """How `fit_word_tower` trains: `batch_size` definitions a step, their words and `negatives`
    random candidates embedded by the tower; AdamW, warm-up then cosine decay of `lr`."""
    epochs: int = 1
    rank: int = 16
    batch_size: int = 256
    negatives: int = 1024
    lr: float = 5e-4
    warmup_steps: int = 50
    seed: int = 0


def fit_word_tower(encoder: SentenceEncoder, definitions: torch.Tensor, gold: torch.Tensor, words: Sequence[str],
                   config: WordTowerConfig = WordTowerConfig(),
                   progress: Callable[[int, int, float], None] | None = None) -> Factors:
    """Low-rank factors for `encoder` such that tower(words[gold[i]]) is the nearest candidate to
    definitions[i] (N, d). `encoder` is not changed. `progress(step, steps, mean loss)` every 20
    steps and at the end. About 4 s a step on 2 cores with the defaults (MiniLM)."""
    if encoder.precision == "int8":
        raise ValueError("the word tower trains the float weights: use a float32 or bfloat16 engine, not int8")
    generator = torch.Generator().manual_seed(config.seed)
    tower = copy.deepcopy(encoder)
    tower.precision = "float32"
    params = add_low_rank(tower.backbone, config.rank)
    device = tower.device
    log_tau = torch.nn.Parameter(torch.tensor(math.log(20.0), device=device))
    optimizer = torch.optim.AdamW([{"params": params, "weight_decay": 0.0}, {"params": [log_tau]}], lr=config.lr)
    queries = torch.nn.functional.normalize(definitions.float(), dim=1).to(device)  # (N, d)
    per_epoch = max(1, len(gold) // config.batch_size)
    steps, losses = config.epochs * per_epoch, []
    for step in range(steps):
        if step % per_epoch == 0:
            order = torch.randperm(len(gold), generator=generator)
        idx = order[(step % per_epoch) * config.batch_size:][:config.batch_size]  # (b,)
        sampled = torch.randint(len(words), (config.negatives,), generator=generator)
        rows, target = torch.unique(torch.cat([gold[idx], sampled]), return_inverse=True)  # (R,)
        for group in optimizer.param_groups:
            group["lr"] = _learning_rate(config, step, steps)
        with autocast(device, True):
            vectors = tower(**tower.tokenize([words[i] for i in rows.tolist()], device)).float()  # (R, d)
        logits = log_tau.exp() * (queries[idx.to(device)] @ torch.nn.functional.normalize(vectors, dim=1).T)  # (b, R)
        loss = torch.nn.functional.cross_entropy(logits, target[:len(idx)].to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if progress is not None and ((step + 1) % 20 == 0 or step + 1 == steps):
            progress(step + 1, steps, sum(losses[-20:]) / len(losses[-20:]))
    # stored as float16: round now, so the fitted engine answers as its saved checkpoint will
    return {name: (B.half().float().cpu(), A.half().float().cpu())
            for name, (B, A) in merge_low_rank(tower.backbone).items()}


def _learning_rate(config: WordTowerConfig, step: int, steps: int) -> float:
    warmup = min(1.0, (step + 1) / config.warmup_steps)
    return config.lr * warmup * 0.5 * (1 + math.cos(math.pi * step / steps))


def word_tower(encoder: SentenceEncoder, factors: Factors) -> SentenceEncoder:
    """A copy of `encoder` with each weight W replaced by W + B @ A (its precision kept); W includes a
    low-rank training delta attached to `encoder`. An int8 encoder has no float weights to add to: ValueError."""
    if encoder.precision == "int8":
        raise ValueError("the open vocabulary's word tower needs the float weights: embed the candidates "
                         "with a float32 or bfloat16 engine (the vectors are cached per model)")
    tower = copy.deepcopy(encoder)
    state = tower.backbone.state_dict()
    keys = {name: _stored_weight(name, state) for name in factors}
    unknown = sorted(name for name, key in keys.items() if key is None)
    if unknown:
        raise ValueError(f"word tower factors for weights the encoder does not have: {unknown[:3]}")
    with torch.no_grad():
        for name, (B, A) in factors.items():
            weight = state[keys[name]]
            weight.add_((B.float() @ A.float()).to(weight))  # (out, in), its dtype and device
    return tower


def _stored_weight(name: str, state: dict[str, torch.Tensor]) -> str | None:
    """The state-dict key holding weight `name`: itself, or, while a low-rank delta is attached (a low-rank
    fine-tune in progress), the parametrised layer's original weight, to which the delta is still added.
    (Not merged in the copy: a deep copy shares its parametrised class, whose removal would break `encoder`.)"""
    if name in state:
        return name
    original = name.removesuffix(".weight") + ".parametrizations.weight.original"
    return original if original in state else None


def save_word_tower(factors: Factors, path: Path) -> None:
    """The factors as NAME.lora_B / NAME.lora_A, float16 (about 1.3 MB for MiniLM at rank 16)."""
    save_file(_stored(factors), str(path))


def load_word_tower(path: Path) -> Factors:
    return stored_factors(load_file(str(path)))


def tower_fingerprint(factors: Factors | None) -> str:
    """Identifies the factors ("none" without a tower): part of the open vocabulary's cache key."""
    return fingerprint(_stored(factors)) if factors else "none"


def _stored(factors: Factors) -> dict[str, torch.Tensor]:
    """{NAME.lora_B: B, NAME.lora_A: A} in float16, as the checkpoint file holds them."""
    return {name + suffix: t.half().contiguous() for name, pair in factors.items()
            for suffix, t in zip((SUFFIX_B, SUFFIX_A), pair)}
