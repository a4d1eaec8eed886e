"""A collection's index (core/collection/store.py) against exact search: recall@10 and ms a query.

    python -m bench.bench_collection --rows 1000000 --queries 500               # synthetic vectors (below)
    python -m bench.bench_collection --collection data/posts --queries 500      # a built collection's own
    python -m bench.bench_collection --collection URI --query-texts heldout.txt # ... and real queries
    python -m bench.bench_collection --rows 1000000 --faiss                     # and FAISS HNSW32,SQ8 beside it
    python -m bench.bench_collection --rows 1000000 --kinds ivf_sq,ivf_hnsw_sq --ef 0,40  # other LanceDB indexes
    python -m bench.bench_collection --real --queries 500                       # real vectors only (below)
    python -m bench.bench_collection --embed ../shared/data/feature-norms/feature-norms.tsv --text-column response \
        --rows 5000                                                             # rows/s: Ray against one process

Vectors: a built collection's (`--collection`; queries are its rows plus noise), or, where embedding a
million sentences is out of reach (2 CPU cores: about an hour), `--rows` synthetic unit vectors with the
structure of real ones: each is the shipped model's vector of a WordNet word or definition plus half of
another's plus noise (reconstructed from the open vocabulary's PQ codes, 264k rows; `synthetic_rows`), and
the queries are fresh such mixtures. `--real`: those 264k real vectors themselves (no mixing, no noise; rows
that coincide kept once), `--queries` of them drawn out of the table as the queries. For each index of `--kinds`
(core/collection/store.py `vector_index`: IVF-PQ, IVF-SQ8, IVF-RaBitQ, IVF-HNSW-SQ8; build seconds, index MB)
and each setting: `nprobes` lists probed, `refine_factor` x 10 candidates re-ranked exactly, `ef` (HNSW's),
recall@10 against exact inner-product search over the same float32 rows, and ms a query one at a time (the
app's case). Prints one JSON line a part, as each is measured.

`--embed FILE`: the first --rows rows of FILE embedded by the shipped model twice, in this process
(`Engine.encode`, batches of 128 over the texts sorted by length, as the hand-written loop `corpus-index` had
before Ray did) and by `embed_corpus` on a Ray of its own on this machine, into a temporary collection: rows
a second each (Ray's from the call to the last row stored: its start, the workers' model loading and the writes
included; the index built after that is timed apart) and their ratio, and the peak memory of this process and
of the Ray workers.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

K = 10


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import pyarrow as pa

    from core.collection import store
    from core.collection.store import TABLE, build_index, connect, vector_index

    store.SUB_VECTOR_DIMS = args.sub_vector_dims

    if args.embed:
        print(json.dumps(measure_embedding(args.embed, args.text_column, args.rows, args.tmp)))
        return 0
    rng = np.random.default_rng(args.seed)
    if args.collection:
        table = connect(args.collection).open_table(TABLE)
        vectors = table.to_arrow().column("vector").combine_chunks()
        rows = vectors.values.to_numpy().reshape(len(vectors), -1).astype(np.float32)
        if args.query_texts:
            queries = query_vectors(args.query_texts, args.queries, rng)
        else:
            picked = rows[rng.choice(len(rows), args.queries, replace=False)]
            queries = _unit(picked + 0.3 * rng.standard_normal(picked.shape).astype(np.float32) / np.sqrt(rows.shape[1]))
    elif args.real:
        rows = np.unique(real_rows(), axis=0)  # rebuilt from codes, some rows coincide: ties would blur recall
        rows = rows[rng.permutation(len(rows))]
        rows, queries = rows[args.queries:], rows[:args.queries]
    else:
        rows, queries = synthetic_rows(args.rows, args.queries, rng)
    truth = exact_nearest(rows, queries)
    vectors = args.collection or ("real" if args.real else "synthetic")
    report: dict = {"rows": len(rows), "queries": len(queries), "vectors": vectors}
    with tempfile.TemporaryDirectory(dir=args.tmp) as folder:
        vector = pa.FixedSizeListArray.from_arrays(pa.array(rows.ravel()), rows.shape[1])
        table = connect(folder).create_table(TABLE, data=pa.table({"row_id": np.arange(len(rows)), "vector": vector}))
        if args.exact:
            report["exact_lancedb"] = measure_lancedb(table, queries, truth, None)
        if not args.index:
            report["index"] = build_index(table, 0)
        print(json.dumps(report), flush=True)  # each part as it is measured: a long run killed keeps what it had
        for kind in args.kinds if args.index else []:
            started, before = time.perf_counter(), _indices_mb(Path(folder))
            config, described = vector_index(len(rows), rows.shape[1], kind, args.distance, args.lists)
            table.create_index("vector", config=config, replace=True)
            built = {"index": described, "distance": args.distance, "build_s": round(time.perf_counter() - started, 1),
                     "index_mb": round(_indices_mb(Path(folder)) - before, 1)}
            print(json.dumps(built), flush=True)
            for n in args.nprobes:
                for r in args.refine:
                    for ef in args.ef if kind == "ivf_hnsw_sq" else [0]:
                        setting = {"nprobes": n, "refine_factor": r, **({"ef": ef} if ef else {})}
                        measured = measure_lancedb(table, queries, truth, (n, r, ef), args.distance)
                        print(json.dumps({**setting, **measured}), flush=True)
    if args.faiss:
        print(json.dumps({"faiss_hnsw32_sq8": measure_faiss(rows, queries, truth)}), flush=True)
    return 0


def measure_embedding(path: Path, text_column: str | None, rows: int, tmp: str | None) -> dict:
    """Rows a second of one process's `Engine.encode` and of `embed_corpus` on a local Ray, on the same rows."""
    import resource

    from core.collection import embed_corpus, read_corpus
    from core.engine import Engine

    corpus = read_corpus(path, text_column, rows)
    texts = corpus.column("text").to_pylist()
    engine = Engine.load(None, decoder=None, open_vocabulary=False, device="cpu")
    started = time.perf_counter()
    engine.encode(texts, batch_size=128, normalize=True)
    one_process = len(texts) / (time.perf_counter() - started)
    embedded_at: list[float] = []  # when the last row was stored: the index is built after it

    def last_write(stage: str, done: int, total: int) -> None:
        if done == total:
            embedded_at.append(time.perf_counter())

    with tempfile.TemporaryDirectory(dir=tmp) as folder:
        started = time.perf_counter()
        _, index = embed_corpus(corpus, folder, engine, progress=last_write)  # its own batch size (CPU_BATCH here)
        finished = time.perf_counter()
    on_ray = len(texts) / (embedded_at[-1] - started)
    peak = {who: round(resource.getrusage(which).ru_maxrss / 1e3) for who, which in
            (("this_process_mb", resource.RUSAGE_SELF), ("largest_worker_mb", resource.RUSAGE_CHILDREN))}
    return {"rows": len(texts), "one_process_rows_s": round(one_process, 1), "ray_rows_s": round(on_ray, 1),
            "ratio": round(on_ray / one_process, 3), "index": index,
            "index_build_s": round(finished - embedded_at[-1], 1), **peak}


def query_vectors(path: Path, n: int, rng: np.random.Generator) -> np.ndarray:
    """`n` lines of `path` drawn at random, embedded by the shipped model: real queries a collection does not hold
    (for the modern corpus, its held-out sentences)."""
    from core.engine import Engine

    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [lines[i] for i in rng.choice(len(lines), min(n, len(lines)), replace=False)]
    return Engine.load(None, decoder=None, open_vocabulary=False, device="cpu").encode(texts, normalize=True)


def synthetic_rows(n: int, q: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(n rows, q queries), unit float32: real vectors (`real_rows`) mixed pairwise with noise."""
    real = real_rows()

    def mixtures(count: int) -> np.ndarray:
        out = np.empty((count, real.shape[1]), np.float32)
        for start in range(0, count, 100_000):
            m = min(100_000, count - start)
            a, b = rng.integers(0, len(real), m), rng.integers(0, len(real), m)
            noise = rng.standard_normal((m, real.shape[1]), dtype=np.float32) / np.sqrt(real.shape[1])
            out[start:start + m] = _unit(real[a] + 0.5 * real[b] + 0.3 * noise)
        return out
    return mixtures(n), mixtures(q)


def real_rows() -> np.ndarray:
    """The shipped model's vectors of 116,697 WordNet definitions and 147,306 words and phrases, rebuilt
    from the open vocabulary's product-quantized codes (checkpoints/defsent-minilm/open_vocab_codes)."""
    from safetensors.numpy import load_file

    from core.checkpoint import DEFAULT_CHECKPOINT

    stored = load_file(str(DEFAULT_CHECKPOINT / "open_vocab_codes.safetensors"))
    parts = []
    for kind in ("definition", "word"):
        books, codes = stored[f"{kind}_codebooks"].astype(np.float32), stored[f"{kind}_codes"]  # (M, 256, s), (n, M)
        parts.append(np.concatenate([books[m][codes[:, m]] for m in range(books.shape[0])], axis=1))
    return _unit(np.concatenate(parts))


def exact_nearest(rows: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """(q, K) row numbers of the K largest inner products, by numpy over all rows."""
    best = np.zeros((len(queries), 0), np.int64)
    scores = np.zeros((len(queries), 0), np.float32)
    for start in range(0, len(rows), 200_000):
        s = queries @ rows[start:start + 200_000].T
        top = np.argpartition(-s, K, axis=1)[:, :K]
        best = np.concatenate([best, top + start], axis=1)
        scores = np.concatenate([scores, np.take_along_axis(s, top, 1)], axis=1)
        keep = np.argsort(-scores, axis=1)[:, :K]
        best, scores = np.take_along_axis(best, keep, 1), np.take_along_axis(scores, keep, 1)
    return best


def _indices_mb(folder: Path) -> float:
    """MB of every index file of the table in `folder` (a replaced index's files stay: compare before and after)."""
    return sum(f.stat().st_size for f in folder.rglob("_indices/**/*") if f.is_file()) / 1e6


def measure_lancedb(table, queries: np.ndarray, truth: np.ndarray, setting: tuple[int, int, int] | None,
                    distance: str = "dot") -> dict:
    """Recall@K and ms a query (one at a time) of LanceDB's search: exact when `setting` is None, else
    the index with (nprobes, refine_factor, ef) as the app searches (core/collection/store.py `tuned`)."""
    from core.collection.store import tuned

    found, times = [], []
    for query in queries:
        search = table.search(query).metric(distance).limit(K).select(["row_id", "_distance"])
        search = search.bypass_vector_index() if setting is None else tuned(search, *setting)
        started = time.perf_counter()
        found.append(search.to_arrow().column("row_id").to_numpy())
        times.append(time.perf_counter() - started)
    return {"recall_at_10": recall(found, truth), "ms_median": round(1e3 * float(np.median(times)), 2),
            "ms_p90": round(1e3 * float(np.percentile(times, 90)), 2)}


def measure_faiss(rows: np.ndarray, queries: np.ndarray, truth: np.ndarray) -> dict:
    """FAISS HNSW32 over 8-bit rows with efSearch 128 (the index `corpus-index` built before LanceDB)."""
    import faiss

    started = time.perf_counter()
    index = faiss.index_factory(rows.shape[1], "HNSW32,SQ8", faiss.METRIC_INNER_PRODUCT)
    index.train(rows[:65_536])
    index.add(rows)
    build = time.perf_counter() - started
    index.hnsw.efSearch = 128
    found, times = [], []
    for query in queries:
        started = time.perf_counter()
        found.append(index.search(query[None], K)[1][0])
        times.append(time.perf_counter() - started)
    return {"recall_at_10": recall(found, truth), "ms_median": round(1e3 * float(np.median(times)), 2),
            "build_s": round(build, 1)}


def recall(found: list[np.ndarray], truth: np.ndarray) -> float:
    return round(float(np.mean([len(set(f.tolist()) & set(t.tolist())) / K for f, t in zip(found, truth)])), 4)


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def _numbers(text: str, least: int = 1) -> list[int]:
    numbers = [int(n) for n in text.split(",")]
    if not all(least <= n <= 10_000 for n in numbers):
        raise argparse.ArgumentTypeError(f"numbers from {least} to 10,000, not {text!r}")
    return numbers


def _kinds(text: str) -> list[str]:
    from core.collection.store import INDEX_KINDS

    kinds = text.split(",")
    if not set(kinds) <= set(INDEX_KINDS):
        raise argparse.ArgumentTypeError(f"indexes of {', '.join(INDEX_KINDS)}, not {text!r}")
    return kinds


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000, help="synthetic rows (1,000 to 10,000,000)")
    parser.add_argument("--collection", default=None, help="a built collection's vectors instead (a folder or URI)")
    parser.add_argument("--queries", type=int, default=500, help="queries (10 to 10,000)")
    parser.add_argument("--query-texts", type=Path, default=None,
                        help="with --collection: queries embedded from lines of this file (else its rows plus noise)")
    parser.add_argument("--nprobes", type=_numbers, default=[16, 32, 64, 128], help="IVF lists probed, e.g. 64,128")
    parser.add_argument("--refine", type=_numbers, default=[5, 10, 20], help="refine factors, e.g. 10,20")
    parser.add_argument("--kinds", type=_kinds, default=["ivf_pq"], help="vector indexes, e.g. ivf_pq,ivf_hnsw_sq")
    parser.add_argument("--ef", type=lambda t: _numbers(t, 0), default=[0], help="ivf_hnsw_sq: HNSW's ef values (0: LanceDB's default; LanceDB refuses one under 10 x refine)")
    parser.add_argument("--lists", type=int, default=0, help="IVF lists (0: sqrt(rows), as corpus-index builds)")
    parser.add_argument("--distance", choices=("dot", "cosine"), default="dot",
                        help="the index's distance (unit rows: the same order; cosine normalises every row again)")
    parser.add_argument("--real", action="store_true", help="the 264k real vectors alone (queries drawn out of them)")
    parser.add_argument("--sub-vector-dims", type=int, default=8, choices=(4, 8, 16),
                        help="dimensions a PQ code stands for (384 / 8 = 48 one-byte codes a row)")
    parser.add_argument("--exact", action="store_true", help="also LanceDB's own exact search (slow past 100k rows)")
    parser.add_argument("--no-index", dest="index", action="store_false", help="exact search only (no IVF-PQ build)")
    parser.add_argument("--faiss", action="store_true", help="also FAISS HNSW32,SQ8 (efSearch 128) on the same rows")
    parser.add_argument("--embed", type=Path, default=None, help="a corpus file: measure embedding rows/s instead")
    parser.add_argument("--text-column", default=None, help="--embed's column of texts (a table's)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic rows and the queries")
    parser.add_argument("--tmp", default=None, help="folder for the temporary table (default: the system's)")
    args = parser.parse_args(argv)
    if not 1_000 <= args.rows <= 10_000_000 or not 10 <= args.queries <= 10_000:
        parser.error("--rows must be from 1,000 to 10,000,000 and --queries from 10 to 10,000")
    return args


if __name__ == "__main__":
    raise SystemExit(main())
