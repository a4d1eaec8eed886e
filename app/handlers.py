"""The app's request handlers: plain methods over the shared models, the projector and the job
manager, taking component values and returning component values (HTML, rows, plotly figures).

Per-user data travels in a `Session` (a gr.State in the UI); nothing per-user is stored here.
Invalid input raises ValueError with a readable message (the UI shows it as an error toast).
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import sys
import threading
import time
import uuid
from typing import Callable
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

import numpy as np

from core.engine import Engine
from core.runtime import return_freed_memory
from core.readout import EmbeddedTexts, InterpolationPoint, Reference, describe_borrowed
from core.vec2sent import APP_BEAM, MOST_EXACT
from core.explore import place
from core.words import frequency_bands
from core.words import format_table

from . import services as sv
from . import views
from .evaluation import senteval_markdown, smoke_markdown, sts_markdown, word_prediction_rows
from .export import csv_download, download_files, projector_download
from .finetune import (UPLOADS, FinetuneJob, FinetuneResult, FinetuneSettings, Upload, comparison_rows,
                       discard_staged, expected_staged_bytes, model_layers, remove_leftovers, save_finetuned,
                       stage_summary, training_threads, validate_upload)
from .jobs import BACKGROUND_NICENESS, DONE, QUEUED, RUNNING, Job, JobManager, JobQueueFull
from .models import ActiveModel, Models, ModelSpec, checkpoint_specs
from .projection import Projector
from .public import (YOURS, PublicLimits, is_visitors_model, make_room, model_cache_dir, models_bytes,
                     remove_all_sessions, remove_session, session_folder)
from .settings import folder_bytes

log = logging.getLogger(__name__)

EVERY_WORD_MAP = "every word (laid out once per model)"
MAX_HIGHLIGHTS = 200  # points ringed because their text contains the search (on the map of every word: many)
MAP_SOURCES = ("dictionary definitions", "vocabulary words", "my sentences", "uploaded file", EVERY_WORD_MAP)
MAP_POINTS = "this map's points"  # what the map's search looks among, unless the user picks a collection
MAX_MAP_NEIGHBOURS = 30
MAX_SELECTION_ROWS = 1_000  # rows of a map selection the table shows; its CSV holds every selected point
MAX_EXPORT_POINTS = 20_000  # Projector files of a map: its vectors as text, about 3.5 kB a 384-d point
COLOUR_BY = ("part of speech", "cluster", "frequency")
# The base before DefSent training is offered for comparison only: its word head was never trained.
BASE_WARNING_SHORT = "untrained, word predictions are noise"
BASE_WARNING = ("**Warning:** this is the untrained base: its word head was never trained, so its word predictions are "
                "noise (reverse dictionary, top words). It is here to compare with; similarity still works.")
OPEN_VOCABULARY_PENDING = ("Answers come from the 21.7k words the word head knows until the full vocabulary "
                           "(147k WordNet words and phrases) is ready: seconds after the model loads when its "
                           "checkpoint ships compact vectors, else a few minutes once per model (then cached).")
# Public mode's messages (the limits they name are app.public.PublicLimits).
SLOT_BUSY = ("The training slot is busy: another visitor's fine-tune is running, and this public server trains "
             "{slots} at a time. Try again when it has finished (a few minutes).")
QUOTA_USED = ("This session has started its {n} fine-tunes, the limit per visitor on this public server. "
              "To train more, run DefSent Studio on your own machine (see the README).")
STEPS_OVER = ("These settings make {steps:,} training steps; this public server trains at most {limit:,} a job, so "
              "that the one training slot is free again soon: lower Epochs or set Max steps.")
REFINED_STEPS = ("Refine takes about 2 seconds a step; this public server refines at most {limit} steps of an "
                 "interpolation, not {steps}: use fewer steps or turn Refine off.")
PUBLIC_EVALUATE = ("On this public server the Evaluate tab reads only the bundled smoke set (below); STS and "
                   "SentEval need their data on the server: run DefSent Studio on your own machine for them.")
NO_DECODER = ("No Vec2Sent decoder is available for the active encoder (none in checkpoints/ was trained on "
              "its fingerprint {fp}), so no sentence is decoded; the top words and the nearest reference "
              "sentences below are read off the vector directly. Train one with `python -m core vec2sent-train`.")


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

    @functools.cached_property
    def traces(self) -> list[list[int]]:
        """The points of each of the figure's group traces, in order (what the browser's selections name)."""
        return list(views.group_indices(self.groups).values())


@dataclass
class Session:
    """Per-user state: an uploaded search corpus, the last map, the validated fine-tune upload; in
    public mode also the model this user chose and saved (app.public)."""
    corpus: EmbeddedTexts | None = None
    corpus_key: str = ""
    map: MapData | None = None
    upload: Upload | None = None
    jobs: list[str] = field(default_factory=list)  # ids of the fine-tuning jobs started here, oldest first
    model: str = ""  # public mode: the name of the model this session chose ("": the server's)
    saved: dict[str, str] = field(default_factory=dict)  # public mode: job id -> the session's saved checkpoint
    key: str = ""  # public mode: names the session's folder of saved models; drawn on first use

    @property
    def job(self) -> str:
        """The id of the last fine-tuning job started here ("" if none)."""
        return self.jobs[-1] if self.jobs else ""

    def folder_key(self) -> str:
        """The session's key, drawn now if it has none (gr.State copies one initial Session per user)."""
        if not self.key:
            self.key = uuid.uuid4().hex
        return self.key


class Studio:
    """Everything the UI calls. Shared between users: models, projector, jobs.

    Starting one removes what killed processes left behind (see finetune.remove_leftovers).
    """

    def __init__(self, models: Models, projector: Projector | None = None, jobs: JobManager | None = None,
                 public: PublicLimits | None = None):
        self.models = models
        self.projector = projector or Projector()
        # Public mode (app.public): per-session models and saves, quotas, a disk budget; None: a private server.
        self.public = public
        if public is not None:  # models chosen by sessions stay loaded, a few at a time
            models.keep_loaded = public.loaded_models
        # In public mode the training slots have no waiting line: a Start while they are taken is refused.
        self.jobs = jobs or (JobManager(public.training_slots, 0) if public else JobManager())
        remove_leftovers(models.checkpoints)
        if public is not None:
            remove_all_sessions()

    # ---- the model a request uses -----------------------------------------------------------------
    def _session_model(self, session: Session | None) -> str:
        """The model this session chose: "" on a private server (one model for all) or when it chose none."""
        return session.model if self.public is not None and session is not None else ""

    def _model(self, session: Session | None = None, progress: sv.Progress = sv.no_progress) -> ActiveModel:
        """The model that answers this session: its own choice in public mode, else the active model."""
        name = self._session_model(session)
        if not name:
            return self.models.active()
        return self.models.shared(self._spec_named(name, session), progress)

    def _specs(self, session: Session | None) -> list[ModelSpec]:
        """The models one can choose: the server's, and in public mode this session's saved ones."""
        specs = self.models.specs()
        if self.public is not None and session is not None and session.key:
            specs += checkpoint_specs(session_folder(session.key), YOURS)
        return specs

    def _spec_named(self, name: str, session: Session | None) -> ModelSpec:
        for spec in self._specs(session):
            if spec.name == name:
                return spec
        if name.startswith(YOURS):
            raise ValueError(f"Your model {name!r} is no longer kept on this server (a session's saved models are "
                             "deleted when it ends or expires); choose another.")
        raise ValueError(f"No model called {name!r}; choose one from the list.")

    def end_session(self, session: Session) -> None:
        """A session ended (its tab was closed, or its state expired): drop its upload; in public mode
        also its saved models (unloaded too) and its fine-tunes (nobody can save them any more): a
        running one is cancelled (its run deletes what it staged), a finished one's model deleted."""
        UPLOADS.discard(session.upload)
        if self.public is None:
            return
        if session.key:
            self.models.forget(checkpoint_specs(session_folder(session.key), YOURS))
        remove_session(session.key)
        for job in filter(None, map(self._known_job, session.jobs)):
            if job.status in (QUEUED, RUNNING):
                self.jobs.cancel(job.id)
            else:
                discard_staged(job)

    def _known_job(self, job_id: str) -> Job | None:
        """The job with this id, or None if there is none (forgotten, or the server restarted)."""
        try:
            return self.jobs.get(job_id) if job_id else None
        except ValueError:
            return None

    # ---- active model ---------------------------------------------------------------------------
    def model_choices(self, session: Session | None = None) -> tuple[list[tuple[str, str]], str | None]:
        """((label, name) of each model one can switch to, the chosen one's name or None while loading):
        the active model's, or in public mode the session's choice. The untrained base's label says what it is."""
        active = self.models.active(timeout=0) if self.models.ready else None
        choices = [(f"{spec.name}: {BASE_WARNING_SHORT}" if spec.path is None else spec.name, spec.name)
                   for spec in self._specs(session)]
        return choices, self._session_model(session) or (active.spec.name if active else None)

    def model_status(self, session: Session | None = None) -> str:
        """The model that answers this user, with a warning when it is the untrained base."""
        name = self._session_model(session)
        if name:
            base = any(spec.name == name and spec.path is None for spec in self._specs(session))
            status = f"Your model: **{name}** (for this session only: other visitors are not affected)"
        else:
            active = self.models.active(timeout=0) if self.models.ready else None
            base = active is not None and active.is_base
            status = self.models.status()
        return status + (f"\n\n{BASE_WARNING}" if base else "")

    def switch_model(self, name: str, progress: sv.Progress = sv.no_progress) -> str:
        """Load and prepare the named model, then make it active for every user."""
        self.models.switch(self.models.spec_named(name), progress)
        return self.model_status()

    def choose_model(self, name: str, session: Session, progress: sv.Progress = sv.no_progress
                     ) -> tuple[str, Session]:
        """The model chooser: in public mode the choice is this session's alone (the model is loaded,
        or shared with the sessions that chose it); on a private server it switches the active model."""
        if self.public is None:
            return self.switch_model(name, progress), session
        spec = self._spec_named(name, session)
        self.models.shared(spec, progress)  # loaded and prepared before the session's requests use it
        session.model = spec.name
        return self.model_status(session), session

    # ---- reverse dictionary ---------------------------------------------------------------------
    def reverse_dictionary(self, text: str, k: int = 10, pos: str = "any", min_length: int = 0,
                           max_length: int = 0, initial: str = "", pattern: str = "",
                           exclude_query_words: bool = False, compare: bool = False,
                           session: Session | None = None) -> tuple[str, str]:
        """(ranked words of the active model, the same for the untrained base if `compare`) as HTML."""
        active = self._model(session)
        query = sv.WordQuery(text, int(k), pos, int(min_length or 0), int(max_length or 0), initial or "",
                             pattern or "", bool(exclude_query_words))
        main = views.words_html(sv.reverse_dictionary(active.engine, query), active.spec.name)
        if active.engine.words.open_vocab is None:
            building = active.open_vocab_progress
            main = (views.notice_html(OPEN_VOCABULARY_PENDING)
                    + (views.progress_html(building[0] / building[1], views.embedding_progress(*building))
                       if building else "") + main)
        if not compare:
            return main, ""
        if active.is_base:
            return main, views.notice_html("The active model is the untrained base: nothing to compare with.")
        before = sv.reverse_dictionary(active.untrained(), query)
        return main, views.words_html(before, "before DefSent training (same head)")

    # ---- similarity -----------------------------------------------------------------------------
    def pair_similarity(self, a: str, b: str, session: Session | None = None) -> str:
        return f"**cosine similarity: {sv.pair_cosine(self._model(session).engine, a, b):.4f}**"

    def heatmap(self, text: str, session: Session | None = None):
        sentences, matrix = sv.similarity_matrix(self._model(session).engine, text)
        return views.heatmap_figure(sentences, matrix)

    def search(self, query: str, source: str, file: str | None, k: int, session: Session,
               progress: sv.Progress = sv.no_progress) -> tuple[list[list], Session]:
        """Top-k texts of `source` (one of sv.REFERENCE_CHOICES, or the uploaded file) for the query."""
        sv.check_text(query, "a query")  # before the corpus is embedded, which can take a while
        active = self._model(session)
        if source == sv.UPLOADED_FILE:
            corpus = self._uploaded_corpus(active, file, session, progress)
        else:
            corpus = active.reference_texts(source, progress)
        return views.scored_rows(sv.semantic_search(active.engine, query, corpus, int(k))), session

    def _uploaded_corpus(self, active: ActiveModel, file: str | None, session: Session,
                         progress: sv.Progress) -> EmbeddedTexts:
        """The user's uploaded corpus, embedded once per file and model (kept in the session)."""
        if not file:
            raise ValueError("Upload a text file first (one sentence per line).")
        lines = sv.read_text_file(file)
        key = active.engine.fingerprint + hashlib.sha1("\n".join(lines).encode()).hexdigest()
        if session.corpus_key != key:
            session.corpus = sv.embed_corpus(active.engine, lines, name=Path(file).name, progress=progress)
            session.corpus_key = key
        return session.corpus

    # ---- analogy and interpolation --------------------------------------------------------------
    def analogy(self, a: str, b: str, c: str, expression: str, refine: bool = False,
                reference: str = sv.LARGEST_READY, session: Session | None = None,
                progress: sv.Progress = sv.no_progress) -> tuple[str, list[list], list[list]]:
        """(decoded sentence or why there is none, top-word rows, rows of the nearest texts of
        `reference`, one of sv.REFERENCE_CHOICES); `refine`: decode with the most exact setting
        (MOST_EXACT: more correction rounds, core/vec2sent/refine.py)."""
        sentences = {name: sv.check_text(text, f"sentence {name}") for name, text in zip("abc", (a, b, c))}
        active = self._model(session)
        result = active.engine.analogy(**sentences, reference=active.reference_texts(reference, progress), k=10,
                                       beam=APP_BEAM, expression=expression, **_exactness(refine))
        decoded = (f"**Decoded:** {result.decoded}" if result.decoded is not None
                   else NO_DECODER.format(fp=active.engine.fingerprint))
        borrowed = active.engine.reader.borrowed_decoding
        if result.decoded is not None and borrowed:
            decoded += f"\n\n{describe_borrowed(borrowed)}"
        return (decoded, [[w, round(p, 4)] for w, p in result.words], views.scored_rows(result.nearest))

    def interpolation(self, a: str, b: str, steps: int, refine: bool = False, reference: str = sv.LARGEST_READY,
                      session: Session | None = None, progress: sv.Progress = sv.no_progress):
        """(table rows per step, a 2-D map of the path among the nearest texts of `reference`);
        `refine` and `reference` as in `analogy`, for every step."""
        if not 2 <= int(steps) <= 50:
            raise ValueError("The number of steps must be between 2 and 50.")
        if refine and self.public is not None and int(steps) > self.public.refined_interpolation_steps:
            raise ValueError(REFINED_STEPS.format(steps=int(steps), limit=self.public.refined_interpolation_steps))
        x, y = sv.check_text(a, "sentence A"), sv.check_text(b, "sentence B")
        active = self._model(session)
        reference = active.reference_texts(reference, progress)
        points = active.engine.interpolate(x, y, int(steps), reference=reference, k=3,
                                          beam=APP_BEAM, **_exactness(refine))
        rows = [[round(p.alpha, 3), p.decoded or "(no decoder)", views.word_list(p.words), round(p.cos_x, 4),
                 round(p.cos_y, 4)] for p in points]
        return rows, self._path_map(points, reference)

    def _path_map(self, points: list[InterpolationPoint], reference: Reference):
        vectors = np.stack([p.vector for p in points])  # (steps, d)
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        k = max(len(p.nearest) for p in points)  # the rows of the texts each point shows, searched again by index
        rows = list(dict.fromkeys(i for hits in reference.nearest(unit, k) for i, _ in hits))
        neighbours, context = [reference.texts[i] for i in rows], reference.rows(rows)
        projection = self.projector.project(np.vstack([unit, context]), "UMAP", 2)
        n = len(points)
        return views.path_figure(projection.coords[:n], [f"α={p.alpha:.2f}" for p in points],
                                 f"Interpolation path ({projection.method})", projection.coords[n:], neighbours)

    # ---- map ------------------------------------------------------------------------------------
    def umap_status(self) -> str:
        return self.projector.status()

    def draw_map(self, source: str, size: int, sentences: str, file: str | None, method: str, dims: str,
                 colour: str, session: Session, progress: sv.Progress = sv.no_progress):
        """(figure, a status line, the session with this map kept for searching)."""
        active = self._model(session)
        if source == EVERY_WORD_MAP:
            return self._vocabulary_map(active, colour, session)
        corpus = self._map_corpus(active, source, int(size), sentences, file, session, progress)
        progress(0.9, desc=f"projecting {len(corpus.texts):,} points")
        projection = self.projector.project(corpus.vectors, method, 3 if dims == "3-D" else 2)
        groups = _colour_groups(corpus, colour)
        title = f"{corpus.name}: {projection.method} {dims}"
        session.map = MapData(corpus, projection.coords, groups, title)
        status = f"{len(corpus.texts):,} points, {projection.method} in {projection.seconds:.1f} s. {projection.note}"
        return views.scatter_figure(projection.coords, corpus.texts, groups, title), status, session

    def _vocabulary_map(self, active: ActiveModel, colour: str, session: Session):
        """The map of every word: the model's precomputed layout (`python -m core vocabulary-map`),
        coloured by part of speech, region ("cluster") or frequency."""
        engine = active.engine
        if engine.words.open_vocab is None or engine.words.compact:
            raise ValueError("The map of every word is drawn from the full vocabulary's exact vectors, which this "
                             "model does not have yet (the Reverse dictionary tab shows their progress).")
        if colour not in COLOUR_BY:
            raise ValueError(f"Colour by one of: {', '.join(COLOUR_BY)}.")
        started = time.perf_counter()
        session.map, figure = vocabulary_map_data(active, colour), vocabulary_figure(active, colour)
        shown = "region" if colour == "cluster" else colour
        status = f"{len(session.map.coords):,} points in {time.perf_counter() - started:.1f} s, coloured by {shown}."
        return figure, status, session

    def _map_corpus(self, active: ActiveModel, source: str, size: int, sentences: str, file: str | None,
                    session: Session, progress: sv.Progress) -> EmbeddedTexts:
        if source == "dictionary definitions":
            return active.reference(progress, size)
        if source == "vocabulary words":
            words = sv.vocabulary_sample(active.engine, size)
            return sv.embed_corpus(active.engine, [w for w, _ in words], [sv.POS_NAMES[p] for _, p in words],
                                   f"{len(words):,} vocabulary words", progress)
        if source == "my sentences":
            lines = sv.text_lines(sentences, sv.MAX_CORPUS_LINES)
            return sv.embed_corpus(active.engine, lines, name=f"{len(lines)} sentences", progress=progress)
        if source == "uploaded file":
            files = [file] if isinstance(file, str) else list(file or [])
            if any(str(f).lower().endswith(".tsv") for f in files):  # the Embedding Projector's files
                return sv.projector_corpus(files)
            return self._uploaded_corpus(active, files[0] if files else None, session, progress)
        raise ValueError(f"Unknown point set {source!r}.")

    def search_map(self, query: str, k: int, session: Session, collection: str = MAP_POINTS):
        """Highlight texts containing the query and its nearest neighbours (original space) among the
        map's points, or (`collection`, one of REFERENCE_CHOICES) the nearest texts of a collection,
        each landed on the map of every word."""
        if session.map is None:
            raise ValueError("Draw a map first.")
        if not 1 <= int(k) <= MAX_MAP_NEIGHBOURS:
            raise ValueError(f"Show between 1 and {MAX_MAP_NEIGHBOURS} neighbours.")
        m, query = session.map, sv.check_text(query, "a search text")
        if collection != MAP_POINTS:
            return self._search_collection_on_map(m, query, int(k), collection, session)
        matches = [i for i, t in enumerate(m.corpus.texts) if query.lower() in t.lower()]
        vector = self._model(session).engine.encode([query], normalize=True)
        neighbours_of = "nearest neighbours by cosine in the original space:"
        # only uploaded vectors can come from another model (the collections are this model's own)
        width = m.corpus.vectors.shape[1] if isinstance(m.corpus, EmbeddedTexts) else vector.shape[1]
        if vector.shape[1] != width:  # imported vectors of another model: start from the query's match
            if not matches:
                raise ValueError(f"No point's label contains {query!r}, and these {width}-d vectors come from "
                                 f"another model, so the query cannot be placed among them.")
            vector = m.corpus.rows(matches[:1])
            neighbours_of = f"nearest neighbours of {m.corpus.texts[matches[0]]!r} by cosine in the original space:"
        hits = m.corpus.nearest(vector, int(k))[0]
        highlight = list(dict.fromkeys(matches[:MAX_HIGHLIGHTS] + [i for i, _ in hits]))
        fig = _map_figure(m, highlight)
        if m.place is not None:  # a fixed layout: the query lands where its nearest words are
            views.add_marker(fig, m.place(vector)[0], query)
        found = f"{len(matches)} point(s) contain {query!r}" if matches else f"{query!r} is not on this map"
        note = f"{found}; {neighbours_of}"
        return fig, note, views.scored_rows([(m.corpus.texts[i], s) for i, s in hits])

    def _search_collection_on_map(self, m: MapData, query: str, k: int, collection: str, session: Session):
        if m.place is None:
            raise ValueError("Another collection's texts land on the map of every word only, whose layout is "
                             "fixed; search this map's own points, or draw the map of every word.")
        active = self._model(session)
        reference = active.reference_texts(collection)
        vector = active.engine.encode([query], normalize=True)  # (1, d)
        hits = reference.nearest(vector, k)[0]
        texts = [reference.texts[i] for i, _ in hits]
        fig = views.add_points(_map_figure(m), m.place(reference.rows([i for i, _ in hits])), texts,
                               f"nearest in {reference.name}")
        views.add_marker(fig, m.place(vector)[0], query)
        note = f"The {len(hits)} texts of {reference.name} nearest {query!r} by cosine, each on its nearest word:"
        return fig, note, views.scored_rows(list(zip(texts, (s for _, s in hits))))

    def export_map(self, session: Session) -> str:
        """The last map drawn as the Embedding Projector's files, zipped: vectors.tsv (the points'
        vectors) and metadata.tsv (text, colour group and map coordinates)."""
        if session.map is None:
            raise ValueError("Draw a map first.")
        m = session.map
        if len(m.coords) > MAX_EXPORT_POINTS:
            raise ValueError(f"This map holds {len(m.coords):,} points; Projector files are made for at most "
                             f"{MAX_EXPORT_POINTS:,} (about 3.5 kB of text a point): draw a sample instead.")
        columns = {"text": list(m.corpus.texts), "group": list(m.groups),
                   **{axis: [f"{x:.5g}" for x in m.coords[:, j]] for j, axis in enumerate("xyz"[:m.coords.shape[1]])}}
        return str(projector_download(m.corpus.rows(list(range(len(m.coords)))), columns))

    def select_map(self, selection: str, session: Session):
        """(table rows, a note, a CSV of every selected point or None) for a box or lasso selection on the
        last map drawn; `selection` is the browser's JSON list of [trace, point] pairs (app/tabs/map.py)."""
        if session.map is None:
            raise ValueError("Draw a map first.")
        m = session.map
        picked = _picked_points(selection, m, 2 * len(m.coords))
        if not picked:
            return [], "No point selected: choose Box Select or Lasso Select above the map, then drag.", None
        axes = "xyz"[:m.coords.shape[1]]
        rows = [[m.corpus.texts[i], str(m.groups[i]), *[round(float(v), 4) for v in m.coords[i]]] for i in picked]
        note = f"{len(picked):,} point(s) selected"
        if len(picked) > MAX_SELECTION_ROWS:
            note += f"; the table shows the first {MAX_SELECTION_ROWS:,}, the CSV holds all of them"
        return rows[:MAX_SELECTION_ROWS], note + ".", str(csv_download(["text", "group", *axes], rows, "selection"))

    def map_point(self, clicked: str, session: Session) -> str:
        """Markdown on the point clicked on the last map (`clicked`: the browser's [[trace, point]]): its
        whole text and group and, for a word or phrase, its WordNet definitions."""
        if session.map is None:
            raise ValueError("Draw a map first.")
        m = session.map
        picked = _picked_points(clicked, m, 1)
        if not picked:
            return ""
        text, group = m.corpus.texts[picked[0]], str(m.groups[picked[0]])
        definitions = [f"- *{_plain(sv.POS_NAMES.get(e.pos, e.pos))}* {_plain(e.definition)}"
                       for e in sv.definitions_of(text)]
        return "\n".join([f"**{_plain(text)}** ({_plain(group)})", *definitions])

    def candidates_map(self, text: str, k: int, method: str, session: Session | None = None,
                       progress: sv.Progress = sv.no_progress):
        """A query, its top-k candidate words and their definitions on one map, plus a table. The
        description's own words are left out, as in the Reverse dictionary tab by default."""
        active = self._model(session)
        rows = sv.reverse_dictionary(active.engine, sv.WordQuery(text, int(k), exclude_query_words=True))
        texts, groups = [text.strip()], ["your description"]
        for row in rows:
            texts += [row.word] + [f"{row.word}: {e.definition}" for e in row.definitions]
            groups += [row.word] * (1 + len(row.definitions))
        vectors = active.engine.encode(texts, normalize=True)
        projection = self.projector.project(vectors, method, 2)
        fig = views.scatter_figure(projection.coords, texts, groups,
                                   f"Description, candidate words and their definitions ({projection.method})",
                                   symbols={"your description": "star"})
        table = [[r.word, round(r.probability, 4), " | ".join(e.definition for e in r.definitions)] for r in rows]
        return fig, table

    # ---- fine-tune ------------------------------------------------------------------------------
    def validate_upload(self, file: str | None, seed: int, session: Session) -> tuple[str, Session]:
        """The validation report of an uploaded dictionary; its rows are kept (packed, for a bounded
        time, in finetune.UPLOADS; the session holds a ticket) only when usable, and replace the
        session's previous upload. The uploaded file itself is deleted once read (valid or not)."""
        UPLOADS.discard(session.upload)
        session.upload = None
        if not file:
            return "Upload a dictionary file (TSV, CSV or JSONL with columns word, definition[, pos]).", session
        try:
            session.upload = UPLOADS.keep(validate_upload(self._model(session).engine, file, seed))
        except ValueError as err:
            return f"Not usable:\n{err}", session
        except FileNotFoundError:  # e.g. removed from gradio's temp folder; its path means nothing to users
            return "Not usable: the uploaded file is gone; upload it again.", session
        finally:
            sv.discard_upload(file)
            # Reading a file of megabytes leaves tens of MB of freed heap in the arenas of the server's
            # worker threads: 40 uploads of 2.6 MB grew the app by 131 MB, a fourth of it the kept uploads.
            return_freed_memory()
        return session.upload.report + "\n\nReady: press Start.", session

    def start_finetune(self, session: Session, epochs: float, lr: float, batch_size: int,
                       trainable_layers: int, max_steps: int, evaluations: int, seed: int,
                       measure_decoder: bool = False) -> str:
        """Queue a fine-tuning job on the validated upload; returns the job id. ValueError when the
        upload has expired, a setting is out of its range (finetune.setting_bounds) or the job queue
        is full: then nothing is queued."""
        if session.upload is None:
            raise ValueError("Upload and validate a dictionary first.")
        self._refuse_a_second_job(session)
        if self.public is not None and len(session.jobs) >= self.public.finetunes_per_session:
            raise ValueError(QUOTA_USED.format(n=self.public.finetunes_per_session))
        upload = UPLOADS.get(session.upload)
        active = self._model(session)
        layers = model_layers(active.engine)
        settings = FinetuneSettings.from_form(layers, measure_decoder, epochs=epochs, lr=lr, batch_size=batch_size,
                                              trainable_layers=trainable_layers, max_steps=max_steps,
                                              evaluations=evaluations, seed=seed)
        settings.check(upload.train_size, layers)  # now, not in the background: the run's length too
        if self.public is not None and settings.total_steps(upload.train_size) > self.public.max_training_steps:
            raise ValueError(STEPS_OVER.format(steps=settings.total_steps(upload.train_size),
                                               limit=self.public.max_training_steps))
        if self.public is not None:
            make_room(expected_staged_bytes(active.spec.path, active.engine), self.public, "the fine-tuned model")
        try:
            job = self.jobs.submit(FinetuneJob(active.spec, upload, settings,
                                               training_threads(public=self.public is not None)),
                                   f"fine-tune {active.spec.name} on {upload.name}", on_forget=discard_staged)
        except JobQueueFull:
            if self.public is None:
                raise
            raise ValueError(SLOT_BUSY.format(slots=self.public.training_slots)) from None
        session.jobs.append(job.id)
        return job.id

    def _refuse_a_second_job(self, session: Session) -> None:
        """A second Start click would queue a duplicate run: one job per session at a time."""
        job = self._known_job(session.job)
        if job is not None and job.status in (QUEUED, RUNNING):
            raise ValueError(f"Your fine-tuning job {job.id} is still {job.status}: wait for it to end, "
                             "or cancel it, before starting another.")

    def job_view(self, job_id: str):
        """(progress HTML, training figure, before/after rows, example rows) of a job."""
        if not (job_id or "").strip():
            return "", None, [], []
        job = self.jobs.get(job_id)
        history = job.progress.get("history")
        figure = views.training_figure(history) if history else None
        if job.status == QUEUED:
            ahead = self.jobs.queue_position(job.id)
            note = f"Queued behind {ahead} job(s) on this server (at most {self.jobs.max_running} run at a time)."
            return views.progress_html(0, note), None, [], []
        if job.status == RUNNING and job.cancel_requested.is_set():  # until the process has stopped
            return views.busy_html("Cancelling..."), figure, [], []
        if job.status == RUNNING:
            return views.job_progress_html(job.progress), figure, [], []
        if job.status != DONE:
            return views.progress_html(0, f"Job {job.status}: {job.error}"), figure, [], []
        result: FinetuneResult = job.result
        examples = [[e["word"], e["definition"], e["before"], e["after"]] for e in result.examples]
        took = stage_summary(result.training["stage_seconds"])
        done = views.progress_html(1, f"Done in {took}. Held-out words before and after:")
        return done, figure, comparison_rows(result), examples

    def job_active(self, job_id: str) -> bool:
        """True while the job is queued or running (the UI keeps polling)."""
        return bool((job_id or "").strip()) and self.jobs.get(job_id).status in (QUEUED, RUNNING)

    def cancel_job(self, job_id: str) -> str:
        """Ask the job to stop; its polled progress reads "Cancelling..." until it has."""
        job = self.jobs.get(job_id)
        if job.status not in (QUEUED, RUNNING):
            return f"The job is already {job.status}: nothing to cancel."
        job = self.jobs.cancel(job_id)
        return f"Cancellation requested (job is {job.status})."

    def _finished(self, job_id: str) -> FinetuneResult:
        job = self.jobs.get(job_id)
        if job.status != DONE:
            raise ValueError(f"The job is {job.status}; wait until it is done.")
        return job.result

    def save_finetuned(self, job_id: str, name: str, session: Session | None = None,
                       progress: sv.Progress = sv.no_progress) -> str:
        """Save the job's trained model as a named checkpoint (ValueError: name taken, disk full, ...):
        in checkpoints/, or in public mode in the session's own folder, within the disk budget."""
        result = self._finished(job_id)
        progress(0.2, desc="saving")
        if self.public is None:
            result.saved = save_finetuned(result, name, self.models.checkpoints)
            return f"Saved as checkpoint `{result.saved.name}` in {result.saved.parent}."
        if session is None:
            raise ValueError("Saving on this public server needs your session.")
        make_room(folder_bytes(result.checkpoint), self.public, "this model")
        path = save_finetuned(result, name, session_folder(session.folder_key()))
        session.saved[job_id] = str(path)
        return (f"Saved as `{YOURS}{path.name}`, for this session only: choose it in the model list, or press "
                "'Use as the active model'. This server deletes it an hour after you close this page, or "
                f"{self.public.session_lifetime / 3600:g} hours after your last save or model choice; Download "
                "keeps a copy.")

    def _saved_path(self, job_id: str, session: Session | None = None) -> Path:
        if self.public is not None:
            self._finished(job_id)
            saved = session.saved.get(job_id) if session is not None else None
            path = Path(saved) if saved else None
            if path is not None and not path.is_dir():
                raise ValueError("Your saved model is no longer kept on this server (saved models expire); save it "
                                 "again.")
        else:
            path = self._finished(job_id).saved
        if path is None:
            raise ValueError("Save the model under a name first.")
        return path

    def activate_finetuned(self, job_id: str, session: Session | None = None,
                           progress: sv.Progress = sv.no_progress) -> str:
        """Make the saved fine-tuned checkpoint the active model (once prepared): for every user, or
        in public mode for this session only."""
        path = self._saved_path(job_id, session)
        if self.public is not None:
            return self.choose_model(YOURS + path.name, session, progress)[0]
        self.models.switch(ModelSpec(path.name, path), progress)
        return self.models.status()

    def download_finetuned(self, job_id: str, session: Session | None = None,
                           progress: sv.Progress = sv.no_progress) -> tuple[str, str]:
        """(checkpoint zip, sentence-transformers zip) of the saved model; in public mode the zips share
        the disk budget with the saved models."""
        path = self._saved_path(job_id, session)
        progress(0.2, desc="exporting")
        limit = {}
        if self.public is not None:
            from .export import MAX_DOWNLOAD_BYTES
            limit["max_bytes"] = min(MAX_DOWNLOAD_BYTES, self.public.disk_bytes - models_bytes())
        return tuple(str(p) for p in download_files(Engine.load(path, device="cpu"), path, **limit))  # where Gradio serves files

    # ---- evaluate and about ---------------------------------------------------------------------
    def evaluate_words(self, size: int, compare: bool, session: Session | None = None,
                       progress: sv.Progress = sv.no_progress) -> list[list]:
        active = self._model(session)
        engines = {active.spec.name: active.engine}
        if compare and not active.is_base:
            engines["before DefSent training"] = active.untrained()
        return word_prediction_rows(engines, int(size), progress)

    def recorded_metrics(self, session: Session | None = None) -> str:
        """The word-prediction metrics stored in the active checkpoint's manifest, as Markdown."""
        active = self._model(session)
        rows = {f"{active.spec.name} ({split})": m for split, m in active.engine.manifest.get("metrics", {}).items()
                if isinstance(m, dict) and "mrr" in m}
        if not rows:
            return "The active model records no word-prediction metrics; evaluate it below."
        return "Recorded when the checkpoint was trained:\n\n" + format_table(rows)

    def evaluate_smoke(self, compare: bool, session: Session | None = None,
                       progress: sv.Progress = sv.no_progress) -> str:
        """The bundled smoke set (app.evaluation.smoke_markdown): works offline and in public mode."""
        active = self._model(session)
        engines = {active.spec.name: active.engine}
        if compare and not active.is_base:
            engines["before DefSent training"] = active.untrained()
        return smoke_markdown(engines, progress)

    def evaluate_sts(self, data_dir: str, datasets: list[str], session: Session | None = None,
                     progress: sv.Progress = sv.no_progress) -> str:
        if self.public is not None:
            raise ValueError(PUBLIC_EVALUATE)
        active = self._model(session)
        return sts_markdown(active.engine, active.spec.name, data_dir, list(datasets or []), progress)

    def evaluate_senteval(self, data_dir: str, tasks: list[str], size: str, session: Session | None = None,
                          progress: sv.Progress = sv.no_progress) -> str:
        """SentEval transfer accuracies of the active model beside the papers' (see senteval_markdown)."""
        if self.public is not None:
            raise ValueError(PUBLIC_EVALUATE)
        active = self._model(session)
        return senteval_markdown(active.engine, active.spec.name, data_dir, list(tasks or []), size, progress)

    def about(self, session: Session | None = None) -> tuple[str, str]:
        """(the active checkpoint and decoder in Markdown, its manifest as JSON text)."""
        active = self._model(session)
        decoder = active.engine.decoder
        lines = [f"**Active model:** {active.spec.name}", f"**Encoder fingerprint:** `{active.engine.fingerprint}`",
                 "**Vec2Sent decoder:** " + ("loaded" if decoder is not None else "none trained for this encoder")]
        if active.is_base:
            lines.append("This is the untrained base: its word head is untrained, so word predictions are noise.")
        return "\n\n".join(lines), json.dumps(active.engine.manifest, indent=2)


def start_studio(spec: ModelSpec, checkpoints: Path, warm_up_umap: bool = True, delay: float = 10.0,
                 open_vocabulary: bool = True, public: PublicLimits | None = None) -> Studio:
    """A Studio whose model loads in the background and is served at once; `delay` seconds later
    (so that the first requests get the CPU) it is prepared (`prepare_model`) and UMAP is warmed up,
    in the same thread. Models switched to later are prepared before they answer (`Models`)."""
    studio = Studio(Models(checkpoints, functools.partial(prepare_model, open_vocabulary=open_vocabulary)),
                    public=public)
    if warm_up_umap:
        studio.projector.expect_warm_up()

    def after_load(active: ActiveModel) -> None:
        time.sleep(delay)
        studio.models.prepare_first(active)
        if warm_up_umap:
            studio.projector.warm_up()
    studio.models.load_in_background(spec, then=after_load)
    return studio


def _map_figure(m: MapData, highlight: list[int] = ()):
    """The map `m` drawn again (with its region names and moves, if any), `highlight` points ringed."""
    fig = views.add_moves(views.scatter_figure(m.coords, m.corpus.texts, m.groups, m.title, highlight), m.moves)
    return views.add_region_labels(fig, m.regions) if m.regions else fig


def _plain(text: str) -> str:
    """`text` shown as itself in Markdown: HTML escaped, Markdown's marks backslashed (a user's own text)."""
    return re.sub(r"([\\`*_{}\[\]()#+!|<>~-])", r"\\\1", escape(text, quote=False)) if text else text


def _picked_points(selection: str, m: MapData, limit: int) -> list[int]:
    """The points of map `m` (sorted indices) that the browser's [[trace, point], ...] names; the
    traces after the points' own (search hits, region names, a search's star) are not points."""
    traces = m.traces
    return sorted({traces[t][p] for t, p in _selected_pairs(selection, limit)
                   if t < len(traces) and p < len(traces[t])})


def _selected_pairs(selection: str, limit: int) -> list[tuple[int, int]]:
    """[(trace, point), ...] from the browser's JSON; ValueError for anything else or more than `limit`."""
    pairs = None
    if len(selection or "") <= 32 * (limit + 1):  # "[123,45678]," is 12 characters: far more is not a selection
        try:
            pairs = json.loads(selection or "[]")
        except ValueError:
            pass
    if not (isinstance(pairs, list) and len(pairs) <= limit and all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, int) and v >= 0 for v in pair)
            for pair in pairs)):
        raise ValueError("The selection could not be read; select the points again.")
    return [(t, p) for t, p in pairs]


def vocabulary_map_data(active: ActiveModel, colour: str = "part of speech") -> MapData:
    """The map of every word of `active` (its layout from `python -m core vocabulary-map`): new vectors
    land on their nearest words, coloured as `colour` says."""
    words, coords = active.engine.vocabulary_reference("word"), active.vocabulary_layout()
    return MapData(words, coords, active.word_groups(colour),
                   f"{words.name}: one map, laid out once for this model (UMAP)",
                   lambda vectors: place(words.scorer, coords, vectors), active.vocabulary_regions(),
                   active.vocabulary_moves())


def vocabulary_figure(active: ActiveModel, colour: str = "part of speech"):
    """The map of every word as a figure: the same each time, so built once per layout and colour
    (0.4-0.8 s) and never changed after (a search draws a figure of its own)."""
    return active.once(f"figure-{colour}-{active.vocabulary_layout_key()}",
                       lambda: _map_figure(vocabulary_map_data(active, colour)))


def prepare_model(active: ActiveModel, progress: sv.Progress = sv.no_progress, open_vocabulary: bool = True) -> None:
    """Build, in this order, what a model's answers need: the word scoring (a reverse-dictionary
    query builds its int8 matrices), the open vocabulary (`Engine.enable_open_vocabulary`, cached per
    model: minutes the first time), the reference sentences, the Vec2Sent decoder and the untrained
    twin that "compare" uses (~20 s)."""
    active.engine.predict_words("a word")
    if open_vocabulary and active.engine.words.open_vocab is None:
        started = time.monotonic()

        def embedded(done: int, total: int) -> None:
            left = (time.monotonic() - started) * (total - done) / max(done, 1)
            active.open_vocab_progress = (done, total, left)
            progress(0.1 + 0.6 * done / total, desc=f"open vocabulary: {views.embedding_progress(done, total, left)}")
        try:  # a fine-tuned model starts with its parent's vectors: seconds, where all would take minutes
            active.engine.enable_open_vocabulary(cache_dir=open_vocab_cache(active), progress=embedded, reuse=True)
        finally:
            active.open_vocab_progress = None
    progress(0.7, desc="embedding the reference sentences")
    active.reference()
    progress(0.85, desc="loading the decoder and the untrained twin")
    _ = active.engine.decoder  # found and loaded now rather than by the first analogy
    _ = active.untrained()
    engine = active.engine
    if engine.words.open_vocab is not None and not engine.words.compact and engine.vocabulary_layout_path().is_file():
        try:  # the map of every word, when it was laid out: its first draw is then instant
            vocabulary_figure(active)
        except Exception:  # the map is optional: the model answers without it, and the Map tab says why
            log.warning("the map of every word could not be prepared", exc_info=True)
    # then its own exact vectors, in the background, where it answers with its parent's or with the shipped
    # compact ones; not for a visitor's model, which may go with its session first
    approximate = active.engine.words.reused or active.engine.words.compact
    if approximate and not is_visitors_model(active.spec.path):
        threading.Thread(target=embed_own_vectors, args=(active,), name="own-vectors", daemon=True).start()


def open_vocab_cache(active: ActiveModel) -> Path:
    return model_cache_dir(active.spec.path, "open-vocab")


_OWN_VECTORS = threading.Lock()  # one background re-embedding at a time: each takes the CPU for minutes


def embed_own_vectors(active: ActiveModel) -> None:
    """In the background, at a lower priority than requests: embed a model's whole open vocabulary with
    the model itself and answer with it once done. Its vectors until then were approximate: its
    parent's (a fine-tune's activation) or the checkpoint's compact ones (a fresh clone): docs/results.md."""
    if sys.platform.startswith("linux"):  # this thread only, on Linux (torch's work runs here at --threads 1)
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICENESS)
        except OSError:  # not allowed here: the embedding still runs, at the server's priority
            log.warning("could not lower the priority of the background embedding")
    with _OWN_VECTORS:
        try:
            active.engine.enable_open_vocabulary(cache_dir=open_vocab_cache(active), compact=False)
        except Exception:  # the reused vectors keep answering
            log.exception("embedding the open vocabulary of %s again failed", active.spec.name)


def _colour_groups(corpus: EmbeddedTexts, colour: str) -> list[str]:
    """Group label of each point: its part of speech, a k-means cluster of the vectors, or its frequency band."""
    if colour not in COLOUR_BY:
        raise ValueError(f"Colour by one of: {', '.join(COLOUR_BY)}.")
    if colour == "part of speech":
        return [label or "sentence" for label in corpus.labels]
    if colour == "frequency":  # of the text as a word or phrase: a sentence reads as unknown
        return frequency_bands(corpus.texts)
    from sklearn.cluster import KMeans
    k = min(8, len(corpus.texts))
    clusters = KMeans(n_clusters=k, n_init=3, random_state=0).fit_predict(corpus.vectors)
    return [f"cluster {c + 1}" for c in clusters]




def _exactness(refine: bool) -> dict:
    """The decode settings of the most exact setting when `refine`, else none (the engine's defaults)."""
    return MOST_EXACT if refine else {}
