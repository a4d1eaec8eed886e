"""Engine benchmarks: predict_words latency (one query, a batch of 64) and encode throughput.

    python bench/bench_engine.py [--model checkpoints/defsent-minilm] [--threads 2] [--repeats 50]

Prints medians over repeated runs. Encode throughput is measured on the STS-B test sentences when
../shared/data/senteval is present (else on WordNet definitions), against SentenceTransformer.encode
on the same base model, same batch size and threads, as a ratio from one run.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import Engine  # noqa: E402
from core.checkpoint import resolve_base  # noqa: E402

QUERIES = ["a person who is in charge", "a large body of salt water", "feeling or showing pleasure",
           "a building where people live", "to move quickly on foot", "the state of being alone"]


def median_ms(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def benchmark_sentences(limit: int) -> tuple[list[str], str]:
    sts = Path(__file__).resolve().parents[2] / "shared/data/senteval/STS/STSBenchmark/sts-test.csv"
    if sts.is_file():
        rows = [line.split("\t") for line in sts.read_text(encoding="utf-8").splitlines()]
        sentences = [s for row in rows if len(row) >= 7 for s in (row[5], row[6])]
        return sentences[:limit], f"STS-B test ({len(sentences[:limit])} sentences)"
    from core.dictionary import load_wordnet
    defs = [e.definition for e in load_wordnet()[:limit]]
    return defs, f"WordNet definitions ({len(defs)})"


def throughput(encode, sentences: list[str], repeats: int) -> float:
    rates = []
    for _ in range(repeats):
        t = time.perf_counter()
        encode(sentences)
        rates.append(len(sentences) / (time.perf_counter() - t))
    return statistics.median(rates)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--encode-repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--limit", type=int, default=2758)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    engine = Engine.load(args.model)
    rows = [("predict_words, 1 query (median ms)",
             f"{median_ms(lambda: engine.predict_words(QUERIES[0], k=10), args.repeats):.1f}"),
            ("predict_words_batch, 64 queries (median ms)",
             f"{median_ms(lambda: engine.predict_words_batch((QUERIES * 11)[:64], k=10), max(3, args.repeats // 10)):.0f}")]
    sentences, label = benchmark_sentences(args.limit)
    ours = throughput(lambda s: engine.encode(s, batch_size=args.batch_size), sentences, args.encode_repeats)
    rows.append((f"encode, {label} (sentences/s)", f"{ours:.0f}"))
    try:
        from sentence_transformers import SentenceTransformer
        st = SentenceTransformer(resolve_base(engine.base_source), device="cpu")
        theirs = throughput(lambda s: st.encode(s, batch_size=args.batch_size), sentences, args.encode_repeats)
        rows += [("SentenceTransformer.encode, same sentences (sentences/s)", f"{theirs:.0f}"),
                 ("ratio ours / SentenceTransformer", f"{ours / theirs:.2f}x")]
    except ImportError:
        rows.append(("SentenceTransformer.encode", "sentence-transformers not installed"))
    print(f"threads={args.threads}, batch size={args.batch_size}\n")
    print("| measure | value |\n|---|---:|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
