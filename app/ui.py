"""The Gradio Blocks: layout and event wiring only. Every event calls a `Studio` method through
`handler`, which turns input errors into readable messages (never a stack trace).
"""
from __future__ import annotations

import functools
import inspect
import logging
from typing import Callable

import gradio as gr
from gradio.context import LocalContext

from core.runtime.cancel import Cancelled
from core.checkpoint import CheckpointError
from core.vec2sent.examples import ANALOGY_EXAMPLES

from .evaluation import GET_DATA, QUICK_STS, STS_DATASETS, TRANSFER_SIZES, TRANSFER_TASKS, default_data_dir
from .handlers import (COLOUR_BY, MAP_POINTS, MAP_SOURCES, MAX_MAP_NEIGHBOURS, MOST_EXACT, PUBLIC_EVALUATE, Session,
                       Studio)
from .models import ModelUnavailable
from .projection import METHODS
from . import services as sv
from . import views
from .services import POS_CODES
from .settings import QUEUE_SIZE
from .work import RUNNING, run_owned

log = logging.getLogger(__name__)
EVENT_CONCURRENCY = 2  # requests of one event that run at a time (2 cores, torch on 1 thread each)
# Concurrency pools (Gradio's concurrency_id / concurrency_limit). The cheap requests (tens of ms:
# the reverse dictionary, a pair's similarity, job queries) have a pool of their own, so a slow
# request never holds their slots; each slow kind runs one at a time, so a burst of maps or decodings
# waits in its own queue and leaves the 2 cores (torch on 1 thread per request) to the cheap ones.
QUICK = {"concurrency_id": "quick", "concurrency_limit": 2}
DECODE = {"concurrency_id": "decode", "concurrency_limit": 1}  # Vec2Sent beam search: analogy, interpolation
# Seconds of CPU each: maps (UMAP/PCA), candidate maps, heatmaps, embedding an uploaded corpus or
# dictionary, exports.
HEAVY = {"concurrency_id": "heavy", "concurrency_limit": 1}
EVALUATE = {"concurrency_id": "evaluate", "concurrency_limit": 1}  # minutes: not in the way of maps
MODEL = {"concurrency_id": "model", "concurrency_limit": 1}  # loading or saving a model
USER_ERRORS = (ValueError, CheckpointError, ModelUnavailable, FileNotFoundError)
JOB_STORAGE_KEY = "defsent-studio-job"
CANCELLED = "Cancelled: the request was stopped before it finished."
EXACT_ROUNDS = MOST_EXACT["correct"].rounds
REFINE_LABEL = (f"Refine: correct {EXACT_ROUNDS} times instead of once, each time decoding again from the vector "
                "moved along what the last sentence missed (reconstructs more sentences exactly; about 2 seconds "
                "per sentence)")
REFERENCE_INFO = (f"{sv.LARGEST_READY!r}: the modern corpus's million sentences where this server indexed them, "
                  f"else every WordNet definition once the full vocabulary is ready, until then the {sv.SAMPLE}")
UPLOAD_LIFETIME = (600, 3600)  # gradio delete_cache: (every N seconds, files older than M seconds)
EXAMPLES = ["a person who is in charge", "a large grey animal with a trunk", "a building where people live",
            "to move quickly on foot", "feeling or showing pleasure", "a place where books are kept"]
# Plotly reports a selection, a click and a zoom to the page only. Each drawn map gets listeners: a box or
# lasso selection writes its [trace, point] pairs into the hidden #map-selection box (a click: #map-click),
# whose change asks the server for the rows (the point's definitions); a zoom shows the level of region
# names that suits it (one level per x4 zoom).
MAP_JS = """() => {
  const send = (id, points) => {
    const box = document.querySelector(`#${id} textarea`);
    if (!box) return;
    box.value = JSON.stringify(points);
    box.dispatchEvent(new Event('input', {bubbles: true}));
  };
  const pairs = (ev) => (ev && ev.points ? ev.points.map(p => [p.curveNumber, p.pointNumber]) : []);
  const showLevel = (div) => {
    const labels = div.data.map((t, i) => [t, i]).filter(([t]) => t.name === '%s');
    const range = div._fullLayout.xaxis.range, full = div._dsFull;
    if (!labels.length || !full || !window.Plotly) return;
    const zoom = (full[1] - full[0]) / Math.max(range[1] - range[0], 1e-9);
    const level = Math.min(labels.length - 1, Math.max(0, Math.floor(Math.log(zoom) / Math.log(4) + 0.5)));
    const visible = labels.map(([t]) => t.meta === level);
    if (visible.some((v, k) => (labels[k][0].visible !== false) !== v)) {
      window.Plotly.restyle(div, {visible}, labels.map(([, i]) => i));
    }
  };
  const bind = () => document.querySelectorAll('#map-plot .js-plotly-plot').forEach(div => {
    if (typeof div.on !== 'function' || div._dsBound === div._ev) return;  // bound to this plot already
    div._dsBound = div._ev;
    div._dsFull = div._fullLayout.xaxis.range.slice();  // drawn: the whole map is in view
    div.on('plotly_selected', (ev) => send('map-selection', pairs(ev)));
    div.on('plotly_click', (ev) => send('map-click', pairs(ev).slice(0, 1)));
    div.on('plotly_relayout', () => showLevel(div));
  });
  setInterval(bind, 500);
}""" % views.REGION_LABELS

CSS = """#map-selection, #map-click {display: none}

.ds-words h4 {margin: 0 0 .5em 0}
.ds-word {margin-bottom: .7em}
.ds-head {display: flex; gap: .5em; align-items: baseline}
.ds-w {font-size: 1.1em}
.ds-p {margin-left: auto; font-variant-numeric: tabular-nums; opacity: .8}
.ds-bar {height: 6px; background: var(--color-accent); border-radius: 3px; min-width: 2px}
.ds-defs {margin: .2em 0 0 1.2em; font-size: .9em; opacity: .85}
.ds-notice {padding: .6em; border-left: 4px solid var(--color-accent)}
.ds-progress {height: 14px; background: var(--neutral-200); border-radius: 7px; overflow: hidden}
.ds-progress-fill {height: 100%; background: var(--color-accent)}
.ds-progress-text {margin-top: .3em}
#model-bar {align-items: center}
#model-load {height: auto; align-self: center}
.ds-progress-pulse {width: 30%; animation: ds-pulse 1.4s ease-in-out infinite alternate}
@keyframes ds-pulse {from {margin-left: 0} to {margin-left: 70%}}
"""
ABOUT = f"""
### What is this?

**DefSent** (Tsukagoshi, Sasano & Takeda, 2021) trains a sentence encoder on dictionary
definitions: the pooled embedding of a definition is fed to a *frozen* word-prediction head, and the
encoder learns until the head names the defined word. The embedding space then lines up with words,
which makes it good for similarity, and gives a **reverse dictionary** for free: describe a word,
get the word.

The **word head** is the masked-language-model head of BERT-style models (a base that ships without
one, like all-MiniLM-L6-v2, gets one fitted before DefSent training), kept frozen and tied to the
input word embeddings, so it can read *any* sentence vector as a distribution over words. The
shipped model adds **word vectors**: each word's own embedding, so a description also scores each
word by how close it lies to that word in the same space; the two scores together rank the right
word higher than either alone. Last, a **hubness correction** lowers words that score high for
almost any text (each word loses half its mean score on the ten training definitions nearest to it),
so general words stop crowding the top of every list. All 147k WordNet words and phrases are
scored twice, reading the description as a dictionary gloss and as a person's words, who mostly mean
a common word ("bird" rather than "ovenbird"); the answer mixes the two readings.

**Vec2Sent** (Kerscher & Eger, 2020) is a decoder trained to turn sentence vectors back into
sentences; with it, analogies and interpolations between sentences can be read as text. Of the
sentences its beam search finds, from the vector and once more from the vector moved along what the
first sentence missed, the app shows the one whose own embedding lies closest to the vector. With
"Refine" it corrects {EXACT_ROUNDS} times instead of once: more sentences come back exactly, in about 2 s each.

"""
SHARED_MODELS = "Models are shared by every user of this server; your inputs, maps and uploads stay in your session."
PUBLIC_MODELS = ("This is a public server: the model you choose and the models you fine-tune and save are yours "
                 "alone (for this session); your inputs, maps and uploads stay in your session too.")


def handler(fn: Callable) -> Callable:
    """Wrap a Studio method for Gradio: readable errors, gr.Progress for a `progress` parameter, and
    work owned by its request (app.work): it runs in a worker thread that stops at its next step when
    the request is cancelled or its client leaves, and the request ends only once the work has."""
    signature = inspect.signature(fn)

    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Cancelled:
            raise
        except USER_ERRORS as err:
            raise gr.Error(str(err), print_exception=False) from None
        except Exception as err:
            log.exception("%s failed", fn.__name__)
            raise gr.Error(f"Something went wrong ({type(err).__name__}); the server log has details.",
                           print_exception=False) from None

    @functools.wraps(fn)
    async def wrapper(*args, **kwargs):
        try:
            return await run_owned(functools.partial(call, *args, **kwargs), fn.__name__, _client_gone())
        except Cancelled:
            raise gr.Error(CANCELLED, print_exception=False) from None

    params = [p.replace(default=gr.Progress()) if p.name == "progress" else p
              for p in signature.parameters.values()]
    wrapper.__signature__ = signature.replace(parameters=params)
    return wrapper


def _client_gone() -> Callable[[], bool]:
    """For the event being handled now: a function telling whether its client has gone (Gradio marks
    the events of a session whose page closed its connection as no longer alive)."""
    blocks, event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
    events = getattr(getattr(blocks, "_queue", None), "event_ids_to_events", None)
    if events is None or event_id is None:  # called outside Gradio's queue
        return lambda: False

    def gone() -> bool:
        event = events.get(event_id)
        return event is not None and not event.alive
    return gone


def and_session(fn: Callable) -> Callable:
    """`handler(fn)` for an event that also outputs the session it was given (its last output): gradio
    keeps a state, with its time to live and end callback, only once an event has output it."""
    wrapped = handler(fn)

    @functools.wraps(wrapped)
    async def run(*args, **kwargs):
        session = wrapped.__signature__.bind(*args, **kwargs).arguments["session"]
        return await wrapped(*args, **kwargs), session
    run.__signature__ = wrapped.__signature__
    return run


def wire(triggers: list, fn: Callable, inputs, outputs: list, **kwargs):
    """Run `fn` on `triggers` after emptying its shown outputs (in the browser's request, outside the
    queue): a user error is only a toast, which would leave the previous result under the new input."""
    shown = [o for o in outputs if not isinstance(o, gr.State)]
    cleared = gr.on(triggers, lambda: {o: None for o in shown}, None, shown, queue=False,
                    show_progress="hidden", api_visibility="private")
    return cleared.then(fn, inputs, outputs, **kwargs)


def enable_queue(demo: gr.Blocks, max_size: int = QUEUE_SIZE, concurrency: int = EVENT_CONCURRENCY) -> gr.Blocks:
    """Bound the request queue: at most `max_size` requests wait; one more is refused at once (HTTP 503:
    the browser shows "This application is currently busy. Please try again.", gradio_client raises
    QueueError("Queue is full! Please try again.")) instead of waiting behind an endless queue."""
    if max_size < 1 or concurrency < 1:
        raise ValueError("The queue size and the concurrency must be at least 1.")
    return demo.queue(max_size=max_size, default_concurrency_limit=concurrency)


def build_app(studio: Studio) -> gr.Blocks:
    """The whole app: a model bar on top, then the seven tabs."""
    # Gradio keeps uploads (and copies of downloads) in its temp folder: delete them after an hour. A
    # dictionary is read into memory when validated; a search file that is gone asks for a new upload.
    with gr.Blocks(title="DefSent Studio", analytics_enabled=False, delete_cache=UPLOAD_LIFETIME) as demo:
        # Public mode: a session's state (its model choice and saved models) ends after a lifetime unchanged.
        lifetime = studio.public.session_lifetime if studio.public is not None else None
        session = gr.State(Session(), time_to_live=lifetime, delete_callback=studio.end_session)
        stored_job = gr.BrowserState("", storage_key=JOB_STORAGE_KEY)  # outside the tabs: read at page load
        gr.Markdown("# DefSent Studio\nWhat sentence embeddings mean: describe a word, compare sentences, "
                    "walk between them, map them, fine-tune on your own dictionary.")
        model_bar = _model_bar(demo, studio, session)
        with gr.Tabs(overflow_behavior="wrap"):  # on a phone every tab stays in sight (not behind "···")
            with gr.Tab("Reverse dictionary", id="reverse"):
                _reverse_tab(studio, session)
            with gr.Tab("Similarity", id="similarity"):
                _similarity_tab(studio, session)
            with gr.Tab("Analogy & interpolation", id="analogy"):
                _analogy_tab(studio, session)
            with gr.Tab("Map", id="map"):
                _map_tab(demo, studio, session)
            with gr.Tab("Fine-tune", id="finetune"):
                _finetune_tab(demo, studio, session, stored_job, model_bar)
            with gr.Tab("Evaluate", id="evaluate") as evaluate_tab:
                _evaluate_tab(evaluate_tab, studio, session)
            with gr.Tab("About", id="about") as about_tab:
                _about_tab(about_tab, studio, session)
        # Outside the queue: it answers even while every pool is busy, and it only reads two counters.
        gr.api(running_work, api_name="running_work", queue=False)
    return demo


def running_work() -> dict:
    """{"total": handlers' works running now, "by_handler": {name: count}}: after a request is
    cancelled and the cancel answered, its work is no longer counted (app.work)."""
    return {"total": RUNNING.total(), "by_handler": RUNNING.counts()}


def _model_bar(demo: gr.Blocks, studio: Studio, session: gr.State
               ) -> tuple[Callable, list[gr.components.Component]]:
    """The model chooser; returns (a function of the session refreshing it, its components) for other events."""
    # Not equal_height: the button would stretch to the status's height (~380 px on a 420 px phone). The
    # minimum widths make the row wrap on a phone (the status goes below) instead of squeezing each part.
    label = "Model (yours: this session only)" if studio.public is not None else "Model (shared by all users)"
    with gr.Row(elem_id="model-bar"):
        # The choices are listed again whenever the list is opened, so checkpoints saved after the page was
        # loaded (by another user, or `python -m core train`) can be chosen; a name typed in (or sent by an API
        # client) is checked by the handler, which reads the checkpoints folder at each choice.
        choice = gr.Dropdown(label=label, choices=studio.model_choices()[0], scale=3, allow_custom_value=True,
                             min_width=220, interactive=True, elem_id="model-choice")
        load = gr.Button("Use this model", scale=1, min_width=140, elem_id="model-load")
        status = gr.Markdown(elem_id="model-status", min_height=0)
    load.click(handler(studio.choose_model), [choice, session], [status, session], api_name="switch_model", **MODEL)

    def refresh(state):
        names, active = studio.model_choices(state)
        return gr.Dropdown(choices=names, value=active), studio.model_status(state)

    def relist(state):
        return gr.Dropdown(choices=studio.model_choices(state)[0])
    demo.load(refresh, session, [choice, status], api_visibility="private")
    choice.focus(relist, session, choice, queue=False, show_progress="hidden", api_visibility="private")
    return refresh, [choice, status]


def _reverse_tab(studio: Studio, session: gr.State) -> None:
    with gr.Row():
        with gr.Column(scale=2):
            text = gr.Textbox(label="Describe a word", placeholder="e.g. a person who is in charge", lines=1,
                              elem_id="rd-query")
            with gr.Accordion("Filters", open=False):
                with gr.Row():
                    k = gr.Slider(1, 50, value=10, step=1, label="How many words")
                    pos = gr.Dropdown(list(POS_CODES), value="any", label="Part of speech")
                with gr.Row():
                    min_length = gr.Number(0, label="Min length", precision=0, minimum=0)
                    max_length = gr.Number(0, label="Max length (0: any)", precision=0, minimum=0)
                with gr.Row():
                    initial = gr.Textbox(label="Starts with", max_length=10)
                    pattern = gr.Textbox(label="Pattern (? one letter, * any)", placeholder="l?ad*", max_length=64)
                # On by default: a description rarely names its word, and word vectors rank the
                # description's own words high ("books" for "a place where books are kept").
                exclude = gr.Checkbox(True, label="Exclude the words of my description")
            compare = gr.Checkbox(label="Compare with the model before DefSent training, side by side")
            go_button = gr.Button("Find words", variant="primary", elem_id="rd-go")
        with gr.Column(scale=2):
            words = gr.HTML(elem_id="rd-words")
        with gr.Column(scale=2):
            before = gr.HTML(elem_id="rd-before")
    inputs = [text, k, pos, min_length, max_length, initial, pattern, exclude, compare, session]
    wire([go_button.click, text.submit], handler(studio.reverse_dictionary), inputs, [words, before],
         api_name="reverse_dictionary", **QUICK)
    gr.Examples(EXAMPLES, [text], label="Examples (click one, then Find words)")


def _similarity_tab(studio: Studio, session: gr.State) -> None:
    gr.Markdown("### Two texts")
    with gr.Row():
        a = gr.Textbox(label="Text A", value="A man is playing a guitar.")
        b = gr.Textbox(label="Text B", value="Someone plays an instrument.")
    pair_button, cosine = gr.Button("Compare"), gr.Markdown()
    wire([pair_button.click, a.submit, b.submit], handler(studio.pair_similarity), [a, b, session], [cosine],
         api_name="similarity", **QUICK)

    gr.Markdown("### Similarity heatmap")
    sentences = gr.Textbox(label="Sentences, one per line", lines=5, value="A cat sits on the mat.\n"
                           "A dog lies on the rug.\nThe stock market fell sharply.\nShares dropped today.")
    heat_button, heat = gr.Button("Draw heatmap"), gr.Plot()
    wire([heat_button.click], handler(studio.heatmap), [sentences, session], [heat], api_name="heatmap", **HEAVY)

    gr.Markdown("### Semantic search")
    with gr.Row():
        query = gr.Textbox(label="Query", value="a musical instrument with strings", scale=3)
        k = gr.Slider(1, 50, value=10, step=1, label="Top k", scale=1)
    with gr.Row():
        source = gr.Dropdown([*sv.REFERENCE_CHOICES, sv.UPLOADED_FILE], value=sv.LARGEST_READY, label="Search in",
                             info=REFERENCE_INFO)
        file = gr.File(label="Text file, one sentence per line", file_types=[".txt"])
    search_button = gr.Button("Search")
    hits = gr.Dataframe(headers=["rank", "cosine", "text"], label="Results", wrap=True, elem_id="sim-hits")
    wire([search_button.click, query.submit], handler(studio.search), [query, source, file, k, session],
         [hits, session], api_name="search", **HEAVY)


def reference_choice() -> gr.Dropdown:
    """Where an analogy's or interpolation's nearest sentences come from."""
    return gr.Dropdown(list(sv.REFERENCE_CHOICES), value=sv.LARGEST_READY, label="Nearest sentences from",
                       info=REFERENCE_INFO)


def _analogy_tab(studio: Studio, session: gr.State) -> None:
    gr.Markdown("### Analogy")
    first = ANALOGY_EXAMPLES[0]
    with gr.Row():
        a = gr.Textbox(label="a", value=first.a, elem_id="an-a")
        b = gr.Textbox(label="b", value=first.b, elem_id="an-b")
        c = gr.Textbox(label="c", value=first.c, elem_id="an-c")
        expression = gr.Textbox(label="Expression", value="b - a + c")
    with gr.Row():
        analogy_refine = gr.Checkbox(value=False, label=REFINE_LABEL)
        analogy_reference = reference_choice()
    analogy_button = gr.Button("Compute", variant="primary")
    decoded = gr.Markdown()
    with gr.Row():
        words = gr.Dataframe(headers=["word", "probability"], label="Top words of the result", scale=1)
        # Widths in % of the table: without them the sentence column grows past the table's right edge.
        nearest = gr.Dataframe(headers=["rank", "cosine", "reference sentence"], label="Nearest reference sentences",
                               wrap=True, column_widths=["12%", "16%", "72%"], scale=2, elem_id="an-nearest")
    wire([analogy_button.click], handler(studio.analogy),
         [a, b, c, expression, analogy_refine, analogy_reference, session],
         [decoded, words, nearest], api_name="analogy", **DECODE)
    gr.Examples([[e.a, e.b, e.c] for e in ANALOGY_EXAMPLES], [a, b, c], label="Examples (click one, then Compute)")

    gr.Markdown("### Interpolation")
    with gr.Row():
        start = gr.Textbox(label="From", value="The weather is cold and wet.")
        end = gr.Textbox(label="To", value="I love sunny summer days.")
        steps = gr.Slider(2, 21, value=6, step=1, label="Steps")
    with gr.Row():
        path_refine = gr.Checkbox(value=False, label=REFINE_LABEL)
        path_reference = reference_choice()
    path_button = gr.Button("Interpolate")
    table = gr.Dataframe(headers=["alpha", "decoded", "top words", "cos to From", "cos to To"], wrap=True,
                         column_widths=["10%", "38%", "28%", "12%", "12%"], elem_id="an-path")
    path = gr.Plot()
    wire([path_button.click], handler(studio.interpolation), [start, end, steps, path_refine, path_reference, session],
         [table, path], api_name="interpolate", **DECODE)


def _map_tab(demo: gr.Blocks, studio: Studio, session: gr.State) -> None:
    umap_status = gr.Markdown(studio.umap_status(), elem_id="umap-status")
    with gr.Row():
        source = gr.Radio(list(MAP_SOURCES), value=MAP_SOURCES[0], label="Points")
        size = gr.Dropdown([500, 1000, 2000, 5000], value=1000, label="Sample size")
        method = gr.Radio(list(METHODS), value="UMAP", label="Projection")
        dims = gr.Radio(["2-D", "3-D"], value="2-D", label="Dimensions")
        colour = gr.Radio(list(COLOUR_BY), value=COLOUR_BY[0], label="Colour by")
    with gr.Row():
        sentences = gr.Textbox(label="My sentences (one per line)", lines=3)
        file = gr.File(label="Or a text file, or the Embedding Projector's vectors.tsv (+ metadata.tsv)",
                       file_types=[".txt", ".tsv"], file_count="multiple")
    draw = gr.Button("Draw map", variant="primary", elem_id="map-draw")
    status = gr.Markdown(elem_id="map-status")
    plot = gr.Plot(views.placeholder_figure("Choose the points above, then press Draw map."), elem_id="map-plot")
    point = gr.Markdown("Click a point to read it whole, with its definitions.", elem_id="map-point")
    clicked = gr.Textbox(elem_id="map-click", container=False)  # written by MAP_JS, as #map-selection below
    clicked.change(handler(studio.map_point), [clicked, session], [point], api_name="map_point", **QUICK)
    with gr.Row():
        search = gr.Textbox(label="Search the map", scale=3)
        k = gr.Slider(1, MAX_MAP_NEIGHBOURS, value=10, step=1, label="Neighbours", scale=1)
        among = gr.Dropdown([MAP_POINTS, *sv.REFERENCE_CHOICES], value=MAP_POINTS, label="Among", scale=2,
                            info="another collection's texts land on the map of every word")
        search_button = gr.Button("Highlight", scale=1)
    note = gr.Markdown()
    neighbours = gr.Dataframe(headers=["rank", "cosine", "text"], wrap=True, column_widths=["12%", "16%", "72%"],
                              elem_id="map-neighbours")
    wire([draw.click], handler(studio.draw_map), [source, size, sentences, file, method, dims, colour, session],
         [plot, status, session], api_name="draw_map", **HEAVY)
    wire([search_button.click, search.submit], handler(studio.search_map), [search, k, session, among],
         [plot, note, neighbours], api_name="search_map", **QUICK)
    gr.Markdown("Select points with **Box Select** or **Lasso Select** (above the map) to list them here.")
    # the browser writes it (MAP_JS); listened to by "change": a value written by a script sends no "input"
    selection = gr.Textbox(elem_id="map-selection", container=False)
    selected_note = gr.Markdown(elem_id="map-selected-note")
    selected = gr.Dataframe(headers=["text", "group", "x", "y"], wrap=True, elem_id="map-selected",
                            column_widths=["58%", "18%", "12%", "12%"])
    selected_csv = gr.File(label="The selection as CSV", elem_id="map-selected-csv")
    selection.change(handler(studio.select_map), [selection, session], [selected, selected_note, selected_csv],
                    api_name="select_map", **QUICK)
    demo.load(None, js=MAP_JS)
    with gr.Row():
        export = gr.Button("Download this map as Projector files (vectors.tsv, metadata.tsv)", scale=1)
        exported = gr.File(label="Projector files", scale=2)
    wire([export.click], handler(studio.export_map), [session], [exported], api_name="export_map", **QUICK)

    gr.Markdown("### A description, its candidate words and their definitions on one map")
    with gr.Row():
        query = gr.Textbox(label="Description", value="a person who is in charge", scale=3)
        top = gr.Slider(2, 15, value=6, step=1, label="Candidate words", scale=1)
        candidates_method = gr.Radio(list(METHODS), value="PCA", label="Projection", scale=1)
    candidates_button = gr.Button("Draw", elem_id="cand-draw")
    candidates_plot = gr.Plot(elem_id="cand-plot")
    candidates = gr.Dataframe(headers=["word", "probability", "definitions"], wrap=True, elem_id="cand-table",
                              column_widths=["16%", "12%", "72%"])
    wire([candidates_button.click, query.submit], handler(studio.candidates_map),
         [query, top, candidates_method, session],
         [candidates_plot, candidates], api_name="candidates_map", **HEAVY)

    # Polls only while a warm-up is pending: an idle timer would keep a queue event going every 3 s.
    timer = gr.Timer(3.0, active=studio.projector.umap_pending)

    def umap_now():
        return studio.umap_status(), gr.Timer(active=studio.projector.umap_pending)
    timer.tick(umap_now, None, [umap_status, timer], api_visibility="private", show_progress="hidden")
    # The page holds the status of when the app was built: a load shows today's at once, not at the first tick.
    demo.load(umap_now, None, [umap_status, timer], api_visibility="private", show_progress="hidden")


def _finetune_tab(demo: gr.Blocks, studio: Studio, session: gr.State, stored: gr.BrowserState,
                  model_bar: tuple[Callable, list[gr.components.Component]]) -> None:
    gr.Markdown("Upload a dictionary (TSV, CSV or JSONL with columns `word`, `definition` and optionally `pos`). "
                "It is split by word: 80 % train, 10 % dev (model selection), 10 % held out for the "
                "before/after comparison. Training runs in the background: you may reload the page. "
                "Analogy and interpolation of the fine-tuned model decode with the decoder of the model you "
                "start from (no new decoder is trained); with *Measure the decoder* the job also measures how "
                "much that costs, and the Analogy tab shows it.")
    with gr.Row():
        file = gr.File(label="Dictionary file", file_types=[".tsv", ".csv", ".jsonl", ".txt"], elem_id="ft-file")
        report = gr.Textbox(label="Validation report", lines=8, elem_id="ft-report")
    with gr.Row():
        epochs = gr.Number(3, label="Epochs", minimum=0.1)
        lr = gr.Number(5e-5, label="Learning rate", minimum=1e-7)
        batch = gr.Number(16, label="Batch size", precision=0, minimum=1)
        layers = gr.Number(0, label="Train top layers (0: all)", precision=0, minimum=0)
        max_steps = gr.Number(0, label="Max steps (0: by epochs)", precision=0, minimum=0)
        evaluations = gr.Number(10, label="Dev evaluations", precision=0, minimum=1)
        seed = gr.Number(0, label="Seed", precision=0)
        measure_decoder = gr.Checkbox(False, label="Measure the decoder (how well it reads the fine-tuned model; "
                                                   "slower)")
    with gr.Row():
        start = gr.Button("Start fine-tuning", variant="primary", elem_id="ft-start")
        cancel = gr.Button("Cancel", variant="stop")
        job_id = gr.Textbox(label="Job id (paste one to follow it)", elem_id="ft-job")
    progress = gr.HTML(elem_id="ft-progress")
    curve = gr.Plot(label="Loss and dev MRR")
    with gr.Row():
        comparison = gr.Dataframe(headers=["metric", "before", "after"], label="Held-out words", elem_id="ft-compare",
                                  scale=1)
        examples = gr.Dataframe(headers=["word", "definition", "before (top 3)", "after (top 3)"], wrap=True,
                                label="Example predictions", elem_id="ft-examples", scale=2,
                                column_widths=["14%", "36%", "25%", "25%"])
    with gr.Row():
        name = gr.Textbox(label="Checkpoint name", placeholder="my-dictionary-v1")
        save = gr.Button("Save")
        activate = gr.Button("Use as the active model")
        download = gr.Button("Download")
    message = gr.Markdown(elem_id="ft-message")
    with gr.Row():
        zip_file = gr.File(label="Checkpoint (zip)", elem_id="ft-zip")
        st_file = gr.File(label="sentence-transformers folder (zip)", elem_id="ft-st-zip")
    timer = gr.Timer(1.0, active=False)

    file.change(handler(studio.validate_upload), [file, seed, session], [report, session], api_name="validate",
                **HEAVY)
    start_job = handler(studio.start_finetune)

    async def start_and_remember(state, *settings):
        job = await start_job(state, *settings)  # records the job in the session: a second Start is refused
        return job, job, state, gr.Timer(active=True)
    start.click(start_and_remember, [session, epochs, lr, batch, layers, max_steps, evaluations, seed, measure_decoder],
                [job_id, stored, session, timer], api_name="start_finetune", **QUICK)
    job_id.submit(lambda j: gr.Timer(active=True), job_id, timer, api_visibility="private")
    gr.api(handler(studio.job_active), api_name="job_active", **QUICK)  # for API clients waiting on a job

    view = handler(studio.job_view)

    async def poll(job):
        return (*await view(job), gr.Timer(active=studio.job_active(job)))
    timer.tick(poll, job_id, [progress, curve, comparison, examples, timer], show_progress="hidden",
               api_visibility="private")
    # Into the job's progress, which the polling then replaces ("Cancelling...", then the outcome).
    cancel.click(handler(studio.cancel_job), job_id, progress, api_name="cancel_finetune", **QUICK).success(
        lambda: gr.Timer(active=True), None, timer, api_visibility="private")
    refresh_models, model_components = model_bar
    save_fn = and_session(studio.save_finetuned)
    save.click(save_fn, [job_id, name, session], [message, session], api_name="save_finetuned", **MODEL).success(
        refresh_models, session, model_components, api_visibility="private")
    name.submit(save_fn, [job_id, name, session], [message, session], api_visibility="private", **MODEL).success(
        refresh_models, session, model_components, api_visibility="private")
    activate.click(and_session(studio.activate_finetuned), [job_id, session], [message, session],
                   api_name="activate_finetuned", **MODEL).success(
        refresh_models, session, model_components, api_visibility="private")
    download.click(handler(studio.download_finetuned), [job_id, session], [zip_file, st_file],
                   api_name="download_finetuned", **HEAVY)
    demo.load(lambda j: (j, gr.Timer(active=bool(j))), stored, [job_id, timer], api_visibility="private")


def _evaluate_tab(tab: gr.Tab, studio: Studio, session: gr.State) -> None:
    gr.Markdown("### Word prediction on WordNet words never seen in training (test split)")
    recorded = gr.Markdown()
    with gr.Row():
        size = gr.Dropdown([200, 1000, 4000], value=200, label="Definitions")
        compare = gr.Checkbox(True, label="Also the model before DefSent training")
        words_button = gr.Button("Evaluate word prediction")
    words = gr.Dataframe(headers=["model", "n", "MRR", "top-1", "top-3", "top-10"], elem_id="eval-words")
    wire([words_button.click], handler(studio.evaluate_words), [size, compare, session], [words],
         api_name="evaluate_words", **EVALUATE)
    tab.select(handler(studio.recorded_metrics), session, recorded, api_visibility="private")

    gr.Markdown("### Smoke set (bundled: works offline)")
    with gr.Row():
        smoke_compare = gr.Checkbox(True, label="Also the model before DefSent training", scale=3)
        smoke_button = gr.Button("Run the smoke set", scale=1, elem_id="eval-smoke-go")
    smoke = gr.Markdown(elem_id="eval-smoke")
    wire([smoke_button.click], handler(studio.evaluate_smoke), [smoke_compare, session], [smoke],
         api_name="evaluate_smoke", **EVALUATE)

    gr.Markdown("### STS (Spearman x100), next to the papers' numbers")
    gr.Markdown(PUBLIC_EVALUATE if studio.public is not None else
                f"Needs SentEval's data on this server. {GET_DATA}" if not default_data_dir() else "",
                elem_id="eval-get-data")
    with gr.Row():
        data_dir = gr.Textbox(default_data_dir() if studio.public is None else "", interactive=studio.public is None,
                              label="SentEval data folder (holds STS/, SICK/, MR/, ...)", scale=3)
        datasets = gr.CheckboxGroup(list(STS_DATASETS), value=list(QUICK_STS), label="Datasets", scale=3)
        sts_button = gr.Button("Run STS", scale=1)
    sts = gr.Markdown(elem_id="eval-sts")
    wire([sts_button.click], handler(studio.evaluate_sts), [data_dir, datasets, session], [sts],
         api_name="evaluate_sts", **EVALUATE)

    gr.Markdown("### SentEval transfer tasks (accuracy %, logistic regression on the embeddings)")
    with gr.Row():
        tasks = gr.CheckboxGroup(list(TRANSFER_TASKS), value=list(TRANSFER_TASKS), label="Tasks", scale=3)
        run_size = gr.Radio(list(TRANSFER_SIZES), value=next(iter(TRANSFER_SIZES)), label="Run size", scale=3)
        senteval_button = gr.Button("Run SentEval", scale=1)
    senteval = gr.Markdown(elem_id="eval-senteval")
    wire([senteval_button.click], handler(studio.evaluate_senteval), [data_dir, tasks, run_size, session],
         [senteval], api_name="evaluate_senteval", **EVALUATE)


def _about_tab(tab: gr.Tab, studio: Studio, session: gr.State) -> None:
    gr.Markdown(ABOUT + (PUBLIC_MODELS if studio.public is not None else SHARED_MODELS))
    active = gr.Markdown()
    manifest = gr.Code(language="json", label="Manifest of the active checkpoint")
    tab.select(handler(studio.about), session, [active, manifest], api_visibility="private")


def theme() -> gr.themes.Base:
    """The default theme with system fonts (no font downloads: the app works offline)."""
    return gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"],
                             font_mono=["ui-monospace", "monospace"])
