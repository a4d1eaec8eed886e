"""End to end, in Debian's headless Chromium: the map of every word, asked for before it is laid out, appears
in the page by itself once it is ready (issue 62, 4: it said "press Draw map again" after minutes of progress).
The app runs in this process on a tiny model whose open vocabulary is six words, its layout held back until
the test lets it go (UMAP replaced by a stand-in: tests/test_vocabulary_map.py). Then its Projector files: a sample
of the map, as the button says, where a map above the limit was refused with a red error (issue 62, 6)."""
from __future__ import annotations

import os
import threading

import pytest

from app.handlers import EVERY_WORD_MAP, Studio
from app.shared.jobs import JobManager
from app.shared.models import Models, ModelSpec
from app.views.projection import Projector
from core import Engine
from tests.e2e.test_browser import free_port, open_tab
from tests.test_vocabulary_map import DICTIONARY, fake_umap  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow


@pytest.fixture
def app_url(tiny_mlm_dir, tmp_path, monkeypatch, fake_umap):  # noqa: F811
    """(the app's address, the gate its layout waits behind)."""
    import app.handlers.map
    import app.shared.vocabulary_map
    from app.ui import build_app

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    gate, build_map = threading.Event(), app.shared.vocabulary_map.build_map
    monkeypatch.setattr(app.shared.vocabulary_map, "build_map", lambda *args: gate.wait(120) and build_map(*args))
    monkeypatch.setattr(app.handlers.map, "MAX_EXPORT_POINTS", 4)  # the map of every word has 147k points, not 6
    engine = Engine.from_base(str(tiny_mlm_dir))
    engine.vocabulary.enable(dictionary=DICTIONARY)
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir))), Projector(), JobManager())
    demo = build_app(studio)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/", gate
    finally:
        gate.set()
        demo.close()


def test_the_map_of_every_word_appears_by_itself_when_ready_and_exports_a_sample(browser, app_url):
    url, gate = app_url
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(int(os.environ.get("E2E_TIMEOUT_MS", 120_000)))
    page.goto(url)
    open_tab(page, "Map")
    page.get_by_label(EVERY_WORD_MAP).check()
    page.locator("#map-draw").click()
    page.locator("#map-status").get_by_text("Laying out the map of every word").wait_for()
    assert "appears here by itself" in page.locator("#map-status").inner_text()
    gate.set()  # laid out now: nobody presses Draw map again
    page.locator("#map-status").get_by_text(f"{len(DICTIONARY)} points in").wait_for()
    points = page.evaluate("() => document.querySelector('#map-plot .js-plotly-plot')._fullData"
                           ".filter(t => t.mode === 'markers').reduce((n, t) => n + t._length, 0)")
    assert points == len(DICTIONARY)
    page.locator("#map-export-button").click()
    zip_name = f"defsent-map-sample-4-of-{len(DICTIONARY)}.zip"
    page.wait_for_function(f"(document.querySelector('#map-export a[download]') || {{}}).download === {zip_name!r}")
    assert page.locator(".toast-body").count() == 0  # no error
    page.close()
