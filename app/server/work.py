"""Work that belongs to its request: a handler's work runs in a worker thread under a cancel token
(core.runtime.cancel), and stops at its next step when the request is cancelled or its client goes away.

Gradio runs a plain function in a thread and, when the request is cancelled, cancels only the
coroutine awaiting it: the concurrency slot was freed at once while the thread worked on, so a loop
of submit-and-cancel piled up threads that slowed every visitor (issue 43). `run_owned` instead
awaits the thread until it has stopped, so the request (and its slot) ends only with its work.

Plain asyncio and threads (no gradio): app.ui passes in how to tell whether the client is still there.
"""
from __future__ import annotations

import asyncio
import contextvars
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

from core.runtime import Cancelled, CancelToken, cancellable
from core.runtime import return_freed_memory

T = TypeVar("T")
CLIENT_CHECK_S = 0.25  # how often a running request asks whether its client is still there
# The handlers' threads. Gradio's pools admit far fewer at once (app.ui: QUICK, DECODE, ...): this bound
# only guards against a wiring mistake, and asyncio's default executor (6 threads on 2 cores) is too few.
WORKERS = ThreadPoolExecutor(max_workers=32, thread_name_prefix="defsent-work")


class RunningWork:
    """How many handlers' works are running now, by name (a count the app reports: /running_work)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: Counter[str] = Counter()

    def started(self, name: str) -> None:
        with self._lock:
            self._running[name] += 1

    def stopped(self, name: str) -> None:
        with self._lock:
            self._running[name] -= 1
            if not self._running[name]:
                del self._running[name]

    def counts(self) -> dict[str, int]:
        """name -> works of that name running now (names with none are left out)."""
        with self._lock:
            return dict(self._running)

    def total(self) -> int:
        with self._lock:
            return sum(self._running.values())


RUNNING = RunningWork()


async def run_owned(work: Callable[[], T], name: str, client_gone: Callable[[], bool] = lambda: False,
                    running: RunningWork = RUNNING) -> T:
    """Run `work` in a worker thread under a cancel token and return its result. When this coroutine
    is cancelled, or `client_gone()` turns true, the token is cancelled and the coroutine still waits
    for the thread to stop (at the work's next step) before it raises CancelledError (or Cancelled
    when the client left): the caller's slot is free only when the work is."""
    token = CancelToken()
    context = contextvars.copy_context()  # gradio's progress reporting reads its context variables

    def in_thread() -> T:
        with cancellable(token):
            return work()

    running.started(name)
    thread = asyncio.get_running_loop().run_in_executor(WORKERS, context.run, in_thread)
    thread.add_done_callback(lambda _: running.stopped(name))
    try:
        while not thread.done():
            await asyncio.wait([thread], timeout=CLIENT_CHECK_S)
            if client_gone():
                token.cancel()
    except asyncio.CancelledError:
        token.cancel()
        await _until_done(thread)
        await _release(thread)
        raise
    if token.cancelled:  # the client left
        await _release(thread)
    return thread.result()


async def _release(thread: asyncio.Future) -> None:
    """After cancelled work: drop the frames its exception holds (and the tensors in them, which
    would otherwise wait for a full garbage collection), then hand the freed heap back to the system.
    Without this, 100 cancelled requests grew the app by ~500 MB (docs/results.md)."""
    if not thread.cancelled() and (error := thread.exception()) is not None:
        error.__traceback__ = None
    await asyncio.get_running_loop().run_in_executor(WORKERS, return_freed_memory)


async def _until_done(thread: asyncio.Future) -> None:
    """Wait for `thread` to finish, through any further cancellation of the waiting coroutine."""
    while not thread.done():
        try:
            await asyncio.shield(thread)
        except asyncio.CancelledError:
            continue
        except Exception:  # noqa: BLE001 - its outcome is not wanted, only its end
            return
    if not thread.cancelled():
        thread.exception()  # retrieved, so asyncio does not log "exception was never retrieved"


__all__ = ["Cancelled", "RUNNING", "RunningWork", "run_owned"]
