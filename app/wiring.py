"""How every event reaches the engine: `StudioBlocks` refuses bad inputs with a message before the handler,
`handler` wraps a handler method of app/handlers/ (readable errors, progress, work owned by its request), `wire`
empties outputs first, the concurrency pools and the bounded queue."""
from __future__ import annotations

import copy
import functools
import inspect
import logging
import math
import re
import types
import typing
import weakref
from typing import Any, Callable

import gradio as gr
from gradio.components.api_component import Api
from gradio.context import LocalContext
from gradio.exceptions import InvalidPathError
from pydantic import ValidationError

from core.checkpoint import CheckpointError
from core.runtime import Cancelled

from .messages import one_line, quoted
from .server.gate import LIGHT_POOL, QueueShares, bound_per_client, client_address
from .server.public import VISITOR
from .server.work import RUNNING, run_owned
from .settings import QUEUE_SIZE
from .shared.models import ModelUnavailable

log = logging.getLogger(__name__)
EVENT_CONCURRENCY = 2  # requests of one event that run at a time (2 cores, torch on 1 thread each)
# Concurrency pools (Gradio's concurrency_id / concurrency_limit). The cheap requests (tens of ms:
# the reverse dictionary, a pair's similarity, job queries) have a pool of their own, so a slow
# request never holds their slots; each slow kind runs one at a time, so a burst of maps or decodings
# waits in its own queue and leaves the 2 cores (torch on 1 thread per request) to the cheap ones.
QUICK = {"concurrency_id": LIGHT_POOL, "concurrency_limit": 2}  # public mode keeps them a reserve of the queue
DECODE = {"concurrency_id": "decode", "concurrency_limit": 1}  # Vec2Sent beam search: analogy, interpolation
# Seconds of CPU each: maps (UMAP/PCA), candidate maps, heatmaps, embedding an uploaded corpus or
# dictionary, exports.
HEAVY = {"concurrency_id": "heavy", "concurrency_limit": 1}
EVALUATE = {"concurrency_id": "evaluate", "concurrency_limit": 1}  # minutes: not in the way of maps
MODEL = {"concurrency_id": "model", "concurrency_limit": 1}  # loading or saving a model
USER_ERRORS = (ValueError, CheckpointError, ModelUnavailable, FileNotFoundError)
CANCELLED = "Cancelled: the request was stopped before it finished."
INPUT_QUOTE_CHARS = 24  # of a refused input value a message repeats
INPUT_MESSAGE_CHARS = 160


class StudioBlocks(gr.Blocks):
    """The app's gr.Blocks: an input that Gradio refuses before the handler runs is refused with one short line
    naming it (issue 55). Gradio 6.31 checks each input of an event first (`Blocks.preprocess_data`): a file
    must be an upload of this server (InvalidPathError), a file input takes a file (pydantic's ValidationError),
    a component's `preprocess` must accept the value (ComponentProcessingError: gr.Number(precision=0) does
    int(nan), a slider compares a string with its minimum). None of these is a gr.Error, and Gradio answers
    them with `{"error": null}`, no message at all, unless `show_error`, which would show any exception's
    text, unbounded (server paths included). Gradio's own gr.Errors there (a number out of range, a choice not
    offered) quoted the whole value and named no input; they are rewritten too. JSON's NaN and Infinity, which
    Python's JSON reader accepts and a slider or a gr.Number without precision passes on, are refused here."""

    async def preprocess_data(self, block_fn, inputs: list[Any], state, explicit_call: bool = False):
        try:
            return await self._checked_inputs(block_fn, inputs, state, explicit_call)
        finally:
            _forget_values(state, block_fn.inputs)

    async def postprocess_data(self, block_fn, predictions, state):
        try:
            return await super().postprocess_data(block_fn, predictions, state)
        finally:
            _forget_values(state, block_fn.outputs)

    async def _checked_inputs(self, block_fn, inputs: list[Any], state, explicit_call: bool):
        if len(inputs) < len(block_fn.inputs):
            raise gr.Error(f"The request has too few input values ({len(inputs)}): this API's page lists its "
                           "inputs.", print_exception=False)
        for block, value in zip(block_fn.inputs, inputs):
            if isinstance(block, NUMBERS) and isinstance(value, float) and not math.isfinite(value):
                raise gr.Error(input_refusal(block, value), print_exception=False)
            surrogate = lone_surrogate(value)
            if surrogate is not None:  # the tokenizer raised TypeError on it, the JSON answer too (issue 75)
                raise gr.Error(f"{input_label(block)}: the text holds {surrogate}, a lone surrogate (half of a UTF-16 "
                               "pair), which is no character on its own; remove it.", print_exception=False)
        try:
            processed = await super().preprocess_data(block_fn, inputs, state, explicit_call)
        except Exception as err:
            culprit = await self._culprit(block_fn, inputs, state, explicit_call)
            if culprit is None:  # it failed once but not input by input
                log.error("%s: the inputs failed to preprocess", block_fn.name, exc_info=err)
                message = (f"Something went wrong reading the inputs ({type(err).__name__}); the server log has "
                           "details.")
            else:
                message = input_refusal(*culprit)
                log.info("%s: refused an input: %s", block_fn.name, message)
            raise gr.Error(message, print_exception=False) from None
        message = typed_refusal(block_fn, processed)
        if message is not None:
            log.info("%s: refused an input: %s", block_fn.name, message)
            raise gr.Error(message, print_exception=False)
        return processed

    async def _culprit(self, block_fn, inputs: list[Any], state, explicit_call: bool):
        """(block, value, error) of the first input that Gradio's preprocessing refuses on its own, or None.
        Run only after a failure, so the preprocessing of every request stays Gradio's own."""
        for i, block in enumerate(block_fn.inputs):
            alone = copy.copy(block_fn)
            alone.inputs = [block]
            alone.component_prop_inputs = [0] if i in block_fn.component_prop_inputs else []
            try:
                await super().preprocess_data(alone, [inputs[i]], state, explicit_call)
            except Exception as err:
                return block, inputs[i], err
        return None


def _forget_values(state, blocks) -> None:
    """Drop the copies of `blocks`' last values that Gradio keeps in a session (SessionState.config_values, for its
    deep links, which the app does not use and public mode closes): every input's and output's, a refused 2 MB
    description or a map's figure included, held for the session's life (session 49's review)."""
    for block in blocks if state is not None else ():
        config = state.config_values.get(getattr(block, "_id", None))
        if config and "props" in config:
            config["props"]["value"] = None


NUMBERS = (gr.Number, gr.Slider)
SURROGATE = re.compile("[\ud800-\udfff]")  # JSON's "\\ud800" decodes to one; a valid pair decodes to one character
NESTING = 4  # levels of lists and dicts (a table's rows, a multiple choice) searched for one


def lone_surrogate(value: Any, depth: int = 0) -> str | None:
    """The first surrogate code point in `value`'s text (a string, or the strings of its lists and dicts), as
    "U+D800"; None when there is none."""
    if isinstance(value, str):
        found = SURROGATE.search(value)
        return f"U+{ord(found.group()):04X}" if found else None
    if isinstance(value, dict) and depth < NESTING:
        value = [*value.keys(), *value.values()]
    if isinstance(value, (list, tuple)) and depth < NESTING:
        return next((found for item in value if (found := lone_surrogate(item, depth + 1)) is not None), None)
    return None
CHOICES = (gr.Dropdown, gr.Radio, gr.CheckboxGroup)


def input_label(block: gr.components.Component) -> str:
    """What a message calls an input: its label without its parenthesis, else its kind."""
    return one_line(str(getattr(block, "label", None) or block.get_block_name()).split(" (")[0], 40)


def input_refusal(block: gr.components.Component, value: Any, err: Exception | None = None) -> str:
    """Why `block` refuses `value` (`err`: what Gradio raised), as one short line naming the input by its label
    (without its parenthesis) and quoting at most a short, escaped part of the value, never a server path."""
    label = input_label(block)
    shown = quoted(value, INPUT_QUOTE_CHARS)
    if isinstance(err, InvalidPathError):  # its message holds the server's absolute path
        return f"{label}: that file was not uploaded to this server; upload it again."
    if isinstance(block, gr.File) and isinstance(err, ValidationError):
        return f"{label}: expected a file uploaded to this server, got {shown}."
    if isinstance(block, gr.File) and not isinstance(err, gr.Error):  # e.g. an upload deleted since
        return f"{label}: that file could not be read; upload it again."
    if isinstance(block, NUMBERS):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return f"{label}: expected a number, got {shown}."
        if isinstance(value, float) and not math.isfinite(value):
            return f"{label}: expected a finite number, got {shown}."
        low, high = block.minimum, block.maximum
        if (low is not None and value < low) or (high is not None and value > high):
            # Formatted only when there: an input with a minimum and no maximum raised here (issue 61).
            limits = ([f"at least {low:g}"] if low is not None else []) + \
                ([f"at most {high:g}"] if high is not None else [])
            return f"{label}: must be {' and '.join(limits)}, got {shown}."
    if isinstance(block, CHOICES) and isinstance(err, gr.Error):
        return f"{label}: {shown} is not one of its choices."
    if isinstance(err, gr.Error):
        return f"{label}: " + one_line(str(err.message), INPUT_MESSAGE_CHARS - len(label) - 2)
    if isinstance(err, ValidationError):
        return f"{label}: expected a {block.get_block_name()} value, got {shown}."
    return f"{label}: could not read {shown}."


SCALARS = {str: "text", int: "a number", float: "a number", bool: "true or false", type(None): "nothing"}


def typed_refusal(block_fn: Any, values: list[Any]) -> str | None:
    """Why one of `values` (an event's inputs as its function receives them) is not of the type its parameter
    declares, as one line naming the input; None when all fit. Only plain declarations are checked (text, a
    number, true or false, or nothing, and their unions), never a file or a state (Gradio checks those), and
    None passes where the input starts empty (an untouched text box).
    Gradio passes on whatever a dropdown with custom values, a dropdown's None or a gr.api parameter is sent:
    `switch_model` given a list, `job_active` a dict, `draw_map` a size of None raised inside their handlers
    (issue 61)."""
    for block, value, (name, expected) in zip(block_fn.inputs, values, declared_types(block_fn.fn)):
        if expected is None or isinstance(block, (gr.File, gr.State)) or _is_a(value, expected) or \
                (value is None and getattr(block, "value", None) is None):  # as the page may send it
            continue
        kinds = " or ".join(dict.fromkeys(SCALARS[kind] for kind in expected))
        label = name if isinstance(block, Api) else input_label(block)  # a gr.api input's label is "1st"
        return f"{label}: expected {kinds}, got {quoted(value, INPUT_QUOTE_CHARS)}."
    return None


# declared_types of each handler, while it lives: an lru_cache kept every handler, its Studio and their models alive
_DECLARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def declared_types(fn: Callable) -> list[tuple[str, tuple[type, ...] | None]]:
    """(name, the plain types it accepts, or None when it declares something else) of each positional parameter
    of `fn` (through its wrappers), in order; read once a handler."""
    try:
        return _DECLARED[fn]
    except (KeyError, TypeError):  # TypeError: None, or a callable without weak references (read every time)
        declared = _declared_types(fn)
    try:
        _DECLARED[fn] = declared
    except TypeError:
        pass
    return declared


def _declared_types(fn: Callable) -> list[tuple[str, tuple[type, ...] | None]]:
    if fn is None:
        return []
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [(p.name, _plain_types(p.annotation)) for p in parameters
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _plain_types(annotation: Any) -> tuple[type, ...] | None:
    """The types of SCALARS an annotation allows (a string under `from __future__ import annotations`, such as
    "str | None", is read by name, never evaluated); None when it allows anything else."""
    if isinstance(annotation, str):
        names = {"str": str, "int": int, "float": float, "bool": bool, "None": type(None)}
        kinds = tuple(names.get(part.strip()) for part in annotation.split("|"))
        return kinds if all(kinds) else None
    kinds = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else (annotation,)
    return kinds if kinds and all(kind in SCALARS for kind in kinds) else None


def _is_a(value: Any, kinds: tuple[type, ...]) -> bool:
    """Whether `value` is one of `kinds` (an int or float parameter takes any number but true or false)."""
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, (int, float)):
        return int in kinds or float in kinds
    return any(isinstance(value, kind) for kind in kinds if kind not in (int, float, bool))


def handler(fn: Callable) -> Callable:
    """Wrap a handler method (app/handlers/) for Gradio: readable errors, gr.Progress for a `progress`
    parameter, and work owned by its request (app.server.work): it runs in a worker thread that stops at its next
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
        VISITOR.set(client_address(LocalContext.request.get(None)))  # whose share of the disk its writes use
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
    event = cleared.then(fn, inputs, outputs, **kwargs)
    # a refusal is its toast alone: the outputs that showed the request's progress lose the "Error" badge
    badged = kwargs.get("show_progress_on") or [o for o in outputs if not isinstance(o, gr.State)]
    without_error_badges(event, list(badged) if isinstance(badged, (list, tuple)) else [badged])
    return event


def without_error_badges(event, outputs: list) -> None:
    """A refused request is said once, in its toast; Gradio also marks the event's outputs with a red "Error"
    badge, which stays after the toast has gone (issues 54, 76): the step after a failure gives them back their
    look, their values unchanged. `wire` does it for every event it wires."""
    event.failure(lambda: tuple(gr.update() for _ in outputs) if len(outputs) > 1 else gr.update(), None, outputs,
                  queue=False, show_progress="hidden", api_visibility="private")


def enable_queue(demo: gr.Blocks, max_size: int = QUEUE_SIZE, concurrency: int = EVENT_CONCURRENCY,
                 shares: QueueShares = QueueShares()) -> gr.Blocks:
    """Bound the request queue: at most `max_size` requests wait, and at most `shares` of them one client's
    (app.server.gate); one more is refused at once (HTTP 503: the browser shows "This application is currently
    busy. Please try again.", gradio_client raises QueueError) instead of waiting behind an endless queue."""
    if max_size < 1 or concurrency < 1:
        raise ValueError("The queue size and the concurrency must be at least 1.")
    demo.queue(max_size=max_size, default_concurrency_limit=concurrency)
    bound_per_client(demo._queue, shares)
    return demo


def running_work() -> dict:
    """{"total": handlers' works running now, "by_handler": {name: count}}: after a request is
    cancelled and the cancel answered, its work is no longer counted (app.server.work)."""
    return {"total": RUNNING.total(), "by_handler": RUNNING.counts()}
