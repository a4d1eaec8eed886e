"""Cooperative cancellation: long engine work stops at its next step once its caller has given up.

A thread cannot be killed from outside, so work that may be abandoned (a web request whose client
cancelled or left) runs under a `CancelToken` and checks it at each step: every batch the encoder
embeds, every step of a beam search, every correction round, every epoch of a projection.

    token = CancelToken()
    with cancellable(token):          # in the worker thread
        engine.analogy(...)           # raises Cancelled at its next step once token.cancel() is called

Outside `cancellable` (the command line, scripts, tests) `check_cancelled` does nothing.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["Cancelled", "CancelToken", "cancellable", "check_cancelled", "uncancellable"]


class Cancelled(Exception):
    """The work was cancelled: whoever asked for it no longer waits for the answer."""


class CancelToken:
    """A flag one thread sets and the worker reads; setting it is final."""

    def __init__(self) -> None:
        self._flag = threading.Event()

    def cancel(self) -> None:
        self._flag.set()

    @property
    def cancelled(self) -> bool:
        return self._flag.is_set()


_current: ContextVar[CancelToken | None] = ContextVar("defsent_cancel_token", default=None)


@contextmanager
def cancellable(token: CancelToken) -> Iterator[CancelToken]:
    """Run the block under `token`: `check_cancelled` inside it raises once the token is cancelled."""
    reset = _current.set(token)
    try:
        yield token
    finally:
        _current.reset(reset)


@contextmanager
def uncancellable() -> Iterator[None]:
    """Run the block as no request's work: shared work that others wait for (a model's one-time
    preparation) must not stop because the request that happened to start it was cancelled."""
    reset = _current.set(None)
    try:
        yield
    finally:
        _current.reset(reset)


def check_cancelled() -> None:
    """Raise Cancelled when the work running in this context was cancelled; else return at once."""
    token = _current.get()
    if token is not None and token.cancelled:
        raise Cancelled("the request was cancelled")
