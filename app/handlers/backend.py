"""What every tab's handlers share, between all users: the models, the projector, the job manager and
the public limits; which model answers a session; and the handlers of the model bar and the About tab,
which speak of that model.

Per-user data travels in a `Session` (app.handlers.session); nothing per-user is stored here.
Invalid input raises ValueError with a readable message (the UI shows it as an error toast).
"""
from __future__ import annotations

import json

from core.checkpoint import CheckpointError

from ..messages import naming_only, quoted
from ..server.public import (
    YOURS,
    DiskBudget,
    PublicLimits,
    RecentStarts,
    remove_all_sessions,
    remove_session,
    session_folder,
    use_disk_budget,
)
from ..shared import services as sv
from ..shared.finetune import UPLOADS, discard_staged, remove_leftovers
from ..shared.jobs import QUEUED, RUNNING, Job, JobManager
from ..shared.models import ActiveModel, Models, ModelSpec, checkpoint_specs
from ..views import render
from ..views.projection import Projector
from .session import HeldVectors, Session

# The base before DefSent training is offered for comparison only: its word head was never trained.
BASE_WARNING_SHORT = "untrained, word predictions are noise"
BASE_WARNING = ("**Warning:** this is the untrained base: its word head was never trained, so its word predictions are "
                "noise (reverse dictionary, top words). It is here to compare with; similarity still works.")

# A session's chosen model, unloaded for others' (public mode): the model chooser loads it again, in the model pool.
MODEL_UNLOADED = ("Your model {name} was unloaded to make room for other visitors' models (this public server keeps "
                  "{kept} loaded besides its own): press Use this model to load it again, then ask again.")


class Backend:
    """Shared between users: models, projector, jobs. Each tab's handlers hold it (app.handlers.Studio).

    Making one changes nothing outside it; the server's start (`start`) cleans up and holds every visitor's write
    to its disk budget.
    """

    def __init__(self, models: Models, projector: Projector | None = None, jobs: JobManager | None = None,
                 public: PublicLimits | None = None):
        self.models = models
        self.projector = projector or Projector()
        # Public mode (app.server.public): per-session models and saves, quotas, a disk budget; None: a private server.
        self.public = public
        self.disk_budget = DiskBudget(public) if public is not None else None  # in force from `start`
        # the fine-tunes each address started within the hour (public mode)
        self.finetune_starts = RecentStarts(public.finetunes_per_address_hour, 3600.0) if public is not None else None
        # the vectors sessions keep (their maps, their searched files): bounded on the whole server in public mode
        self.held_vectors = HeldVectors(public.session_vectors_bytes if public is not None else None)
        if public is not None:  # models chosen by sessions stay loaded, a few at a time
            models.keep_loaded = public.loaded_models
            models.public = True
        # In public mode the training slots have no waiting line: a Start while they are taken is refused.
        self.jobs = jobs or (JobManager(public.training_slots, 0) if public else JobManager())

    def start(self) -> None:
        """The server's start (app.handlers.start_studio), which changes the process's state: removes what killed
        processes left behind (finetune.remove_leftovers) and, in public mode, every session's saved models (no
        session outlives its server); then every visitor's write, wherever it happens, checks this server's disk
        budget (none on a private server)."""
        remove_leftovers(self.models.checkpoints)
        if self.public is not None:
            remove_all_sessions()
        use_disk_budget(self.disk_budget)

    # ---- the model a request uses -----------------------------------------------------------------
    def _session_model(self, session: Session | None) -> str:
        """The model this session chose: "" on a private server (one model for all) or when it chose none."""
        return session.model if self.public is not None and session is not None else ""

    def model_for(self, session: Session | None = None) -> ActiveModel:
        """The model that answers this session: its own choice in public mode, else the active model. Never loads a
        model: only the model chooser does (`choose_model`, in the model pool), so a request of another pool (the
        quick one's two slots above all, or a poll outside the queue) is never held up by a load and preparation
        (tens of seconds). ValueError (MODEL_UNLOADED) when the session's model was unloaded to make room for
        others' (public mode keeps `PublicLimits.loaded_models` besides the server's)."""
        name = self._session_model(session)
        if not name:
            return self.models.active()
        model = self.models.loaded(self._spec_named(name, session))
        if model is None:
            raise ValueError(MODEL_UNLOADED.format(name=quoted(name), kept=self.public.loaded_models))
        return model

    def _specs(self, session: Session | None) -> list[ModelSpec]:
        """The models one can choose: the server's, and in public mode this session's saved ones."""
        specs = self.models.specs()
        if self.public is not None and session is not None and session.key:
            specs += checkpoint_specs(session_folder(session.key), YOURS)
        return specs

    def _spec_named(self, name: str, session: Session | None) -> ModelSpec:
        for spec in self._specs(session):
            if spec.name == name:
                return spec
        if name.startswith(YOURS):
            raise ValueError(f"Your model {quoted(name)} is no longer kept on this server (a session's saved models are "
                             "deleted when it ends or expires); choose another.")
        raise ValueError(f"No model called {quoted(name)}; choose one from the list.")

    def end_session(self, session: Session) -> None:
        """A session ended (its tab was closed, or its state expired): drop its upload; in public mode
        also its saved models (unloaded too) and its fine-tunes (nobody can save them any more): a
        running one is cancelled (its run deletes what it staged), a finished one's model deleted."""
        UPLOADS.discard(session.upload)
        if self.public is None:
            return
        if session.key:
            self.models.forget(checkpoint_specs(session_folder(session.key), YOURS))
        remove_session(session.key)
        for job in filter(None, map(self.known_job, session.jobs)):
            if job.status in (QUEUED, RUNNING):
                self.jobs.cancel(job.id)
            else:
                discard_staged(job)

    def known_job(self, job_id: str) -> Job | None:
        """The job with this id, or None if there is none (forgotten, or the server restarted)."""
        try:
            return self.jobs.get(job_id) if job_id else None
        except ValueError:
            return None

    # ---- active model ---------------------------------------------------------------------------
    def model_choices(self, session: Session | None = None) -> tuple[list[tuple[str, str]], str | None]:
        """((label, name) of each model one can switch to, the chosen one's name or None while loading):
        the active model's, or in public mode the session's choice. The untrained base's label says what it is, a
        broken checkpoint's why it cannot be loaded."""
        active = self.models.active(timeout=0) if self.models.ready else None
        choices = [(f"{spec.name}: {BASE_WARNING_SHORT}" if spec.path is None else spec.label, spec.name)
                   for spec in self._specs(session)]
        return choices, self._session_model(session) or (active.spec.name if active else None)

    def model_status(self, session: Session | None = None) -> str:
        """The model that answers this user, with a warning when it is the untrained base."""
        name = self._session_model(session)
        if name:
            base = any(spec.name == name and spec.path is None for spec in self._specs(session))
            status = f"Your model: **{name}** (for this session only: other visitors are not affected)"
        else:
            active = self.models.active(timeout=0) if self.models.ready else None
            base = active is not None and active.is_base
            status = self.models.status()
        return status + (f"\n\n{BASE_WARNING}" if base else "")

    def switch_model(self, name: str, progress: sv.Progress = sv.no_progress) -> str:
        """Load and prepare the named model, then make it active for every user."""
        self.models.switch(self.models.spec_named(name), progress)
        return self.model_status()

    def choose_model(self, name: str, session: Session, progress: sv.Progress = sv.no_progress
                     ) -> tuple[str, Session]:
        """The model chooser: in public mode the choice is this session's alone (the model is loaded,
        or shared with the sessions that chose it); on a private server it switches the active model."""
        if self.public is None:
            return self.switch_model(name, progress), session
        spec = self._spec_named(name, session)
        self.models.shared(spec, progress)  # loaded and prepared before the session's requests use it
        session.model = spec.name
        return self.model_status(session), session

    # ---- about ----------------------------------------------------------------------------------
    def about(self, session: Session | None = None) -> tuple[str, str]:
        """(the active checkpoint, decoder and a summary of its manifest in Markdown, the manifest as JSON text)."""
        active = self.model_for(session)
        try:
            decoder = "loaded" if active.engine.decoder is not None else "none trained for this encoder"
        except CheckpointError as err:  # a corrupt decoder manifest is not "none trained"
            folder = active.spec.path.parent if active.spec.path is not None else None  # where "auto" looks
            decoder = f"unknown: {naming_only(str(err), folder) if self.public is not None and folder else err}"
        lines = [f"**Active model:** {active.spec.name}", f"**Encoder fingerprint:** `{active.engine.fingerprint}`",
                 f"**Vec2Sent decoder:** {decoder}"]
        if active.is_base:
            lines.append("This is the untrained base: its word head is untrained, so word predictions are noise.")
        lines.append("**The encoder's checkpoint:**\n\n" + render.manifest_summary(active.engine.manifest))  # not the decoder's
        return "\n\n".join(lines), json.dumps(active.engine.manifest, indent=2)


class TabHandlers:
    """One tab's handlers (app/handlers/<tab>.py): plain methods over the backend that every tab shares."""

    def __init__(self, backend: Backend):
        self.backend = backend
