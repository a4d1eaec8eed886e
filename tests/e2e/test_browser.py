"""End to end in a real browser: `python app.py` on a free local port, driven by Playwright in
Debian's headless Chromium (/usr/bin/chromium).

By default the app serves a tiny model whose head was fitted on a few definitions, so the expected
word is certain. With DEFSENT_E2E_MODEL=checkpoints/defsent-minilm the real model is served, a real
definition is typed, UMAP is warmed up and used for the map, and the screenshots go to
docs/screenshots/ (what the README shows); otherwise they go to the test's temporary folder.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest

from core import Engine
from core.lexicon.dictionary import Entry
from core.train import fit_head
from core.vec2sent.examples import ANALOGY_EXAMPLES
from core.words.word_eval import definition_pairs

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
SENTEVAL_FIXTURES = REPO / "tests" / "fixtures" / "senteval"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
TINY_PAIRS = {"king": "the man who rules the city", "dog": "a small animal that people keep",
              "river": "water that runs to the sea", "bread": "food made of flour",
              "teacher": "a person who helps a child learn", "song": "music with words",
              "tree": "a large plant with wood", "car": "a thing to drive on a road",
              "doctor": "a person who treats the sick", "wine": "a drink made of grapes",
              "house": "a place where people live", "queen": "the woman who rules the country"}
REAL_QUERY = ("a place where books are kept", "library")
DOCS_MODE = bool(os.environ.get("DEFSENT_E2E_MODEL"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served_model(tiny_mlm_dir, tmp_path_factory) -> tuple[Path, str, str, Path]:
    """(checkpoint, query, expected word, screenshot folder)."""
    real = os.environ.get("DEFSENT_E2E_MODEL")
    if real:
        return Path(real).resolve(), *REAL_QUERY, REPO / "docs" / "screenshots"
    engine = Engine.from_base(str(tiny_mlm_dir))
    texts, gold = definition_pairs([Entry(w, d) for w, d in TINY_PAIRS.items()], engine.words.vocab)
    fit_head(engine, texts, gold, epochs=300, lr=1e-2, batch_size=8)
    query = TINY_PAIRS["king"]
    assert engine.predict_words(query, k=1)[0][0] == "king"
    folder = tmp_path_factory.mktemp("served")
    return engine.save(folder / "tiny-defsent", name="tiny-defsent"), query, "king", folder / "screenshots"


@pytest.fixture(scope="module")
def app_url(served_model, tmp_path_factory):
    checkpoint = served_model[0]
    port = free_port()
    work = tmp_path_factory.mktemp("app")
    env = {**os.environ, "DEFSENT_CACHE_DIR": str(work / "cache"), "DEFSENT_THREADS": "1", "PYTHONUNBUFFERED": "1",
           "DEFSENT_EVALUATION_DATA": str(SENTEVAL_FIXTURES)}  # the Evaluate tab reads only allowed folders
    log = (work / "app.log").open("w")
    command = [sys.executable, "app.py", "--port", str(port), "--model", str(checkpoint),
               "--checkpoints", str(work / "checkpoints")] + ([] if DOCS_MODE else ["--no-umap-warmup"])
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_up(url, process, work / "app.log")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def wait_until_up(url: str, process: subprocess.Popen, log: Path, timeout: float = 900) -> None:
    """Wait for the app's page. Both timeouts are hang guards: a loaded CI machine can be 5x slower."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the app exited:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=120):
                return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"the app did not answer within {timeout} s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def page(browser, app_url):
    """A fresh page per test (one test's broken page cannot fail the next); the browser's console
    errors and failed requests are printed, so a failing test shows them."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    # A hang guard, as in wait_until_up; E2E_TIMEOUT_MS shortens it when debugging a failure.
    page.set_default_timeout(int(os.environ.get("E2E_TIMEOUT_MS", 300_000)))
    page.on("console", lambda m: print(f"browser console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda err: print(f"browser page error: {err}"))
    page.on("requestfailed", lambda r: print(f"browser request failed: {r.url} {r.failure}"))
    page.goto(app_url)
    yield page
    page.close()


def open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()


def shoot(page, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def wait_for_value(page, selector: str, condition: str) -> None:
    """Wait until the value of the textarea at `selector` satisfies the JS `condition` on `v`."""
    page.wait_for_function(f"(() => {{ const e = document.querySelector({selector!r}); "
                           f"const v = e ? e.value : ''; return {condition}; }})()")


def wait_for_text(page, selector: str, text: str) -> None:
    """Wait until the element at `selector` shows `text` (tables render hidden copies of cells)."""
    shown = f"(document.querySelector({selector!r}) || {{innerText: ''}}).innerText"
    try:
        page.wait_for_function(f"{shown}.includes({text!r})")
    except Exception:
        print(f"{selector} shows: {page.evaluate(shown)!r}")
        raise


def assert_column_fits(page, table: str, header: str) -> None:
    """The column `header` of the table at `table` ends inside the table and the window (not cut off)."""
    box = page.locator(table).bounding_box()
    cell = page.locator(f"{table} th").filter(has_text=header).first.bounding_box()
    assert cell["x"] + cell["width"] <= min(box["x"] + box["width"], page.viewport_size["width"]) + 1, (cell, box)


@pytest.mark.parametrize("width", [420, 1400])
def test_the_model_bar_fits_a_phone_and_a_desktop(browser, app_url, served_model, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(app_url)
        wait_for_text(page, "#model-status", "Active model")
        assert page.get_by_role("button", name="Use this model").bounding_box()["height"] < 80  # was 590 / 88 px
        assert page.locator("#model-choice").bounding_box()["width"] > 200  # was 158 px at 420: the name cut off
        shoot(page, served_model[3], f"0-model-bar-{width}")
    finally:
        page.close()


def test_reverse_dictionary_finds_the_word(page, served_model):
    _, query, expected, shots = served_model
    page.locator("#rd-query textarea").fill(query)
    page.locator("#rd-query textarea").press("Enter")  # Enter submits, as the Find words button does
    words = page.locator("#rd-words .ds-w")
    words.first.wait_for()
    assert expected in words.all_inner_texts()[:10]
    shoot(page, shots, "1-reverse-dictionary")
    page.locator("#rd-query textarea").fill("")
    page.locator("#rd-go").click()
    page.get_by_text("enter a description").first.wait_for()  # the error toast
    assert words.count() == 0  # and no earlier words under the empty description


def test_similarity_and_analogy_tabs(page, served_model):
    shots = served_model[3]
    open_tab(page, "Similarity")
    page.get_by_role("button", name="Compare").click()
    page.get_by_text("cosine similarity:").wait_for()
    page.get_by_role("button", name="Draw heatmap").click()
    page.locator(".js-plotly-plot").first.wait_for()
    page.get_by_role("button", name="Search", exact=True).click()
    wait_for_text(page, "#sim-hits", ": ")  # a "word: definition" row (cosines of a tiny model may show as 1)
    shoot(page, shots, "2-similarity")
    from playwright.sync_api import expect  # as conftest.py: the e2e tests skip where playwright is missing
    open_tab(page, "Analogy & interpolation")
    example = ANALOGY_EXAMPLES[1]
    page.get_by_text(example.b, exact=True).click()  # an example row fills a, b and c
    for name, value in zip("abc", (example.a, example.b, example.c)):
        expect(page.locator(f"#an-{name} textarea")).to_have_value(value)  # waits: the page fills them a moment later
    page.get_by_role("button", name="Compute").click()
    has_decoder = DOCS_MODE and Engine.load(served_model[0]).decoder is not None  # the tiny model has none
    page.get_by_text("Decoded:" if has_decoder else "No Vec2Sent decoder is available").wait_for()
    wait_for_text(page, "#an-nearest", "1")
    assert_column_fits(page, "#an-nearest", "reference sentence")
    page.locator("#an-text textarea").press("Enter")  # the Decode box: one sentence read back from its vector
    wait_for_text(page, "#an-read-back", "fit " if has_decoder else "No Vec2Sent decoder is available")
    page.get_by_role("button", name="Interpolate").click()
    page.get_by_text("Cosines along the path").wait_for()
    shoot(page, shots, "3-analogy")


def test_map_draws_and_highlights(page, served_model):
    shots = served_model[3]
    open_tab(page, "Map")
    if DOCS_MODE:
        page.locator("#umap-status").get_by_text("UMAP is ready").wait_for(timeout=600_000)
    page.locator("#map-draw").click()
    page.locator("#map-status").get_by_text("points, UMAP in" if DOCS_MODE else "points, PCA in").wait_for()
    page.get_by_label("Search the map").fill("water")
    page.get_by_role("button", name="Highlight").click()
    page.get_by_text("nearest neighbours by cosine").wait_for()
    page.locator("#cand-draw").click()
    page.locator("#cand-plot .js-plotly-plot").wait_for()
    wait_for_text(page, "#cand-table", ": " if DOCS_MODE else "100")  # the first word scores 100 (relative scores)
    assert_column_fits(page, "#cand-table", "definitions")
    assert_column_fits(page, "#map-neighbours", "text")  # the neighbours' text ran past the table's edge
    shoot(page, shots, "4-map")
    page.get_by_label("Search the map").fill("")
    page.get_by_role("button", name="Highlight").click()
    page.get_by_text("Please enter a search text.").first.wait_for()
    page.wait_for_timeout(1_000)  # an error's badge showed where the request's progress showed
    assert page.locator("#map-plot .js-plotly-plot").count() == 1  # a failed search keeps the map, in sight
    assert "Error" not in page.locator("#map-plot").inner_text()
    # said once, in its toast: the red "Error" badges on the results looked broken to a new user (session 47's walk)
    assert "Error" not in page.locator("#map-neighbours").inner_text()
    assert page.get_by_text("Please enter a search text.").count() == 1


def test_a_drawn_map_takes_its_points_second_hover_lines(page, served_model):
    """The map of every word's definitions come after the map (app/tabs/map.py MAP_JS): the page's script
    puts them into the drawn map's hover texts, and hovering a point shows its text, then its line. The
    details are given to the script here (a sample map has none); the server's side: test_app_wiring."""
    from bench.bench_map_browser import hover_label

    open_tab(page, "Map")
    page.locator("#map-draw").click()
    page.locator("#map-status").get_by_text("points, UMAP in" if DOCS_MODE else "points, PCA in").wait_for()
    page.locator("#map-plot .js-plotly-plot").wait_for()
    traces = page.evaluate("() => document.querySelector('#map-plot .js-plotly-plot').data"
                           ".filter(t => t.mode === 'markers').map(t => [t.name, t.text.length])")
    page.evaluate("(traces) => window.__dsShowDetails(traces.map(([name, n]) => ({name, details: "
                  "Array.from({length: n}, (_, j) => `line ${j} &lt;b&gt;`)})))", traces)
    assert re.fullmatch(r".+ / line \d+ <b>", hover_label(page))  # the point hovered (or one on it), then its line


def test_the_page_and_its_map_fetch_nothing_from_elsewhere(browser, app_url, served_model):
    """Every script, style and font comes from the app itself (it runs offline, issue 39: nothing from a CDN):
    no request of the page, the Map tab and a drawn map leaves the app's host."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    host, elsewhere = urlparse(app_url).netloc, []
    page.on("request", lambda r: elsewhere.append(r.url) if urlparse(r.url).netloc not in (host, "") else None)
    try:
        page.goto(app_url)
        wait_for_text(page, "#model-status", "Active model")
        open_tab(page, "Map")
        page.locator("#map-draw").click()
        page.locator("#map-status").get_by_text("points, ").wait_for()
        page.wait_for_timeout(1_000)  # the figure's own late requests (gradio keeps a stream open: never idle)
        assert elsewhere == []
    finally:
        page.close()


def test_a_box_selection_on_the_map_fills_the_table_and_its_csv(page, served_model):
    open_tab(page, "Map")
    page.locator("#map-draw").click()
    page.locator("#map-status").get_by_text("points, ").wait_for()
    plot = page.locator("#map-plot .js-plotly-plot")
    plot.locator(".modebar-btn[data-title='Box Select']").click()
    plot.scroll_into_view_if_needed()
    box = plot.locator(".nsewdrag").first.bounding_box()  # the plot area, in view
    first = page.evaluate("""() => { const d = document.querySelector('#map-plot .js-plotly-plot'), t = d._fullData[0];
      const l = d._fullLayout; return [l.xaxis.l2p(t.x[0]), l.yaxis.l2p(t.y[0])]; }""")  # a point's pixels
    page.mouse.click(box["x"] + first[0], box["y"] + first[1])
    page.locator("#map-point").get_by_text("(").wait_for()  # its text and group, read whole
    page.mouse.move(box["x"] + 2, box["y"] + 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=8)
    page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] - 2, steps=8)
    page.mouse.up()
    note = page.locator("#map-selected-note").get_by_text("point(s) selected")
    note.wait_for()
    selected = int(note.inner_text().split()[0].replace(",", ""))
    assert selected > 0 and page.locator("#map-selected tbody tr").count() >= 1
    page.locator("#map-selected-csv").get_by_text("selection", exact=True).wait_for()  # the CSV to download


TABS = ["Reverse dictionary", "Similarity", "Analogy & interpolation", "Map", "Fine-tune", "Evaluate", "About"]
# Every table shown (Gradio's dataframes and Markdown tables): its width and its box's, whether the box scrolls
# sideways, its width with every column at its longest word or number (only when wider than its box), and the
# words and numbers of its cells drawn across two lines or more ("ran k", "0 . 4 9 5 1").
TABLES_JS = """() => {
  const out = [];
  const shown = e => e && e.offsetParent !== null && e.getBoundingClientRect().width > 0;
  const name = e => { const c = e.closest('[id]'); return c ? c.id : '?'; };
  const broken = cell => {  // the words and numbers (between spaces and hyphens) of a cell drawn on two lines or more
    const bad = [], walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (const m of n.data.matchAll(/[^\s\-\u2013]+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        if (new Set([...r.getClientRects()].filter(q => q.width > 0).map(q => Math.round(q.top))).size > 1)
          bad.push(m[0]);
      }
    }
    return bad;
  };
  const minContent = (table, unfix) => {  // the table's width with every column at its longest word or number
    const copy = table.cloneNode(true);
    if (unfix) copy.querySelectorAll('[style]').forEach(e => { e.style.width = e.style.minWidth = e.style.maxWidth = ''; });
    for (const e of [copy, ...copy.querySelectorAll('*')])  // lines break at spaces and hyphens only, whatever the page says
      Object.assign(e.style, {whiteSpace: 'normal', wordBreak: 'normal', overflowWrap: 'normal'});
    Object.assign(copy.style, {width: 'min-content', position: 'absolute', visibility: 'hidden', left: '0', top: '0'});
    table.parentElement.appendChild(copy);
    const width = Math.max(copy.scrollWidth, copy.getBoundingClientRect().width);
    copy.remove();
    return Math.round(width);
  };
  const add = (id, kind, table, box, cells, unfix) => {
    const width = Math.round(Math.max(table.scrollWidth, table.getBoundingClientRect().width));
    const row = {id, kind, table: width, box: box.clientWidth, right: Math.round(box.getBoundingClientRect().right),
                 scrolls: ['auto', 'scroll'].includes(getComputedStyle(box).overflowX), broken: cells.flatMap(broken)};
    if (width > box.clientWidth + 1) row.minContent = minContent(table, unfix);
    out.push(row);
  };
  for (const wrap of document.querySelectorAll('.table-wrap')) {
    const table = wrap.querySelector('table');
    if (!shown(wrap) || !table) continue;
    const cells = [...wrap.querySelectorAll('th .header-content, .virtual-body [role=gridcell], tbody:not(.sizing-body) td')];
    add(name(wrap), 'dataframe', table, wrap.querySelector('.virtual-table-viewport') || wrap, cells.filter(shown), true);
  }
  for (const table of document.querySelectorAll('.prose table, .md table')) {
    if (!shown(table)) continue;
    let box = getComputedStyle(table).display === 'block' ? table : table.parentElement;
    while (box.clientWidth === 0) box = box.parentElement;
    add(name(table), 'markdown', table, box, [...table.querySelectorAll('th, td')], false);
  }
  return {window: window.innerWidth, page: document.documentElement.scrollWidth, tables: out};
}"""
LONG_LINE = ("a very long sentence about the river that runs from the high mountains through the old city and "
             "its many bridges, markets and gardens down to the wide grey sea where the ships wait for the tide, "
             "written here so that the text column of the results must wrap over several lines on any screen")


def assert_tables_fit(page, where: str, expected: tuple[str, ...] = ()) -> None:
    """Each table shown fits its box, or, when its words and numbers alone are wider than the box, scrolls
    inside it (its box never runs past the window); no word or number of a cell is broken across lines."""
    page.wait_for_timeout(500)  # the dataframe sizes its columns a moment after its rows come
    found = page.evaluate(TABLES_JS)
    for table in found["tables"]:
        assert not table["broken"], (where, table)
        assert table["right"] <= found["window"] + 1, (where, table)
        assert table["table"] <= table["box"] + 1 or table["scrolls"] and table["table"] <= table["minContent"] + 2, (
            where, table)
    shown = {table["id"] for table in found["tables"]}
    assert set(expected) <= shown, (where, shown)


@pytest.mark.parametrize("width", [420, 1280])
def test_every_tab_and_table_fits_a_phone_and_a_desktop(browser, app_url, served_model, width, tmp_path):
    """At 420 px every tab is in sight (5 of 7 hid behind a "···" menu). At 420 and 1280 px every table of
    every tab, empty and filled, fits its box with its words and numbers whole (issue 54: the search results
    ran past their box even at 1280 px, a 12 % column wrote a cosine a digit a line)."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LONG_LINE}\na dog barks at the king\n0.4951 is a number\n", encoding="utf-8")
    try:
        page.goto(app_url)
        wait_for_text(page, "#model-status", "Active model")
        for name in TABS:
            tab = page.get_by_role("tab", name=name)
            box = tab.bounding_box()
            assert tab.is_visible() and box and 0 <= box["x"] and box["x"] + box["width"] <= width + 1, (name, box)
        open_tab(page, "Similarity")
        page.locator("#sim-source input").click()
        page.get_by_role("option", name="uploaded file", exact=True).click()
        page.locator("#sim-file input[type=file]").set_input_files(str(lines))
        page.locator("#sim-file").get_by_text("lines.txt").wait_for()  # uploaded
        page.get_by_role("button", name="Search", exact=True).click()
        wait_for_text(page, "#sim-hits", "tide")
        assert_tables_fit(page, "similarity", ("sim-hits",))
        open_tab(page, "Analogy & interpolation")
        assert_tables_fit(page, "analogy, empty", ("an-words", "an-nearest", "an-path"))
        page.get_by_text(ANALOGY_EXAMPLES[1].b, exact=True).click()
        page.get_by_role("button", name="Compute").click()
        wait_for_text(page, "#an-nearest", "1")
        page.get_by_role("button", name="Interpolate").click()
        page.get_by_text("Cosines along the path").wait_for()
        wait_for_text(page, "#an-path", "0.")
        assert_tables_fit(page, "analogy", ("an-words", "an-nearest", "an-path"))
        shoot(page, served_model[3], f"5-tables-analogy-{width}")
        open_tab(page, "Map")
        page.locator("#map-draw").click()
        page.locator("#map-status").get_by_text("points, ").wait_for()
        page.get_by_label("Search the map").fill("water")
        page.get_by_role("button", name="Highlight").click()
        page.get_by_text("nearest neighbours by cosine").wait_for()
        page.locator("#cand-draw").click()
        page.locator("#cand-plot .js-plotly-plot").wait_for()
        wait_for_text(page, "#cand-table", ": " if DOCS_MODE else "100")
        assert_tables_fit(page, "map", ("map-neighbours", "map-selected", "cand-table"))
        title, plot = page.locator("#cand-plot .gtitle").bounding_box(), page.locator("#cand-plot").bounding_box()
        assert title["x"] + title["width"] <= plot["x"] + plot["width"], (title, plot)  # "...and their definit"
        shoot(page, served_model[3], f"5-tables-map-{width}")
        open_tab(page, "Fine-tune")
        assert_tables_fit(page, "fine-tune, empty", ("ft-compare", "ft-examples"))
        open_tab(page, "Evaluate")
        page.get_by_role("button", name="Evaluate word prediction").click()
        wait_for_text(page, "#eval-words", "before DefSent training")
        page.locator("#eval-smoke-go").click()
        wait_for_text(page, "#eval-smoke", "Spearman")
        page.get_by_label("SentEval data folder").fill(str(SENTEVAL_FIXTURES))
        page.get_by_role("button", name="Run STS").click()
        wait_for_text(page, "#eval-sts", "DefSent-BERT-base")
        assert_tables_fit(page, "evaluate", ("eval-words", "eval-smoke", "eval-sts"))
        shoot(page, served_model[3], f"5-tables-evaluate-{width}")
    finally:
        page.close()


def test_a_refused_finetune_start_leaves_no_error_badge_on_the_job_box(page):
    """Start without a dictionary: the toast says why, and the Job id box keeps its normal look (it kept a bare
    red "Error" badge after the toast had gone, issue 54)."""
    open_tab(page, "Fine-tune")
    page.locator("#ft-start").click()
    page.get_by_text("Upload and validate a dictionary first").first.wait_for()
    page.wait_for_timeout(1_000)  # the badge showed with the toast
    assert "Error" not in page.locator("#ft-job").inner_text()
    assert page.locator("#ft-job textarea").input_value() == ""


def test_finetune_survives_a_reload(page, served_model, tmp_path):
    shots = served_model[3]
    dictionary = tmp_path / "my-words.tsv"
    dictionary.write_text("word\tdefinition\n" + "".join(f"{w}\t{d}\n" for w, d in TINY_PAIRS.items()),
                          encoding="utf-8")
    open_tab(page, "Fine-tune")
    page.locator("#ft-file input[type=file]").set_input_files(str(dictionary))
    wait_for_value(page, "#ft-report textarea", "v.includes('Ready')")
    page.get_by_label("Max steps (0: by epochs").fill("4")
    page.get_by_label("Batch size").fill("4")
    page.locator("#ft-start").click()
    wait_for_value(page, "#ft-job textarea", "v.length > 0")
    job_id = page.locator("#ft-job textarea").input_value()
    page.wait_for_function("localStorage.getItem('defsent-studio-job') !== null")  # kept by the browser
    page.reload()
    open_tab(page, "Fine-tune")
    wait_for_value(page, "#ft-job textarea", f"v === {job_id!r}")
    page.locator("#ft-progress").get_by_text("Done").wait_for(timeout=600_000)
    assert "MRR" in page.locator("#ft-compare").inner_text()
    assert_column_fits(page, "#ft-examples", "after (top 3)")
    page.get_by_label("Checkpoint name").fill("my-words-v1")
    page.get_by_role("button", name="Save", exact=True).click()
    page.get_by_text("Saved as checkpoint").wait_for()
    page.get_by_role("button", name="Use as the active model").click()
    # the answer's name, not the progress bar's "loading my-words-v1" shown while the model is prepared
    page.locator("#ft-message").get_by_text("my-words-v1", exact=True).wait_for()
    wait_for_text(page, "#model-status", "Active model: my-words-v1")  # the model bar follows
    page.get_by_role("button", name="Download", exact=True).click()
    page.locator("#ft-zip").get_by_text("my-words-v1").wait_for()
    page.locator("#ft-st-zip").get_by_text("my-words-v1-sentence-transformers").wait_for()
    shoot(page, shots, "5-finetune")
    page.locator("#model-choice input").click()  # back to the served model, through the model bar
    page.get_by_role("option", name=served_model[0].name, exact=True).click()
    page.get_by_role("button", name="Use this model").click()
    wait_for_text(page, "#model-status", f"Active model: {served_model[0].name}")


def test_evaluate_and_about_tabs(page, served_model):
    checkpoint, shots = served_model[0], served_model[3]
    open_tab(page, "Evaluate")
    page.get_by_role("button", name="Evaluate word prediction").click()
    # the table, not the progress line ("scoring before DefSent training - 50.0%"), which the wait took before
    shown = "(document.querySelector('#eval-words') || {innerText: ''}).innerText"
    page.wait_for_function(f"(t => t.includes('before DefSent training') && !t.includes('scoring'))({shown})")
    words = page.locator("#eval-words").inner_text()
    assert checkpoint.name in words  # the served model's row beside its untrained twin's
    assert re.findall(r"\b[01]\.\d+\b", words), words  # with its MRR and top-k shares
    if not DOCS_MODE or not page.get_by_label("SentEval data folder").input_value():  # "": no data folder exists
        page.get_by_label("SentEval data folder").fill(str(SENTEVAL_FIXTURES))
    page.get_by_role("button", name="Run STS").click()
    wait_for_text(page, "#eval-sts", "DefSent-BERT-base")
    assert checkpoint.name in page.locator("#eval-sts").inner_text()  # its own scores beside the papers' rows
    shoot(page, shots, "6-evaluate")
    open_tab(page, "About")
    fingerprint = page.locator("p", has_text="Encoder fingerprint")
    fingerprint.wait_for()
    assert fingerprint.inner_text().split(":")[-1].strip() == Engine.load(checkpoint, decoder=None).fingerprint
    assert page.locator("p", has_text="Active model:").first.inner_text().endswith(checkpoint.name)
    shoot(page, shots, "7-about")


def test_a_fresh_starts_first_answer_comes_from_the_whole_vocabulary(browser, tmp_path):
    """Issue 76, 2: the shipped model on a fresh start (an empty cache), asked as soon as the page is usable,
    answered from the head's 21.7k single words for ~20 s ("a person who is in charge": supervisor, executive,
    director, no "chief"); its compact vectors are now read before its first answer, as the README's example says."""
    port, log = free_port(), (tmp_path / "app.log").open("w")
    env = {**os.environ, "DEFSENT_CACHE_DIR": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([sys.executable, "app.py", "--port", str(port), "--no-umap-warmup", "--checkpoints",
                                str(tmp_path / "checkpoints"), "--model", str(REPO / "checkpoints" / "defsent-minilm")],
                               cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(300_000)  # a hang guard
    try:
        wait_until_up(f"http://127.0.0.1:{port}/", process, tmp_path / "app.log")
        page.goto(f"http://127.0.0.1:{port}/")
        page.locator("#rd-query textarea").fill("a person who is in charge")
        page.locator("#rd-go").click()
        page.locator("#rd-words .ds-w").first.wait_for()
        words = page.locator("#rd-words .ds-w").all_inner_texts()
        assert "chief" in words[:5] and "head" in words[:5], words
        assert "shorter list" not in page.locator("#rd-words").inner_text()
        wait_for_text(page, "#model-status", "Active model")  # the model bar followed the load (it said "Loading")
    finally:
        page.close()
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_an_empty_description_is_one_clear_message(page):
    """Issue 76, 5: an empty description showed a toast and a red "Error" badge on both answer boxes."""
    page.locator("#rd-query textarea").fill("")
    page.locator("#rd-go").click()
    page.get_by_text("Please enter a description.").first.wait_for()
    page.wait_for_timeout(1_000)  # the badges showed with the toast
    assert "Error" not in page.locator("#rd-words").inner_text() + page.locator("#rd-before").inner_text()
    assert page.get_by_text("Please enter a description.").count() == 1


def test_a_reloaded_page_finds_the_running_job_and_its_cancel_button(browser, app_url, tmp_path):
    """Issue 76, 4 and 5: a page opened without the job's id in its browser (reloaded before the browser kept it,
    or another browser) finds the job running on this private server; Cancel is red and pressable only then."""
    dictionary = tmp_path / "my-words.tsv"
    dictionary.write_text("word\tdefinition\n" + "".join(f"{w}\t{d}\n" for w, d in TINY_PAIRS.items()),
                          encoding="utf-8")
    first = browser.new_page(viewport={"width": 1400, "height": 1000})
    first.set_default_timeout(300_000)
    cancel = first.locator("#ft-cancel")
    try:
        first.goto(app_url)
        open_tab(first, "Fine-tune")
        assert cancel.is_disabled() and "stop" not in cancel.get_attribute("class")  # no job: neither red nor live
        first.locator("#ft-file input[type=file]").set_input_files(str(dictionary))
        wait_for_value(first, "#ft-report textarea", "v.includes('Ready')")
        first.get_by_label("Max steps (0: by epochs").fill("5000")  # long enough to be found running
        first.get_by_label("Batch size").fill("4")
        first.locator("#ft-start").click()
        wait_for_value(first, "#ft-job textarea", "v.length > 0")
        job_id = first.locator("#ft-job textarea").input_value()
        first.wait_for_function("!document.querySelector('#ft-cancel').disabled")
        assert "stop" in cancel.get_attribute("class")
        other = browser.new_context().new_page()  # its own storage: the job's id is not kept there
        other.set_default_timeout(300_000)
        other.goto(app_url)
        open_tab(other, "Fine-tune")
        try:
            wait_for_value(other, "#ft-job textarea", f"v === {job_id!r}")
        except Exception:
            print(f"the other page's job box: {other.locator('#ft-job textarea').input_value()!r}, not {job_id!r}")
            raise
        other.context.close()
        cancel.click()
        first.locator("#ft-progress").get_by_text("cancelled").wait_for()
        first.wait_for_function("document.querySelector('#ft-cancel').disabled")
    finally:
        first.close()
