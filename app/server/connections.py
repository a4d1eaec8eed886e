"""A bound on the connections one network address holds open to a public server.

uvicorn (0.55, as Gradio 6.31 starts it) accepts every connection and keeps one that never finishes its request's
headers for good: a stranger's probe opened 19,990 such connections from 127.0.0.2 (27 s), the server ran out of file
descriptors (its limit, 20,000), every other visitor's request timed out, and asyncio logged a traceback for each
failed accept (520 MB of log in 30 s). Each connection is an open file and a protocol object whether or not it ever
reaches the app, so the bound is kept where uvicorn makes the protocol: `limit_connections` wraps the HTTP protocol
class uvicorn loads (`uvicorn.Config.load`), and a connection past its address's bound is answered 503 with one line
and closed before it is read. A connection that has not sent its first request's headers whole within
`PublicLimits.headers_seconds` is closed: with the bound alone, 128 such connections of each of ~155 addresses would
still fill 20,000 descriptors for good.

The address is the TCP peer by the rule the gate passes in (`gate.sharing`: an IPv6 client's /64). A trusted
proxy's connections (`--trusted-proxies`, a Space's own proxy) are not counted: all its visitors share its address,
and the proxy bounds its own. Process-wide, as uvicorn's protocol class is: the cap of the server whose middleware was
made last, read as each connection opens (so it holds for servers already running too).
"""
from __future__ import annotations

import functools
import json
import threading
from collections import Counter
from typing import Any, Callable


class ConnectionCap:
    """Connections open now, by address; at most `per_address` each; each closed when its first request's headers
    have not all come `headers_seconds` after it opened (None: never). `key(host)`: the address whose bound a
    connection from `host` counts in, None for one not counted (the gate's: a trusted proxy's)."""

    def __init__(self, per_address: int, headers_seconds: float | None = None,
                 key: Callable[[str], str | None] = lambda host: host):
        if per_address < 1:
            raise ValueError("An address must be allowed at least 1 connection.")
        if headers_seconds is not None and not 0 < headers_seconds <= 3600:
            raise ValueError("A connection must be given from 0 to 3,600 seconds to send its request's headers.")
        self.per_address, self.headers_seconds, self.key = per_address, headers_seconds, key
        self.open, self.lock = Counter(), threading.Lock()

    def take(self, key: str) -> bool:
        """Count one more connection of `key`; False (nothing counted) when it has its bound open already."""
        with self.lock:
            if self.open[key] >= self.per_address:
                return False
            self.open[key] += 1
            return True

    def give(self, key: str) -> None:
        """A connection of `key` closed."""
        with self.lock:
            self.open[key] -= 1
            if self.open[key] <= 0:
                del self.open[key]

    def refusal(self) -> bytes:
        """The whole HTTP answer to a connection past the bound."""
        body = json.dumps({"detail": f"Your network address already has {self.per_address} connections open to this "
                           f"public server (at most {self.per_address}): close some, then try again."}).encode()
        return (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
                b"retry-after: 10\r\ncontent-length: %d\r\n\r\n" % len(body)) + body


_CAP: list[ConnectionCap | None] = [None]


def limit_connections(per_address: int | None, headers_seconds: float | None = None,
                      key: Callable[[str], str | None] = lambda host: host) -> None:
    """Bound the connections of each address (None: no bound) and the time a connection may take to send its first
    request's headers (`ConnectionCap`, `key` its address rule) for every connection that opens from now on, on the
    uvicorn servers of this process (Gradio's launch makes a uvicorn.Config and loads it when it starts; a server
    already running takes the new bound too)."""
    import uvicorn
    _CAP[0] = ConnectionCap(per_address, headers_seconds, key) if per_address is not None else None
    if not getattr(uvicorn.Config.load, "_capped", False):
        load = uvicorn.Config.load

        @functools.wraps(load)
        def capped_load(config: Any) -> None:
            load(config)
            if not getattr(config.http_protocol_class, "_capped", False):
                config.http_protocol_class = capped(config.http_protocol_class)
        capped_load._capped = True
        uvicorn.Config.load = capped_load


@functools.cache
def capped(protocol_class: type) -> type:
    """`protocol_class` (uvicorn's HTTP protocol) refusing a connection past its address's bound (`_CAP`)."""

    class Capped(protocol_class):
        _capped = True

        def connection_made(self, transport: Any) -> None:
            self._cap, self._cap_key, self._refused, self._headers_timer = _CAP[0], None, False, None
            if self._cap is not None:
                peer = transport.get_extra_info("peername")
                key = self._cap.key(str(peer[0]) if peer else "")
                if key is not None and not self._cap.take(key):
                    self._refused = True
                    transport.write(self._cap.refusal())
                    transport.close()
                    return
                self._cap_key = key
            super().connection_made(transport)
            if self._cap is not None and self._cap.headers_seconds is not None:
                self._headers_timer = self.loop.call_later(self._cap.headers_seconds, self._headers_too_slow)

        def on_response_complete(self) -> None:
            """After each answer the next request's headers get the same time: uvicorn's keep-alive timer, which
            closes an idle connection, stops at the first byte of them (a byte every few seconds held it for good)."""
            answered = self.cycle  # before uvicorn starts a request it holds already (pipelined)
            super().on_response_complete()
            if self._headers_timer is not None and not self.transport.is_closing():
                self._headers_timer.cancel()
                self._headers_timer = self.loop.call_later(self._cap.headers_seconds, self._headers_too_slow, answered)

        def _headers_too_slow(self, answered: Any = None) -> None:
            """Close the connection when no request's headers have come whole since it opened (`answered` None) or
            since the request `answered` was answered: uvicorn starts a new request's cycle once they have."""
            if self.cycle is answered and not self.transport.is_closing():
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            if not self._refused:
                super().data_received(data)

        def eof_received(self) -> Any:
            return None if self._refused else super().eof_received()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._refused:
                return
            self._release()
            super().connection_lost(exc)

        def handle_websocket_upgrade(self, *args: Any) -> None:
            """uvicorn hands the connection to a WebSocket protocol (where `websockets` or `wsproto` is installed),
            which is told of its end instead of this one: its place and timer go now."""
            self._release()
            super().handle_websocket_upgrade(*args)

        def _release(self) -> None:
            """The connection's place in its address's bound given back, its headers' timer stopped (once)."""
            if self._headers_timer is not None:
                self._headers_timer.cancel()
                self._headers_timer = None
            if self._cap_key is not None:
                self._cap.give(self._cap_key)
                self._cap_key = None

    Capped.__name__ = Capped.__qualname__ = "Capped" + protocol_class.__name__
    return Capped
