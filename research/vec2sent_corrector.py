"""A learned corrector for Vec2Sent (issue 26, item 3), after vec2text (Morris et al., 2023).

The corrector is the transformer decoder (core/vec2sent/transformer.py) reading more than the
target vector v: its prefix comes from [v, u, v - u], where u is the embedding of a hypothesis (the
decoder's output for v), and it reads the hypothesis' pieces too (at positions after the longest
text), so it can copy what the hypothesis got right and change what moved u away from v. It starts as a copy of the shipped
decoder (the weights of u and v - u at zero) and is trained on hypotheses of corpus sentences the
decoder never trained on. At decoding time its n-best compete with the hypothesis on cosine to v,
for one or more rounds.

    python research/vec2sent_corrector.py build --sentences 100000 [--session-minutes M]
    python research/vec2sent_corrector.py train --minutes 60 [--session-minutes M] [--resume]
    python research/vec2sent_corrector.py evaluate --limit 300 --rounds 2 --beams 1 5

`build` decodes sentences 400,001.. of the modern corpus (the decoder trained on the first 400,000)
in chunks of 10,000 saved as they finish, so it resumes; `train` reuses the decoder's training loop
and run state (`--adapter-rank r`: the decoder's weights stay, rank-r deltas and the prefix's first
layer train, so the corrector would ship as ~10 MB beside the decoder at rank 64); `evaluate` corrects the
API's default decode on the held-out set.

Results (2026-11-27, 2 cores): `build --sentences 80000` took 17.7 min (79,500 training pairs; 2.9 %
of the greedy hypotheses are exact). The decoder's validation loss on the held-out pairs, from v
alone, is 2.43.
- Run A (the hypothesis' pieces right after the prefix, which moved the text's positions; rank 32,
  lr 1e-3): validation loss 4.27 fresh, 2.64 at step 500, 2.58 at step 1,000, stopped at step ~1,350
  (20 min). `evaluate --limit 100 --rounds 2 --beams 5`: the default decode 32.9 BLEU / 26 % Id,
  one corrector round 33.9 / 27 %, two 34.3 / 27 %, about 130 ms a round; one more round of the
  embedding-space correction gains ~2.3 BLEU for ~100 ms (docs/vec2sent.md), so it lost.
- Run B (as now: the text keeps the decoder's positions; rank 64): 3.32 fresh, 2.63 at step 500,
  stopped after 10 min as no better than A.
Neither came back to the decoder's own loss within the time, so the trained corrector did not earn
a place; vec2text trains its corrector for days on a GPU.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from core.lora import add_low_rank
from core.paths import CACHE_DIR, HELDOUT_SENTENCES, MODERN_CORPUS_DIR
from core.vec2sent.checkpoint import best_by_cosine, load_checkpoint, mean_cosine, read_checkpoint
from core.vec2sent.decode import beam_search_nbest
from core.vec2sent.diagnostics import read_test_sentences, score_reconstructions
from core.vec2sent.encoder_link import link_engine
from core.vec2sent.refine import correct
from core.vec2sent.train import (RUN_STATE, RunState, TrainingData, TrainSettings, encoder_token_ids,
                                 load_run, prepare_data, save_run, train_decoder, validation_loss)
from core.vec2sent.transformer import TransformerConfig, TransformerDecoder, prefix_mask
from core.vec2sent.vocab import PAD, PieceVocab

WORK = CACHE_DIR / "vec2sent-corrector"
CHUNK = 10_000  # sentences per saved chunk of `build`
FIRST_UNSEEN = 400_000  # the shipped decoder trained on the corpus' first 400,000 sentences


@dataclass
class CorrectorConfig(TransformerConfig):
    architecture: str = "corrector"
    hypothesis_length: int = 32  # hypothesis pieces read at most
    adapter_rank: int = 0  # 0: every weight trains; r: the decoder's weights stay and rank-r deltas train


class Corrector(TransformerDecoder):
    """The decoder with a hypothesis to correct. Its conditioning rows (B, 2S + L) pack the target
    vector v (S), the hypothesis' embedding u (S) and the hypothesis' compact piece ids (L, padded
    with [PAD]); `forward(rows, inputs)`, `start(rows)` and `step` are the decoder's, so greedy and
    beam search decode it unchanged. The text keeps the decoder's positions (K..); the hypothesis'
    pieces take the positions after the longest text (K + max_length + 1..), so a corrector without
    a hypothesis is the decoder it started from."""

    def __init__(self, config: CorrectorConfig):
        super().__init__(config)
        c = config
        if self._hypothesis_offset() + c.hypothesis_length > c.max_positions:
            raise ValueError("prefix, output and hypothesis exceed the positions")
        self.prefix = nn.Sequential(nn.Linear(3 * c.sent_dim, 4 * c.hidden), nn.GELU(),
                                    nn.Linear(4 * c.hidden, c.prefix_length * c.hidden))

    def _context(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rows (B, 2S + L) -> v (B, S), the context's input vectors (B, K + L, H) and which
        context positions are real (B, K + L)."""
        c, rows = self.config, rows.float()
        v, u = (F.normalize(rows[:, i * c.sent_dim:(i + 1) * c.sent_dim], dim=-1) * math.sqrt(c.sent_dim)
                for i in (0, 1))  # (B, S) each
        hypothesis = rows[:, 2 * c.sent_dim:].round().long()  # (B, L)
        dtype = self.embed.weight.dtype
        prefix = self.prefix(torch.cat([v, u, v - u], -1).to(dtype)).view(len(rows), c.prefix_length, c.hidden)
        real = torch.cat([torch.ones(len(rows), c.prefix_length, dtype=torch.bool), hypothesis != PAD], 1)
        context = torch.cat([self._inputs(prefix, 0), self._inputs(self.embed(hypothesis), self._hypothesis_offset())], 1)
        return v.to(dtype), context, real  # (B, S), (B, K + L, H), (B, K + L)

    def _hypothesis_offset(self) -> int:
        return self.config.prefix_length + self.config.max_length + 1

    def hidden_states(self, rows: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        _, context, real = self._context(rows)
        C, T = context.shape[1], inputs.shape[1]
        h = torch.cat([context, self._inputs(self.embed(inputs), self.config.prefix_length)], 1)  # (B, C+T, H)
        seen = torch.cat([real, torch.ones(len(real), T, dtype=torch.bool)], 1)  # (B, C+T)
        mask = prefix_mask(C, T)[None] & seen[:, None, :]  # (B, C+T, C+T)
        h, _ = self._run(h, None, mask[:, None])
        return self.drop(h[:, C:])

    def start(self, rows: torch.Tensor):
        """The context's keys and values, and which of its positions are real (1, B, C): the
        decoding functions reorder every part of the state along dimension 1."""
        x, context, real = self._context(rows)
        _, (keys, values) = self._run(context, None, real[:, None, None, :])
        return x, (keys, values, real[None])

    def step(self, tokens: torch.Tensor, x: torch.Tensor, state):
        keys, values, real = state
        done, T = keys.shape[3], tokens.shape[1]
        causal = torch.arange(done + T)[None, :] <= done + torch.arange(T)[:, None]  # (T, done+T)
        seen = torch.cat([real[0], torch.ones(len(tokens), done + T - real.shape[2], dtype=torch.bool)], 1)
        mask = (causal[None] & seen[:, None, :])[:, None]  # (B, 1, T, done+T)
        text_offset = self.config.prefix_length + done - real.shape[2]  # after the prefix, as in training
        h, (keys, values) = self._run(self._inputs(self.embed(tokens), text_offset), (keys, values), mask)
        return self.output_logits(h), (keys, values, real)


def add_adapters(model: Corrector) -> Corrector:
    """With config.adapter_rank r > 0, freeze the decoder's weights except the prefix's first layer
    (it reads u and v - u) and give every other Linear a trainable rank-r delta (core/lora.py), so
    the corrector is stored as a small delta of the shipped decoder."""
    rank = model.config.adapter_rank
    if not rank:
        return model
    linears = [m for m in (*model.layers.modules(), model.prefix[2], model.head_dense) if isinstance(m, nn.Linear)]
    add_low_rank(model, rank, linears)
    model.prefix[0].requires_grad_(True)
    return model


def from_decoder(decoder: TransformerDecoder, hypothesis_length: int = 32, adapter_rank: int = 0) -> Corrector:
    """A corrector that starts as `decoder`: the weights reading u and v - u are zero."""
    config = CorrectorConfig(**{**asdict(decoder.config), "architecture": "corrector",
                                "hypothesis_length": hypothesis_length, "adapter_rank": adapter_rank})
    state = {k: v.float() for k, v in decoder.state_dict().items()}
    first = state["prefix.0.weight"]  # (4H, S)
    state["prefix.0.weight"] = torch.cat([first, torch.zeros_like(first), torch.zeros_like(first)], 1)
    model = Corrector(config)
    model.load_state_dict(state, strict=True)
    return add_adapters(model).eval()


def hypothesis_ids(texts: list[str], tokenizer, vocab: PieceVocab, length: int) -> np.ndarray:
    """Compact piece ids (n, length) of each text, cut at `length` and padded with [PAD]."""
    ids = np.full((len(texts), length), PAD, dtype=np.float32)
    for row, pieces in enumerate(encoder_token_ids(texts, tokenizer)):
        compact = vocab.to_compact(pieces)[:length]
        ids[row, :len(compact)] = compact
    return ids


def conditioning_rows(vectors: np.ndarray, hypotheses: list[str], encode, tokenizer, vocab: PieceVocab,
                      length: int) -> np.ndarray:
    """The corrector's input (n, 2S + length): v, the hypotheses' embeddings u, their pieces."""
    u = np.asarray(encode(hypotheses), dtype=np.float32) if hypotheses else np.zeros_like(vectors)
    return np.concatenate([np.asarray(vectors, np.float32), u, hypothesis_ids(hypotheses, tokenizer, vocab, length)], 1)


def correct_with_model(corrector: Corrector, vocab: PieceVocab, vectors: np.ndarray, texts: list[str], encode,
                       tokenizer, width: int, batch_size: int) -> list[str]:
    """One round: per row, the text closest to vectors[i] (cosine) among texts[i] and the
    corrector's n-best for it."""
    rows = conditioning_rows(vectors, texts, encode, tokenizer, vocab, corrector.config.hypothesis_length)
    proposals = []
    for start in range(0, len(rows), batch_size):
        batch = torch.from_numpy(rows[start:start + batch_size])
        proposals.extend([text, *(vocab.to_text(ids) for ids in hs)]
                         for text, hs in zip(texts[start:start + batch_size],
                                             beam_search_nbest(corrector, batch, width, max_length=corrector.config.max_length)))
    return [p[i] for p, (i, _) in zip(proposals, best_by_cosine(proposals, vectors, encode))]


def load_corrector_run(folder: Path) -> RunState:
    return load_run(folder, build=lambda config: add_adapters(Corrector(CorrectorConfig.load(config))))


# ----------------------------------------------------------------------------- the command line

def corpus_sentences(corpus: Path, count: int) -> list[str]:
    """`count` training sentences of the corpus that the shipped decoder never saw."""
    lines = (corpus / "train.txt").read_text(encoding="utf-8").splitlines()[FIRST_UNSEEN:FIRST_UNSEEN + count]
    if len(lines) < count:
        raise ValueError(f"{corpus} has only {len(lines):,} sentences after the first {FIRST_UNSEEN:,}")
    return lines


def build(args: argparse.Namespace) -> None:
    """Decode the unseen corpus sentences greedily, chunk by chunk (finished chunks are kept)."""
    link = link_engine(args.encoder, precision="bfloat16")
    decoder = load_checkpoint(args.decoder, link.fingerprint, precision="bfloat16")  # batched
    sentences, began = corpus_sentences(args.corpus, args.sentences), time.monotonic()
    args.work.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(sentences), CHUNK):
        path = args.work / f"chunk-{start // CHUNK:03d}.npz"
        if path.exists():
            continue
        if args.session_minutes and time.monotonic() - began > 60 * args.session_minutes:
            print("session time is up; run build again to go on")
            return
        part = sentences[start:start + CHUNK]
        vectors = link.encode(part)
        hypotheses = [h[0] for h in decoder.hypotheses(vectors, batch_size=128)]
        staging = path.with_name(path.stem + ".partial.npz")
        np.savez(staging, sentences=np.array(part), hypotheses=np.array(hypotheses),
                 vectors=vectors.astype(np.float32), hypothesis_vectors=link.encode(hypotheses).astype(np.float32))
        staging.replace(path)
        print(f"{path.name}: {start + len(part):,} of {len(sentences):,} sentences, "
              f"{(time.monotonic() - began) / 60:.1f} min", flush=True)


def training_data(work: Path, tokenizer, vocab: PieceVocab, length: int) -> TrainingData:
    """Targets: the corpus sentences; conditioning rows: v, u and the greedy hypothesis."""
    chunks = [np.load(p) for p in sorted(work.glob("chunk-[0-9][0-9][0-9].npz"))]
    if not chunks:
        raise SystemExit(f"no chunks in {work}: run build first")
    sentences = [str(s) for c in chunks for s in c["sentences"]]
    hypotheses = [str(h) for c in chunks for h in c["hypotheses"]]
    rows = np.concatenate([np.concatenate([c["vectors"], c["hypothesis_vectors"]], 1) for c in chunks])
    rows = np.concatenate([rows, hypothesis_ids(hypotheses, tokenizer, vocab, length)], 1)  # (n, 2S + L)
    _, data = prepare_data(sentences, rows, tokenizer, vocab=vocab)
    return data


def train(args: argparse.Namespace) -> None:
    link = link_engine(args.encoder, precision="bfloat16")
    run_dir = args.work / "run"
    run = load_corrector_run(run_dir) if args.resume and (run_dir / RUN_STATE).is_file() else None
    if run:
        model, vocab = run.model, run.vocab
    else:
        decoder, vocab, _ = read_checkpoint(args.decoder)
        model = from_decoder(decoder, args.hypothesis_length, args.adapter_rank)
    data = training_data(args.work, link.tokenizer, vocab, model.config.hypothesis_length)
    order = np.random.default_rng(13).permutation(len(data.sequences))
    held = min(500, len(order) // 10)  # validation pairs
    train_set, validation = data.subset(order[held:]), data.subset(order[:held])
    if not run:  # the baseline: the decoder's loss on the same sentences, from v alone
        decoder_view = TrainingData(validation.sequences, validation.embeddings[:, :decoder.config.sent_dim])
        print(f"{len(train_set.sequences):,} training pairs; validation loss of the decoder "
              f"{validation_loss(decoder, decoder_view):.4f}, of the fresh corrector "
              f"{validation_loss(model, validation):.4f}", flush=True)
    settings = TrainSettings(minutes=args.minutes, max_steps=args.max_steps, session_minutes=args.session_minutes, lr=args.lr,
                             batch_size=64, decay_from=0.5, precision="bfloat16", sampled_negatives=2048)
    stats = train_decoder(model, train_set, settings, validation, resume=run,
                          on_checkpoint=lambda stats, optimizer: save_run(run_dir, model, vocab, optimizer, stats))
    print(json.dumps(stats.curve[-1]))


def show(name: str, references: list[str], outputs: list[str], vectors: np.ndarray, encode, seconds: float) -> None:
    s = score_reconstructions(references, outputs)
    print(f"| {name} | {s.bleu:.1f} | {s.identity:.1f} | {mean_cosine(vectors, outputs, encode):.3f} | "
          f"{1000 * seconds / len(references):.0f} |", flush=True)


def evaluate(args: argparse.Namespace) -> None:
    """The API's default decode, then rounds of correction of it, on the held-out set."""
    link = link_engine(args.encoder, precision="bfloat16")
    decoder = load_checkpoint(args.decoder, link.fingerprint)  # as the app: int8 where torch can
    corrector = load_corrector_run(args.work / "run").model.to(torch.bfloat16).eval()
    references, _ = read_test_sentences(args.test, args.limit)
    vectors = link.encode(references)
    print(f"{len(references)} held-out sentences\n\n| decoding | BLEU | Id % | cos | ms a sentence |\n|---|---:|---:|---:|---:|")
    began = time.perf_counter()
    default = correct(lambda targets: decoder.hypotheses(targets, beam_width=5), vectors, link.encode).closest
    base_seconds = time.perf_counter() - began
    show("the API's default decode (beam 5, one correction round)", references, default, vectors, link.encode, base_seconds)
    for width in args.beams:
        texts, seconds = default, base_seconds
        for round_ in range(1, args.rounds + 1):
            began = time.perf_counter()
            texts = [decoder.cased(t) for t in correct_with_model(corrector, decoder.vocab, vectors, texts, link.encode,
                                                                  link.tokenizer, width, args.batch_size)]
            seconds += time.perf_counter() - began
            show(f"+ corrector beam {width}, round {round_}", references, texts, vectors, link.encode, seconds)
    for ref, out in list(zip(references, texts))[:args.examples]:
        print(f"  in:  {ref}\n  out: {out}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["build", "train", "evaluate"])
    p.add_argument("--encoder", type=Path, default=Path("checkpoints/defsent-minilm"))
    p.add_argument("--decoder", type=Path, default=Path("checkpoints/vec2sent-defsent-minilm"))
    p.add_argument("--work", type=Path, default=WORK, help="the chunks and the run state")
    p.add_argument("--corpus", type=Path, default=MODERN_CORPUS_DIR)
    p.add_argument("--sentences", type=int, default=100_000, help="build: corpus sentences to decode")
    p.add_argument("--session-minutes", type=float, default=None)
    p.add_argument("--minutes", type=float, default=60.0, help="train: the run's budget")
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--hypothesis-length", type=int, default=32)
    p.add_argument("--adapter-rank", type=int, default=0, help="train: 0 trains every weight; r > 0 low-rank deltas")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--test", type=Path, default=HELDOUT_SENTENCES)
    p.add_argument("--limit", type=int, default=300)
    p.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=1, help="evaluate: 1 times a sentence as the app decodes it")
    p.add_argument("--examples", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    {"build": build, "train": train, "evaluate": evaluate}[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
