"""With a login (--auth), nothing about the app before it (issue 55): Gradio 6.31 embedded the whole API
description in the login page and answered several routes without a login. Every route the server mounts is
asked anonymously here; only 127.0.0.1 is spoken to, nothing is downloaded."""
from __future__ import annotations

import re
import time

import httpx
import pytest

from app.handlers import Studio
from app.shared.models import Models, ModelSpec
from bench.bench_app import free_port
from core import Engine

USER, PASSWORD = "alice", "a-long-passphrase"
# What no anonymous answer may hold: API names, the model's name, the app's title.
SECRETS = ("reverse_dictionary", "switch_model", "tiny-model", "DefSent")
FRONTEND = ("/", "/login", "/gradio_api/startup-events", "/assets/", "/static/", "/svelte/", "/favicon.ico",
            "/theme.css", "/gradio_api/theme.css")


@pytest.fixture(scope="module")
def server(tiny_mlm_dir, tmp_path_factory):
    from app.server.gate import middleware
    from app.ui import build_app
    from app.wiring import enable_queue

    engine = Engine.from_base(str(tiny_mlm_dir))
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny-model", base=str(tiny_mlm_dir)),
                                       tmp_path_factory.mktemp("checkpoints")))
    demo = enable_queue(build_app(studio))
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                auth=(USER, PASSWORD), app_kwargs={"middleware": middleware(demo, login=True)})
    try:
        yield demo
    finally:
        demo.close()


def mounted(routes: list) -> list[tuple[str, str]]:
    """(method, path) of every HTTP route in `routes`, included routers (Gradio's /gradio_api routes, whose
    paths hold their prefix) and mounts included, parameters filled in."""
    pairs = []
    for route in routes:
        path = getattr(route, "path", "") or ""
        if getattr(route, "original_router", None) is not None:  # an included router
            pairs += mounted(route.original_router.routes)
        elif hasattr(route, "routes") and not hasattr(route, "methods"):  # a Mount
            pairs += [(m, path.rstrip("/") + p) for m, p in mounted(route.routes)]
        elif path:
            pairs += [(m, re.sub(r"\{[^}]+\}", "x", path)) for m in getattr(route, "methods", None) or {"GET"}]
    return pairs


def beginning(answer: httpx.Response, seconds: float = 5.0, limit: int = 2_000_000) -> str:
    """An answer's body, read for at most `seconds` or `limit` bytes: an open stream (a heartbeat) never ends."""
    body, deadline = b"", time.monotonic() + seconds
    for chunk in answer.iter_bytes():
        body += chunk
        if len(body) > limit or time.monotonic() > deadline:
            break
    return body.decode(errors="replace")


def test_every_route_refuses_an_anonymous_request_but_the_login_forms(server):
    base = server.local_url.rstrip("/")
    pairs = mounted(server.server_app.routes)
    assert len(pairs) > 50 and ("POST", "/gradio_api/cancel") in pairs  # the listing found Gradio's routes
    open_ = []
    with httpx.Client(timeout=30) as client:
        for method, path in pairs:
            with client.stream(method, base + path, json={} if method == "POST" else None) as answer:
                text = beginning(answer)
            if any(secret.lower() in text.lower() for secret in SECRETS):
                open_.append(f"{method} {path}: {answer.status_code} tells about the app")
            elif answer.status_code not in (401, 404, 405) and not path.startswith(FRONTEND):
                open_.append(f"{method} {path}: {answer.status_code}")
    assert not open_, "\n".join(open_)


@pytest.mark.parametrize("method,path", [
    ("POST", "/gradio_api/cancel"), ("POST", "/gradio_api/reset"), ("GET", "/gradio_api/heartbeat/anything"),
    ("GET", "/gradio_api/openapi.json"), ("GET", "/gradio_api/app_id"), ("GET", "/gradio_api/user"),
    ("GET", "/gradio_api/token"), ("GET", "/manifest.json"), ("GET", "/config"), ("GET", "/gradio_api/info")])
def test_the_routes_found_open_answer_401(server, method, path):
    body = {"session_hash": "s", "fn_index": 0, "event_id": "e"} if method == "POST" else None
    with httpx.stream(method, server.local_url.rstrip("/") + path, json=body, timeout=30) as answer:
        assert answer.status_code == 401


def test_the_login_page_holds_only_the_login_form_and_logging_in_opens_the_app(server):
    base = server.local_url.rstrip("/")
    page = httpx.get(base + "/", timeout=30)
    assert page.status_code == 200 and '"auth_required":true' in page.text.replace(" ", "")
    assert "window.gradio_api_info = {};" in page.text
    assert not any(secret.lower() in page.text.lower() for secret in SECRETS)
    with httpx.Client(timeout=30) as client:
        assert client.post(base + "/login", data={"username": USER, "password": "wrong"}).status_code == 400
        assert client.post(base + "/login", data={"username": USER, "password": PASSWORD}).status_code == 200
        assert "reverse_dictionary" in client.get(base + "/").text  # the whole page once logged in
        assert client.get(base + "/gradio_api/info").status_code == 200
        assert client.get(base + "/gradio_api/app_id").status_code == 200


def test_failed_logins_from_one_address_are_slowed(server):
    """Issue 61: Gradio's login took about 1,000 guesses a second. After 5 failures in a row from one address the
    next attempt, even with the right password, is refused (429) until its wait is over; others are not."""
    base = server.local_url.rstrip("/")

    def login(password: str, source: str = "127.0.0.3") -> httpx.Response:
        with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=30) as client:
            return client.post(base + "/login", data={"username": USER, "password": password})

    assert [login(f"guess-{i}").status_code for i in range(5)] == [400] * 5
    refused = login(PASSWORD)
    assert refused.status_code == 429 and "try again in 2 s" in refused.json()["detail"], refused.text
    assert login(PASSWORD, source="127.0.0.4").status_code == 200  # another address logs in at once
    time.sleep(2.1)
    assert login("guess-6").status_code == 400  # checked again once the wait is over
    assert login(PASSWORD).status_code == 429 and "try again in 4 s" in login(PASSWORD).json()["detail"]
