"""A public server with no side doors (issue 75): every route that runs work goes through the queue's shares or is
closed, no route stores a file outside the disk budget, sessions are bounded per address and in total, a few
addresses together cannot take the queue, the decode pool or the login, odd text is refused with one line, and no
route answers a bare 500. The app is served as `python app.py --public` serves it (app.launch.serve), with a tiny
model; only 127.0.0.1 (and other loopback addresses as sources) is spoken to, in bounded loops."""
from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time

import httpx
import pytest

from app.handlers import Studio
from app.server.gate import PUBLIC_SHARES, TrustedProxies
from app.server.public import PublicLimits, use_disk_budget
from app.shared.models import Models, ModelSpec
from bench.bench_app import free_port
from core import Engine

SURROGATE = "\ud800"


@pytest.fixture(scope="module")
def public_server(tiny_mlm_dir, tmp_path_factory):
    """The app in public mode, served as app.launch serves it: (its Blocks, its base URL)."""
    from app.launch import serve
    from app.ui import build_app
    from app.wiring import enable_queue

    work = tmp_path_factory.mktemp("public")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DEFSENT_CACHE_DIR", str(work / "cache"))
        patch.setenv("GRADIO_TEMP_DIR", str(work / "gradio"))
        patch.setenv("TMPDIR", str(work))  # download zips: app.settings.download_dir()
        patch.setattr(tempfile, "tempdir", None)
        engine = Engine.from_base(str(tiny_mlm_dir))
        public = PublicLimits()
        studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), work / "checkpoints"),
                        public=public)
        studio.start()  # as the server's start: its disk budget in force
        demo = enable_queue(build_app(studio), shares=PUBLIC_SHARES)
        args = argparse.Namespace(host="127.0.0.1", port=free_port(), share=False, auth=None, public=True,
                                  trusted_proxies=TrustedProxies())
        serve(demo, args, public)
        try:
            yield demo, demo.local_url.rstrip("/")
        finally:
            demo.close()
            use_disk_budget(None)


def client(source: str = "127.0.0.1") -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=60)


def api_data(base: str, api_name: str) -> list:
    """The inputs of endpoint `api_name` by its API page: its defaults; for those without, "a dog" first, then ""
    for a text and None for the rest."""
    info = httpx.get(f"{base}/gradio_api/info", timeout=30).json()["named_endpoints"]["/" + api_name]
    return [p["parameter_default"] if p.get("parameter_has_default") else
            "a dog" if i == 0 else "" if p["python_type"]["type"] == "str" else None
            for i, p in enumerate(info["parameters"])]


def call_result(base: str, api_name: str, data: list, source: str = "127.0.0.1") -> tuple[str, str]:
    """(event, data) of the last event of a /gradio_api/call request: "complete" or "error". The body is JSON
    with escapes, as a browser sends it (httpx's own encoding refuses a lone surrogate)."""
    with client(source) as http:
        posted = http.post(f"{base}/gradio_api/call/{api_name}", content=json.dumps({"data": data}),
                           headers={"content-type": "application/json"})
        assert posted.status_code == 200, posted.text
        event, payload = "", ""
        with http.stream("GET", f"{base}/gradio_api/call/{api_name}/{posted.json()['event_id']}") as stream:
            for line in stream.iter_lines():
                if line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                elif line.startswith("data:"):
                    payload = line.split(":", 1)[1].strip()
                    if event in ("complete", "error"):
                        return event, payload
    return event, payload


# ---- 1. routes that skip the queue ---------------------------------------------------------------------------

@pytest.mark.parametrize("route", ["run", "api"])
def test_the_routes_that_skip_the_queue_are_closed(public_server, route):
    """Before: POST /gradio_api/run/NAME (and /api/NAME) ran the handler at once, outside the queue's shares and
    pools: 30 decodes from one address ran together."""
    _, base = public_server
    with client() as http:
        answer = http.post(f"{base}/gradio_api/{route}/reverse_dictionary",
                           json={"data": api_data(base, "reverse_dictionary") + [None]})  # and its state
    assert answer.status_code == 404, answer.text
    assert "join the queue" in answer.json()["detail"]


def test_the_queue_and_gradio_client_still_answer(public_server, tiny_mlm_dir):
    from gradio_client import Client

    _, base = public_server
    assert call_result(base, "reverse_dictionary", api_data(base, "reverse_dictionary"))[0] == "complete"
    api = Client(base + "/", verbose=False)
    answer = api.predict("a dog", "a cat", api_name="/similarity")
    cosine = float(Engine.from_base(str(tiny_mlm_dir)).similarity(["a dog"], ["a cat"])[0, 0])
    assert answer == f"**cosine similarity: {cosine:.4f}**"  # the served model's cosine (before: its type only)
    assert "total" in api.predict(api_name="/running_work")  # an event outside the queue (queue=False) still answers


# ---- 2. an upload route outside the disk budget ----------------------------------------------------------------

def test_the_screen_recording_upload_is_closed_and_leaves_nothing(public_server):
    """Before: /gradio_api/process_recording stored up to 20 MB per call in Gradio's temp folder, outside the disk
    budget, for good when its reply was not read."""
    from app.settings import upload_dir

    _, base = public_server
    before = sorted(upload_dir().rglob("*")) if upload_dir().exists() else []
    with client() as http:
        answer = http.post(f"{base}/gradio_api/process_recording", files={"video": ("r.mp4", b"\0" * 200_000)})
    assert answer.status_code == 404 and "not available" in answer.json()["detail"], answer.text
    after = sorted(upload_dir().rglob("*")) if upload_dir().exists() else []
    assert after == before


def test_a_restart_does_not_count_a_dead_servers_files(tmp_path, monkeypatch):
    """Before: files a killed server left in Gradio's temp folder stayed counted in the new server's disk budget
    (277 MB after a kill -9) until they were an hour old."""
    from app.server.public import disk_used, own_temp_folder
    from app.settings import upload_dir

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # download zips: app.settings.download_dir()
    monkeypatch.setattr(tempfile, "tempdir", None)
    first = own_temp_folder(7861)
    (first / "abc").mkdir()
    (first / "abc" / "upload.bin").write_bytes(b"x" * 1_000_000)  # the dead server's upload
    other = tmp_path / "gradio" / "not-ours.bin"  # another program's file in the shared folder stays
    other.write_bytes(b"y")
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    again = own_temp_folder(7861)  # the restart
    assert again == first == upload_dir() and not any(again.iterdir())
    assert disk_used() == 0 and other.exists()


def test_a_second_server_on_a_live_servers_port_leaves_its_files_alone(tmp_path, monkeypatch):
    """Before: a second public server started on the port of a live one emptied the live one's temp folder (its
    visitors' uploads), and only then failed to bind the port."""
    import os
    import subprocess
    import sys

    from app.server.public import own_temp_folder

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    live = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom app.server.public import own_temp_folder\n"
                             "(own_temp_folder(7863) / 'upload.bin').write_bytes(b'x')\nprint('up', flush=True)\n"
                             "time.sleep(60)"], stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert live.stdout.readline().strip() == "up"
        with pytest.raises(RuntimeError, match="Another public server on port 7863"):
            own_temp_folder(7863)
        assert (tmp_path / "gradio" / "defsent-public-7863" / "upload.bin").exists()
    finally:
        live.kill()
        live.wait()
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    assert not any(own_temp_folder(7863).iterdir())  # once it is gone (killed), the port's folder is this one's


# ---- 3. sessions without bound -------------------------------------------------------------------------------

def test_a_session_flood_from_one_address_is_bounded_and_others_keep_their_state(public_server):
    """Before: each /gradio_api/component_server request with a new session hash made a session (10,100 took the
    server from 2.8 to 6.1 GB), and past Gradio's 10,000 the oldest were dropped, a visitor's model choice with them."""
    demo, base = public_server
    holder = demo.server_app.state_holder
    limit = PublicLimits().sessions.per_address
    similarity = next(i for i, fn in demo.fns.items() if fn.api_name == "similarity")
    with client("127.0.0.6") as http:  # a visitor's page: its session is made by its first event
        joined = http.post(f"{base}/gradio_api/queue/join", json={
            "data": ["a dog", "a cat", None], "fn_index": similarity, "session_hash": "visitor", "trigger_id": None})
    assert joined.status_code == 200, joined.text
    answers = []
    with client("127.0.0.5") as http:
        for i in range(limit + 10):
            answers.append(http.post(f"{base}/gradio_api/component_server", json={
                "session_hash": f"flood{i}", "component_id": 1, "fn_name": "nothing", "data": None}))
    flood = [key for key in holder.session_data if key.startswith("flood")]
    assert len(flood) <= limit, len(flood)
    refused = [a for a in answers if a.status_code == 503]
    assert len(refused) == 10 and "sessions" in refused[0].json()["detail"], answers[-1].text
    assert "visitor" in holder.session_data


def test_sessions_are_bounded_in_total_and_an_idle_one_goes_before_a_live_one():
    """The bounds of app.server.sessions on Gradio's own StateHolder: per address, in total, an idle session (its end
    callbacks run: a visitor's saved models go with it) dropped before a live one, a page's heartbeat keeps its
    session live however long unused, and a session made up for one request goes once it has ended."""
    import contextvars
    import datetime

    import gradio as gr
    from gradio.state_holder import StateHolder

    from app.server.sessions import (
        SessionLimits,
        SessionRefused,
        handling,
        install,
        request_address,
    )

    ended = []
    with gr.Blocks() as blocks:
        state = gr.State(None, delete_callback=ended.append)
    holder = StateHolder()
    holder.set_blocks(blocks)
    busy = {"once"}
    table = install(holder, SessionLimits(per_address=2, total=3, idle_s=60), busy=lambda key: key in busy)

    def make(key: str, address: str) -> None:
        with handling(address):
            holder[key]

    def age(*keys: str) -> None:
        for key in keys:
            holder.time_last_used[key] = datetime.datetime.now() - datetime.timedelta(minutes=5)

    make("a1", "A")
    holder["a1"][state._id] = "a1's saved models"
    make("a2", "A")
    built = []
    with pytest.MonkeyPatch.context() as patch:  # a refusal costs no session built (~25 ms for the app's)
        patch.setattr("gradio.state_holder.SessionState", lambda blocks: built.append(blocks))
        with pytest.raises(SessionRefused, match="at most 2"):
            make("a3", "A")  # both of A's are live
    assert built == []
    age("a1")
    make("a3", "A")  # a1, idle, goes, with its end callback
    assert list(table) == ["a2", "a3"] and ended == ["a1's saved models"]
    make("b1", "B")
    with pytest.raises(SessionRefused, match="as many visitors' sessions as it keeps"):
        make("b2", "B")  # 3 in all, all live, and B would hold as many as A (A's would go for C: see
        # test_addresses_holding_heartbeats_cannot_lock_a_newcomer_out_of_the_sessions)
    age("a2", "a3")
    table.heartbeat("a2", True)  # a2's page is open: live, however long unused
    make("c1", "C")
    assert sorted(table) == ["a2", "b1", "c1"]
    table.heartbeat("a2", False)
    holder["a2"]  # used again
    table.dispose("once")
    with pytest.raises(SessionRefused):
        make("once", "D")  # nothing idle: a made-up session is admitted like any
    age("b1")
    make("once", "D")  # b1 goes (the only idle one)
    holder["c1"]
    busy.clear()  # its request has ended: idle at once, though just used
    make("d2", "E")
    assert sorted(table) == ["a2", "c1", "d2"]
    age("a2", "c1", "d2")
    busy.add("a2")  # a request of a2 waits in the queue: live, however long unused
    make("e1", "F")
    assert sorted(table) == ["a2", "d2", "e1"]
    with handling("A"):
        started_meanwhile = contextvars.copy_context()  # as a task the request starts (the queue's) copies it
    assert started_meanwhile.run(request_address) is None  # not A's any more once the request has ended


# ---- 5. odd input and bare 500s -----------------------------------------------------------------------------

def test_a_lone_surrogate_in_any_text_input_is_refused_with_one_line(public_server):
    """Before: "\\ud800" in a text field of 11 endpoints answered "Something went wrong (TypeError)"."""
    import gradio as gr

    demo, base = public_server
    info = httpx.get(f"{base}/gradio_api/info", timeout=30).json()["named_endpoints"]
    tried = []
    for name in info:
        fn = next(f for f in demo.fns.values() if f.api_name == name.lstrip("/"))
        texts = [i for i, block in enumerate(b for b in fn.inputs if not isinstance(b, gr.State))
                 if isinstance(block, gr.Textbox)]
        if not texts:
            continue
        data = api_data(base, name.lstrip("/"))
        data[texts[0]] = "a " + SURROGATE + " dog"
        event, payload = call_result(base, name.lstrip("/"), data)
        tried.append(name)
        assert event == "error", (name, payload)
        message = json.loads(payload) if payload.startswith(("{", '"')) else payload
        message = message.get("message", message) if isinstance(message, dict) else message
        assert "surrogate" in str(message) and "went wrong" not in str(message), (name, payload)
    assert len(tried) >= 8, tried


@pytest.mark.parametrize("path,body", [
    ("/gradio_api/component_server", {"session_hash": "s1", "component_id": 987654, "fn_name": "x", "data": None}),
    ("/gradio_api/queue/join", {"data": [], "fn_index": 987654, "session_hash": "s2"}),
    ("/gradio_api/run/predict", {"data": []}),
    ("/gradio_api/call/v2/no_such_endpoint", {}),
])
def test_no_route_answers_a_bare_500(public_server, path, body):
    _, base = public_server
    with client("127.0.0.9") as http:  # an address with no sessions yet
        answer = http.post(base + path, json=body)
    assert answer.status_code in (400, 404), (answer.status_code, answer.text)
    detail = answer.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and 0 < len(detail) < 300, detail


# ---- 4. shares that a few addresses beat ----------------------------------------------------------------------

@pytest.fixture
def pooled_server():
    """A Blocks on the app's queue and middleware with a slow pool (one at a time, like the decodes) and a light one
    (app.server.gate.LIGHT_POOL), 9 places, 3 an address, 3 kept for light requests: (url, the order the slow
    requests ran in, the event that lets the first one finish)."""
    import gradio as gr

    from app.server.gate import LIGHT_POOL, QueueShares, middleware
    from app.wiring import enable_queue

    order, release = [], threading.Event()

    def slow(text: str) -> str:
        order.append(text)
        release.wait(60)
        return text
    with gr.Blocks() as demo:
        box = gr.Textbox()
        box.submit(slow, box, box, api_name="slow", concurrency_id="decode", concurrency_limit=1)
        gr.Button().click(lambda text: text, box, box, api_name="light", concurrency_id=LIGHT_POOL,
                          concurrency_limit=2)
    enable_queue(demo, max_size=9, shares=QueueShares(per_session=8, per_address=3, light_reserve=3))
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                app_kwargs={"middleware": middleware(demo)})
    try:
        yield demo.local_url.rstrip("/"), order, release
    finally:
        release.set()
        demo.close()


def join(base: str, api_index: int, text: str, source: str) -> httpx.Response:
    with client(source) as http:
        return http.post(f"{base}/gradio_api/queue/join", json={
            "data": [text], "fn_index": api_index, "session_hash": f"page-{text}", "trigger_id": None})


def test_a_few_addresses_cannot_take_the_whole_queue_nor_the_slow_pool(pooled_server):
    """Before: four addresses filled the 64 places with slow requests and everyone was refused, light requests too;
    and one address's 16 waiting decodes ran before anyone else's."""
    base, order, release = pooled_server
    assert join(base, 0, "a0", "127.0.0.1").status_code == 200
    for _ in range(100):
        if order:
            break
        time.sleep(0.05)
    assert order == ["a0"]  # runs, holding the slow pool
    answers = {text: join(base, 0, text, source) for source, texts in
               [("127.0.0.1", ["a1", "a2", "a3"]), ("127.0.0.2", ["b0", "b1", "b2"]), ("127.0.0.3", ["c0", "c1"])]
               for text in texts}
    assert all(answers[text].status_code == 200 for text in ["a1", "a2", "a3", "b0", "b1", "b2"])
    assert all(answers[text].status_code == 503 for text in ["c0", "c1"]), {t: a.text for t, a in answers.items()}
    assert "kept for quick ones" in answers["c0"].json()["detail"]
    assert join(base, 1, "light", "127.0.0.4").status_code == 200  # the reserve: before, "Queue is full"
    release.set()
    for _ in range(200):
        if len(order) == 7:
            break
        time.sleep(0.05)
    assert order == ["a0", "b0", "a1", "b1", "a2", "b2", "a3"]  # by turns; before, a1 a2 a3 then b0 b1 b2


def test_the_whole_servers_failed_logins_are_bounded_not_only_each_address():
    """Before: the throttle counted failures per address only: 40 addresses checked 200 passwords in 3.7 s."""
    import asyncio

    from app.server.gate import LoginThrottle

    checked = []

    async def wrong_password(scope, receive, send):
        checked.append(scope["client"][0])
        await send({"type": "http.response.start", "status": 400, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    throttle = LoginThrottle(wrong_password)

    async def guesses() -> list[int]:
        codes = []
        for address in range(40):
            transport = httpx.ASGITransport(app=throttle, client=(f"198.51.100.{address}", 4000))
            async with httpx.AsyncClient(transport=transport, base_url="http://server") as http:
                for guess in range(5):
                    answer = await http.post("/login", data={"username": "alice", "password": f"guess-{guess}"})
                    codes.append(answer.status_code)
        return codes
    codes = asyncio.run(guesses())
    assert len(checked) == throttle.total_failures == 30, len(checked)  # before: all 200 checked
    assert codes.count(429) == 200 - 30
    assert throttle.refusal("203.0.113.1", time.monotonic()).startswith("Too many failed logins on this server")


def test_a_few_addresses_cannot_hold_the_disk_budget_for_long(tmp_path, monkeypatch):
    """Before: each address could hold half the budget (two filled it, issue 75), and Gradio's temp files were kept
    an hour before the budget could reclaim them."""
    import os

    from app.server.public import DiskBudget, disk_budget, guard_write
    from app.settings import upload_dir

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    limits = PublicLimits(disk_bytes=3_000_000)
    assert limits.address_share * 5 <= 0.5  # five addresses together hold at most half of it
    use_disk_budget(DiskBudget(limits))
    try:
        old = upload_dir() / "an-upload" / "words.tsv"
        old.parent.mkdir(parents=True)
        old.write_bytes(b"x" * 2_000_000)
        stale = time.time() - 20 * 60  # 20 minutes: past the budget's temp lifetime, within Gradio's hour
        os.utime(old.parent, (stale, stale))
        guard_write(1_500_000, "this upload")  # before: refused, the old upload kept its room for the hour
        assert not old.exists() and disk_budget().reserved() == 0
    finally:
        use_disk_budget(None)


# Control characters, bidirectional overrides, noncharacters, the last code point, combining marks, a BOM, emoji.
ODD = "\x00 \u202e\u2066 \uffff\ufffe \U0010ffff " + "e\u0301" * 300 + " \r\n\t\x0b \ufeff " + "\U0001f600" * 50


def test_odd_unicode_in_any_text_input_is_answered_or_refused_with_one_line(public_server):
    import gradio as gr

    demo, base = public_server
    info = httpx.get(f"{base}/gradio_api/info", timeout=30).json()["named_endpoints"]
    for name in info:
        fn = next(f for f in demo.fns.values() if f.api_name == name.lstrip("/"))
        texts = [i for i, block in enumerate(b for b in fn.inputs if not isinstance(b, gr.State))
                 if isinstance(block, gr.Textbox)]
        if not texts or name in ("/evaluate_sts", "/evaluate_senteval"):
            continue
        data = api_data(base, name.lstrip("/"))
        data[texts[0]] = "a dog " + ODD
        event, payload = call_result(base, name.lstrip("/"), data, source="127.0.0.8")
        assert event in ("complete", "error"), (name, event, payload[:200])
        if event == "error":
            message = str(json.loads(payload).get("error") if payload.startswith("{") else payload)
            assert "went wrong" not in message and "\n" not in message and len(message) < 600, (name, message)


def test_a_refused_request_without_a_session_leaves_nothing_in_the_session_table():
    """Before: a request without a session (/gradio_api/call/NAME) was marked disposable before the queue took it;
    refused (queue full), its made-up session was never made, and its mark stayed for good: one a refusal."""
    import asyncio
    from types import SimpleNamespace

    from app.server.gate import QueueShares, bound_per_client
    from app.server.sessions import BoundedSessions, SessionLimits

    holder = SimpleNamespace(time_last_used={})
    table = BoundedSessions(holder, SessionLimits(per_address=4, total=8))
    accepted = iter([False, True])

    async def push(body, request, username):
        return (True, "queued", "") if next(accepted) else (False, "Queue is full", "queue_full")
    queue = SimpleNamespace(push=push, event_queue_per_concurrency_id={}, active_jobs=[], max_size=64,
                            blocks=SimpleNamespace(fns={0: SimpleNamespace(concurrency_id="light")},
                                                   state_holder=SimpleNamespace(session_data=table)))
    bound_per_client(queue, QueueShares(per_session=8))
    refused = SimpleNamespace(fn_index=0, session_hash=None)
    assert asyncio.run(queue.push(refused, None, None))[0] is False
    assert table.disposable == set()
    taken = SimpleNamespace(fn_index=0, session_hash=None)
    assert asyncio.run(queue.push(taken, None, None))[0] is True
    assert table.disposable == {taken.session_hash}  # made up and queued: dropped once its request ends
