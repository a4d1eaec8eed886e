"""The Fine-tune tab's handlers (app/tabs/finetune.py): validate an uploaded dictionary, train on it in a
background job, follow or cancel the job, then save, activate or download the trained model.

The public server's limits (app.server.public) apply here: a quota of fine-tunes per session, one training slot
without a waiting line, a bound on the steps of a job and a disk budget for what is staged and saved.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from core.engine import Engine
from core.words import COMPACT_VECTORS
from core.runtime import return_freed_memory

from ..server.public import VISITOR, YOURS, model_cache_dir, models_bytes, reservation, reserved, session_folder
from ..settings import folder_bytes
from ..shared import services as sv
from ..shared.export import MAX_DOWNLOAD_BYTES, download_files
from ..shared.finetune import (
    FILE_FORMAT,
    UPLOADS,
    FinetuneJob,
    FinetuneResult,
    FinetuneSettings,
    comparison_rows,
    missed_note,
    discard_staged,
    expected_staged_bytes,
    model_layers,
    save_finetuned,
    stage_summary,
    training_threads,
    validate_upload,
)
from ..shared.jobs import DONE, QUEUED, RUNNING, Job, JobQueueFull
from ..shared.models import ModelSpec
from ..views import render
from .backend import TabHandlers
from .session import Session

# Public mode's messages (the limits they name are app.server.public.PublicLimits).
SLOT_BUSY = ("The training slot is busy: another visitor's fine-tune is running, and this public server trains "
             "{slots} at a time. Try again when it has finished (a few minutes).")
QUOTA_USED = ("This session has started its {n} fine-tunes, the limit per visitor on this public server. "
              "To train more, run DefSent Studio on your own machine (see the README).")
ADDRESS_QUOTA_USED = ("Your network address has started {n} fine-tunes within the hour, the limit on this public server, "
                      "so that others get the training slot too. Try again in {minutes} minutes, or run DefSent Studio "
                      "on your own machine (see the README).")
STEPS_OVER = ("These settings make {steps:,} training steps; this public server trains at most {limit:,} a job, so "
              "that the one training slot is free again soon: lower Epochs or set Max steps.")


def releasing(work: Callable[[Job], Any], release: Callable[[], None]) -> Callable[[Job], Any]:
    """`work` for the job manager, calling `release` once it has ended, however it ends (a job cancelled
    before it ran never runs it: its `on_forget` releases too)."""
    def run(job: Job) -> Any:
        try:
            return work(job)
        finally:
            release()
    return run


class FinetuneHandlers(TabHandlers):
    """Fine-tuning jobs on the shared job manager; a session keeps its upload, its jobs and, in public
    mode, its saved models."""

    def validate_upload(self, file: str | None, seed: int, session: Session) -> tuple[str, Session]:
        """The validation report of an uploaded dictionary; its rows are kept (packed, for a bounded
        time, in finetune.UPLOADS; the session holds a ticket) only when usable, and replace the
        session's previous upload. The uploaded file itself is deleted once read (valid or not)."""
        UPLOADS.discard(session.upload)
        session.upload = None
        if not file:
            return f"Upload a dictionary file. {FILE_FORMAT}", session
        try:
            session.upload = UPLOADS.keep(validate_upload(self.backend.model_for(session).engine, file, seed),
                                           VISITOR.get() or "")
        except ValueError as err:
            return f"Not usable:\n{err}", session
        except FileNotFoundError:  # e.g. removed from gradio's temp folder; its path means nothing to users
            return "Not usable: the uploaded file is gone; upload it again.", session
        finally:
            sv.discard_upload(file)
            # Reading a file of megabytes leaves tens of MB of freed heap in the arenas of the server's
            # worker threads: 40 uploads of 2.6 MB grew the app by 131 MB, a fourth of it the kept uploads.
            return_freed_memory()
        return session.upload.report + "\n\n" + self._ready_line(session), session

    def _ready_line(self, session: Session) -> str:
        """"Ready" only when a run with the default settings would start on the validated upload."""
        try:
            self._check_run(FinetuneSettings(), UPLOADS.get(session.upload).train_size,
                            model_layers(self.backend.model_for(session).engine))
        except ValueError as err:
            return f"With the default settings it would not start: {err}"
        return "Ready: press Start."

    def _check_run(self, settings: FinetuneSettings, train_size: int, layers: int) -> None:
        """ValueError when `settings` cannot train on `train_size` definitions here (their ranges, the
        run's length, and on a public server its step limit)."""
        settings.check(train_size, layers)
        public = self.backend.public
        if public is not None and settings.total_steps(train_size) > public.max_training_steps:
            raise ValueError(STEPS_OVER.format(steps=settings.total_steps(train_size), limit=public.max_training_steps))

    def restore_upload(self, ticket: str, session: Session) -> tuple[str, Session]:
        """After a page reload: the validated upload whose ticket the browser kept, back in the new
        session with its report ("" and no upload when the server no longer keeps it)."""
        upload = UPLOADS.find(ticket) if ticket else None
        if upload is None:
            return "", session
        session.upload = upload
        return (f"{upload.name} (validated before the page was reloaded)\n{upload.report}\n\n"
                + self._ready_line(session)), session

    def start_finetune(self, session: Session, epochs: float, lr: float, batch_size: int,
                       trainable_layers: int, max_steps: int, evaluations: int, seed: int,
                       measure_decoder: bool = False) -> str:
        """Queue a fine-tuning job on the validated upload; returns the job id. ValueError when the
        upload has expired, a setting is out of its range (finetune.setting_bounds) or the job queue
        is full: then nothing is queued."""
        if session.upload is None:
            raise ValueError("Upload and validate a dictionary first.")
        self._refuse_a_second_job(session)
        public = self.backend.public
        if public is not None and len(session.jobs) >= public.finetunes_per_session:
            raise ValueError(QUOTA_USED.format(n=public.finetunes_per_session))
        address = VISITOR.get() or ""  # the visitor's (public mode)
        wait = self.backend.finetune_starts.wait(address) if public is not None else 0.0
        if wait > 0:
            raise ValueError(ADDRESS_QUOTA_USED.format(n=public.finetunes_per_address_hour,
                                                       minutes=max(1, math.ceil(wait / 60))))
        upload = UPLOADS.get(session.upload)
        active = self.backend.model_for(session)
        layers = model_layers(active.engine)
        settings = FinetuneSettings.from_form(layers, measure_decoder, epochs=epochs, lr=lr, batch_size=batch_size,
                                              trainable_layers=trainable_layers, max_steps=max_steps,
                                              evaluations=evaluations, seed=seed)
        self._check_run(settings, upload.train_size, layers)  # now, not in the background: the run's length too
        # The training process writes the staged model: its room is reserved until the job has ended (public mode).
        release = reservation(expected_staged_bytes(active.spec.path, active.engine) if public is not None else 0,
                              "the fine-tuned model")
        work = FinetuneJob(active.spec, upload, settings, training_threads(public=public is not None))
        try:
            job = self.backend.jobs.submit(releasing(work, release),
                                           f"Fine-tune {active.spec.name} on {upload.name}: {settings.summary()}",
                                           on_forget=lambda job: (release(), discard_staged(job)))
        except JobQueueFull:
            release()
            if public is None:
                raise
            raise ValueError(SLOT_BUSY.format(slots=public.training_slots)) from None
        session.jobs.append(job.id)
        if public is not None:  # counted once it started: a refusal (the slot busy) costs no start
            self.backend.finetune_starts.record(address)
        return job.id

    def _refuse_a_second_job(self, session: Session) -> None:
        """A second Start click would queue a duplicate run: one job per session at a time."""
        job = self.backend.known_job(session.job)
        if job is not None and job.status in (QUEUED, RUNNING):
            raise ValueError(f"Your fine-tuning job {job.id} is still {job.status}: wait for it to end, "
                             "or cancel it, before starting another.")

    def job_view(self, job_id: str):
        """(progress HTML, training figure, before/after rows, example rows) of a job; for an id this server does
        not know, why, once in the progress (the page polls this: an error would repeat at every tick)."""
        if not (job_id or "").strip():
            return "", None, [], []
        try:
            job = self.backend.jobs.get(job_id)
        except ValueError as err:
            return render.notice_html(str(err)), None, [], []
        shown = self._job_state(job)
        # what the job is, above its state: a page that follows a pasted id still shows its own form's settings
        return (render.job_description_html(job.description) + shown[0], *shown[1:])

    def _job_state(self, job: Job):
        """job_view's four outputs for a known job, its state in the progress."""
        jobs = self.backend.jobs
        history = job.progress.get("history")
        figure = render.training_figure(history) if history else None
        if job.status == QUEUED:
            note = (f"Queued behind {jobs.queue_position(job.id)} job(s) on this server (at most {jobs.max_running} "
                    "run at a time).")
            return render.progress_html(0, note), None, [], []
        if job.status == RUNNING and job.cancel_requested.is_set():  # until the process has stopped
            return render.busy_html("Cancelling..."), figure, [], []
        if job.status == RUNNING:
            return render.job_progress_html(job.progress), figure, [], []
        if job.status != DONE:
            return render.progress_html(0, f"Job {job.status}: {job.error}"), figure, [], []
        result: FinetuneResult = job.result
        examples = [[e["word"], e["definition"], e["before"], e["after"]] for e in result.examples]
        took = stage_summary(result.training["stage_seconds"])
        missed = f" {missed_note(result.missed)}" if result.missed else ""
        done = render.progress_html(1, f"Done in {took}.{missed} Held-out words before and after:")
        return done, figure, comparison_rows(result), examples

    def job_to_follow(self, stored: str) -> str:
        """The job a (re)loaded page follows: the one its browser kept, while this server knows it; else, on a private
        server, the fine-tune queued or running now (the last started), so that a page reloaded before its browser
        kept the id (or opened in another browser) still finds it (issue 76); "". A public server never shows a
        visitor another's job."""
        if self.backend.known_job(stored) is not None:
            return stored.strip()
        unfinished = self.backend.jobs.unfinished() if self.backend.public is None else []
        return unfinished[-1].id if unfinished else ""

    def job_active(self, job_id: str) -> bool:
        """True while the job is queued or running (the UI keeps polling); False for an id this server does not know."""
        try:
            return bool((job_id or "").strip()) and self.backend.jobs.get(job_id).status in (QUEUED, RUNNING)
        except ValueError:
            return False

    def cancel_job(self, job_id: str) -> str:
        """Ask the job to stop; its polled progress reads "Cancelling..." until it has."""
        job = self.backend.jobs.get(job_id)
        if job.status not in (QUEUED, RUNNING):
            return f"The job is already {job.status}: nothing to cancel."
        job = self.backend.jobs.cancel(job_id)
        return f"Cancellation requested (job is {job.status})."

    def _finished(self, job_id: str) -> FinetuneResult:
        job = self.backend.jobs.get(job_id)
        if job.status != DONE:
            raise ValueError(f"The job is {job.status}; wait until it is done.")
        return job.result

    def save_finetuned(self, job_id: str, name: str, session: Session | None = None,
                       progress: sv.Progress = sv.no_progress) -> str:
        """Save the job's trained model as a named checkpoint (ValueError: name taken, disk full, ...):
        in checkpoints/, or in public mode in the session's own folder, within the disk budget."""
        result, public = self._finished(job_id), self.backend.public
        progress(0.2, desc="saving")
        if public is None:
            result.saved = save_finetuned(result, name, self.backend.models.checkpoints)
            return f"Saved as checkpoint `{result.saved.name}` in {result.saved.parent}."
        if session is None:
            raise ValueError("Saving on this public server needs your session.")
        with reserved(folder_bytes(result.checkpoint), "this model") as written:
            path = save_finetuned(result, name, session_folder(session.folder_key()))
            written.append(path)
        session.saved[job_id] = str(path)
        return (f"Saved as `{YOURS}{path.name}`, for this session only: choose it in the model list, or press "
                "'Use as the active model'. This server deletes it an hour after you close this page, or "
                f"{public.session_lifetime / 3600:g} hours after your last save or model choice; Download keeps a "
                "copy.")

    def _saved_path(self, job_id: str, session: Session | None = None) -> Path:
        if self.backend.public is not None:
            self._finished(job_id)
            saved = session.saved.get(job_id) if session is not None else None
            path = Path(saved) if saved else None
            if path is not None and not path.is_dir():
                raise ValueError("Your saved model is no longer kept on this server (saved models expire); save it "
                                 "again.")
        else:
            path = self._finished(job_id).saved
        if path is None:
            raise ValueError("Save the model under a name first.")
        return path

    def activate_finetuned(self, job_id: str, session: Session | None = None,
                           progress: sv.Progress = sv.no_progress) -> str:
        """Make the saved fine-tuned checkpoint the active model (once prepared): for every user, or
        in public mode for this session only."""
        path = self._saved_path(job_id, session)
        if self.backend.public is not None:
            return self.backend.choose_model(YOURS + path.name, session, progress)[0]
        self.backend.models.switch(ModelSpec(path.name, path), progress)
        return self.backend.models.status()

    def download_finetuned(self, job_id: str, session: Session | None = None,
                           progress: sv.Progress = sv.no_progress) -> tuple[str, str]:
        """(checkpoint zip, sentence-transformers zip) of the saved model; in public mode the zips share
        the disk budget with the saved models."""
        path = self._saved_path(job_id, session)
        engine = Engine.load(path, device="cpu")
        progress(0.1, desc="the open vocabulary's compact vectors")
        carry_compact_vectors(engine, path)
        progress(0.2, desc="exporting")
        limit = {}
        if self.backend.public is not None:
            limit["max_bytes"] = min(MAX_DOWNLOAD_BYTES, self.backend.public.disk_bytes - models_bytes())
        # the paths, as strings, where Gradio serves the files
        return tuple(str(p) for p in download_files(engine, path, **limit))


def carry_compact_vectors(engine: Engine, checkpoint: Path) -> None:
    """Put the open vocabulary's compact vectors (a few MB) into a saved checkpoint, as the shipped one has
    them, so that its download answers its first word query within a minute anywhere instead of
    embedding 264k texts (half an hour on 2 cores). Made from the vectors at hand only (its own cached
    ones, else its parent's with its new words embedded: seconds); never by embedding them all here."""
    if (checkpoint / COMPACT_VECTORS).is_file():
        return
    cache = model_cache_dir(checkpoint, "open-vocab")
    if engine.vocabulary.vectors_at_hand(cache):
        engine.vocabulary.save_compact(reuse=True, cache_dir=cache)
