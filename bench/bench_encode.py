"""Encode throughput against SentenceTransformer.encode, with the STS-B Spearman of each option.

    python bench/bench_encode.py --threads 1 --rounds 5          # defsent-minilm and the base model
    python bench/bench_encode.py --models base --precisions float32 --ablation   # what length sorting buys

Encodes the 2,758 STS-B test sentences (SentEval's STSBenchmark/sts-test.csv) with the same model
through SentenceTransformer.encode (the peer) and through Engine.encode in each precision, same
batch size, same threads. Runs are interleaved (one round times every encoder once, in a rotated
order), so load from other processes hits all of them alike; the table shows median sentences/s
and the median over rounds of each round's ratio to the peer. The peer of a checkpoint is the same
weights exported to the sentence-transformers format (app.shared.export).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
STS_B_TEST = REPO.parent / "shared/data/senteval/STS/STSBenchmark/sts-test.csv"
PRECISIONS = ("float32", "bfloat16", "int8")
PEER = "SentenceTransformer.encode"


def load_engine(model: str, precision: str):
    """Our engine for "base" (the untrained all-MiniLM-L6-v2) or a checkpoint folder."""
    from core import Engine

    if model == "base":
        engine = Engine.from_base()
        engine.set_precision(precision)
        return engine
    return Engine.load(model, precision=precision)


def load_peer(model: str, workdir: Path):
    """SentenceTransformer on the same weights (a checkpoint is exported to its format first)."""
    from sentence_transformers import SentenceTransformer

    from core.checkpoint import DEFAULT_BASE, resolve_base

    if model == "base":
        return SentenceTransformer(resolve_base(DEFAULT_BASE), device="cpu")
    from app.shared.export import export_sentence_transformers

    folder = export_sentence_transformers(load_engine(model, "float32"), workdir / Path(model).name, Path(model).name)
    return SentenceTransformer(str(folder), device="cpu")


def interleaved_seconds(encoders: dict[str, Callable[[list[str]], object]], sentences: list[str],
                        rounds: int) -> dict[str, list[float]]:
    """Seconds per encoder per round; each round runs every encoder once, starting one later."""
    names = list(encoders)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for name in names:
        encoders[name](sentences[:64])  # warm-up: first-call allocations, lazy initialisation
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            start = time.perf_counter()
            encoders[name](sentences)
            seconds[name].append(time.perf_counter() - start)
    return seconds


def sts_b_spearman(encode: Callable[[list[str]], object], pairs) -> float:
    import numpy as np

    from core.evaluation import paired_cosine, spearman_x100

    vectors = np.asarray(encode(pairs.first + pairs.second))
    n = len(pairs.first)
    return spearman_x100(paired_cosine(vectors[:n], vectors[n:]), pairs.labels)


def in_input_order(engine, texts: list[str], batch_size: int):
    """Engine.encode without its length sorting: one call per batch of consecutive texts."""
    import numpy as np

    return np.concatenate([engine.encode(texts[i:i + batch_size], batch_size=batch_size)
                           for i in range(0, len(texts), batch_size)])


def bench_model(model: str, pairs, precisions: list[str], batch_size: int, rounds: int,
                workdir: Path, ablation: bool = False) -> list[list[str]]:
    """Table rows [model, encoder, sentences/s, ratio, STS-B, delta STS-B] for one model."""
    peer = load_peer(model, workdir)
    encoders = {PEER: lambda texts: peer.encode(texts, batch_size=batch_size)}
    for precision in precisions:
        engine = load_engine(model, precision)
        encoders[f"Engine.encode, {precision}"] = (
            lambda texts, engine=engine: engine.encode(texts, batch_size=batch_size))
        if precision == "float32" and ablation:
            encoders["Engine.encode, float32, batches in input order"] = (
                lambda texts, engine=engine: in_input_order(engine, texts, batch_size))
    sentences = pairs.first + pairs.second
    seconds = interleaved_seconds(encoders, sentences, rounds)
    peer_sts = sts_b_spearman(encoders[PEER], pairs)
    rows = []
    for name, times in seconds.items():
        ratio = statistics.median(p / t for p, t in zip(seconds[PEER], times))
        sts = sts_b_spearman(encoders[name], pairs)
        rows.append([Path(model).name, name, f"{len(sentences) / statistics.median(times):.0f}",
                     f"{ratio:.2f}x", f"{sts:.2f}", f"{sts - peer_sts:+.2f}"])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=[str(REPO / "checkpoints/defsent-minilm"), "base"],
                        help="checkpoint folders and/or 'base' (default: the shipped checkpoint and base)")
    parser.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=PRECISIONS)
    parser.add_argument("--threads", type=int, default=1, help="torch and tokenizer threads (default 1)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default 5)")
    parser.add_argument("--limit", type=int, default=0, help="first N sentence pairs only (0: all)")
    parser.add_argument("--ablation", action="store_true",
                        help="also float32 without length sorting (batches of consecutive sentences)")
    args = parser.parse_args(argv)
    if not STS_B_TEST.is_file():
        parser.error(f"STS-B test file not found: {STS_B_TEST}")
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)  # the fast tokenizer's thread pool
    import torch

    from core.evaluation.files import SentencePairs
    from core.evaluation.sts import load_sts_benchmark

    torch.set_num_threads(args.threads)
    pairs = load_sts_benchmark(STS_B_TEST)
    if args.limit:
        pairs = SentencePairs(pairs.first[:args.limit], pairs.second[:args.limit], pairs.labels[:args.limit])
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-encode-") as workdir:
        for model in args.models:
            rows += bench_model(model, pairs, args.precisions, args.batch_size, args.rounds, Path(workdir),
                                args.ablation)
    print(f"{2 * len(pairs.first):,} STS-B test sentences, batch size {args.batch_size}, "
          f"{args.threads} thread(s), {args.rounds} interleaved rounds; ratio = median over rounds of "
          f"peer seconds / our seconds\n")
    print("| model | encoder | sentences/s (median) | ratio vs peer | STS-B test | vs peer |")
    print("|---|---|---:|---:|---:|---:|")
    print("\n".join("| " + " | ".join(row) + " |" for row in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
