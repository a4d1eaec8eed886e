"""Load: the request queue is bounded (past the bound a request is refused at once with "try again"),
the app binds to this machine only unless told otherwise, and the short form of bench/load_test.py
(concurrent API clients while a fine-tuning job runs) has no failed request.

Everything talks to 127.0.0.1 only; nothing is downloaded.
"""
from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

from app.handlers import Studio
from app.models import Models, ModelSpec
from bench.bench_app import free_port
from core import Engine

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def offline(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))


def app_main():
    """The `app.py` script as a module (`import app` finds the package)."""
    spec = importlib.util.spec_from_file_location("app_main", REPO / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wait_for(job, status, timeout: float = 300.0) -> None:
    """Wait until a gradio_client job reports `status`."""
    deadline = time.perf_counter() + timeout
    while job.status().code != status:
        assert time.perf_counter() < deadline, f"job still {job.status().code}, expected {status}"
        time.sleep(0.05)


def test_queue_past_its_bound_refuses_at_once_and_serves_the_rest(tiny_mlm_dir, tmp_path):
    pytest.importorskip("gradio")
    from gradio_client import Client
    from gradio_client.utils import QueueError, Status

    from app.ui import build_app, enable_queue

    # No model yet: every request waits in Models.active() until one is made active, like a slow handler.
    studio = Studio(Models(tmp_path / "checkpoints"))
    demo = enable_queue(build_app(studio), max_size=1, concurrency=1)
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        client = Client(demo.local_url, verbose=False, download_files=False, httpx_kwargs={"timeout": 300})
        query = ["a dog", 3, "any", 0, 0, "", "", False, False]
        running = client.submit(*query, api_name="/reverse_dictionary")
        wait_for(running, Status.PROCESSING)
        waiting = client.submit(*query, api_name="/reverse_dictionary")
        wait_for(waiting, Status.IN_QUEUE)
        # Refused, not queued: a queued request would wait behind the blocked ones and time out instead.
        with pytest.raises(QueueError, match="Queue is full! Please try again"):
            client.submit(*query, api_name="/reverse_dictionary").result(timeout=300)
        studio.models.use(Engine.from_base(str(tiny_mlm_dir)), ModelSpec("tiny", base=str(tiny_mlm_dir)))
        for job in (running, waiting):
            assert "ds-word" in job.result(timeout=300)[0]
    finally:
        demo.close()


def test_enable_queue_rejects_a_zero_bound(tmp_path):
    pytest.importorskip("gradio")
    from app.ui import build_app, enable_queue

    with pytest.raises(ValueError, match="at least 1"):
        enable_queue(build_app(Studio(Models(tmp_path))), max_size=0)


def test_app_listens_on_loopback_unless_told_and_warns_when_exposed(monkeypatch):
    monkeypatch.delenv("GRADIO_SERVER_NAME", raising=False)
    app = app_main()
    args = app.parse_args([])
    assert args.host == "127.0.0.1" and not args.share and args.queue_size >= 1
    assert app.exposure_warnings(args.host, args.share) == []
    assert app.exposure_warnings("localhost", False) == []
    (wide,) = app.exposure_warnings("0.0.0.0", False)
    assert "reachable from other machines" in wide
    (shared,) = app.exposure_warnings("127.0.0.1", True)
    assert "public gradio.live" in shared
    assert len(app.exposure_warnings("0.0.0.0", True)) == 2


@pytest.mark.slow
def test_concurrent_clients_while_a_job_runs_all_succeed():
    """The CI form of bench/load_test.py: 4 clients x 25 requests on a tiny model."""
    from bench import load_test

    result = load_test.run(load_test.parse_args(["--tiny", "--clients", "4", "--requests", "25"]))
    print(load_test.report(result))
    assert sum(row["count"] for row in result["kinds"]) == 100
    assert result["failed"] == 0, result["errors"]
    job = result["job"]
    assert job["running_at_load_start"], "the job had finished before the load began"
    assert job["finished"] and job["checkpoint_loads"], job
    assert load_test.passed(result)
