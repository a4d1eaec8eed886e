"""Per-user data: a `Session` (a gr.State in the UI, one per browser tab) and the map it last drew.

Everything else the handlers use is shared between users (app.handlers.backend); nothing here knows gradio.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.collection import Collection
from core.readout import EmbeddedTexts, Reference

from ..shared import services as sv
from ..shared.finetune import Upload
from ..shared.models import ActiveModel
from ..views import render
from .collection import MY_COLLECTION, NONE_OPENED, checked_location, is_opened_for

# What a session is told once its vectors went for other sessions' (`HeldVectors`, public mode)
DROPPED = ("{what} dropped to make room for other visitors' maps and files (this public server keeps a bounded amount "
           "of them, the least recently used going first): {again}.")
MAP_DROPPED = DROPPED.format(what="Your map was", again="draw it again")
FILE_DROPPED = DROPPED.format(what="The vectors of your uploaded file were",
                              again="search it in the Similarity tab, or draw it in the Map tab, again")


@dataclass
class MapData:
    """The last map a user drew: its points and their coordinates; `place` puts new vectors (n, d) on a
    fixed layout (the map of every word), None where the layout was computed for these points alone."""
    corpus: Reference
    coords: np.ndarray
    groups: list[str]
    title: str
    place: Callable[[np.ndarray], np.ndarray] | None = None
    regions: list | None = None  # named regions by zoom level (core.explore.vocabulary_map.region_labels), if any
    moves: list = field(default_factory=list)  # a fine-tune's own words: before/after arrows on an aligned map
    details: list[str] | None = None  # each point's second hover line (a word's first definition), if any
    model_points: bool = False  # its points' vectors are the model's, kept for every session (its reference sentences)

    @property
    def columns(self) -> dict[str, list[str]]:
        """The named columns of the user's file its points came from (name -> one value a point); {} if none."""
        return self.corpus.columns if isinstance(self.corpus, EmbeddedTexts) else {}

    @functools.cached_property
    def traces(self) -> list[list[int]]:
        """The points of each of the figure's group traces, in order (what the browser's selections name)."""
        return list(render.group_indices(self.groups).values())


@dataclass
class Session:
    """Per-user state: an uploaded search corpus, the last map, the validated fine-tune upload; in
    public mode also the model this user chose and saved (app.server.public)."""
    corpus: EmbeddedTexts | None = None
    corpus_key: str = ""
    map: MapData | None = None
    waiting: str = ""  # the map of every word (or definition) the last Draw map waits for ("": none)
    waiting_colour: str = "part of speech"  # ... and how it colours it, once drawn by the page's timer
    upload: Upload | None = None
    jobs: list[str] = field(default_factory=list)  # ids of the fine-tuning jobs started here, oldest first
    model: str = ""  # public mode: the name of the model this session chose ("": the server's)
    saved: dict[str, str] = field(default_factory=dict)  # public mode: job id -> the session's saved checkpoint
    key: str = ""  # public mode: names the session's folder of saved models; drawn on first use
    collection: Reference | None = None  # a collection of the user's own, opened last by its path (.collection)
    collection_key: str = ""  # ... of which model, where, which version of its table
    map_dropped: bool = False  # public mode: its last map went for other sessions' vectors (`HeldVectors`)
    corpus_dropped: bool = False  # ... its searched file's vectors did

    @property
    def job(self) -> str:
        """The id of the last fine-tuning job started here ("" if none)."""
        return self.jobs[-1] if self.jobs else ""

    def drawn_map(self) -> MapData:
        """The last map drawn here; ValueError saying to draw one (again, when it went for others': MAP_DROPPED)."""
        drawn = self.map
        if drawn is None:
            raise ValueError(MAP_DROPPED if self.map_dropped else "Draw a map first.")
        return drawn

    def vector_bytes(self) -> int:
        """Bytes of the vectors kept here: the searched file's, and the last map's points and coordinates, each
        array once; the map of every word's (a fixed layout: `MapData.place`) are its model's, shared, and not
        counted, nor those of a map of the model's reference sentences (`MapData.model_points`), only its
        coordinates."""
        arrays = [self.corpus.vectors] if self.corpus is not None else []
        drawn = self.map
        if drawn is not None and drawn.place is None:
            arrays.append(drawn.coords)
            if isinstance(drawn.corpus, EmbeddedTexts) and not drawn.model_points:
                arrays.append(drawn.corpus.vectors)
        return sum(array.nbytes for array in {id(array): array for array in arrays}.values())

    def drop_vectors(self) -> None:
        """Let go of the vectors kept here (`vector_bytes`) for other sessions' (`HeldVectors`): a request that needs
        the map then says to draw it again (`drawn_map`), one that needs the file's vectors to search it again
        (`reference`); a search of the file embeds it again by itself."""
        self.map_dropped, self.corpus_dropped = self.map is not None, self.corpus is not None
        self.corpus, self.corpus_key, self.map = None, "", None

    def folder_key(self) -> str:
        """The session's key, drawn now if it has none (gr.State copies one initial Session per user)."""
        if not self.key:
            self.key = uuid.uuid4().hex
        return self.key

    def reference(self, active: ActiveModel, choice: str, progress: sv.Progress = sv.no_progress) -> Reference:
        """The texts `choice` names for searching: one of sv.REFERENCE_CHOICES, or sv.UPLOADED_FILE, the text
        file this user last searched (Similarity tab) or drew (Map tab), as `active`'s model embedded it, or
        MY_COLLECTION, the collection this user last opened by its path there (local mode only)."""
        if choice == MY_COLLECTION:
            if self.collection is None or not is_opened_for(self.collection_key, active):
                raise ValueError(NONE_OPENED)
            return self.collection
        if choice != sv.UPLOADED_FILE:
            return active.reference_texts(choice, progress)
        if self.corpus is None and self.corpus_dropped:
            raise ValueError(FILE_DROPPED)
        if self.corpus is None or not self.corpus_key.startswith(active.engine.fingerprint):
            raise ValueError(f"{sv.UPLOADED_FILE.capitalize()}: none yet for this model. Upload a text file in the "
                             "Similarity tab and search it, or in the Map tab and draw it, first.")
        return self.corpus

    def open_collection(self, active: ActiveModel, path: str | None, public: bool) -> Collection:
        """The finished collection of the user's own at `path` (`checked_location`: ValueError saying why not, public
        mode among them) with `active`'s model's vectors (ValueError for another model's), kept here until another
        path, model or version of its table is asked for."""
        location, key = checked_location(active, path, public)
        if self.collection_key != key:
            self.collection, self.collection_key = Collection(location, active.engine.fingerprint), key
        return self.collection

    def uploaded_corpus(self, active: ActiveModel, file: str | None, progress: sv.Progress) -> EmbeddedTexts:
        """The user's uploaded corpus with its columns, if a table (sv.read_text_file), embedded once per
        texts and model (kept here): the Similarity tab searches it, the Map tab draws it."""
        if not file:
            raise ValueError("Upload a text file first (one sentence per line).")
        lines, columns = sv.read_text_file(file)
        key = active.engine.fingerprint + hashlib.sha1("\n".join(lines).encode()).hexdigest()
        if self.corpus_key != key:
            self.corpus = sv.embed_corpus(active.engine, lines, name=Path(file).name, progress=progress)
            self.corpus_key = key
        if self.corpus.columns != columns:  # the same texts under other columns: their vectors still hold
            self.corpus = dataclasses.replace(self.corpus, columns=columns)
        return self.corpus


class HeldVectors:
    """The vectors sessions keep for themselves (`Session.vector_bytes`: a searched file's, a drawn map's; up to ~60 MB
    a session), within `limit` bytes on the whole server (None: no bound, a private server). Past it the least
    recently used sessions' go first (`Session.drop_vectors`); the session being used keeps its own, so the bound is
    passed by at most what one request just made. Thread-safe; a session is held weakly (it ends with its gr.State)."""

    def __init__(self, limit: int | None = None):
        self.limit = limit
        self._lock = threading.RLock()  # a session freed while the lock is held forgets itself in the same thread
        self._sessions: OrderedDict[int, weakref.ref[Session]] = OrderedDict()  # least recently used first

    def used(self, session: Session) -> None:
        """`session` was used now, and may keep other vectors than before: it is the last to go; others' go, least
        recently used first, until all fit within the limit."""
        if self.limit is None:
            return
        key = id(session)
        with self._lock:
            self._sessions[key] = self._sessions.pop(key, None) or weakref.ref(session, lambda _: self._forget(key))
            held = [(k, other) for k, ref in self._sessions.items() if (other := ref()) is not None]
            total = sum(other.vector_bytes() for _, other in held)
            for k, other in held:
                if total <= self.limit or other is session:
                    break
                total -= other.vector_bytes()
                other.drop_vectors()
                del self._sessions[k]

    def _forget(self, key: int) -> None:
        with self._lock:
            self._sessions.pop(key, None)
