"""Faults: a training process killed mid-epoch or mid-save, a crash in a training step, a full disk
or a read-only checkpoint folder on save, and the bound on concurrent and queued training jobs.

The killed processes are real: a fine-tuning job's spawned child (tiny model), or a subprocess
saving over an existing checkpoint, paused at a chosen point by a patch that lives in this file.
"""
from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.shared.finetune import (STAGED_MODEL, TRAINING_THREADS_ENV, FinetuneResult, remove_leftovers, save_finetuned,
                                 staged_folder, staging_dir, training_threads)
from app.handlers import Session, Studio
from app.shared.jobs import (BACKGROUND_NICENESS, CANCELLED, DONE, FAILED, JOB_NICENESS, RUNNING, Job, JobFailed,
                             JobManager, JobQueueFull, death_reason, in_background, run_in_process, short_reason, usable_cores,
                             whole_machine_job, yield_to_jobs)
from app.shared.models import Models, ModelSpec
from app.views.projection import Projector
from core import Engine
from core.checkpoint import CheckpointError, list_checkpoints, process_alive

REPO = Path(__file__).resolve().parents[1]
WORDS = {"dog": "an animal that barks", "cat": "a small animal that says meow", "king": "a man who rules",
         "queen": "a woman who rules", "river": "water that runs to the sea", "bread": "food made of flour",
         "car": "a thing to drive on a road", "teacher": "a person who helps a child learn",
         "song": "music with words", "tree": "a large plant with wood", "house": "a place to live",
         "fire": "it is hot and burns", "wine": "a drink made of grapes", "road": "a way for cars"}
LONG_RUN = (1, 1e-3, 4, 0, 100_000, 2, 0)  # epochs, lr, batch, layers, max steps, evaluations, seed


# ---- specs whose training process misbehaves on purpose (they are pickled into the child) ------------

@dataclass(frozen=True)
class PausingSaveSpec(ModelSpec):
    """Loads normally, but in the training process the checkpoint save stops after every file is
    written, before the rename that publishes it: it writes `marker` and sleeps (to be killed)."""
    marker: str = ""

    def load(self) -> Engine:
        import core.checkpoint
        sync = core.checkpoint._fsync_tree

        def sync_then_pause(directory: Path) -> None:
            sync(directory)
            staged = Path(self.marker + ".tmp")  # renamed into place: the test never reads a half-written marker
            staged.write_text(str(directory), encoding="utf-8")
            staged.rename(self.marker)
            time.sleep(120)
        core.checkpoint._fsync_tree = sync_then_pause
        return super().load()


@dataclass(frozen=True)
class CrashingSpec(ModelSpec):
    """Loads normally, but in the training process every training step raises."""

    def load(self) -> Engine:
        import core.train

        def crash(*_args, **_kwargs):
            raise RuntimeError("injected failure in a training step")
        core.train._defsent_loss = crash
        return super().load()


# ---- fixtures and helpers ------------------------------------------------------------------------

STUDIOS: list[Studio] = []  # made by the running test; their jobs are stopped when it ends


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(autouse=True)
def stop_unfinished_jobs():
    """A test that fails while its job runs must not leave the training process behind: a
    100,000-step run on both cores would slow every later test of the suite."""
    yield
    while STUDIOS:
        jobs = STUDIOS.pop().jobs
        for job in jobs.unfinished():
            jobs.cancel(job.id)
            if job.pid and process_alive(job.pid):
                os.kill(job.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def previous(tiny_mlm_dir, tmp_path_factory) -> tuple[Path, str]:
    """(the active checkpoint before any fault, its fingerprint)."""
    checkpoints = tmp_path_factory.mktemp("checkpoints")
    path = Engine.from_base(str(tiny_mlm_dir)).save(checkpoints / "previous", name="previous")
    return path, Engine.load(path).fingerprint


@pytest.fixture
def checkpoints(previous, tmp_path) -> Path:
    """A checkpoint folder holding a copy of the previous checkpoint."""
    folder = tmp_path / "checkpoints"
    shutil.copytree(previous[0], folder / "previous")
    return folder


def make_studio(checkpoints: Path, spec: ModelSpec, jobs: JobManager | None = None) -> Studio:
    studio = Studio(Models.from_engine(Engine.load(checkpoints / "previous"), spec, checkpoints), Projector(),
                    jobs or JobManager())
    STUDIOS.append(studio)
    return studio


def upload_session(studio: Studio, tmp_path: Path) -> Session:
    path = tmp_path / "words.tsv"
    path.write_text("word\tdefinition\n" + "".join(f"{w}\t{d}\n" for w, d in WORDS.items()), encoding="utf-8")
    report, session = studio.finetune.validate_upload(str(path), 0, Session())
    assert "Ready" in report, report
    return session


def wait_until(condition, timeout: float = 900.0, what: str = "condition") -> None:
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def finished(studio: Studio, job_id: str) -> Job:
    wait_until(lambda: studio.jobs.get(job_id).status not in ("queued", "running"), what="the job to end")
    return studio.jobs.get(job_id)


def assert_previous_intact(checkpoints: Path, previous: tuple[Path, str]) -> None:
    """Only the previous checkpoint is listed, nothing hidden is left, and it loads unchanged."""
    assert list_checkpoints(checkpoints) == [checkpoints / "previous"]
    assert sorted(p.name for p in checkpoints.iterdir()) == ["previous"]
    assert Engine.load(checkpoints / "previous").fingerprint == previous[1]


def start_training(checkpoints: Path, tmp_path: Path, steps: int) -> tuple[Studio, Job]:
    """A studio serving the previous checkpoint and a long job of it, once `steps` steps are done."""
    studio = make_studio(checkpoints, ModelSpec("previous", checkpoints / "previous"))
    job = studio.jobs.get(studio.finetune.start_finetune(upload_session(studio, tmp_path), *LONG_RUN))
    wait_until(lambda: job.progress.get("step", 0) >= steps, what="training steps")
    return studio, job


def assert_still_serving(studio: Studio) -> None:
    assert "ds-word" in studio.reverse.reverse_dictionary("an animal that barks", 3)[0]


# ---- SIGKILL of the training process -----------------------------------------------------------------

@pytest.mark.slow
def test_sigkill_mid_training_fails_the_job_and_loses_nothing(checkpoints, previous, tmp_path):
    studio, job = start_training(checkpoints, tmp_path, steps=3)
    job_id = job.id
    assert "training: step" in studio.finetune.job_view(job_id)[0]  # progress streams from the child
    os.kill(job.pid, signal.SIGKILL)
    assert finished(studio, job_id).status == FAILED
    assert job.error == "training process was killed (signal 9); nothing was saved"
    assert "Job failed: training process was killed (signal 9)" in studio.finetune.job_view(job_id)[0]
    assert not staged_folder(job).exists()
    assert_previous_intact(checkpoints, previous)
    assert_still_serving(studio)
    with pytest.raises(ValueError, match="job is failed"):
        studio.finetune.save_finetuned(job_id, "never")


@pytest.mark.slow
def test_sigkill_while_the_training_process_saves(checkpoints, previous, tmp_path):
    marker = tmp_path / "paused"
    studio = make_studio(checkpoints, PausingSaveSpec("previous", checkpoints / "previous", marker=str(marker)))
    job_id = studio.finetune.start_finetune(upload_session(studio, tmp_path), 1, 1e-3, 4, 0, 3, 1, 0)
    job = studio.jobs.get(job_id)
    wait_until(marker.exists, what="the training process to pause in its save")
    folder = staged_folder(job)
    temporary = Path(marker.read_text(encoding="utf-8"))
    assert temporary.parent == folder and temporary.name.startswith(f".{STAGED_MODEL}.tmp-")
    assert {"encoder_delta.safetensors", "manifest.json"} <= {p.name for p in temporary.iterdir()}
    assert list_checkpoints(folder) == []  # written but not renamed: not visible ...
    with pytest.raises(CheckpointError):
        Engine.load(folder / STAGED_MODEL)  # ... and not loadable
    os.kill(job.pid, signal.SIGKILL)
    assert finished(studio, job_id).status == FAILED and "killed (signal 9)" in job.error
    assert not folder.exists()  # the half-written model went with the job
    assert_previous_intact(checkpoints, previous)
    assert_still_serving(studio)


# The writer is a separate process, as the server (or `python -m core train --out`) would be.
SAVE_OVER_SCRIPT = """
import os, sys, time
from pathlib import Path
import torch
import core.checkpoint
from core import Engine

target, marker, pause_at = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
engine = Engine.load(target)
with torch.no_grad():
    engine.encoder.backbone.encoder.layer[0].output.dense.bias.add_(0.5)  # a different model

def pause():
    marker.write_text("paused")
    time.sleep(120)

if pause_at == "before the rename":
    sync = core.checkpoint._fsync_tree
    core.checkpoint._fsync_tree = lambda directory: (sync(directory), pause())
else:  # between moving the old checkpoint aside and renaming the new one into place
    rename = os.rename
    def rename_then_pause(source, destination):
        rename(source, destination)
        if ".old-" in str(destination):
            pause()
    os.rename = rename_then_pause
engine.save(target)
"""


@pytest.mark.slow
@pytest.mark.parametrize("pause_at", ["before the rename", "between the renames"])
def test_sigkill_while_overwriting_the_active_checkpoint(checkpoints, previous, tmp_path, pause_at):
    marker = tmp_path / "paused"
    writer = subprocess.Popen([sys.executable, "-c", SAVE_OVER_SCRIPT, str(checkpoints / "previous"), str(marker),
                               pause_at], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        wait_until(lambda: marker.exists() or writer.poll() is not None, what="the writer to pause")
        assert writer.poll() is None, "the writer ended before pausing"
    finally:
        writer.kill()
        writer.wait()
    leftovers = [p.name for p in checkpoints.iterdir() if p.name.startswith(".")]
    assert leftovers and all(f"-{writer.pid}" in name for name in leftovers)
    if pause_at == "before the rename":
        assert list_checkpoints(checkpoints) == [checkpoints / "previous"]
        assert Engine.load(checkpoints / "previous").fingerprint == previous[1]
    else:  # the old checkpoint is moved aside: nothing is listed or loadable until the next start
        assert list_checkpoints(checkpoints) == []
        with pytest.raises(CheckpointError):
            Engine.load(checkpoints / "previous")
    Studio(Models(checkpoints)).start()  # the next start cleans up (and puts a moved-aside checkpoint back)
    assert_previous_intact(checkpoints, previous)


def test_next_start_removes_only_dead_processes_leftovers(checkpoints, previous):
    dead = _dead_pid()
    stale_tmp = checkpoints / f".mine.tmp-{dead}-abc"
    live_tmp = checkpoints / f".other.tmp-{os.getpid()}-abc"  # a save in progress in a live process
    stale_staging = staging_dir().parent / f"server-{dead}"
    for folder in (stale_tmp, live_tmp, stale_staging / "job" / STAGED_MODEL):
        folder.mkdir(parents=True)
        (folder / "encoder_delta.safetensors").write_bytes(b"half")
    removed = remove_leftovers(checkpoints)
    assert set(removed) == {stale_tmp, stale_staging}
    assert live_tmp.exists() and staging_dir().exists() and not stale_staging.exists()
    shutil.rmtree(live_tmp)
    assert_previous_intact(checkpoints, previous)


def test_a_zombie_servers_leftovers_are_removed_too(checkpoints):
    """Issue 61: a killed server that its parent has not reaped is a zombie, which `kill(pid, 0)` reports as
    alive, so its staging folder survived the restart."""
    if not Path("/proc").is_dir():
        pytest.skip("no /proc: a zombie cannot be told from a running process here")
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])  # exits at once; not waited for until the end
    try:
        wait_until(lambda: Path(f"/proc/{zombie.pid}/stat").read_text().split(") ")[1][0] == "Z", 60,
                   what="the child to exit")
        staging = staging_dir().parent / f"server-{zombie.pid}"
        (staging / "job" / STAGED_MODEL).mkdir(parents=True)
        assert not process_alive(zombie.pid)
        assert staging in remove_leftovers(checkpoints) and not staging.exists()
    finally:
        zombie.wait()


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    assert not process_alive(process.pid)
    return process.pid


# ---- a crash inside the job, cancel ---------------------------------------------------------------------

@pytest.mark.slow
def test_crash_in_a_training_step_is_reported_and_the_app_keeps_serving(checkpoints, previous, tmp_path):
    studio = make_studio(checkpoints, CrashingSpec("previous", checkpoints / "previous"))
    job_id = studio.finetune.start_finetune(upload_session(studio, tmp_path), *LONG_RUN)
    job = finished(studio, job_id)
    assert job.status == FAILED and job.error == "RuntimeError: injected failure in a training step"
    assert "Job failed: RuntimeError: injected failure" in studio.finetune.job_view(job_id)[0]
    assert not staged_folder(job).exists()
    assert_still_serving(studio)
    assert_previous_intact(checkpoints, previous)
    after = studio.jobs.submit(lambda j: "next", "the queue goes on")
    wait_until(lambda: after.status == DONE, what="the next job")


@pytest.mark.slow
def test_cancel_terminates_the_training_process(checkpoints, previous, tmp_path):
    studio, job = start_training(checkpoints, tmp_path, steps=1)
    pid = job.pid
    studio.finetune.cancel_job(job.id)
    assert finished(studio, job.id).status == CANCELLED and job.error.startswith("cancelled at step")
    assert not process_alive(pid) and not staged_folder(job).exists()
    assert_previous_intact(checkpoints, previous)


def report_threads(reporter, steps: int) -> int:
    """A job body for `run_in_process`: reports `steps` points, returns the child's torch threads."""
    import torch
    for step in range(1, steps + 1):
        reporter.report(stage="counting", step=step)
        reporter.record(step=step)
    return torch.get_num_threads()


def test_run_in_process_streams_progress_and_sets_threads():
    job = Job("threads", "test", lambda j: None)
    assert run_in_process(job, report_threads, 5, threads=2) == 2
    assert job.progress["step"] == 5 and [p["step"] for p in job.progress["history"]] == [1, 2, 3, 4, 5]
    assert job.pid is None


def report_niceness(reporter) -> int:
    """A job body for `run_in_process`: the child's scheduling niceness."""
    return os.nice(0)


def report_thread_niceness() -> int:
    """Work for `in_background`: its thread's scheduling niceness."""
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_a_job_process_runs_below_the_server_and_above_background_preparation():
    """Requests first, then the fine-tune a user waits for, then a model's background preparation (issue 76)."""
    server = os.nice(0)
    job = run_in_process(Job("nice", "test", lambda j: None), report_niceness)
    seen = []
    in_background(lambda: seen.append(report_thread_niceness()), "niceness").join()
    assert job == min(server + JOB_NICENESS, 19) and seen == [min(server + BACKGROUND_NICENESS, 19)]
    assert server < job < seen[0] or server >= 19 - JOB_NICENESS  # (no room below 19 to order them)


def sleep_then_report_time(reporter) -> float:
    """A job body for `run_in_process`: sleeps a second, then says when it ended."""
    time.sleep(1.0)
    return time.time()


def job_in_a_thread(threads: int) -> tuple[threading.Thread, dict]:
    """A job sleeping in its process (`sleep_then_report_time`) started from a thread; returns once it runs."""
    job, ended = Job("sleeper", "test", lambda j: None), {}
    runner = threading.Thread(target=lambda: ended.setdefault(
        "at", run_in_process(job, sleep_then_report_time, threads=threads)))
    runner.start()
    while job.pid is None:
        time.sleep(0.01)
    return runner, ended


def test_background_preparation_waits_while_a_job_uses_every_core():
    """Beside a fine-tune on every core a model's exact-vector embedding took 585 s of a 65 s job (issue 76)."""
    runner, ended = job_in_a_thread(usable_cores())
    yield_to_jobs()
    resumed = time.time()
    runner.join()
    assert resumed >= ended["at"]
    if usable_cores() > 1:  # a one-thread job (public mode) leaves a core: nothing waits for it
        runner, ended = job_in_a_thread(1)
        yield_to_jobs()
        resumed = time.time()
        runner.join()
        assert resumed < ended["at"]


def test_a_wait_for_jobs_ends_when_asked_to():
    """A model switch that waits for the start-up preparation must not wait for a whole fine-tune too."""
    asked = threading.Event()
    threading.Timer(0.3, asked.set).start()
    started = time.monotonic()
    with whole_machine_job():
        yield_to_jobs(unless=asked.is_set)
    assert asked.is_set() and time.monotonic() - started < 5


def test_fine_tunes_use_every_core_privately_and_one_thread_in_public_mode(monkeypatch):
    monkeypatch.delenv(TRAINING_THREADS_ENV, raising=False)
    assert training_threads(public=False) == usable_cores() and training_threads(public=True) == 1
    monkeypatch.setenv(TRAINING_THREADS_ENV, "3")
    assert training_threads(public=False) == training_threads(public=True) == 3
    monkeypatch.setenv(TRAINING_THREADS_ENV, "0")
    with pytest.raises(ValueError, match=TRAINING_THREADS_ENV):
        training_threads(public=False)


def test_short_reasons():
    assert death_reason(-9) == "training process was killed (signal 9); nothing was saved"
    assert death_reason(3).startswith("training process exited with code 3")
    assert short_reason(OSError(errno.ENOSPC, "No space left on device", "/x/y")) == "No space left on device: /x/y"
    assert short_reason(ValueError("bad value")) == "bad value"
    assert short_reason(KeyError("k")) == "KeyError: 'k'"
    assert len(short_reason(RuntimeError("x" * 5000))) == 300
    assert short_reason(RuntimeError("a traceback\n  of lines")) == "RuntimeError: a traceback of lines"  # one line
    assert short_reason(JobFailed("the job's own reason")) == "the job's own reason"


# ---- disk full and read-only checkpoint folder on save -------------------------------------------------

@pytest.fixture
def staged(previous, tmp_path) -> FinetuneResult:
    """A finished job's result whose model is staged (a copy of the previous checkpoint)."""
    folder = tmp_path / "staging" / STAGED_MODEL
    shutil.copytree(previous[0], folder)
    return FinetuneResult(folder, {}, {}, [], {})


def _copy_half_then_fill_the_disk(source, destination, *args, **kwargs):
    Path(destination).write_bytes(Path(source).read_bytes()[:10])
    raise OSError(errno.ENOSPC, "No space left on device", str(destination))


def _read_only(*args, **kwargs):
    raise OSError(errno.EROFS, "Read-only file system", kwargs.get("dir"))


def _permission_denied(*args, **kwargs):
    raise PermissionError(errno.EACCES, "Permission denied", kwargs.get("dir"))


@pytest.mark.parametrize("module, function, fault, message", [
    (shutil, "copyfile", _copy_half_then_fill_the_disk, "No space left on device"),
    (tempfile, "mkdtemp", _read_only, "Read-only file system"),
    (tempfile, "mkdtemp", _permission_denied, "Permission denied"),
])
def test_save_on_a_full_disk_or_read_only_folder(checkpoints, previous, staged, monkeypatch, module, function,
                                                 fault, message):
    monkeypatch.setattr(module, function, fault)
    with pytest.raises(ValueError, match=message) as error:
        save_finetuned(staged, "mine", checkpoints)
    assert "Nothing was saved" in str(error.value)
    monkeypatch.undo()
    assert_previous_intact(checkpoints, previous)
    assert save_finetuned(staged, "mine", checkpoints) == checkpoints / "mine"  # space again: it saves


def test_disk_full_while_writing_the_manifest_leaves_nothing(checkpoints, previous, staged, monkeypatch):
    def full(path, data):
        Path(path).write_text("{", encoding="utf-8")
        raise OSError(errno.ENOSPC, "No space left on device", str(path))
    monkeypatch.setattr("app.shared.finetune.write_json", full)
    with pytest.raises(ValueError, match="No space left on device"):
        save_finetuned(staged, "mine", checkpoints)
    assert_previous_intact(checkpoints, previous)


# ---- one training job at a time ---------------------------------------------------------------------

def test_one_training_job_at_a_time_then_queue_then_refuse():
    jobs = JobManager(max_running=1, max_waiting=1)
    release, running, peak, lock = threading.Event(), [0], [0], threading.Lock()

    def hold(job: Job) -> str:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        release.wait(30)
        with lock:
            running[0] -= 1
        return job.id

    first = jobs.submit(hold, "first")
    wait_until(lambda: first.status == RUNNING, what="the first job to run")
    second = jobs.submit(hold, "second")
    assert second.status == "queued" and jobs.queue_position(second.id) == 1
    with pytest.raises(JobQueueFull, match="busy.*1 training job.*at most 1 at a time.*1 waiting"):
        jobs.submit(hold, "third")
    release.set()
    wait_until(lambda: second.status == DONE, what="the queued job")
    assert peak[0] == 1 and first.status == DONE


def test_the_limits_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("DEFSENT_MAX_TRAINING_JOBS", "2")
    monkeypatch.setenv("DEFSENT_MAX_QUEUED_JOBS", "0")
    jobs = JobManager()
    assert (jobs.max_running, jobs.max_waiting) == (2, 0)
    release = threading.Event()
    both = [jobs.submit(lambda j: release.wait(30), name) for name in ("a", "b")]
    wait_until(lambda: all(j.status == RUNNING for j in both), what="two jobs running at once")
    assert sorted(j.description for j in jobs.unfinished()) == ["a", "b"]
    with pytest.raises(JobQueueFull):
        jobs.submit(lambda j: None, "c")
    release.set()
    wait_until(lambda: not jobs.unfinished(), what="both jobs to end")
    monkeypatch.setenv("DEFSENT_MAX_TRAINING_JOBS", "0")
    with pytest.raises(ValueError, match="DEFSENT_MAX_TRAINING_JOBS='0'"):
        JobManager()


def test_studio_refuses_a_job_when_the_queue_is_full(checkpoints, tmp_path):
    studio = make_studio(checkpoints, ModelSpec("previous", checkpoints / "previous"),
                         JobManager(max_running=1, max_waiting=0))
    release = threading.Event()
    busy = studio.jobs.submit(lambda j: release.wait(30), "another user's training")
    wait_until(lambda: busy.status == RUNNING, what="the other job")
    with pytest.raises(ValueError, match="The server is busy"):
        studio.finetune.start_finetune(upload_session(studio, tmp_path), *LONG_RUN)
    release.set()
    assert not staging_dir().exists() or not any(staging_dir().iterdir())
