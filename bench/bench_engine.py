"""Engine benchmark: predict_words latency for one query and for a batch of 64 queries.

    python bench/bench_engine.py [--model checkpoints/defsent-minilm] [--threads 1] [--repeats 50]
                                 [--precision float32|bfloat16|int8|auto] [--scoring float32|int8|auto]
                                 [--open-vocabulary]

Prints medians over repeated runs. `--open-vocabulary` answers from all 147k WordNet words and
phrases (`engine.vocabulary.enable`, vectors cached in data/cache/open-vocab) and also prints
the memory it adds. Encode throughput against SentenceTransformer is measured by
bench/bench_encode.py.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from bench.machine import machine_line
from core import Engine
from core.encoder import PRECISIONS

QUERIES = ["a person who is in charge", "a large body of salt water", "feeling or showing pleasure",
           "a building where people live", "to move quickly on foot", "the state of being alone"]


def resident_mb() -> float:
    """This process's resident memory (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def median_ms(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--precision", default="float32", choices=PRECISIONS, help="encoding precision")
    parser.add_argument("--scoring", default="auto", choices=("float32", "int8", "auto"),
                        help="the word scores' vocabulary products (WordScorer.set_precision)")
    parser.add_argument("--open-vocabulary", action="store_true", help="all WordNet words and phrases")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    engine = Engine.load(args.model, decoder=None, precision=args.precision, open_vocabulary=False)  # timed apart
    engine.words.set_precision(args.scoring)
    extra = []
    if args.open_vocabulary:
        engine.predict_words(QUERIES[0])  # the closed vocabulary's own matrices first, so they are not counted
        before = resident_mb()
        engine.vocabulary.enable(cache_dir=Path("data/cache/open-vocab"))
        engine.predict_words(QUERIES[0])
        extra = [("open vocabulary: candidates", f"{len(engine.words.open_vocab.candidates):,}"),
                 ("open vocabulary: memory added (MB, resident)", f"{resident_mb() - before:.0f}")]
    one = median_ms(lambda: engine.predict_words(QUERIES[0], k=10), args.repeats)
    batch = median_ms(lambda: engine.predict_words_batch((QUERIES * 11)[:64], k=10), max(3, args.repeats // 10))
    rows = [("predict_words, 1 query (median ms)", f"{one:.1f}"),
            ("predict_words_batch, 64 queries (median ms)", f"{batch:.0f}"), *extra]
    scoring = "int8" if engine.words.int8 else "float32"
    print(f"threads={args.threads}, precision={engine.encoder.precision}, scoring={scoring}; {machine_line()}\n")
    print("| measure | value |\n|---|---:|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
