"""The requests of the load test (bench/load_test.py): a request (`Call`) and its timed answer
(`Outcome`), the fixed pool the clients draw from (`request_pool`, `client_calls`), sending
(`send`, `references`, `run_clients`) and the comparison of concurrent answers with the same request
answered alone (`normalize`, `compare`, `latency_rows`). bench/cancel_test.py sends its requests with
these too.
"""
from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from app.views.projection import CACHED

REQUEST_TIMEOUT = 300.0  # seconds; a request with no answer by then is counted as failed (a hang)
DESCRIPTIONS = ["a person who is in charge", "a place where books are kept", "a large grey animal with a trunk",
                "to move quickly on foot", "feeling or showing pleasure", "a building where people live",
                "the man who rules the country", "a drink made of grapes", "a small animal that people keep"]
SENTENCES = ["The man is walking.", "The woman is walking.", "The man is running.", "A cat sits on the mat.",
             "A dog lies on the rug.", "The stock market fell sharply.", "Shares dropped today.",
             "A man is playing a guitar.", "Someone plays an instrument.", "The weather is cold and wet.",
             "I love sunny summer days.", "The king rules the city.", "Children read books at school.",
             "The river runs to the sea.", "She bakes bread every morning.", "The doctor treats the sick."]
MAP_POINTS = 12
RD = "reverse dictionary"
MAP = f"map of {MAP_POINTS} sentences"
# A map's status line: "12 points, PCA in 0.0 s." and a note (projection.CACHED when the projection cache answered)
MAP_TIMING = re.compile(r" in \d+(?:\.\d+)? s\." + f"(?: {re.escape(CACHED)})?")


@dataclass(frozen=True)
class Call:
    """One request: its kind, API name and arguments."""
    kind: str
    api: str
    args: tuple

    @property
    def key(self) -> str:
        return json.dumps([self.api, list(self.args)])


def reverse_dictionary(rng: random.Random) -> Call:
    # description, k, part of speech, min length, max length, starts with, pattern, exclude its words, compare
    return Call(RD, "/reverse_dictionary", (rng.choice(DESCRIPTIONS), rng.choice([5, 10, 20]),
                                            rng.choice(["any", "any", "noun", "verb"]), 0, 0, "",
                                            rng.choice(["", "", "*e*", "?a*"]), rng.random() < 0.5, False))


def similarity(rng: random.Random) -> Call:
    return Call("similarity", "/similarity", tuple(rng.sample(SENTENCES, 2)))


def analogy(rng: random.Random) -> Call:
    return Call("analogy (decode)", "/analogy", (*rng.sample(SENTENCES, 3), "b - a + c", False, "largest ready"))


def small_map(rng: random.Random) -> Call:
    sentences = "\n".join(rng.sample(SENTENCES, MAP_POINTS))
    return Call(MAP, "/draw_map", ("my sentences", 500, sentences, None, "PCA", "2-D", "part of speech"))


KINDS: dict[str, Callable[[random.Random], Call]] = {
    RD: reverse_dictionary, "similarity": similarity, "analogy (decode)": analogy, MAP: small_map}


@dataclass(frozen=True)
class Outcome:
    """One timed request: its answer (normalised JSON) or `error` (empty when it succeeded)."""
    call: Call
    start: float
    end: float
    answer: str = ""
    error: str = ""

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class Comparison:
    """Concurrent answers against their references."""
    compared: int = 0
    differing: int = 0
    no_reference: int = 0
    examples: list[str] = field(default_factory=list)


# ---- requests ----------------------------------------------------------------------------------------
def request_pool(per_kind: int, seed: int) -> dict[str, list[Call]]:
    """Up to `per_kind` distinct requests of each kind, drawn with a fixed seed."""
    rng = random.Random(seed)
    pool = {}
    for kind, make in KINDS.items():
        calls = {}
        for _ in range(50 * per_kind):  # bounded: a kind may have fewer distinct requests
            call = make(rng)
            calls.setdefault(call.key, call)
            if len(calls) == per_kind:
                break
        pool[kind] = list(calls.values())
    return pool


def client_calls(pool: dict[str, list[Call]], n: int, seed: int) -> list[Call]:
    """One client's `n` requests: the kinds in equal shares in a shuffled order, each drawn from the pool."""
    rng = random.Random(seed)
    kinds = [list(KINDS)[i % len(KINDS)] for i in range(n)]
    rng.shuffle(kinds)
    return [rng.choice(pool[kind]) for kind in kinds]


def normalize(call: Call, result) -> str:
    """The answer as JSON (sorted keys), the map's projection time and cache note masked."""
    if call.kind == MAP and isinstance(result, (list, tuple)) and len(result) > 1 and isinstance(result[1], str):
        result = [result[0], MAP_TIMING.sub(" in (time) s.", result[1]), *result[2:]]
    return json.dumps(result, sort_keys=True, default=str)


def new_client(url: str):
    from gradio_client import Client

    return Client(url, verbose=False, download_files=False, httpx_kwargs={"timeout": REQUEST_TIMEOUT})


def send(client, call: Call) -> Outcome:
    """One request, timed; every failure is recorded, whatever it is."""
    start = time.perf_counter()
    try:
        result = client.submit(*call.args, api_name=call.api).result(timeout=REQUEST_TIMEOUT)
    except Exception as err:
        return Outcome(call, start, time.perf_counter(), error=f"{type(err).__name__}: {err}"[:300])
    return Outcome(call, start, time.perf_counter(), answer=normalize(call, result))


def references(client, calls: list[Call]) -> tuple[dict[str, str], list[Outcome]]:
    """Each distinct request sent once, one after another: {key: answer}, and the failed ones."""
    distinct = list({c.key: c for c in calls}.values())
    outcomes = [send(client, call) for call in distinct]
    return {o.call.key: o.answer for o in outcomes if not o.error}, [o for o in outcomes if o.error]


def run_clients(url: str, lists: list[list[Call]]) -> list[Outcome]:
    """Each list sent by its own client, one request at a time, all clients at once."""
    def one(calls: list[Call]) -> list[Outcome]:
        client = new_client(url)
        return [send(client, call) for call in calls]
    with ThreadPoolExecutor(len(lists)) as pool:
        return [outcome for outcomes in pool.map(one, lists) for outcome in outcomes]


def compare(outcomes: list[Outcome], allowed: Callable[[Outcome], list[dict[str, str]]]) -> Comparison:
    """Each successful answer against the references `allowed(outcome)` (it must equal one of them)."""
    result = Comparison()
    for outcome in outcomes:
        if outcome.error:
            continue
        expected = [refs[outcome.call.key] for refs in allowed(outcome) if outcome.call.key in refs]
        if not expected:
            result.no_reference += 1
            continue
        result.compared += 1
        if outcome.answer not in expected:
            result.differing += 1
            if len(result.examples) < 5:
                result.examples.append(difference(outcome, expected[0]))
    return result


def difference(outcome: Outcome, expected: str, width: int = 90) -> str:
    """Where an answer first departs from its reference, with some context."""
    got = outcome.answer
    at = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    lo = max(0, at - width // 3)
    return (f"{outcome.call.kind} {outcome.call.args!r:.120}: differs at character {at}\n"
            f"      alone:      ...{expected[lo:lo + width]!r}\n      concurrent: ...{got[lo:lo + width]!r}")


def latency_rows(outcomes: list[Outcome]) -> list[dict]:
    """Per request kind: count, failures, p50/p95/p99 latency (ms) of the successful requests."""
    rows = []
    for kind in KINDS:
        mine = [o for o in outcomes if o.call.kind == kind]
        ms = [1000 * o.seconds for o in mine if not o.error]
        p50, p95, p99 = np.percentile(ms, [50, 95, 99]) if ms else (float("nan"),) * 3
        rows.append({"kind": kind, "count": len(mine), "failed": sum(bool(o.error) for o in mine),
                     "p50_ms": round(float(p50), 1), "p95_ms": round(float(p95), 1), "p99_ms": round(float(p99), 1),
                     "max_ms": round(max(ms), 1) if ms else float("nan")})
    return rows
