"""The app's handlers and helpers against a tiny random engine (no browser, no UMAP): the Reverse
dictionary, Similarity and Analogy tabs, Evaluate and About, and the model choice. The Map tab:
tests/test_app_map.py; jobs and the Fine-tune tab: tests/test_app_finetune.py; the Gradio wiring:
tests/test_app_wiring.py. Their fixtures (`engine`, `studio`, `dictionary_file`, `cache_in_tmp`) are
in tests/conftest.py."""
from __future__ import annotations

import json
import re
import threading
import time
from types import SimpleNamespace
from pathlib import Path

import numpy as np
import pytest

from app.shared import services as sv
from app.views import render
from app.shared.evaluation import sts_markdown, word_prediction_rows
from app.handlers import BASE_WARNING_SHORT, Session, Studio, start_studio
from app.shared.jobs import JobManager, whole_machine_job
from app.shared.models import BASE_LABEL, Models, ModelSpec, ModelUnavailable, available_specs
from app.views.projection import Projector
from core import Engine
from core.readout import find_decoder_dir
from core.words import EmbeddingProgress, VocabularyState
from tests.conftest import TINY_WORDS

FIXTURES = Path(__file__).parent / "fixtures"
pytestmark = pytest.mark.usefixtures("cache_in_tmp")  # the cache in tmp_path: tests/conftest.py


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
    assert len(nouns) == 5 and all(any(e.pos == "n" for e in sv.wordnet_index()[r.word]) for r in nouns)


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
    engine.vocabulary.enable(dictionary=lemmas)
    rows = sv.reverse_dictionary(engine, sv.WordQuery("a frozen sweet food", k=4))
    assert {r.word for r in rows} == {"ice cream", "red tape", "dog", "give up"}
    assert len(rows) == 4 and all(r.definitions and r.definitions[0].word == r.word for r in rows)
    ready, _ = studio.reverse.reverse_dictionary("a frozen sweet food", 5)
    assert "full vocabulary" not in ready and "ice cream" in ready


def test_a_words_senses_are_shown_best_match_first(tiny_mlm_dir):
    """The shipped file lists "dog" the animal first; a description of another sense shows that one first,
    with the open vocabulary's stored definition vectors as with none (issue 54, item 5)."""
    from core.lexicon.dictionary import load_wordnet_lemmas
    engine = Engine.from_base(str(tiny_mlm_dir))
    query = sv.WordQuery("informal term for a man", k=1, pattern="dog")
    assert sv.definitions_of("dog")[0].definition.startswith("a member of the genus Canis")
    for open_vocabulary in (False, True):
        if open_vocabulary:
            engine.vocabulary.enable(dictionary=[e for e in load_wordnet_lemmas() if e.word in ("dog", "cat")])
        [row] = sv.reverse_dictionary(engine, query)
        assert row.word == "dog" and row.definitions[0].definition == "informal term for a man"
        assert len(row.definitions) == 3 and all(e.word == "dog" for e in row.definitions)
    [row] = sv.reverse_dictionary(engine, sv.WordQuery("informal term for a man", k=1, pattern="dog", pos="verb"))
    assert row.definitions[0].pos == "v"  # the part of speech asked for: its senses first (a new user's walk)


def test_the_reverse_dictionary_shows_scores_relative_to_the_first_answer(studio):
    """Probabilities over 147k words read "0.02 %" for a good answer: the page shows 100 for the first
    answer and each other's share of it, as numbers and bar widths (issue 54, item 5)."""
    rows = [sv.WordRow("chief", 0.0005, []), sv.WordRow("head", 0.0004, []), sv.WordRow("boss", 0.0001, [])]
    page = render.words_html(rows, "model")
    assert [int(s) for s in re.findall(r"class='ds-p'[^>]*>(\d+)<", page)] == [100, 80, 20]
    assert re.findall(r"width:(\d+)%", page) == ["100", "80", "20"] and "%</span>" not in page
    _, words, _ = studio.analogy.analogy("a king", "a queen", "a boy", "b - a + c")
    assert words[0][1] == 100 and all(0 <= score <= 100 for _, score in words)
    rows, _ = studio.analogy.interpolation("a dog", "a king", 3)
    assert len(rows) == 3 and all("%" not in row[5] and len(row[5].split(", ")) == 3 for row in rows)


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
    rows, notice, _ = studio.similarity.search("an animal that barks", sv.SAMPLE, None, 3, Session())
    assert len(rows) == 3 and rows[0][0] == 1 and rows[0][1] >= rows[1][1] and notice == ""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a dog barks\nthe king rules\nbread is food\n", encoding="utf-8")
    session = Session()
    rows, _, session = studio.similarity.search("a dog barks", "uploaded file", str(corpus), 2, session)
    assert rows[0][2] == "a dog barks" and rows[0][1] == pytest.approx(1.0, abs=1e-4)
    cached = session.corpus
    studio.similarity.search("bread", "uploaded file", str(corpus), 2, session)
    assert session.corpus is cached  # embedded once per file and model
    with pytest.raises(ValueError, match="Upload a text file"):
        studio.similarity.search("x", "uploaded file", None, 2, Session())


def test_the_analogy_interpolation_and_map_search_look_among_the_file_a_user_uploaded(studio, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a dog barks\nthe king rules\nbread is food\n", encoding="utf-8")
    session = Session()
    with pytest.raises(ValueError, match="Upload a text file in the Similarity tab"):  # none yet: a clear message
        studio.analogy.analogy("a king", "a queen", "a boy", "b - a + c", reference=sv.UPLOADED_FILE, session=session)
    studio.similarity.search("a dog", sv.UPLOADED_FILE, str(corpus), 1, session)  # uploaded and searched there
    _, _, nearest = studio.analogy.analogy("a king", "a queen", "a boy", "b - a + c", reference=sv.UPLOADED_FILE,
                                           session=session)
    assert {row[2] for row in nearest} == {"a dog barks", "the king rules", "bread is food"}
    rows, _ = studio.analogy.interpolation("a dog", "a king", 3, reference=sv.UPLOADED_FILE, session=session)
    assert len(rows) == 3
    with pytest.raises(ValueError, match="Upload a text file"):  # another user's session has none
        studio.analogy.interpolation("a dog", "a king", 3, reference=sv.UPLOADED_FILE, session=Session())


def test_search_analogy_and_interpolation_search_the_chosen_collection(tiny_mlm_dir, tmp_path):
    from core.lexicon.dictionary import Entry

    engine = Engine.from_base(str(tiny_mlm_dir))
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path), Projector(),
                    JobManager())
    rows, _, _ = studio.similarity.search("an animal that barks", sv.LARGEST_READY, None, 3, Session())
    assert len(rows) == 3 and all(":" in text for *_, text in rows)  # no open vocabulary yet: the sample
    with pytest.raises(ValueError, match="needs the full vocabulary"):
        studio.similarity.search("an animal", sv.EVERY_WORD, None, 3, Session())
    engine.vocabulary.enable(dictionary=[
        Entry("dog", "a domestic animal that barks", "n"), Entry("king", "a man who rules a country", "n"),
        Entry("monarch", "a man who rules a country", "n"), Entry("ice cream", "a frozen sweet food", "n")])
    every_definition = ["dog: a domestic animal that barks", "ice cream: a frozen sweet food",
                        "king, monarch: a man who rules a country"]
    rows, notice, _ = studio.similarity.search("an animal that barks", sv.LARGEST_READY, None, 5, Session())
    assert sorted(text for *_, text in rows) == every_definition and notice == ""
    engine.vocabulary.state = VocabularyState.COMPACT  # a fresh clone's: still every definition, not the sample (issue 62)
    rows, notice, _ = studio.similarity.search("an animal that barks", sv.LARGEST_READY, None, 5, Session())
    assert sorted(text for *_, text in rows) == every_definition
    assert "compressed copy" in notice  # their cosines shift once the exact vectors are in: the user is told
    engine.vocabulary.state = VocabularyState.EXACT
    rows, notice, _ = studio.similarity.search("an animal that barks", sv.EVERY_WORD, None, 5, Session())
    assert notice == ""
    assert sorted(text for *_, text in rows) == ["dog", "ice cream", "king", "monarch"]
    _, _, nearest = studio.analogy.analogy("a king", "a queen", "a boy", "b - a + c", reference=sv.EVERY_WORD)
    assert {row[2] for row in nearest} == {"dog", "ice cream", "king", "monarch"}
    rows, figure = studio.analogy.interpolation("a dog", "a king", 3, reference=sv.EVERY_DEFINITION)
    assert len(rows) == 3 and {row[6].split(":")[0] for row in rows} <= {"dog", "ice cream", "king, monarch"}
    with pytest.raises(ValueError, match="Unknown reference texts"):
        studio.similarity.search("x", "everything", None, 3, Session())


def test_a_quick_build_does_not_wait_behind_a_slow_one_of_another_key(engine):
    """The map's layout (a file read) once waited 12 s behind the untrained twin's loading."""
    from app.shared.models import ActiveModel
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
    assert "No Vec2Sent decoder" in studio.analogy.decode("Stocks fall sharply as inflation fears return")


def test_analogy_asks_only_for_the_sentences_its_expression_uses(studio):
    decoded, words, _ = studio.analogy.analogy("Stocks fall sharply", "", "", "a")  # decodes a alone
    assert "No Vec2Sent decoder" in decoded and len(words) == 10
    with pytest.raises(ValueError, match="Please enter sentence c"):
        studio.analogy.analogy("a king", "a queen", "", "b - a + c")
    with pytest.raises(ValueError, match="Please enter the From sentence"):
        studio.analogy.interpolation("", "a king", 3)
    with pytest.raises(ValueError, match="Please enter a sentence to decode"):
        studio.analogy.decode("  ")
    assert find_decoder_dir(studio.models.active().engine.fingerprint, studio.models.checkpoints) is None


def test_a_too_long_interpolation_end_is_named_as_its_box_is(studio):
    """The From and To boxes are named with their capital: a long end was "The from sentence is 1,199 characters
    long" (str.capitalize lowered the rest of the name; a newcomer's walk)."""
    with pytest.raises(ValueError, match="^The From sentence is 1,001 characters long"):
        studio.analogy.interpolation("a" * 1001, "a king", 3)
    with pytest.raises(ValueError, match="^The To sentence is 1,001 characters long"):
        studio.analogy.interpolation("a king", "a" * 1001, 3)


def test_interpolation_table_and_path(studio):
    rows, figure = studio.analogy.interpolation("a dog", "a king", 5)
    assert [r[0] for r in rows] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert rows[0][1] == "(no decoder)" and rows[0][2:5] == [None, None, None]  # no sentence, no cosines of one
    to_from, to_to = figure.data  # without a decoder the chart shows the points' cosines to the ends
    assert to_from.y[0] == pytest.approx(1.0, abs=1e-4) and to_to.y[-1] == pytest.approx(1.0, abs=1e-4)
    assert list(to_from.x) == [r[0] for r in rows] and all(np.diff(to_from.y) < 0)
    with pytest.raises(ValueError, match="between 2 and 50"):
        studio.analogy.interpolation("a", "b", 1)


def test_the_app_decodes_with_its_wider_beam(studio, monkeypatch):
    from core.readout import Lazy
    from core.vec2sent import APP_BEAM
    from core.vec2sent.refine import CorrectSettings

    engine, asked = studio.models.active().engine, []
    decoder = SimpleNamespace(cased=lambda text: text)  # a decoder is present: analogy and interpolation decode
    monkeypatch.setattr(engine.reader, "_decoder", Lazy(lambda: decoder))
    monkeypatch.setattr(engine.reader, "_hypotheses", lambda vectors, settings, encode:
                        asked.append(settings) or [["x"]] * len(vectors))
    monkeypatch.setattr(engine.reader, "_fluency", Lazy(lambda: None))
    decoded, _, _ = studio.analogy.analogy("a king", "a queen", "a boy", "b - a + c")
    rows, _ = studio.analogy.interpolation("a dog", "a king", 3)
    read_back = studio.analogy.decode("a boy")
    fit = float(engine.similarity(engine.encode(["a queen"]) - engine.encode(["a king"]) + engine.encode(["a boy"]),
                                  ["x"])[0, 0])
    assert decoded == f"**Decoded:** x  \nfit {fit:.3f}: the cosine" + decoded.split(": the cosine")[1]
    assert read_back.startswith("**Decoded:** x  \nfit ") and [rows[0][1], rows[-1][1]] == ["a dog", "a king"]
    assert rows[1][1] in {"x", "a dog", "a king"}  # the middle point's decoding competes with the ends
    # corrected once as the API does; corrected seven times by steps of 0.5 only when asked
    studio.analogy.analogy("a king", "a queen", "a boy", "b - a + c", refine=True)
    studio.analogy.interpolation("a dog", "a king", 3, refine=True)
    studio.analogy.decode("a boy", refine=True)
    once, exact = (APP_BEAM, None, CorrectSettings()), (APP_BEAM, None, CorrectSettings(rounds=7, step=0.5))
    assert [(s.beam, s.refine, s.correct) for s in asked] == [once] * 3 + [exact] * 3 and APP_BEAM > 5
    # analogy, interpolation, Decode box: the paths' language model helps choose, the Decode box's sentence is decoded
    assert [s.fluency is not None for s in asked] == [True, True, False] * 2


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
    from app.shared import evaluation
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


def test_about_summarises_the_manifest_and_folds_its_json(studio, monkeypatch):
    """The About tab reads as a list of what the checkpoint is; the whole manifest (4,496 px of JSON for the
    shipped model) is folded away (issue 54, item 9)."""
    gr = pytest.importorskip("gradio")
    from app.ui import build_app
    metrics = {"test": {"n": 4490, "mrr": 0.2178, "top1": 0.135, "top3": 0.25, "top10": 0.38}}
    monkeypatch.setitem(studio.models.active().engine.manifest, "metrics", metrics)
    text, _ = studio.about()
    assert "- **Pooling:** mean" in text and "- **Words named (test):** MRR 0.218, top-1 13.5%, top-10 38.0% of 4,490" in text
    # headed as the encoder's: under the decoder's line it read as the decoder's (a new user's walk, session 51)
    assert "**The encoder's checkpoint:**\n\n- **" in text
    [code] = [b for b in build_app(studio).blocks.values() if isinstance(b, gr.Code)
              and b.label == "Manifest of the active checkpoint"]
    assert isinstance(code.parent, gr.Accordion) and code.parent.open is False


def test_model_loads_in_the_background(tiny_mlm_dir, tmp_path):
    studio = start_studio(ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path, warm_up_umap=False, delay=0,
                          open_vocabulary=False)
    assert studio.models.active(timeout=60).spec.name == "tiny"
    broken = Models(tmp_path)
    broken.load_in_background(ModelSpec("gone", tmp_path / "missing")).join(60)
    with pytest.raises(ModelUnavailable, match="Loading the model 'gone' failed"):
        broken.active()
    assert "failed" in broken.status()
    assert not broken.loading and not broken.ready  # the page's model bar stops asking (it polled for good)


def test_start_up_preparation_waits_while_a_job_uses_every_core_unless_a_switch_waits(tiny_mlm_dir, tmp_path,
                                                                                     monkeypatch):
    """Issue 76: beside the start-up preparation a 30-word glossary's training took 142 s instead of 37 s; it now
    pauses between its stages while a job's process uses every core, and goes on when a model switch waits."""
    import app.handlers.studio
    stages = []

    def prepare(active, progress=None, open_vocabulary=True):
        progress(0.5, desc="a stage")  # where the real preparation says its stages and batches
        stages.append("done")
    monkeypatch.setattr(app.handlers.studio, "prepare_model", prepare)
    with whole_machine_job():
        studio = start_studio(ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path, warm_up_umap=False, delay=0,
                              open_vocabulary=False)
        active = studio.models.active(timeout=60)
        time.sleep(1.0)
        assert stages == []  # paused
        switched = threading.Thread(target=studio.models.switch, args=(active.spec,))
        switched.start()  # a switch waits for the preparation, which then goes on
        switched.join(10)
        assert stages == ["done"] and not switched.is_alive()


def test_a_fresh_starts_first_answer_comes_from_the_whole_vocabulary(tiny_mlm_dir, tmp_path, monkeypatch):
    """Issue 76, 2: for ~20 s after the page was usable, answers came from the head's single-token words alone
    ("a person who is in charge": no "chief"), though the checkpoint's compact vectors are read in seconds."""
    import app.handlers.studio
    import core.words.scorer
    from core.lexicon.dictionary import load_wordnet_lemmas
    lemmas = [e for e in load_wordnet_lemmas() if e.word in ("ice cream", "dog", "give up")]
    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: lemmas)  # WordNet's stand-in
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    saved = Engine.from_base(str(tiny_mlm_dir)).save(tmp_path / "checkpoints" / "tiny")
    Engine.load(saved, decoder=None, open_vocabulary=False).vocabulary.save_compact(subspaces=2,
                                                                                    cache_dir=tmp_path / "elsewhere")
    # a fresh start: an empty cache; the background preparation, which would build the vocabulary too, does nothing
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "fresh-cache"))
    monkeypatch.setattr(app.handlers.studio, "prepare_model", lambda active, progress=None, open_vocabulary=True: None)
    studio = start_studio(ModelSpec("tiny", saved), tmp_path / "checkpoints", warm_up_umap=False, delay=0)
    words, _ = studio.reverse.reverse_dictionary("a frozen sweet food", 3)
    assert "ice cream" in words  # a phrase: only the whole vocabulary has it
    assert studio.models.active().engine.vocabulary.state is VocabularyState.COMPACT
    assert "compressed copy" in words  # and it says so, plainly


def test_a_bar_of_background_work_goes_when_the_work_ends(studio, monkeypatch):
    """Issue 76, 2: a bar "embedding 264,003/264,003 ... about 0 s left" stayed on screen."""
    from app.handlers.reverse import vocabulary_progress_html
    active = studio.models.active()
    vocabulary = active.engine.vocabulary
    vocabulary.progress = EmbeddingProgress(66_000, 264_003, 200.0)
    assert "66,000/264,003" in studio.reverse.vocabulary_progress()[0]
    assert "about 3 min left" in vocabulary_progress_html(active)
    vocabulary.progress = EmbeddingProgress(264_003, 264_003, 0.0)  # embedded; saved and read back next: seconds
    assert "0 s left" not in studio.reverse.vocabulary_progress()[0]
    vocabulary.progress = None  # done: the tab's polling then shows nothing, and stops
    assert studio.reverse.vocabulary_progress() == ("", True)  # no vocabulary yet: it polls on, for the work to come
    vocabulary.progress = EmbeddingProgress(66_000, 264_003, 200.0)
    words, _ = studio.reverse.reverse_dictionary("an animal", 3)
    assert "ds-progress" not in words  # an answer holds no bar, even while the work runs: it would stay after it
    vocabulary.progress = None
    with vocabulary.scoring_with(SimpleNamespace(), VocabularyState.EXACT):  # its whole vocabulary, exact
        assert studio.reverse.vocabulary_progress() == ("", False)  # final: nothing more to wait for


def test_a_single_token_server_neither_promises_a_vocabulary_nor_polls_for_one(studio):
    """Review: with --single-token-words the whole vocabulary is never built, yet the answers said it was being
    prepared ("Ask again then") and every page asked for its progress every 2 s, for good."""
    from app.handlers.studio import prepare_model

    active = studio.models.active()
    prepare_model(active, open_vocabulary=False)
    words, _ = studio.reverse.reverse_dictionary("an animal", 3)
    assert "--single-token-words" in words and "Ask again" not in words
    assert studio.reverse.vocabulary_progress() == ("", False)


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


def test_the_reverse_dictionary_says_when_it_answers_from_approximate_vectors(tiny_mlm_dir, tmp_path):
    """Issue 60, 3: a fresh start answered from the compact vectors and only the Map tab said so."""
    from core.lexicon.dictionary import load_wordnet_lemmas
    engine = Engine.from_base(str(tiny_mlm_dir))
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path), Projector(),
                    JobManager())
    engine.vocabulary.enable(dictionary=[e for e in load_wordnet_lemmas() if e.word in ("dog", "ice cream")])
    exact, _ = studio.reverse.reverse_dictionary("a frozen sweet food", 2)
    engine.vocabulary.state = VocabularyState.COMPACT  # as read from a checkpoint's compact vectors
    approximate, _ = studio.reverse.reverse_dictionary("a frozen sweet food", 2)
    assert "compressed copy" in approximate and "ice cream" in approximate
    assert "compressed copy" not in exact and "ice cream" in exact


def test_an_answer_is_written_in_the_form_the_description_asks_for_with_its_lemmas_senses(tiny_mlm_dir):
    """Issue 60, 2: "sticks of wax that burn" asks for candles; the app offered lemmas only."""
    from core.lexicon.dictionary import load_wordnet_lemmas
    engine = Engine.from_base(str(tiny_mlm_dir))
    engine.vocabulary.enable(dictionary=[e for e in load_wordnet_lemmas() if e.word in ("candle", "dog")])
    [plural] = sv.reverse_dictionary(engine, sv.WordQuery("sticks of wax that burn to give light", k=1,
                                                          pattern="candle"))
    [lemma] = sv.reverse_dictionary(engine, sv.WordQuery("a stick of wax that burns to give light", k=1,
                                                         pattern="candle"))
    assert (plural.word, plural.written, lemma.written) == ("candle", "candles", "")
    assert plural.definitions == lemma.definitions and all(e.word == "candle" for e in plural.definitions)
    page = render.words_html([plural], "model")
    assert page.index("candles") < page.index("(candle)")


def test_the_about_tab_passes_gemmas_terms_on_to_users():
    """The fluency model is Gemma 3 270M: a server that offers it to others must pass its terms and use
    restrictions on to them (NOTICE; Gemma Terms of Use, section 3.2)."""
    from app.tabs.about import ABOUT

    assert "Gemma Terms of Use" in ABOUT and "ai.google.dev/gemma/prohibited_use_policy" in ABOUT


def test_a_folder_of_ones_own_checkpoints_still_serves_the_shipped_model(tmp_path):
    """`python app.py --checkpoints DIR` with a folder of one's own fine-tunes served the untrained base (a new
    user's walk, session 51); the shipped checkpoint is served unless the folder holds one of its name."""
    from app.shared.models import default_spec
    from core.checkpoint import DEFAULT_CHECKPOINT

    assert default_spec(tmp_path).path == DEFAULT_CHECKPOINT and default_spec(tmp_path).name == DEFAULT_CHECKPOINT.name
    (tmp_path / DEFAULT_CHECKPOINT.name).mkdir()
    assert default_spec(tmp_path).path == tmp_path / DEFAULT_CHECKPOINT.name
