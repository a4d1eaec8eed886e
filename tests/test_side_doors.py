"""A public server with no side doors (issue 75): every route that runs work goes through the queue's shares or is
closed, no route stores a file outside the disk budget, sessions are bounded per address and in total, a few
addresses together cannot take the queue, the decode pool or the login, odd text is refused with one line, and no
route answers a bare 500. The app is served as `python app.py --public` serves it (app.launch.serve), with a tiny
model; only 127.0.0.1 (and other loopback addresses as sources) is spoken to, in bounded loops."""
from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

import httpx
import pytest

from app.handlers import Studio
from app.server.gate import PUBLIC_SHARES, TrustedProxies
from app.server.public import PublicLimits
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
        engine = Engine.from_base(str(tiny_mlm_dir))
        public = PublicLimits()
        studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), work / "checkpoints"),
                        public=public)
        demo = enable_queue(build_app(studio), shares=PUBLIC_SHARES)
        args = argparse.Namespace(host="127.0.0.1", port=free_port(), share=False, auth=None, public=True,
                                  trusted_proxies=TrustedProxies())
        serve(demo, args, public)
        try:
            yield demo, demo.local_url.rstrip("/")
        finally:
            demo.close()


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
    demo, base = public_server
    with client() as http:
        answer = http.post(f"{base}/gradio_api/{route}/reverse_dictionary",
                           json={"data": api_data(base, "reverse_dictionary") + [None]})  # and its state
    assert answer.status_code == 404, answer.text
    assert "join the queue" in answer.json()["detail"]


def test_the_queue_and_gradio_client_still_answer(public_server):
    from gradio_client import Client

    demo, base = public_server
    assert call_result(base, "reverse_dictionary", api_data(base, "reverse_dictionary"))[0] == "complete"
    answer = Client(base + "/", verbose=False).predict("a dog", "a cat", api_name="/similarity")
    assert isinstance(answer, (float, int, str, dict)), answer


# ---- 2. an upload route outside the disk budget ----------------------------------------------------------------

def test_the_screen_recording_upload_is_closed_and_leaves_nothing(public_server):
    """Before: /gradio_api/process_recording stored up to 20 MB per call in Gradio's temp folder, outside the disk
    budget, for good when its reply was not read."""
    from app.settings import upload_dir

    demo, base = public_server
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
    first = own_temp_folder(7861)
    (first / "abc").mkdir()
    (first / "abc" / "upload.bin").write_bytes(b"x" * 1_000_000)  # the dead server's upload
    other = tmp_path / "gradio" / "not-ours.bin"  # another program's file in the shared folder stays
    other.write_bytes(b"y")
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    again = own_temp_folder(7861)  # the restart
    assert again == first == upload_dir() and not any(again.iterdir())
    assert disk_used() == 0 and other.exists()


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


# ---- 5. odd input and bare 500s -----------------------------------------------------------------------------

def test_a_lone_surrogate_in_any_text_input_is_refused_with_one_line(public_server):
    """Before: "\\ud800" in a text field of 11 endpoints answered "Something went wrong (TypeError)"."""
    import gradio as gr

    demo, base = public_server
    info = httpx.get(f"{base}/gradio_api/info", timeout=30).json()["named_endpoints"]
    tried = []
    for name, endpoint in info.items():
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
    demo, base = public_server
    with client("127.0.0.9") as http:  # an address with no sessions yet
        answer = http.post(base + path, json=body)
    assert answer.status_code in (400, 404), (answer.status_code, answer.text)
    detail = answer.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and 0 < len(detail) < 300, detail
