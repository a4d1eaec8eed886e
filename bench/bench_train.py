"""DefSent training throughput: definitions/s of core.train on the real model, and one epoch's time.

    python bench/bench_train.py --threads 1 --steps 40

Loads a checkpoint (default: the shipped defsent-minilm, i.e. the real base with its real word
head), trains `--steps` DefSent steps on WordNet training definitions (batch 16, the shipped
recipe's learning rate) after `--warmup-steps` untimed ones, and extrapolates the time of one full
epoch over the WordNet training split. Nothing is saved; dev evaluation is reduced to a few
definitions so that it does not count.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from itertools import pairwise
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
from core.runtime.hardware import TRAINING_PRECISIONS  # (no torch import)

DEV_SAMPLE = 16  # dev definitions train() scores before and after; too few to matter for timing


def step_times(engine, split, steps: int, warmup: int, batch_size: int, lr: float,
               precision: str = "float32") -> list[float]:
    """Seconds of each timed step (after `warmup` untimed steps) of core.train.train on `split`."""
    from core.train import TrainConfig, TrainProgress, train

    elapsed: list[float] = []

    def record(progress: TrainProgress) -> None:
        elapsed.append(progress.elapsed)

    # One step more than timed: train() scores the dev sample inside the last step's time.
    config = TrainConfig(lr=lr, batch_size=batch_size, max_steps=warmup + steps + 1, eval_every=10**9,
                         precision=precision)
    train(engine, split.train, split.dev[:DEV_SAMPLE], config, progress=record)
    timed = elapsed[warmup - 1:warmup + steps] if warmup else [0.0] + elapsed[:steps]
    return [b - a for a, b in pairwise(timed)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(REPO / "checkpoints/defsent-minilm"), help="checkpoint folder")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--steps", type=int, default=40, help="timed training steps (default 40)")
    parser.add_argument("--warmup-steps", type=int, default=3, help="untimed steps first (default 3)")
    parser.add_argument("--batch-size", type=int, default=16, help="definitions per step (default 16)")
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--precision", choices=TRAINING_PRECISIONS, default="float32",
                        help="bfloat16: autocast training steps (TrainConfig.precision)")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.warmup_steps < 0 or args.batch_size < 1:
        parser.error("--steps and --batch-size must be >= 1, --warmup-steps >= 0")
    import torch

    from core import Engine
    from core.lexicon.dictionary import load_wordnet, split_by_word
    from core.words.word_eval import definition_pairs

    torch.set_num_threads(args.threads)
    engine = Engine.load(args.model)
    split = split_by_word(load_wordnet(), seed=0)
    trainable = len(definition_pairs(split.train, engine.words.vocab)[0])
    times = step_times(engine, split, args.steps, args.warmup_steps, args.batch_size, args.lr, args.precision)
    rate = args.batch_size / statistics.median(times)
    mean_rate = args.batch_size * len(times) / sum(times)
    epoch_minutes = trainable / mean_rate / 60
    print(f"model {Path(args.model).name}, {args.threads} thread(s), {args.precision}, batch {args.batch_size}, "
          f"{len(times)} timed steps after {args.warmup_steps} warm-up steps (nothing saved)\n")
    print("| measurement | result |\n|---|---:|")
    print(f"| training definitions/s (over all timed steps) | {mean_rate:.1f} |")
    print(f"| training definitions/s (median step) | {rate:.1f} |")
    print(f"| seconds per step (median, min-max) | {statistics.median(times):.2f} "
          f"({min(times):.2f}-{max(times):.2f}) |")
    print(f"| one WordNet epoch ({trainable:,} of {len(split.train):,} training definitions have a "
          f"one-token word) | {epoch_minutes:.1f} min |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
