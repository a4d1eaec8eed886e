"""Background jobs (fine-tuning), run outside any web request.

At most `max_running` jobs run at once (`DEFSENT_MAX_TRAINING_JOBS`, default 1: a training job
keeps a CPU core busy); later ones wait in submission order, at most `max_waiting` of them
(`DEFSENT_MAX_QUEUED_JOBS`, default 4); past that `submit` refuses with `JobQueueFull`. A job is
addressed by its id, so a browser that reloads the page can find it again.

`run_in_process` runs a job's work in a child process (multiprocessing, spawn), so that an
exception, running out of memory or a SIGKILL ends the job as failed with a short reason while
the server goes on; cancelling a running job terminates its process.
"""
from __future__ import annotations

import collections
import contextlib
import logging
import multiprocessing
import os
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from core.text import short_reason as reason_line

from ..messages import quoted

log = logging.getLogger(__name__)
QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
FINISHED = (DONE, FAILED, CANCELLED)
MAX_RUNNING_ENV, MAX_WAITING_ENV = "DEFSENT_MAX_TRAINING_JOBS", "DEFSENT_MAX_QUEUED_JOBS"
POLL_SECONDS = 0.1
EXIT_SECONDS = 5.0
# A fine-tune's process runs at JOB_NICENESS, so the server's requests take a core first when they need one and
# training may use every core meanwhile; a model's background preparation (its exact vectors: minutes on a fresh
# machine) runs lower still, so that a job a user waits for gets most of the CPU beside it (issue 76: a 30-word
# glossary took 585 s beside it at the same niceness, 65 s alone). docs/limits.md.
JOB_NICENESS = 5
BACKGROUND_NICENESS = 10
# A job's process that uses every core has them: background preparation waits between its batches
# (`yield_to_jobs`). Nice values alone are not enough: a torch thread sharing a core with the background thread
# stalls the job's other threads at every parallel region's barrier (65 s alone; >6 min of CPU and counting
# beside it at niceness 5 against 10).
_whole_machine_jobs = 0  # such processes running now
_whole_machine_jobs_changed = threading.Condition()
UNLESS_POLL_S = 0.25


class JobCancelled(Exception):
    """Ends a job as cancelled."""


class JobFailed(Exception):
    """Ends a job as failed; the message is the short reason shown to the user."""


class JobQueueFull(ValueError):
    """`submit` refused a job: the queue is at its bound."""


@dataclass
class Job:
    """A submitted job; `progress` is whatever the job last reported, `result` its return value."""
    id: str
    description: str
    fn: Callable[["Job"], Any]
    on_forget: Callable[["Job"], None] | None = None
    status: str = QUEUED
    progress: dict = field(default_factory=dict)
    result: Any = None
    error: str = ""
    pid: int | None = None  # the job's child process while `run_in_process` runs it
    submitted: float = field(default_factory=time.time)
    cancel_requested: threading.Event = field(default_factory=threading.Event)

    def report(self, **progress: Any) -> None:
        """Publish progress (merged into `progress`)."""
        self.progress = {**self.progress, **progress}

    def record(self, **point: Any) -> None:
        """Append one point (e.g. step, loss) to `progress["history"]`."""
        self.progress = {**self.progress, "history": [*self.progress.get("history", []), point]}

    def should_stop(self) -> bool:
        return self.cancel_requested.is_set()


def usable_cores() -> int:
    """The CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def env_int(name: str, default: int, minimum: int) -> int:
    """An integer setting from the environment; ValueError naming the variable when it is bad."""
    raw = os.environ.get(name, "").strip() or str(default)
    if not raw.isdigit() or int(raw) < minimum:
        raise ValueError(f"{name}={raw!r}: expected a whole number >= {minimum}.")
    return int(raw)


class JobManager:
    """Jobs in submission order, `max_running` worker threads, and a bound on waiting jobs."""

    def __init__(self, max_running: int | None = None, max_waiting: int | None = None, max_kept: int = 8):
        self.max_running = max_running if max_running is not None else env_int(MAX_RUNNING_ENV, 1, 1)
        self.max_waiting = max_waiting if max_waiting is not None else env_int(MAX_WAITING_ENV, 4, 0)
        if self.max_running < 1 or self.max_waiting < 0:
            raise ValueError("A job manager needs max_running >= 1 and max_waiting >= 0.")
        self._jobs: dict[str, Job] = {}
        self._waiting: collections.deque[Job] = collections.deque()
        self._running = 0
        self._changed = threading.Condition()
        self._max_kept = max_kept
        for i in range(self.max_running):
            threading.Thread(target=self._work, name=f"job-worker-{i}", daemon=True).start()

    def submit(self, fn: Callable[[Job], Any], description: str,
               on_forget: Callable[[Job], None] | None = None) -> Job:
        """Queue `fn(job)`; returns the job (its id is what a client keeps). `on_forget(job)` runs
        when a finished job is dropped (to delete its files). JobQueueFull when the queue is full."""
        job = Job(uuid.uuid4().hex[:12], description, fn, on_forget)
        with self._changed:
            free_workers = self.max_running - self._running
            if len(self._waiting) >= self.max_waiting + free_workers:
                raise JobQueueFull(
                    f"The server is busy: {self._running} training job(s) running (at most {self.max_running} at "
                    f"a time) and {len(self._waiting)} waiting (at most {self.max_waiting}). "
                    "Try again when one has finished.")
            self._forget_old()
            self._jobs[job.id] = job
            self._waiting.append(job)
            self._changed.notify()
        return job

    def get(self, job_id: str) -> Job:
        """The job with this id; ValueError if there is none (e.g. the server restarted)."""
        job = self._jobs.get((job_id or "").strip())
        if job is None:
            raise ValueError(f"No job with id {quoted(job_id)} on this server (it may have been restarted).")
        return job

    def unfinished(self) -> list[Job]:
        """The jobs still queued or running."""
        with self._changed:
            return [job for job in self._jobs.values() if job.status in (QUEUED, RUNNING)]

    def cancel(self, job_id: str) -> Job:
        """Ask a job to stop; a queued job is cancelled at once."""
        job = self.get(job_id)
        job.cancel_requested.set()
        with self._changed:
            if job.status == QUEUED:
                self._waiting.remove(job)
                job.status = CANCELLED
        return job

    def queue_position(self, job_id: str) -> int:
        """How many jobs are ahead of a queued job, running ones included (0 once it runs or has finished)."""
        job = self.get(job_id)
        with self._changed:
            if job.status != QUEUED:
                return 0
            return self._running + self._waiting.index(job)

    def _work(self) -> None:
        while True:
            with self._changed:
                while not self._waiting:
                    self._changed.wait()
                job = self._waiting.popleft()
                job.status = RUNNING
                self._running += 1
            try:
                self._run(job)
            finally:
                with self._changed:
                    self._running -= 1

    @staticmethod
    def _run(job: Job) -> None:
        try:
            job.result = job.fn(job)
            job.status = DONE
        except JobCancelled as err:
            job.error, job.status = str(err) or "cancelled", CANCELLED
        except JobFailed as err:  # the child process has logged its own traceback, if it had one
            log.warning("job %s failed: %s", job.id, err)
            job.error, job.status = short_reason(err), FAILED
        except Exception as err:  # the job fails; the server goes on
            log.exception("job %s failed", job.id)
            job.error, job.status = short_reason(err), FAILED

    def _forget_old(self) -> None:
        """Drop the oldest finished jobs beyond `max_kept` (called with the lock held)."""
        finished = sorted((j for j in self._jobs.values() if j.status in FINISHED), key=lambda j: j.submitted)
        for job in finished[: max(0, len(self._jobs) - self._max_kept + 1)]:
            del self._jobs[job.id]
            if job.on_forget is not None:
                job.on_forget(job)


def short_reason(err: BaseException) -> str:
    """One line for the user (core.text.short_reason), a JobFailed's message shown as it is, as a ValueError's."""
    return reason_line(err, told=(ValueError, JobFailed))


# ---- a job's work in a child process ----------------------------------------------------------------

class ChildReporter:
    """What a job's work sees in the child process: `report` and `record` go to the parent's Job."""

    def __init__(self, connection):
        self._connection = connection

    def report(self, **progress: Any) -> None:
        self._connection.send(("report", progress))

    def record(self, **point: Any) -> None:
        self._connection.send(("record", point))


def run_in_process(job: Job, target: Callable[..., Any], *args: Any, threads: int = 1) -> Any:
    """Run `target(reporter, *args)` in a spawned child process with `threads` torch threads, at
    JOB_NICENESS, forward its progress to `job`, and return its (picklable) result.

    Raises JobFailed with a short reason when the target raises or the process dies (killed by a
    signal, out of memory, a nonzero exit), and JobCancelled when the job is cancelled (the process
    is terminated). `target` must be importable by name (a module-level function).
    """
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child_main, args=(sender, threads, target, args),
                              name=f"job-{job.id}", daemon=True)
    with whole_machine_job() if threads >= usable_cores() else contextlib.nullcontext():
        process.start()
        sender.close()  # only the child holds the sending end now: end of file means the child is gone
        job.pid = process.pid
        try:
            return _follow(job, process, receiver)
        finally:
            receiver.close()
            process.join(EXIT_SECONDS)  # after its last message the child ends by itself
            _stop(process)
            job.pid = None


@contextlib.contextmanager
def whole_machine_job() -> Iterator[None]:
    """While inside, a job's process uses every core: `yield_to_jobs` waits."""
    global _whole_machine_jobs
    with _whole_machine_jobs_changed:
        _whole_machine_jobs += 1
    try:
        yield
    finally:
        with _whole_machine_jobs_changed:
            _whole_machine_jobs -= 1
            _whole_machine_jobs_changed.notify_all()


def yield_to_jobs(unless: Callable[[], bool] | None = None) -> None:
    """Wait while a job's process uses every core (a fine-tune on a private server of two cores or more; in public
    mode a job trains on one thread, `training_threads`, and leaves the others). Background preparation calls it
    between batches. `unless()` true ends the wait early (a request waits for that preparation); it is asked
    every UNLESS_POLL_S seconds."""
    with _whole_machine_jobs_changed:
        while _whole_machine_jobs and not (unless is not None and unless()):
            _whole_machine_jobs_changed.wait(UNLESS_POLL_S if unless is not None else None)


def _follow(job: Job, process, receiver) -> Any:
    """Apply the child's messages to `job` until it sends its outcome, dies or the job is cancelled."""
    while True:
        if job.should_stop():
            _stop(process)
            raise JobCancelled(_cancelled_at(job.progress))
        if not receiver.poll(POLL_SECONDS):
            continue
        try:
            kind, payload = receiver.recv()
        except (EOFError, OSError):  # the child died, possibly in the middle of a message
            process.join()
            raise JobFailed(death_reason(process.exitcode)) from None
        if kind == "report":
            job.report(**payload)
        elif kind == "record":
            job.record(**payload)
        elif kind == "done":
            return payload
        else:
            raise JobFailed(payload)


def _stop(process) -> None:
    """Terminate the process if it still runs (SIGTERM, then SIGKILL if it has not ended in time)."""
    if process.is_alive():
        process.terminate()
        process.join(EXIT_SECONDS)
    if process.is_alive():
        process.kill()
    process.join()


def _cancelled_at(progress: dict) -> str:
    if progress.get("stage") == "training":
        return f"cancelled at step {progress.get('step', 0)} of {progress.get('total', 0)}"
    return f"cancelled while {progress.get('stage', 'starting')}"


def death_reason(exitcode: int | None) -> str:
    """Why a child process ended without reporting an outcome."""
    if exitcode is not None and exitcode < 0:
        return f"training process was killed (signal {-exitcode}); nothing was saved"
    return f"training process exited with code {exitcode} without a result; nothing was saved"


_BACKGROUND_WORK = threading.Lock()  # one `in_background` work at a time: each takes the CPU for minutes


def in_background(work: Callable[[], None], name: str) -> threading.Thread:
    """Run `work` in a daemon thread, after any other `in_background` work, at a lower priority than requests
    (BACKGROUND_NICENESS, for this thread only, on Linux, where torch's work runs in the calling thread at
    --threads 1); its errors are logged."""
    def run() -> None:
        if sys.platform.startswith("linux"):
            try:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICENESS)
            except OSError:  # not allowed here: the work still runs, at the server's priority
                log.warning("could not lower the priority of %s", name)
        with _BACKGROUND_WORK:
            try:
                work()
            except Exception:
                log.exception("%s failed", name)
    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread


class BackgroundOnce:
    """Work run in the background (`in_background`) until it succeeds once: `start` starts it unless `done()` or
    it is running, and it runs unless `done()` by then. A failure (of `work` or `done`) belongs to the work:
    `failure` holds it for whoever shows that work, until a `start` tries it again; no `start` raises it."""

    def __init__(self, name: str, work: Callable[[], None], done: Callable[[], bool]):
        self.name, self.work, self.done = name, work, done
        self.thread: threading.Thread | None = None
        self.started = 0.0  # time.monotonic() of the last start
        self.failure: Exception | None = None  # why the last run failed; None while it runs and once it succeeds
        self._lock = threading.Lock()  # one start at a time

    def start(self) -> None:
        """Start the work unless it is running or done (a failed one is tried again)."""
        with self._lock:
            if not self.running() and not self.done():
                self.failure = None
                self.started, self.thread = time.monotonic(), in_background(self._run, self.name)

    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def _run(self) -> None:
        try:
            if not self.done():  # it may have waited behind other background work that did it
                self.work()
        except Exception as err:  # kept for whoever shows this work (logged by in_background)
            self.failure = err
            raise


def _child_main(connection, threads: int, target: Callable[..., Any], args: tuple) -> None:
    """The child process: run the target and send ("done", result) or ("failed", reason)."""
    import torch
    if hasattr(os, "nice"):
        os.nice(JOB_NICENESS)
    torch.set_num_threads(threads)
    try:
        outcome = ("done", target(ChildReporter(connection), *args))
    except Exception as err:
        log.exception("job process failed")
        outcome = ("failed", short_reason(err))
    try:
        connection.send(outcome)
    except OSError:  # the server is gone; nobody is listening
        pass
