"""The Evaluate tab: STS and SentEval transfer tasks on the active model."""
from __future__ import annotations

import gradio as gr

from ..handlers import PUBLIC_EVALUATE, Studio
from ..shared.evaluation import (
    GET_DATA,
    QUICK_STS,
    STS_DATASETS,
    TRANSFER_SIZES,
    TRANSFER_TASKS,
    default_data_dir,
)
from ..wiring import EVALUATE, handler, wire


def create(tab: gr.Tab, studio: Studio, session: gr.State) -> None:
    gr.Markdown("### Word prediction on WordNet words never seen in training (test split)")
    recorded = gr.Markdown()
    with gr.Row():
        size = gr.Dropdown([200, 1000, 4000], value=200, label="Definitions")
        compare = gr.Checkbox(True, label="Also the model before DefSent training")
        words_button = gr.Button("Evaluate word prediction")
    words = gr.Dataframe(headers=["model", "n", "MRR", "top-1", "top-3", "top-10"], wrap=True,
                         elem_id="eval-words")
    wire([words_button.click], handler(studio.evaluate.evaluate_words), [size, compare, session], [words],
         api_name="evaluate_words", **EVALUATE)
    tab.select(handler(studio.evaluate.recorded_metrics), session, recorded, api_visibility="private")

    gr.Markdown("### Smoke set (bundled: works offline)")
    with gr.Row():
        smoke_compare = gr.Checkbox(True, label="Also the model before DefSent training", scale=3)
        smoke_button = gr.Button("Run the smoke set", scale=1, elem_id="eval-smoke-go")
    smoke = gr.Markdown(elem_id="eval-smoke")
    wire([smoke_button.click], handler(studio.evaluate.evaluate_smoke), [smoke_compare, session], [smoke],
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
    wire([sts_button.click], handler(studio.evaluate.evaluate_sts), [data_dir, datasets, session], [sts],
         api_name="evaluate_sts", **EVALUATE)

    gr.Markdown("### SentEval transfer tasks (accuracy %, logistic regression on the embeddings)")
    with gr.Row():
        tasks = gr.CheckboxGroup(list(TRANSFER_TASKS), value=list(TRANSFER_TASKS), label="Tasks", scale=3)
        run_size = gr.Radio(list(TRANSFER_SIZES), value=next(iter(TRANSFER_SIZES)), label="Run size", scale=3)
        senteval_button = gr.Button("Run SentEval", scale=1)
    senteval = gr.Markdown(elem_id="eval-senteval")
    wire([senteval_button.click], handler(studio.evaluate.evaluate_senteval), [data_dir, tasks, run_size, session],
         [senteval], api_name="evaluate_senteval", **EVALUATE)
