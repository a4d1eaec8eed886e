"""A Map of a collection opened by its path (app/handlers/collection.py): the seconds to draw a sample of a large
table, coloured by a metadata column.

    python -m bench.bench_collection_map --rows 1000000 --sample 20000 [--method UMAP]

Writes a temporary collection of `--rows` random 384-d unit vectors with a text and one metadata column (seven
values), finished as corpus-index finishes one (its row-id index; no vector index: the Map does not search it),
then times `Collection.sample` twice and the Map handler's whole draw (the tiny test model answers; `--method`:
PCA, or UMAP, the tab's default, after the warm-up the app does at its start, timed apart). Prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

DIMENSIONS = 384
WRITE_ROWS = 100_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the collection (20,000 to 10,000,000)")
    parser.add_argument("--sample", type=int, default=20_000, help="rows the map draws (1 to 20,000)")
    parser.add_argument("--method", choices=("PCA", "UMAP"), default="PCA", help="the map's projection")
    parser.add_argument("--tmp", default=None, help="folder for the temporary collection (default: the system's)")
    args = parser.parse_args(argv)
    if not 20_000 <= args.rows <= 10_000_000 or not 1 <= args.sample <= 20_000:
        parser.error("--rows must be from 20,000 to 10,000,000 and --sample from 1 to 20,000")
    with tempfile.TemporaryDirectory(dir=args.tmp) as folder:
        print(json.dumps(measure(Path(folder), args.rows, args.sample, args.method)))
    return 0


def measure(folder: Path, rows: int, sample: int, method: str = "PCA") -> dict:
    from app.handlers import FILE_COLUMN, MY_COLLECTION, Session
    from core import Engine
    from core.collection import Collection
    from tests.conftest import build_tiny_bert, make_studio

    tiny = build_tiny_bert(folder / "tiny")
    engine = Engine.from_base(str(tiny))
    uri = str(folder / "collection")
    started = time.perf_counter()
    write_collection(uri, engine.fingerprint, rows)
    report = {"rows": rows, "sample": sample, "write_s": round(time.perf_counter() - started, 1)}
    collection = Collection(uri, engine.fingerprint)
    for attempt in ("sample_s", "sample_again_s"):
        started = time.perf_counter()
        collection.sample(sample)
        report[attempt] = round(time.perf_counter() - started, 2)
    studio = make_studio(engine, tiny, folder)
    if method == "UMAP":
        started = time.perf_counter()
        studio.projector.warm_up()
        report["umap_warm_up_s"] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    _, status, _ = studio.map.draw_map(MY_COLLECTION, sample, "", None, method, "2-D", FILE_COLUMN, Session(), "forum",
                                       uri)
    return {**report, "draw_map_s": round(time.perf_counter() - started, 2), "status": status}


def write_collection(uri: str, fingerprint: str, rows: int) -> None:
    """A finished collection of `rows` random unit vectors, "row N" texts and a "forum" column, as the store
    writes one (its schema, the model's fingerprint, the row-id index that marks it complete)."""
    import pyarrow as pa
    from lancedb.index import BTree

    from core.collection.sources import corpus_digest
    from core.collection.store import open_for_writing, table_schema

    rng = np.random.default_rng(0)
    corpus = pa.table({"row_id": pa.array(np.arange(rows), pa.int64()),
                       "text": pa.array([f"row {i}" for i in range(rows)]),
                       "forum": pa.array([f"f{i % 7}" for i in range(rows)])})
    schema = table_schema(corpus.schema, DIMENSIONS, fingerprint, corpus_digest(corpus))
    table, _ = open_for_writing(uri, schema)
    for start in range(0, rows, WRITE_ROWS):
        part = corpus.slice(start, WRITE_ROWS)
        vectors = rng.standard_normal((len(part), DIMENSIONS), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMENSIONS)
        table.add(pa.table([part.column("row_id"), part.column("text"), column, part.column("forum")], schema=schema))
    table.create_index("row_id", config=BTree(), replace=True)


if __name__ == "__main__":
    raise SystemExit(main())
