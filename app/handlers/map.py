"""The Map tab's handlers (app/tabs/map.py): projections of texts, the map of every word, search on a
map, the points a user selects or clicks, Projector files, a description's candidate words on one map."""
from __future__ import annotations

import functools
import json
import math
import re
import time
from collections import Counter
from html import escape
from pathlib import Path

import numpy as np

from core.explore import VocabularyTexts, holds_vectors, place
from core.readout import EmbeddedTexts
from core.runtime import Cancelled
from core.words import APPROXIMATE_ANSWERS, VocabularyState, frequency_bands

from ..server.public import is_visitors_model
from ..shared import services as sv
from ..shared.export import csv_download, projector_download
from ..shared.jobs import BackgroundOnce, short_reason
from ..shared.models import ActiveModel
from ..views import render
from .backend import TabHandlers
from .collection import MY_COLLECTION, collection_sample
from .session import MapData, Session

EVERY_WORD_MAP = "every word (laid out once per model)"
EVERY_DEFINITION_MAP = "every definition (on the map of every word)"
# The page's timer (app/tabs/map.py) draws the map it waits for the moment it is ready (`map_waiting`)
APPEARS_WHEN_READY = "The map appears here by itself when it is ready (keep this page open)."
MAX_HIGHLIGHTS = 200  # points ringed because their text contains the search (on the map of every word: many)
MAP_SOURCES = ("dictionary definitions", "vocabulary words", "my sentences", sv.UPLOADED_FILE, EVERY_WORD_MAP,
               EVERY_DEFINITION_MAP)
MAP_POINTS = "this map's points"  # what the map's search looks among, unless the user picks a collection
MAX_MAP_NEIGHBOURS = 30
# On the map of every word a word's point is the vector its reverse-dictionary score uses (the word channel), not
# its name embedded: the search "dog" found the point "dog" at cosine 0.57, below other words (a new user's walk).
WORD_POINTS = (" (a word's point is the vector the reverse dictionary scores it by, not the word itself embedded, so "
               "a word need not be nearest its own point)")
MAX_SELECTION_ROWS = 1_000  # rows of a map selection the table shows; its CSV holds every selected point
MAX_EXPORT_POINTS = 20_000  # Projector files of a map: its vectors as text, about 3.5 kB a 384-d point; a sample above
FILE_COLUMN = "a column of my file"
COLOUR_BY = ("part of speech", "cluster", "frequency", FILE_COLUMN)
MAX_COLUMN_GROUPS = 10  # plotly's 10 colours: a column's 9 most common values and OTHER
OTHER, EMPTY = "(other)", "(empty)"
QUANTILES = 5  # bins of a column of many numbers
NO_COLUMNS = ("These points have no columns of a file of yours: upload a table (a .txt or .tsv file whose first "
              "line names its columns, separated by tabs; the first column holds the texts) or the Projector's "
              "vectors.tsv with a metadata.tsv of several columns.")


class MapHandlers(TabHandlers):
    """Maps of texts for a session, which keeps the last one drawn (`Session.map`) for searching and selecting."""

    def umap_status(self) -> str:
        """The state of UMAP in one line, shown above the map (see Projector.status)."""
        return self.backend.projector.status()

    def draw_map(self, source: str, size: int, sentences: str, file: str | None, method: str, dims: str,
                 colour: str, session: Session, column: str | None = None, collection: str | None = None,
                 progress: sv.Progress = sv.no_progress):
        """(figure, a status line, the session with this map kept for searching); `column` names the
        column of the user's file that colours the map under FILE_COLUMN (its first column if empty; None
        by default, which makes it optional for API clients). `source` MY_COLLECTION: `size` rows of the
        collection at the path `collection` (local mode only), its metadata columns the file's columns."""
        session.waiting = ""  # a map of every word not ready yet waits again below
        active = self.backend.model_for(session)
        if source in (EVERY_WORD_MAP, EVERY_DEFINITION_MAP):
            return self._vocabulary_map(active, colour, session, definitions=source == EVERY_DEFINITION_MAP)
        if colour == FILE_COLUMN and source not in (sv.UPLOADED_FILE, MY_COLLECTION):  # before embedding
            raise ValueError(NO_COLUMNS)
        if source == MY_COLLECTION:  # embedded already: a sample of its rows
            opened = session.open_collection(active, collection, public=self.backend.public is not None)
            corpus = collection_sample(opened, int(size))
        else:
            corpus = self._map_corpus(active, source, int(size), sentences, file, session, progress)
        coloured = ""
        if colour == FILE_COLUMN:
            column = _file_column(corpus.columns, (column or "").strip())
            coloured = f"Coloured by the column {column!r}."
        groups = _colour_groups(corpus, colour, column)  # before projecting: a bad choice costs nothing
        progress(0.9, desc=f"projecting {len(corpus.texts):,} points")
        projection = self.backend.projector.project(corpus.vectors, method, 3 if dims == "3-D" else 2)
        title = f"{corpus.name}: {projection.method} {dims}"
        session.map = MapData(corpus, projection.coords, groups, title, model_points=source == "dictionary definitions")
        self.backend.held_vectors.used(session)
        status = " ".join(filter(None, [f"{len(corpus.texts):,} points, {projection.method} in "
                                        f"{projection.seconds:.1f} s.", projection.note, coloured]))
        return render.scatter_figure(projection.coords, corpus.texts, groups, title), status, session

    def _drawn(self, session: Session) -> MapData:
        """The session's last map (`Session.drawn_map`: ValueError saying to draw one), its use counted (its vectors
        are among the last to go for other sessions')."""
        drawn = session.drawn_map()
        self.backend.held_vectors.used(session)
        return drawn

    def map_columns(self, session: Session) -> list[str]:
        """The names of the columns of the user's file that the last map drawn came from (none for others)."""
        return list(session.map.columns) if session.map is not None else []

    def map_details(self, session: Session) -> list[dict] | None:
        """The second hover line of each point of the last map drawn, trace by trace (`render.trace_details`):
        on the map of every word, each word's first definition; None for a map without them."""
        m = session.map
        return None if m is None or m.details is None else render.trace_details(m.groups, m.details)

    def _vocabulary_map(self, active: ActiveModel, colour: str, session: Session, definitions: bool = False):
        """The map of every word: the model's layout (laid out once: `_lay_out_soon`, or `python -m core
        vocabulary-map`), coloured by part of speech, region ("cluster") or frequency; with `definitions`,
        every definition on that map instead of the words (each on its nearest word: placed once per layout,
        then kept). Not ready yet: what it waits for, which `map_waiting` then follows for the page."""
        if colour == FILE_COLUMN:  # its points are the vocabulary's, not a file's
            raise ValueError(NO_COLUMNS)
        if colour not in COLOUR_BY:
            raise ValueError(f"Colour by one of: {', '.join(COLOUR_BY)}.")
        started = time.perf_counter()
        waits = self._every_word_waits(active, definitions, retry=True)
        if waits is not None:
            session.waiting = EVERY_DEFINITION_MAP if definitions else EVERY_WORD_MAP
            session.waiting_colour = colour
            return _pending(session, *waits)
        kind = "definition" if definitions else "word"
        try:
            session.map, figure = vocabulary_map_data(active, colour, kind), vocabulary_figure(active, colour, kind)
            self.backend.held_vectors.used(session)  # the model's vectors: this session's own, if any, went
        except Cancelled:
            raise
        except Exception as err:  # a broken layout file, say: why, where the user looks (not just in the log)
            active.vocabulary_map.failed(err)
            raise ValueError(f"The map of every word could not be drawn ({active.vocabulary_map.failure}); press "
                             "Draw map to try again.") from err
        active.vocabulary_map.failure = ""
        shown = "region" if colour == "cluster" else colour
        status = f"{len(session.map.coords):,} points in {time.perf_counter() - started:.1f} s, coloured by {shown}."
        return figure, status, session

    def _every_word_waits(self, active: ActiveModel, definitions: bool, retry: bool = False
                          ) -> tuple[str, float | None] | None:
        """(what the map of every word, or of every definition, waits for, the fraction done or None), having
        started that work in the background if it was not under way; None once the map can be drawn. ValueError
        saying why that work failed; with `retry` (Draw map) a failed work is tried again first."""
        engine, state = active.engine, active.engine.vocabulary.state
        # definitions are placed once and kept: by the model's own vectors, not its parent's (REUSED)
        if state in (VocabularyState.SINGLE_TOKEN, VocabularyState.COMPACT) or (
                definitions and state is VocabularyState.REUSED):
            return _exact_vectors_progress(active)
        if active.vocabulary_map.failure and not retry:  # at the model's start, or the last draw: Draw map retries
            raise ValueError(f"Preparing the map of every word failed ({active.vocabulary_map.failure}); press Draw "
                             "map to try again.")
        if not engine.vocabulary_layout_path().is_file():
            laying_out = self._lay_out_soon(active, retry)
            if laying_out:
                return laying_out, None
        placing = active.vocabulary_map.placing
        if definitions and not active.vocabulary_map.definitions_placed():
            _start(placing, retry, "Placing the definitions on the map of every word")
            return (f"Placing the {len(engine.vocabulary.scorer.candidates.definitions):,} definitions on the map of "
                    "every word, each on its nearest word: about 4 minutes on 2 cores, once per model, in the "
                    f"background ({_elapsed(placing.started)} so far). {APPEARS_WHEN_READY}"), None
        return None

    def map_waiting(self, session: Session):
        """(the status line now, whether Draw map still waits, the map or None) for the page's timer, which
        follows the map of every word that the last Draw map waits for (`Session.waiting`): the embedding's
        count and the time left, the minutes of laying out, then the map itself, drawn as Draw map would
        have drawn it (its colouring), so that nobody has to press Draw map again (issue 62). (None, False,
        None) when nothing waits. The status Draw map showed was that of its moment: minutes later it still
        said '2 min left' (issue 54)."""
        if not session.waiting:
            return None, False, None
        definitions = session.waiting == EVERY_DEFINITION_MAP
        active = self.backend.model_for(session)
        try:
            waits = self._every_word_waits(active, definitions)
            if waits is not None:
                return _pending_note(*waits), True, None
            figure, status, _ = self._vocabulary_map(active, session.waiting_colour, session, definitions)
        except ValueError as err:  # the layout failed, or cannot be made for this model: why, and no more polls
            session.waiting = ""
            return str(err), False, None
        session.waiting = ""
        return status, False, figure

    @staticmethod
    def _lay_out_soon(active: ActiveModel, retry: bool = False) -> str:
        """Start laying out the model's map of every word in the background (once per model; with `retry`, again
        if it failed); returns what is under way ("" once laid out). ValueError saying why it cannot be (a
        visitor's model) or why it failed."""
        if is_visitors_model(active.spec.path):
            raise ValueError("A visitor's model has no map of every word here: fine-tune and lay it out on your "
                             "own machine (`python -m core vocabulary-map --model <it>`).")
        if active.engine.vocabulary.state is VocabularyState.REUSED:  # laid out from its own vectors, being embedded
            return _exact_vectors_progress(active)[0]
        laying_out = active.vocabulary_map.laying_out
        _start(laying_out, retry, "Laying out the map of every word")
        if not laying_out.running() and laying_out.done():  # done just now
            return ""
        return (f"Laying out the map of every word for this model in the background ({_elapsed(laying_out.started)} "
                "so far; once per model, 3 to 8 minutes on 2 cores: a fine-tune's words go on the shipped model's "
                f"map, whose map is laid out first if need be). {APPEARS_WHEN_READY}")

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
        if source == sv.UPLOADED_FILE:
            files = [file] if isinstance(file, str) else list(file or [])
            # the Embedding Projector's files hold a vectors.tsv; any other .tsv is a table of texts
            if any(str(f).lower().endswith(".tsv") and holds_vectors(Path(f)) for f in files):
                return sv.projector_corpus(files)
            return session.uploaded_corpus(active, files[0] if files else None, progress)
        raise ValueError(f"Unknown point set {source!r}.")

    def search_map(self, query: str, k: int, session: Session, collection: str = MAP_POINTS):
        """Highlight texts containing the query and its nearest neighbours (original space) among the
        map's points, or (`collection`, one of REFERENCE_CHOICES or UPLOADED_FILE) the nearest texts of a
        collection, each landed on the map of every word."""
        if session.map is None and session.waiting:
            raise ValueError("The map is still being prepared: search it once it is drawn.")
        m = self._drawn(session)
        if not 1 <= int(k) <= MAX_MAP_NEIGHBOURS:
            raise ValueError(f"Show between 1 and {MAX_MAP_NEIGHBOURS} neighbours.")
        query = sv.check_text(query, "a search text")
        if collection != MAP_POINTS:
            return self._search_collection_on_map(m, query, int(k), collection, session)
        matches = [i for i, t in enumerate(m.corpus.texts) if query.lower() in t.lower()]
        vector = self.backend.model_for(session).engine.encode([query], normalize=True)
        neighbours_of = "the table: its nearest neighbours by cosine in the original space, whatever their text"
        # only uploaded vectors can come from another model (the collections are this model's own)
        width = m.corpus.vectors.shape[1] if isinstance(m.corpus, EmbeddedTexts) else vector.shape[1]
        if vector.shape[1] != width:  # imported vectors of another model: start from the query's match
            if not matches:
                raise ValueError(f"No point's label contains {query!r}, and these {width}-d vectors come from "
                                 f"another model, so the query cannot be placed among them.")
            vector = m.corpus.rows(matches[:1])
            neighbours_of = (f"the table: the nearest neighbours of {m.corpus.texts[matches[0]]!r} by cosine in the "
                             f"original space")
        hits = m.corpus.nearest(vector, int(k))[0]
        highlight = list(dict.fromkeys(matches[:MAX_HIGHLIGHTS] + [i for i, _ in hits]))
        fig = _map_figure(m, highlight)
        if m.place is not None:  # a fixed layout: the query lands where its nearest words are, and the view flies there
            landed = m.place(vector)[0]
            render.fly_to(render.add_marker(fig, landed, query), landed, m.coords)
        note = (f"{ringed_note(len(matches), len(highlight), query)}; {neighbours_of}"
                f"{WORD_POINTS if _is_word_map(m) else ''}:")
        return fig, note, render.scored_rows([(m.corpus.texts[i], s) for i, s in hits])

    def _search_collection_on_map(self, m: MapData, query: str, k: int, collection: str, session: Session):
        if m.place is None:
            raise ValueError("Another collection's texts land on the map of every word only, whose layout is "
                             "fixed; search this map's own points, or draw the map of every word.")
        active = self.backend.model_for(session)
        reference = session.reference(active, collection)
        vector = active.engine.encode([query], normalize=True)  # (1, d)
        hits = reference.nearest(vector, k)[0]
        texts = [reference.texts[i] for i, _ in hits]
        fig = render.add_points(_map_figure(m), m.place(reference.rows([i for i, _ in hits])), texts,
                               f"nearest in {reference.name}")
        landed = m.place(vector)[0]
        render.fly_to(render.add_marker(fig, landed, query), landed, m.coords)
        note = f"The {len(hits)} texts of {reference.name} nearest {query!r} by cosine, each on its nearest word:"
        return fig, note, render.scored_rows(list(zip(texts, (s for _, s in hits))))

    def export_map(self, session: Session) -> str:
        """The last map drawn as the Embedding Projector's files, zipped: vectors.tsv (the points'
        vectors) and metadata.tsv (text, colour group and map coordinates, then the columns of the user's
        file the points came from, less any named as one of those). A map of more than MAX_EXPORT_POINTS
        points (the map of every word) gives a sample of that many, drawn at random once for all (the zip's
        name says so): it was offered, then refused with an error (issue 62)."""
        m = self._drawn(session)
        rows = export_rows(len(m.coords))
        columns = {"text": [m.corpus.texts[i] for i in rows], "group": [m.groups[i] for i in rows],
                   **{axis: [f"{x:.5g}" for x in m.coords[rows, j]] for j, axis in enumerate("xyz"[:m.coords.shape[1]])}}
        columns.update({name: [values[i] for i in rows] for name, values in m.columns.items() if name not in columns})
        name = "defsent-map" if len(rows) == len(m.coords) else f"defsent-map-sample-{len(rows)}-of-{len(m.coords)}"
        return str(projector_download(m.corpus.rows(rows), columns, name=name))

    def select_map(self, selection: str, session: Session):
        """(table rows, a note, a CSV of every selected point or None) for a box or lasso selection on the
        last map drawn; `selection` is the browser's JSON list of [trace, point] pairs (app/tabs/map.py)."""
        m = self._drawn(session)
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
        whole text and group and, for a word or phrase, its WordNet definitions (for a definition of the
        open vocabulary, every word it defines)."""
        m = self._drawn(session)
        picked = _picked_points(clicked, m, 1)
        if not picked:
            return ""
        text, group = m.corpus.texts[picked[0]], str(m.groups[picked[0]])
        if isinstance(m.corpus, VocabularyTexts) and m.corpus.kind == "definition":  # the words it defines, all
            candidates = m.corpus.scorer.candidates
            words = [candidates.words[i] for i in candidates.defined_rows[picked[0]]]
            return f"**{_plain(text)}** ({_plain(group)})\n\ndefines: {_plain(', '.join(words))}"
        definitions = [f"- *{_plain(sv.POS_NAMES.get(e.pos, e.pos))}* {_plain(e.definition)}"
                       for e in sv.definitions_of(text)]
        return "\n".join([f"**{_plain(text)}** ({_plain(group)})", *definitions])

    def candidates_map(self, text: str, k: int, method: str, session: Session | None = None,
                       progress: sv.Progress = sv.no_progress):
        """A query, its top-k candidate words and their definitions on one map, plus a table. The
        description's own words are left out, as in the Reverse dictionary tab by default."""
        active = self.backend.model_for(session)
        rows = sv.reverse_dictionary(active.engine, sv.WordQuery(text, int(k), exclude_query_words=True))
        texts, groups = [text.strip()], ["your description"]
        for row in rows:
            texts += [row.word] + [f"{row.word}: {e.definition}" for e in row.definitions]
            groups += [row.word] * (1 + len(row.definitions))
        vectors = active.engine.encode(texts, normalize=True)
        projection = self.backend.projector.project(vectors, method, 2)
        fig = render.scatter_figure(projection.coords, texts, groups,
                                   f"Candidates and definitions ({projection.method})",  # whole on a phone
                                   symbols={"your description": "star"})
        scores = render.relative_scores([r.probability for r in rows])  # the first word 100, as the word list shows
        table = [[r.word, score, " | ".join(e.definition for e in r.definitions)] for r, score in zip(rows, scores)]
        return fig, table


def ringed_note(matching: int, ringed: int, query: str) -> str:
    """How many of a map's points contain `query`, and how many a search rings: those (at most MAX_HIGHLIGHTS) and
    the query's nearest neighbours. It said "3 point(s) contain 'dog' (ringed)" beside 11 rings (issue 76)."""
    if not matching:
        return f"{query!r} is not on this map; {_count(ringed, 'point')} ringed, its nearest neighbours"
    contain = f"{_count(matching, 'point')} contain{'s' if matching == 1 else ''} {query!r}"
    those = "it" if matching == 1 else "those"
    return f"{contain}; {_count(ringed, 'point')} ringed, {those} and its nearest neighbours"


def _count(n: int, noun: str) -> str:
    """"1 point", "1,200 points"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _map_figure(m: MapData, highlight: list[int] = ()):
    """The map `m` drawn again (with its region names and moves, if any), `highlight` points ringed."""
    fig = render.add_moves(render.scatter_figure(m.coords, m.corpus.texts, m.groups, m.title, highlight), m.moves)
    return render.add_region_labels(fig, m.regions, np.ptp(m.coords, axis=0).tolist()) if m.regions else fig


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


def export_rows(points: int, limit: int | None = None) -> list[int]:
    """The rows of a map of `points` points that its Projector files hold: all of them, or above `limit`
    (default MAX_EXPORT_POINTS) a sample of `limit`, the same each time (seed 0), in the map's order."""
    limit = MAX_EXPORT_POINTS if limit is None else limit
    if points <= limit:
        return list(range(points))
    return sorted(np.random.default_rng(0).choice(points, limit, replace=False).tolist())


def _exact_vectors_progress(active: ActiveModel) -> tuple[str, float | None]:
    """(what the map of every word waits for, the fraction done or None): this model's own exact vectors,
    embedded in the background (`embed_own_vectors`) while it answers from approximate ones. ValueError saying why
    when that failed (the timer's polls stop there)."""
    vocabulary = active.engine.vocabulary
    building = vocabulary.progress
    if building is None and vocabulary.failure:
        meanwhile = f"; meanwhile {APPROXIMATE_ANSWERS}" if vocabulary.approximate else ""
        raise ValueError(f"The map of every word is drawn from this model's own exact vectors, and preparing them "
                         f"failed ({vocabulary.failure}){meanwhile}.")
    waits = ("The map of every word is drawn from this model's own exact vectors, which are being embedded in the "
             f"background; meanwhile {APPROXIMATE_ANSWERS}")
    if building is None:
        return f"{waits}. {APPEARS_WHEN_READY}", None
    done, total, _ = building
    return (f"{waits}: {render.embedding_progress(*building)}; then the map is laid out once (3 to 8 minutes). "
            f"{APPEARS_WHEN_READY}"), done / total


def _pending(session: Session, note: str, fraction: float | None = None):
    """What Draw map shows for a map of every word not ready yet: no error, a bar (when the fraction done
    is known) and what is under way, on an empty plot; the session's last map is kept for its searches."""
    return (render.placeholder_figure("The map of every word is being prepared: see the note above."),
            _pending_note(note, fraction), session)


def _pending_note(note: str, fraction: float | None = None) -> str:
    """What is under way, after a bar of the fraction done (when known)."""
    bar = "" if fraction is None else f"`{'█' * round(20 * fraction)}{'░' * (20 - round(20 * fraction))}` "
    return bar + note


def _start(work: BackgroundOnce, retry: bool, what: str) -> None:
    """Start `work` in the background unless under way or done; ValueError saying why it failed, when it has (the
    page's timer stops there). A failed work starts again only with `retry` (Draw map), not at the timer's polls."""
    if retry or work.failure is None:
        work.start()
    failure = work.failure
    if failure is not None and not work.running():
        raise ValueError(f"{what} failed ({short_reason(failure)}); press Draw map to try again.")


def _elapsed(since: float) -> str:
    """The time since the monotonic clock read `since`: "40 s", "3 min" ("a moment" if never: 0)."""
    if not since:
        return "a moment"
    seconds = max(0.0, time.monotonic() - since)
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def vocabulary_map_data(active: ActiveModel, colour: str = "part of speech", kind: str = "word") -> MapData:
    """The map of every word of `active` (its layout, laid out once per model; each word hovers its first
    definition too), or with `kind` "definition" every definition on it (each on its nearest word, a little
    jittered: same layout, same region names); new vectors land on their nearest words, coloured as
    `colour` says."""
    vocabulary = active.vocabulary_map
    words, coords = active.engine.vocabulary_reference("word"), vocabulary.layout()
    land = functools.partial(place, words.scorer, coords)  # new vectors (B, d) -> their places (B, 2)
    if kind == "word":
        return MapData(words, coords, vocabulary.word_groups(colour),
                       f"{words.name}: one map, laid out once for this model (UMAP)", land,
                       vocabulary.regions(), vocabulary.moves(),
                       details=words.scorer.candidates.first_definitions)
    definitions = active.engine.vocabulary_reference("definition")
    return MapData(definitions, vocabulary.definition_positions(), vocabulary.definition_groups(colour),
                   f"{definitions.name} on the map of every word, each by its nearest word", land,
                   vocabulary.regions())


def vocabulary_figure(active: ActiveModel, colour: str = "part of speech", kind: str = "word"):
    """`vocabulary_map_data`'s map as a figure: the same each time, so built once per layout, kind and colour
    (0.3-0.8 s) and never changed after (a search draws a figure of its own)."""
    return active.once(f"figure-{kind}-{colour}-{active.vocabulary_map.layout_key()}",
                       lambda: _map_figure(vocabulary_map_data(active, colour, kind)))


def _colour_groups(corpus: EmbeddedTexts, colour: str, column: str = "") -> list[str]:
    """Group label of each point: its part of speech, a k-means cluster of the vectors, its frequency band,
    or (FILE_COLUMN) its value in `column`, one of `corpus.columns` (see `_file_column`, `_column_groups`)."""
    if colour not in COLOUR_BY:
        raise ValueError(f"Colour by one of: {', '.join(COLOUR_BY)}.")
    if colour == FILE_COLUMN:
        return _column_groups(corpus.columns[column], column)
    if colour == "part of speech":
        return [label or "sentence" for label in corpus.labels]
    if colour == "frequency":  # of the text as a word or phrase: a sentence reads as unknown
        return frequency_bands(corpus.texts)
    from sklearn.cluster import KMeans
    k = min(8, len(corpus.texts))
    clusters = KMeans(n_clusters=k, n_init=3, random_state=0).fit_predict(corpus.vectors)
    return [f"cluster {c + 1}" for c in clusters]


def _file_column(columns: dict[str, list[str]], column: str) -> str:
    """`column` if `columns` has it, their first if `column` is empty; ValueError (listing them) otherwise."""
    if not columns:
        raise ValueError(NO_COLUMNS)
    if column and column not in columns:
        raise ValueError(f"This file has no column {column!r}; its columns: {', '.join(columns)}.")
    return column or next(iter(columns))


def _column_groups(values: list[str], column: str) -> list[str]:
    """Each point's group by its value in a file's `column`: for more than MAX_COLUMN_GROUPS - 1 distinct
    numbers, QUANTILES bins by quantile ("0.5 to 2.1"); else its value if one of the MAX_COLUMN_GROUPS - 1
    most common, OTHER if not. An empty value reads EMPTY; ValueError for a column without any value."""
    cells = [value.strip() for value in values]
    if not any(cells):
        raise ValueError(f"The column {column!r} is empty: choose another.")
    numbers = _numbers(cells)
    if numbers is not None and len(set(numbers.values())) >= MAX_COLUMN_GROUPS:
        return _quantile_bins(cells, numbers)
    common = {value for value, _ in Counter(cells).most_common(MAX_COLUMN_GROUPS - 1)}
    return [(cell or EMPTY) if cell in common else OTHER for cell in cells]


def _numbers(cells: list[str]) -> dict[str, float] | None:
    """{cell: its number} for the non-empty cells, or None if one of them is not a finite number."""
    try:
        numbers = {cell: float(cell) for cell in set(cells) if cell}
    except ValueError:
        return None
    return numbers if all(math.isfinite(x) for x in numbers.values()) else None


def _distinct_numbers(values: np.ndarray) -> list[str]:
    """`values` (distinct, sorted) written plainly with the fewest digits (3 at least) that tell them apart:
    1990 stays 1990, not 1.99e+03, and 1000.25 is not written as 1000.2 next to 1000.2."""
    for digits in range(3, 17):
        shown = [np.format_float_positional(v, precision=digits, unique=False, fractional=False, trim="-")
                 for v in values]
        if len(set(shown)) == len(shown):
            break
    return shown


def _quantile_bins(cells: list[str], numbers: dict[str, float]) -> list[str]:
    """Each cell's quantile bin among the column's non-empty cells, named by its range; EMPTY if empty."""
    x = np.array([numbers[cell] for cell in cells if cell])
    edges = np.unique(np.quantile(x, np.linspace(0, 1, QUANTILES + 1)))  # ties can merge bins
    shown = _distinct_numbers(edges)
    names = [f"{lo} to {hi}" for lo, hi in zip(shown[:-1], shown[1:])]
    return [names[int(np.searchsorted(edges[1:-1], numbers[cell], side="right"))] if cell else EMPTY
            for cell in cells]


def _is_word_map(m: MapData) -> bool:
    """Whether `m`'s points are the open vocabulary's words (the map of every word)."""
    return isinstance(m.corpus, VocabularyTexts) and m.corpus.kind == "word"
