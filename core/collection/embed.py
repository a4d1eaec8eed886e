"""Embed a corpus on Ray Data into a LanceDB table (core/collection/store.py).

    collection = embed_corpus(read_corpus(path), "data/mine.lance", model=None)              # this machine
    collection = embed_corpus(corpus, "s3://bucket/mine", model=None, address="ray://head:10001")  # a cluster

Ray Data streams the rows missing from the table, longest texts first (blocks of texts of one length pad little:
a block of random lengths pads each text to its longest, 4x the work on the feature norms' descriptions), through
a pool of actors (`SentenceEmbedder`: the model loaded once per actor; one actor per GPU when the cluster has
GPUs, else one per CPU, with one thread, encoding CPU_BATCH sentences at once); this process writes
what they return into the table every WRITE_ROWS rows, idempotently by row id. A rerun embeds only the row
ids the table does not hold; a worker that dies mid-batch has its batch redone by Ray (lineage), and the
write by row id stores a row once however often it arrives.

Ray is imported here only: the app and the other commands never import it.
"""
from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
from pyarrow import compute

from .sources import ROW_ID, TEXT, VECTOR, corpus_digest
from .store import Collection, build_index, index_is_current, is_complete, open_for_writing, table_schema, write_rows

Progress = Callable[[str, int, int], None]  # (stage, done, total)
WRITE_ROWS = 16_384  # rows gathered before one write: one LanceDB fragment each, not one a batch
BLOCK_ROWS = 512  # rows in one Ray block (rounded up to whole batches): the unit a dead worker's replacement redoes
CPU_BATCH = 32  # sentences a one-thread CPU actor encodes at once: 385 rows/s against 335 at 128 (docs/results.md)
GPU_BATCH = 128


class SentenceEmbedder:
    """A Ray Data actor: loads the model once, then turns batches of (row_id, text) into (row_id, vector
    unit float32)."""

    def __init__(self, model: str | None, device: str, threads: int, batch_size: int):
        import torch

        from ..engine import Engine

        torch.set_num_threads(threads)
        self.engine = Engine.load(model, decoder=None, open_vocabulary=False, device=device)
        self.batch_size = batch_size

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        vectors = self.engine.encode(list(batch[TEXT]), batch_size=self.batch_size, normalize=True)
        return {ROW_ID: batch[ROW_ID], VECTOR: vectors.astype(np.float32)}


def embed_corpus(corpus: pa.Table, uri: str, engine, model: str | None = None, address: str | None = None,
                 batch_size: int | None = None, progress: Progress | None = None) -> tuple[Collection, str]:
    """Embed the rows of `corpus` (`read_corpus`) that the table at `uri` does not hold yet with the model
    of `engine` (`model`: its checkpoint directory, which every worker loads; None: the shipped one) on Ray
    (`address`: a cluster, "auto" the one already running here; None: a Ray of its own on this
    machine), `batch_size` sentences at once in each worker (None: CPU_BATCH on CPUs, GPU_BATCH on GPUs),
    then index the table (a finished one only when its index is of an older kind). Returns the
    collection and what index it has, in words. ValueError, before anything is embedded, for a table of another model or corpus."""
    schema = table_schema(corpus.schema, engine.encoder.hidden_size, engine.fingerprint, corpus_digest(corpus))
    table, stored = open_for_writing(uri, schema)
    missing = corpus.filter(compute.invert(compute.is_in(corpus.column(ROW_ID), pa.array(stored, pa.int64()))))
    done = len(corpus) - len(missing)
    if progress:
        progress("embedding", done, len(corpus))
    if not len(missing) and is_complete(uri) and index_is_current(table, len(corpus)):
        return Collection(uri, engine.fingerprint), "already complete"  # its indexes stand (a rebuild: minutes)
    if len(missing):
        # Ray shut down, when started here, after the last write, on errors too; the blocks' iterator closed first,
        # which stops Ray Data's executor. Left open (an interrupted run's traceback holds it), its threads can still
        # call Ray after the shutdown, and Ray starts itself on such a call: the next run's ray.init then failed
        # ("Perhaps you called ray.init twice", tests/test_collections.py, 2 of 4 clean-clone runs in session 51)
        with _ray(address), contextlib.closing(_embedded(missing, model, batch_size)) as blocks:
            for embedded in _stored(blocks, table, corpus, schema, len(missing)):
                if progress:  # each block: the first write, of the longest texts, can be minutes away
                    progress("embedding", min(done + embedded, len(corpus)), len(corpus))
    index = build_index(table, table.count_rows())
    return Collection(uri, engine.fingerprint), index


def _stored(blocks: Iterator[dict], table, corpus: pa.Table, schema: pa.Schema, expected: int) -> Iterator[int]:
    """Write `blocks` of (row_id, vector) into `table`, WRITE_ROWS rows a write (one LanceDB fragment each, not
    one a block), yielding the rows embedded after each block; the `expected` count only once all are stored."""
    pending: list[dict] = []
    pending_rows = embedded = 0
    for block in blocks:
        pending.append(block)
        pending_rows += len(block[ROW_ID])
        embedded += len(block[ROW_ID])
        if pending_rows >= WRITE_ROWS:
            write_rows(table, _with_vectors(corpus, _joined(pending), schema))
            pending, pending_rows = [], 0
        if embedded < expected or not pending:
            yield embedded
    if pending:
        write_rows(table, _with_vectors(corpus, _joined(pending), schema))
        yield embedded


@contextlib.contextmanager
def _ray(address: str | None) -> Iterator[None]:
    """Ray connected for the block: to the cluster at `address` ("auto": the one running here; None: a Ray of
    its own on this machine, shut down at the end). Connected already: that connection, left open."""
    import logging
    import os
    import warnings

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # offline by default: Ray would report usage to its makers
    import ray
    import ray.data  # before the level below: its first import sets its loggers' levels again

    started_here = not ray.is_initialized()
    if started_here:
        with warnings.catch_warnings():  # Ray's processes are forked and exec'd at once: LanceDB's state is not shared
            warnings.filterwarnings("ignore", "lancedb fork support", RuntimeWarning)
            ray.init(address=address or "local", include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    # Ray's errors only: its notes on each run's plan, log folder, progress bars and token auth say nothing the
    # command's own progress lines do not
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    try:
        yield
    finally:
        if started_here:
            ray.shutdown()


def _embedded(missing: pa.Table, model: str | None, batch_size: int | None) -> Iterator[dict]:
    """(row_id, vector) arrays of every row of `missing`, a Ray block (BLOCK_ROWS rows) at a time, in the order
    Ray returns them: a block a dead worker was embedding comes again, from its replacement."""
    data = _embedding_dataset(missing.select([ROW_ID, TEXT]), model, batch_size)
    return iter(data.iter_batches(batch_size=None, batch_format="numpy"))  # a generator: `close` stops the run


def _embedding_dataset(rows: pa.Table, model: str | None, batch_size: int | None):
    """The Ray dataset of `rows`, longest texts first, mapped by a pool of `SentenceEmbedder` actors sized to
    the cluster."""
    import ray
    import ray.data

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False  # the command prints its own progress, with rate and time left
    resources = ray.cluster_resources()
    gpus, cpus = int(resources.get("GPU", 0)), max(1, int(resources.get("CPU", 1)))
    batch_size = batch_size or (GPU_BATCH if gpus else CPU_BATCH)
    rows, block = longest_first(rows), batch_size * -(-BLOCK_ROWS // batch_size)  # whole batches a block
    data = ray.data.from_arrow([rows.slice(start, block) for start in range(0, len(rows), block)])
    each = {"num_gpus": 1} if gpus else {"num_cpus": 1}  # one actor a GPU, else one a CPU with one thread
    return data.map_batches(SentenceEmbedder, batch_size=batch_size, batch_format="numpy",
                            compute=ray.data.ActorPoolStrategy(min_size=1, max_size=gpus or cpus),
                            fn_constructor_kwargs=dict(model=model, device="cuda" if gpus else "cpu", threads=1,
                                                       batch_size=batch_size), **each)


def longest_first(rows: pa.Table) -> pa.Table:
    """`rows` ordered by the length of their text, longest first (ties in their order)."""
    lengths = compute.utf8_length(rows.column(TEXT)).to_numpy(zero_copy_only=False)
    return rows.take(pa.array(np.argsort(-lengths, kind="stable")))


def _joined(batches: list[dict]) -> dict[str, np.ndarray]:
    return {ROW_ID: np.concatenate([b[ROW_ID] for b in batches]),
            VECTOR: np.concatenate([b[VECTOR] for b in batches])}


def _with_vectors(corpus: pa.Table, embedded: dict[str, np.ndarray], schema: pa.Schema) -> pa.Table:
    """The corpus's rows of `embedded`'s row ids with their vectors, in the table's column order."""
    positions = np.searchsorted(corpus.column(ROW_ID).to_numpy(), embedded[ROW_ID])  # row ids ascend
    rows = corpus.take(pa.array(positions))
    vectors = np.ascontiguousarray(embedded[VECTOR], dtype=np.float32)
    vector_column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1])
    columns = {**{name: rows.column(name) for name in rows.column_names}, VECTOR: vector_column}
    return pa.table([columns[f.name] for f in schema], schema=schema)
