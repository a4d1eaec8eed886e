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
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from gradio.server_messages import ProcessCompletedMessage

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
CANCEL_BODY_BYTES = 65_536  # a cancel or reset is ~100 bytes; a bigger body is left to Gradio (its 422)


@dataclass(frozen=True)
class QueueShares:
    """How many requests one client may have waiting in the queue (running ones are not counted)."""
    per_session: int = 8  # a page's own events are one at a time per button: 8 is many tabs' worth
    per_address: int | None = None  # public mode: a network address (several visitors may share one)

    def __post_init__(self) -> None:
        if self.per_session < 1 or (self.per_address is not None and self.per_address < 1):
            raise ValueError("A client's share of the queue must be at least 1.")


PUBLIC_SHARES = QueueShares(per_session=8, per_address=16)


def client_address(request: Any) -> str:
    """The network address a request came from. Behind a proxy on a private or loopback address (a Hugging
    Face Space) it is the last X-Forwarded-For entry, the one the proxy itself appended: a client can put any
    address in the header, but not after the proxy's."""
    peer = request.client.host if request is not None and request.client else ""
    forwarded = request.headers.get("x-forwarded-for", "") if request is not None else ""
    try:
        behind_proxy = ipaddress.ip_address(peer).is_private
    except ValueError:
        behind_proxy = False
    if behind_proxy and forwarded.strip():
        return forwarded.split(",")[-1].strip()
    return peer


def waiting(queue: Any) -> list:
    """Every event waiting in the queue (not yet running)."""
    return [event for line in queue.event_queue_per_concurrency_id.values() for event in line.queue]


def running(queue: Any) -> list:
    """Every event running now."""
    return [event for job in queue.active_jobs if job for event in job]


def share_refusal(queue: Any, session_hash: str | None, request: Any, shares: QueueShares) -> str | None:
    """Why one more request of this client may not wait in the queue; None when it may."""
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
    return None


def bound_per_client(queue: Any, shares: QueueShares) -> None:
    """Make `queue` (a Blocks' Gradio queue) refuse, with a 503 and its reason, a request past its client's
    share; others' requests are not affected."""
    push = queue.push

    @functools.wraps(push)
    async def bounded_push(body, request, username):
        reason = share_refusal(queue, body.session_hash, request, shares)
        if reason is not None:
            return False, reason, "queue_full"
        return await push(body=body, request=request, username=username)
    queue.push = bounded_push


async def cancel_events(queue: Any, session_hash: str | None, fn_index: int | None,
                        event_id: str | None) -> str | None:
    """Cancel the event `event_id`, and every event of `session_hash` for function `fn_index`: those waiting
    are removed (their client is told they completed, as Gradio's own cancel does), those running are marked
    as having lost their client, which stops their work (app.work). Returns the id of a running event it
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
        await self.app(scope, _replay(body, more, receive), send)

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


def _replay(body: bytes, more: bool, receive: Receive) -> Receive:
    """A receive that gives `body` first (rest of it to come when `more`), then what `receive` gives."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": more}
        return await receive()
    return replay


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
            from .request_limits import plain_answer
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


def middleware(blocks: Any, login: bool = False) -> list:
    """The ASGI layers in front of `blocks`' server, outermost first: the request body bound, the login gate
    (with `login`), the disk budget for uploads (public mode), then cancels."""
    from starlette.middleware import Middleware

    from .public import guard_write
    from .request_limits import RequestBodyLimit, UploadRoom
    gate = [Middleware(LoginGate, blocks=blocks)] if login else []
    return [Middleware(RequestBodyLimit), *gate, Middleware(UploadRoom, guard=guard_write),
            Middleware(CancelReach, blocks=blocks)]
