"""The same answers from the first second (issue 60, 3): how a fresh start ranks, against the exact vectors.

A fresh start answers from the checkpoint's compact vectors, each query's first `--first` candidates scored
again with exact vectors embedded on demand (core/words/exact_rescoring.py). For every description of the human dev set, one at a time as
the app answers them, it prints: the share of queries whose first answer is the exact vectors' first, the
mean overlap of the first ten, acc@1 / acc@10 of the described word, and the time a query takes (the
description encoded, scored by the mixture, ranked; the cold pass embeds what the cache lacks, the warm
pass repeats the queries with it full). The same for the compact vectors alone and the exact vectors.

    python -m bench.bench_first_answers                       # needs the exact vectors in the user cache
    python -m bench.bench_first_answers --first 30 100 300 --cold 0     # the ranking only, for --first

The ranking over all descriptions is measured with every exact row taken from the full cache (what the
on-demand cache holds once warm: the same int8 rows); the cold pass over the first `--cold` descriptions
embeds them as a fresh start does, and times that.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import OrderedDict
from pathlib import Path

import torch

from core.engine import Engine
from core.evaluation.reverse import read_human_descriptions
from core.paths import HUMAN_DESCRIPTIONS, user_cache_dir
from core.words.exact_rescoring import FIRST, MARGIN, ExactRescorer, ExactVectors
from core.words.open_vocab import int8_rows

K = 10


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=None, help="checkpoint (default: the shipped one)")
    parser.add_argument("--first", type=int, nargs="+", default=[FIRST], help="candidates re-scored a query")
    parser.add_argument("--margin", type=float, default=MARGIN, help="definitions embedded: within this of the best")
    parser.add_argument("--precision", default="auto", choices=("auto", "int8", "float32"),
                        help="the word scores' products (the app: auto)")
    parser.add_argument("--cold", type=int, default=40,
                        help="descriptions answered from an empty on-demand cache, embedding (0: none)")
    parser.add_argument("--descriptions", type=Path, default=HUMAN_DESCRIPTIONS)
    args = parser.parse_args(argv)
    if not all(1 <= n <= 300_000 for n in args.first) or not 0 <= args.cold <= 10_000 or not 0 <= args.margin <= 2:
        parser.error("--first must be 1 to 300,000, --cold 0 to 10,000 and --margin 0 to 2")
    queries = read_human_descriptions(args.descriptions)
    exact = load(args.model, args.precision, exact=True)
    reference = answers(exact, queries) if exact is not None else None
    print(f"{len(queries)} descriptions; exact vectors: "
          + (summary(reference, reference, queries) if reference else "not in the user cache: no agreement measured, "
             "the cold pass only (`python -m core eval-reverse --sets defsent-table6` embeds them, 20+ minutes)"))
    with tempfile.TemporaryDirectory() as fresh:
        compact = load(args.model, args.precision, exact=False, cache=Path(fresh))
        scorer = compact.words.open_vocab
        scorer.rescorer = None
        alone = answers(compact, queries[:len(reference or []) or args.cold])
        print(f"compact vectors alone: {summary(alone, reference, queries)}")
        for first in args.first:
            vectors = compact.exact_vectors(Path(fresh) / str(first))  # empty: a fresh start's (the tower built anew)
            scorer.rescorer = ExactRescorer(vectors, first, args.margin)
            if args.cold:  # a fresh start: what the first candidates need is embedded now
                cold = answers(compact, queries[:args.cold])
                print(f"first {first} re-scored, from an empty cache, the first {args.cold} descriptions "
                      f"({vectors.embedded / args.cold:.0f} texts embedded a query): "
                      f"{summary(cold, reference, queries)}")
            if exact is None:
                continue
            prefill(vectors, exact)  # every exact row at hand: the ranking of a fresh start, the time of a warm one
            print(f"first {first} re-scored, every row cached: {summary(answers(compact, queries), reference, queries)}")
    return 0


def load(model: Path | None, precision: str, exact: bool, cache: Path | None = None) -> Engine | None:
    """The engine answering from the exact vectors (None when the user cache lacks them), or from the compact
    ones with an on-demand cache in `cache`."""
    engine = Engine.load(model, decoder=None, open_vocabulary=False)
    engine.words.set_precision(precision)
    if exact:
        cached = user_cache_dir("open-vocab") / engine._open_vocab_cache_name(engine.words.candidates())
        if not cached.is_file():
            return None
        engine.enable_open_vocabulary(cache_dir=user_cache_dir("open-vocab"), compact=False)
    else:
        engine.enable_open_vocabulary(cache_dir=cache)
        if not engine.words.compact:
            raise SystemExit(f"{cache} holds this model's full vectors: name an on-demand cache without them")
    return engine


def answers(engine: Engine, queries) -> list[tuple[list[str], float, float]]:
    """(the first K words, seconds, CPU seconds of the process) of each query, one at a time, the description's own words left out."""
    out = []
    for query in queries:
        started, cpu = time.perf_counter(), time.process_time()
        ranked = engine.words.ranked(engine.encode([query.text]), K, exclude_words_of=[query.text])[0]
        out.append(([word for word, _ in ranked], time.perf_counter() - started, time.process_time() - cpu))
    return out


def summary(got, reference, queries) -> str:
    """Agreement with `reference` (when given), accuracy and time a query of `got` (the first len(got) of
    `queries`)."""
    queries = queries[:len(got)]
    agreement = ""
    if reference:
        same = statistics.mean(g[0][:1] == r[0][:1] for g, r in zip(got, reference))
        overlap = statistics.mean(len(set(g[0]) & set(r[0])) / K for g, r in zip(got, reference))
        agreement = f"same first {same:.1%}, overlap@10 {overlap:.3f}, "
    acc1 = statistics.mean(q.word in g[0][:1] for q, g in zip(queries, got))
    acc10 = statistics.mean(q.word in g[0] for q, g in zip(queries, got))
    ms, cpu = sorted(1000 * g[1] for g in got), sorted(1000 * g[2] for g in got)
    return (f"{agreement}acc@1 {acc1:.3f}, acc@10 {acc10:.3f}; ms a query: "
            f"median {statistics.median(ms):.0f}, mean {statistics.mean(ms):.0f}, p90 {ms[int(0.9 * len(ms))]:.0f}, "
            f"max {ms[-1]:.0f} (CPU ms: median {statistics.median(cpu):.0f}, mean {statistics.mean(cpu):.0f})")


def prefill(vectors: ExactVectors, exact: Engine) -> None:
    """The on-demand cache filled with the full cache's rows: no embedding."""
    scorer = exact.words.open_vocab
    for kind, texts in (("word", scorer.candidates.words), ("definition", scorer.candidates.definitions)):
        rows = scorer.vectors_of(kind, torch.arange(len(texts)))
        vectors._rows[kind] = OrderedDict(zip(texts, int8_rows(rows)))


if __name__ == "__main__":
    raise SystemExit(main())
