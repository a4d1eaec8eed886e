"""The Fine-tune tab: upload a dictionary, train in a background job, compare, save, download."""
from __future__ import annotations

from typing import Callable

import gradio as gr

from ..handlers import Studio
from ..shared.finetune import FILE_FORMAT, MIN_STEPS
from ..wiring import HEAVY, MODEL, QUICK, and_session, handler, without_error_badges


def create(demo: gr.Blocks, studio: Studio, session: gr.State, stored: gr.BrowserState,
           stored_upload: gr.BrowserState, model_bar: tuple[Callable, list[gr.components.Component]]) -> None:
    """`stored` keeps the job id in the browser, `stored_upload` the validated upload's ticket: after a
    reload the page follows the job and has the upload and its report back."""
    gr.Markdown(f"Upload a dictionary. {FILE_FORMAT}\n\n"
                "It is split by word: 80 % train, 10 % dev (model selection), 10 % held out for the "
                "before/after comparison (the report names them). Training runs in the background: you may reload "
                "the page. Analogy and interpolation of the fine-tuned model decode with the decoder of the model "
                "you start from (no new decoder is trained); with *Measure the decoder* the job also measures how "
                "much that costs, and the Analogy tab shows it.")
    with gr.Row():
        # The minimum widths stack the pairs on a phone: side by side at 420 px the report was 12 characters wide.
        file = gr.File(label="Dictionary file", file_types=[".tsv", ".csv", ".jsonl", ".txt"], elem_id="ft-file",
                       min_width=320)
        report = gr.Textbox(label="Validation report", lines=8, elem_id="ft-report", min_width=320)
    with gr.Row():
        epochs = gr.Number(3, label="Epochs", minimum=0.1)
        lr = gr.Number(5e-5, label="Learning rate", minimum=1e-7)
        batch = gr.Number(16, label="Batch size", precision=0, minimum=1)
        layers = gr.Number(0, label="Train top layers (0: all)", precision=0, minimum=0)
        max_steps = gr.Number(0, label=f"Max steps (0: by epochs, at least {MIN_STEPS})", precision=0, minimum=0)
        evaluations = gr.Number(10, label="Dev evaluations", precision=0, minimum=1)
        seed = gr.Number(0, label="Seed", precision=0)
    # A row of its own: beside the seven numbers it got a column one word wide (issue 54).
    measure_decoder = gr.Checkbox(False, label="Measure the decoder (how well it reads the fine-tuned model; slower)",
                                  elem_id="ft-measure")
    with gr.Row():
        start = gr.Button("Start fine-tuning", variant="primary", elem_id="ft-start")
        # Red and pressable only while a job runs: bright red beside no job it looked like an alarm (issue 76)
        cancel = gr.Button("Cancel", variant="secondary", interactive=False, elem_id="ft-cancel")
        job_id = gr.Textbox(label="Job id (paste one to follow it)", elem_id="ft-job")
    progress = gr.HTML(elem_id="ft-progress")
    curve = gr.Plot(label="Loss and dev MRR")
    with gr.Row():
        comparison = gr.Dataframe(headers=["metric", "before", "after"], label="Held-out words", elem_id="ft-compare",
                                  wrap=True, scale=1, min_width=320)
        examples = gr.Dataframe(headers=["word", "definition", "before (top 3)", "after (top 3)"], wrap=True,
                                label="Example predictions", elem_id="ft-examples", scale=2, min_width=320)
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

    # The ticket goes to the browser in a private step: the "validate" API answers the report alone, as before.
    file.change(handler(studio.finetune.validate_upload), [file, seed, session], [report, session], api_name="validate",
                **HEAVY).then(lambda state: state.upload.ticket if state.upload is not None else "", session,
                              stored_upload, api_visibility="private")
    demo.load(handler(studio.finetune.restore_upload), [stored_upload, session], [report, session],
              api_visibility="private")
    start_job = handler(studio.finetune.start_finetune)

    async def start_and_remember(state, *settings):
        job = await start_job(state, *settings)  # records the job in the session: a second Start is refused
        return job, job, state, gr.Timer(active=True)
    # A refused start (no dictionary yet, a job running) says why in its toast alone (the Job id box kept a badge).
    started = start.click(start_and_remember, [session, epochs, lr, batch, layers, max_steps, evaluations, seed,
                                               measure_decoder], [job_id, stored, session, timer],
                          api_name="start_finetune", **QUICK)
    without_error_badges(started, [job_id])
    started.success(lambda: cancel_button(True), None, cancel, queue=False, api_visibility="private")
    job_id.submit(lambda j: gr.Timer(active=True), job_id, timer, api_visibility="private")
    gr.api(handler(studio.finetune.job_active), api_name="job_active", **QUICK)  # for API clients waiting on a job

    view = handler(studio.finetune.job_view)

    async def poll(job):
        active = studio.finetune.job_active(job)
        return (*await view(job), gr.Timer(active=active), cancel_button(active))
    timer.tick(poll, job_id, [progress, curve, comparison, examples, timer, cancel], show_progress="hidden",
               api_visibility="private")
    # Into the job's progress, which the polling then replaces ("Cancelling...", then the outcome).
    cancel.click(handler(studio.finetune.cancel_job), job_id, progress, api_name="cancel_finetune", **QUICK).success(
        lambda: gr.Timer(active=True), None, timer, api_visibility="private")
    refresh_models, model_components = model_bar
    save_fn = and_session(studio.finetune.save_finetuned)
    saved = save.click(save_fn, [job_id, name, session], [message, session], api_name="save_finetuned", **MODEL)
    saved.success(refresh_models, session, model_components, api_visibility="private")
    saved_on_enter = name.submit(save_fn, [job_id, name, session], [message, session], api_visibility="private",
                                 **MODEL)
    saved_on_enter.success(refresh_models, session, model_components, api_visibility="private")
    activated = activate.click(and_session(studio.finetune.activate_finetuned), [job_id, session], [message, session],
                               api_name="activate_finetuned", **MODEL)
    activated.success(refresh_models, session, model_components, api_visibility="private")
    downloaded = download.click(handler(studio.finetune.download_finetuned), [job_id, session], [zip_file, st_file],
                                api_name="download_finetuned", **HEAVY)
    # a refused save, activation or download (the job still running, no name): its toast alone
    for event, outputs in ((saved, [message]), (saved_on_enter, [message]), (activated, [message]),
                           (downloaded, [zip_file, st_file])):
        without_error_badges(event, outputs)
    def follow(kept: str):
        job = studio.finetune.job_to_follow(kept)
        return job, job, gr.Timer(active=bool(job))
    demo.load(follow, stored, [job_id, stored, timer], api_visibility="private")


def cancel_button(running: bool) -> gr.Button:
    """The Cancel button as a job's state wants it: red and pressable while it is queued or running, else neither."""
    return gr.Button(variant="stop" if running else "secondary", interactive=running)
