"""A collection of the user's own, opened by its path on a server of one's own (never in public mode): a
LanceDB table `python -m core corpus-index --corpus FILE --out PATH` built (core/collection/). The Similarity
tab searches it, answering with each row's metadata; the Map draws a sample of it with its metadata columns
as colours; an analogy's or interpolation's nearest sentences come from the one a session opened last.

Plain functions over core.collection, no gradio; LanceDB is imported only when a collection is opened.
"""
from __future__ import annotations

import os

from core.collection import Collection, is_collection, is_complete, table_version
from core.readout import EmbeddedTexts

from ..shared import services as sv
from ..shared.models import ActiveModel

MY_COLLECTION = "my collection (by its path)"
MAX_MAP_SAMPLE = 20_000  # rows of a collection a map draws at most (issue 72: "a sample of 20,000")
PUBLIC_REFUSAL = ("A collection is opened by its path on a server of your own only (`python app.py`), not on a "
                  "public one.")
BUILD_ONE = "python -m core corpus-index --corpus FILE --out PATH"
NONE_OPENED = (f"{MY_COLLECTION.capitalize()}: none opened yet for this model. Search one in the Similarity tab or "
               "draw it on the Map first (its path there).")


def checked_location(active: ActiveModel, path: str | None, public: bool) -> tuple[str, str]:
    """(where the finished collection at `path` is: a folder or a URI LanceDB opens, the key of what is there for the
    model of `active`: a collection opened is kept under it, `Session.open_collection`). ValueError saying why not:
    public mode, no path, no collection there, an unfinished one."""
    if public:
        raise ValueError(PUBLIC_REFUSAL)
    location = (path or "").strip()
    if not location:
        raise ValueError(f"Enter the path of a collection of yours (made by `{BUILD_ONE}`).")
    if "://" not in location:
        location = os.path.expanduser(location)
    if not is_collection(location):
        raise ValueError(f"No collection at {location!r}: make one with `{BUILD_ONE}`.")
    if not is_complete(location):
        raise ValueError(f"The collection at {location!r} is not finished: run corpus-index on it again to finish it.")
    return location, f"{active.engine.fingerprint} {location} {table_version(location)}"  # rebuilt: opened again


def is_opened_for(key: str, active: ActiveModel) -> bool:
    """Whether the collection kept under `key` (`checked_location`) holds the vectors of `active`'s model."""
    return key.startswith(active.engine.fingerprint + " ")


def search_collection(active: ActiveModel, collection: Collection, query: str, k: int) -> dict:
    """The k rows of `collection` nearest `query` as a table: {"headers": rank, cosine, text and the collection's
    metadata columns, "data": one row a hit}; ValueError for k out of 1..MAX_K (a raw API call's k is not the slider's)."""
    k = sv.check_k(k, "rows")
    vector = active.engine.encode([sv.check_text(query, "a query")], normalize=True)
    hits = collection.search(vector, k, collection.columns)[0]
    data = [[rank, round(hit["cosine"], 4), hit["text"], *(_cell(hit[c]) for c in collection.columns)]
            for rank, hit in enumerate(hits, 1)]
    return {"headers": ["rank", "cosine", "text", *collection.columns], "data": data}


def collection_sample(collection: Collection, size: int) -> EmbeddedTexts:
    """`size` rows of `collection` drawn at random (at most MAX_MAP_SAMPLE), with their metadata columns: a map's
    points, every one of them searchable and colourable by a column."""
    if not 1 <= size <= MAX_MAP_SAMPLE:
        raise ValueError(f"A map of a collection draws from 1 to {MAX_MAP_SAMPLE:,} of its rows, not {size:,}.")
    return collection.sample(size)


def _cell(value) -> str | int | float:
    """A metadata value as a table cell: numbers and text as they are, anything else as text ("" for none)."""
    return value if isinstance(value, (str, int, float)) else "" if value is None else str(value)
