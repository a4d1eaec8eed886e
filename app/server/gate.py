"""What stands between a client and Gradio's shared queue (issue 55): a share of the queue per client,
and cancels that reach the events they mean.

- **Shares.** Gradio 6.31 bounds only the whole queue (64 waiting requests): one client submitting in a loop
  held every slot, and every other visitor got 503 "Queue is full". `bound_per_client` caps the requests one
  session may have waiting (and, in public mode, one network address: a script can make up a new session for
  each request); one more is refused at once with a message saying so, and nobody else's request is.
- **Cancels.** Gradio's /gradio_api/cancel needs the event id, which a client learns only once the queue has
  answered its join: `job.cancel()` right after `client.submit()` sends `event_id: null`, which Gradio refused
  (422) without cancelling anything, so the request ran anyway. `CancelReach` (ASGI middleware) reads every
  cancel first: the session's waiting events of that function are removed, whatever event id came with it,
  and a running one is stopped. A cancel that arrived before its join is made good by the /gradio_api/reset
  both clients send right after (with the event id, once they know it): the event is removed or stopped.
  A closed event stream already removes its session's waiting events (Gradio's queue_data).
"""
from __future__ import annotations

import functools
import ipaddress
import json
import logging
import os
import re
import time
import uuid
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from gradio.server_messages import ProcessCompletedMessage

from ..messages import quoted
from .request_limits import JsonValueLimit, RequestBodyLimit, UploadRoom, plain_answer, replayed
from .sessions import (BadSessionHash, BoundedSessions, SessionLimits, SessionRefused, handling, install,
                       session_hash_refusal)

log = logging.getLogger(__name__)

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
CANCEL_BODY_BYTES = 65_536  # a cancel or reset is ~100 bytes; a bigger body is left to Gradio (its 422)


LIGHT_POOL = "quick"  # the concurrency pool of the light requests (app.wiring.QUICK): tens of ms each


@dataclass(frozen=True)
class QueueShares:
    """How many requests one client may have waiting in the queue (running ones are not counted), and in public mode
    how the queue is shared between addresses: places kept for light requests, and each pool's line served in turn
    by address (`fair_order`)."""
    per_session: int = 8  # a page's own events are one at a time per button: 8 is many tabs' worth
    per_address: int | None = None  # public mode: a network address (several visitors may share one)
    light_reserve: int = 0  # places of the queue only requests of LIGHT_POOL may take

    def __post_init__(self) -> None:
        if self.per_session < 1 or (self.per_address is not None and self.per_address < 1) or self.light_reserve < 0:
            raise ValueError("A client's share of the queue must be at least 1, the light requests' reserve at least 0.")


# Four addresses filled Gradio's 64 places with slow requests and every visitor was refused (issue 75): 16 places
# are kept for the light requests (they drain in about a second).
PUBLIC_SHARES = QueueShares(per_session=8, per_address=16, light_reserve=16)


# A Hugging Face Space's container is reached only through the Space's own proxy, from a private address; the
# proxy appends the visitor's address to X-Forwarded-For. So on a Space (and only there) private and loopback
# peers are trusted by default.
SPACE_PROXIES = "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 127.0.0.0/8, ::1/128, fc00::/7"
ADDRESS_CHARS = 64  # of a forwarded entry that is not an address (e.g. "unknown"), kept as its key
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class TrustedProxies:
    """The proxies whose X-Forwarded-For and Forwarded headers are believed (none by default: then the TCP peer
    is the client, whatever headers it sends)."""
    networks: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, text: str) -> "TrustedProxies":
        """Comma-separated addresses or networks ("10.0.0.5, 172.16.0.0/12"); ValueError naming a bad entry."""
        networks = []
        for entry in (part.strip() for part in text.split(",")):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                raise ValueError(f"{entry[:ADDRESS_CHARS]!r} is not an IP address or network "
                                 "(e.g. 10.0.0.5 or 172.16.0.0/12)") from None
        return cls(tuple(networks))

    def trusts(self, host: str) -> bool:
        """Whether `host` (an address, as a string) is one of these proxies."""
        address = _ip(host)
        return address is not None and any(address in network for network in self.networks)


def trusted_proxies(value: str | None, on_space: bool) -> TrustedProxies:
    """The operator's proxies (app.launch: --trusted-proxies or $DEFSENT_TRUSTED_PROXIES; "" names none), else on a Space
    its own proxy (`SPACE_PROXIES`), else none. ValueError for a bad entry."""
    if value is not None:
        return TrustedProxies.parse(value)
    return TrustedProxies.parse(SPACE_PROXIES) if on_space else TrustedProxies()


_TRUSTED: list[TrustedProxies] = [TrustedProxies()]  # this server's, set by the launcher (app.launch)


def trust_proxies(proxies: TrustedProxies) -> None:
    """Make `client_address` believe the forwarding headers of `proxies` (and of no one else)."""
    _TRUSTED[0] = proxies


def _connection_key(host: str) -> str | None:
    """The address whose bound of open connections (app.server.connections) a connection from the TCP peer `host`
    counts in (`sharing`); None for a trusted proxy, whose visitors share its address and which bounds its own."""
    return None if _TRUSTED[0].trusts(host) else sharing(host)


def client_address(request: Any) -> str:
    """The network address a request came from: the TCP peer, unless the peer is a trusted proxy
    (`trust_proxies`); then the last address its forwarding headers name that is not a trusted proxy, the one
    the first trusted proxy received the request from. A client can put any address in the headers, but not
    after the one its proxy appended, and an untrusted peer's headers are ignored (issue 61: a forged
    X-Forwarded-For from a Docker or LAN peer made each request a new address)."""
    peer = request.client.host if request is not None and request.client else ""
    return forwarded_client(peer, request.headers if request is not None else {}, _TRUSTED[0])


def scope_address(scope: Scope) -> str:
    """`client_address` of an ASGI request scope."""
    from starlette.datastructures import Headers
    client = scope.get("client")
    return forwarded_client(client[0] if client else "", Headers(scope=scope), _TRUSTED[0])


def forwarded_client(peer: str, headers: Any, proxies: TrustedProxies) -> str:
    """The client behind `peer` by the rule of `client_address`. X-Forwarded-For and Forwarded (RFC 7239) are
    both read; when a trusted proxy's request carries both and they name different clients, one of them was
    forged by the client (a proxy appends to one of them only), so the peer itself is the address: forgers
    then share the proxy's one share."""
    if not proxies.trusts(peer):
        return sharing(peer)
    chains = [_chain(headers, "x-forwarded-for", _xff_entries), _chain(headers, "forwarded", _forwarded_entries)]
    clients = {_first_untrusted(chain, proxies) for chain in chains if chain}
    return sharing(clients.pop() if len(clients) == 1 else peer)


def sharing(address: str) -> str:
    """The address whose limits and shares a client uses: an IPv6 address's /64 network (one subscriber is given a
    whole /64, 2^64 addresses, so each would be a new visitor with shares of its own), an IPv4-mapped IPv6 address's
    IPv4 address, any other address as it is."""
    ip = _ip(address)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return address


def _chain(headers: Any, name: str, entries: Callable[[str], list[str]]) -> list[str]:
    """The addresses a forwarding header lists, first hop first (every header of that name, in order)."""
    values = headers.getlist(name) if hasattr(headers, "getlist") else [headers.get(name, "")]
    return [entry for value in values if value for entry in entries(value)]


def _xff_entries(value: str) -> list[str]:
    return [_host(entry) for entry in value.split(",") if entry.strip()]


def _forwarded_entries(value: str) -> list[str]:
    """The `for=` of each element of a Forwarded header (an element without one names no address: "")."""
    found = []
    for element in value.split(","):
        pairs = (pair.partition("=") for pair in element.split(";"))
        found.append(next((_host(v.strip().strip('"')) for k, _, v in pairs if k.strip().lower() == "for"), ""))
    return found


def _first_untrusted(chain: list[str], proxies: TrustedProxies) -> str:
    """From the last hop back, the first address that is not a trusted proxy (the first one if all are)."""
    for host in reversed(chain):
        if not proxies.trusts(host):
            return host
    return chain[0]


def _host(entry: str) -> str:
    """An address without its port or brackets ("[::1]:80" -> "::1", "1.2.3.4:80" -> "1.2.3.4"), normalised."""
    entry = entry.strip()
    if entry.startswith("["):
        entry = entry[1:].partition("]")[0]
    elif entry.count(":") == 1:
        entry = entry.partition(":")[0]
    address = _ip(entry)
    return str(address) if address is not None else entry[:ADDRESS_CHARS]


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def waiting(queue: Any) -> list:
    """Every event waiting in the queue (not yet running)."""
    return [event for line in queue.event_queue_per_concurrency_id.values() for event in line.queue]


def running(queue: Any) -> list:
    """Every event running now."""
    return [event for job in queue.active_jobs if job for event in job]


def share_refusal(queue: Any, session_hash: str | None, request: Any, shares: QueueShares,
                  pool: str | None = None) -> str | None:
    """Why one more request of this client, for concurrency pool `pool`, may not wait in the queue; None when it
    may."""
    events = waiting(queue)
    mine = sum(1 for event in events if session_hash and event.session_hash == session_hash)
    if mine >= shares.per_session:
        return (f"You already have {mine} requests waiting (at most {shares.per_session}): wait for one to "
                "finish, or cancel it, before sending more.")
    if shares.per_address is not None:
        address = client_address(request)
        here = sum(1 for event in events if client_address(event.request) == address)
        if here >= shares.per_address:
            return (f"Your network address already has {here} requests waiting (at most {shares.per_address}): "
                    "wait for one to finish before sending more.")
    slow_places = (getattr(queue, "max_size", None) or 0) - shares.light_reserve
    if shares.light_reserve and pool != LIGHT_POOL:
        slow = sum(1 for event in events if event.concurrency_id != LIGHT_POOL)
        if slow >= slow_places:
            return (f"This server has {slow} slow requests waiting (at most {slow_places}; the other "
                    f"{shares.light_reserve} places are kept for quick ones): try again in a minute.")
    return None


def fair_order(line: list, busy: list = ()) -> None:
    """Reorder one pool's waiting events (oldest first) so that addresses take turns, those with fewer of the pool's
    events running (`busy`) first: each address's next event, in the order they came, then each one's after that...
    An address with 16 decodes waiting delayed everyone's decode by all 16 (~60 s, issue 75); now by at most one
    per other address waiting."""
    turns: Counter[str] = Counter(client_address(event.request) for event in busy)
    keyed = []
    for arrival, event in enumerate(line):
        address = client_address(event.request)
        keyed.append((turns[address], arrival, event))
        turns[address] += 1
    line[:] = [event for _, _, event in sorted(keyed, key=lambda k: k[:2])]


def bound_per_client(queue: Any, shares: QueueShares) -> None:
    """Make `queue` (a Blocks' Gradio queue) refuse, with a 503 and its reason, a request past its client's
    share; others' requests are not affected. In public mode (`shares.per_address`) each pool's line is served by
    address in turn (`fair_order`). A request naming no function of this app, or a session hash over
    app.server.sessions.MAX_SESSION_HASH_CHARS, is refused with a 400 (Gradio: a bare 500; any hash), one whose session
    no bound has room for with a 503 (app.server.sessions)."""
    push = queue.push

    @functools.wraps(push)
    async def bounded_push(body, request, username):
        fn = queue.blocks.fns.get(body.fn_index) if isinstance(body.fn_index, int) else None
        if fn is None:
            return False, f"This app has no function {quoted(body.fn_index, 24)}: its API page lists them.", "error"
        reason = session_hash_refusal(body.session_hash)
        if reason is not None:
            return False, reason, "error"
        reason = share_refusal(queue, body.session_hash, request, shares, fn.concurrency_id)
        if reason is not None:
            return False, reason, "queue_full"
        # Gradio makes up a session for a request without one (/gradio_api/call/NAME) when it runs, in the queue's
        # task, which knows no request's address: made up here, it is admitted now, as the request's, and may be
        # dropped once its request has ended.
        made_up = body.session_hash is None
        if made_up:
            body.session_hash = uuid.uuid4().hex
        try:
            pushed = await push(body=body, request=request, username=username)
        except SessionRefused as refused:
            return False, str(refused), "error" if isinstance(refused, BadSessionHash) else "queue_full"
        table = queue.blocks.state_holder.session_data
        if made_up and pushed[0] and isinstance(table, BoundedSessions):  # a refused one is never made: not kept
            table.dispose(body.session_hash)
        if shares.per_address is not None and pushed[0] and fn.concurrency_id in queue.event_queue_per_concurrency_id:
            fair_order(queue.event_queue_per_concurrency_id[fn.concurrency_id].queue,
                       [event for event in running(queue) if event.concurrency_id == fn.concurrency_id])
        return pushed
    queue.push = bounded_push


async def cancel_events(queue: Any, session_hash: str | None, fn_index: int | None,
                        event_id: str | None) -> str | None:
    """Cancel the event `event_id`, and every event of `session_hash` for function `fn_index`: those waiting
    are removed (their client is told they completed, as Gradio's own cancel does), those running are marked
    as having lost their client, which stops their work (app.server.work). Returns the id of a running event it
    matched (for Gradio's cancel, which completes it), else None."""
    def matches(event) -> bool:
        return event._id == event_id or (session_hash is not None and event.session_hash == session_hash
                                         and fn_index is not None and event.fn._id == fn_index)

    async with queue.delete_lock:
        removed = [event for event in waiting(queue) if matches(event)]
        for event in removed:
            queue.event_queue_per_concurrency_id[event.concurrency_id].queue.remove(event)
            queue.event_ids_to_events.pop(event._id, None)
    for event in removed:
        if event.session_hash in queue.pending_messages_per_session:
            queue.pending_messages_per_session[event.session_hash].put_nowait(
                ProcessCompletedMessage(output={}, success=True, event_id=event._id))
    stopped = [event for event in running(queue) if matches(event)]
    for event in stopped:
        event.alive = False
    return stopped[0]._id if stopped else None


class CancelReach:
    """ASGI middleware in front of Gradio's app: a cancel (/gradio_api/cancel) or reset (/gradio_api/reset)
    cancels its events (`cancel_events`) before Gradio answers it; a cancel without an event id is passed on
    with the running event's id (or an empty one), so Gradio also stops its task instead of refusing it."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], blocks: Any):
        self.app, self.blocks = app, blocks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "").rstrip("/")
        if scope["type"] != "http" or scope.get("method") != "POST" or not path.endswith(
                ("/gradio_api/cancel", "/gradio_api/reset")):
            await self.app(scope, receive, send)
            return
        body, more = await _read(receive, CANCEL_BODY_BYTES)
        if not more:
            body = await self._cancel(body, path.endswith("/cancel"))
        await self.app(scope, replayed(body, more, receive), send)

    async def _cancel(self, body: bytes, is_cancel: bool) -> bytes:
        """Cancel what `body` names; the body to pass on to Gradio."""
        try:
            request = json.loads(body)
        except ValueError:
            return body
        if not isinstance(request, dict) or self.blocks._queue is None:
            return body
        session, fn_index, event_id = (request.get("session_hash"), request.get("fn_index"),
                                       request.get("event_id"))
        if not isinstance(event_id, str):
            event_id = None
        if not is_cancel or not isinstance(session, str) or isinstance(fn_index, bool) or \
                not isinstance(fn_index, int):
            session, fn_index = None, None  # a reset names only its event
        running_id = await cancel_events(self.blocks._queue, session, fn_index, event_id)
        if is_cancel and event_id is None and session is not None:
            request["event_id"] = running_id or ""
            return json.dumps(request).encode()
        return body


async def _read(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """Up to `limit` bytes of a request's body; (them, whether more was left unread)."""
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return body, False
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return body, False
        if len(body) > limit:
            return body, True


# What a browser needs to show the login form and log in: the page itself (without the API description), the
# login route, and the frontend's own files; and the call Gradio's launch makes to start the app (it says only
# true or false).
LOGIN_PAGE = {"/"}
LOGIN_ROUTES = {"/login", "/gradio_api/startup-events"}
FRONTEND_PREFIXES = ("/assets/", "/static/", "/svelte/")
FRONTEND_FILES = {"/favicon.ico", "/theme.css", "/gradio_api/theme.css"}
API_INFO = re.compile(rb"window\.gradio_api_info = .*?;</script>", re.S)
NOT_AUTHENTICATED = b'{"detail":"Not authenticated"}'


class LoginGate:
    """ASGI middleware for a server with a login (--auth): before the login, nothing but the login form. Gradio
    6.31 left several routes open (/gradio_api/cancel, reset, heartbeat/ANY, app_id, user, token, openapi.json,
    /manifest.json) and embedded the whole API description (every endpoint, its parameters, the model names)
    in the login page (issue 55). Anonymous requests get the page with an empty API description, the login
    route and the frontend's files; everything else 401."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], blocks: Any):
        self.app, self.blocks = app, blocks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self._logged_in(scope):
            await self.app(scope, receive, send)
            return
        path = "/" + scope.get("path", "").strip("/")
        if path in LOGIN_PAGE and scope.get("method") in ("GET", "HEAD"):
            await self.app(scope, receive, _without_api_info(send))
        elif path in LOGIN_ROUTES or path in FRONTEND_FILES or path.startswith(FRONTEND_PREFIXES):
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await plain_answer(send, 401, NOT_AUTHENTICATED, b"application/json")

    def _logged_in(self, scope: Scope) -> bool:
        """Whether the request carries the cookie of a login this server made (Gradio's own check)."""
        app = getattr(self.blocks, "server_app", None)
        if app is None or (app.auth is None and app.auth_dependency is None):
            return True  # no login asked
        from http.cookies import SimpleCookie
        cookies = SimpleCookie()
        try:
            cookies.load(dict(scope.get("headers") or []).get(b"cookie", b"").decode("latin-1"))
        except Exception:  # noqa: BLE001 - a malformed cookie is no login
            return False
        names = (f"access-token-{app.cookie_id}", f"access-token-unsecure-{app.cookie_id}")
        return any(name in cookies and app.tokens.get(cookies[name].value) is not None for name in names)


@dataclass
class Failures:
    """An address's failed logins in a row, and when the last one was."""
    count: int = 0
    last: float = 0.0


class LoginThrottle:
    """ASGI middleware for a server with a login (--auth): after `free_tries` failed logins in a row from one
    address (`scope_address`), each further attempt waits 2, 4, 8... up to `max_wait` seconds after the last
    failure, and one sent sooner is answered 429 with the wait, unchecked. Gradio 6.31 checked about 1,000
    guesses a second (issue 61). A login that succeeds clears the address's count; an address forgotten after
    `forget_after` seconds without a failure, the oldest first past `max_addresses`.
    The whole server also checks at most `total_failures` failed logins per `window` seconds: past that every
    attempt, from any address, waits until the oldest failure is `window` old (40 addresses had checked 200
    passwords in 3.7 s, issue 75). While someone guesses, the rightful user waits up to `window` seconds too."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], free_tries: int = 5,
                 max_wait: float = 60.0, forget_after: float = 3600.0, max_addresses: int = 10_000,
                 total_failures: int = 30, window: float = 60.0):
        self.app, self.free_tries, self.max_wait = app, free_tries, max_wait
        self.forget_after, self.max_addresses = forget_after, max_addresses
        self.total_failures, self.window = total_failures, window
        self.failures: dict[str, Failures] = {}
        self.recent: deque[float] = deque()  # when the server's failed logins of the last `window` seconds were

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or \
                not scope.get("path", "").rstrip("/").endswith("/login"):
            await self.app(scope, receive, send)
            return
        address, now = scope_address(scope), time.monotonic()
        reason = self.refusal(address, now)
        if reason is not None:
            await plain_answer(send, 429, json.dumps({"detail": reason}).encode(), b"application/json")
            return
        status = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)
        await self.app(scope, receive, watch)
        self.record(address, bool(status) and status[0] < 400, time.monotonic())

    def refusal(self, address: str, now: float) -> str | None:
        """Why an attempt from `address` is not checked now (None: it is)."""
        wait = self.wait(address, now)
        if wait > 0:
            return f"Too many failed logins from your address: try again in {wait:.0f} s."
        wait = self.total_wait(now)
        if wait > 0:
            return f"Too many failed logins on this server just now: try again in {wait:.0f} s."
        return None

    def wait(self, address: str, now: float) -> float:
        """Seconds `address` must still wait before its next attempt is checked (0: none)."""
        failed = self.failures.get(address)
        if failed is None or failed.count < self.free_tries:
            return 0.0
        delay = min(self.max_wait, 2.0 ** (failed.count - self.free_tries + 1))
        return max(0.0, failed.last + delay - now)

    def total_wait(self, now: float) -> float:
        """Seconds every address must still wait because the server had `total_failures` failures in `window`."""
        while self.recent and now - self.recent[0] >= self.window:
            self.recent.popleft()
        return self.recent[0] + self.window - now if len(self.recent) >= self.total_failures else 0.0

    def record(self, address: str, succeeded: bool, now: float) -> None:
        """Count a login's outcome for `address`."""
        if succeeded:
            self.failures.pop(address, None)
            return
        self.recent.append(now)
        for stale in [a for a, f in self.failures.items() if now - f.last > self.forget_after]:
            del self.failures[stale]
        failed = self.failures.pop(address, Failures())  # re-inserted last: the dict stays oldest first
        self.failures[address] = Failures(failed.count + 1, now)
        while len(self.failures) > self.max_addresses:
            del self.failures[next(iter(self.failures))]


# Routes public mode closes (a path's end -> the one line it answers, 404): Gradio's screen recording stored up to
# 20 MB a call in its temp folder outside the disk budget, for good when the reply was not read (issue 75); its deep
# link wrote a session's whole state (every input's last value) there on each call, never deleted; its reload notifier
# is an endless stream that wakes every 50 ms (thousands of idle ones take the event loop); its upload progress kept
# an entry for every id asked for, made up or not, for good (session 49's review). The page uses none of them.
CLOSED_IN_PUBLIC = {"/gradio_api/process_recording": "Screen recording is not available on this public server.",
                    "/gradio_api/deep_link": "Links to a session's state are not made on this public server.",
                    "/gradio_api/dev/reload": "This public server does not reload.",
                    "/gradio_api/upload_progress": "Upload progress is not reported on this public server."}
# An upload's progress is not tracked in public mode (nobody may read it: its route is closed): the id is dropped.
UNTRACKED_UPLOAD = "/gradio_api/upload"
HEARTBEAT = "/gradio_api/heartbeat/"
# Routes whose lookups (a function, an endpoint, a component by its id or name) raise when nothing is found.
LOOKUP_ROUTES = ("/gradio_api/component_server", "/gradio_api/run/", "/gradio_api/api/", "/gradio_api/call/",
                 "/gradio_api/queue/join")


class RouteGuard:
    """ASGI middleware in front of every route:

    - an exception a route raises before it answers is answered with one line, never Gradio's bare "500 Internal
      Server Error" (an unknown component id or fn_index, /gradio_api/run/predict without one,
      /gradio_api/call/v2/UNKNOWN, issue 75): a lookup that found nothing 404, a session no bound has room for 503,
      anything else 500 "Something went wrong (TypeError)..." with the traceback in the log;
    - public mode (`sessions`): Gradio's sessions are bounded (app.server.sessions) and told the address of each
      request, a page's open heartbeat keeps its session live, the routes of CLOSED_IN_PUBLIC answer 404 and an
      upload names no progress id (UNTRACKED_UPLOAD)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], blocks: Any,
                 sessions: SessionLimits | None = None):
        self.app, self.blocks, self.sessions = app, blocks, sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = "/" + scope.get("path", "").strip("/")
        if self.sessions is None:
            await self._answered(scope, receive, send, path)
            return
        closed = next((line for end, line in CLOSED_IN_PUBLIC.items() if path.endswith(end)), None)
        if closed is not None:
            await plain_answer(send, 404, json.dumps({"detail": closed}).encode(), b"application/json")
            return
        if path.endswith(UNTRACKED_UPLOAD):
            scope = {**scope, "query_string": _without_query(scope.get("query_string", b""), "upload_id")}
        table = install(self.blocks.state_holder, self.sessions, self._busy)
        beating = path.rpartition("/")[2] if HEARTBEAT in path + "/" and scope.get("method") == "GET" else None
        if beating:
            table.heartbeat(beating, True)
        try:
            with handling(scope_address(scope)):
                await self._answered(scope, receive, send, path)
        finally:
            if beating:
                table.heartbeat(beating, False)

    def _busy(self, session_hash: str) -> bool:
        """Whether a request of this session waits or runs in the queue."""
        queue = self.blocks._queue
        return queue is not None and any(event.session_hash == session_hash
                                         for event in waiting(queue) + running(queue))

    async def _answered(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        """Pass the request on; an exception before the answer began is answered with one line."""
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)
        try:
            await self.app(scope, receive, watch)
        except Exception as err:  # noqa: BLE001 - every route's, answered with one line
            if started:
                raise
            status, detail = _explained(err, path)
            await plain_answer(send, status, json.dumps({"detail": detail}).encode(), b"application/json")


def _explained(err: Exception, path: str) -> tuple[int, str]:
    """(status, one line) for what a route raised."""
    from gradio.route_utils import FnIndexInferError
    if isinstance(err, SessionRefused):
        return 400 if isinstance(err, BadSessionHash) else 503, str(err)
    if isinstance(err, (KeyError, IndexError, FnIndexInferError)) and any(route in path for route in LOOKUP_ROUTES):
        what = quoted(err.args[0], 40) if isinstance(err, KeyError) and err.args else "what the request names"
        log.info("%s: nothing found for %s", path[:100], what)
        return 404, (f"This app has no function, endpoint or component {what}: its API page lists them "
                     "(a function by fn_index needs one).")
    log.error("%s failed", path[:100], exc_info=err)
    return 500, f"Something went wrong ({type(err).__name__}); the server log has details."


def _without_query(query: bytes, name: str) -> bytes:
    """A query string without its `name` parameters, however their names are escaped: b"upload%5Fid=x&a=1" -> b"a=1"."""
    from urllib.parse import parse_qsl, urlencode
    kept = [(k, v) for k, v in parse_qsl(query.decode("latin-1"), keep_blank_values=True) if k != name]
    return urlencode(kept).encode("latin-1")


def _without_api_info(send: Send) -> Send:
    """A send that empties the page's embedded API description (its body is held until complete)."""
    start, body = {}, b""

    async def strip(message: Message) -> None:
        nonlocal start, body
        if message["type"] == "http.response.start":
            start = message
            return
        body += message.get("body", b"")
        if message.get("more_body", False):
            return
        body = API_INFO.sub(b"window.gradio_api_info = {};</script>", body)
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        await send({**start, "headers": headers + [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
    return strip


def distrust_uvicorn_forwarding() -> None:
    """Make the uvicorn server a `launch` starts next leave the TCP peer as the request's client. By default
    uvicorn replaces it with the last X-Forwarded-For entry whenever the peer is 127.0.0.1 (its
    $FORWARDED_ALLOW_IPS), so a forged header from any local peer became the client's address; trusting
    proxies is `client_address`'s job alone (issue 61). Read by uvicorn.Config, which launch creates."""
    os.environ["FORWARDED_ALLOW_IPS"] = ""  # an empty name: no peer is trusted


def middleware(blocks: Any, login: bool = False, public: Any = None) -> list:
    """The ASGI layers in front of `blocks`' server, outermost first: the request body bound and its JSON values'
    bound, the route guard
    (`RouteGuard`: one-line answers for what routes raise; with `public`, an app.server.public.PublicLimits, bounded
    sessions and the closed routes), the login throttle and gate (with `login`), the disk budget for uploads
    (public mode), then cancels. Call it before `launch`: it also stops uvicorn from rewriting the client's address
    (`distrust_uvicorn_forwarding`), bounds each address's open connections in public mode
    (app.server.connections), and in public mode closes Gradio's routes that run a queued event outside the
    queue (POST /gradio_api/run/NAME and /api/NAME answer 404 "join the queue": 30 decodes from one address had run
    at once there, issue 75); the queue's own routes (/gradio_api/queue/join, /gradio_api/call/NAME, the page,
    gradio_client) stay."""
    from starlette.middleware import Middleware
    distrust_uvicorn_forwarding()
    from .connections import limit_connections
    limit_connections(public.connections_per_address if public is not None else None,
                      public.headers_seconds if public is not None else None, _connection_key)

    from .public import disk_budget
    if public is not None:
        blocks.api_open = False  # read by Gradio's /run and /api routes at each request
    gate = [Middleware(LoginThrottle), Middleware(LoginGate, blocks=blocks)] if login else []
    return [Middleware(RequestBodyLimit), Middleware(JsonValueLimit),
            Middleware(RouteGuard, blocks=blocks, sessions=public.sessions if public is not None else None), *gate,
            Middleware(UploadRoom, blocks=blocks, budget=disk_budget, address=scope_address),
            Middleware(CancelReach, blocks=blocks)]
