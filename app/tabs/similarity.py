"""The Similarity tab: a pair's cosine, a heatmap of several sentences, semantic search."""
from __future__ import annotations

import gradio as gr

from ..handlers import MY_COLLECTION, Studio
from ..shared import services as sv
from ..wiring import HEAVY, QUICK, handler, wire
from .shared import COLLECTION_PLACEHOLDER, REFERENCE_INFO, vocabulary_progress


def create(studio: Studio, session: gr.State) -> None:
    gr.Markdown("### Two texts")
    with gr.Row():
        a = gr.Textbox(label="Text A", value="A man is playing a guitar.")
        b = gr.Textbox(label="Text B", value="Someone plays an instrument.")
    pair_button, cosine = gr.Button("Compare"), gr.Markdown()
    wire([pair_button.click, a.submit, b.submit], handler(studio.similarity.pair_similarity), [a, b, session], [cosine],
         api_name="similarity", **QUICK)

    gr.Markdown("### Similarity heatmap")
    sentences = gr.Textbox(label="Sentences, one per line", lines=5, value="A cat sits on the mat.\n"
                           "A dog lies on the rug.\nThe stock market fell sharply.\nShares dropped today.")
    heat_button, heat = gr.Button("Draw heatmap"), gr.Plot()
    wire([heat_button.click], handler(studio.similarity.heatmap), [sentences, session], [heat], api_name="heatmap",
         **HEAVY)

    gr.Markdown("### Semantic search")
    with gr.Row():
        query = gr.Textbox(label="Query", value="a musical instrument with strings", scale=3)
        k = gr.Slider(1, 50, value=10, step=1, label="Top k", scale=1)
    local = studio.public is None  # a collection is opened by its path on a server of one's own only
    with gr.Row():
        source = gr.Dropdown([*sv.REFERENCE_CHOICES, sv.UPLOADED_FILE, *([MY_COLLECTION] if local else [])],
                             value=sv.LARGEST_READY, label="Search in", info=REFERENCE_INFO, elem_id="sim-source")
        file = gr.File(label="Text file, one sentence per line", file_types=[".txt"], elem_id="sim-file")
    collection = gr.Textbox(label=f"Collection path (for {MY_COLLECTION!r})", placeholder=COLLECTION_PLACEHOLDER,
                            visible=local, elem_id="sim-collection")
    search_button = gr.Button("Search")
    with gr.Column() as notices:
        search_notice = gr.HTML()
    hits = gr.Dataframe(headers=["rank", "cosine", "text"], label="Results", wrap=True, elem_id="sim-hits")
    searched = wire([search_button.click, query.submit], handler(studio.similarity.search),
                    [query, source, file, k, session, collection], [hits, search_notice, session], api_name="search",
                    **HEAVY)
    with notices:  # under the notice
        vocabulary_progress(studio, session, [searched])
