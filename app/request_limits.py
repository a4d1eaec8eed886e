"""A bound on the size of any HTTP request body the web server reads.

Gradio 6.31 bounds only file uploads (`launch(max_file_size=...)`, checked on the multipart
/upload route); a JSON API request (/gradio_api/queue/join, /gradio_api/call/NAME) is read whole
into memory whatever its size: a 200 MB request was accepted. `RequestBodyLimit` is plain ASGI
middleware (no gradio import) for the FastAPI app Gradio builds:

    from starlette.middleware import Middleware
    demo.launch(..., app_kwargs={"middleware": [Middleware(RequestBodyLimit)]})

It answers 413 at once when Content-Length is over the bound, and stops reading a body sent without
one (chunked) as soon as it passes the bound, so the server never holds more than the bound.

`UploadRoom` asks, before Gradio writes an upload to its temp folder, whether the disk has room for it
(app.public.guard_write: the public disk budget).
"""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from .settings import MAX_UPLOAD_BYTES

# The largest legitimate body: an upload of MAX_UPLOAD_BYTES plus its multipart envelope. JSON
# requests stay far below it (the longest text fields, 20,000 lines of at most 1,000 characters for
# a map, are 20 MB at most).
MAX_REQUEST_BYTES = MAX_UPLOAD_BYTES + 1_000_000
TOO_LARGE = b"Request body too large: at most %d bytes."

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class RequestBodyLimit:
    """ASGI middleware refusing HTTP requests whose body is over `max_bytes` (413 Payload Too Large)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], max_bytes: int = MAX_REQUEST_BYTES):
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # websockets and lifespan: no request body
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.strip().isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send)
            return
        received, started, refused = 0, False, False

        async def bounded_receive() -> Message:
            # Past the bound the app is told that the client left (it stops reading and its answer
            # is dropped) and the client gets the 413, unless an answer had already begun.
            nonlocal received, started, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    if not started:
                        await self._refuse(send)
                        started = refused = True
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, bounded_receive, guarded_send)

    async def _refuse(self, send: Send) -> None:
        await plain_answer(send, 413, TOO_LARGE % self.max_bytes)


class UploadRoom:
    """ASGI middleware: before Gradio writes an upload (POST .../gradio_api/upload), `guard(bytes, what)` is
    asked for room for it, twice its declared size (the file, and a copy Gradio may make of it when a request
    uses it); a ValueError from it is answered 507 Insufficient Storage with its message, and nothing is written."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], guard: Callable[[int, str], None]):
        self.app, self.guard = app, guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST" and \
                scope.get("path", "").rstrip("/").endswith("/gradio_api/upload"):
            declared = dict(scope.get("headers") or []).get(b"content-length", b"")
            size = int(declared) if declared.strip().isdigit() else MAX_REQUEST_BYTES
            try:  # it walks folders: off the event loop
                await asyncio.to_thread(self.guard, 2 * size, "this upload")
            except ValueError as err:
                await plain_answer(send, 507, str(err).encode())
                return
        await self.app(scope, receive, send)


async def plain_answer(send: Send, status: int, body: bytes, content_type: bytes = b"text/plain; charset=utf-8"
                       ) -> None:
    """Answer a request with `status` and `body`, closing the connection."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type),
                            (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
