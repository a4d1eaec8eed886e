"""The map of every word in Chromium: from pressing Draw to the 147k points drawn (issue 39's 3 s target),
what travels to the browser, and how long a search takes to land on the map (engine side).

    python -m core vocabulary-map            # once: the layout (minutes) and the definitions placed on it
    python -m bench.bench_map_browser        # Debian's chromium through playwright
    python -m bench.bench_map_browser --definitions   # the map of every definition (117k points) instead

The app runs the shipped model with the user cache (its exact vectors and the layout must be there);
the draws start once the app has prepared its model and warmed UMAP up; the time is measured in the
page, from the click to plotly's first drawing of the new figure. Then it hovers a point (what its label
shows), zooms (the region names shown at each zoom level) and searches (how close the view flies, and the
names shown there).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--definitions", action="store_true", help="draw every definition on the map instead")
    args = parser.parse_args(argv)
    engine_side(args.definitions)
    from playwright.sync_api import sync_playwright

    from app.handlers import EVERY_DEFINITION_MAP, EVERY_WORD_MAP
    from bench.bench_app import first_answer, free_port, launch, until_full_vocabulary

    port = free_port()
    process, _ = launch(None, port, Path("/tmp") / f"bench_map_{port}.log")
    try:
        until_full_vocabulary(first_answer(f"http://127.0.0.1:{port}/", process))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(120_000)  # a hang guard
            page.goto(f"http://127.0.0.1:{port}/")
            # the app prepares the model and warms UMAP up in the background after it starts: a draw
            # meanwhile shares the 2 cores with that work, so the measured draws come after it
            page.get_by_role("tab", name="Map").click()
            page.locator("#umap-status").get_by_text("UMAP is ready").wait_for(timeout=600_000)
            page.get_by_label(EVERY_DEFINITION_MAP if args.definitions else EVERY_WORD_MAP).check()
            for draw in range(args.draws):
                # the last draw's definitions are dropped too: the new map waits for its own
                page.evaluate("window.__dsDetails = null; "
                              "document.querySelectorAll('#map-plot .js-plotly-plot').forEach(e => e.remove())")
                started = time.perf_counter()
                page.locator("#map-draw").click()
                page.locator("#map-status").get_by_text("points in").wait_for()
                page.locator("#map-plot .js-plotly-plot canvas").first.wait_for(state="attached")
                print(f"draw {draw + 1}: {time.perf_counter() - started:.2f} s from the click to the drawn map "
                      f"({page.locator('#map-status').inner_text().strip()})", flush=True)
                if not args.definitions:  # the words' definitions come after the map, into its hover texts
                    page.wait_for_function("() => { const d = document.querySelector('#map-plot .js-plotly-plot');"
                                           " return d && d._dsDetails; }")
                    print(f"  the words' definitions in its hover texts at {time.perf_counter() - started:.2f} s",
                          flush=True)
            print(f"hovering the first point shows: {hover_label(page)!r}", flush=True)
            print(f"region names shown by zoom: {zoom_levels(page)}", flush=True)
            zoom, levels = search_view(page, "a large body of water")
            print(f"a search flew {zoom:.1f} times closer; region names shown there: {levels}", flush=True)
            browser.close()
    finally:
        process.terminate()
        process.wait(timeout=30)
    return 0


def hover_label(page) -> str:
    """The text of plotly's hover label with the mouse on the first point of the map's first trace."""
    page.locator("#map-plot .js-plotly-plot").scroll_into_view_if_needed()
    x, y = page.evaluate("""() => { const div = document.querySelector('#map-plot .js-plotly-plot');
      const box = div.querySelector('.nsewdrag').getBoundingClientRect(), full = div._fullLayout;
      const t = div._fullData[0];
      return [box.left + full.xaxis.l2p(t.x[0]), box.top + full.yaxis.l2p(t.y[0])]; }""")
    page.mouse.move(x + 1, y + 1)
    page.mouse.move(x, y)
    label = page.locator("#map-plot .hoverlayer .hovertext").first
    label.wait_for(timeout=30_000)
    lines = label.evaluate("e => Array.from(e.querySelectorAll('tspan.line')).map(t => t.textContent)")
    return " / ".join(lines) if lines else label.text_content()


def zoom_levels(page) -> dict[int, list[int]]:
    """{zoom factor: the levels of region names visible once zoomed that far into the map's middle}."""
    from app.views.render import REGION_LABELS

    shown = {}
    for zoom in (1, 5, 20):
        shown[zoom] = page.evaluate("""async ([zoom, name]) => {
          const div = document.querySelector('#map-plot .js-plotly-plot'), [a, b] = div._dsFull;
          const mid = (a + b) / 2, half = (b - a) / 2 / zoom;
          await window.Plotly.relayout(div, {'xaxis.range': [mid - half, mid + half]});
          await new Promise(r => setTimeout(r, 300));
          return div.data.filter(t => t.name === name && t.visible !== false).map(t => t.meta); }""",
                                    [zoom, REGION_LABELS])
    return shown


def search_view(page, query: str) -> tuple[float, list[int]]:
    """(how many times closer than the whole map the view is after searching `query`, the levels of region
    names visible there)."""
    from app.views.render import REGION_LABELS

    page.get_by_label("Search the map").fill(query)
    page.get_by_role("button", name="Highlight").click()
    page.wait_for_function("() => { const d = document.querySelector('#map-plot .js-plotly-plot');"
                           " return d && d.data.some(t => t.name === 'your search') && d._dsBound === d._ev; }")
    page.wait_for_timeout(300)
    return tuple(page.evaluate("""(name) => {
      const div = document.querySelector('#map-plot .js-plotly-plot'), [a, b] = div._dsFull;
      const range = div._fullLayout.xaxis.range;
      return [(b - a) / (range[1] - range[0]),
              div.data.filter(t => t.name === name && t.visible !== false).map(t => t.meta)]; }""", REGION_LABELS))


def engine_side(definitions: bool = False) -> None:
    """The figure's size as plotly JSON (what Gradio sends) and a search's landing time, in this process;
    with `definitions`, the figure of every definition (placed first when they are not yet: minutes)."""
    from app.handlers import vocabulary_figure
    from app.shared.models import ActiveModel, ModelSpec
    from core.checkpoint import DEFAULT_CHECKPOINT
    from core.engine import Engine
    from core.paths import user_cache_dir
    from core.explore.vocabulary_map import place

    engine = Engine.load(decoder=None, open_vocabulary=False)
    engine.vocabulary.enable(cache_dir=user_cache_dir("open-vocab"), compact=False)
    active = ActiveModel(ModelSpec(DEFAULT_CHECKPOINT.name, DEFAULT_CHECKPOINT), engine)
    coords = active.vocabulary_map.layout()
    if definitions:
        placing = time.perf_counter()
        active.vocabulary_map.definition_positions()
        print(f"definitions placed or read in {time.perf_counter() - placing:.1f} s")
    started = time.perf_counter()
    figure = vocabulary_figure(active, kind="definition" if definitions else "word")
    points = sum(len(t.x) for t in figure.data if t.mode == "markers")
    print(f"figure of {points:,} points and their region names built in {time.perf_counter() - started:.2f} s, "
          f"{len(figure.to_json()) / 1e6:.1f} MB as plotly JSON")
    for text in ("a person who is in charge", "He visits Italy - He eats pizza + She drinks wine"):
        started = time.perf_counter()
        place(engine.words.open_vocab, coords, engine.encode([text]))
        print(f"{text!r} landed in {1000 * (time.perf_counter() - started):.0f} ms (encoding included)")


if __name__ == "__main__":
    sys.exit(main())
