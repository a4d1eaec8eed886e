"""Load: the request queue is bounded (past the bound a request is refused at once with "try again"),
cheap requests have a concurrency pool that slow ones (maps, decoding) cannot hold, the app binds to
this machine only unless told otherwise, and the short form of bench/load_test.py (concurrent API
clients while a fine-tuning job runs, then hostile requests, then model switching) has no failed
request and no answer that differs from the same request answered alone.

Everything talks to 127.0.0.1 only; nothing is downloaded.
"""
from __future__ import annotations

import importlib.util
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from app.handlers import Studio
from app.shared.models import Models, ModelSpec
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

    from app.ui import build_app
    from app.wiring import QUICK, enable_queue

    # No model yet: every request waits in Models.active() until one is made active, like a slow handler.
    studio = Studio(Models(tmp_path / "checkpoints"))
    demo = enable_queue(build_app(studio), max_size=1, concurrency=1)
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        client = Client(demo.local_url, verbose=False, download_files=False, httpx_kwargs={"timeout": 300})
        query = ["a dog", 3, "any", 0, 0, "", "", False, False]
        # Fill the reverse dictionary's pool one request at a time: two sent at once can both sit in the
        # queue of 1 for a moment, and then one is refused.
        running = []
        for _ in range(QUICK["concurrency_limit"]):
            running.append(client.submit(*query, api_name="/reverse_dictionary"))
            wait_for(running[-1], Status.PROCESSING)
        waiting = client.submit(*query, api_name="/reverse_dictionary")
        wait_for(waiting, Status.IN_QUEUE)
        # Refused, not queued: a queued request would wait behind the blocked ones and time out instead.
        with pytest.raises(QueueError, match="Queue is full! Please try again"):
            client.submit(*query, api_name="/reverse_dictionary").result(timeout=300)
        studio.models.use(Engine.from_base(str(tiny_mlm_dir)), ModelSpec("tiny", base=str(tiny_mlm_dir)))
        for job in (*running, waiting):
            assert "ds-word" in job.result(timeout=300)[0]
    finally:
        demo.close()


# Events that take seconds of CPU (maps, decoding, embedding uploads, evaluations, loading a model) and
# the cheap ones the load test times (tens of ms).
# a map search redraws the map (the map of every word: 147k points) and a selection writes a CSV: slow kinds
SLOW_EVENTS = ("draw_map", "candidates_map", "heatmap", "search", "validate", "download_finetuned", "analogy",
               "interpolate", "evaluate_words", "evaluate_sts", "evaluate_senteval", "switch_model",
               "save_finetuned", "activate_finetuned", "search_map", "select_map")
QUICK_EVENTS = ("reverse_dictionary", "similarity", "map_point", "job_active")


def test_cheap_requests_have_a_pool_of_their_own_and_slow_kinds_run_one_at_a_time(tmp_path):
    pytest.importorskip("gradio")
    from app.ui import build_app
    from app.wiring import enable_queue

    demo = enable_queue(build_app(Studio(Models(tmp_path))))
    pool = {fn.api_name: (fn.concurrency_id, fn.concurrency_limit) for fn in demo.fns.values()}
    assert {pool[name] for name in QUICK_EVENTS} == {pool["reverse_dictionary"]}  # one pool
    quick_id, quick_limit = pool["reverse_dictionary"]
    assert isinstance(quick_limit, int) and quick_limit >= 2
    for name in SLOW_EVENTS:
        assert pool[name][0] != quick_id, f"{name} can hold a slot of the reverse dictionary"
        assert pool[name][1] == 1, f"{name} runs {pool[name][1]} at a time"
    assert pool["draw_map"][0] != pool["analogy"][0], "a map can hold the decoders' slot"
    assert pool["evaluate_senteval"][0] != pool["draw_map"][0], "a long evaluation can hold the maps' slot"


def test_a_blocked_map_and_decoding_leave_the_reverse_dictionary_free(tiny_mlm_dir, tmp_path):
    """Maps and analogies stuck in their handlers: a second of each waits in its own queue (one runs at a
    time), and the reverse dictionary still answers."""
    pytest.importorskip("gradio")
    from gradio_client import Client
    from gradio_client.utils import Status

    from app.ui import build_app
    from app.wiring import enable_queue

    engine = Engine.from_base(str(tiny_mlm_dir))
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path))
    release, lock, running, peak = threading.Event(), threading.Lock(), Counter(), Counter()

    def held(kind, fn):
        def wrapper(*args, **kwargs):
            with lock:
                running[kind] += 1
                peak[kind] = max(peak[kind], running[kind])
            try:
                release.wait(300)
                return fn(*args, **kwargs)
            finally:
                with lock:
                    running[kind] -= 1
        return wrapper
    studio.projector.project = held("map", studio.projector.project)
    engine.analogy = held("decode", engine.analogy)
    studio.models.active().reference()  # embedded before the analogies (it would be in the warm-up)
    demo = enable_queue(build_app(studio))
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        client = Client(demo.local_url, verbose=False, download_files=False, httpx_kwargs={"timeout": 300})
        drawing = ["my sentences", 500, "a dog\na cat\na king", None, "PCA", "2-D", "part of speech"]
        maps = [client.submit(*drawing, api_name="/draw_map") for _ in range(2)]
        decodings = [client.submit("a dog", "a cat", "a king", "b - a + c", False, "largest ready",
                                   api_name="/analogy")
                     for _ in range(2)]
        deadline = time.perf_counter() + 300
        while running["map"] < 1 or running["decode"] < 1:
            assert time.perf_counter() < deadline, f"slow requests never started: {running}"
            time.sleep(0.05)
        words = client.submit("a dog", 3, "any", 0, 0, "", "", False, False, api_name="/reverse_dictionary")
        assert "ds-word" in words.result(timeout=300)[0]
        assert peak == {"map": 1, "decode": 1}, f"slow requests ran side by side: {peak}"
        # The second of each pair reaches the queue and waits there (sent at once: either may be second).
        deadline = time.perf_counter() + 120
        while sum(job.status().code == Status.IN_QUEUE for job in maps + decodings) < 2:
            assert time.perf_counter() < deadline, [job.status().code for job in maps + decodings]
            time.sleep(0.05)
        assert peak == {"map": 1, "decode": 1}, f"slow requests ran side by side: {peak}"
        release.set()
        for job in maps + decodings:
            job.result(timeout=300)
        assert peak == {"map": 1, "decode": 1}, f"slow requests ran side by side: {peak}"
    finally:
        release.set()
        demo.close()


def test_enable_queue_rejects_a_zero_bound(tmp_path):
    pytest.importorskip("gradio")
    from app.ui import build_app
    from app.wiring import enable_queue

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
def test_concurrent_clients_while_a_job_runs_get_the_answers_they_get_alone():
    """The CI form of bench/load_test.py: 4 clients x 25 requests on a tiny model, each answer compared
    with the same request answered alone; then a short hostile phase and a model-switching phase."""
    from bench import load_test

    result = load_test.run(load_test.parse_args(["--tiny", "--clients", "4", "--requests", "25", "--distinct", "8",
                                                 "--hostile-seconds", "3", "--probes", "8"]))
    print(load_test.report(result))
    assert sum(row["count"] for row in result["kinds"]) == 100
    assert result["failed"] == 0, result["errors"]
    assert not result["reference_failed"], result["reference_failed"]
    comparison = result["comparison"]
    assert comparison["compared"] == 100 and comparison["differing"] == 0, comparison["examples"]
    job = result["job"]
    assert job["running_at_load_start"], "the job had finished before the load began"
    assert job["finished"] and job["checkpoint_loads"], job
    hostile = result["hostile"]
    assert hostile["probe_failed"] == 0 and hostile["rd_hostile"]["n"] > 0
    assert hostile["comparison"]["compared"] > 0 and hostile["comparison"]["differing"] == 0
    switching = result["switching"]
    assert "error" not in switching, switching
    assert switching["switches"] >= 2 and not switching["switch_failed"] and switching["failed"] == 0
    assert switching["comparison"]["compared"] == 30 and switching["comparison"]["differing"] == 0
    assert load_test.passed(result)


def test_load_test_compares_answers_and_fails_on_a_difference():
    """The comparison counts an answer that differs from its reference, and `passed` fails on it; a
    request that overlapped a model switch may match either model's reference."""
    from bench import load_requests

    call = load_requests.Call("similarity", "/similarity", ("a", "b"))
    same = load_requests.Outcome(call, 0.0, 1.0, answer='"0.5"')
    other = load_requests.Outcome(call, 0.0, 1.0, answer='"0.50001"')
    comparison = load_requests.compare([same, other], lambda o: [{call.key: '"0.5"'}])
    assert (comparison.compared, comparison.differing, len(comparison.examples)) == (2, 1, 1)
    either = load_requests.compare([other], lambda o: [{call.key: '"0.5"'}, {call.key: '"0.50001"'}])
    assert (either.compared, either.differing) == (1, 0)
    # The map's status line says how long the projection took and whether it was cached: masked.
    drawn = load_requests.Call(load_requests.MAP, "/draw_map", ())
    assert (load_requests.normalize(drawn, [{"plot": 1}, "12 points, PCA in 0.0 s."])
            == load_requests.normalize(drawn, [{"plot": 1}, "12 points, PCA in 1.3 s. Cached result."]))
    assert (load_requests.normalize(drawn, [{"plot": 1}, "12 points, PCA in 0.0 s."])
            != load_requests.normalize(drawn, [{"plot": 2}, "12 points, PCA in 0.0 s."]))
