"""The whole app assembled: the model bar, then one tab per module of app/tabs/ (each lays itself out and
wires its events through app/wiring.py's `handler` to its handlers beside it in app/handlers/), styled by
app/style.css."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import gradio as gr

from .handlers import Session, Studio
from .settings import UPLOAD_LIFETIME_S
from .tabs import about, analogy, evaluate, finetune, reverse, similarity
from .tabs import map as map_tab
from .wiring import MODEL, StudioBlocks, handler, running_work

JOB_STORAGE_KEY = "defsent-studio-job"
UPLOAD_STORAGE_KEY = "defsent-studio-upload"  # the ticket of the validated fine-tune upload
UPLOAD_LIFETIME = (600, UPLOAD_LIFETIME_S)  # gradio delete_cache: (every N seconds, files older than M seconds)
CSS = (Path(__file__).parent / "style.css").read_text(encoding="utf-8")


def build_app(studio: Studio) -> gr.Blocks:
    """The whole app: a model bar on top, then the seven tabs."""
    # Gradio keeps uploads (and copies of downloads) in its temp folder: delete them after an hour. A
    # dictionary is read into memory when validated; a search file that is gone asks for a new upload.
    with StudioBlocks(title="DefSent Studio", analytics_enabled=False, delete_cache=UPLOAD_LIFETIME) as demo:
        # Public mode: a session's state (its model choice and saved models) ends after a lifetime unchanged.
        lifetime = studio.public.session_lifetime if studio.public is not None else None
        session = gr.State(Session(), time_to_live=lifetime, delete_callback=_session_ender(studio))
        stored_job = gr.BrowserState("", storage_key=JOB_STORAGE_KEY)  # outside the tabs: read at page load
        stored_upload = gr.BrowserState("", storage_key=UPLOAD_STORAGE_KEY)
        gr.Markdown("# DefSent Studio\nWhat sentence embeddings mean: describe a word, compare sentences, "
                    "walk between them, map them, fine-tune on your own dictionary.")
        model_bar = _model_bar(demo, studio, session)
        with gr.Tabs(overflow_behavior="wrap"):  # on a phone every tab stays in sight (not behind "···")
            with gr.Tab("Reverse dictionary", id="reverse"):
                reverse.create(studio, session)
            with gr.Tab("Similarity", id="similarity"):
                similarity.create(studio, session)
            with gr.Tab("Analogy & interpolation", id="analogy"):
                analogy.create(studio, session)
            with gr.Tab("Map", id="map"):
                map_tab.create(demo, studio, session)
            with gr.Tab("Fine-tune", id="finetune"):
                finetune.create(demo, studio, session, stored_job, stored_upload, model_bar)
            with gr.Tab("Evaluate", id="evaluate") as evaluate_tab:
                evaluate.create(evaluate_tab, studio, session)
            with gr.Tab("About", id="about") as about_tab:
                about.create(about_tab, studio, session)
        # Outside the queue: it answers even while every pool is busy, and it only reads two counters.
        gr.api(running_work, api_name="running_work", queue=False)
    return demo


def _session_ender(studio: Studio) -> Callable[[Session], None]:
    """`studio.end_session` as a plain function. Gradio deep-copies every component's config at each page
    load, the State's delete callback included: a bound method is copied with its object (every model and
    vector, seconds and gigabytes a load), while a function is copied as itself."""
    def end_session(session: Session) -> None:
        studio.end_session(session)
    return end_session


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
    # A page opened while the model loads (its whole vocabulary is read before its first answer: ~20 s on a fresh
    # start) asks again every 2 s until it is up: it said "Loading the model..." beside the first answers.
    loading = gr.Timer(2.0, active=False)

    def until_loaded(state):
        return *refresh(state), gr.Timer(active=studio.models.loading)  # a failed load: said once, not polled
    demo.load(until_loaded, session, [choice, status, loading], api_visibility="private")
    loading.tick(until_loaded, session, [choice, status, loading], queue=False, show_progress="hidden",
                 api_visibility="private")
    choice.focus(relist, session, choice, queue=False, show_progress="hidden", api_visibility="private")
    return refresh, [choice, status]


def theme() -> gr.themes.Base:
    """The default theme with system fonts (no font downloads: the app works offline)."""
    return gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"],
                             font_mono=["ui-monospace", "monospace"])
