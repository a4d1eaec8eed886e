"""Nearest neighbours among a million corpus sentences: which index, measured against exact search (issue 39).

    python bench/bench_corpus_index.py --index DIR --queries data/cache/corpus-modern/heldout.txt --threads 2

DIR is a folder `python -m core corpus-index` built (its int8 chunks are the vectors searched). The
queries are sentences the corpus does not hold (the held-out documents), embedded by the same model.
For each candidate index: build seconds (`--build-threads`), bytes, recall@10 against exact inner-product
search over the same rows, and milliseconds a query one at a time (the app's case), with `--threads` threads.
Then the memory a process adds by loading the built index as the app does (`core.explore.corpus_index.CorpusIndex`).
"""
from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

CANDIDATES = {  # FAISS factory string -> search parameters tried
    "Flat": [{}],
    "IVF{lists},SQ8": [{"nprobe": n} for n in (8, 16, 32, 64)],
    "HNSW32,SQ8": [{"efSearch": e} for e in (32, 64, 128)],
    "IVF{lists},PQ48": [{"nprobe": n} for n in (16, 32, 64)],
    # the 100M design (docs/scale.md): 48-byte codes in memory, their best 10 k_factor_rf re-ranked by 8-bit rows
    "IVF{lists},PQ48,Refine(SQ8)": [{"nprobe": n, "k_factor_rf": f} for n in (32, 64, 128, 256) for f in (10, 20)],
}
K = 10


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import faiss

    from core.explore.corpus_index import CorpusIndex, _chunk_path
    from core.encoder import l2_normalize
    from core.engine import Engine

    folder = args.index
    manifest = json.loads((folder / "manifest.json").read_text())
    chunks = [_chunk_path(folder, c) for c in range(-(-manifest["rows"] // manifest["chunk_rows"]))]
    rows = np.concatenate([l2_normalize(np.load(c)) for c in chunks])  # (N, d)
    engine = Engine.load(args.model, decoder=None, open_vocabulary=False, device=args.device)
    queries = [line.strip() for line in args.queries.read_text(encoding="utf-8").splitlines() if line.strip()]
    q = engine.encode(queries[:args.n_queries], normalize=True).astype(np.float32)  # (Q, d)
    exact = faiss.IndexFlatIP(rows.shape[1])
    exact.add(rows)
    faiss.omp_set_num_threads(args.build_threads)
    truth = exact.search(q, K)[1]  # (Q, K)
    lists = 4 * int(np.sqrt(len(rows)))
    results = []
    for factory, settings in CANDIDATES.items():
        name = factory.format(lists=lists)
        if args.only and name != "Flat" and args.only not in name:
            continue
        started = time.perf_counter()
        index = exact if name == "Flat" else faiss.index_factory(rows.shape[1], name, faiss.METRIC_INNER_PRODUCT)
        faiss.omp_set_num_threads(args.build_threads)
        if name != "Flat":
            index.train(rows[np.random.default_rng(0).permutation(len(rows))[:64 * lists]])
            index.add(rows)
        build = time.perf_counter() - started
        faiss.omp_set_num_threads(args.threads)
        size = len(faiss.serialize_index(index))
        for setting in settings:
            for key, value in setting.items():
                faiss.ParameterSpace().set_index_parameter(index, key, value)
            recall, ms = measure(index, q, truth)
            results.append({"index": name, **setting, "recall@10": round(recall, 4), "ms_per_query": round(ms, 3),
                            "build_s": round(build, 1), "MB": round(size / 1e6, 1)})
            print(json.dumps(results[-1]), flush=True)
    before = rss_mb()
    loaded = CorpusIndex(folder)
    loaded.nearest(q[:1], K)
    added = rss_mb() - before
    summary = {"rows": len(rows), "queries": len(q), "threads": args.threads,
               "corpus_index_seconds": manifest.get("seconds"),
               "app_index": loaded.index.__class__.__name__, "app_added_rss_MB": round(added), "results": results}
    print(json.dumps({k: v for k, v in summary.items() if k != "results"}))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=1))
    return 0


def measure(index, queries: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """(recall@K against `truth`, mean milliseconds a query searched one at a time)."""
    index.search(queries[:10], K)  # warm-up
    found, started = [], time.perf_counter()
    for row in queries:
        found.append(index.search(row[None], K)[1][0])
    ms = 1000 * (time.perf_counter() - started) / len(queries)
    recall = np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth)])
    return float(recall), ms


def rss_mb() -> float:
    """This process's resident memory now (Linux), in MB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 1e6


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="a folder `python -m core corpus-index` built")
    parser.add_argument("--queries", type=Path, required=True, help="sentences the corpus does not hold")
    parser.add_argument("--n-queries", type=int, default=1000)
    parser.add_argument("--model", default=None)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2, help="threads a search uses (this machine: 2 cores)")
    parser.add_argument("--build-threads", type=int, default=2, help="threads that build the indexes")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--only", default="", help="measure only the indexes whose name contains this (and Flat)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    raise SystemExit(main())
