"""The same answers from the first second (issue 60, 3): how a fresh start ranks, against the exact vectors.

A fresh start answers from the checkpoint's compact vectors, each query's first `--first` candidates scored
again with exact vectors embedded on demand (core/words/exact_rescoring.py). Over the human dev set it
prints: the share of queries whose first answer is the exact vectors' first, the
mean overlap of the first ten, acc@1 / acc@10 of the described word, and the time a query takes (the
description encoded, scored by the mixture, ranked). The same for the compact vectors alone and the exact
vectors.

    python -m bench.bench_first_answers                       # needs the exact vectors in the user cache
    python -m bench.bench_first_answers --first 30 100 300 --timed 0    # the ranking only, for --first

The ranking over all descriptions is measured in batches with every exact row taken from the full cache (what
the on-demand cache holds once warm: the same int8 rows); the times, one query at a time over the first
`--timed` descriptions, from an empty on-demand cache (embedding as a fresh start does) and from a full one.
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
from core.words.open_vocabulary import VocabularyState

K = 10


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=None, help="checkpoint (default: the shipped one)")
    parser.add_argument("--first", type=int, nargs="+", default=[FIRST], help="candidates re-scored a query")
    parser.add_argument("--margin", type=float, default=MARGIN, help="definitions embedded: within this of the best")
    parser.add_argument("--precision", default="auto", choices=("auto", "int8", "float32"),
                        help="the word scores' products (the app: auto)")
    parser.add_argument("--timed", type=int, default=20,
                        help="descriptions answered one at a time for the times (the first ones; 0: none)")
    parser.add_argument("--descriptions", type=Path, default=HUMAN_DESCRIPTIONS)
    args = parser.parse_args(argv)
    if not all(1 <= n <= 300_000 for n in args.first) or not 0 <= args.timed <= 10_000 or not 0 <= args.margin <= 2:
        parser.error("--first must be 1 to 300,000, --timed 0 to 10,000 and --margin 0 to 2")
    queries = read_human_descriptions(args.descriptions)
    timed = queries[:args.timed]
    exact = load(args.model, args.precision, exact=True)
    if exact is None:
        print("the exact vectors are not in the user cache: no agreement measured, the times only "
              "(`python -m core eval-reverse --sets defsent-table6` embeds them, 20+ minutes)")
        reference = None
    else:
        reference = answers(exact, queries)
        print(f"{len(queries)} descriptions; exact vectors: {summary(reference, reference, queries)}; "
              f"{times(exact, timed)}")
    with tempfile.TemporaryDirectory() as fresh:
        compact = load(args.model, args.precision, exact=False, cache=Path(fresh))
        scorer = compact.words.open_vocab
        scorer.rescorer = None
        print(f"compact vectors alone: {summary(answers(compact, queries), reference, queries)}; "
              f"{times(compact, timed)}")
        for first in args.first:
            vectors = compact.vocabulary.exact_vectors(Path(fresh) / str(first))  # empty: a fresh start's (the tower built anew)
            scorer.rescorer = ExactRescorer(vectors, first, args.margin)
            cold = times(compact, timed)  # a fresh start: what the first candidates need is embedded now
            print(f"first {first} re-scored: from an empty cache, {cold} "
                  f"({vectors.embedded / max(len(timed), 1):.0f} texts embedded a query)")
            if exact is not None:
                prefill(vectors, exact)  # every exact row at hand: the ranking of a fresh start, the time of a warm one
                print(f"first {first} re-scored: {summary(answers(compact, queries), reference, queries)}; "
                      f"every row cached, {times(compact, timed)}")
    return 0


def load(model: Path | None, precision: str, exact: bool, cache: Path | None = None) -> Engine | None:
    """The engine answering from the exact vectors (None when the user cache lacks them), or from the compact
    ones with an on-demand cache in `cache`."""
    engine = Engine.load(model, decoder=None, open_vocabulary=False)
    engine.words.set_precision(precision)
    if exact:
        cached = user_cache_dir("open-vocab") / engine.vocabulary.cache_name(engine.words.candidates())
        if not cached.is_file():
            return None
        engine.vocabulary.enable(cache_dir=user_cache_dir("open-vocab"), compact=False)
    else:
        engine.vocabulary.enable(cache_dir=cache)
        if engine.vocabulary.state is not VocabularyState.COMPACT:
            raise SystemExit(f"{cache} holds this model's full vectors: name an on-demand cache without them")
    return engine


def answers(engine: Engine, queries, batch: int = 32) -> list[list[str]]:
    """The first K words of each query, the description's own words left out, in batches (a query's answers do
    not depend on its batch: `RowwiseInt8Product`, `ExactRescorer`)."""
    out = []
    for start in range(0, len(queries), batch):
        texts = [q.text for q in queries[start:start + batch]]
        out += [[word for word, _ in ranked] for ranked in engine.words.ranked(engine.encode(texts), K,
                                                                              exclude_words_of=texts)]
    return out


def times(engine: Engine, queries) -> str:
    """The time a query takes, one at a time as the app answers (encoded, scored, ranked): wall and CPU ms."""
    if not queries:
        return "no query timed"
    wall, cpu = [], []
    for query in queries:
        started, used = time.perf_counter(), time.process_time()
        engine.words.ranked(engine.encode([query.text]), K, exclude_words_of=[query.text])
        wall.append(1000 * (time.perf_counter() - started))
        cpu.append(1000 * (time.process_time() - used))
    return (f"ms a query over {len(queries)}: median {statistics.median(wall):.0f}, mean {statistics.mean(wall):.0f}, "
            f"max {max(wall):.0f} (CPU ms of the process: median {statistics.median(cpu):.0f})")


def summary(got: list[list[str]], reference: list[list[str]] | None, queries) -> str:
    """Agreement with `reference` (when given) and accuracy of `got`."""
    agreement = ""
    if reference:
        same = statistics.mean(g[:1] == r[:1] for g, r in zip(got, reference))
        overlap = statistics.mean(len(set(g) & set(r)) / K for g, r in zip(got, reference))
        agreement = f"same first {same:.1%}, overlap@10 {overlap:.3f}, "
    acc1 = statistics.mean(q.word in g[:1] for q, g in zip(queries, got))
    acc10 = statistics.mean(q.word in g for q, g in zip(queries, got))
    return f"{agreement}acc@1 {acc1:.3f}, acc@10 {acc10:.3f} (the word as written)"


def prefill(vectors: ExactVectors, exact: Engine) -> None:
    """The on-demand cache filled with the full cache's rows: no embedding."""
    scorer = exact.words.open_vocab
    for kind, texts in (("word", scorer.candidates.words), ("definition", scorer.candidates.definitions)):
        rows = scorer.vectors_of(kind, torch.arange(len(texts)))
        vectors._rows[kind] = OrderedDict(zip(texts, int8_rows(rows)))


if __name__ == "__main__":
    raise SystemExit(main())
