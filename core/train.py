"""DefSent training: definitions -> encoder -> pooled u -> frozen word head -> defined word.

Two stages:
1. the word head (only when the base has no pretrained masked-LM head): fitted with the encoder
   frozen, either on the training definitions (`fit_head`) or by masked-LM training on text
   (`restore_mlm_head`);
2. DefSent (`train`): cross-entropy of head(pool(encoder(definition))) against the word's token id,
   head and token embeddings frozen, Adam, linear warm-up over 10 % of the steps then constant.

    python -m core train --out checkpoints/defsent-minilm      # the shipped recipe (docs/training.md)
"""
from __future__ import annotations

import copy
import math
import random
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn

from .distill import Distillation, TeacherObjective
from .hardware import check_training_precision, train_mode
from .hubness import DEFAULT_K, DEFAULT_WEIGHT
from .lora import add_low_rank, merge_low_rank
from .word_eval import definition_pairs, evaluate_vectors
from .word_vectors import DEFAULT_SCALE


class TrainingCancelled(Exception):
    """Raised when `should_stop()` turned true; nothing has been saved."""


@dataclass
class TrainConfig:
    lr: float = 5e-5
    epochs: float = 1.0
    batch_size: int = 16
    warmup: float = 0.1           # fraction of steps with a linear warm-up, then constant
    trainable_layers: int = 0     # train only the top-n transformer layers (0 = all layers)
    lora_rank: int = 0            # > 0: train a rank-r delta of each layer's Linear weights instead
                                  # (core/lora.py; small checkpoints; wants a higher lr, e.g. 5e-4)
    drift_weight: float = 0.0     # weight of mean (1 - cos(u, u_base)): keeps similarity intact
    eval_every: int = 500         # steps between dev evaluations (checkpoint selection)
    sts_weight: float = 0.0       # selection score = dev MRR + sts_weight * STS-dev / 100
    head_lr: float = 0.0          # > 0: also train the head's transform, jointly (a first stage)
    max_steps: int = 0            # 0 = as many as `epochs` gives
    word_vector_scale: float = DEFAULT_SCALE  # recompute word vectors at the end (0 = none)
    word_vector_objective: bool = False  # train and select on head + word vectors (refreshed per evaluation)
    live_words: int = 0           # with word_vector_objective: a second loss over the batch's words and
                                  # this many random ones, embedded every step (gradient through them)
    hub_weight: float = DEFAULT_WEIGHT  # hubness correction computed at the end on the training
    hub_k: int = DEFAULT_K                # definitions (core/hubness.py; weight 0 = none)
    distill_weight: float = 1.0   # weight of the teacher's loss when a `Distillation` is given
    distill_batch: int = 32       # teacher sentences per step, besides the definitions
    distill_lr: float = 1e-3      # learning rate of the linear map to the teacher's space
    seed: int = 0
    precision: str = "float32"    # "bfloat16": autocast training steps and dev encodings (2.5x faster
                                  # steps on CPUs with native bfloat16; weights stay float32)

    def __post_init__(self) -> None:
        check_training_precision(self.precision)


@dataclass
class TrainProgress:
    step: int
    total_steps: int
    loss: float
    elapsed: float
    definitions_per_second: float
    dev: dict = field(default_factory=dict)   # last dev evaluation


@dataclass
class TrainResult:
    config: TrainConfig
    steps: int
    seconds: float
    best_step: int
    best_dev: dict
    history: list[dict]

    def to_dict(self) -> dict:
        return {**asdict(self), "config": asdict(self.config)}


# ---- stage 1: the word head -------------------------------------------------------------------

def fit_head(engine, texts: Sequence[str], gold: np.ndarray, vectors: np.ndarray | None = None,
             epochs: int = 10, lr: float = 1e-3, batch_size: int = 256, train_bias: bool = False,
             seed: int = 0, weight_decay: float = 0.0) -> np.ndarray:
    """Train the head's transform (and bias if `train_bias`) on definitions, encoder frozen.

    The bias stays zero by default: fitted on training words only, it would learn to push down
    every word that is not in the training split, i.e. exactly the unseen test words. Adam with
    decoupled `weight_decay` (AdamW): the head overfits the training words without it (docs/training.md).
    Returns the (cached) definition vectors so later stages need not recompute them.
    """
    vectors = engine.encode(texts) if vectors is None else vectors
    head = engine.head.train()
    params = [p for n, p in head.named_parameters() if n != "embeddings" and (train_bias or n != "bias")]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    u_all, y_all = torch.from_numpy(vectors), torch.from_numpy(gold)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for idx in torch.randperm(len(y_all), generator=generator).split(batch_size):
            loss = nn.functional.cross_entropy(head(u_all[idx]), y_all[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    head.eval()
    return vectors


def restore_mlm_head(engine, sentences: Sequence[str], steps: int = 2000, batch_size: int = 32,
                     lr: float = 1e-3, mask_rate: float = 0.15, seed: int = 0) -> None:
    """Masked-LM training of the head on `sentences` with the encoder frozen (token level)."""
    encoder, head = engine.encoder.eval(), engine.head.train()
    tokenizer = encoder.tokenizer
    params = [p for n, p in head.named_parameters() if n != "embeddings"]
    optimizer = torch.optim.Adam(params, lr=lr)
    rng = random.Random(seed)
    special = torch.tensor(sorted(set(tokenizer.all_special_ids)))
    for _ in range(steps):
        batch = encoder.tokenize(rng.sample(list(sentences), min(batch_size, len(sentences))))
        ids, mask = batch["input_ids"], batch["attention_mask"]
        chosen = (torch.rand(ids.shape) < mask_rate) & (mask == 1) & ~torch.isin(ids, special)
        if not chosen.any():
            continue
        with torch.no_grad():
            hidden = encoder.backbone(input_ids=ids.masked_fill(chosen, tokenizer.mask_token_id),
                                      attention_mask=mask).last_hidden_state  # (B, T, H)
        loss = nn.functional.cross_entropy(head(hidden[chosen]), ids[chosen])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    head.eval()


# ---- stage 2: DefSent -------------------------------------------------------------------------

def train(engine, train_entries, dev_entries, config: TrainConfig = TrainConfig(),
          progress: Callable[[TrainProgress], None] | None = None,
          should_stop: Callable[[], bool] | None = None,
          sts_dev: Callable[[object], float] | None = None,
          base_vectors: np.ndarray | None = None,
          distill: Distillation | None = None) -> TrainResult:
    """Fine-tune `engine.encoder` in place so that head(u) predicts each definition's word.

    The head stays frozen. Every `eval_every` steps the dev split is scored (MRR, plus STS-dev
    through `sts_dev(engine)` when given) and the best weights are kept; at the end the encoder
    holds the best weights. `should_stop()` is polled every step: when it turns true the encoder is
    restored to its starting weights and TrainingCancelled is raised. Dev scores use the head alone,
    or with `word_vector_objective` the head plus word vectors (then also in the loss, recomputed
    at every evaluation); at the end they are recomputed with `config.word_vector_scale`, and
    the hubness correction on the training definitions with `config.hub_k` and `config.hub_weight`.
    `base_vectors`: the untrained encoder's vectors of the training definitions (for the drift
    penalty), if already computed. `config.precision` "bfloat16" computes the steps and every
    encoding made during training in bfloat16 (autocast); the encoder's precision is restored after.
    `distill`: sentences with a larger encoder's vectors; each step adds `config.distill_weight` times
    the loss of predicting them (core/distill.py) on `config.distill_batch` of the sentences.
    `config.lora_rank` > 0 trains low-rank deltas only (core/lora.py), merged into the weights at the
    end and recorded in `engine.low_rank`, so that `engine.save` stores them as factors.
    """
    with _encoding_precision(engine, config.precision), _low_rank_merged(engine):
        return _train(engine, train_entries, dev_entries, config, progress, should_stop, sts_dev,
                      base_vectors, distill)


@contextmanager
def _low_rank_merged(engine):
    """Leave plain weights whatever happens; after a successful low-rank run, record its factors
    (added to those of a low-rank checkpoint it started from: the sum of two deltas, rank r1 + r2)."""
    try:
        yield
    except BaseException:
        merge_low_rank(engine.encoder.backbone)  # cancelled (weights restored) or failed: no factors kept
        raise
    for name, (B, A) in merge_low_rank(engine.encoder.backbone, prefix="backbone.").items():
        if name in engine.low_rank:
            B0, A0 = engine.low_rank[name]
            B, A = torch.cat([B0, B], dim=1), torch.cat([A0, A], dim=0)  # B0 A0 + B A
        engine.low_rank[name] = (B, A)
    engine.weights_changed()  # state-dict names changed back


@contextmanager
def _encoding_precision(engine, precision: str):
    """`engine.encode` computes in bfloat16 inside when `precision` says so (from float32 only)."""
    before = engine.encoder.precision
    if precision == "bfloat16" and before == "float32":
        engine.encoder.precision = "bfloat16"
    try:
        yield
    finally:
        engine.encoder.precision = before


def _train(engine, train_entries, dev_entries, config: TrainConfig, progress, should_stop, sts_dev,
           base_vectors, distill) -> TrainResult:
    torch.manual_seed(config.seed)
    texts, gold = definition_pairs(train_entries, engine.vocab)
    dev_texts, dev_gold = definition_pairs(dev_entries, engine.vocab)
    if not texts or not dev_texts:
        raise ValueError("training and dev splits need definitions of words the head can predict")
    if config.drift_weight and base_vectors is None:
        base_vectors = engine.encode(texts)
    params = _trainable_parameters(engine, config.trainable_layers, config.lora_rank)
    start_state = _snapshot(engine)  # after the low-rank deltas are attached (at zero): same weights
    start_scoring = engine.swap_word_scoring()  # scored on the moving encoder: recomputed below
    groups = [{"params": params, "lr": config.lr}]
    if config.head_lr:
        groups.append({"params": _head_transform_parameters(engine), "lr": config.head_lr})
    teacher = None
    if distill is not None and config.distill_weight:
        teacher = TeacherObjective(engine.encode, distill, config.seed)
        groups.append({"params": list(teacher.map.parameters()), "lr": config.distill_lr})
    optimizer = torch.optim.Adam(groups)
    steps_per_epoch = math.ceil(len(texts) / config.batch_size)
    total = config.max_steps or max(1, int(config.epochs * steps_per_epoch))
    warmup = max(1, int(config.warmup * total))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))

    def evaluate() -> dict:
        if config.word_vector_objective:  # the encoder moved: its words' own embeddings too
            engine.add_word_vectors(config.word_vector_scale)
        metrics = evaluate_vectors(engine, engine.encode(dev_texts), dev_gold)
        if sts_dev is not None:
            metrics["sts_dev"] = float(sts_dev(engine))
        if teacher is not None:
            metrics["teacher_loss"] = teacher.dev_loss(engine.encode)
        metrics["score"] = metrics["mrr"] + config.sts_weight * metrics.get("sts_dev", 0.0) / 100
        return metrics

    best = {"step": 0, "dev": evaluate(), "state": None}
    history = [{"step": 0, **best["dev"]}]
    order = _epoch_orders(len(texts), config.seed)
    t0, loss_avg, last_dev = time.time(), 0.0, best["dev"]
    for step in range(1, total + 1):
        if should_stop is not None and should_stop():
            _restore(engine, start_state)
            engine.swap_word_scoring(*start_scoring)
            raise TrainingCancelled(f"cancelled at step {step - 1} of {total}")
        idx = _next_batch(order, config.batch_size)
        with train_mode(engine.encoder):  # dropout for the step's forward passes only
            loss = _defsent_loss(engine, [texts[i] for i in idx], torch.from_numpy(gold[idx]),
                                 None if base_vectors is None else torch.from_numpy(base_vectors[idx]),
                                 config.drift_weight, config.live_words, config.precision)
            if teacher is not None:
                sentences, targets = teacher.next_batch(config.distill_batch)
                u = _embed(engine, sentences, config.precision)
                loss = loss + config.distill_weight * teacher.loss(u, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        loss_avg = 0.98 * loss_avg + 0.02 * loss.item() if step > 1 else loss.item()
        if step % config.eval_every == 0 or step == total:
            last_dev = evaluate()
            history.append({"step": step, "loss": loss_avg, **last_dev})
            if last_dev["score"] > best["dev"]["score"]:
                best = {"step": step, "dev": last_dev, "state": _snapshot(engine)}
        if progress is not None:
            elapsed = time.time() - t0
            progress(TrainProgress(step, total, loss_avg, elapsed,
                                   step * config.batch_size / max(elapsed, 1e-9), last_dev))
    _restore(engine, best["state"] or start_state)
    engine.head.requires_grad_(False)
    engine.weights_changed()
    engine.add_word_vectors(config.word_vector_scale)
    if config.hub_weight:
        engine.add_hub_penalty(texts, gold, config.hub_k, config.hub_weight)
    return TrainResult(config, total, time.time() - t0, best["step"], best["dev"], history)


def _defsent_loss(engine, texts: list[str], gold: torch.Tensor, base_u: torch.Tensor | None,
                  drift_weight: float, live_words: int = 0, precision: str = "float32") -> torch.Tensor:
    u = _embed(engine, texts, precision)  # (B, H)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bfloat16"):
        head_logits = engine.head(u)  # (B, V)
    u, head_logits = u.float(), head_logits.float()  # the loss in float32
    logits = head_logits
    if engine.word_vectors is not None:  # only with `word_vector_objective`; fixed vectors, grad through u
        logits = head_logits + engine.word_vectors.scores(u, head_logits.shape[1])
    loss = nn.functional.cross_entropy(logits, gold)
    if live_words and engine.word_vectors is not None:
        loss = loss + _live_words_loss(engine, u, head_logits, gold, live_words)
    if drift_weight and base_u is not None:
        loss = loss + drift_weight * (1 - nn.functional.cosine_similarity(u, base_u, dim=-1)).mean()
    return loss


def _embed(engine, texts: list[str], precision: str) -> torch.Tensor:
    """Sentence vectors (B, H) with gradient (bfloat16 autocast if asked), in the encoder's mode."""
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bfloat16"):
        return engine.encoder(**engine.encoder.tokenize(texts))  # (B, H)


def _live_words_loss(engine, u: torch.Tensor, head_logits: torch.Tensor, gold: torch.Tensor,
                     n_random: int) -> torch.Tensor:
    """Cross-entropy over the batch's words and `n_random` sampled words, all embedded now (with
    gradient), scored as head(u) + scale * cos(u, w): moves each word's own embedding towards its
    definitions. A softmax of its own: mixed with the stored (stale) vectors, the live ones could
    win by all drifting one way, which teaches nothing."""
    wv = engine.word_vectors
    candidates, target = torch.unique(torch.cat([gold, wv.ids[torch.randint(len(wv.ids), (n_random,))]]),
                                      return_inverse=True)  # (L,), target[:B] = gold's position
    w = engine.encoder(**engine.encoder.tokenize([engine.vocab.words[i] for i in candidates.tolist()]))  # (L, H)
    cos = nn.functional.normalize(u, dim=1) @ nn.functional.normalize(w, dim=1).T  # (B, L)
    logits = head_logits[:, candidates] + wv.scale * cos  # (B, L)
    return nn.functional.cross_entropy(logits, target[: len(gold)])


def _trainable_parameters(engine, top_layers: int, lora_rank: int = 0) -> list[nn.Parameter]:
    """Freeze the head, the embeddings and (if top_layers > 0) all but the top transformer layers;
    with `lora_rank` freeze the whole encoder and return new low-rank deltas (core/lora.py)."""
    for p in engine.head.parameters():
        p.requires_grad_(False)
    backbone = engine.encoder.backbone
    if lora_rank:
        if top_layers:
            raise ValueError("lora_rank and trainable_layers both choose what trains: give one")
        return add_low_rank(backbone, lora_rank)
    layers = backbone.encoder.layer if top_layers else []
    frozen = {id(p) for layer in layers[: len(layers) - top_layers] for p in layer.parameters()}
    frozen |= {id(p) for p in backbone.embeddings.parameters()}
    params = []
    for p in backbone.parameters():
        p.requires_grad_(id(p) not in frozen)
        if p.requires_grad:
            params.append(p)
    return params


def _head_transform_parameters(engine) -> list[nn.Parameter]:
    """The head's own transform (not the tied embeddings, not the bias), made trainable."""
    params = [p for n, p in engine.head.named_parameters() if n not in ("embeddings", "bias")]
    for p in params:
        p.requires_grad_(True)
    return params


def _snapshot(engine) -> dict[str, dict[str, torch.Tensor]]:
    """A copy of the weights training may change (encoder and head)."""
    return {"encoder": copy.deepcopy(engine.encoder.state_dict()),
            "head": copy.deepcopy(engine.head.own_state_dict())}


def _restore(engine, snapshot: dict[str, dict[str, torch.Tensor]]) -> None:
    engine.encoder.load_state_dict(snapshot["encoder"])
    engine.head.load_state_dict(snapshot["head"], strict=False)


def _epoch_orders(n: int, seed: int):
    """Endless stream of indices: a fresh shuffle of range(n) per epoch."""
    rng = np.random.default_rng(seed)
    while True:
        yield from rng.permutation(n)


def _next_batch(order, size: int) -> np.ndarray:
    return np.fromiter((next(order) for _ in range(size)), dtype=np.int64, count=size)


# ---- command line -----------------------------------------------------------------------------

def vocabulary_self_examples(vocab) -> tuple[list[str], np.ndarray]:
    """Every alphabetic whole-word token of 2+ letters as its own text, with its id ("dog" -> dog).

    Fitting the head on these as well teaches it every word, as masked-LM pretraining teaches a
    head, without any dictionary text: dev and test definitions stay unseen.
    """
    pairs = [(w, i) for i, w in enumerate(vocab.words) if w is not None and w.isalpha() and len(w) > 1]
    return [w for w, _ in pairs], np.array([i for _, i in pairs], dtype=np.int64)


def head_stage(engine, split, method: str, epochs: int, seed: int, weight_decay: float = 0.0) -> str:
    """Give a base without a pretrained masked-LM head its word head; returns how it was made."""
    if engine.manifest["head"]["origin"] != "new (untrained)" or method == "none":
        return engine.manifest["head"]["origin"]
    texts, gold = definition_pairs(split.train, engine.vocab)
    if method == "definitions+words":
        words, ids = vocabulary_self_examples(engine.vocab)
        fit_head(engine, texts + words, np.concatenate([gold, ids]), epochs=epochs, seed=seed,
                 weight_decay=weight_decay)
        return (f"fitted on the training definitions and {len(words)} vocabulary words as their own "
                f"texts ({epochs} epochs, weight decay {weight_decay}, encoder frozen, bias 0)")
    if method == "definitions":
        fit_head(engine, texts, gold, epochs=epochs, seed=seed, weight_decay=weight_decay)
        return (f"fitted on the training definitions ({epochs} epochs, weight decay {weight_decay}, "
                f"encoder frozen, bias 0)")
    sentences = sorted({s for e in split.train for s in (e.definition, *e.examples)})
    restore_mlm_head(engine, sentences, steps=epochs, seed=seed)
    return f"masked-LM training on {len(sentences)} WordNet sentences ({epochs} steps, encoder frozen)"


def sts_dev_scorer(senteval_dir: Path | None) -> Callable[[object], float] | None:
    """Spearman x100 on STS-B dev, for checkpoint selection; None when the data is absent."""
    dev_file = None if senteval_dir is None else senteval_dir / "STS/STSBenchmark/sts-dev.csv"
    if dev_file is None or not dev_file.is_file():
        return None
    from .evaluation.sts import evaluate_sts, load_sts_benchmark
    subsets = {"dev": load_sts_benchmark(dev_file)}
    return lambda engine: evaluate_sts(engine, subsets, show_progress=False).all
