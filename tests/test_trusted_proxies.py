"""Forwarding headers are believed only from proxies the operator names (issue 61, item 1). Before, a request from
any private or loopback peer was counted as the last X-Forwarded-For entry (and uvicorn itself swapped a
127.0.0.1 peer for it): 100 joins with forged addresses took the whole queue. Now the TCP peer counts unless it is
a trusted proxy (`--trusted-proxies`, $DEFSENT_TRUSTED_PROXIES, a Space's own proxy on a Space)."""
from __future__ import annotations

import threading
from types import SimpleNamespace

import httpx
import pytest

from app.server.gate import (QueueShares, TrustedProxies, client_address, forwarded_client, trust_proxies,
                             trusted_proxies)
from bench.bench_app import free_port

PROXY = TrustedProxies.parse("10.0.0.0/8, ::1")


@pytest.fixture(autouse=True)
def no_trust_left_behind():
    yield
    trust_proxies(TrustedProxies())


def test_an_untrusted_peers_forwarding_headers_are_ignored():
    headers = {"x-forwarded-for": "203.0.113.9", "forwarded": "for=203.0.113.9"}
    for peer in ("172.17.0.1", "127.0.0.1", "192.168.1.4", "198.51.100.2"):  # Docker, loopback, LAN, internet
        assert forwarded_client(peer, headers, TrustedProxies()) == peer
        assert forwarded_client(peer, headers, PROXY) == peer
    request = SimpleNamespace(client=SimpleNamespace(host="172.17.0.1"), headers={"x-forwarded-for": "1.2.3.4"})
    assert client_address(request) == "172.17.0.1"


def test_a_trusted_proxy_names_the_address_it_received_the_request_from():
    # The client's own entries come first; the proxy appended the last one.
    assert forwarded_client("10.0.0.2", {"x-forwarded-for": "6.6.6.6, 198.51.100.7"}, PROXY) == "198.51.100.7"
    # Two trusted proxies in a row: the last address that is not one of them.
    assert forwarded_client("10.0.0.2", {"x-forwarded-for": "6.6.6.6, 198.51.100.7, 10.0.0.9"}, PROXY) == \
        "198.51.100.7"
    assert forwarded_client("10.0.0.2", {"x-forwarded-for": "198.51.100.7:4711"}, PROXY) == "198.51.100.7"
    forwarded = 'for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https;by=10.0.0.2'
    assert forwarded_client("10.0.0.2", {"forwarded": forwarded}, PROXY) == "2001:db8:cafe::/64"  # its /64 (gate.sharing)
    assert forwarded_client("::1", {"forwarded": "For=198.51.100.7:80"}, PROXY) == "198.51.100.7"
    assert forwarded_client("10.0.0.2", {}, PROXY) == "10.0.0.2"  # no header: the proxy's own request


def test_two_headers_that_disagree_count_as_the_proxy_itself():
    """A proxy appends to one of them; the other, if it names someone else, the client wrote."""
    agree = {"x-forwarded-for": "198.51.100.7", "forwarded": "for=198.51.100.7"}
    forged = {"x-forwarded-for": "198.51.100.7", "forwarded": "for=6.6.6.6"}
    assert forwarded_client("10.0.0.2", agree, PROXY) == "198.51.100.7"
    assert forwarded_client("10.0.0.2", forged, PROXY) == "10.0.0.2"


def test_the_trusted_proxies_come_from_the_operator_or_a_space():
    from app.launch import parse_args

    assert trusted_proxies(None, on_space=False) == TrustedProxies()
    assert trusted_proxies(None, on_space=True).trusts("10.1.2.3") and not \
        trusted_proxies(None, on_space=True).trusts("198.51.100.7")
    assert trusted_proxies("", on_space=True) == TrustedProxies()  # the operator's word wins, even "none"
    assert parse_args(["--trusted-proxies", "172.17.0.1"]).trusted_proxies.trusts("172.17.0.1")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DEFSENT_TRUSTED_PROXIES", "192.168.0.0/16")
        assert parse_args([]).trusted_proxies.trusts("192.168.7.7")
    with pytest.raises(SystemExit):
        parse_args(["--trusted-proxies", "10.0.0.1, a-proxy"])


@pytest.fixture
def slow_server():
    """A Blocks on the app's queue and middleware with one slow event, each address allowed 2 waiting requests;
    (url, the event set once the first slow request runs)."""
    import gradio as gr

    from app.server.gate import middleware
    from app.wiring import enable_queue

    started, release = threading.Event(), threading.Event()

    def slow(text: str) -> str:
        started.set()
        release.wait(60)
        return text
    with gr.Blocks() as demo:
        box = gr.Textbox()
        box.submit(slow, box, box, api_name="slow", concurrency_limit=1)
    enable_queue(demo, shares=QueueShares(per_session=8, per_address=2))
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                app_kwargs={"middleware": middleware(demo)})
    try:
        yield demo.local_url, started
    finally:
        release.set()
        demo.close()


def join(url: str, session: str, headers: dict, source: str = "127.0.0.1") -> httpx.Response:
    """A raw /queue/join of the slow event from `source` (a loopback address) with `headers`."""
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=30) as client:
        return client.post(url.rstrip("/") + "/gradio_api/queue/join", headers=headers, json={
            "data": ["x"], "fn_index": 0, "session_hash": session, "event_data": None, "trigger_id": None})


def test_forged_addresses_from_an_untrusted_peer_do_not_get_past_the_per_address_share(slow_server):
    url, started = slow_server
    forged = [{"x-forwarded-for": f"203.0.113.{i}", "forwarded": f"for=198.51.100.{i}"} for i in range(6)]
    answers = [join(url, "forger-0", forged[0])]
    assert started.wait(30)
    answers += [join(url, f"forger-{i}", forged[i]) for i in range(1, 6)]  # one runs, 2 wait, the rest are refused
    assert [a.status_code for a in answers[:3]] == [200] * 3
    assert all(a.status_code == 503 and "network address" in a.json()["detail"] for a in answers[3:]), \
        [a.text for a in answers]
    assert join(url, "someone-else", {}, source="127.0.0.2").status_code == 200  # another address is not refused


def test_a_trusted_proxys_appended_addresses_get_a_share_each(slow_server):
    url, started = slow_server
    trust_proxies(TrustedProxies.parse("127.0.0.1"))
    answers = [join(url, "visitor-0", {"x-forwarded-for": "6.6.6.6, 203.0.113.0"})]
    assert started.wait(30)
    answers += [join(url, f"visitor-{i}", {"x-forwarded-for": f"6.6.6.6, 203.0.113.{i}"}) for i in range(1, 6)]
    assert [a.status_code for a in answers] == [200] * 6, [a.text for a in answers]
    same = [join(url, f"same-{i}", {"x-forwarded-for": "203.0.113.1"}) for i in range(2)]
    assert [a.status_code for a in same] == [200, 503]  # 203.0.113.1 had one waiting already
