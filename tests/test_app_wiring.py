"""The Gradio wiring and what surrounds the handlers: the UI builds, its events (Enter, emptied results,
the model list), the bound address, downloads and uploads removed, and the open vocabulary a model
answers with while its own is built. The fixtures are in tests/conftest.py.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.handlers import Session
from app.shared.models import ModelSpec
from core import Engine
from core.lexicon.dictionary import Entry
from core.words import VocabularyState
from tests.conftest import DEFINITIONS

pytestmark = pytest.mark.usefixtures("cache_in_tmp")  # the cache in tmp_path: tests/conftest.py


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


@pytest.mark.parametrize("api_name", ["reverse_dictionary", "similarity", "heatmap", "search", "analogy", "decode",
                                      "interpolate", "draw_map", "search_map", "candidates_map", "evaluate_words",
                                      "evaluate_sts", "evaluate_senteval"])
def test_a_request_first_empties_its_results(studio, api_name):
    """A user error is a toast that changes no output: emptied first, no earlier result stays shown; but
    the map a search highlights on, which a failed search leaves as it was."""
    gr = pytest.importorskip("gradio")
    from app.ui import build_app

    demo = build_app(studio)
    event = next(f for f in demo.fns.values() if f.api_name == api_name)
    assert event.trigger_after is not None, api_name
    clear = demo.fns[event.trigger_after]
    shown = [o for o in event.outputs if not isinstance(o, gr.State)]
    kept = [o for o in shown if api_name == "search_map" and isinstance(o, gr.Plot)]  # the map searched on
    assert len(kept) == (api_name == "search_map")
    assert shown and clear.fn() == {o: None for o in shown if all(o is not k for k in kept)} and not clear.queue


@pytest.mark.parametrize("api_name", ["reverse_dictionary", "similarity", "heatmap", "search", "analogy", "decode",
                                      "interpolate", "draw_map", "search_map", "candidates_map", "evaluate_words",
                                      "evaluate_smoke", "evaluate_sts", "evaluate_senteval", "start_finetune",
                                      "save_finetuned", "activate_finetuned", "download_finetuned"])
def test_a_refused_request_leaves_no_error_badge_on_its_results(studio, api_name):
    """A refusal is said once, in its toast: Gradio also marks the outputs that showed the request's progress with
    a red "Error" badge, which stayed after the toast had gone and hid the results' place (a newcomer's walk: an
    empty text in Similarity, an expression a - a in Analogy, Save while the job runs). A step that runs only on
    failure gives each of those outputs back its look, its value unchanged."""
    gr = pytest.importorskip("gradio")
    from app.ui import build_app

    demo = build_app(studio)
    event_id, event = next((i, f) for i, f in demo.fns.items() if f.api_name == api_name)
    unseen = (gr.State, gr.BrowserState, gr.Timer)  # no badge shows on these
    badged = list(event.show_progress_on or [o for o in event.outputs if not isinstance(o, unseen)])
    restored = [f for f in demo.fns.values() if f.trigger_after == event_id and f.trigger_only_on_failure]
    assert badged and len(restored) == 1, (api_name, len(restored))
    step = restored[0]
    assert {o._id for o in badged} <= {o._id for o in step.outputs} and not step.queue
    updates = step.fn()
    updates = updates if isinstance(updates, tuple) else (updates,)
    assert len(updates) == len(step.outputs) and all(u == gr.update() for u in updates)  # no value changed


def test_the_page_asks_for_a_drawn_maps_hover_details_and_hands_them_to_its_script(studio):
    """#map-details-ask (written by the page's script once a map is drawn) -> map_details -> a hidden JSON
    -> SHOW_DETAILS_JS, which gives them to the script (its side: the browser test)."""
    pytest.importorskip("gradio")
    from app.tabs.map import SHOW_DETAILS_JS
    from app.ui import build_app

    demo = build_app(studio)
    (name, _, (details,)), = _events(demo, "change", elem_id="map-details-ask")[:1]
    assert name == "map_details" and not demo.blocks[details].visible
    asked = next(f for f in demo.fns.values() if f.name == "map_details")
    shown = [f for f in demo.fns.values() if f.trigger_after == asked._id]
    assert [(f.js, [b._id for b in f.inputs], f.trigger_only_on_success) for f in shown] == [
        (SHOW_DETAILS_JS, [details], False)]


def test_a_page_load_copies_nothing_of_the_backend(studio, monkeypatch):
    """Gradio deep-copies the page's config at every `GET /` and `/config`; the session state's delete
    callback is in it, and a bound method of the backend made that a copy of every model and vector."""
    pytest.importorskip("gradio")
    import httpx

    from app.handlers.backend import Backend
    from app.shared.models import Models
    from app.ui import build_app
    from bench.bench_app import free_port
    from core import Engine

    copied = []
    for cls in (Backend, Models, Engine):
        monkeypatch.setattr(cls, "__deepcopy__", lambda self, memo, cls=cls: copied.append(cls.__name__) or self,
                            raising=False)
    demo = build_app(studio)
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        for path in ("/", "/config"):
            assert httpx.get(demo.local_url.rstrip("/") + path, timeout=60).status_code == 200
    finally:
        demo.close()
    assert copied == []


def test_app_binds_localhost_by_default(monkeypatch):
    monkeypatch.delenv("GRADIO_SERVER_NAME", raising=False)
    import importlib.util
    spec = importlib.util.spec_from_file_location("app_main", Path(__file__).parents[1] / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = module.parse_args([])
    assert (args.host, args.port, args.share) == ("127.0.0.1", 7860, False)


def test_the_server_starts_when_its_first_page_is_slow(studio, monkeypatch, capfd):
    """Gradio's launch asks for its own page once (a 3 s HEAD /) and stopped the app when that timed out,
    as it did on a busy machine; the launcher's server starts whatever that check would say. Its log tells
    nobody to "set `share=True` in `launch()`" (issue 76): the app has its --share flag."""
    pytest.importorskip("gradio")
    import httpx
    from gradio import networking

    from app.launch import parse_args, serve
    from app.ui import build_app
    from bench.bench_app import free_port

    monkeypatch.setattr(networking, "url_ok", lambda url: False)  # what a 3 s timeout answers
    demo = build_app(studio)
    serve(demo, parse_args(["--port", str(free_port())]))
    try:
        assert httpx.get(demo.local_url + "config", timeout=60).status_code == 200
    finally:
        demo.close()
    assert "share=True" not in capfd.readouterr().out


def test_the_port_answers_while_the_app_starts_and_is_then_the_apps(monkeypatch):
    """Issue 61: under two busy loops the port stayed closed 25-49 s after launch (imports, building the page). The
    launcher now answers 503 with a page that reloads itself from its first seconds, and hands the port over to
    the app's server before it starts it."""
    import socket

    import httpx

    import app.launch as launch
    from bench.bench_app import free_port

    port, seen = free_port(), {}

    def start(args, started, starting) -> int:  # stands in for loading and building the app
        answer = httpx.get(f"http://127.0.0.1:{port}/", timeout=30)
        seen.update(status=answer.status_code, retry=answer.headers.get("retry-after"), page=answer.text)
        starting.close()
        with socket.socket() as server:  # as uvicorn binds it: the port is free again
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", port))
        return 0
    monkeypatch.setattr(launch, "_start", start)
    assert launch.main(["--port", str(port)]) == 0
    assert seen["status"] == 503 and seen["retry"] == "2" and "is starting" in seen["page"], seen


def test_download_folders_are_removed_after_their_lifetime(engine, tiny_mlm_dir, tmp_path):
    import os

    from app.shared.export import download_files
    from app.settings import DOWNLOAD_PREFIX

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
    from app.shared.services import discard_upload

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
            seen.append((studio.reverse.reverse_dictionary("a small animal")[0], studio.reverse.vocabulary_progress()[0]))
        return real_encode(texts, **kwargs)

    monkeypatch.setattr(active.engine.encoder, "encode", encode_and_look)
    prepare_model(active)
    shown = [(answer, bar) for answer, bar in seen if "ds-progress-fill" in bar]  # the bar apart, polled (issue 76)
    assert shown and all("once per model; about" in bar and "shorter list" in answer for answer, bar in shown)
    assert not any("ds-progress" in answer for answer, _ in seen)  # an answer holds none: it stayed after the work
    assert "ds-notice" not in studio.reverse.reverse_dictionary("a small animal")[0]  # ready: no notice
    assert studio.reverse.vocabulary_progress() == ("", False)  # and no bar, nothing to poll for


def test_an_activated_fine_tune_answers_with_its_parents_vectors_then_its_own(tiny_mlm_dir, tmp_path, monkeypatch):
    import threading

    import torch

    import core.words.scorer
    from app.handlers import prepare_model
    from app.shared.models import ActiveModel
    from app.settings import cache_dir

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: [Entry(w, d) for w, d in DEFINITIONS.items()])
    parent = Engine.from_base(str(tiny_mlm_dir))
    parent.vocabulary.enable(cache_dir=cache_dir("open-vocab"))  # as the app cached the active model's
    fingerprint = parent.fingerprint
    with torch.no_grad():  # "fine-tuning"
        next(parent.encoder.parameters()).add_(0.01)
    parent.words.user_dictionary = [Entry("zib zab", "a thing nobody has named before")]
    path = parent.save(tmp_path / "checkpoints" / "tuned",
                       training={"open_vocab_parent": {"fingerprint": fingerprint, "user_entries": 0}})
    active = ActiveModel(ModelSpec("tuned", path), Engine.load(path, open_vocabulary=False, decoder=None))
    prepare_model(active)
    assert active.engine.vocabulary.enabled  # answering: the parent's vectors and its new word
    assert any(f.stem.endswith("-reused") for f in cache_dir("open-vocab").iterdir())
    for thread in threading.enumerate():
        if thread.name == "own-vectors":
            thread.join(timeout=60)
    assert active.engine.vocabulary.state is VocabularyState.EXACT  # then its own, embedded in the background
    assert "zib zab" in active.engine.words.open_vocab.candidates.words


def test_a_fresh_clone_answers_with_the_compact_vectors_then_embeds_exact_ones(tiny_mlm_dir, tmp_path, monkeypatch):
    import threading

    import app.handlers.studio
    import core.words.scorer
    from app.handlers import prepare_model
    from app.shared.models import ActiveModel

    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: [Entry(w, d) for w, d in DEFINITIONS.items()])
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "build-cache"))
    path = Engine.from_base(str(tiny_mlm_dir)).save(tmp_path / "checkpoints" / "shipped")
    Engine.load(path, open_vocabulary=False, decoder=None).vocabulary.save_compact(subspaces=4)  # as shipped
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "fresh-cache"))  # another machine: nothing cached
    active = ActiveModel(ModelSpec("shipped", path), Engine.load(path, open_vocabulary=False, decoder=None))
    gate, real_embedding = threading.Event(), app.handlers.studio.embed_own_vectors
    monkeypatch.setattr(app.handlers.studio, "embed_own_vectors", lambda model: gate.wait(60) and real_embedding(model))
    prepare_model(active)
    assert active.engine.vocabulary.state is VocabularyState.COMPACT
    assert len(active.engine.vocabulary.scorer.candidates.words) == len(DEFINITIONS)  # every word, at once
    gate.set()
    for thread in threading.enumerate():
        if thread.name == "own-vectors":
            thread.join(timeout=60)
    assert active.engine.vocabulary.state is VocabularyState.EXACT  # then its own exact vectors, embedded in the background


def test_the_collection_hint_is_short_enough_for_a_phone():
    """The dropdown's hint under 'Search in' / 'Nearest sentences from' was 282 characters: on a 420 px screen a tall
    narrow column that squeezed the dropdown (issue 54, the first-hour walk). It names every choice it explains."""
    from app.shared import services as sv
    from app.tabs.shared import REFERENCE_INFO

    assert len(REFERENCE_INFO) <= 200
    assert sv.LARGEST_READY in REFERENCE_INFO and sv.UPLOADED_FILE in REFERENCE_INFO
