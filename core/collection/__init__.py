"""A user's own corpus as a searchable collection: read (`read_corpus`: text, CSV/TSV, JSONL, Parquet),
embedded on Ray Data (`embed_corpus`: this machine or a Ray cluster) and stored and searched in LanceDB
(`Collection`). Ray is imported only while `embed_corpus` runs; LanceDB only when a table is opened.
"""
from .embed import embed_corpus
from .sources import MAX_ROWS, read_corpus
from .store import (
    Collection,
    build_steps,
    collection_uri,
    is_collection,
    is_complete,
    table_version,
    training_rows,
)

__all__ = ["MAX_ROWS", "Collection", "build_steps", "collection_uri", "embed_corpus", "is_collection", "is_complete",
           "read_corpus", "table_version", "training_rows"]
