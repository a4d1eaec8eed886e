"""Background jobs (fine-tuning) run one at a time by a worker thread, outside any web request.

A job is addressed by its id, so a browser that reloads the page can find it again. Jobs queue in
submission order; a queued or running job can be cancelled (a running one stops at its next
`should_stop()` check).
"""
from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

log = logging.getLogger(__name__)
QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
FINISHED = (DONE, FAILED, CANCELLED)


class JobCancelled(Exception):
    """Raised inside a job function to end it as cancelled."""


@dataclass
class Job:
    """A submitted job; `progress` is whatever the job last reported, `result` its return value."""
    id: str
    description: str
    fn: Callable[["Job"], Any]
    status: str = QUEUED
    progress: dict = field(default_factory=dict)
    result: Any = None
    error: str = ""
    submitted: float = field(default_factory=time.time)
    cancel_requested: threading.Event = field(default_factory=threading.Event)

    def report(self, **progress: Any) -> None:
        """Called by the job function to publish its progress."""
        self.progress = {**self.progress, **progress}

    def should_stop(self) -> bool:
        return self.cancel_requested.is_set()


class JobManager:
    """A FIFO of jobs and one worker thread that runs them."""

    def __init__(self, max_jobs: int = 8):
        self._jobs: dict[str, Job] = {}
        self._queue: queue.Queue[Job] = queue.Queue()
        self._lock = threading.Lock()
        self._max_jobs = max_jobs
        self._worker = threading.Thread(target=self._work, name="job-worker", daemon=True)
        self._worker.start()

    def submit(self, fn: Callable[[Job], Any], description: str) -> Job:
        """Queue `fn(job)`; returns the job (its id is what a client keeps)."""
        job = Job(uuid.uuid4().hex[:12], description, fn)
        with self._lock:
            self._forget_old()
            self._jobs[job.id] = job
        self._queue.put(job)
        return job

    def get(self, job_id: str) -> Job:
        """The job with this id; ValueError if there is none (e.g. the server restarted)."""
        job = self._jobs.get((job_id or "").strip())
        if job is None:
            raise ValueError(f"No job with id {job_id!r} on this server (it may have been restarted).")
        return job

    def cancel(self, job_id: str) -> Job:
        """Ask a job to stop; a queued job is cancelled at once."""
        job = self.get(job_id)
        job.cancel_requested.set()
        with self._lock:
            if job.status == QUEUED:
                job.status = CANCELLED
        return job

    def queue_position(self, job_id: str) -> int:
        """How many jobs are ahead of a queued job (0 once it runs or has finished)."""
        job = self.get(job_id)
        if job.status != QUEUED:
            return 0
        with self._lock:
            waiting = [j for j in self._jobs.values() if j.status in (QUEUED, RUNNING)]
        waiting.sort(key=lambda j: (j.status != RUNNING, j.submitted))
        return waiting.index(job)

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            with self._lock:
                if job.status == CANCELLED:
                    continue
                job.status = RUNNING
            self._run(job)

    @staticmethod
    def _run(job: Job) -> None:
        try:
            job.result = job.fn(job)
            job.status = DONE
        except JobCancelled as err:
            job.error, job.status = str(err) or "cancelled", CANCELLED
        except Exception as err:  # the job fails; the server goes on
            log.exception("job %s failed", job.id)
            job.error = str(err) if isinstance(err, ValueError) else f"{type(err).__name__}: {err}"
            job.status = FAILED

    def _forget_old(self) -> None:
        """Drop the oldest finished jobs beyond `max_jobs` (their results hold whole models)."""
        finished = sorted((j for j in self._jobs.values() if j.status in FINISHED), key=lambda j: j.submitted)
        for job in finished[: max(0, len(self._jobs) - self._max_jobs + 1)]:
            del self._jobs[job.id]
