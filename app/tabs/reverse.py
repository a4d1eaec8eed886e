"""The Reverse dictionary tab: describe a word, get words (with filters and a side-by-side compare)."""
from __future__ import annotations

import gradio as gr

from core.answers import EXCLUDE_QUERY_WORDS

from ..handlers import Studio
from ..shared.services import POS_CODES
from ..wiring import QUICK, handler, wire
from .shared import vocabulary_progress

EXAMPLES = ["a person who is in charge", "a large grey animal with a trunk", "a building where people live",
            "to move quickly on foot", "feeling or showing pleasure", "a place where books are kept"]


def create(studio: Studio, session: gr.State) -> None:
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
                exclude = gr.Checkbox(EXCLUDE_QUERY_WORDS, label="Exclude the words of my description")
            compare = gr.Checkbox(label="Compare with the model before DefSent training, side by side")
            go_button = gr.Button("Find words", variant="primary", elem_id="rd-go")
        with gr.Column(scale=2) as answers:
            words = gr.HTML(elem_id="rd-words")
        with gr.Column(scale=2):
            before = gr.HTML(elem_id="rd-before")
    inputs = [text, k, pos, min_length, max_length, initial, pattern, exclude, compare, session]
    answered = wire([go_button.click, text.submit], handler(studio.reverse.reverse_dictionary), inputs,
                    [words, before], api_name="reverse_dictionary", **QUICK)
    with answers:  # under the words
        vocabulary_progress(studio, session, [answered])
    gr.Examples(EXAMPLES, [text], label="Examples (click one, then Find words)")
