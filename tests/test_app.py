"""The app's handlers and helpers against a tiny random engine (no browser, no UMAP)."""
from __future__ import annotations

import asyncio

import json
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from app import services as sv
from app import views
from app.evaluation import sts_markdown, word_prediction_rows
from app.export import export_sentence_transformers, zip_folder
from app.finetune import FinetuneSettings, comparison_rows, run_finetune, save_finetuned, validate_upload
from app.handlers import BASE_WARNING_SHORT, Session, Studio, start_studio
from app.jobs import CANCELLED, DONE, FAILED, Job, JobCancelled, JobManager
from app.models import BASE_LABEL, Models, ModelSpec, ModelUnavailable, available_specs
from app.projection import Projector, pca
from core import Engine
from core.lexicon.dictionary import Entry
from core.words.word_prior import frequency_bands
from core.readout import find_decoder_dir
from tests.conftest import TINY_WORDS

FIXTURES = Path(__file__).parent / "fixtures"
DEFINITIONS = {"dog": "an animal that barks", "cat": "a small animal that says meow", "king": "a man who rules",
               "queen": "a woman who rules", "river": "water that runs to the sea", "bread": "food made of flour",
               "car": "a thing to drive on a road", "teacher": "a person who helps a child learn",
               "song": "music with words", "tree": "a large plant with wood", "house": "a place to live",
               "fire": "it is hot and burns", "wine": "a drink made of grapes", "road": "a way for cars",
               "doctor": "a person who treats the sick", "city": "a large town", "book": "pages to read",
               "boy": "a young man", "girl": "a young woman", "water": "what you drink"}


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def engine(tiny_mlm_dir) -> Engine:
    return Engine.from_base(str(tiny_mlm_dir))


@pytest.fixture
def studio(engine, tiny_mlm_dir, tmp_path) -> Studio:
    models = Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path / "checkpoints")
    return Studio(models, Projector(), JobManager())


@pytest.fixture
def dictionary_file(tmp_path) -> Path:
    path = tmp_path / "mine.tsv"
    path.write_text("word\tdefinition\n" + "".join(f"{w}\t{d}\n" for w, d in DEFINITIONS.items())
                    + "zzzz\tnot a word the head knows\n", encoding="utf-8")
    return path


# ---- reverse dictionary ---------------------------------------------------------------------------

def test_reverse_dictionary_ranks_words_with_definitions(engine):
    rows = sv.reverse_dictionary(engine, sv.WordQuery("a dog is an animal", k=5))
    assert len(rows) == 5 and all(r.word in TINY_WORDS or len(r.word) == 1 for r in rows)
    assert [r.probability for r in rows] == sorted((r.probability for r in rows), reverse=True)
    assert sv.definitions_of("dog") and all(e.word == "dog" for e in sv.definitions_of("dog"))


def test_reverse_dictionary_filters(engine):
    rows = sv.reverse_dictionary(engine, sv.WordQuery("an animal", k=3, initial="c", pattern="c*",
                                                      exclude_query_words=True, min_length=3))
    assert rows and all(r.word.startswith("c") and len(r.word) >= 3 for r in rows)
    nouns = sv.reverse_dictionary(engine, sv.WordQuery("an animal", k=5, pos="noun"))
    assert all(any(e.pos == "n" for e in sv.wordnet_index()[r.word]) for r in nouns)


@pytest.mark.parametrize("query, message", [
    (sv.WordQuery("  "), "enter a description"),
    (sv.WordQuery("x", k=0), "between 1 and 100"),
    (sv.WordQuery("x", min_length=5, max_length=2), "impossible"),
    (sv.WordQuery("x", pos="pronoun"), "part of speech"),
    (sv.WordQuery("x", initial="1"), "letters only"),
    (sv.WordQuery("x", pattern="[" * 70), "1 to 64"),
    (sv.WordQuery("x" * 2000), "limit"),
])
def test_reverse_dictionary_rejects_bad_input(engine, query, message):
    with pytest.raises(ValueError, match=message):
        sv.reverse_dictionary(engine, query)


def test_reverse_dictionary_answers_phrases_with_their_definitions_once_the_open_vocabulary_is_ready(
        tiny_mlm_dir, tmp_path):
    from core.lexicon.dictionary import load_wordnet_lemmas
    engine = Engine.from_base(str(tiny_mlm_dir))
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path), Projector(),
                    JobManager())
    pending, _ = studio.reverse.reverse_dictionary("a frozen sweet food", 5)
    assert "full vocabulary" in pending
    lemmas = [e for e in load_wordnet_lemmas() if e.word in ("ice cream", "red tape", "dog", "give up")]
    engine.enable_open_vocabulary(dictionary=lemmas)
    rows = sv.reverse_dictionary(engine, sv.WordQuery("a frozen sweet food", k=4))
    assert {r.word for r in rows} == {"ice cream", "red tape", "dog", "give up"}
    assert all(r.definitions and r.definitions[0].word == r.word for r in rows)
    ready, _ = studio.reverse.reverse_dictionary("a frozen sweet food", 5)
    assert "full vocabulary" not in ready and "ice cream" in ready


def test_studio_reverse_escapes_html_and_compares(studio):
    main, before = studio.reverse.reverse_dictionary("<script>alert(1)</script> a dog", 3, compare=True)
    assert "<script>" not in main and "ds-word" in main
    assert "nothing to compare" in before  # the active model is a base


def test_compare_with_checkpoint_uses_untrained_twin(engine, tiny_mlm_dir, tmp_path):
    path = engine.save(tmp_path / "ckpt", name="ckpt")
    studio = Studio(Models.from_engine(Engine.load(path), ModelSpec("ckpt", path), tmp_path), Projector(),
                    JobManager())
    _, before = studio.reverse.reverse_dictionary("a dog", 3, compare=True)
    assert "before DefSent training" in before
    assert [s.name for s in available_specs(tmp_path)] == ["ckpt", BASE_LABEL]


# ---- similarity and search ------------------------------------------------------------------------

def test_similarity_and_heatmap(studio):
    assert "1.0000" in studio.similarity.pair_similarity("a dog", "a dog")
    figure = studio.similarity.heatmap("a dog\na cat\nwine")
    assert np.asarray(figure.data[0].z).shape == (3, 3)
    with pytest.raises(ValueError, match="at least two"):
        studio.similarity.heatmap("only one")


def test_search_dictionary_and_uploaded_file(studio, tmp_path):
    rows, _ = studio.similarity.search("an animal that barks", sv.SAMPLE, None, 3, Session())
    assert len(rows) == 3 and rows[0][0] == 1 and rows[0][1] >= rows[1][1]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a dog barks\nthe king rules\nbread is food\n", encoding="utf-8")
    session = Session()
    rows, session = studio.similarity.search("a dog barks", "uploaded file", str(corpus), 2, session)
    assert rows[0][2] == "a dog barks" and rows[0][1] == pytest.approx(1.0, abs=1e-4)
    cached = session.corpus
    studio.similarity.search("bread", "uploaded file", str(corpus), 2, session)
    assert session.corpus is cached  # embedded once per file and model
    with pytest.raises(ValueError, match="Upload a text file"):
        studio.similarity.search("x", "uploaded file", None, 2, Session())


def test_search_analogy_and_interpolation_search_the_chosen_collection(tiny_mlm_dir, tmp_path):
    from core.lexicon.dictionary import Entry

    engine = Engine.from_base(str(tiny_mlm_dir))
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path), Projector(),
                    JobManager())
    rows, _ = studio.similarity.search("an animal that barks", sv.LARGEST_READY, None, 3, Session())
    assert len(rows) == 3 and all(":" in text for *_, text in rows)  # no open vocabulary yet: the sample
    with pytest.raises(ValueError, match="needs the full vocabulary"):
        studio.similarity.search("an animal", sv.EVERY_WORD, None, 3, Session())
    engine.enable_open_vocabulary(dictionary=[
        Entry("dog", "a domestic animal that barks", "n"), Entry("king", "a man who rules a country", "n"),
        Entry("monarch", "a man who rules a country", "n"), Entry("ice cream", "a frozen sweet food", "n")])
    rows, _ = studio.similarity.search("an animal that barks", sv.LARGEST_READY, None, 5, Session())
    assert sorted(text for *_, text in rows) == ["dog: a domestic animal that barks", "ice cream: a frozen sweet food",
                                                "king, monarch: a man who rules a country"]
    rows, _ = studio.similarity.search("an animal that barks", sv.EVERY_WORD, None, 5, Session())
    assert sorted(text for *_, text in rows) == ["dog", "ice cream", "king", "monarch"]
    _, _, nearest = studio.analogy.analogy("a king", "a queen", "a boy", "b - a + c", reference=sv.EVERY_WORD)
    assert {row[2] for row in nearest} == {"dog", "ice cream", "king", "monarch"}
    rows, figure = studio.analogy.interpolation("a dog", "a king", 3, reference=sv.EVERY_DEFINITION)
    assert len(rows) == 3 and len(figure.data) >= 2  # the path among the definitions' own vectors
    with pytest.raises(ValueError, match="Unknown reference texts"):
        studio.similarity.search("x", "everything", None, 3, Session())


def test_a_quick_build_does_not_wait_behind_a_slow_one_of_another_key(engine):
    """The map's layout (a file read) once waited 12 s behind the untrained twin's loading."""
    from app.models import ActiveModel
    active = ActiveModel(ModelSpec("shipped"), engine)
    started, release = threading.Event(), threading.Event()

    def slow():
        started.set()
        release.wait(30)
        return "twin"
    slow_thread = threading.Thread(target=active.once, args=("untrained", slow))
    slow_thread.start()
    assert started.wait(10)
    try:
        done = []
        quick = threading.Thread(target=lambda: done.append(active.once("layout", lambda: "map")))
        quick.start()
        quick.join(5)
        assert done == ["map"]  # answered while the slow build still runs
        assert active.once("layout", lambda: "built again") == "map"  # and kept
    finally:
        release.set()
        slow_thread.join(10)
    assert active.once("untrained", lambda: "built again") == "twin"


def test_reference_corpus_is_cached_on_disk(engine):
    first = sv.reference_corpus(engine, 50)
    again = sv.reference_corpus(engine, 50, progress=lambda *a, **k: pytest.fail("re-encoded"))
    assert np.array_equal(first.vectors, again.vectors) and len(first.texts) == 50


def test_bad_text_file(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"caf\xe9\n")
    with pytest.raises(ValueError, match="not UTF-8"):
        sv.read_text_file(path)


# ---- analogy and interpolation -----------------------------------------------------------------------

def test_analogy_without_decoder_says_so(studio):
    decoded, words, nearest = studio.analogy.analogy("a king", "a queen", "a boy", "b - a + c")
    assert "No Vec2Sent decoder" in decoded and len(words) == 10 and len(nearest) == 10
    with pytest.raises(ValueError, match="unknown name 'd'"):
        studio.analogy.analogy("a", "b", "c", "d - a")
    assert find_decoder_dir(studio.models.active().engine.fingerprint, studio.models.checkpoints) is None


def test_interpolation_table_and_path(studio):
    rows, figure = studio.analogy.interpolation("a dog", "a king", 5)
    assert [r[0] for r in rows] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert rows[0][3] == pytest.approx(1.0, abs=1e-4) and rows[-1][4] == pytest.approx(1.0, abs=1e-4)
    assert rows[0][1] == "(no decoder)" and "PCA" in figure.layout.title.text
    with pytest.raises(ValueError, match="between 2 and 50"):
        studio.analogy.interpolation("a", "b", 1)


def test_the_app_decodes_with_its_wider_beam(studio, monkeypatch):
    from core.readout import DEFAULT_CORRECTION, Lazy
    from core.vec2sent.refine import APP_BEAM, CorrectSettings

    engine, beams = studio.models.active().engine, []
    monkeypatch.setattr(engine.reader, "_decoder", Lazy(object))  # a decoder is present: analogy and interpolation decode
    monkeypatch.setattr(engine.reader, "decode", lambda vectors, beam=5, refine=None, correct=DEFAULT_CORRECTION, **kw:
                        beams.append((beam, refine, correct)) or ["x"] * len(vectors))
    decoded, _, _ = studio.analogy.analogy("a king", "a queen", "a boy", "b - a + c")
    rows, _ = studio.analogy.interpolation("a dog", "a king", 3)
    assert decoded == "**Decoded:** x" and [r[1] for r in rows] == ["x"] * 3
    # corrected once as the API does; corrected seven times by steps of 0.5 only when asked
    studio.analogy.analogy("a king", "a queen", "a boy", "b - a + c", refine=True)
    studio.analogy.interpolation("a dog", "a king", 3, refine=True)
    exact = (APP_BEAM, None, CorrectSettings(rounds=7, step=0.5))
    assert beams == [(APP_BEAM, None, DEFAULT_CORRECTION)] * 2 + [exact] * 2 and APP_BEAM > 5


# ---- map ---------------------------------------------------------------------------------------------

def test_draw_map_then_search(studio):
    session = Session()
    figure, status, session = studio.map.draw_map("my sentences", 0, "a dog\na cat\nthe king\nwine", None, "UMAP",
                                              "3-D", "cluster", session)
    assert "PCA" in status and "UMAP needs at least 10 points" in status
    assert session.map.coords.shape == (4, 3) and figure.data[0].type == "scatter3d"
    figure, note, rows = studio.map.search_map("dog", 2, session)
    assert "1 point(s)" in note and rows[0][2] == "a dog"
    assert figure.data[-1].name == "search hits"
    from app.services import SAMPLE
    with pytest.raises(ValueError, match="map of every word only"):  # this map's layout is its own
        studio.map.search_map("dog", 2, session, SAMPLE)
    with pytest.raises(ValueError, match="between 1 and 30"):
        studio.map.search_map("dog", 31, session)


def test_map_of_vocabulary_words_coloured_by_part_of_speech(studio):
    figure, _, session = studio.map.draw_map("vocabulary words", 30, "", None, "PCA", "2-D", "part of speech",
                                             Session())
    assert {t.name for t in figure.data} <= {"noun", "verb", "adjective", "adverb"}
    assert len(session.map.corpus.texts) == 30
    figure, _, session = studio.map.draw_map("vocabulary words", 30, "", None, "PCA", "2-D", "frequency", Session())
    assert session.map.groups == frequency_bands(session.map.corpus.texts)
    assert [t.name for t in figure.data] == list(dict.fromkeys(session.map.groups))


def test_a_selection_on_the_map_lists_its_points_and_their_csv(studio, monkeypatch, tmp_path):
    import csv
    import html

    from app.export import _inert
    from app.handlers.map import _plain

    assert [_inert(v) for v in ("=1+1", "-x", "ok", 3)] == ["'=1+1", "'-x", "ok", 3]  # no formula runs
    monkeypatch.setattr("app.export.download_dir", lambda: tmp_path / "downloads")
    with pytest.raises(ValueError, match="Draw a map first"):
        studio.map.select_map("[[0, 0]]", Session())
    figure, _, session = studio.map.draw_map("vocabulary words", 30, "", None, "PCA", "2-D", "part of speech",
                                             Session())
    trace = len(figure.data) - 1  # the browser names points by trace and position: map them back
    pairs = [[trace, p] for p in range(len(figure.data[trace].x))] + [[trace + 5, 0]]  # a search's trace: not a point
    rows, note, path = studio.map.select_map(json.dumps(pairs), session)
    names = [html.unescape(t) for t in figure.data[trace].text]  # hover texts: escaped words
    assert note.startswith(f"{len(names)} point(s) selected") and sorted(r[0] for r in rows) == sorted(names)
    assert {r[1] for r in rows} == {figure.data[trace].name}
    with open(path, encoding="utf-8") as f:
        assert list(csv.reader(f))[1:] == [[str(v) for v in r] for r in rows]
    assert studio.map.select_map("[]", session)[2] is None
    word, group = rows[0][0], rows[0][1]
    clicked = studio.map.map_point(json.dumps([[trace, names.index(word)]]), session)  # a click: the word, defined
    assert clicked.startswith(f"**{_plain(word)}** ({_plain(group)})") and "\n- *" in clicked
    assert _plain("*x* [y](z) <b>") == "\\*x\\* \\[y\\]\\(z\\) &lt;b&gt;"  # a user's text shows as itself
    assert studio.map.map_point(json.dumps([[trace + 5, 0]]), session) == ""  # not a point: nothing to show
    for bad in ("not json", "[[0]]", "[[-1, 0]]", '[["a", 0]]', json.dumps([[0, 0]] * 61), " " * 10_000):
        with pytest.raises(ValueError, match="could not be read"):
            studio.map.select_map(bad, session)


def test_map_of_an_uploaded_file_reuses_its_embeddings(studio, tmp_path):
    corpus = tmp_path / "lines.txt"
    corpus.write_text("".join(f"sentence number {i}\n" for i in range(12)), encoding="utf-8")
    session = Session()
    studio.similarity.search("number", "uploaded file", str(corpus), 2, session)
    embedded = session.corpus
    _, status, session = studio.map.draw_map("uploaded file", 0, "", str(corpus), "PCA", "2-D", "part of speech",
                                             session)
    assert session.map.corpus is embedded and status.startswith("12 points, PCA")


def test_a_map_goes_out_as_projector_files_and_projector_files_come_in(studio, tmp_path, monkeypatch):
    import zipfile

    from core.explore.projector import read_projector

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    _, _, session = studio.map.draw_map("my sentences", 0, "a dog\na cat\nthe king\nwine", None, "PCA", "2-D",
                                    "cluster", Session())
    with pytest.raises(ValueError, match="Draw a map first"):
        studio.map.export_map(Session())
    with zipfile.ZipFile(studio.map.export_map(session)) as archive:
        archive.extractall(tmp_path / "out")
    folder = tmp_path / "out" / "defsent-map"
    exported = read_projector(folder / "vectors.tsv", folder / "metadata.tsv")
    np.testing.assert_allclose(exported.vectors, session.map.corpus.vectors, atol=1e-5)
    assert exported.columns["text"] == ["a dog", "a cat", "the king", "wine"] and set(exported.columns) == set("xy") | {
        "text", "group"}
    files = [str(folder / "vectors.tsv"), str(folder / "metadata.tsv")]
    _, status, again = studio.map.draw_map("uploaded file", 0, "", files, "PCA", "2-D", "part of speech", Session())
    assert status.startswith("4 points") and again.map.corpus.texts == ["a dog", "a cat", "the king", "wine"]
    _, _, rows = studio.map.search_map("king", 2, again)  # this model's width: the query is embedded among them
    assert rows[0][2] == "the king"
    foreign = tmp_path / "vectors.tsv"  # another model's 3-d vectors, without metadata
    foreign.write_text("1\t0\t0\n0.9\t0.1\t0\n0\t0\t1\n", encoding="utf-8")
    _, _, other = studio.map.draw_map("uploaded file", 0, "", [str(foreign)], "PCA", "2-D", "part of speech", Session())
    _, note, rows = studio.map.search_map("point 1", 2, other)  # placed by its match: the label's own vector
    assert "nearest neighbours of 'point 1'" in note and [r[2] for r in rows] == ["point 1", "point 2"]
    with pytest.raises(ValueError, match="another model"):
        studio.map.search_map("a dog", 2, other)
    foreign.write_text("1\t0\n0\tnan\n", encoding="utf-8")
    with pytest.raises(ValueError, match="vectors.tsv line 2: NaN"):
        studio.map.draw_map("uploaded file", 0, "", [str(foreign)], "PCA", "2-D", "cluster", Session())


def test_map_errors(studio):
    with pytest.raises(ValueError, match="Draw a map first"):
        studio.map.search_map("dog", 3, Session())
    with pytest.raises(ValueError, match="Unknown point set"):
        studio.map.draw_map("nothing", 10, "", None, "PCA", "2-D", "cluster", Session())
    with pytest.raises(ValueError, match="Unknown projection"):
        Projector().project(np.zeros((5, 3)), "tSNE")


def test_candidates_map(studio):
    figure, table = studio.map.candidates_map("an animal", 4, "PCA")
    assert len(table) == 4 and figure.data[0].name == "your description"


def test_candidates_map_leaves_out_the_descriptions_words_as_the_reverse_dictionary_does(studio):
    text = " ".join(TINY_WORDS[:40])  # most of the head's words: unexcluded, some would be candidates
    _, table = studio.map.candidates_map(text, 10, "PCA")
    query = sv.WordQuery(text, 10, exclude_query_words=True)  # the Reverse dictionary tab's default
    assert [row[0] for row in table] == [r.word for r in sv.reverse_dictionary(studio.models.active().engine, query)]
    assert table and not {row[0] for row in table} & set(text.split())


def test_pca_and_projection_cache():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 16)) * np.linspace(5, 0.1, 16)
    coords = pca(x, 3)
    assert coords.shape == (200, 3) and np.var(coords[:, 0]) >= np.var(coords[:, 1]) >= np.var(coords[:, 2])
    projector = Projector()
    first = projector.project(x, "PCA", 2)
    assert projector.project(x, "PCA", 2).note == "cached result"
    assert np.array_equal(first.coords, projector.project(x, "PCA", 2).coords)
    assert pca(x[:2, :1], 2).shape == (2, 2)
    cold = projector.project(x, "UMAP", 2)  # UMAP not warmed up: PCA now, and the note says so
    assert cold.method == "PCA" and "showing PCA meanwhile" in cold.note and "PCA (instant)." in projector.status()
    assert not projector.umap_pending  # nothing to poll for
    projector.expect_warm_up()
    assert projector.umap_pending and "PCA (instant) until it is ready" in projector.status()


@pytest.mark.parametrize("works", [True, False])
def test_umap_warm_up_ends_the_polling_whether_it_works_or_not(works, monkeypatch):
    import app.projection

    def fit(vectors, dims=2, seed=0):
        if not works:
            raise ImportError("no umap here")
        return vectors[:, :dims]
    monkeypatch.setattr(app.projection, "umap_fit", fit)
    projector = Projector()
    projector.expect_warm_up()
    projector.warm_up(sizes=(20,))
    assert not projector.umap_pending and projector.umap_ready == works
    assert ("UMAP is ready" if works else "UMAP is unavailable (ImportError: no umap here)") in projector.status()


def test_a_page_load_shows_the_umap_status_of_that_moment(studio, monkeypatch):
    pytest.importorskip("gradio")
    import app.projection
    from app.ui import build_app

    studio.projector.expect_warm_up()
    demo = build_app(studio)  # built while UMAP waits to warm up: the status it was built with says so
    monkeypatch.setattr(app.projection, "umap_fit", lambda vectors, dims=2, seed=0: vectors[:, :dims])
    studio.projector.warm_up(sizes=(20,))
    status_id = next(i for i, b in demo.blocks.items() if getattr(b, "elem_id", None) == "umap-status")
    on_load = [f for f in demo.fns.values() if ("load" in [name for _, name in f.targets])
               and status_id in [o._id for o in f.outputs]]
    assert len(on_load) == 1
    status, timer = on_load[0].fn()
    assert "UMAP is ready" in status and timer.active is False  # at once, not after the first 3 s poll


# ---- jobs --------------------------------------------------------------------------------------------

def wait_for(jobs: JobManager, job_id: str, timeout: float = 900.0) -> Job:  # a hang guard: a job process imports torch
    deadline = time.time() + timeout
    while jobs.get(job_id).status in ("queued", "running"):
        assert time.time() < deadline, f"job did not finish; last progress: {jobs.get(job_id).progress}"
        time.sleep(0.05)
    return jobs.get(job_id)


def test_jobs_run_in_order_and_cancel():
    jobs = JobManager()
    release = threading.Event()  # holds the first job
    first = jobs.submit(lambda job: release.wait(10) and "first", "holds the worker")
    second = jobs.submit(lambda job: "second", "queued")
    third = jobs.submit(lambda job: 1 / 0, "fails")
    assert jobs.queue_position(second.id) == 1 and jobs.queue_position(third.id) == 2
    jobs.cancel(second.id)
    release.set()
    assert wait_for(jobs, first.id).result == "first"
    assert wait_for(jobs, third.id).status == FAILED and "ZeroDivisionError" in third.error
    assert jobs.get(second.id).status == CANCELLED
    with pytest.raises(ValueError, match="No job"):
        jobs.get("nope")


def test_job_view_while_queued_and_running(studio):
    release = threading.Event()
    running = studio.jobs.submit(lambda job: job.report(stage="training", step=3, total=10, loss=1.5,
                                                        dev_mrr=0.25) or release.wait(10), "runs")
    queued = studio.jobs.submit(lambda job: None, "waits")
    while studio.jobs.get(running.id).status != "running":
        time.sleep(0.01)
    time.sleep(0.05)
    assert "Queued behind 1 job" in studio.finetune.job_view(queued.id)[0]
    html = studio.finetune.job_view(running.id)[0]
    assert "step 3/10, loss 1.5000, dev MRR 0.2500" in html and "width:30.0%" in html
    assert studio.finetune.job_active(running.id) and studio.finetune.job_view("") == ("", None, [], [])
    release.set()
    assert wait_for(studio.jobs, queued.id).status == DONE and not studio.finetune.job_active(running.id)
    assert "starting..." in views.job_progress_html({})  # no stage yet: a pulsing bar, no step count


# ---- fine-tune ---------------------------------------------------------------------------------------

def test_a_stage_without_a_step_count_pulses_instead_of_showing_a_full_bar():
    after = {"stage": "scoring the held-out words after training", "step": 40, "total": 40, "loss": 0.5}
    html = views.job_progress_html(after)  # the training's step count is still in the job's progress
    assert "ds-progress-pulse" in html and "width:100.0%" not in html
    assert "scoring the held-out words after training" in html and "step" not in html
    training = views.job_progress_html({"stage": "training", "step": 10, "total": 40})
    assert "width:25.0%" in training and "ds-progress-pulse" not in training
    assert "ds-progress-pulse" in views.job_progress_html({"stage": "loading a copy of the model", "total": 0})


def test_validate_upload_reports_and_splits(engine, dictionary_file, tmp_path):
    upload = validate_upload(engine, dictionary_file)
    assert len(upload.entries) == len(DEFINITIONS) + 1  # zzzz too: every word is an answer
    assert f"{len(DEFINITIONS) + 1} words, all of them answers" in upload.report
    assert "train the encoder, every word of them" in upload.report and "1 of several pieces" in upload.report
    assert max(len(line) for line in upload.report.splitlines()) < 120
    assert upload.split.train and upload.split.dev and upload.split.test
    small = tmp_path / "small.csv"
    small.write_text("word,definition\ndog,an animal\ncat,another animal\n", encoding="utf-8")
    with pytest.raises(ValueError, match="at least 10"):
        validate_upload(engine, small)
    with pytest.raises(ValueError, match="missing column"):
        validate_upload(engine, _write(tmp_path, "x.tsv", "a\tb\n1\t2\n"))
    invented = "".join(f"zq{chr(97 + i)}x{chr(97 + j)},a thing number {i} {j}\n" for i in range(4) for j in range(4))
    assert validate_upload(engine, _write(tmp_path, "glossary.csv", "word,definition\n" + invented)).split.train


def _write(folder: Path, name: str, text: str) -> Path:
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


@pytest.mark.parametrize("native, expected", [(True, "bfloat16"), (False, "float32")])
def test_finetune_trains_in_bfloat16_only_where_the_cpu_has_it(monkeypatch, native, expected):
    import core.runtime.hardware

    monkeypatch.setattr(core.runtime.hardware, "native_bfloat16", lambda: native)
    assert FinetuneSettings().train_config(100).precision == expected
    assert FinetuneSettings(precision="float32").train_config(100).precision == "float32"


def test_finetune_job_compares_saves_and_exports(engine, tiny_mlm_dir, dictionary_file, tmp_path):
    upload = validate_upload(engine, dictionary_file)
    job = Job("j", "test", lambda j: None)
    settings = FinetuneSettings(lr=1e-3, batch_size=4, max_steps=6, evaluations=3)
    result = run_finetune(job, lambda: Engine.from_base(str(tiny_mlm_dir)), upload, settings, "tiny",
                          tmp_path / "staged")
    assert job.progress["step"] == 6 and len(job.progress["history"]) == 6
    assert [row[0] for row in comparison_rows(result)] == ["MRR", "top-1", "top-3", "top-10"]
    assert result.examples and {"word", "definition", "before", "after"} <= set(result.examples[0])
    path = save_finetuned(result, "mine-v1", tmp_path)
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["training"]["data"] == "mine.tsv" and "user_test" in manifest["metrics"]
    with pytest.raises(ValueError, match="already exists"):
        save_finetuned(result, "mine-v1", tmp_path)
    with pytest.raises(ValueError, match="invalid checkpoint name"):
        save_finetuned(result, "../evil", tmp_path)
    trained = Engine.load(path)
    assert {e.word for e in trained.words.user_dictionary} == set(DEFINITIONS) | {"zzzz"}  # answers in the app, zzzz too
    assert result.before["n"] == result.after["n"] == len(upload.split.test)  # every held-out word ranked
    folder = export_sentence_transformers(trained, tmp_path / "st", "mine-v1")
    assert (folder / "modules.json").is_file() and "sentence-transformers" in (folder / "README.md").read_text()
    with zipfile.ZipFile(zip_folder(path, tmp_path / "zips")) as archive:
        assert "mine-v1/manifest.json" in archive.namelist()
    st = pytest.importorskip("sentence_transformers")
    vectors = st.SentenceTransformer(str(folder), device="cpu").encode(["a dog"])
    assert np.allclose(vectors, trained.encode(["a dog"]), atol=1e-4)


def test_finetune_through_the_studio(studio, dictionary_file):
    session = Session()
    report, session = studio.finetune.validate_upload(str(dictionary_file), 0, session)
    assert "Ready" in report
    job_id = studio.finetune.start_finetune(session, 1, 1e-3, 4, 0, 4, 2, 0)
    assert wait_for(studio.jobs, job_id).status == DONE, studio.jobs.get(job_id).error
    progress, figure, comparison, examples = studio.finetune.job_view(job_id)
    assert "Done in" in progress and comparison and examples and figure is not None
    stages = studio.jobs.get(job_id).result.training["stage_seconds"]  # where the time went, shown above
    assert "training" in stages and all(seconds >= 0 for seconds in stages.values())
    assert not any("decoder" in stage for stage in stages)  # measuring the decoder is asked for, not default
    with pytest.raises(ValueError, match="Save the model"):
        studio.finetune.activate_finetuned(job_id)
    assert "Saved" in studio.finetune.save_finetuned(job_id, "from-studio")
    assert "from-studio" in studio.finetune.activate_finetuned(job_id)
    assert [value for _, value in studio.model_choices()[0]] == ["from-studio", BASE_LABEL, "tiny"]
    checkpoint_zip, st_zip = studio.finetune.download_finetuned(job_id)
    assert Path(checkpoint_zip).is_file() and Path(st_zip).is_file()


def test_finetune_can_be_cancelled(studio, dictionary_file):
    _, session = studio.finetune.validate_upload(str(dictionary_file), 0, Session())
    job_id = studio.finetune.start_finetune(session, 1, 1e-3, 4, 0, 100_000, 2, 0)
    while studio.jobs.get(job_id).progress.get("stage") != "training":
        time.sleep(0.01)
    assert "Cancellation requested" in studio.finetune.cancel_job(job_id)
    assert wait_for(studio.jobs, job_id).status == CANCELLED
    assert "Job cancelled: cancelled at step" in studio.finetune.job_view(job_id)[0]


def test_a_session_runs_one_job_at_a_time(studio, dictionary_file):
    _, session = studio.finetune.validate_upload(str(dictionary_file), 0, Session())
    job_id = studio.finetune.start_finetune(session, 1, 1e-3, 4, 0, 100_000, 2, 0)
    with pytest.raises(ValueError, match=f"Your fine-tuning job {job_id} is still (queued|running)"):
        studio.finetune.start_finetune(session, 1, 1e-3, 4, 0, 4, 2, 0)  # a second Start click
    assert [job.id for job in studio.jobs.unfinished()] == [job_id]
    studio.finetune.cancel_job(job_id)
    wait_for(studio.jobs, job_id)
    second = studio.finetune.start_finetune(session, 1, 1e-3, 4, 0, 4, 2, 0)  # once it has ended, a new one starts
    assert second != job_id and wait_for(studio.jobs, second).status == DONE


def test_cancelling_shows_in_the_jobs_progress_until_it_ends(studio):
    release = threading.Event()

    def stops_when_released(job):  # as a training process does, at its next step
        release.wait(10)
        raise JobCancelled("cancelled at step 1 of 9")
    job = studio.jobs.submit(stops_when_released, "ignores cancellation until released")
    while studio.jobs.get(job.id).status != "running":
        time.sleep(0.01)
    assert "Cancellation requested" in studio.finetune.cancel_job(job.id)
    assert "Cancelling" in studio.finetune.job_view(job.id)[0]  # what the polled progress shows meanwhile
    release.set()
    wait_for(studio.jobs, job.id)
    assert "Cancelling" not in studio.finetune.job_view(job.id)[0]
    assert f"already {studio.jobs.get(job.id).status}: nothing to cancel" in studio.finetune.cancel_job(job.id)


def test_finetune_rejects_bad_settings_and_missing_upload(studio, dictionary_file):
    with pytest.raises(ValueError, match="validate a dictionary"):
        studio.finetune.start_finetune(Session(), 1, 1e-3, 4, 0, 4, 2, 0)
    _, session = studio.finetune.validate_upload(str(dictionary_file), 0, Session())
    with pytest.raises(ValueError, match="Learning rate must be a number above 0 and at most 0.01"):
        studio.finetune.start_finetune(session, 1, -1, 4, 0, 4, 2, 0)
    report, session = studio.finetune.validate_upload(None, 0, session)
    assert session.upload is None and "Upload" in report


# ---- evaluate and about ------------------------------------------------------------------------------

def test_evaluate_words_and_sts(studio, monkeypatch):
    monkeypatch.setenv("DEFSENT_EVALUATION_DATA", str(FIXTURES / "senteval"))  # an operator-allowed folder
    rows = studio.evaluate.evaluate_words(30, True)
    assert len(rows) == 1 and rows[0][1] <= 30  # a base: no "before" row
    markdown = studio.evaluate.evaluate_sts(str(FIXTURES / "senteval"), ["STS-B", "SICK-R"])
    assert "STS-B" in markdown and "DefSent-BERT-base" in markdown
    # one subset each: pooled and averaged agree, so one row of ours (issue 27: no "(all)" and "(mean)" twins)
    assert "**tiny** |" in markdown and "(mean)" not in markdown and "(all)" not in markdown
    assert "**tiny** (mean)" in studio.evaluate.evaluate_sts(str(FIXTURES / "senteval"), ["STS12", "STS-B"])
    with pytest.raises(ValueError, match="No SentEval data folder"):
        studio.evaluate.evaluate_sts("/nonexistent", ["STS-B"])
    with pytest.raises(ValueError, match="Choose datasets"):
        sts_markdown(studio.models.active().engine, "m", str(FIXTURES / "senteval"), ["STS99"])
    assert word_prediction_rows({}, 5) == []


def test_dataset_names_and_data_dir_match_core():
    from app import evaluation
    from core.evaluation.runner import DEFAULT_DATA_DIR
    from core.evaluation.sts import SINGLE_FILE_DATASETS, STS_YEARS

    assert evaluation.STS_DATASETS == (*STS_YEARS, *SINGLE_FILE_DATASETS)
    assert evaluation.DEFAULT_DATA_DIR == DEFAULT_DATA_DIR


def test_recorded_metrics_come_from_the_manifest(studio, monkeypatch):
    assert "records no word-prediction metrics" in studio.evaluate.recorded_metrics()
    metrics = {"test": {"n": 5, "mrr": 0.5, "top1": 0.4, "top3": 0.6, "top10": 0.8}}
    monkeypatch.setitem(studio.models.active().engine.manifest, "metrics", metrics)
    assert "| tiny (test) | 5 | 0.5000 |" in studio.evaluate.recorded_metrics()


def test_about_shows_manifest(studio):
    text, manifest = studio.about()
    assert "tiny" in text and "none trained" in text and json.loads(manifest)["pooling"] == "mean"


def test_model_loads_in_the_background(tiny_mlm_dir, tmp_path):
    studio = start_studio(ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path, warm_up_umap=False, delay=0,
                          open_vocabulary=False)
    assert studio.models.active(timeout=60).spec.name == "tiny"
    broken = Models(tmp_path)
    broken.load_in_background(ModelSpec("gone", tmp_path / "missing")).join(60)
    with pytest.raises(ModelUnavailable, match="Loading the model 'gone' failed"):
        broken.active()
    assert "failed" in broken.status()


def test_switch_model_and_unknown_name(studio):
    # "tiny" is served from outside checkpoints/; like the base, it is a model before DefSent training
    labels = [(f"{BASE_LABEL}: {BASE_WARNING_SHORT}", BASE_LABEL), (f"tiny: {BASE_WARNING_SHORT}", "tiny")]
    assert studio.model_choices() == (labels, "tiny")
    assert "tiny" in studio.switch_model("tiny")
    with pytest.raises(ValueError, match="No model called"):
        studio.switch_model("nope")


def test_choosing_the_untrained_base_warns(studio, monkeypatch):
    status = studio.switch_model("tiny")  # the tiny test model is an untrained base
    assert "Active model: **tiny**" in status and "untrained base" in status and "word predictions are noise" in status
    monkeypatch.setattr(type(studio.models.active()), "is_base", property(lambda self: False))  # a checkpoint
    assert "untrained" not in studio.model_status()


# ---- Gradio wiring -----------------------------------------------------------------------------------

def test_ui_builds_and_errors_are_readable(studio):
    gr = pytest.importorskip("gradio")
    from app.ui import build_app
    from app.wiring import handler

    demo = build_app(studio)
    assert {"reverse_dictionary", "draw_map", "start_finetune"} <= {d.api_name for d in demo.fns.values()}
    with pytest.raises(gr.Error, match="enter a description"):
        asyncio.run(handler(studio.reverse.reverse_dictionary)(""))
    with pytest.raises(gr.Error, match="Something went wrong \\(ZeroDivisionError\\)"):
        asyncio.run(handler(lambda: 1 / 0)())


def test_a_checkpoint_saved_after_the_page_loaded_can_be_chosen(studio, engine):
    """The model list is listed again when it is opened, and a name it did not list yet is accepted."""
    pytest.importorskip("gradio")
    from app.ui import build_app

    demo = build_app(studio)
    chooser = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "model-choice")
    engine.save(studio.models.checkpoints / "trained-later", name="trained-later")
    assert chooser.preprocess("trained-later") == "trained-later"  # gradio refuses a value not among the choices
    focus = next(f for f in demo.fns.values() if (chooser._id, "focus") in f.targets)
    assert "trained-later" in [value for _, value in focus.fn(Session()).choices]
    status, _ = studio.choose_model("trained-later", Session())
    assert "trained-later" in status


def _events(demo, event: str, **attrs) -> list[tuple]:
    """(function name, input ids, output ids) of each `event` listener of the blocks matching `attrs`."""
    ids = {i for i, b in demo.blocks.items() if all(getattr(b, k, None) == v for k, v in attrs.items())}
    assert ids, attrs
    def targets(f):  # a .then() step runs on its predecessor's triggers
        return targets(demo.fns[f.trigger_after]) if f.trigger_after is not None else f.targets
    return [(f.name, tuple(b._id for b in f.inputs), tuple(b._id for b in f.outputs)) for f in demo.fns.values()
            if any(target in ids and name == event for target, name in targets(f))]


@pytest.mark.parametrize("label, button", [("Describe a word", "Find words"), ("Text B", "Compare"),
                                           ("Query", "Search"), ("Search the map", "Highlight"),
                                           ("Description", "Draw"), ("Checkpoint name", "Save")])
def test_enter_in_a_one_line_box_does_what_its_button_does(studio, label, button):
    pytest.importorskip("gradio")
    from app.ui import build_app

    demo = build_app(studio)
    box = next(b for b in demo.blocks.values() if getattr(b, "label", None) == label)
    assert box.lines == 1  # the browser submits on Enter only in a one-line box (else Shift+Enter)
    clicked = _events(demo, "click", value=button)
    assert clicked and set(clicked) & set(_events(demo, "submit", label=label)), (clicked, label)


@pytest.mark.parametrize("api_name", ["reverse_dictionary", "similarity", "heatmap", "search", "analogy",
                                      "interpolate", "draw_map", "search_map", "candidates_map", "evaluate_words",
                                      "evaluate_sts", "evaluate_senteval"])
def test_a_request_first_empties_its_results(studio, api_name):
    """A user error is a toast that changes no output: emptied first, no earlier result stays shown."""
    gr = pytest.importorskip("gradio")
    from app.ui import build_app

    demo = build_app(studio)
    event = next(f for f in demo.fns.values() if f.api_name == api_name)
    assert event.trigger_after is not None, api_name
    clear = demo.fns[event.trigger_after]
    shown = [o for o in event.outputs if not isinstance(o, gr.State)]
    assert shown and clear.fn() == {o: None for o in shown} and not clear.queue


def test_app_binds_localhost_by_default(monkeypatch):
    monkeypatch.delenv("GRADIO_SERVER_NAME", raising=False)
    import importlib.util
    spec = importlib.util.spec_from_file_location("app_main", Path(__file__).parents[1] / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = module.parse_args([])
    assert (args.host, args.port, args.share) == ("127.0.0.1", 7860, False)


def test_download_folders_are_removed_after_their_lifetime(engine, tiny_mlm_dir, tmp_path):
    import os

    from app.export import DOWNLOAD_PREFIX, download_files

    checkpoint = engine.save(tmp_path / "ckpt" / "mine")
    old = tmp_path / "downloads" / f"{DOWNLOAD_PREFIX}old"
    old.mkdir(parents=True)
    os.utime(old, (0, 0))  # last changed in 1970
    zips = download_files(engine, checkpoint, tmp_path / "downloads", keep_seconds=3600)
    assert all(z.is_file() and z.suffix == ".zip" for z in zips)
    assert not old.exists()
    assert [p.name for p in zips[0].parent.iterdir()] and not any(p.is_dir() for p in zips[0].parent.iterdir())
    download_files(engine, checkpoint, tmp_path / "downloads", keep_seconds=0)
    assert not zips[0].exists()  # the first download's folder was older than 0 s


def test_uploads_are_deleted_once_read_but_only_inside_the_upload_folder(tmp_path):
    from app.services import discard_upload

    uploads = tmp_path / "gradio"
    upload = uploads / "3f2a" / "mine.tsv"
    upload.parent.mkdir(parents=True)
    upload.write_text("word\tdefinition\n")
    elsewhere = tmp_path / "mine.tsv"
    elsewhere.write_text("word\tdefinition\n")
    assert discard_upload(elsewhere, uploads) is False and elsewhere.is_file()
    assert discard_upload(uploads / ".." / "mine.tsv", uploads) is False and elsewhere.is_file()
    assert discard_upload(upload, uploads) is True
    assert not upload.exists() and not upload.parent.exists() and uploads.is_dir()
    assert discard_upload(upload, uploads) is False  # already gone: nothing to do


def test_validating_an_upload_returns_the_freed_heap_valid_or_not(studio, dictionary_file, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr("app.handlers.finetune.return_freed_memory", lambda: calls.append(1))
    studio.finetune.validate_upload(str(dictionary_file), 0, Session())
    bad = tmp_path / "bad.tsv"
    bad.write_text("no header here\n")
    studio.finetune.validate_upload(str(bad), 0, Session())
    assert len(calls) == 2


def test_validating_an_upload_deletes_it(studio, dictionary_file, tmp_path, monkeypatch):
    import shutil

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    upload = tmp_path / "gradio" / "ab12" / dictionary_file.name
    upload.parent.mkdir(parents=True)
    shutil.copy(dictionary_file, upload)
    report, session = studio.finetune.validate_upload(str(upload), 0, Session())
    assert "Ready" in report and session.upload is not None
    assert not upload.exists() and dictionary_file.is_file()


def test_the_page_shows_the_open_vocabulary_building_with_its_progress(studio, monkeypatch):
    from app.handlers import prepare_model
    import core.words.scorer

    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: [Entry(w, d) for w, d in DEFINITIONS.items()])
    active = studio.models.active()
    seen = []
    real_encode = active.engine.encoder.encode

    def encode_and_look(texts, **kwargs):  # what a user sees while the vocabulary is embedded
        if kwargs.get("progress") is not None:  # a batch of the vocabulary's, not the query's own
            seen.append(studio.reverse.reverse_dictionary("a small animal")[0])
        return real_encode(texts, **kwargs)

    monkeypatch.setattr(active.engine.encoder, "encode", encode_and_look)
    prepare_model(active)
    shown = [page for page in seen if "ds-progress-fill" in page]
    assert shown and all("once per model; about" in page for page in shown)
    assert "ds-progress" not in studio.reverse.reverse_dictionary("a small animal")[0]  # ready: no notice, no bar


def test_an_activated_fine_tune_answers_with_its_parents_vectors_then_its_own(tiny_mlm_dir, tmp_path, monkeypatch):
    import threading

    import torch

    import core.words.scorer
    from app.handlers import prepare_model
    from app.models import ActiveModel
    from app.settings import cache_dir

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: [Entry(w, d) for w, d in DEFINITIONS.items()])
    parent = Engine.from_base(str(tiny_mlm_dir))
    parent.enable_open_vocabulary(cache_dir=cache_dir("open-vocab"))  # as the app cached the active model's
    fingerprint = parent.fingerprint
    with torch.no_grad():  # "fine-tuning"
        next(parent.encoder.parameters()).add_(0.01)
    parent.words.user_dictionary = [Entry("zib zab", "a thing nobody has named before")]
    path = parent.save(tmp_path / "checkpoints" / "tuned",
                       training={"open_vocab_parent": {"fingerprint": fingerprint, "user_entries": 0}})
    active = ActiveModel(ModelSpec("tuned", path), Engine.load(path, open_vocabulary=False, decoder=None))
    prepare_model(active)
    assert active.engine.words.open_vocab is not None  # answering: the parent's vectors and its new word
    assert any(f.stem.endswith("-reused") for f in cache_dir("open-vocab").iterdir())
    for thread in threading.enumerate():
        if thread.name == "own-vectors":
            thread.join(timeout=60)
    assert not active.engine.words.reused  # then its own, embedded in the background
    assert "zib zab" in active.engine.words.open_vocab.candidates.words


def test_a_fresh_clone_answers_with_the_compact_vectors_then_embeds_exact_ones(tiny_mlm_dir, tmp_path, monkeypatch):
    import threading

    import app.handlers.studio
    import core.words.scorer
    from app.handlers import prepare_model
    from app.models import ActiveModel

    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: [Entry(w, d) for w, d in DEFINITIONS.items()])
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "build-cache"))
    path = Engine.from_base(str(tiny_mlm_dir)).save(tmp_path / "checkpoints" / "shipped")
    Engine.load(path, open_vocabulary=False, decoder=None).save_compact_open_vocab(subspaces=4)  # as shipped
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "fresh-cache"))  # another machine: nothing cached
    active = ActiveModel(ModelSpec("shipped", path), Engine.load(path, open_vocabulary=False, decoder=None))
    gate, real_embedding = threading.Event(), app.handlers.studio.embed_own_vectors
    monkeypatch.setattr(app.handlers.studio, "embed_own_vectors", lambda model: gate.wait(60) and real_embedding(model))
    prepare_model(active)
    assert active.engine.words.compact
    assert len(active.engine.words.open_vocab.candidates.words) == len(DEFINITIONS)  # every word, at once
    gate.set()
    for thread in threading.enumerate():
        if thread.name == "own-vectors":
            thread.join(timeout=60)
    assert not active.engine.words.compact  # then its own exact vectors, embedded in the background
