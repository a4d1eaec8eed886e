"""A collection stored as one LanceDB table: (row_id, text, vector, the corpus's metadata columns), the
model's fingerprint and the corpus's digest in the table's schema metadata. `uri` is what
`lancedb.connect` opens: a folder (embedded, the default) or object storage (s3://..., gs://...) that
many machines share.

Writing is idempotent per row id (`write_rows`: merge-insert, a row id already there is left as it is),
so a batch written twice (a retried worker, a resumed run) is stored once. The index is LanceDB's IVF with
RaBitQ codes (one bit a dimension) and exact re-ranking of the candidates from the stored float32 vectors
(`refine_factor`), chosen over IVF-PQ, IVF-SQ8 and IVF-HNSW-SQ8 by recall against exact search and time a
query; a table under BRUTE_FORCE_ROWS is searched exactly (docs/results.md, "Collections on Ray Data and LanceDB").
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..readout import EmbeddedTexts, Reference
from .sources import ROW_ID, TEXT, VECTOR

TABLE = "sentences"
MODEL_KEY, CORPUS_KEY = b"defsent.model", b"defsent.corpus"
# Chosen on 1M vectors against exact search (bench/bench_collection.py, docs/results.md):
BRUTE_FORCE_ROWS = 100_000  # below it an exact scan is fast enough (~15-40 ms on 2 cores) and needs no build
# Chosen at 1M rows (docs/scale.md): IVF1000,RQ1 probing 256 lists, 200 candidates re-ranked: recall@10 .966 in
# 7.8 ms a query on 2 busy cores (IVF-PQ48: .936 in 20 ms; at 100k IVF-SQ8 and IVF-HNSW-SQ8 were slower for it).
INDEX_KINDS = ("ivf_pq", "ivf_sq", "ivf_rq", "ivf_hnsw_sq")  # LanceDB's vector indexes the bench compares
INDEX_KIND = "ivf_rq"
NPROBES = 256
REFINE_FACTOR = 20  # candidates re-ranked exactly: k x REFINE_FACTOR
EF = 0  # HNSW's candidate list in each probed list (ivf_hnsw_sq only; 0: LanceDB's default)
SUB_VECTOR_DIMS = 8  # PQ: 384 dimensions -> 48 codes of one byte
EMBEDDING_TIME = "about 1 h for the million on 2 quiet CPU cores, minutes on a GPU"  # docs/scale.md


def connect(uri: str):
    import lancedb

    return lancedb.connect(uri)


def table_schema(corpus: pa.Schema, dimensions: int, fingerprint: str, digest: str) -> pa.Schema:
    """(row_id, text, vector float32[dimensions], the corpus's other columns) with the model's fingerprint
    and the corpus's digest as metadata."""
    fields = [corpus.field(ROW_ID), corpus.field(TEXT), pa.field(VECTOR, pa.list_(pa.float32(), dimensions))]
    fields += [f for f in corpus if f.name not in (ROW_ID, TEXT)]
    return pa.schema(fields, metadata={MODEL_KEY: fingerprint.encode(), CORPUS_KEY: digest.encode()})


def open_for_writing(uri: str, schema: pa.Schema):
    """(the table at `uri`, the row ids it holds already): created empty when new; ValueError (nothing
    written) when it holds another model's vectors or another corpus's rows."""
    db = connect(uri)
    if TABLE not in _table_names(db):
        return db.create_table(TABLE, schema=schema), np.zeros(0, np.int64)
    table = db.open_table(TABLE)
    check_model(table, uri, schema.metadata[MODEL_KEY].decode())
    if table.schema.metadata.get(CORPUS_KEY) != schema.metadata[CORPUS_KEY]:
        raise ValueError(f"{uri} was begun from another corpus (or --limit, --text-column): choose another --out")
    if table.schema.remove_metadata() != schema.remove_metadata():
        raise ValueError(f"{uri} holds other columns than this corpus's: choose another --out")
    return table, stored_row_ids(table)


def check_model(table, uri: str, fingerprint: str) -> None:
    """ValueError unless the table's vectors are of the model of `fingerprint`."""
    stored = (table.schema.metadata or {}).get(MODEL_KEY, b"").decode()
    if stored != fingerprint:
        raise ValueError(f"{uri} holds another model's vectors ({stored[:12] or 'none named'}, this model is "
                         f"{fingerprint[:12]}): search it with that model, or embed the corpus again into another --out")


def stored_row_ids(table) -> np.ndarray:
    """Every row id in the table (int64), read from that column alone."""
    ids = table.search().select([ROW_ID]).limit(None).to_arrow().column(ROW_ID)
    return ids.to_numpy() if len(ids) else np.zeros(0, np.int64)


def write_rows(table, rows: pa.Table) -> None:
    """Insert `rows` (the table's columns) whose row id is not in the table yet: writing them twice stores them
    once, and a row id repeated within `rows` (a block Ray ran twice) is stored once too. One writer per table."""
    _, first = np.unique(rows.column(ROW_ID).to_numpy(), return_index=True)
    if len(first) < rows.num_rows:
        rows = rows.take(np.sort(first))
    table.merge_insert(ROW_ID).when_not_matched_insert_all().execute(rows)


def build_index(table, rows: int) -> str:
    """Index the vectors of a finished table (`vector_index` from BRUTE_FORCE_ROWS rows; exact search below) and
    its row ids (a B-tree, for look-ups by id); what was built, in words."""
    from lancedb.index import BTree

    described = f"exact search (under {BRUTE_FORCE_ROWS:,} rows)"
    if rows >= BRUTE_FORCE_ROWS:
        config, described = vector_index(rows, table.schema.field(VECTOR).type.list_size)
        table.create_index(VECTOR, config=config, replace=True)
    table.create_index(ROW_ID, config=BTree(), replace=True)  # last: it marks the collection complete (is_complete)
    return described


def index_is_current(table, rows: int) -> bool:
    """Whether the vector index of the table of `rows` rows is of the kind `build_index` builds now (none needed
    under BRUTE_FORCE_ROWS): a rerun of corpus-index indexes a finished collection of an older kind again."""
    if rows < BRUTE_FORCE_ROWS:
        return True
    wanted = type(vector_index(rows, table.schema.field(VECTOR).type.list_size)[0]).__name__  # "IvfRq": LanceDB's name
    return [i.index_type for i in table.list_indices() if VECTOR in i.columns] == [wanted]


def vector_index(rows: int, dimensions: int, kind: str = "", distance: str = "dot", lists: int = 0
                 ) -> tuple[object, str]:
    """(LanceDB's index config, its name in words) of the vector index `kind` (default INDEX_KIND) for `rows`
    unit vectors: `lists` IVF lists (0: sqrt(rows)); `distance` "dot" (on unit rows the cosine, without
    LanceDB's normalising; the bench compares "cosine")."""
    from lancedb.index import HnswSq, IvfPq, IvfRq, IvfSq

    kind, lists = kind or INDEX_KIND, lists or max(1, round(rows ** 0.5))
    if kind == "ivf_pq":
        codes = dimensions // SUB_VECTOR_DIMS
        return IvfPq(distance_type=distance, num_partitions=lists, num_sub_vectors=codes), \
            f"IVF{lists},PQ{codes} re-ranked exactly"
    configs = {"ivf_sq": (IvfSq, "SQ8"), "ivf_rq": (IvfRq, "RQ1"), "ivf_hnsw_sq": (HnswSq, "HNSW,SQ8")}
    if kind not in configs:
        raise ValueError(f"a vector index is one of {', '.join(INDEX_KINDS)}, not {kind!r}")
    make, name = configs[kind]
    return make(distance_type=distance, num_partitions=lists), f"IVF{lists},{name} re-ranked exactly"


def tuned(query, nprobes: int = 0, refine_factor: int = 0, ef: int = 0):
    """`query` (LanceDB's vector query) with the index's search settings: NPROBES lists, REFINE_FACTOR x k
    candidates re-ranked by the stored float32 vectors, EF for HNSW; each given here overrides its constant."""
    query = query.nprobes(nprobes or NPROBES).refine_factor(refine_factor or REFINE_FACTOR)
    return query.ef(ef or EF) if ef or EF else query


class Collection(Reference):
    """A stored collection (`core.readout.Reference`): `search` and `nearest` by cosine, `texts` and `rows`
    by row id. `fingerprint`: refuse a table of another model's vectors."""

    def __init__(self, uri: str, fingerprint: str | None = None):
        db = connect(uri)
        if TABLE not in _table_names(db):
            raise FileNotFoundError(f"{uri} holds no collection (python -m core corpus-index --corpus FILE --out {uri})")
        self.uri, self.table = uri, db.open_table(TABLE)
        if fingerprint is not None:
            check_model(self.table, uri, fingerprint)
        self.size = self.table.count_rows()
        self.indexed = bool([i for i in self.table.list_indices() if VECTOR in i.columns])
        self.columns = [f.name for f in self.table.schema if f.name not in (ROW_ID, TEXT, VECTOR)]
        self.texts = StoredTexts(self.table, self.size)
        self.name = f"{self.size:,} sentences of {uri}"
        self._vectors: tuple[np.ndarray, np.ndarray] | None = None  # (row ids, unit rows): exact search's

    def search(self, vectors: np.ndarray, k: int, columns: Sequence[str] = ()) -> list[list[dict]]:
        """For each vector (n, d), the k nearest rows, best first: {"row_id", "text", "cosine", column: value}."""
        units = np.stack([_unit(v) for v in np.atleast_2d(vectors)])
        wanted = [ROW_ID, TEXT, *columns]
        if self.indexed:
            return [self._indexed_search(unit, k, wanted) for unit in units]
        ids, cosines = self._exact_search(units, k)
        rows = _by_row_id(self.table, sorted(set(ids.ravel().tolist())), wanted).to_pylist()
        by_id = {row[ROW_ID]: row for row in rows}
        return [[{**by_id[i], "cosine": float(c)} for i, c in zip(r.tolist(), s)] for r, s in zip(ids, cosines)]

    def _indexed_search(self, unit: np.ndarray, k: int, wanted: list[str]) -> list[dict]:
        """LanceDB's index, its NPROBES lists' best k x REFINE_FACTOR re-ranked by the stored vectors (`tuned`)."""
        query = self.table.search(unit, vector_column_name=VECTOR).metric("dot").limit(k)
        hits = tuned(query).select([*wanted, "_distance"]).to_arrow()
        cosines = 1.0 - hits.column("_distance").to_numpy()  # LanceDB's dot distance is 1 - dot
        return [{**row, "cosine": float(c)} for row, c in zip(hits.select(wanted).to_pylist(), cosines)]

    def _exact_search(self, units: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(row ids, cosines), each (n, k), by every row's vector, held in memory after the first search
        (under BRUTE_FORCE_ROWS rows: at most 150 MB at 384 dimensions)."""
        if self._vectors is None:
            if self.size >= BRUTE_FORCE_ROWS:  # a run killed while indexing: never hold millions of rows
                raise RuntimeError(f"{self.uri} has {self.size:,} rows and no vector index: run corpus-index on it "
                                   "again to finish it")
            stored = self.table.search().select([ROW_ID, VECTOR]).limit(None).to_arrow()
            self._vectors = (stored.column(ROW_ID).to_numpy(),
                             np.stack(stored.column(VECTOR).to_numpy(zero_copy_only=False)).astype(np.float32))
        ids, matrix = self._vectors
        cosines = units @ matrix.T  # (n, N)
        top = np.argsort(-cosines, axis=1, kind="stable")[:, :min(k, len(ids))]
        return ids[top], np.take_along_axis(cosines, top, axis=1)

    def nearest(self, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        return [[(hit[ROW_ID], hit["cosine"]) for hit in row] for row in self.search(vectors, k)]

    def sample(self, size: int, seed: int = 0) -> EmbeddedTexts:
        """At most `size` rows drawn at random (the same ones for the same table and seed), in row-id order, as
        texts with their vectors and metadata columns (each value as text, "" for none): what a map draws. Drawn
        without listing every row (numpy's choice draws a few rows of many by Floyd's algorithm: no 800 MB range
        at 100M rows); every row is listed only when all are taken."""
        if self.size > size:
            offsets = np.sort(np.random.default_rng(seed).choice(self.size, size, replace=False))
        else:
            offsets = np.arange(self.size)
        rows = self.table.take_offsets(offsets.tolist()).select([ROW_ID, TEXT, VECTOR, *self.columns]).to_arrow()
        rows = rows.sort_by(ROW_ID)
        columns = {name: ["" if v is None else str(v) for v in rows.column(name).to_pylist()] for name in self.columns}
        shown = f"{len(rows):,} of {self.size:,}" if len(rows) < self.size else f"all {self.size:,}"
        return EmbeddedTexts(rows.column(TEXT).to_pylist(), _vector_matrix(rows), name=f"{shown} rows of {self.uri}",
                             columns=columns)

    def nearest_texts(self, vectors: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        return [[(hit[TEXT], hit["cosine"]) for hit in row] for row in self.search(vectors, k)]

    def rows(self, indices: list[int]) -> np.ndarray:
        found = _by_row_id(self.table, indices, [ROW_ID, VECTOR])
        return np.stack(found.column(VECTOR).to_numpy(zero_copy_only=False)).astype(np.float32)


def training_rows(uri: str, fingerprint: str, first: int = 0) -> tuple[list[str], np.ndarray]:
    """(texts, unit float32 vectors (n, d)) of the finished collection at `uri`, in row-id order (the corpus
    file's): the first `first` rows, or all of them if 0. ValueError, reading nothing, where `uri` holds no
    collection, an unfinished one (corpus-index resumes it) or another model's vectors (not `fingerprint`)."""
    if first < 0:
        raise ValueError(f"the first N rows (N >= 1) or all (0), not {first}")
    if not is_collection(uri):
        raise ValueError(f"no collection at {uri} (python -m core corpus-index --corpus FILE --out {uri})")
    if not is_complete(uri):
        raise ValueError(f"{uri} is not finished: run corpus-index on it again to finish it")
    table = connect(uri).open_table(TABLE)
    check_model(table, uri, fingerprint)
    ids = np.sort(stored_row_ids(table))
    if first > len(ids):
        raise ValueError(f"{uri} holds {len(ids):,} rows, fewer than the {first:,} asked for")
    query = table.search().select([ROW_ID, TEXT, VECTOR]).limit(None)
    if first:
        query = query.where(f"{ROW_ID} <= {int(ids[first - 1])}")
    rows = query.to_arrow().sort_by(ROW_ID)
    return rows.column(TEXT).to_pylist(), _vector_matrix(rows)


def _vector_matrix(rows: pa.Table) -> np.ndarray:
    """The vector column of `rows` as one float32 matrix (n, d), without a Python object a row (`flatten`: a
    slice's own values, not its parent's)."""
    vectors = rows.column(VECTOR).combine_chunks()
    matrix = vectors.flatten().to_numpy(zero_copy_only=False).reshape(len(rows), vectors.type.list_size)
    return matrix.astype(np.float32, copy=False)


class StoredTexts(Sequence[str]):
    """A collection's texts by row id, read from the table when asked (not held in memory)."""

    def __init__(self, table, size: int):
        self.table, self.size = table, size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, row_id):
        if isinstance(row_id, slice):
            return [self[i] for i in range(*row_id.indices(self.size))]
        return _by_row_id(self.table, [int(row_id)], [ROW_ID, TEXT]).column(TEXT)[0].as_py()


def _by_row_id(table, ids: list[int], columns: list[str]) -> pa.Table:
    """The rows of `ids`, in that order; KeyError for an id the table does not hold."""
    found = table.search().where(f"{ROW_ID} IN ({', '.join(str(int(i)) for i in ids)})").select(columns) \
        .limit(None).to_arrow()
    position = {r: p for p, r in enumerate(found.column(ROW_ID).to_pylist())}
    missing = [i for i in ids if i not in position]
    if missing:
        raise KeyError(f"no row {missing[0]} in the collection")
    return found.take([position[i] for i in ids])


def _unit(vector: np.ndarray) -> np.ndarray:
    return (vector / max(float(np.linalg.norm(vector)), 1e-12)).astype(np.float32)


def _table_names(db) -> list[str]:
    listed = db.list_tables()
    return list(getattr(listed, "tables", listed))


def collection_uri(fingerprint: str, name: str) -> str:
    """Where `corpus-index` puts collection `name` of the model of `fingerprint` when no --out is given,
    and where the app looks for it (the user cache)."""
    from ..paths import user_cache_dir

    if not name.replace("-", "").isalnum():
        raise ValueError(f"a collection's name is letters, digits and '-', not {name!r}")
    return str(user_cache_dir("collections") / f"{name}-{fingerprint[:16]}")


def build_steps(model_flag: str = "") -> str:
    """How the modern corpus's collection of a model is built, both steps with what they take on 2 CPU
    cores: what the app and the command say when it is missing. `model_flag`: " --model X" for another
    model than the shipped one."""
    return ("first build the corpus, `python -m core vec2sent-corpus --modern --out data/cache/corpus-modern` "
            "(1,028,415 sentences, 8-24 min), then embed it for the model, `python -m core corpus-index"
            f"{model_flag}` (on Ray, resumable; {EMBEDDING_TIME})")


def is_complete(uri: str) -> bool:
    """Whether `uri` holds a finished collection: its row ids' index is built last (`build_index`)."""
    if not is_collection(uri):
        return False  # not opened: no LanceDB import for a collection that is not there
    db = connect(uri)
    return TABLE in _table_names(db) and any(ROW_ID in i.columns for i in db.open_table(TABLE).list_indices())


def table_version(uri: str) -> int:
    """The version of the collection's table at `uri`: it grows with every write."""
    return connect(uri).open_table(TABLE).version


def is_collection(location: str) -> bool:
    """Whether `location` names a LanceDB collection (a URI, or a folder holding the table), not a file."""
    return "://" in location or (Path(location) / f"{TABLE}.lance").is_dir()
