"""The map of every word (core/explore/vocabulary_map.py, the Map tab's "every word") on a tiny model."""
from __future__ import annotations

import html
import re
import sys
import time
import types

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from app.handlers import EVERY_WORD_MAP, Session, Studio
from app.views.render import SEARCH_ZOOM
from app.shared.jobs import JobManager
from app.shared.models import Models, ModelSpec
from app.views.projection import Projector
from core import Engine
from core.lexicon.dictionary import Entry
from core.explore.vocabulary_map import build_layout, place, save_layout
from core.words import EmbeddingProgress, VocabularyState

DICTIONARY = [Entry("dog", "a domestic animal that barks", "n"), Entry("cat", "a small animal that purrs", "n"),
              Entry("king", "a man who rules a country", "n"), Entry("run", "to move fast on foot", "v"),
              Entry("ice cream", "a frozen sweet food", "n"), Entry("happy", "feeling pleasure", "a")]


@pytest.fixture
def engine(tiny_mlm_dir, tmp_path, monkeypatch) -> Engine:
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    engine = Engine.from_base(str(tiny_mlm_dir))
    engine.vocabulary.enable(dictionary=DICTIONARY)
    return engine


@pytest.fixture
def fake_umap(monkeypatch) -> list:
    """umap.UMAP replaced: records what it was fitted on and returns its first two numbers a row."""
    fitted = []

    class UMAP:
        def __init__(self, **settings):
            self.settings = settings

        def fit_transform(self, x):
            fitted.append((x, self.settings))
            return x[:, :2].astype(np.float64)
    monkeypatch.setitem(sys.modules, "umap", types.SimpleNamespace(UMAP=UMAP))
    return fitted


def test_the_layout_is_fitted_on_the_word_vectors_the_reverse_dictionary_scores(engine, fake_umap):
    coords = build_layout(engine.words.open_vocab)
    (x, settings), = fake_umap
    words = engine.vocabulary_reference("word")
    np.testing.assert_allclose(x, words.rows(list(range(len(words.texts)))), atol=1e-6)
    assert coords.shape == (len(DICTIONARY), 2) and coords.dtype == np.float32 and settings["metric"] == "cosine"


def test_a_vector_lands_among_its_nearest_words(engine):
    coords = np.random.default_rng(0).standard_normal((len(DICTIONARY), 2)).astype(np.float32)
    words = engine.vocabulary_reference("word")
    own = words.rows([words.texts.index("king")])
    np.testing.assert_allclose(place(engine.words.open_vocab, coords, own)[0], coords[words.texts.index("king")])
    landed = place(engine.words.open_vocab, coords, own, k=len(DICTIONARY))[0]  # a weighted mean: inside their box
    assert ((coords.min(0) <= landed) & (landed <= coords.max(0))).all()


def test_the_command_lays_out_the_map_the_app_then_draws_and_searches(engine, tiny_mlm_dir, fake_umap, monkeypatch,
                                                                        capsys, tmp_path):
    import core.words.scorer
    from core.cli import main

    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: DICTIONARY)
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir))), Projector(), JobManager())
    with pytest.raises(ValueError, match=f"vocabulary-map --model {tiny_mlm_dir}"):
        studio.models.active().vocabulary_map.layout_stamp()  # no map yet: says how to make one
    assert main(["vocabulary-map", "--model", str(tiny_mlm_dir)]) == 0
    assert f"{len(DICTIONARY)} words laid out" in capsys.readouterr().out
    figure, status, session = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech",
                                              Session())
    assert status.startswith(f"{len(DICTIONARY)} points") and "part of speech" in status
    assert {trace.name for trace in figure.data if trace.mode == "markers"} == {"noun", "verb", "adjective"}
    figure, note, rows = studio.map.search_map("a small animal", 2, session)
    assert figure.data[-1].name == "your search" and len(rows) == 2
    star, coords = (figure.data[-1].x[0], figure.data[-1].y[0]), session.map.coords
    (x0, x1), (y0, y1), width = figure.layout.xaxis.range, figure.layout.yaxis.range, np.ptp(coords, 0).max()
    assert np.allclose([(x0 + x1) / 2, (y0 + y1) / 2], star) and np.isclose(x1 - x0, width / SEARCH_ZOOM)  # flew there
    assert np.allclose(figure.layout.meta["full_x"], [coords[:, 0].min(), coords[:, 0].max()])  # for the zoom levels
    assert note.startswith("'a small animal' is not on this map; 2 points ringed, its nearest neighbours; the table: its nearest neighbours")  # and offers the nearest
    from app.shared.services import EVERY_DEFINITION
    figure, note, rows = studio.map.search_map("a small animal", 2, session, EVERY_DEFINITION)  # another collection
    definitions = studio.models.active().reference_texts(EVERY_DEFINITION).texts
    hits, star = figure.data[-2], figure.data[-1]
    assert hits.name.startswith("nearest in") and len(hits.x) == 2 and star.name == "your search"
    assert [r[2] for r in rows] == list(hits.text) and set(hits.text) <= set(definitions)
    assert "each on its nearest word" in note
    own = tmp_path / "mine.txt"
    own.write_text("a cat sleeps\na king rules\n", encoding="utf-8")
    studio.similarity.search("a cat", "uploaded file", str(own), 1, session)  # the user's file, uploaded there
    figure, _, rows = studio.map.search_map("a small animal", 2, session, "uploaded file")
    assert {r[2] for r in rows} == {"a cat sleeps", "a king rules"} == set(figure.data[-2].text)  # landed too
    note = studio.map.search_map("dog", 2, session)[1]
    assert note.startswith("1 point contains 'dog'; ") and "; the table:" in note and "need not be nearest its own" in note
    assert studio.map.export_map(session).endswith(".zip")


def test_the_map_of_every_word_exports_a_sample_of_itself(engine, tiny_mlm_dir, fake_umap, monkeypatch):
    """Issue 62, 6: the Projector export was offered for the map of every word, then refused with an error."""
    import zipfile

    import app.handlers.map

    monkeypatch.setattr(app.handlers.map, "MAX_EXPORT_POINTS", 4)  # the map of every word has 147k, not 6
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir))), Projector(), JobManager())
    save_layout(np.arange(2 * len(DICTIONARY), dtype=np.float32).reshape(-1, 2), engine.vocabulary_layout_path())
    _, _, session = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    exported = studio.map.export_map(session)
    assert exported.endswith(f"defsent-map-sample-4-of-{len(DICTIONARY)}.zip")
    with zipfile.ZipFile(exported) as archive:
        folder = f"defsent-map-sample-4-of-{len(DICTIONARY)}"
        metadata = archive.read(f"{folder}/metadata.tsv").decode().splitlines()
        vectors = archive.read(f"{folder}/vectors.tsv").decode().splitlines()
    rows = [line.split("\t") for line in metadata[1:]]
    assert len(rows) == len(vectors) == 4 and len({r[0] for r in rows}) == 4
    words = engine.vocabulary_reference("word")
    for row, line in zip(rows, vectors):  # each point's vector and coordinates are its own
        i = words.texts.index(row[0])
        np.testing.assert_allclose([float(v) for v in line.split("\t")], words.rows([i])[0], atol=1e-4)
        assert [float(row[2]), float(row[3])] == [2 * i, 2 * i + 1]
    with zipfile.ZipFile(studio.map.export_map(session)) as again:  # the same sample each time
        assert again.read(f"{folder}/metadata.tsv").decode().splitlines() == metadata


def test_the_map_tab_lays_the_map_out_in_the_background_then_draws_it(engine, tiny_mlm_dir, fake_umap,
                                                                       monkeypatch):
    import threading

    import app.shared.vocabulary_map

    gate, build_map = threading.Event(), app.shared.vocabulary_map.build_map
    monkeypatch.setattr(app.shared.vocabulary_map, "build_map", lambda *args: gate.wait(30) and build_map(*args))
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir))), Projector(), JobManager())
    active = studio.models.active()
    _, status, _ = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    assert status.startswith("Laying out the map of every word for this model in the background")  # no error
    gate.set()
    active.vocabulary_map.laying_out.thread.join(60)
    assert engine.vocabulary_layout_path().is_file() and len(fake_umap) == 1  # laid out once, alone: no parent
    _, status, _ = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    assert status.startswith(f"{len(DICTIONARY)} points")


def test_the_background_embedding_of_the_exact_vectors_records_its_progress(engine, tiny_mlm_dir, monkeypatch):
    import core.words.open_vocabulary
    import core.words.scorer
    from app.handlers.studio import embed_own_vectors

    active = Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir))).active()
    seen, real_scorer = [], core.words.open_vocabulary.open_scorer

    def open_scorer(encode_words, encode_definitions, *args):  # every batch seen as the tabs see it
        def watched(encode):
            return lambda texts: (encode(texts), seen.append(active.engine.vocabulary.progress))[0]
        return real_scorer(watched(encode_words), watched(encode_definitions), *args)
    monkeypatch.setattr(core.words.open_vocabulary, "open_scorer", open_scorer)
    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: DICTIONARY)  # WordNet's stand-in
    embed_own_vectors(active)
    total = len(DICTIONARY) + len({e.definition for e in DICTIONARY})
    assert seen and all(s.total == total and 0 < s.done <= total and s.seconds_left >= 0 for s in seen)
    assert seen[-1].done == total
    assert active.engine.vocabulary.progress is None  # done: nothing left to show


def test_no_map_of_every_word_from_compact_vectors_but_their_progress_and_no_error(engine, tiny_mlm_dir):
    """Issue 54, 3: while the exact vectors are embedded, Draw map shows their progress and the time
    left, where it raised a red error pointing at a tab that did not show it."""
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir))), Projector(), JobManager())
    active = studio.models.active()
    engine.vocabulary.state = VocabularyState.COMPACT
    figure, status, _ = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    assert "exact vectors, which are being embedded" in status and not any(len(t.x) for t in figure.data)
    engine.vocabulary.progress = EmbeddingProgress(66_000, 264_000, 1_500.0)  # as embed_own_vectors records it
    _, status, _ = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    assert "embedding 66,000/264,000 (once per model; about 25 min left)" in status and "█████░" in status
    engine.vocabulary.progress = None
    engine.vocabulary.state = VocabularyState.REUSED
    _, status, _ = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    assert "own exact vectors" in status  # not laid out from its parent's
    assert active.vocabulary_map.laying_out.thread is None
    engine.vocabulary.state = VocabularyState.EXACT
    save_layout(np.ones((len(DICTIONARY), 2), dtype=np.float32), engine.vocabulary_layout_path())
    assert not list(engine.vocabulary_layout_path().parent.glob("*.partial-*"))  # written whole
    _, _, session = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    assert (session.map.coords == 1).all()


def test_the_status_of_a_map_of_every_word_not_ready_follows_the_work_until_it_is_ready(engine, tiny_mlm_dir,
                                                                                         fake_umap, monkeypatch):
    """Issue 54: Draw map's status said "about 2 min left" minutes after the embedding had ended, and
    "(0 min so far)" while laying out, as long as the page stayed open. The page's timer asks `map_waiting`
    (below: its wiring) for the status of now until the map is ready, then says so and stops."""
    import asyncio
    import threading

    import app.shared.vocabulary_map
    from app.ui import build_app

    gate, build_map = threading.Event(), app.shared.vocabulary_map.build_map
    monkeypatch.setattr(app.shared.vocabulary_map, "build_map", lambda *args: gate.wait(30) and build_map(*args))
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir))), Projector(), JobManager())
    active = studio.models.active()
    engine.vocabulary.state = VocabularyState.COMPACT
    engine.vocabulary.progress = EmbeddingProgress(66_000, 264_000, 1_500.0)
    _, status, session = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    assert "embedding 66,000/264,000" in status and session.waiting == EVERY_WORD_MAP
    engine.vocabulary.progress = EmbeddingProgress(220_000, 264_000, 60.0)  # later: the status of now
    note, waits, figure = studio.map.map_waiting(session)
    assert "embedding 220,000/264,000 (once per model; about 60 s left)" in note and waits and figure is None
    engine.vocabulary.state, engine.vocabulary.progress = VocabularyState.EXACT, None  # embedded: the layout starts
    note, waits, _ = studio.map.map_waiting(session)
    assert re.search(r"Laying out the map of every word .* \(\d+ s so far;", note) and waits  # not "0 min"
    assert "appears here by itself when it is ready" in note and "Press Draw map" not in note
    gate.set()
    active.vocabulary_map.laying_out.thread.join(60)
    note, waits, figure = studio.map.map_waiting(session)  # ready: drawn by itself (issue 62), as Draw map draws it
    assert note.startswith(f"{len(DICTIONARY)} points") and not waits and not session.waiting
    assert sum(len(t.x) for t in figure.data) >= len(DICTIONARY) and len(session.map.coords) == len(DICTIONARY)
    assert studio.map.map_waiting(session) == (None, False, None)  # drawn once: nothing left to follow

    demo = build_app(studio)  # the page: Draw map's next step starts the timer, whose ticks write the status
    status_id = next(i for i, b in demo.blocks.items() if getattr(b, "elem_id", None) == "map-status")
    [tick] = [f for f in demo.fns.values() if "tick" in [name for _, name in f.targets]
              and status_id in [o._id for o in f.outputs]]
    [after_draw] = [f for f in demo.fns.values() if any(o is tick.outputs[1] for o in f.outputs) and f is not tick]
    session.waiting = EVERY_WORD_MAP
    assert after_draw.fn(session)[1].active is True
    assert after_draw.fn(Session())[1].active is False  # a map drawn: no polls
    layout = engine.vocabulary_layout_path()
    layout.rename(layout.with_suffix(".moved"))  # gone again: laid out again, and followed
    gate.clear()
    note, timer, figure, _ = asyncio.run(tick.fn(session))
    assert note.startswith("Laying out the map of every word") and timer.active is True
    gate.set()
    active.vocabulary_map.laying_out.thread.join(60)
    note, timer, figure, kept = asyncio.run(tick.fn(session))
    assert note.startswith(f"{len(DICTIONARY)} points") and timer.active is False  # the map, in the plot
    assert sum(len(t.x) for t in figure.data) >= len(DICTIONARY) and kept.map is not None


def test_the_map_of_every_word_is_drawn_once_per_layout_while_the_model_is_prepared(engine, tiny_mlm_dir):
    from app.handlers import prepare_model, vocabulary_figure

    save_layout(np.ones((len(DICTIONARY), 2), dtype=np.float32), engine.vocabulary_layout_path())
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir))), Projector(), JobManager())
    active = studio.models.active()
    prepare_model(active)
    prepared = [v for k, v in active._cache.items() if k.startswith("figure-")]
    assert len(prepared) == 1 and vocabulary_figure(active) is prepared[0]  # built while preparing, then kept
    figure, _, session = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    traces = len(figure.data)
    studio.map.search_map("a small animal", 2, session)
    assert figure is prepared[0] and len(figure.data) == traces  # a search draws its own figure
    deadline = time.monotonic() + 30  # preparing started placing the definitions in the background
    while not active.vocabulary_map.definitions_placed() and time.monotonic() < deadline:
        time.sleep(0.05)
    prepare_model(active)  # once placed, the map of every definition is drawn while preparing too
    assert [k for k in active._cache if k.startswith("figure-definition-")]
    save_layout(np.zeros((len(DICTIONARY), 2), dtype=np.float32), engine.vocabulary_layout_path())
    relaid = vocabulary_figure(active)  # laid out again: drawn again
    assert relaid is not figure and (np.concatenate([t.x for t in relaid.data]) == 0).all()


def test_each_word_on_the_map_hovers_its_first_definition(tiny_mlm_dir, tmp_path, monkeypatch):
    from app.views.render import DETAIL_CHARS, trace_details

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    engine = Engine.from_base(str(tiny_mlm_dir))
    engine.vocabulary.enable(dictionary=DICTIONARY + [Entry("dog", "a dull unattractive <unpleasant> girl", "n")])
    save_layout(np.ones((len(DICTIONARY), 2), dtype=np.float32), engine.vocabulary_layout_path())
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir))), Projector(), JobManager())
    assert studio.map.map_details(Session()) is None  # no map yet
    figure, _, session = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    details = studio.map.map_details(session)  # sent after the map, added to its hover texts by the page
    assert [d["name"] for d in details] == [t.name for t in figure.data[:len(details)]]
    hovers = [f"{word}<br>{detail}" for trace, d in zip(figure.data, details)
              for word, detail in zip(trace.text, d["details"])]
    assert sorted(hovers) == sorted(f"{e.word}<br>{e.definition}" for e in DICTIONARY)  # dog: its first sense only
    long = "a " * DETAIL_CHARS
    shortened = f"&lt;b&gt; {long[:DETAIL_CHARS - 5]}…"  # escaped after shortening
    assert trace_details(["g"], ["<b> " + long]) == [{"name": "g", "details": [shortened]}]
    _, _, sample = studio.map.draw_map("vocabulary words", 5, "", None, "PCA", "2-D", "part of speech", Session())
    assert studio.map.map_details(sample) is None  # a map of a sample: its points hover their text alone


def test_regions_are_named_at_each_zoom_level_by_their_words(engine):
    from core.explore.vocabulary_map import region_labels

    coords = np.array([[0, 0], [0, 1], [10, 0], [10, 1], [20, 0], [20, 1]], dtype=np.float32)
    levels = region_labels(engine.words.open_vocab, coords, levels=(1, 3))
    assert [len(regions) for regions in levels] == [1, 3]
    assert all(sum(r.size for r in regions) == len(DICTIONARY) for regions in levels)
    words = {e.word for e in DICTIONARY}
    assert all(set(r.name.split(", ")) <= words and r.name for regions in levels for r in regions)
    assert sorted(round(r.x) for r in levels[1]) == [0, 10, 20]  # each region at its members' mean


def test_a_region_is_named_by_single_words_before_phrases(engine, monkeypatch):
    """A phrase's frequency is its words' ("henry sweet" reads as common as "bird"): single words name a
    region first (issue 54, item 6)."""
    import core.explore.vocabulary_map as vocabulary_map

    monkeypatch.setattr(vocabulary_map, "zipf_frequencies", lambda words: np.array([9.0 if " " in w else 1.0
                                                                                    for w in words]))
    [[region]] = vocabulary_map.region_labels(engine.words.open_vocab, np.zeros((len(DICTIONARY), 2)), levels=(1,))
    assert "ice cream" not in region.name and len(region.name.split(", ")) == 2


def test_region_names_that_would_overlap_are_left_out_the_larger_region_kept(engine):
    """Names are boxes as wide as their characters on a phone's view of the map: of two that overlap the
    larger region's stays; each level is spaced for its own zoom (issue 54, item 6)."""
    from core.explore.vocabulary_map import Region
    from app.views.render import REGION_LABELS, add_region_labels, spaced_regions

    big, small, far = (Region(0.0, 0.0, "water, sea", np.arange(9)), Region(0.05, 0.03, "wave", np.arange(2)),
                       Region(0.8, 0.8, "king", np.arange(3)))
    assert spaced_regions([small, big, far], (1.0, 1.0)) == [big, far]
    assert spaced_regions([small, big, far], (0.05, 0.05)) == [small, big, far]  # 20 times closer: all fit
    fig = add_region_labels(go.Figure(), [[small, big, far], [small, big, far]], (1.0, 1.0))
    labels = [t for t in fig.data if t.name == REGION_LABELS]
    assert [list(t.text) for t in labels] == [["water, sea", "king"], ["wave", "water, sea", "king"]]


def test_the_map_of_every_word_carries_its_region_names_one_level_shown(engine, tiny_mlm_dir):
    import html

    from app.views.render import REGION_LABELS

    save_layout(np.random.default_rng(0).standard_normal((len(DICTIONARY), 2)).astype(np.float32),
                engine.vocabulary_layout_path())
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir))), Projector(), JobManager())
    figure, _, session = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    labels = [t for t in figure.data if t.name == REGION_LABELS]
    assert [t.meta for t in labels] == list(range(len(labels))) and len(labels) >= 2
    assert [t.visible for t in labels] == [True] + [False] * (len(labels) - 1)
    assert {t.type for t in labels} == {"scattergl"}  # drawn above the WebGL points, where an SVG trace hid under them
    searched, _, _ = studio.map.search_map("a small animal", 2, session)  # a search keeps them
    assert [t.meta for t in searched.data if t.name == REGION_LABELS] == [t.meta for t in labels]
    by_region, status, _ = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "cluster", Session())
    middle = {name for t in by_region.data if t.name == REGION_LABELS and t.meta == 1 for name in t.text}
    assert status.endswith("coloured by region.") and {t.name for t in by_region.data if t.mode == "markers"} == {
        html.unescape(name) for name in middle}  # each word coloured by its region at the middle zoom level
    by_frequency, _, _ = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "frequency", Session())
    bands = {t.name: list(t.text) for t in by_frequency.data if t.mode == "markers"}
    assert "dog" in bands["common (Zipf 4+)"] and "ice cream" not in bands.get("rarest or unknown", [])


def test_a_fine_tunes_map_is_aligned_to_its_parents_with_its_own_words_moves(engine, tiny_mlm_dir, tmp_path,
                                                                            fake_umap, monkeypatch):
    import core.words.scorer
    from core.cli import main
    from core.explore.vocabulary_map import load_moves

    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: DICTIONARY)
    parent = engine.save(tmp_path / "parent")
    child = Engine.load(parent, open_vocabulary=False, decoder=None)
    child.words.user_dictionary = [Entry("zib zab", "a small animal that purrs")]
    child_path = child.save(tmp_path / "child")
    assert main(["vocabulary-map", "--model", str(child_path), "--align-to", str(parent)]) == 0  # the parent's first
    assert len(fake_umap) == 1  # the parent's map only: the child's goes on it
    parent_engine, child_engine = (Engine.load(p, open_vocabulary=False, decoder=None) for p in (parent, child_path))
    for e in (parent_engine, child_engine):
        e.vocabulary.enable(cache_dir=tmp_path / "cache" / "open-vocab")
    before, after = np.load(parent_engine.vocabulary_layout_path()), np.load(child_engine.vocabulary_layout_path())
    words = child_engine.words.open_vocab.candidates.words
    shared = [words.index(w) for w in parent_engine.words.open_vocab.candidates.words]
    np.testing.assert_allclose(after[shared], before, atol=1e-4)  # the parent's words keep their places
    new = after[words.index("zib zab")]
    from core.explore.vocabulary_map import procrustes
    ours, theirs = (e.words.open_vocab.vectors_of("word", torch.arange(len(e.words.open_vocab.candidates.words)))
                    .float() for e in (child_engine, parent_engine))
    rotation = procrustes(ours[shared], theirs)
    nearest = int((ours[words.index("zib zab")] @ rotation @ theirs.T).argmax())
    np.testing.assert_allclose(new, before[nearest], atol=1e-4)  # on the parent word nearest its rotated vector
    (move,) = load_moves(child_engine.vocabulary_layout_path())
    read = place(parent_engine.words.open_vocab, before, parent_engine.encode(["a small animal that purrs"]))[0]
    assert move["word"] == "zib zab" and np.allclose(move["before"], read, atol=1e-4)  # where the parent read it
    assert np.allclose(move["after"], new, atol=1e-4)  # its place now
    studio = Studio(Models.from_engine(child_engine, ModelSpec("child", child_path)), Projector(), JobManager())
    figure, _, _ = studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    assert [a.text for a in figure.layout.annotations] == ["zib zab"]  # its arrow, named


class _Words:
    """What `aligned_layout` reads of an OpenScorer: its candidate words and their unit vectors."""

    def __init__(self, words: list[str], vectors: np.ndarray):
        self.candidates = types.SimpleNamespace(words=words)
        self.vectors = torch.nn.functional.normalize(torch.from_numpy(vectors).float(), dim=1)

    def vectors_of(self, kind: str, rows: torch.Tensor) -> torch.Tensor:
        return self.vectors[rows]


def test_a_fine_tunes_map_keeps_the_words_it_did_not_move_and_lands_the_rest_on_their_new_meaning():
    from core.explore.vocabulary_map import aligned_layout

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((40, 16))  # (C, d) the parent's word vectors
    parent = _Words([f"w{i}" for i in range(40)], vectors)
    turned = vectors @ np.linalg.qr(rng.standard_normal((16, 16)))[0]  # the whole space rotated, as a fine-tune does
    turned[5] = turned[7] + 0.01 * rng.standard_normal(16)  # w5 now means what w7 means
    child = _Words(parent.candidates.words + ["new"], np.vstack([turned, turned[9]]))  # a new word meaning w9
    coords = rng.standard_normal((40, 2)).astype(np.float32)  # the parent's map
    landed = aligned_layout(child, parent, coords, batch=8)
    kept = [i for i in range(40) if i != 5]
    np.testing.assert_array_equal(landed[kept], coords[kept])  # not UMAP again: every kept word stays exactly
    np.testing.assert_array_equal(landed[5], coords[7])
    np.testing.assert_array_equal(landed[40], coords[9])


def test_procrustes_finds_the_rotation_between_two_spaces():
    from core.explore.vocabulary_map import procrustes

    rng = np.random.default_rng(1)
    rotation = torch.from_numpy(np.linalg.qr(rng.standard_normal((8, 8)))[0]).float()
    source = torch.from_numpy(rng.standard_normal((50, 8))).float()
    torch.testing.assert_close(procrustes(source, source @ rotation), rotation, atol=1e-4, rtol=0)


def test_each_definition_lands_within_the_jitter_of_its_nearest_word(engine):
    from core.explore.vocabulary_map import DEFINITION_JITTER, place_definitions, word_spacing

    coords = np.random.default_rng(0).standard_normal((len(DICTIONARY), 2)).astype(np.float32)
    scorer = engine.words.open_vocab
    definitions = engine.vocabulary_reference("definition")
    vectors = definitions.rows(list(range(len(definitions.texts))))  # (G, d)
    nearest = scorer.cosines(torch.from_numpy(vectors), "word").argmax(1).numpy()  # (G,)
    landed = place_definitions(scorer, coords, batch=2)  # in batches of 2
    radius = DEFINITION_JITTER * word_spacing(coords)
    distance = np.linalg.norm(landed - coords[nearest], axis=1)  # (G,)
    assert landed.shape == (len(DICTIONARY), 2) and landed.dtype == np.float32 and radius > 0
    assert (distance <= radius + 1e-5).all() and (distance > 0).all()  # near its word, not on its pixel
    np.testing.assert_array_equal(landed, place_definitions(scorer, coords))  # seeded: the same map each time


def test_the_definitions_positions_are_kept_for_one_version_of_the_layout(engine, monkeypatch):
    import core.explore.vocabulary_map as vocabulary_map

    scorer, path = engine.words.open_vocab, engine.vocabulary_layout_path()
    coords = np.random.default_rng(0).standard_normal((len(DICTIONARY), 2)).astype(np.float32)
    save_layout(coords, path)
    stamp = vocabulary_map.layout_stamp(path)
    first = vocabulary_map.definition_layout(scorer, coords, path, stamp)
    assert vocabulary_map.definitions_path(path, stamp).is_file() and not list(path.parent.glob("*.partial-*"))

    def fail(*args, **kwargs):
        raise AssertionError("placed again")
    with monkeypatch.context() as patched:
        patched.setattr(vocabulary_map, "place_definitions", fail)
        np.testing.assert_array_equal(vocabulary_map.definition_layout(scorer, coords, path, stamp), first)  # kept
    save_layout(coords + 100, path)  # laid out again: a new version
    new_stamp = vocabulary_map.layout_stamp(path)
    assert new_stamp != stamp and vocabulary_map.kept_definition_positions(path, new_stamp, len(first)) is None
    moved = vocabulary_map.definition_layout(scorer, coords + 100, path, new_stamp)
    np.testing.assert_allclose(moved, first + 100, atol=1e-4)
    assert not vocabulary_map.definitions_path(path, stamp).exists()  # the old version's positions are gone
    vocabulary_map.definitions_path(path, new_stamp).write_bytes(b"not an array")  # unreadable: placed again
    assert vocabulary_map.kept_definition_positions(path, new_stamp, len(first)) is None


def test_a_failed_placing_of_the_definitions_is_the_maps_to_say_never_another_callers(engine, tiny_mlm_dir,
                                                                                      monkeypatch):
    """Before: the stored failure was raised at the next caller of `start`, whoever it was (a model's preparation
    got the map's MemoryError), and the page's timer started the work again at its next poll."""
    import threading

    import app.shared.vocabulary_map
    from app.handlers import EVERY_DEFINITION_MAP

    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir))), Projector(), JobManager())
    active = studio.models.active()
    placing = active.vocabulary_map.placing
    save_layout(np.zeros((len(DICTIONARY), 2), dtype=np.float32), engine.vocabulary_layout_path())
    drawn = threading.Event()

    def out_of_memory(*args):
        drawn.wait(30)  # fails once Draw map has answered that it is under way
        raise MemoryError("full")

    with monkeypatch.context() as patched:
        patched.setattr(app.shared.vocabulary_map, "definition_layout", out_of_memory)
        _, status, session = studio.map.draw_map(EVERY_DEFINITION_MAP, 0, "", None, "UMAP", "2-D",
                                                 "part of speech", Session())
        drawn.set()
        assert status.startswith("Placing the") and session.waiting == EVERY_DEFINITION_MAP
        placing.thread.join(30)
        assert isinstance(placing.failure, MemoryError)
        failed_run = placing.thread
        status, waits, figure = studio.map.map_waiting(session)  # the page's timer: says why, and stops
        assert status == ("Placing the definitions on the map of every word failed (MemoryError: full); press "
                          "Draw map to try again.") and not waits and figure is None and not session.waiting
        assert placing.thread is failed_run  # the timer did not start it again
        placing.start()  # another caller (a model's preparation): nothing raised at it, and the work tried again
        placing.thread.join(30)
    placing.start()
    placing.thread.join(30)
    assert active.vocabulary_map.definitions_placed() and placing.failure is None


def test_the_map_of_every_definition_is_drawn_searched_and_selected_on_the_map_of_every_word(engine, tiny_mlm_dir):
    import json

    from app.handlers import EVERY_DEFINITION_MAP, MAP_SOURCES
    from app.views.render import REGION_LABELS

    assert EVERY_DEFINITION_MAP in MAP_SOURCES
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir))), Projector(), JobManager())
    coords = np.random.default_rng(0).standard_normal((len(DICTIONARY), 2)).astype(np.float32) * 10
    save_layout(coords, engine.vocabulary_layout_path())
    _, status, _ = studio.map.draw_map(EVERY_DEFINITION_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    assert re.match(r"Placing the \d+ definitions", status)  # placed in the background, not in the request
    active = studio.models.active()
    deadline = time.monotonic() + 30
    while not active.vocabulary_map.definitions_placed() and time.monotonic() < deadline:
        time.sleep(0.05)
    figure, status, session = studio.map.draw_map(EVERY_DEFINITION_MAP, 0, "", None, "UMAP", "2-D",
                                                  "part of speech", Session())
    assert status.startswith(f"{len(DICTIONARY)} points") and "part of speech" in status
    points = {t.name: list(t.text) for t in figure.data if t.mode == "markers"}
    assert set(points) == {"noun", "verb", "adjective"} and points["verb"] == ["run: to move fast on foot"]
    assert any(t.name == REGION_LABELS for t in figure.data)  # the word map's region names: the same map
    again, _, _ = studio.map.draw_map(EVERY_DEFINITION_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    assert again is figure  # built once per layout and colour
    figure, note, rows = studio.map.search_map("purrs", 2, session)
    assert note.startswith("1 point contains 'purrs'") and len(rows) == 2
    assert figure.data[-1].name == "your search"
    star = [figure.data[-1].x[0], figure.data[-1].y[0]]
    np.testing.assert_allclose(star, place(engine.words.open_vocab, coords, engine.encode(["purrs"], normalize=True))[0])
    assert any(np.allclose(star, c) for c in coords)  # on its nearest word, as on the map of every word
    traces = session.map.traces
    noun = list(points).index("noun")
    rows, note, csv = studio.map.select_map(json.dumps([[noun, p] for p in range(len(traces[noun]))]), session)
    assert note.startswith(f"{len(points['noun'])} point(s) selected") and csv.endswith(".csv")
    assert sorted(r[0] for r in rows) == sorted(points["noun"]) and {r[1] for r in rows} == {"noun"}
    verb = list(points).index("verb")
    assert studio.map.map_point(json.dumps([[verb, 0]]), session).endswith("defines: run")
    by_frequency, _, _ = studio.map.draw_map(EVERY_DEFINITION_MAP, 0, "", None, "UMAP", "2-D", "frequency",
                                             Session())
    bands = {t.name: list(t.text) for t in by_frequency.data if t.mode == "markers"}
    assert "dog: a domestic animal that barks" in bands["common (Zipf 4+)"]  # the band of the word it defines
    by_region, status, _ = studio.map.draw_map(EVERY_DEFINITION_MAP, 0, "", None, "UMAP", "2-D", "cluster", Session())
    middle = {name for t in by_region.data if t.name == REGION_LABELS and t.meta == 1 for name in t.text}
    assert status.endswith("coloured by region.")
    assert {t.name for t in by_region.data if t.mode == "markers"} <= {html.unescape(n) for n in middle}
    engine.vocabulary.state = VocabularyState.COMPACT
    _, status, _ = studio.map.draw_map(EVERY_DEFINITION_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    assert "exact vectors, which are being embedded" in status
