"""A bound on the size of any HTTP request body the web server reads.

Gradio 6.31 bounds only file uploads (`launch(max_file_size=...)`, checked on the multipart
/upload route); a JSON API request (/gradio_api/queue/join, /gradio_api/call/NAME) is read whole
into memory whatever its size: a 200 MB request was accepted. `RequestBodyLimit` is plain ASGI
middleware (no gradio import) for the FastAPI app Gradio builds:

    from starlette.middleware import Middleware
    demo.launch(..., app_kwargs={"middleware": [Middleware(RequestBodyLimit)]})

It answers 413 at once when Content-Length is over the bound, and stops reading a body sent without
one (chunked) as soon as it passes the bound, so the server never holds more than the bound.

`JsonValueLimit` refuses a JSON body of more than `MAX_JSON_VALUES` values before it is parsed: within the byte bound,
20 MB of `[],` made 6.9 million lists, whose parsing held the event loop (every visitor) for 10 s and took ~1 GB.

`UploadRoom` reserves room in the public disk budget (app.server.public.DiskBudget) before Gradio writes an upload
to its temp folder, and gives each upload a folder of its own.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
from pathlib import Path
from typing import Any, Awaitable, Callable

from ..settings import MAX_UPLOAD_BYTES

# The largest legitimate body: an upload of MAX_UPLOAD_BYTES plus its multipart envelope. JSON
# requests stay far below it (the longest text fields, 20,000 lines of at most 1,000 characters for
# a map, are 20 MB at most).
MAX_REQUEST_BYTES = MAX_UPLOAD_BYTES + 1_000_000
TOO_LARGE = b"Request body too large: at most %d bytes."
# Values (lists, objects, and the items between their commas) a JSON request body may hold. The page and the API send
# a few texts, numbers, choices and files (under 100 values); a map's 20,000 lines are one text.
MAX_JSON_VALUES = 10_000
# A JSON string, escapes and all, or an unclosed one to the end of the body: possessive, so a quote that never closes
# is passed over once (with backtracking, a body of one unclosed quote and N escaped ones cost ~N^2: 16,000 took 2.8 s
# on the event loop).
JSON_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"?', re.S)
# An upload's body: Gradio and Starlette read it as a form only when its one content type begins with this, as written.
UPLOAD_TYPE = b"multipart/form-data"

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


def json_values(body: bytes, bound: int) -> int:
    """About how many values the JSON text `body` holds, counted without parsing it: each list and object, and each
    item after a comma, outside strings (an empty list counts twice, a key and its value once). Linear and in C: the
    quotes first (each string is a value), then the marks, the strings taken out only when the marks alone pass the
    bound."""
    strings = (body.count(b'"') - body.count(b'\\"')) // 2
    if strings > bound:
        return strings
    marks = body.count(b",") + body.count(b"[") + body.count(b"{")
    if marks > bound:  # text may hold commas and brackets: count outside the strings
        bare = JSON_STRING.sub(b'""', body)
        marks = bare.count(b",") + bare.count(b"[") + bare.count(b"{")
    return marks + 1


class JsonValueLimit:
    """ASGI middleware refusing a request body of more than `max_values` JSON values (`json_values`) before the app
    parses it (413 with one line). Any body but an upload's (`_an_upload`) is checked: FastAPI reads a body without a
    content type as JSON too. Inside `RequestBodyLimit`, so at most its bound is held."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], max_values: int = MAX_JSON_VALUES):
        self.app, self.max_values = app, max_values

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH") or _an_upload(scope):
            await self.app(scope, receive, send)
            return
        chunks, ended = [], False
        while not ended:
            message = await receive()
            if message["type"] != "http.request":  # the client left
                return
            chunks.append(message.get("body", b""))
            ended = not message.get("more_body", False)
        body = b"".join(chunks)
        values = json_values(body, self.max_values)
        if values > self.max_values:
            detail = (f"The request holds more than {self.max_values:,} JSON values: this app's inputs are a few "
                      "texts, numbers, choices and files.")
            await plain_answer(send, 413, json.dumps({"detail": detail}).encode(), b"application/json")
            return
        await self.app(scope, replayed(body, False, receive), send)


def _an_upload(scope: Scope) -> bool:
    """Whether the request's body is a multipart form (an upload), which no route reads as JSON: exactly one content
    type, beginning with `UPLOAD_TYPE` as written (Starlette reads the first of two, Gradio's component server takes
    "Multipart/Form-Data" as JSON; a login's urlencoded form is a few values, counted like any body)."""
    types = [value for name, value in scope.get("headers") or [] if name.lower() == b"content-type"]
    return len(types) == 1 and types[0].startswith(UPLOAD_TYPE)


def replayed(body: bytes, more: bool, receive: Receive) -> Receive:
    """A receive that gives `body` first (rest of it to come when `more`), then what `receive` gives: the request
    as the app would have read it, after a middleware read `body` of it."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": more}
        return await receive()
    return replay


class UploadRoom:
    """ASGI middleware for Gradio's uploads (POST .../gradio_api/upload), issue 61:

    - room in the disk budget (`budget()`, app.server.public.DiskBudget; None on a private server) is reserved for
      twice the declared size (the file, and a copy Gradio may make of it when a request uses it) before Gradio
      writes a byte, in the uploader's share (`address(scope)`), and handed back once the upload is written;
      no room: 507 Insufficient Storage with the reason, and nothing is written;
    - each uploaded file is moved to a folder of its own: Gradio keeps uploads by their content's hash, so a
      visitor uploading the same file got the same path, and the validation that deletes it once read deleted
      the other visitor's pending upload. The answer names the new paths, which Gradio then accepts."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], blocks: Any,
                 budget: Callable[[], Any], address: Callable[[Scope], str]):
        self.app, self.blocks, self.budget, self.address = app, blocks, budget, address

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not (scope["type"] == "http" and scope.get("method") == "POST" and
                scope.get("path", "").rstrip("/").endswith("/gradio_api/upload")):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        size = int(declared) if declared.strip().isdigit() else MAX_REQUEST_BYTES
        budget = self.budget()
        try:  # it walks folders: off the event loop
            key = await asyncio.to_thread(budget.reserve, 2 * size, "this upload", self.address(scope)) \
                if budget is not None else None
        except ValueError as err:
            await plain_answer(send, 507, str(err).encode())
            return
        answer: list[Message] = []
        moved: tuple[Path, ...] = ()
        try:
            await self.app(scope, receive, _held(answer))  # Gradio writes the files before it returns
            moved = await asyncio.to_thread(self._own_folders, answer)
        finally:
            if key is not None:
                budget.release(key, moved)
        for message in answer:
            await send(message)

    def _own_folders(self, answer: list[Message]) -> tuple[Path, ...]:
        """Move each file a successful answer names to a new folder beside it; rewrite the answer to name them.
        Returns the new folders."""
        start, body = answer[0] if answer else {}, b"".join(m.get("body", b"") for m in answer[1:])
        try:
            paths = json.loads(body) if start.get("status") == 200 else None
        except ValueError:
            paths = None
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            return ()
        folders, names = [], []
        for path in map(Path, paths):
            folder = path.parent.parent / secrets.token_hex(16)
            try:
                folder.mkdir()
                os.rename(path, folder / path.name)
            except OSError:  # e.g. an identical upload moved it first: its path stays (read, it says "upload again")
                shutil.rmtree(folder, ignore_errors=True)
                names.append(str(path))
                continue
            with contextlib.suppress(OSError):  # Gradio's folder, now empty unless an identical upload shares it
                path.parent.rmdir()
            folders.append(folder)
            names.append(str(folder / path.name))
            self.blocks.upload_file_set.add(names[-1])
        body = json.dumps(names).encode()
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        answer[:] = [{**start, "headers": headers + [(b"content-length", str(len(body)).encode())]},
                     {"type": "http.response.body", "body": body}]
        return tuple(folders)


def _held(answer: list[Message]) -> Send:
    """A send that keeps the messages in `answer` instead of sending them."""
    async def hold(message: Message) -> None:
        answer.append(message)
    return hold


async def plain_answer(send: Send, status: int, body: bytes, content_type: bytes = b"text/plain; charset=utf-8"
                       ) -> None:
    """Answer a request with `status` and `body`, closing the connection."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type),
                            (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
