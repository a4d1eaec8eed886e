"""DefSent training: definitions -> encoder -> pooled u -> frozen word head -> defined word.

Two stages:
1. the word head (only when the base has no pretrained masked-LM head): fitted with the encoder
   frozen on the training definitions, and on the vocabulary words as their own texts (`fit_head`);
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
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
import torch
from torch import nn

from .runtime import distributed
from .runtime.device import OutOfDeviceMemory, autocast, out_of_memory_message, release_cached_memory
from .runtime.hardware import check_training_precision, train_mode
from .words.hubness import DEFAULT_K, DEFAULT_WEIGHT, TUNED_REFERENCES, scaled_k
from .lexicon.dictionary import Entry, definition_key, load_wordnet, split_by_word
from .lora import add_low_rank, merge_low_rank
from .words.open_vocab import Candidates, OpenScorer
from .words.word_eval import definition_pairs, evaluate_vectors, metrics_from_ranks, rank_of_gold
from .words.word_vectors import DEFAULT_SCALE, WordVectors


HEAD_STAGES = ("definitions", "definitions+words", "none")  # how a base without a masked-LM head gets one
NO_TOKEN = -100  # the gold token of a definition whose word is not one token: no head loss (own words)
MAX_REHEARSAL = 256  # rehearsed definitions a batch (`TrainConfig.rehearsal`)


class TrainingCancelled(Exception):
    """Raised when `should_stop()` turned true; nothing has been saved."""


@dataclass
class TrainConfig:
    lr: float = 5e-5              # AdamW's learning rate
    epochs: float = 1.0           # passes over the training definitions
    batch_size: int = 16          # definitions a step
    warmup: float = 0.1           # fraction of steps with a linear warm-up, then constant
    trainable_layers: int = 0     # train only the top-n transformer layers (0 = all layers)
    lora_rank: int = 0            # > 0: train a rank-r delta of each layer's Linear weights instead
                                  # (core/lora.py; small checkpoints; wants a higher lr, e.g. 5e-4)
    eval_every: int = 500         # steps between dev evaluations (checkpoint selection on dev MRR)
    max_steps: int = 0            # 0 = as many as `epochs` gives
    word_vector_scale: float = DEFAULT_SCALE  # recompute word vectors at the end (0 = none)
    word_vector_objective: bool = False  # train and select on head + word vectors (refreshed per evaluation)
    hub_weight: float = DEFAULT_WEIGHT  # weight of the hubness correction computed at the end on the
                                        # training definitions (core/words/hubness.py; 0 = none)
    hub_k: int = DEFAULT_K        # the correction's neighbours a definition
    hub_references: int = 0       # at least this many references for it: WordNet training definitions
                                  # (not of the training words) added to a small dictionary's
    seed: int = 0                 # of the initial weights, the batches' order and the rehearsed definitions
    precision: str = "float32"    # "bfloat16": autocast training steps and dev encodings (2.5x faster
                                  # steps on CPUs with native bfloat16; weights stay float32)
    own_words: bool = False       # every word of the training dictionary trains, phrases and words of
                                  # several pieces too (`OwnWords`), and dev ranks among its own words
    rehearsal: int = 0            # WordNet training definitions (not of the dictionary's words) added to
                                  # every batch, scored by the head: a small dictionary's run keeps what
                                  # the model knew (`rehearsal_pairs`)

    def __post_init__(self) -> None:
        check_training_precision(self.precision)
        for name, ok, rule in (("lr", self.lr > 0, "above 0"), ("epochs", self.epochs > 0, "above 0"),
                               ("batch_size", self.batch_size >= 1, "at least 1"),
                               ("eval_every", self.eval_every >= 1, "at least 1"),
                               ("warmup", 0 <= self.warmup <= 1, "from 0 to 1"),
                               ("max_steps", self.max_steps >= 0, "at least 0"),
                               ("trainable_layers", self.trainable_layers >= 0, "at least 0"),
                               ("lora_rank", self.lora_rank >= 0, "at least 0")):
            if not ok:
                raise ValueError(f"{name} must be {rule}, not {getattr(self, name)}")
        if self.hub_weight and self.hub_k < 1:  # refused before training, not after it
            raise ValueError(f"the hubness correction needs hub_k >= 1 (got {self.hub_k}); or hub_weight 0 for none")
        if not 0 <= self.hub_references <= TUNED_REFERENCES:
            raise ValueError(f"hub_references must be from 0 to {TUNED_REFERENCES:,}, not {self.hub_references}")
        if not 0 <= self.rehearsal <= MAX_REHEARSAL:
            raise ValueError(f"rehearsal must be from 0 to {MAX_REHEARSAL} definitions a batch, not {self.rehearsal}")


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
    head = engine.words.head.train()
    params = [p for n, p in head.named_parameters() if n != "embeddings" and (train_bias or n != "bias")]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    u_all, y_all = torch.from_numpy(vectors).to(engine.device), torch.from_numpy(gold).to(engine.device)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for idx in torch.randperm(len(y_all), generator=generator).to(engine.device).split(batch_size):
            loss = nn.functional.cross_entropy(head(u_all[idx]), y_all[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    head.eval()
    return vectors


# ---- stage 2: DefSent -------------------------------------------------------------------------

def train(engine, train_entries, dev_entries, config: TrainConfig = TrainConfig(),
          progress: Callable[[TrainProgress], None] | None = None,
          should_stop: Callable[[], bool] | None = None,
          sts_dev: Callable[[object], float] | None = None, held_out: Sequence[Entry] = ()) -> TrainResult:
    """Fine-tune `engine.encoder` in place so that head(u) predicts each definition's word.

    The head stays frozen. Every `eval_every` steps the dev split is scored (MRR, plus STS-dev
    through `sts_dev(engine)` when given, logged) and the weights of the best dev MRR are kept; at the end the encoder
    holds the best weights. `should_stop()` is polled every step: when it turns true the encoder is
    restored to its starting weights and TrainingCancelled is raised. Dev scores use the head alone,
    or with `word_vector_objective` the head plus word vectors (then also in the loss, recomputed
    at every evaluation); at the end they are recomputed with `config.word_vector_scale`, and
    the hubness correction on the training definitions with `config.hub_k` and `config.hub_weight`.
    `config.precision` "bfloat16" computes the steps and every encoding made during training in
    bfloat16 (autocast); the encoder's precision is restored after.
    Under torchrun (`core.runtime.distributed.start()` called first) each process trains on its shard of every
    batch with DistributedDataParallel; only rank 0 evaluates, selects and computes the final word
    scoring (the others return a result without dev metrics). `should_stop` must then answer alike
    in every process.
    `config.rehearsal` > 0 adds that many WordNet training definitions to every step, none of a word or text of
    `train_entries`, `dev_entries` or `held_out` (the entries kept for the final test); with none to rehearse
    (a head without WordNet's words) the run goes on without, and its result's config says rehearsal 0.
    `config.lora_rank` > 0 trains low-rank deltas only (core/lora.py), merged into the weights at the
    end and recorded in `engine.low_rank`, so that `engine.save` stores them as factors.
    Steps run on `engine.device` (core/runtime/device.py); a step that does not fit in its memory restores
    the starting weights and raises OutOfDeviceMemory.
    """
    with _encoding_precision(engine, config.precision), _low_rank_merged(engine):
        return _train(engine, train_entries, dev_entries, config, progress, should_stop, sts_dev, held_out)


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
        B, A = B.cpu(), A.cpu()  # kept, and saved, on the CPU whatever the device trained on
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


def _train(engine, train_entries, dev_entries, config: TrainConfig, progress, should_stop, sts_dev, held_out
           ) -> TrainResult:
    torch.manual_seed(config.seed)
    own = OwnWords.embed(engine, train_entries, dev_entries) if config.own_words else None
    texts, gold = (own.texts, own.token_gold) if own else definition_pairs(train_entries, engine.words.vocab)
    dev_texts, dev_gold = ([], None) if own else definition_pairs(dev_entries, engine.words.vocab)
    if own is not None and not (texts and dev_entries):
        raise ValueError("training and dev splits need definitions")
    if own is None and not (texts and dev_texts):
        raise ValueError("training and dev splits need definitions of words the head can predict")
    if config.batch_size < distributed.world_size():
        raise ValueError(f"a batch of {config.batch_size} cannot be shared by {distributed.world_size()} processes")
    if config.rehearsal and distributed.world_size() > 1:  # its second forward pass before the backward: one process
        raise ValueError("rehearsal trains in one process: run without torchrun, or with rehearsal 0")
    rehearsal = rehearsal_pairs(engine, [*train_entries, *dev_entries, *held_out]) if config.rehearsal else ([], [])
    if not rehearsal[0]:
        config = replace(config, rehearsal=0)  # nothing to rehearse: said in the result
    params = _trainable_parameters(engine, config.trainable_layers, config.lora_rank)
    encoder = _data_parallel(engine.encoder)  # the module the steps call: gradients averaged over processes
    start_state = _snapshot(engine)  # after the low-rank deltas are attached (at zero): same weights
    start_scoring = engine.words.swap()  # scored on the moving encoder: recomputed below
    optimizer = torch.optim.Adam(params, lr=config.lr)
    steps_per_epoch = math.ceil(len(texts) / config.batch_size)
    total = config.max_steps or max(1, int(config.epochs * steps_per_epoch))
    warmup = max(1, int(config.warmup * total))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))

    def evaluate() -> dict:
        """Dev metrics in the main process ({} in the others); with the word-vector objective every
        process first recomputes the word vectors it trains on (the encoder moved)."""
        if config.word_vector_objective:
            _refresh_word_vectors(engine, config.word_vector_scale)
        if own is not None:
            own.refresh(engine)
        if not distributed.is_main():
            return {}
        metrics = own.evaluate(engine) if own is not None else evaluate_vectors(engine, engine.encode(dev_texts), dev_gold)
        if sts_dev is not None:
            metrics["sts_dev"] = float(sts_dev(engine))
        return metrics

    best = {"step": 0, "dev": evaluate(), "state": None}
    history = [{"step": 0, **best["dev"]}]
    order = _epoch_orders(len(texts), config.seed)
    rehearsed = _rehearsal_batches(*rehearsal, config.rehearsal, config.seed + 1)
    t0, loss_avg, last_dev = time.time(), 0.0, best["dev"]

    def give_up(error: Exception):
        """Put the starting weights and word scoring back, then raise `error`: nothing was trained."""
        _restore(engine, start_state)
        engine.words.swap(*start_scoring)
        raise error from None

    for step in range(1, total + 1):
        if should_stop is not None and should_stop():
            give_up(TrainingCancelled(f"cancelled at step {step - 1} of {total}"))
        idx = distributed.shard(_next_batch(order, config.batch_size))  # every process draws the same batch
        try:
            loss = _step(engine, encoder, optimizer, [texts[i] for i in idx], torch.from_numpy(gold[idx]),
                         config.precision, partial(own.loss, rows=idx) if own else None, next(rehearsed))
        except torch.OutOfMemoryError:
            optimizer.zero_grad(set_to_none=True)
            release_cached_memory(engine.device)
            give_up(OutOfDeviceMemory(out_of_memory_message("DefSent training", config.batch_size, engine.device)))
        scheduler.step()
        batch_loss = distributed.average(loss.detach()).item()  # the whole batch's, in every process
        loss_avg = 0.98 * loss_avg + 0.02 * batch_loss if step > 1 else batch_loss
        if step % config.eval_every == 0 or step == total:
            last_dev = evaluate()
            history.append({"step": step, "loss": loss_avg, **last_dev})
            if distributed.is_main() and last_dev["mrr"] > best["dev"]["mrr"]:
                best = {"step": step, "dev": last_dev, "state": _snapshot(engine)}
        if progress is not None:
            elapsed = time.time() - t0
            progress(TrainProgress(step, total, loss_avg, elapsed,
                                   step * config.batch_size / max(elapsed, 1e-9), last_dev))
    if not distributed.is_main():  # rank 0 holds the selected weights and saves them
        return TrainResult(config, total, time.time() - t0, best["step"], best["dev"], history)
    _restore(engine, best["state"] or start_state)
    engine.words.head.requires_grad_(False)
    engine.weights_changed()
    engine.add_word_vectors(config.word_vector_scale)
    if config.hub_weight:
        # references: every training definition, a NO_TOKEN one (own words) counting for every column,
        # so that a glossary of phrases and invented words has references too; a small dictionary's topped
        # up with WordNet's, k scaled to their number
        texts, gold = hub_references(engine, texts, gold, train_entries, config.hub_references, config.seed)
        engine.add_hub_penalty(texts, gold, scaled_k(config.hub_k, len(set(texts))), config.hub_weight)
    return TrainResult(config, total, time.time() - t0, best["step"], best["dev"], history)


def hub_references(engine, texts: Sequence[str], gold, entries, at_least: int, seed: int = 0
                   ) -> tuple[list[str], np.ndarray]:
    """The hubness correction's reference definitions and the ids they define: `texts` and `gold`, topped up
    to `at_least` distinct texts with a seeded sample of WordNet's training definitions (the shipped split)
    whose words are not among `entries`' (each defining its word's id, or NO_TOKEN)."""
    texts, gold = list(texts), np.asarray(gold, dtype=np.int64)
    missing = at_least - len(set(texts))
    if missing <= 0:
        return texts, gold
    pool = wordnet_training_entries(entries)  # the texts are the entries' own definitions
    extra = random.Random(seed).sample(pool, min(missing, len(pool)))
    ids = [engine.words.vocab.token_id(e.word) for e in extra]
    return texts + [e.definition for e in extra], np.concatenate([gold, [NO_TOKEN if i is None else i for i in ids]])


def wordnet_training_entries(entries: Sequence[Entry]) -> list[Entry]:
    """WordNet's training definitions (the shipped split), one entry a text (synonyms share a gloss), none of
    whose words or texts (compared by `definition_key`) is among `entries`."""
    words = {e.word for e in entries}
    texts = {definition_key(e.definition) for e in entries}
    return list({e.definition: e for e in split_by_word(load_wordnet()).train
                 if e.word not in words and definition_key(e.definition) not in texts}.values())


def rehearsal_pairs(engine, entries: Sequence[Entry]) -> tuple[list[str], np.ndarray]:
    """(texts, token ids) of WordNet's training definitions of words the head predicts, none of `entries`' words
    or texts: what the shipped model learnt, rehearsed beside a dictionary (`TrainConfig.rehearsal`)."""
    return definition_pairs(wordnet_training_entries(entries), engine.words.vocab)


def _rehearsal_batches(texts: Sequence[str], gold: np.ndarray, size: int, seed: int
                       ) -> Iterator[tuple[list[str], torch.Tensor] | None]:
    """Endless (texts, token ids) batches of `size` rehearsed definitions, a fresh shuffle per pass; None each
    step when there are none (size 0 or no texts)."""
    if not size or not len(texts):
        while True:
            yield None
    order = _epoch_orders(len(texts), seed)
    while True:
        rows = _next_batch(order, size)
        yield [texts[i] for i in rows], torch.from_numpy(gold[rows])


def _step(engine, encoder: nn.Module, optimizer: torch.optim.Optimizer, texts: list[str], gold: torch.Tensor,
          precision: str, own_loss: Callable | None = None,
          rehearsal: tuple[list[str], torch.Tensor] | None = None) -> torch.Tensor:
    """One optimiser step on a batch, plus the head's loss on the `rehearsal` (texts, gold) if given; returns
    the batch's loss."""
    with train_mode(engine.encoder):  # dropout for the step's forward passes only
        loss = _defsent_loss(engine, texts, gold, precision, encoder, own_loss)
        total = loss if rehearsal is None else loss + _defsent_loss(engine, *rehearsal, precision, encoder)
    optimizer.zero_grad()
    total.backward()
    optimizer.step()
    return loss


def _defsent_loss(engine, texts: list[str], gold: torch.Tensor, precision: str = "float32",
                  encoder: nn.Module | None = None, own_loss: Callable | None = None) -> torch.Tensor:
    """Cross-entropy of the word scores of `texts` against `gold` (NO_TOKEN: none): the head's logits,
    plus the word vectors' cosines (fixed vectors, gradient through u) with `word_vector_objective`;
    plus `own_loss(u, logits)` (`OwnWords.loss`) when given. `encoder`: the module to call (the
    engine's, or it wrapped in DistributedDataParallel). Computed on the engine's device, the loss in
    float32."""
    device = engine.device
    with autocast(device, precision == "bfloat16"):
        u = (encoder or engine.encoder)(**engine.encoder.tokenize(texts, device))  # (B, H)
        logits = engine.words.head(u)  # (B, V)
    u, logits = u.float(), logits.float()  # the loss in float32
    if engine.words.vectors is not None:  # only with `word_vector_objective`; word vectors live on the CPU
        logits = logits + engine.words.vectors.scores(u.cpu(), logits.shape[1]).to(device)
    gold = gold.to(device)
    loss = (nn.functional.cross_entropy(logits, gold, ignore_index=NO_TOKEN) if bool((gold != NO_TOKEN).any())
            else logits.sum() * 0)
    return loss if own_loss is None else loss + own_loss(u.cpu(), logits.cpu())


@dataclass
class OwnWords:
    """Every word of a training dictionary as a class of the loss (`TrainConfig.own_words`), scored as
    the open vocabulary's dictionary expert scores it (`OpenScorer.dictionary_scores`: its word tower
    vector, its head score when it is one token, its other definitions): phrases, invented words and
    words of several pieces train the encoder too, where the head alone scores only single tokens.
    The candidates are the training and dev words, embedded by the model being trained at the start
    and at each dev evaluation (`refresh`), fixed in between; the dev definitions are never in the
    index, and each training definition's own text is left out of it for its own loss. Dev ranks its
    words among them as the app answers (`evaluate`)."""
    candidates: Candidates
    dev: list  # the dev entries
    texts: list[str]  # every training definition
    token_gold: np.ndarray  # (N,) its word's token id, NO_TOKEN for a word of several pieces
    gold: torch.Tensor  # (N,) its word's index among the candidates
    own: torch.Tensor  # (N,) its own text's index in the scorer's definitions
    scorer: OpenScorer | None = None  # `refresh` embeds it, scoring as the app answers
    dictionary: OpenScorer | None = None  # the same vectors scored by the dictionary expert: the loss's

    @classmethod
    def embed(cls, engine, train_entries, dev_entries) -> "OwnWords":
        entries = [*train_entries, *dev_entries]
        candidates = Candidates(entries, engine.words.vocab, user_words=(e.word for e in entries))
        dev_texts = {definition_key(e.definition) for e in dev_entries}
        kept = [definition_key(d) for d in candidates.definitions if definition_key(d) not in dev_texts]
        text_index = {key: g for g, key in enumerate(kept)}  # the index `without_definitions` leaves
        word_index = {w: i for i, w in enumerate(candidates.words)}
        token = [engine.words.vocab.token_id(e.word) for e in train_entries]
        own = cls(candidates, list(dev_entries), [e.definition for e in train_entries],
                  np.array([NO_TOKEN if t is None else t for t in token], dtype=np.int64),
                  torch.tensor([word_index[e.word] for e in train_entries]),
                  torch.tensor([text_index.get(definition_key(e.definition), -1) for e in train_entries]))
        return own  # embedded by the dev evaluation at step 0 (`refresh`)

    def refresh(self, engine) -> None:
        """Embed the candidates (words by the word tower) with the encoder as it is now."""
        scorer = OpenScorer.compute(engine.word_encoder().encode, engine.encode, self.candidates,
                                    engine.words.config, engine.words.word_map)
        self.scorer = scorer.without_definitions(e.definition for e in self.dev)
        self.dictionary = self.scorer.with_config(replace(self.scorer.config, everyday_share=0.0))

    def loss(self, u: torch.Tensor, token_logits: torch.Tensor, rows: np.ndarray) -> torch.Tensor:
        """Cross-entropy of the texts `rows`, with vectors u (B, d) and token scores (B, V), against their
        words, scored by the dictionary expert (a gloss in, its word out) over its temperature."""
        rows = torch.from_numpy(np.asarray(rows))
        scores = self.dictionary.dictionary_scores(u, token_logits, self.own[rows])  # (B, C)
        return nn.functional.cross_entropy(scores / self.dictionary.config.temperature, self.gold[rows])

    def evaluate(self, engine) -> dict:
        """MRR / top-k of the dev words among the candidates, as the app scores them (`refresh` first)."""
        u = torch.from_numpy(engine.encode([e.definition for e in self.dev]))  # (n, d)
        index = {w: i for i, w in enumerate(self.candidates.words)}
        gold = torch.tensor([index[e.word] for e in self.dev])
        return metrics_from_ranks(rank_of_gold(self.scorer.scores(u, engine.words.logits(u)), gold))


def _data_parallel(encoder: nn.Module) -> nn.Module:
    """`encoder` in DistributedDataParallel in a process group (it averages the gradients of the
    processes' shards, so a step equals one on the whole batch), else `encoder` itself."""
    if distributed.backend() is None:
        return encoder
    from torch.nn.parallel import DistributedDataParallel
    device = next(encoder.parameters()).device
    return DistributedDataParallel(encoder, device_ids=[device.index] if device.type == "cuda" else None)


def _refresh_word_vectors(engine, scale: float) -> None:
    """`engine.add_word_vectors(scale)`, the words' encoding shared among the processes of a
    distributed run (each gets all vectors)."""
    if distributed.world_size() == 1:
        engine.add_word_vectors(scale)
        return
    encode = lambda words: distributed.encode_sharded(engine.encode, words)  # noqa: E731
    engine.words.swap(WordVectors.compute(encode, engine.words.vocab.words, scale) if scale else None)


def _trainable_parameters(engine, top_layers: int, lora_rank: int = 0) -> list[nn.Parameter]:
    """Freeze the head, the embeddings and (if top_layers > 0) all but the top transformer layers;
    with `lora_rank` freeze the whole encoder and return new low-rank deltas (core/lora.py)."""
    for p in engine.words.head.parameters():
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


def _snapshot(engine) -> dict[str, dict[str, torch.Tensor]]:
    """A copy of the weights training may change (encoder and head)."""
    return {"encoder": copy.deepcopy(engine.encoder.state_dict()),
            "head": copy.deepcopy(engine.words.head.own_state_dict())}


def _restore(engine, snapshot: dict[str, dict[str, torch.Tensor]]) -> None:
    engine.encoder.load_state_dict(snapshot["encoder"])
    engine.words.head.load_state_dict(snapshot["head"], strict=False)


def _epoch_orders(n: int, seed: int):
    """Endless stream of indices: a fresh shuffle of range(n) per epoch."""
    rng = np.random.default_rng(seed)
    while True:
        yield from rng.permutation(n)


def _next_batch(order, size: int) -> np.ndarray:
    return np.fromiter((next(order) for _ in range(size)), dtype=np.int64, count=size)


# ---- the head stage, STS-B dev --------------------------------------------------------------------

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
    if method not in HEAD_STAGES:
        raise ValueError(f"unknown head stage {method!r}; choose one of {HEAD_STAGES}")
    texts, gold = definition_pairs(split.train, engine.words.vocab)
    if method == "definitions+words":
        words, ids = vocabulary_self_examples(engine.words.vocab)
        texts, gold = texts + words, np.concatenate([gold, ids])
    # every process fits the same head (same data, same seed) on the vectors they encoded together
    fit_head(engine, texts, gold, distributed.encode_sharded(engine.encode, texts), epochs=epochs, seed=seed,
             weight_decay=weight_decay)
    if method == "definitions+words":
        return (f"fitted on the training definitions and {len(words)} vocabulary words as their own "
                f"texts ({epochs} epochs, weight decay {weight_decay}, encoder frozen, bias 0)")
    return (f"fitted on the training definitions ({epochs} epochs, weight decay {weight_decay}, "
            f"encoder frozen, bias 0)")


def sts_dev_scorer(senteval_dir: Path | None) -> Callable[[object], float] | None:
    """Spearman x100 on STS-B dev, for checkpoint selection; None when the data is absent."""
    dev_file = None if senteval_dir is None else senteval_dir / "STS/STSBenchmark/sts-dev.csv"
    if dev_file is None or not dev_file.is_file():
        return None
    from .evaluation.sts import evaluate_sts, load_sts_benchmark
    subsets = {"dev": load_sts_benchmark(dev_file)}
    return lambda engine: evaluate_sts(engine, subsets, show_progress=False).all
