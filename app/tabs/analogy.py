"""The Analogy & interpolation tab: b - a + c and the path between two sentences, decoded."""
from __future__ import annotations

import gradio as gr

from core.vec2sent import ANALOGY_EXAMPLES

from ..handlers import Studio
from ..wiring import DECODE, handler, wire
from .shared import REFINE_LABEL, reference_choice

DECODE_EXAMPLE = "Heavy storms expected tonight, stay safe everyone"


def create(studio: Studio, session: gr.State) -> None:
    gr.Markdown("### Analogy")
    first = ANALOGY_EXAMPLES[0]
    with gr.Row():
        a = gr.Textbox(label="a", value=first.a, elem_id="an-a")
        b = gr.Textbox(label="b", value=first.b, elem_id="an-b")
        c = gr.Textbox(label="c", value=first.c, elem_id="an-c")
        expression = gr.Textbox(label="Expression", value="b - a + c")
    with gr.Row():
        analogy_refine = gr.Checkbox(value=False, label=REFINE_LABEL)
        analogy_reference = reference_choice(studio)
    analogy_button = gr.Button("Compute", variant="primary")
    decoded = gr.Markdown()
    # The minimum widths stack the two tables on a phone (side by side at 420 px each was 160 px wide). Every
    # table sizes its columns to their content (app/style.css): no column widths in % (a 12 % column broke
    # numbers into one digit a line at 420 px).
    with gr.Row():
        words = gr.Dataframe(headers=["word", "score (first = 100)"], label="Top words of the result", wrap=True,
                             scale=1, min_width=240, elem_id="an-words")
        nearest = gr.Dataframe(headers=["rank", "cosine", "reference sentence"], label="Nearest reference sentences",
                               wrap=True, scale=2, min_width=320, elem_id="an-nearest")
    wire([analogy_button.click], handler(studio.analogy.analogy),
         [a, b, c, expression, analogy_refine, analogy_reference, session],
         [decoded, words, nearest], api_name="analogy", **DECODE)
    gr.Examples([[e.a, e.b, e.c] for e in ANALOGY_EXAMPLES], [a, b, c], label="Examples (click one, then Compute)")

    gr.Markdown("### Decode a sentence\nWhat the decoder reads back from one text's vector: paste a headline, a "
                "tweet, anything. The closer its sentence is to yours, the more of your text the vector keeps.")
    with gr.Row():
        text = gr.Textbox(label="Sentence", value=DECODE_EXAMPLE, scale=3, elem_id="an-text")
        decode_refine = gr.Checkbox(value=False, label=REFINE_LABEL, scale=1)
    decode_button = gr.Button("Decode")
    read_back = gr.Markdown(elem_id="an-read-back")
    wire([decode_button.click, text.submit], handler(studio.analogy.decode), [text, decode_refine, session],
         [read_back], api_name="decode", **DECODE)

    gr.Markdown("### Interpolation")
    with gr.Row():
        start = gr.Textbox(label="From", value="The weather is cold and wet.")
        end = gr.Textbox(label="To", value="I love sunny summer days.")
        steps = gr.Slider(2, 21, value=6, step=1, label="Steps")
    with gr.Row():
        path_refine = gr.Checkbox(value=False, label=REFINE_LABEL)
        path_reference = reference_choice(studio)
    path_button = gr.Button("Interpolate")
    # per step: its sentence's cosine to its point ("fit") and to the two ends; the chart draws them
    table = gr.Dataframe(headers=["alpha", "sentence", "fit", "to From", "to To", "top words", "nearest"], wrap=True,
                         elem_id="an-path")
    path = gr.Plot()
    wire([path_button.click], handler(studio.analogy.interpolation),
         [start, end, steps, path_refine, path_reference, session], [table, path], api_name="interpolate", **DECODE)
