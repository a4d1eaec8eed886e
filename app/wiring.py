"""How every event reaches the engine: `handler` wraps a handler method of app/handlers/ (readable errors,
progress, work owned by its request), `wire` empties outputs first, the concurrency pools and the bounded queue."""
from __future__ import annotations

import functools
import inspect
import logging
from typing import Callable

import gradio as gr
from gradio.context import LocalContext

from core.checkpoint import CheckpointError
from core.runtime import Cancelled

from .messages import one_line
from .models import ModelUnavailable
from .server import QueueShares, bound_per_client
from .settings import QUEUE_SIZE
from .work import RUNNING, run_owned

log = logging.getLogger(__name__)
EVENT_CONCURRENCY = 2  # requests of one event that run at a time (2 cores, torch on 1 thread each)
# Concurrency pools (Gradio's concurrency_id / concurrency_limit). The cheap requests (tens of ms:
# the reverse dictionary, a pair's similarity, job queries) have a pool of their own, so a slow
# request never holds their slots; each slow kind runs one at a time, so a burst of maps or decodings
# waits in its own queue and leaves the 2 cores (torch on 1 thread per request) to the cheap ones.
QUICK = {"concurrency_id": "quick", "concurrency_limit": 2}
DECODE = {"concurrency_id": "decode", "concurrency_limit": 1}  # Vec2Sent beam search: analogy, interpolation
# Seconds of CPU each: maps (UMAP/PCA), candidate maps, heatmaps, embedding an uploaded corpus or
# dictionary, exports.
HEAVY = {"concurrency_id": "heavy", "concurrency_limit": 1}
EVALUATE = {"concurrency_id": "evaluate", "concurrency_limit": 1}  # minutes: not in the way of maps
MODEL = {"concurrency_id": "model", "concurrency_limit": 1}  # loading or saving a model
USER_ERRORS = (ValueError, CheckpointError, ModelUnavailable, FileNotFoundError)
CANCELLED = "Cancelled: the request was stopped before it finished."


def handler(fn: Callable) -> Callable:
    """Wrap a handler method (app/handlers/) for Gradio: readable errors, gr.Progress for a `progress`
    parameter, and work owned by its request (app.work): it runs in a worker thread that stops at its next
    step when the request is cancelled or its client leaves, and the request ends only once the work has."""
    signature = inspect.signature(fn)

    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Cancelled:
            raise
        except USER_ERRORS as err:
            raise gr.Error(one_line(str(err)), print_exception=False) from None
        except Exception as err:
            log.exception("%s failed", fn.__name__)
            raise gr.Error(f"Something went wrong ({type(err).__name__}); the server log has details.",
                           print_exception=False) from None

    @functools.wraps(fn)
    async def wrapper(*args, **kwargs):
        try:
            return await run_owned(functools.partial(call, *args, **kwargs), fn.__name__, _client_gone())
        except Cancelled:
            raise gr.Error(CANCELLED, print_exception=False) from None

    params = [p.replace(default=gr.Progress()) if p.name == "progress" else p
              for p in signature.parameters.values()]
    wrapper.__signature__ = signature.replace(parameters=params)
    return wrapper


def _client_gone() -> Callable[[], bool]:
    """For the event being handled now: a function telling whether its client has gone (Gradio marks
    the events of a session whose page closed its connection as no longer alive)."""
    blocks, event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
    events = getattr(getattr(blocks, "_queue", None), "event_ids_to_events", None)
    if events is None or event_id is None:  # called outside Gradio's queue
        return lambda: False

    def gone() -> bool:
        event = events.get(event_id)
        return event is not None and not event.alive
    return gone


def and_session(fn: Callable) -> Callable:
    """`handler(fn)` for an event that also outputs the session it was given (its last output): gradio
    keeps a state, with its time to live and end callback, only once an event has output it."""
    wrapped = handler(fn)

    @functools.wraps(wrapped)
    async def run(*args, **kwargs):
        session = wrapped.__signature__.bind(*args, **kwargs).arguments["session"]
        return await wrapped(*args, **kwargs), session
    run.__signature__ = wrapped.__signature__
    return run


def wire(triggers: list, fn: Callable, inputs, outputs: list, keep: tuple = (), **kwargs):
    """Run `fn` on `triggers` after emptying its shown outputs but `keep` (in the browser's request, outside
    the queue): a user error is only a toast, which would leave the previous result under the new input.
    Kept: what the new input draws on (the map a search highlights on), which an error leaves as it was drawn
    last (with the last search's rings, if any)."""
    shown = [o for o in outputs if not isinstance(o, gr.State) and all(o is not k for k in keep)]
    cleared = gr.on(triggers, lambda: {o: None for o in shown}, None, shown, queue=False,
                    show_progress="hidden", api_visibility="private")
    return cleared.then(fn, inputs, outputs, **kwargs)


def enable_queue(demo: gr.Blocks, max_size: int = QUEUE_SIZE, concurrency: int = EVENT_CONCURRENCY,
                 shares: QueueShares = QueueShares()) -> gr.Blocks:
    """Bound the request queue: at most `max_size` requests wait, and at most `shares` of them one client's
    (app.server); one more is refused at once (HTTP 503: the browser shows "This application is currently
    busy. Please try again.", gradio_client raises QueueError) instead of waiting behind an endless queue."""
    if max_size < 1 or concurrency < 1:
        raise ValueError("The queue size and the concurrency must be at least 1.")
    demo.queue(max_size=max_size, default_concurrency_limit=concurrency)
    bound_per_client(demo._queue, shares)
    return demo


def running_work() -> dict:
    """{"total": handlers' works running now, "by_handler": {name: count}}: after a request is
    cancelled and the cancel answered, its work is no longer counted (app.work)."""
    return {"total": RUNNING.total(), "by_handler": RUNNING.counts()}
