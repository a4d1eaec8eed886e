"""Train a Vec2Sent decoder to reconstruct corpus sentences from one encoder's embeddings.

    python -m core vec2sent-train --encoder CKPT --corpus data/cache/corpus \\
        --out checkpoints/vec2sent-NAME --minutes 80

The corpus is embedded once and cached on disk under the encoder's fingerprint and the corpus'
hash, so reruns and later epochs never re-encode. Training is teacher-forced cross-entropy with
Adam and gradient clipping until the time budget (or --max-steps) is used up; the learning rate is
constant, then decays linearly over the last part of the budget (--decay-from). With --precision
bfloat16 (the default on CPUs that multiply bfloat16 natively) the forward pass autocasts matrix
products to bfloat16 while weights, optimiser state and the loss stay float32: about 1.8x more
steps in the same budget on this machine. With --sampled-negatives N the softmax over all pieces
(most of a step's arithmetic) is replaced in training by one over the most frequent pieces, the
batch's targets and N random others (`SampledSoftmax`); validation stays exact. The checkpoint is
written atomically at the end and every --save-every minutes.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch.nn import functional as F
from tqdm import tqdm

from core.atomic import save_npy_atomically, save_text_atomically
from core.checkpoint import atomic_directory, remove_stale_temporaries, resolve_base
from core.runtime.device import (OutOfDeviceMemory, autocast, module_device, out_of_memory_message, release_cached_memory,
                         resolve_device)
from core.runtime.hardware import check_training_precision, train_mode
from core.paths import CACHE_DIR
from safetensors.torch import load_file, save_file

from core.vec2sent.checkpoint import CONFIG, Decoder, build_decoder, read_checkpoint, read_config, save_checkpoint
from core.vec2sent.encoder_link import EncoderLink
from core.vec2sent.model import Vec2SentConfig, Vec2SentDecoder
from core.vec2sent.transformer import TransformerConfig, warm_start
from core.vec2sent.truecase import TrueCaser
from core.vec2sent.vocab import BOS, EOS, PAD, PieceVocab

EMBEDDING_CACHE = CACHE_DIR / "vec2sent-embeddings"
LONGEST_TRAINED_SENTENCE = 47  # pieces (the corpus' longest has 41, p99 22); longer ones are cut


@dataclass
class TrainSettings:
    minutes: float = 80.0  # the whole run's budget, resumed parts included
    max_steps: int | None = None  # stop after this many steps too (None: the minutes alone)
    session_minutes: float | None = None  # stop (saved) after this many minutes of this invocation; --resume goes on
    batch_size: int = 64  # sentences a step
    lr: float = 2e-3  # AdamW's peak learning rate
    clip: float = 1.0  # gradient norm clipping
    seed: int = 13  # of the corpus' order, the initial weights and each step's sampling
    log_every: int = 50  # steps between points of the loss curve
    eval_every: int = 500  # steps between validation losses
    save_every_minutes: float = 10.0  # the run's state is saved (atomically) this often, and at the end
    decay_from: float = 0.7  # fraction of the budget after which the learning rate decays linearly
    final_lr_factor: float = 0.05  # ... down to this fraction of `lr`
    precision: str = "float32"  # "bfloat16": autocast the forward pass (weights stay float32)
    sampled_negatives: int = 0  # > 0: train with a SampledSoftmax drawing this many pieces a step
    frequent_pieces: int = 2048  # ... which always scores this many of the most frequent pieces
    device: str = "auto"  # where the decoder trains (core/runtime/device.py: a GPU when there is one, else the CPU)

    def __post_init__(self) -> None:
        check_training_precision(self.precision)
        for name, ok, rule in (("minutes", self.minutes > 0, "above 0"), ("lr", self.lr > 0, "above 0"),
                               ("session_minutes", self.session_minutes is None or self.session_minutes >= 0,
                                "at least 0 (0: one step)"),
                               ("clip", self.clip > 0, "above 0"),
                               ("save_every_minutes", self.save_every_minutes >= 0, "at least 0 (0: every step)"),
                               ("batch_size", self.batch_size >= 1, "at least 1"),
                               ("log_every", self.log_every >= 1, "at least 1"),
                               ("eval_every", self.eval_every >= 1, "at least 1"),
                               ("max_steps", self.max_steps is None or self.max_steps >= 0, "at least 0"),
                               ("decay_from", 0 <= self.decay_from <= 1, "from 0 to 1"),
                               ("final_lr_factor", 0 <= self.final_lr_factor <= 1, "from 0 to 1"),
                               ("sampled_negatives", self.sampled_negatives >= 0, "at least 0"),
                               ("frequent_pieces", self.frequent_pieces >= 0, "at least 0")):
            if not ok:
                raise ValueError(f"{name} must be {rule}, not {getattr(self, name)}")

    def finished(self, stats: "TrainStats") -> bool:
        """Whether a run at `stats` has used its whole budget (the minutes, or max_steps)."""
        return stats.seconds >= self.minutes * 60 or stats.steps == self.max_steps

    def lr_factor(self, seconds: float, steps: int) -> float:
        """Multiplier of `lr` once `seconds` and `steps` of the budget are used (1, then linear decay)."""
        used = seconds / (self.minutes * 60)
        if self.max_steps:
            used = max(used, steps / self.max_steps)
        if used <= self.decay_from or self.decay_from >= 1:
            return 1.0
        remaining = (1 - used) / (1 - self.decay_from)
        return max(self.final_lr_factor, remaining)


@dataclass
class TrainingData:
    """Compact-id sequences (without [BOS]/[EOS]) and their sentence embeddings (n, S)."""
    sequences: list[list[int]]
    embeddings: np.ndarray
    lengths: np.ndarray = field(init=False)  # pieces per sequence

    def __post_init__(self) -> None:
        if len(self.sequences) != len(self.embeddings):
            raise ValueError(f"{len(self.sequences)} sequences but {len(self.embeddings)} embeddings")
        self.lengths = np.array([len(s) for s in self.sequences])

    def subset(self, idx: np.ndarray) -> "TrainingData":
        return TrainingData([self.sequences[i] for i in idx], self.embeddings[idx])

    def batch(self, idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sentence vectors (B, S), inputs [BOS] y1..yn (B, T) and targets y1..yn [EOS] (B, T)."""
        steps = int(self.lengths[idx].max()) + 1
        inputs = torch.full((len(idx), steps), PAD, dtype=torch.long)  # (B, T)
        targets = torch.full((len(idx), steps), PAD, dtype=torch.long)  # (B, T)
        for row, i in enumerate(idx):
            ids = torch.tensor(self.sequences[i], dtype=torch.long)
            inputs[row, :len(ids) + 1] = torch.cat([torch.tensor([BOS]), ids])
            targets[row, :len(ids) + 1] = torch.cat([ids, torch.tensor([EOS])])
        return torch.from_numpy(np.ascontiguousarray(self.embeddings[idx])), inputs, targets

    def batch_on(self, idx: np.ndarray, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """`batch(idx)` on `device`: built on the CPU, copied from pinned memory without blocking, so
        that the GPU's work on the last step overlaps the building of the next."""
        if device.type == "cpu":
            return self.batch(idx)
        return tuple(t.pin_memory().to(device, non_blocking=True) for t in self.batch(idx))


@dataclass
class TrainStats:
    steps: int = 0
    epochs: float = 0.0
    sentences_seen: int = 0
    seconds: float = 0.0
    curve: list[dict] = field(default_factory=list)  # {"step", "seconds", "loss"[, "val_loss"]}

    @property
    def sentences_per_second(self) -> float:
        return self.sentences_seen / max(self.seconds, 1e-9)


def encoder_token_ids(sentences: list[str], tokenizer) -> list[list[int]]:
    """Encoder WordPiece ids of each sentence, without [CLS]/[SEP]."""
    return tokenizer(sentences, add_special_tokens=False)["input_ids"]


def prepare_data(sentences: list[str], embeddings: np.ndarray, tokenizer,
                 max_pieces: int = LONGEST_TRAINED_SENTENCE,
                 vocab: PieceVocab | None = None) -> tuple[PieceVocab, TrainingData]:
    """Map `sentences` to compact ids of `vocab` (default: the pieces they use)."""
    encoder_ids = [ids[:max_pieces] for ids in encoder_token_ids(sentences, tokenizer)]
    vocab = vocab or PieceVocab.from_token_ids(encoder_ids, tokenizer.convert_ids_to_tokens)
    return vocab, TrainingData([vocab.to_compact(ids) for ids in encoder_ids], embeddings)


def base_vocabulary(tokenizer) -> PieceVocab:
    """Every piece of the encoder's tokenizer but its specials and [unused*] slots: the vocabulary
    of the transformer decoder, the same whatever the corpus (so training can go on as it grows)."""
    specials = set(tokenizer.all_special_ids)
    ids = [i for token, i in sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
           if i not in specials and not (token.startswith("[unused") and token.endswith("]"))]
    return PieceVocab.from_token_ids([ids], tokenizer.convert_ids_to_tokens)


def corpus_hash(sentences: list[str]) -> str:
    """SHA-256 of the training sentences, one a line: names the corpus in caches and manifests."""
    return hashlib.sha256("\n".join(sentences).encode()).hexdigest()


def cached_embeddings(sentences: list[str], link: EncoderLink, cache_dir: Path | None = None,
                      chunk: int = 1024, save_every: int = 50) -> np.ndarray:
    """Embeddings (n, S) of `sentences`, computed once per (encoder fingerprint, corpus) and cached in
    `cache_dir` (default EMBEDDING_CACHE).

    Each cache has its sentences beside it (.txt), so a grown corpus embeds only its new sentences:
    the others are taken from earlier caches of the same encoder and precision. Every `save_every`
    chunks the work so far is saved as a partial cache, so a killed run loses little."""
    cache_dir = Path(EMBEDDING_CACHE if cache_dir is None else cache_dir)
    name = f"{link.fingerprint[:16]}-{corpus_hash(sentences)[:16]}"
    path = cache_dir / f"{name}{link.precision_tag}.npy"
    if path.is_file():
        return np.load(path)
    cache_dir.mkdir(parents=True, exist_ok=True)
    known = _earlier_embeddings(cache_dir, link)
    missing = [s for s in dict.fromkeys(sentences) if s not in known]
    partial, done = cache_dir / f"{name}~partial{link.precision_tag}.npy", []
    for k, start in enumerate(tqdm(range(0, len(missing), chunk), desc="embedding corpus", unit="chunk"), 1):
        part = missing[start:start + chunk]
        known.update(zip(part, np.asarray(link.encode(part), dtype=np.float32)))
        done.extend(part)
        if k % save_every == 0:
            _save_cache(partial, done, np.stack([known[s] for s in done]))
    embeddings = np.stack([known[s] for s in sentences]) if sentences else np.zeros((0, 0), np.float32)
    _save_cache(path, sentences, embeddings)
    for leftover in (partial, partial.with_suffix(".txt")):
        leftover.unlink(missing_ok=True)
    return embeddings


def _save_cache(path: Path, sentences: list[str], embeddings: np.ndarray) -> None:
    """The embeddings at `path` and their sentences beside it (.txt), each written atomically."""
    save_npy_atomically(path, embeddings)  # a crash between the two: lengths differ, the pair is ignored
    save_text_atomically(path.with_suffix(".txt"), "\n".join(sentences) + "\n")


def _earlier_embeddings(cache_dir: Path, link: EncoderLink) -> dict[str, np.ndarray]:
    """sentence -> embedding from every cache (partial ones too) of this encoder and precision in `cache_dir`."""
    known: dict[str, np.ndarray] = {}
    prefix = f"{link.fingerprint[:16]}-"
    for path in sorted(cache_dir.glob(f"{prefix}*.npy")):
        if path.stem[len(prefix):].split("-")[1:] != ([link.precision] if link.precision_tag else []):
            continue  # another precision's
        sidecar = path.with_suffix(".txt")
        if not sidecar.is_file():
            continue
        texts = sidecar.read_text(encoding="utf-8").split("\n")[:-1]
        vectors = np.load(path, mmap_mode="r")
        if len(texts) == len(vectors):
            known.update(zip(texts, vectors))
    return known


def bucketed_batches(lengths: np.ndarray, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """One epoch of index batches of similar length (less padding), in random order."""
    order = rng.permutation(len(lengths))
    pool = batch_size * 50  # sort within pools of 50 batches: similar lengths, still shuffled
    batches = []
    for start in range(0, len(order), pool):
        chunk = order[start:start + pool]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches.extend(chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


@dataclass
class SampledSoftmax:
    """A training-time stand-in for the softmax over all V pieces, which is most of a step's arithmetic.

    Logits are computed exactly for the `frequent` pieces and the batch's targets (together nearly
    all of the normaliser's mass) and for `negatives` pieces drawn uniformly from the rest, each of
    which stands for |rest| / negatives pieces (its logit is raised by the log of that), so the
    normaliser is estimated without bias. Validation and decoding always use the full softmax."""
    frequent: torch.Tensor  # (M,) ids of the pieces always scored
    negatives: int
    vocab_size: int

    @classmethod
    def for_data(cls, data: TrainingData, vocab_size: int, frequent: int, negatives: int) -> "SampledSoftmax":
        counts = np.bincount(np.concatenate([np.asarray(s, dtype=np.int64) for s in data.sequences]),
                             minlength=vocab_size)
        counts[EOS] = len(data.sequences)  # every sentence ends with one
        return cls(torch.from_numpy(np.argsort(-counts, kind="stable")[:frequent]), negatives, vocab_size)

    def candidates(self, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Piece ids to score (R,) and the log weight of each (R,), for the target ids (N,)."""
        exact = torch.zeros(self.vocab_size, dtype=torch.bool)
        exact[self.frequent] = True
        exact[targets] = True
        exact_ids, rest = exact.nonzero().squeeze(1), (~exact).nonzero().squeeze(1)
        sampled = rest[torch.randperm(len(rest))[:self.negatives]]
        weight = len(rest) / len(sampled) if len(sampled) else 1.0  # pieces each sampled one stands for
        log_weights = torch.cat([torch.zeros(len(exact_ids)), torch.full((len(sampled),), math.log(weight))])
        return torch.cat([exact_ids, sampled]), log_weights


def sequence_loss(model: Vec2SentDecoder, data: TrainingData, idx: np.ndarray,
                  precision: str = "float32", sampled: SampledSoftmax | None = None) -> torch.Tensor:
    """Mean cross-entropy per target piece ([EOS] included, padding excluded), computed in float32;
    with `precision="bfloat16"` the model's matrix products run in bfloat16 (autocast); with
    `sampled`, over a sample of the pieces (training only). Computed on the model's device."""
    device = module_device(model)
    sentences, inputs, targets = data.batch_on(idx, device)
    real = targets != PAD  # (B, T): padding gets no logits at all
    targets = targets[real]  # (N,)
    with autocast(device, precision == "bfloat16"):
        hidden = model.hidden_states(sentences, inputs)[real]  # (N, H)
        if sampled is None:
            return F.cross_entropy(model.output_logits(hidden).float(), targets)  # (N, V) logits
        rows, log_weights = (t.to(device) for t in sampled.candidates(targets.cpu()))
        logits = model.output_logits(hidden, rows).float() + log_weights  # (N, R)
    position = torch.empty(model.config.vocab_size, dtype=torch.long, device=device)
    position[rows] = torch.arange(len(rows), device=device)
    return F.cross_entropy(logits, position[targets])


@torch.no_grad()
def validation_loss(model: Vec2SentDecoder, data: TrainingData, batch_size: int = 256) -> float:
    total, pieces = 0.0, 0
    for start in range(0, len(data.sequences), batch_size):
        idx = np.arange(start, min(start + batch_size, len(data.sequences)))
        n = int(data.lengths[idx].sum()) + len(idx)
        total += sequence_loss(model, data, idx).item() * n
        pieces += n
    return total / pieces


def train_decoder(model: Decoder, data: TrainingData, settings: TrainSettings,
                  validation: TrainingData | None = None,
                  on_checkpoint: Callable[[TrainStats, torch.optim.Optimizer], None] | None = None,
                  progress: bool = True, resume: "RunState | None" = None) -> TrainStats:
    """Teacher-forced training until the time budget or `max_steps`; returns the loss curve.

    `resume` (a run's saved optimizer state and statistics, `model` holding its weights) goes on
    where that run stopped: its seconds and steps count against the budget. Batches are drawn anew
    (seeded by the step), so a resumed run is equivalent to, not identical with, an unbroken one.
    The model moves to `settings.device`; a step that does not fit in its memory raises
    OutOfDeviceMemory (nothing more is saved: the last checkpoint written stays whole)."""
    device = resolve_device(settings.device)
    model.to(device)
    stats = resume.stats if resume else TrainStats()
    torch.manual_seed(settings.seed + stats.steps)
    rng = np.random.default_rng(settings.seed + stats.steps)
    optimizer = torch.optim.Adam(model.parameters(), lr=settings.lr)
    if resume:
        optimizer.load_state_dict(resume.optimizer)
    sampled = (SampledSoftmax.for_data(data, model.config.vocab_size, settings.frequent_pieces,
                                       settings.sampled_negatives) if settings.sampled_negatives else None)
    recent = []
    last_save = session_start = time.monotonic()
    started = last_save - stats.seconds
    budget = settings.minutes * 60
    if settings.finished(stats):
        return stats
    if not len(data.sequences):
        raise ValueError("no training sentences")  # else the loop below would draw empty epochs forever
    bar = tqdm(total=round(budget), initial=min(round(stats.seconds), round(budget)), unit="s",
               disable=not progress, desc="training")
    while True:
        for idx in bucketed_batches(data.lengths, settings.batch_size, rng):
            for group in optimizer.param_groups:
                group["lr"] = settings.lr * settings.lr_factor(time.monotonic() - started, stats.steps)
            try:
                loss = _step(model, optimizer, data, idx, settings, sampled)
            except torch.OutOfMemoryError:
                optimizer.zero_grad(set_to_none=True)
                release_cached_memory(device)
                bar.close()
                raise OutOfDeviceMemory(out_of_memory_message("Decoder training", settings.batch_size,
                                                              device)) from None
            recent.append(loss.item())
            stats.steps += 1
            stats.sentences_seen += len(idx)
            stats.seconds = time.monotonic() - started
            done = (settings.finished(stats)
                    or (settings.session_minutes is not None
                        and time.monotonic() - session_start >= settings.session_minutes * 60))
            if stats.steps % settings.log_every == 0 or done:
                point = {"step": stats.steps, "seconds": round(stats.seconds, 1),
                         "loss": round(float(np.mean(recent)), 4), "lr": optimizer.param_groups[0]["lr"]}
                if validation is not None and (stats.steps % settings.eval_every == 0 or done):
                    point["val_loss"] = round(validation_loss(model, validation), 4)
                stats.curve.append(point)
                recent = []
                bar.set_postfix(loss=point["loss"], sent_s=round(stats.sentences_per_second))
                bar.update(min(round(stats.seconds), bar.total) - bar.n)
            stats.epochs = stats.sentences_seen / len(data.sequences)
            if done:
                bar.close()
                if on_checkpoint:
                    on_checkpoint(stats, optimizer)
                return stats
            if on_checkpoint and time.monotonic() - last_save >= settings.save_every_minutes * 60:
                on_checkpoint(stats, optimizer)
                last_save = time.monotonic()


def _step(model: Decoder, optimizer: torch.optim.Optimizer, data: TrainingData, idx: np.ndarray,
          settings: TrainSettings, sampled: SampledSoftmax | None) -> torch.Tensor:
    """One clipped optimiser step on the batch `idx`; returns its loss."""
    with train_mode(model):  # dropout for this step's forward pass only
        loss = sequence_loss(model, data, idx, settings.precision, sampled)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), settings.clip)
    optimizer.step()
    return loss


def validation_size(sentences: int) -> int:
    """Sentences held out for the validation loss: 500, or a tenth of a smaller corpus (at least 1)."""
    return max(1, min(500, sentences // 10))


def train_for_encoder(sentences: list[str], link: EncoderLink, out: Path, config_overrides: dict,
                      settings: TrainSettings, val_size: int = 500,
                      cache_dir: Path | None = None, progress: bool = True,
                      init: Path | None = None, corpus: dict | None = None,
                      run_dir: Path | None = None, resume: bool = False,
                      embeddings: np.ndarray | None = None) -> TrainStats:
    """Embed (cached), build the vocabulary, train, and save the checkpoint at `out`.

    `embeddings` (n, S): the sentences' vectors by this encoder when they come embedded already (a
    collection `corpus-index` built: `core.collection.training_rows`), so nothing is embedded here.

    The manifest records the sentences' hash and count, with `corpus` (e.g. its path and packages).

    `config_overrides` with architecture "transformer" and `base` (a BERT checkpoint: "package:NAME"
    or a path) warm-start a transformer decoder from that model (core/vec2sent/transformer.py);
    otherwise they configure the LSTM.

    `init`: start from that decoder's weights and architecture (`config_overrides` are then unused),
    e.g. the decoder of the encoder this one was fine-tuned or blended from; if it was trained on
    another corpus, it is moved to this corpus' piece vocabulary (`with_vocabulary`).

    With `run_dir` (the command's default: data/cache/vec2sent-runs/OUT_NAME) every save also
    writes the run's state there (float32 weights, optimizer, statistics); with `resume`, a run
    found there goes on from it instead of starting anew. Both writes are atomic: a killed run
    leaves the last complete ones."""
    if resume and run_dir is None:
        raise ValueError("resume needs the run_dir of the run to go on from")
    if len(sentences) <= val_size:
        raise ValueError(f"{len(sentences):,} sentences: a decoder trains on more than the {val_size:,} it is "
                         "validated on")
    if embeddings is None:
        embeddings = cached_embeddings(sentences, link, cache_dir)
    for folder in (Path(out).parent, Path(run_dir).parent if run_dir else None):
        if folder is not None:
            remove_stale_temporaries(folder)  # a killed run's hidden half-written folders (hundreds of MB)
    run = load_run(run_dir) if resume and (Path(run_dir) / RUN_STATE).is_file() else None
    if run:
        model, vocab = run.model, run.vocab
    else:
        vocab = base_vocabulary(link.tokenizer) if _is_transformer(init, config_overrides) else None
    vocab, data = prepare_data(sentences, embeddings, link.tokenizer, vocab=vocab)
    order = np.random.default_rng(settings.seed).permutation(len(sentences))
    train, validation = data.subset(order[val_size:]), data.subset(order[:val_size])
    torch.manual_seed(settings.seed)
    if not run:
        model = _initial_model(init, vocab, embeddings.shape[1], config_overrides, link.tokenizer)
    truecaser = TrueCaser.learn(sentences)

    def save(stats: TrainStats, optimizer: torch.optim.Optimizer) -> None:
        manifest = {"encoder": {"name": link.name, "fingerprint": link.fingerprint},
                    "training": {"settings": asdict(settings), "parameters": model.num_parameters(),
                                 "corpus": {"sha256": corpus_hash(sentences), "sentences": len(sentences),
                                            **(corpus or {})},
                                 "train_sentences": len(train.sequences),
                                 "validation_sentences": len(validation.sequences),
                                 "init": str(init) if init else None,
                                 "warm_start": config_overrides.get("base"),
                                 "encoder_precision": link.precision,
                                 "sentences_per_second": round(stats.sentences_per_second, 1),
                                 **asdict(stats)}}
        save_checkpoint(out, model, vocab, manifest, truecaser)
        if run_dir is not None:  # after the decoder: a run state always has a whole decoder beside it
            save_run(run_dir, model, vocab, optimizer, stats)

    return train_decoder(model, train, settings, validation, on_checkpoint=save, progress=progress, resume=run)


# ----------------------------------------------------------------------------- a run's saved state

RUNS_DIR = CACHE_DIR / "vec2sent-runs"
RUN_STATE, RUN_WEIGHTS, RUN_OPTIMIZER = "state.json", "model.safetensors", "optimizer.pt"


@dataclass
class RunState:
    """What a killed or finished run needs to go on: its float32 model, vocabulary, Adam's state
    and statistics (the seconds and steps used so far)."""
    model: Decoder
    vocab: PieceVocab
    optimizer: dict
    stats: TrainStats


def save_run(folder: Path, model: Decoder, vocab: PieceVocab, optimizer: torch.optim.Optimizer,
             stats: TrainStats) -> None:
    """Write the run's state atomically (the previous one stays whole until the new one is)."""
    with atomic_directory(Path(folder)) as staging:
        model.config.save(staging / "config.json")
        save_file({k: v.detach().float().cpu().contiguous() for k, v in model.state_dict().items()},
                  str(staging / RUN_WEIGHTS))
        torch.save(optimizer.state_dict(), staging / RUN_OPTIMIZER)
        state = {"vocab": vocab.to_json(), "stats": asdict(stats)}
        (staging / RUN_STATE).write_text(json.dumps(state) + "\n", encoding="utf-8")


def run_stats(folder: Path) -> TrainStats | None:
    """The statistics of the run saved in `folder` (None: no run there), without loading its weights."""
    path = Path(folder) / RUN_STATE
    if not path.is_file():
        return None
    return TrainStats(**json.loads(path.read_text(encoding="utf-8"))["stats"])


def load_run(folder: Path, build: Callable[[Path], Decoder] = lambda config: build_decoder(read_config(config))
             ) -> RunState:
    """The state `save_run` wrote (tensors only are unpickled: `weights_only=True`); `build` makes
    the untrained model from the run's config.json."""
    folder = Path(folder)
    state = json.loads((folder / RUN_STATE).read_text(encoding="utf-8"))
    model = build(folder / "config.json")
    model.load_state_dict(load_file(str(folder / RUN_WEIGHTS)), strict=True)
    optimizer = torch.load(folder / RUN_OPTIMIZER, weights_only=True, map_location="cpu")
    return RunState(model, PieceVocab.from_json(state["vocab"]), optimizer, TrainStats(**state["stats"]))


def describe_corpus(folder: Path) -> dict:
    """The corpus folder and, from the corpus.json that core.corpus.classic writes, its packages."""
    stats_file = folder / "corpus.json"
    stats = json.loads(stats_file.read_text(encoding="utf-8")) if stats_file.is_file() else {}
    return {"path": str(folder), "packages": stats.get("packages"), "sources": list(stats.get("sources", {}))}


def read_corpus(folder: Path, first: int = 0) -> tuple[list[str], dict]:
    """(the training sentences of a corpus folder, its description for the manifest): the first
    `first` sentences of its train.txt (shuffled when the corpus was built), or all of them if 0."""
    if first < 0:
        raise ValueError(f"Train on the first N sentences (N >= 1) or on all (0), not {first}.")
    folder = Path(folder)
    sentences = (folder / "train.txt").read_text(encoding="utf-8").splitlines()
    corpus = describe_corpus(folder)
    if first > len(sentences):
        raise ValueError(f"{folder} has {len(sentences):,} training sentences, fewer than the {first:,} asked for.")
    if first:
        sentences, corpus["first_sentences"] = sentences[:first], first
    return sentences, corpus


def _is_transformer(init: Path | None, config_overrides: dict) -> bool:
    """Whether the run trains a transformer: `init`'s architecture when there is one (its vocabulary is the
    base tokenizer's, not the corpus'), else the command's."""
    if init is not None:
        return isinstance(read_config(Path(init) / CONFIG), TransformerConfig)
    return config_overrides.get("architecture") == "transformer"


def _initial_model(init: Path | None, vocab: PieceVocab, sent_dim: int, config_overrides: dict,
                   tokenizer) -> Decoder:
    if init is None and config_overrides.get("architecture") == "transformer":
        return warm_started(vocab, sent_dim, config_overrides, tokenizer)
    if init is None:
        config = {"max_length": LONGEST_TRAINED_SENTENCE + 1, **config_overrides}  # the command gives one
        return Vec2SentDecoder(Vec2SentConfig(vocab_size=len(vocab), sent_dim=sent_dim, **config))
    model, init_vocab, _ = read_checkpoint(init)
    if model.config.sent_dim != sent_dim:
        raise ValueError(f"{init} decodes {model.config.sent_dim}-d embeddings, this encoder gives {sent_dim}-d; "
                         "train without --init")
    return model if init_vocab == vocab else with_vocabulary(model, init_vocab, vocab)


def warm_started(vocab: PieceVocab, sent_dim: int, overrides: dict, tokenizer) -> Decoder:
    """A transformer decoder warm-started from the BERT checkpoint `overrides["base"]`, its size
    read from that checkpoint's config; the other overrides are TransformerConfig fields."""
    overrides = dict(overrides)
    base = Path(resolve_base(overrides.pop("base")))
    b = json.loads((base / "config.json").read_text(encoding="utf-8"))
    config = TransformerConfig(vocab_size=len(vocab), sent_dim=sent_dim, hidden=b["hidden_size"],
                               layers=b["num_hidden_layers"], heads=b["num_attention_heads"],
                               intermediate=b["intermediate_size"],
                               max_length=LONGEST_TRAINED_SENTENCE + 1, **overrides)
    specials = tokenizer.convert_tokens_to_ids([tokenizer.pad_token, tokenizer.cls_token,
                                                tokenizer.sep_token, tokenizer.unk_token])
    return warm_start(config, base, vocab.encoder_ids, specials)


PER_PIECE = {"embed.weight", "output_bias", "output.weight", "output.bias"}  # Vec2SentDecoder's (V, ...) tensors


def with_vocabulary(model: Vec2SentDecoder, old: PieceVocab, new: PieceVocab) -> Vec2SentDecoder:
    """`model` (over `old`) moved to the vocabulary `new`, e.g. of a grown corpus: every piece both
    share keeps its rows (embedding, output bias), so its logits stay the same; new pieces start
    from a fresh initialisation, pieces `new` lacks are dropped."""
    moved = Vec2SentDecoder(replace(model.config, vocab_size=len(new)))
    old_row = {key: i for i, key in enumerate(_piece_keys(old))}
    pairs = [(j, old_row[key]) for j, key in enumerate(_piece_keys(new)) if key in old_row]
    new_rows, old_rows = (torch.tensor(rows) for rows in zip(*pairs))
    state = moved.state_dict()
    for name, tensor in model.state_dict().items():
        if name in PER_PIECE:  # (V, ...) rows
            state[name][new_rows] = tensor[old_rows]
        else:
            state[name] = tensor
    moved.load_state_dict(state)
    return moved


def _piece_keys(vocab: PieceVocab) -> list[int | str]:
    """What identifies a piece across vocabularies: its encoder id, or for a special its name."""
    return [piece if encoder_id < 0 else encoder_id for piece, encoder_id in zip(vocab.pieces, vocab.encoder_ids)]
