"""Sessions with bounds, for public mode (issue 75). Gradio 6.31 makes a session (its copy of every component's
config and the session's gr.State values, ~0.4 MB for this app) for any session hash a request names, even one
answered 404 (/gradio_api/component_server), and keeps up to 10,000, dropping the least recently used past that:
10,100 requests from one address took the server from 2.8 to 6.1 GB and dropped another visitor's session, their
model choice with it.

`BoundedSessions` replaces Gradio's session table (`StateHolder.session_data`): a new session is admitted only
within `SessionLimits.per_address` sessions of its network address and `total` in all. At a bound, the least
recently used *idle* session (of that address, or of anyone at the total) is dropped, its end callbacks run (a
visitor's saved models are deleted with it); a session is live while a request used it within `idle_s`, a request of
it waits or runs, or its page holds its heartbeat open. At the total with none idle, the least recently used session
of the address holding the most goes, live or not, if that address holds at least two more than the new session's
(a page's open heartbeat kept its session for good, so 32 addresses holding 32 pages open each locked every newcomer
out); a session with a request waiting or running never goes. Otherwise the new one is refused with `SessionRefused`
(one line; the gate answers it 503). Addresses are those the gate gives (`gate.sharing`: an IPv6 client's /64).

Plain Python (no gradio import): the gate installs it into Gradio's StateHolder (`install`).
"""
from __future__ import annotations

import contextvars
import datetime
import functools
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass
class RequestAddress:
    """The network address of the HTTP request being handled; None once it has ended."""
    address: str | None


# Set by the gate for every request (`handling`). A task started during a request (the queue's own, if a request
# started it) copies the variable, so the address is cleared in place when the request ends: such a task then
# reads None, never a past request's address.
_REQUEST: contextvars.ContextVar[RequestAddress | None] = contextvars.ContextVar("request_address", default=None)


def request_address() -> str | None:
    """The address of the request being handled here; None outside one."""
    current = _REQUEST.get()
    return current.address if current is not None else None


@contextmanager
def handling(address: str) -> Iterator[None]:
    """While the block runs, `request_address()` is `address`, in this task and in those it starts."""
    current = RequestAddress(address)
    token = _REQUEST.set(current)
    try:
        yield
    finally:
        current.address = None
        _REQUEST.reset(token)


@dataclass(frozen=True)
class SessionLimits:
    """How many sessions the server keeps, and when one counts as idle."""
    per_address: int = 32  # a page is one session a tab, a gradio_client one a Client: 32 is a classroom's NAT
    total: int = 1_000  # about 0.4 GB of session state for this app (bench/session_flood.py: 0.4 MB each)
    idle_s: float = 900.0  # unused this long (and no page holding its heartbeat): may be dropped for a new one

    def __post_init__(self) -> None:
        if not 1 <= self.per_address <= self.total or self.idle_s < 0:
            raise ValueError("Sessions: 1 <= per_address <= total, idle_s >= 0.")


class SessionRefused(Exception):
    """A new session that no bound has room for; its text is the one-line reason."""


class BadSessionHash(SessionRefused):
    """A session hash no session may have (the gate answers it 400)."""


# A session hash is the client's own: the page makes ~11 characters, gradio_client 36 (a uuid). Gradio kept any length
# (a 5 MB one in a join was held in several copies, ~23 MB a session, while the session lived).
MAX_SESSION_HASH_CHARS = 100


def session_hash_refusal(key: Any) -> str | None:
    """Why `key` may not name a session (one line), or None when it may."""
    if isinstance(key, str) and len(key) > MAX_SESSION_HASH_CHARS:
        return (f"A session hash is at most {MAX_SESSION_HASH_CHARS} characters (this one has {len(key):,}): "
                "reload the page, or let gradio_client make one.")
    return None


class BoundedSessions(OrderedDict):
    """Gradio's session table (session hash -> SessionState, least recently used first), bounded by `limits`.
    Gradio adds a session with `table[key] = SessionState(...)`; that admission is checked here."""

    def __init__(self, holder: Any, limits: SessionLimits, sessions: dict | None = None,
                 busy: Callable[[str], bool] = lambda key: False):
        self.holder, self.limits, self.busy = holder, limits, busy
        self.owners: dict[str, str | None] = {}  # session -> the address that made it
        self.heartbeats: Counter[str] = Counter()  # session -> heartbeat streams open now
        self.disposable: set[str] = set()  # sessions made up for one request (`dispose`)
        self.lock = threading.RLock()
        super().__init__()
        for key, value in (sessions or {}).items():  # those made before the bound: kept, of no known address
            OrderedDict.__setitem__(self, key, value)
            self.owners[key] = None

    def __setitem__(self, key: str, value: Any) -> None:
        with self.lock:
            self.admit(key)
            super().__setitem__(key, value)

    def admit(self, key: str) -> None:
        """Admit session `key` of the request being handled (`request_address`), unless it is here or admitted
        already: room is made within the bounds, else SessionRefused."""
        with self.lock:
            if key not in self and key not in self.owners:
                reason = session_hash_refusal(key)
                if reason is not None:
                    raise BadSessionHash(reason)
                self._admit(key, request_address())

    def __delitem__(self, key: str) -> None:
        with self.lock:
            super().__delitem__(key)
            self.owners.pop(key, None)
            self.disposable.discard(key)

    def popitem(self, last: bool = True) -> tuple[str, Any]:
        with self.lock:
            key, value = super().popitem(last)
            self.owners.pop(key, None)
            self.disposable.discard(key)
            return key, value

    def move_to_end(self, key: str, last: bool = True) -> None:
        with self.lock:  # Gradio reorders under its own lock: not while `_admit` walks the table
            super().move_to_end(key, last)

    def _admit(self, key: str, address: str | None) -> None:
        """Make room for `key` of `address` within the bounds, or raise SessionRefused."""
        mine = [k for k in self if self.owners.get(k) == address]
        if len(mine) >= self.limits.per_address and not self._drop_idle(mine):
            raise SessionRefused(f"Your network address already has {len(mine)} sessions open on this public server "
                                 f"(at most {self.limits.per_address}), all in use: close a tab or wait a few "
                                 "minutes, then reload the page.")
        at_total = len(self) >= self.limits.total
        if at_total and not self._drop_idle(list(self)) and not self._drop_largest_holders(address):
            raise SessionRefused(f"This public server has as many visitors' sessions as it keeps "
                                 f"({self.limits.total}), all in use: try again in a few minutes.")
        self.owners[key] = address

    def _drop_idle(self, keys: list[str]) -> bool:
        """Drop the least recently used idle session among `keys` (oldest first); whether one was."""
        cutoff = datetime.datetime.now() - datetime.timedelta(seconds=self.limits.idle_s)
        for key in keys:
            used = self.holder.time_last_used.get(key)
            if (key in self.disposable or (not self.heartbeats[key] and (used is None or used < cutoff))) and \
                    not self.busy(key):  # a request of it waiting or running: live, however long it has waited
                self._drop(key)
                return True
        return False

    def _drop_largest_holders(self, address: str | None) -> bool:
        """At the total with no idle session: drop the least recently used session of the address holding the most,
        live or not (a page's open heartbeat does not keep it), when that address holds at least two more than
        `address` does, so that holding pages open locks no newcomer out; never one with a request waiting or
        running. Whether one was dropped (none: every address holds about as many as `address`)."""
        held = Counter(self.owners.get(key) for key in self)
        floor = held[address] + 2
        for key in sorted(self, key=lambda k: -held[self.owners.get(k)]):  # stable: least recently used first
            if held[self.owners.get(key)] < floor:
                return False
            if not self.busy(key):
                self._drop(key)
                return True
        return False

    def _drop(self, key: str) -> None:
        self.holder.delete_state(key)  # its gr.State end callbacks: a visitor's saves go with it
        del self[key]
        self.holder.time_last_used.pop(key, None)

    def dispose(self, key: str) -> None:
        """Session `key` is made up for one request (Gradio's for /gradio_api/call/NAME): idle once `busy(key)` is
        false, whenever it was used (each such call makes one: 33 calls in 15 minutes would fill an address's
        share)."""
        with self.lock:
            self.disposable.add(key)

    def heartbeat(self, key: str, opened: bool) -> None:
        """A page opened (or closed) the heartbeat stream of session `key`: while one is open it is live."""
        with self.lock:
            self.heartbeats[key] += 1 if opened else -1
            if self.heartbeats[key] <= 0:
                del self.heartbeats[key]


def install(holder: Any, limits: SessionLimits, busy: Callable[[str], bool] = lambda key: False) -> BoundedSessions:
    """Bound the sessions of Gradio's `holder` (a StateHolder; its sessions so far are kept); `busy(key)` tells
    whether a session has a request waiting or running. Returns the table. Gradio's own least-recently-used drop
    is turned off: it would drop a live session."""
    if not isinstance(holder.session_data, BoundedSessions):
        with holder.lock:
            holder.session_data = BoundedSessions(holder, limits, holder.session_data, busy)
            holder.capacity = limits.total + 1  # never reached: admission keeps the table within `total`
            holder.__class__ = _admitting(type(holder))
    return holder.session_data


@functools.cache
def _admitting(holder_class: type) -> type:
    """`holder_class` (Gradio's StateHolder) admitting a new session before building it: Gradio builds a session
    (~25 ms of the event loop for this app's 231 components) before it stores it, so a refusal at the store still
    cost that much."""
    def getitem(holder: Any, key: str) -> Any:
        holder.session_data.admit(key)
        return holder_class.__getitem__(holder, key)
    return type("Admitting" + holder_class.__name__, (holder_class,), {"__getitem__": getitem})
