"""The Map tab: projections of texts, the map of every word, search, selection, Projector files."""
from __future__ import annotations

import gradio as gr

from ..handlers import (
    COLOUR_BY,
    FILE_COLUMN,
    MAP_POINTS,
    MAP_SOURCES,
    MAX_EXPORT_POINTS,
    MAX_MAP_NEIGHBOURS,
    MAX_MAP_SAMPLE,
    MY_COLLECTION,
    Studio,
)
from ..shared import services as sv
from ..views import render
from ..views.projection import METHODS
from ..wiring import HEAVY, QUICK, handler, wire
from .shared import COLLECTION_PLACEHOLDER

# Plotly reports a selection, a click and a zoom to the page only. Each drawn map gets listeners: a box or
# lasso selection writes its [trace, point] pairs into the hidden #map-selection box (a click: #map-click),
# whose change asks the server for the rows (the point's definitions); a zoom shows the level of region
# names that suits it (one level per x4 zoom). Once a map is drawn the page asks for its points' second hover
# lines (#map-details-ask; `MapHandlers.map_details`: the words' definitions on the map of every word), which
# go straight into the hover texts plotly reads: no redraw, and the server's work does not slow the drawing.
MAP_JS = """() => {
  // the details fit a map whose first traces have their names and lengths (the same words, grouped alike)
  const fits = (div, details) => !!details && !!div.data && details.every((t, i) => div.data[i]
      && div.data[i].name === t.name && Array.isArray(div.data[i].text)
      && div.data[i].text.length === t.details.length);
  const applyDetails = () => {
    const details = window.__dsDetails;
    document.querySelectorAll('#map-plot .js-plotly-plot').forEach(div => {
      if (div._dsDetails === details || !fits(div, details)) return;
      const data = div.data;
      details.forEach((t, i) => {
        const text = data[i].text.map((w, j) => w.split('<br>')[0] + '<br>' + t.details[j]);
        data[i].text = text;  // what plotly's next restyle reads
        if (div._fullData && div._fullData[i]) div._fullData[i].text = text;  // what its hover reads now
      });
      div._dsDetails = details;
    });
  };
  window.__dsShowDetails = (details) => { window.__dsDetails = details; applyDetails(); };
  const send = (id, points) => {
    const box = document.querySelector(`#${id} textarea`);
    if (!box) return;
    box.value = JSON.stringify(points);
    box.dispatchEvent(new Event('input', {bubbles: true}));
  };
  const pairs = (ev) => (ev && ev.points ? ev.points.map(p => [p.curveNumber, p.pointNumber]) : []);
  const showLevel = (div) => {
    const labels = div.data.map((t, i) => [t, i]).filter(([t]) => t.name === '%s');
    const axis = div._fullLayout.xaxis, full = div._dsFull;
    if (!labels.length || !full || !axis || !axis.range || !window.Plotly) return;
    const range = axis.range;
    const zoom = (full[1] - full[0]) / Math.max(range[1] - range[0], 1e-9);
    const level = Math.min(labels.length - 1, Math.max(0, Math.floor(Math.log(zoom) / Math.log(4) + 0.5)));
    const visible = labels.map(([t]) => t.meta === level);
    if (visible.some((v, k) => (labels[k][0].visible !== false) !== v)) {
      window.Plotly.restyle(div, {visible}, labels.map(([, i]) => i));
    }
  };
  const bind = () => document.querySelectorAll('#map-plot .js-plotly-plot').forEach(div => {
    if (typeof div.on !== 'function' || !div._fullLayout || div._dsBound === div._ev) return;  // bound already
    const axis = div._fullLayout.xaxis;  // a 3-D map has none: no zoom levels there
    const meta = div.layout && div.layout.meta;  // a search's view flew closer: the whole map's range comes with it
    div._dsFull = meta && meta.full_x ? meta.full_x : axis && axis.range ? axis.range.slice() : null;
    div._dsBound = div._ev;
    showLevel(div);
    // a search redraws the same map: the details held fit it (the same traces) and are not asked again
    if (!fits(div, window.__dsDetails) && div.data.some(t => Array.isArray(t.text) && t.text.length)) {
      send('map-details-ask', Date.now());
    }
    div.on('plotly_selected', (ev) => send('map-selection', pairs(ev)));
    div.on('plotly_click', (ev) => send('map-click', pairs(ev).slice(0, 1)));
    div.on('plotly_relayout', () => showLevel(div));
  });
  setInterval(() => { bind(); applyDetails(); }, 500);
}""" % render.REGION_LABELS
WAIT_POLL_S = 5.0  # seconds between two looks at the map of every word Draw map waits for
SHOW_DETAILS_JS = "(details) => { window.__dsShowDetails && window.__dsShowDetails(details); }"


def create(demo: gr.Blocks, studio: Studio, session: gr.State) -> None:
    umap_status = gr.Markdown(studio.map.umap_status(), elem_id="umap-status")
    local = studio.public is None  # a collection is opened by its path on a server of one's own only
    with gr.Row():
        source = gr.Radio([*MAP_SOURCES, *([MY_COLLECTION] if local else [])], value=MAP_SOURCES[0], label="Points")
        size = gr.Dropdown([500, 1000, 2000, 5000, *([10_000, MAX_MAP_SAMPLE] if local else [])], value=1000,
                           label="Sample size")
        method = gr.Radio(list(METHODS), value="UMAP", label="Projection")
        dims = gr.Radio(["2-D", "3-D"], value="2-D", label="Dimensions")
        colour = gr.Radio(list(COLOUR_BY), value=COLOUR_BY[0], label="Colour by")
        # filled with the file's columns once its map is drawn; a name typed before that is checked on drawing
        column = gr.Dropdown([], value=None, label="Column", allow_custom_value=True,
                             info=f"of your table or metadata.tsv, for '{FILE_COLUMN}' (empty: the first)")
    # Folded: open, these two pushed the map below the fold (issue 54); the points "my sentences" and
    # "uploaded file" read them.
    own = "'my sentences', 'uploaded file'" + (f" and {MY_COLLECTION!r}" if local else "")
    with gr.Accordion(f"My sentences, file or collection (for the points {own})", open=False, elem_id="map-own"):
        with gr.Row():
            sentences = gr.Textbox(label="My sentences (one per line)", lines=3)
            # a short label: the file box cut a long one to "...its columns a li" (issue 76); the formats below
            file = gr.File(label="Or a file of texts", file_types=[".txt", ".tsv"], file_count="multiple",
                           elem_id="map-file")
        gr.Markdown("A file holds one text a line, or a table: a header line, then a text and its columns a line, "
                    "separated by tabs; or the Embedding Projector's vectors.tsv (with its metadata.tsv).")
        collection = gr.Textbox(label="Collection path: a sample of its rows (the sample size), its metadata columns "
                                f"to colour by ({FILE_COLUMN!r})", placeholder=COLLECTION_PLACEHOLDER, visible=local,
                                elem_id="map-collection")
    draw = gr.Button("Draw map", variant="primary", elem_id="map-draw")
    status = gr.Markdown(elem_id="map-status")
    plot = gr.Plot(render.placeholder_figure("Choose the points above, then press Draw map."), elem_id="map-plot")
    point = gr.Markdown("Click a point to read it whole, with its definitions.", elem_id="map-point")
    clicked = gr.Textbox(elem_id="map-click", container=False)  # written by MAP_JS, as #map-selection below
    clicked.change(handler(studio.map.map_point), [clicked, session], [point], api_name="map_point", **QUICK)
    with gr.Row():
        search = gr.Textbox(label="Search the map", scale=3)
        k = gr.Slider(1, MAX_MAP_NEIGHBOURS, value=10, step=1, label="Neighbours", scale=1)
        among = gr.Dropdown([MAP_POINTS, *sv.REFERENCE_CHOICES, sv.UPLOADED_FILE], value=MAP_POINTS, label="Among",
                            scale=2, info="another collection's texts land on the map of every word")
        search_button = gr.Button("Highlight", scale=1)
    note = gr.Markdown()
    neighbours = gr.Dataframe(headers=["rank", "cosine", "text"], wrap=True, elem_id="map-neighbours")
    # While the map of every word that Draw map asked for is prepared in the background, this timer keeps its
    # status line up to date (the count embedded, the minutes of laying out), then draws the map (issue 62: it
    # said "press Draw map again"); a status written once said "about 2 min left" long after the work had
    # ended (issue 54).
    waiting = gr.Timer(WAIT_POLL_S, active=False)
    wire([draw.click], handler(studio.map.draw_map),
         [source, size, sentences, file, method, dims, colour, session, column, collection],
         [plot, status, session], api_name="draw_map", **HEAVY).success(
        lambda state: (gr.Dropdown(choices=studio.map.map_columns(state)), gr.Timer(active=bool(state.waiting))),
        session, [column, waiting], api_visibility="private")
    follow = handler(studio.map.map_waiting)

    async def follow_waiting(state):
        """The status of now; once ready, the map itself (drawn here: nobody presses Draw map again)."""
        try:
            note, still, figure = await follow(state)
        except gr.Error as err:  # into the status line, and no more polls (a toast every few seconds)
            return err.message, gr.Timer(active=False), gr.update(), state
        return (gr.update() if note is None else note, gr.Timer(active=still),
                gr.update() if figure is None else figure, state)
    waiting.tick(follow_waiting, session, [status, waiting, plot, session], api_visibility="private",
                 show_progress="hidden", **QUICK)
    # a failed search keeps the map last drawn, shown; its toast says why (the map not drawn yet, ...)
    wire([search_button.click, search.submit], handler(studio.map.search_map), [search, k, session, among],
         [plot, note, neighbours], keep=(plot,), show_progress_on=[note, neighbours], api_name="search_map", **HEAVY)
    asked = gr.Textbox(elem_id="map-details-ask", container=False)  # written by MAP_JS once a map is drawn
    details = gr.JSON(visible=False)  # the drawn map's second hover lines, for MAP_JS
    asked.change(handler(studio.map.map_details), session, details, api_visibility="private", **QUICK).then(
        None, details, None, js=SHOW_DETAILS_JS, api_visibility="private")
    gr.Markdown("Select points with **Box Select** or **Lasso Select** (above the map) to list them here.")
    # the browser writes it (MAP_JS); listened to by "change": a value written by a script sends no "input"
    selection = gr.Textbox(elem_id="map-selection", container=False)
    selected_note = gr.Markdown(elem_id="map-selected-note")
    selected = gr.Dataframe(headers=["text", "group", "x", "y"], wrap=True, elem_id="map-selected")
    selected_csv = gr.File(label="The selection as CSV", elem_id="map-selected-csv")
    selection.change(handler(studio.map.select_map), [selection, session], [selected, selected_note, selected_csv],
                    api_name="select_map", **HEAVY)
    demo.load(None, js=MAP_JS)
    with gr.Row():
        export = gr.Button("Download this map as Projector files (vectors.tsv, metadata.tsv; above "
                           f"{MAX_EXPORT_POINTS:,} points, a sample of {MAX_EXPORT_POINTS:,})", scale=1,
                           elem_id="map-export-button")
        exported = gr.File(label="Projector files", scale=2, elem_id="map-export")
    wire([export.click], handler(studio.map.export_map), [session], [exported], api_name="export_map", **QUICK)

    gr.Markdown("### A description, its candidate words and their definitions on one map")
    with gr.Row():
        query = gr.Textbox(label="Description", value="a person who is in charge", scale=3)
        top = gr.Slider(2, 15, value=6, step=1, label="Candidate words", scale=1)
        candidates_method = gr.Radio(list(METHODS), value="PCA", label="Projection", scale=1)
    candidates_button = gr.Button("Draw", elem_id="cand-draw")
    candidates_plot = gr.Plot(elem_id="cand-plot")
    candidates = gr.Dataframe(headers=["word", "score", "definitions"], wrap=True, elem_id="cand-table")
    wire([candidates_button.click, query.submit], handler(studio.map.candidates_map),
         [query, top, candidates_method, session],
         [candidates_plot, candidates], api_name="candidates_map", **HEAVY)

    # Polls only while a warm-up is pending: an idle timer would keep a queue event going every 3 s.
    timer = gr.Timer(3.0, active=studio.projector.umap_pending)

    def umap_now():
        return studio.map.umap_status(), gr.Timer(active=studio.projector.umap_pending)
    timer.tick(umap_now, None, [umap_status, timer], api_visibility="private", show_progress="hidden")
    # The page holds the status of when the app was built: a load shows today's at once, not at the first tick.
    demo.load(umap_now, None, [umap_status, timer], api_visibility="private", show_progress="hidden")
