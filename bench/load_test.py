"""Load test of the web app: `python app.py` on a free local port, then concurrent gradio_client clients
sending mixed requests (reverse dictionary, similarity, analogy with decoding, a map of a few sentences)
while a fine-tuning job started through the API runs. Every concurrent answer is compared with the
answer the same request got alone, and the test exits with 1 on any failed request, any differing
answer, or a job problem. Phases, in order:

1. **Reference**: the requests come from a fixed pool (`--distinct` per kind, drawn with `--seed`), so
   every concurrent request has a reference: each distinct request is sent once, sequentially, and
   its answer recorded.
2. **Memory** (`--memory-requests`, `--memory-uploads`; 0 and 0 skip it, as on --tiny by default): the
   app's resident memory (VmRSS of its process; training jobs run in processes of their own) once
   warm, then while and after `--clients` clients send `--memory-requests` mixed requests in all and
   `--memory-uploads` dictionaries are uploaded and validated, each by a new client (a session of
   its own, which keeps its validated upload). Target: at most +200 MB over the warm state.
3. **Concurrent**: a fine-tuning job is started, then `--clients` clients send `--requests` requests
   each (kinds in equal shares, shuffled, drawn from the pool with fixed seeds). Each answer must
   equal its reference exactly (the returned data as JSON, floats included: the engine is
   deterministic). The one masked part: a map's status line says how long the projection took
   ("PCA in 0.0 s.") and whether it came from the projection cache; the coordinates are compared.
   Then the job's model is saved through the API and loaded with `Engine.load`.
4. **Hostile** (`--hostile-seconds`, 0 skips it): one probe client times /reverse_dictionary and
   GET /gradio_api/info, first alone, then while `--hostile-clients` clients send the costliest
   requests the app accepts (the 64-character wildcard '*' * 63 + 'q', 1,000-character texts,
   k = 50, a 20,000-line map, refined analogies of long sentences...). Prints the delay they add; the
   probe's answers are compared with their references too. Target: at most 2 s added.
5. **Model switching** (`--switches`, 0 skips it): a client switches the shared model to another
   (`--switch-to`: the untrained base; a second tiny model on --tiny) and back while the others send
   requests. (Not to the fine-tuned checkpoint: the API accepts only the models listed when the app
   started, as the dropdown's choices.) References are taken for both
   models first (switch, send each distinct request once; switch back, again: a switched-to model is
   a fresh load, so this is the state the concurrent requests meet). A request that started after
   a switch had answered and ended before the next one was sent knows its model; one that
   overlapped a switch may have been answered by either model (a handler takes the active model
   once) and must equal one of their references. This is a separate phase because switching
   changes answers legitimately: its latencies are not those of phase 2.

    python bench/load_test.py                                   # 8 clients x 200 requests, shipped model
    python bench/load_test.py --tiny --clients 4 --requests 25  # the CI form: a tiny random model
    python bench/load_test.py --json load.json                  # also write the numbers as JSON

The shipped model answers the reverse dictionary from all WordNet words and phrases once its open
vocabulary is ready (minutes once per model, then cached): the test waits for that before phase 1,
since answers change when it becomes ready. The tiny model serves single-token words only
(--single-token-words). The app runs with --no-umap-warmup (maps use PCA) and talks only to 127.0.0.1.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
from bench.bench_app import first_answer, free_port

REQUEST_TIMEOUT = 300.0  # seconds; a request with no answer by then is counted as failed (a hang)
JOB_TIMEOUT = 1800.0
OPEN_VOCAB_TIMEOUT = 1800.0  # waiting for the open vocabulary (about 4 minutes on 2 cores, once per model)
CHECKPOINT_NAME = "load-test"
P99_TARGET_S = 2.0  # reverse dictionary, phase 2
HOSTILE_TARGET_S = 2.0  # delay a hostile request may add to another endpoint
MEMORY_TARGET_MB = 200.0  # the app's growth over its warm state after the memory phase
PENDING_NOTICE = "until the full vocabulary"  # app.handlers.reverse.OPEN_VOCABULARY_PENDING
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
# A map's status line: "12 points, PCA in 0.0 s. " + a note ("cached result" when the projection cache answered)
MAP_TIMING = re.compile(r" in \d+(?:\.\d+)? s\. (?:cached result)?")


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
class JobReport:
    """What happened to the fine-tuning job started before the load."""
    id: str
    running_at_load_start: bool = False
    running_at_load_end: bool = False
    finished: bool = False  # done, and saved through the API
    seconds: float = 0.0  # from start to finish
    saved: str = ""  # the app's answer to /save_finetuned
    checkpoint_loads: bool = False
    error: str = ""


@dataclass(frozen=True)
class Switch:
    """One model switch as the switching client saw it: the model is swapped somewhere in [start, end]."""
    target: str
    start: float
    end: float
    error: str = ""


@dataclass
class Comparison:
    """Concurrent answers against their references."""
    compared: int = 0
    differing: int = 0
    no_reference: int = 0
    examples: list[str] = field(default_factory=list)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8, help="concurrent gradio_client clients (default 8)")
    parser.add_argument("--requests", type=int, default=200, help="requests per client (default 200)")
    parser.add_argument("--distinct", type=int, default=24, help="distinct requests of each kind (default 24)")
    parser.add_argument("--tiny", action="store_true", help="serve a tiny random model built here (CI form)")
    parser.add_argument("--model", type=Path, default=None, help="checkpoint to serve (default: the shipped one)")
    parser.add_argument("--single-token-words", action="store_true",
                        help="serve without the open vocabulary (always on with --tiny)")
    parser.add_argument("--threads", type=int, default=1, help="the app's torch threads (default 1)")
    parser.add_argument("--job-words", type=int, default=60, help="words in the fine-tuning dictionary (default 60)")
    parser.add_argument("--job-steps", type=int, default=None,
                        help="training steps of the job (default: 50 on --tiny, else 150)")
    parser.add_argument("--hostile-seconds", type=float, default=None,
                        help="length of the hostile phase (default: 10 on --tiny, else 60; 0 skips it)")
    parser.add_argument("--hostile-clients", type=int, default=2, help="clients sending hostile requests (default 2)")
    parser.add_argument("--probes", type=int, default=20, help="probe rounds alone before the hostile phase")
    parser.add_argument("--switches", type=int, default=None,
                        help="round trips of the model-switching client (default: 2 on --tiny, else 4; 0 skips)")
    parser.add_argument("--switch-requests", type=int, default=None,
                        help="requests per client while models switch (default: 10 on --tiny, else 40)")
    parser.add_argument("--switch-to", default=None,
                        help="the model the switching client switches to and back from (default: a second tiny "
                             "model on --tiny, else the untrained base)")
    parser.add_argument("--memory-requests", type=int, default=None,
                        help="mixed requests of the memory phase (default: 0 on --tiny, else 1000; 0 and "
                             "--memory-uploads 0 skip it)")
    parser.add_argument("--memory-uploads", type=int, default=None,
                        help="dictionary uploads of the memory phase, one new session each (default: 0 on --tiny, "
                             "else 20)")
    parser.add_argument("--memory-upload-words", type=int, default=20_000,
                        help="words of the memory phase's upload: all their WordNet definitions (default 20000, "
                             "about 2 MB)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.single_token_words = args.single_token_words or args.tiny
    args.switch_to = args.switch_to or ("tiny-b" if args.tiny else "untrained base (all-MiniLM-L6-v2)")
    for name, tiny, full in (("job_steps", 50, 150), ("hostile_seconds", 10.0, 60.0), ("switches", 2, 4),
                             ("switch_requests", 10, 40), ("memory_requests", 0, 1000), ("memory_uploads", 0, 20)):
        if getattr(args, name) is None:
            setattr(args, name, tiny if args.tiny else full)
    return args


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
        result = [result[0], MAP_TIMING.sub(" in (time) s. ", result[1]), *result[2:]]
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


# ---- the app and the job -----------------------------------------------------------------------------
def tiny_checkpoints(work: Path, checkpoints: Path) -> tuple[Path, set[str]]:
    """In `checkpoints`: a checkpoint of a tiny random BERT (as the tests build it), to serve, and
    "tiny-b" of another one, to switch to; the first's path and the words its head can predict."""
    from core import Engine
    from tests.conftest import TINY_WORDS, build_tiny_bert

    Engine.from_base(str(build_tiny_bert(work / "tiny-b-base", seed=1))).save(checkpoints / "tiny-b", name="tiny-b")
    engine = Engine.from_base(str(build_tiny_bert(work / "tiny-base")))
    return engine.save(checkpoints / "tiny", name="tiny"), set(TINY_WORDS)


def linked_checkpoint(model: Path, checkpoints: Path) -> Path:
    """`model` linked into `checkpoints`, with the Vec2Sent decoders beside it (the app finds a model's
    decoder beside it): the app lists the models of its checkpoint folder as the ones one can switch
    to (the dropdown's choices, which the API checks), and the fine-tuned model is saved there, not
    into the repository's checkpoints/."""
    model = model.resolve()
    for source in [model, *(p for p in model.parent.iterdir() if p.is_dir() and p.name.startswith("vec2sent"))]:
        (checkpoints / source.name).symlink_to(source, target_is_directory=True)
    return checkpoints / model.name


def write_dictionary(path: Path, n_words: int, seed: int, words: set[str] | None = None) -> Path:
    """A TSV dictionary (word, definition, pos) of every WordNet definition of `n_words` sampled words
    (from `words` if given; all of them if there are fewer)."""
    from core.lexicon.dictionary import load_wordnet

    entries = [e for e in load_wordnet() if words is None or e.word in words]
    candidates = sorted({e.word for e in entries})
    chosen = set(random.Random(seed).sample(candidates, min(n_words, len(candidates))))
    rows = [f"{e.word}\t{e.definition}\t{e.pos}\n" for e in entries if e.word in chosen]
    path.write_text("word\tdefinition\tpos\n" + "".join(rows), encoding="utf-8")
    return path


def launch_app(model: Path, port: int, work: Path, args: argparse.Namespace, log: Path) -> subprocess.Popen:
    """`python app.py` on 127.0.0.1:port serving `model`, saving checkpoints into work/checkpoints."""
    command = [sys.executable, "app.py", "--port", str(port), "--threads", str(args.threads), "--no-umap-warmup",
               "--warm-up-delay", "0", "--checkpoints", str(work / "checkpoints"), "--model", str(model)]
    command += ["--single-token-words"] if args.single_token_words else []
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)


@contextlib.contextmanager
def running_app(model: Path, work: Path, args: argparse.Namespace) -> Iterator[tuple[str, subprocess.Popen]]:
    """The app serving `model` on a free local port for the block: (its URL, its process). The end of its
    log is printed when the block fails; the app is stopped at the end."""
    port, log = free_port(), work / "app.log"
    process = launch_app(model, port, work, args, log)
    try:
        yield f"http://127.0.0.1:{port}/", process
    except BaseException:
        print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
        raise
    finally:
        process.terminate()
        process.wait(timeout=60)


def start_job(client, dictionary: Path, steps: int, seed: int) -> str:
    """Upload and validate the dictionary, start fine-tuning; the job id."""
    from gradio_client import handle_file

    report = client.predict(handle_file(str(dictionary)), seed, api_name="/validate")
    if "Ready" not in report:
        raise SystemExit(f"the app did not accept the dictionary:\n{report}")
    # epochs, learning rate, batch size, top layers (0: all), max steps, dev evaluations, seed
    job = client.predict(1, 5e-5, 8, 0, steps, 4, seed, api_name="/start_finetune")
    return job[0]


def job_active(client, job_id: str) -> bool:
    return bool(client.predict(job_id, api_name="/job_active"))


def finish_job(client, job: JobReport, started: float, checkpoints: Path) -> JobReport:
    """Wait for the job, save its model through the API and load the checkpoint with Engine.load."""
    from core import Engine

    while job_active(client, job.id):
        if time.perf_counter() - started > JOB_TIMEOUT:
            job.error = f"still running after {JOB_TIMEOUT:.0f} s"
            return job
        time.sleep(1.0)
    job.seconds = time.perf_counter() - started
    try:
        job.saved = client.predict(job.id, CHECKPOINT_NAME, api_name="/save_finetuned")
        job.finished = True
        engine = Engine.load(checkpoints / CHECKPOINT_NAME, open_vocabulary=False)  # loads and answers: enough
        job.checkpoint_loads = bool(engine.predict_words(DESCRIPTIONS[0], k=3))
    except Exception as err:  # reported as the job's problem, whatever it is
        job.error = f"{type(err).__name__}: {err}"
    return job


def wait_for_open_vocabulary(client, timeout: float = OPEN_VOCAB_TIMEOUT) -> float:
    """Seconds waited until reverse-dictionary answers no longer say the full vocabulary is pending."""
    started = time.perf_counter()
    while PENDING_NOTICE in client.predict(DESCRIPTIONS[0], 5, "any", 0, 0, "", "", False, False,
                                           api_name="/reverse_dictionary")[0]:
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"the open vocabulary was not ready after {timeout:.0f} s")
        time.sleep(5.0)
    return time.perf_counter() - started


def warm_up(client, pool: dict[str, list[Call]]) -> None:
    """One request of each kind, not compared (the first analogy embeds the reference sentences)."""
    for calls in pool.values():
        client.predict(*calls[0].args, api_name=calls[0].api)


# ---- phases ------------------------------------------------------------------------------------------
def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (VmRSS of /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def memory_phase(url: str, pool: dict[str, list[Call]], dictionary: Path, pid: int, args: argparse.Namespace) -> dict:
    """The app's resident memory warm, then at its peak (sampled every 0.5 s) and after the memory phase's
    mixed requests and uploads (see the module's docstring)."""
    from gradio_client import handle_file

    upload = write_dictionary(dictionary.parent / "memory-upload.tsv", args.memory_upload_words, args.seed + 1)
    time.sleep(2.0)  # let the warm-up's last allocations settle
    warm = rss_mb(pid)
    peak, stop = [warm], threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            peak.append(rss_mb(pid))
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    clients = max(1, args.clients)
    lists = [client_calls(pool, args.memory_requests // clients + (i < args.memory_requests % clients),
                          args.seed * 7919 + i) for i in range(clients)]
    outcomes = run_clients(url, lists) if args.memory_requests else []
    uploads_failed = []
    for i in range(args.memory_uploads):
        try:
            report = new_client(url).predict(handle_file(str(upload)), i, api_name="/validate")
            if "Ready" not in report:
                uploads_failed.append(report[:200])
        except Exception as err:
            uploads_failed.append(f"{type(err).__name__}: {err}"[:200])
    seconds = time.perf_counter() - started
    time.sleep(2.0)
    stop.set()
    sampler.join()
    after = rss_mb(pid)
    return {"requests": len(outcomes), "uploads": args.memory_uploads, "seconds": round(seconds, 1),
            "upload_bytes": upload.stat().st_size,
            "failed": sum(bool(o.error) for o in outcomes), "uploads_failed": uploads_failed[:5],
            "errors": sorted({o.error for o in outcomes if o.error})[:5], "warm_mb": round(warm, 1),
            "peak_mb": round(max(peak + [after]), 1), "after_mb": round(after, 1),
            "growth_mb": round(after - warm, 1), "kinds": latency_rows(outcomes) if outcomes else []}


def concurrent_phase(client, url: str, pool: dict[str, list[Call]], dictionary: Path, checkpoints: Path,
                     args: argparse.Namespace) -> dict:
    """Phase 1 and 2: references, then the clients while the fine-tuning job runs; then the job's end."""
    lists = [client_calls(pool, args.requests, args.seed * 1000 + i) for i in range(args.clients)]
    started = time.perf_counter()
    refs, ref_failed = references(client, [c for calls in lists for c in calls])
    ref_seconds = time.perf_counter() - started
    job_started = time.perf_counter()
    job = JobReport(start_job(client, dictionary, args.job_steps, args.seed))
    job.running_at_load_start = job_active(client, job.id)
    load_started = time.perf_counter()
    outcomes = run_clients(url, lists)
    load_seconds = time.perf_counter() - load_started
    job.running_at_load_end = job_active(client, job.id)
    job = finish_job(client, job, job_started, checkpoints)
    return {"references": len(refs), "reference_seconds": round(ref_seconds, 1),
            "reference_failed": [o.error for o in ref_failed][:5], "load_seconds": round(load_seconds, 1),
            "kinds": latency_rows(outcomes), "failed": sum(bool(o.error) for o in outcomes),
            "errors": sorted({o.error for o in outcomes if o.error})[:10],
            "comparison": asdict(compare(outcomes, lambda o: [refs])), "job": asdict(job), "_refs": refs}


def hostile_calls() -> list[Call]:
    """The costliest requests the app accepts (and a few it refuses), by API name."""
    words = "the old man who rules the country with a large grey animal and a place where books are kept"
    long_text = (words + " ") * (1000 // (len(words) + 1))
    long_text = long_text[:1000].strip()
    many_lines = "\n".join(f"line {i}: {SENTENCES[i % len(SENTENCES)]}" for i in range(20_000))
    many_long = "\n".join([long_text] * 50)
    return [
        Call("hostile", "/reverse_dictionary", ("a person who is in charge", 50, "any", 0, 0, "", "*" * 63 + "q",
                                                True, False)),
        Call("hostile", "/reverse_dictionary", (long_text, 50, "any", 1, 60, "q" * 10, "*" * 63 + "q", True, True)),
        Call("hostile", "/reverse_dictionary", (long_text, 50, "adverb", 0, 0, "", "?*" * 32, True, True)),
        Call("hostile", "/reverse_dictionary", (long_text + "x" * 500, 50, "any", 0, 0, "", "*" * 200, True, True)),
        Call("hostile", "/similarity", (long_text, long_text[::-1])),
        Call("hostile", "/heatmap", (many_long,)),
        Call("hostile", "/analogy", (long_text, long_text[::-1], long_text[:500], "(b - a + c) * 2 - a / 3", True,
                                     "largest ready")),
        Call("hostile", "/draw_map", ("my sentences", 5000, many_lines, None, "UMAP", "3-D", "cluster")),
        Call("hostile", "/draw_map", ("dictionary definitions", 5000, "", None, "UMAP", "3-D", "cluster")),
        Call("hostile", "/candidates_map", (long_text, 15, "UMAP")),
    ]


def probe(client, url: str, rd: Call) -> tuple[Outcome, float]:
    """One reverse-dictionary request and the seconds of one GET /gradio_api/info."""
    import httpx

    outcome = send(client, rd)
    start = time.perf_counter()
    try:
        httpx.get(url + "gradio_api/info", timeout=REQUEST_TIMEOUT).raise_for_status()
        info = time.perf_counter() - start
    except Exception:
        info = float("nan")
    return outcome, info


def hostile_phase(client, url: str, pool: dict[str, list[Call]], refs: dict[str, str],
                  args: argparse.Namespace) -> dict:
    """Probe latency alone, then while hostile clients send hostile requests for a bounded time."""
    rd = pool[RD][0]
    if rd.key not in refs:  # no client sent it in phase 2
        refs = {**refs, **references(client, [rd])[0]}
    alone = [probe(client, url, rd) for _ in range(args.probes)]
    stop = threading.Event()
    deadline = time.perf_counter() + args.hostile_seconds
    hostile: list[Outcome] = []

    def attacker(i: int) -> None:
        attack, calls = new_client(url), hostile_calls()
        for n in range(1000):  # bounded; stops at the deadline
            if stop.is_set() or time.perf_counter() > deadline:
                return
            # Both start with a description compared with the untrained model: the first such request
            # after a model loads also loads that model.
            hostile.append(send(attack, calls[(n + 1 + i) % len(calls)]))

    threads = [threading.Thread(target=attacker, args=(i,), daemon=True) for i in range(args.hostile_clients)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)  # let the first hostile requests start
    loaded = []
    while time.perf_counter() < deadline and len(loaded) < 10_000:
        loaded.append(probe(client, url, rd))
    stop.set()
    for thread in threads:
        thread.join(REQUEST_TIMEOUT + 10)
    probes = [o for o, _ in alone + loaded]
    comparison = compare(probes, lambda o: [refs])

    def stats(values: list[float]) -> dict:
        values = [v for v in values if v == v]
        if not values:
            return {"n": 0}
        p50, p95 = np.percentile(values, [50, 95])
        return {"n": len(values), "p50_ms": round(1000 * p50, 1), "p95_ms": round(1000 * p95, 1),
                "max_ms": round(1000 * max(values), 1)}

    result = {"seconds": args.hostile_seconds, "clients": args.hostile_clients,
              "rd_alone": stats([o.seconds for o, _ in alone if not o.error]),
              "rd_hostile": stats([o.seconds for o, _ in loaded if not o.error]),
              "info_alone": stats([s for _, s in alone]), "info_hostile": stats([s for _, s in loaded]),
              "probe_failed": sum(bool(o.error) for o in probes) + sum(s != s for _, s in alone + loaded),
              "comparison": asdict(comparison),
              "hostile_requests": {}}
    for call in hostile_calls():
        mine = [o for o in hostile if o.call == call]
        if mine:
            result["hostile_requests"][f"{call.api} {_short(call.args)}"] = {
                "sent": len(mine), "refused": sum(bool(o.error) for o in mine),
                "max_ms": round(1000 * max(o.seconds for o in mine), 1),
                "error": next((o.error for o in mine if o.error), "")[:120]}
    for name in ("rd", "info"):
        a, h = result[f"{name}_alone"], result[f"{name}_hostile"]
        if a.get("n") and h.get("n"):
            result[f"{name}_added_p50_ms"] = round(h["p50_ms"] - a["p50_ms"], 1)
            result[f"{name}_added_max_ms"] = round(h["max_ms"] - a["p50_ms"], 1)
    return result


def _short(args: tuple) -> str:
    return ", ".join(repr(a)[:24] + ("...'" if isinstance(a, str) and len(a) > 22 else "") for a in args)


def switching_phase(client, url: str, pool: dict[str, list[Call]], served: str, other: str,
                    args: argparse.Namespace) -> dict:
    """Phase 4: references for both models, then clients while one client switches models back and forth."""
    def switch(to: str) -> Switch:
        start = time.perf_counter()
        try:
            status = client.predict(to, api_name="/switch_model")
            error = "" if to in status else f"unexpected answer {status!r}"
        except Exception as err:
            error = f"{type(err).__name__}: {err}"[:300]
        return Switch(to, start, time.perf_counter(), error)

    lists = [client_calls(pool, args.switch_requests, args.seed * 1000 + 500 + i) for i in range(args.clients - 1)]
    every = [c for calls in lists for c in calls]
    setup = [switch(other)]
    refs = {other: references(client, every)}
    setup.append(switch(served))
    refs[served] = references(client, every)
    failed_setup = [s.error for s in setup if s.error] + [o.error for r in refs.values() for o in r[1]]
    if failed_setup:
        return {"error": "; ".join(failed_setup)[:500]}
    refs = {name: r[0] for name, r in refs.items()}

    switches: list[Switch] = []
    done = threading.Event()

    def switcher() -> None:
        for _ in range(args.switches):
            for to in (other, served):
                if done.is_set():
                    return
                switches.append(switch(to))
                done.wait(0.5)

    thread = threading.Thread(target=switcher, daemon=True)
    thread.start()
    outcomes = run_clients(url, lists)
    done.set()
    thread.join(REQUEST_TIMEOUT + 10)
    if switches and switches[-1].target != served and not switches[-1].error:
        switches.append(switch(served))  # leave the served model active

    def allowed(outcome: Outcome) -> list[dict[str, str]]:
        """The references of every model that may have been active at some moment of the request."""
        states = [served] + [s.target for s in switches]  # states[k] is active from switch k's start ...
        begins = [float("-inf")] + [s.start for s in switches]
        ends = [s.end for s in switches] + [float("inf")]  # ... until switch k+1's end at the latest
        return [refs[name] for name, b, e in zip(states, begins, ends) if outcome.start <= e and b <= outcome.end]

    comparison = compare(outcomes, allowed)
    ok = [s for s in switches if not s.error]
    return {"clients": len(lists), "requests_per_client": args.switch_requests, "switches": len(switches),
            "switch_failed": [s.error for s in switches if s.error][:5],
            "switch_s_max": round(max((s.end - s.start for s in ok), default=0.0), 1),
            "kinds": latency_rows(outcomes), "failed": sum(bool(o.error) for o in outcomes),
            "errors": sorted({o.error for o in outcomes if o.error})[:10], "comparison": asdict(comparison)}


# ---- the whole test ----------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> dict:
    """The whole test; a dict of results (see `report`)."""
    from core.checkpoint import DEFAULT_CHECKPOINT

    with tempfile.TemporaryDirectory(prefix="load_test_") as tmp:
        work = Path(tmp)
        checkpoints = work / "checkpoints"
        checkpoints.mkdir()
        model, words = (tiny_checkpoints(work, checkpoints) if args.tiny
                        else (linked_checkpoint(args.model or DEFAULT_CHECKPOINT, checkpoints), None))
        dictionary = write_dictionary(work / "dictionary.tsv", args.job_words, args.seed, words)
        with running_app(model, work, args) as (url, process):
            result = measure(url, process, dictionary, checkpoints, model.name, args)
    result.update({"clients": args.clients, "requests_per_client": args.requests, "app_threads": args.threads,
                   "model": "tiny" if args.tiny else str(model.resolve()), "distinct_per_kind": args.distinct,
                   "job_steps": args.job_steps})
    return result


def measure(url: str, process: subprocess.Popen, dictionary: Path, checkpoints: Path, served: str,
            args: argparse.Namespace) -> dict:
    """Once the app answers: the phases in order."""
    marks = [("start", time.perf_counter())]
    client = first_answer(url, process)
    marks.append(("app answers", time.perf_counter()))
    waited = 0.0 if args.single_token_words else wait_for_open_vocabulary(client)
    pool = request_pool(args.distinct, args.seed)
    warm_up(client, pool)
    marks.append(("open vocabulary and warm-up", time.perf_counter()))
    memory = None
    if args.memory_requests > 0 or args.memory_uploads > 0:
        memory = memory_phase(url, pool, dictionary, process.pid, args)
        marks.append(("memory", time.perf_counter()))
    result = concurrent_phase(client, url, pool, dictionary, checkpoints, args)
    marks.append(("references, load and job", time.perf_counter()))
    result["open_vocab_wait_s"] = round(waited, 1)
    result["memory"] = memory
    refs = result.pop("_refs")
    result["hostile"] = hostile_phase(client, url, pool, refs, args) if args.hostile_seconds > 0 else None
    marks.append(("hostile", time.perf_counter()))
    result["switching"] = None
    if args.switches > 0 and args.clients > 1:
        result["switching"] = switching_phase(client, url, pool, served, args.switch_to, args)
    marks.append(("switching", time.perf_counter()))
    result["phase_seconds"] = {name: round(t - marks[i][1], 1) for i, (name, t) in enumerate(marks[1:])}
    return result


def report(result: dict) -> str:
    """The results as Markdown."""
    lines = ["| request | count | failed | p50 ms | p95 ms | p99 ms | max ms |", "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['kind']} | {r['count']} | {r['failed']} | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} | "
              f"{r['p99_ms']:.0f} | {r['max_ms']:.0f} |" for r in result["kinds"]]
    total = sum(r["count"] for r in result["kinds"])
    comparison = result["comparison"]
    rd = next(r for r in result["kinds"] if r["kind"] == RD)
    lines.append(f"\n{result['model']}: {result['clients']} clients x {result['requests_per_client']} requests in "
                 f"{result['load_seconds']} s ({total / max(result['load_seconds'], 1e-9):.1f} requests/s), drawn "
                 f"from {result['references']} distinct requests answered alone first "
                 f"({result['reference_seconds']} s; open vocabulary waited {result['open_vocab_wait_s']} s)")
    lines.append(f"errors: {result['failed']} (and {len(result['reference_failed'])} failed references)")
    lines += [f"  {error}" for error in result["errors"] + result["reference_failed"]]
    lines += _comparison_lines(comparison)
    met = "met" if rd["p99_ms"] <= 1000 * P99_TARGET_S else "MISSED"
    lines.append(f"reverse dictionary latency: p50 {rd['p50_ms']:.0f} ms, p95 {rd['p95_ms']:.0f} ms, "
                 f"p99 {rd['p99_ms']:.0f} ms (target p99 <= {1000 * P99_TARGET_S:.0f} ms: {met})")
    job = result["job"]
    lines.append(f"fine-tuning job ({result['job_steps']} steps): running when the load started: "
                 f"{_yes(job['running_at_load_start'])}, when it ended: {_yes(job['running_at_load_end'])}; "
                 f"finished: {_yes(job['finished'])} ({job['seconds']:.0f} s); checkpoint saved through the API "
                 f"loads with Engine.load: {_yes(job['checkpoint_loads'])}")
    lines += [f"  {job['error']}"] if job["error"] else []
    lines += _memory_lines(result.get("memory"))
    lines += _hostile_lines(result.get("hostile"))
    lines += _switching_lines(result.get("switching"))
    lines.append("\nseconds per phase: " + ", ".join(f"{name} {seconds}" for name, seconds
                                                      in result.get("phase_seconds", {}).items()))
    return "\n".join(lines)


def _comparison_lines(comparison: dict) -> list[str]:
    lines = [f"differing answers: {comparison['differing']} of {comparison['compared']} compared with the same "
             f"request answered alone" + (f" ({comparison['no_reference']} without a reference)"
                                          if comparison["no_reference"] else "")]
    return lines + [f"  {example}" for example in comparison["examples"]]


def _memory_lines(memory: dict | None) -> list[str]:
    if not memory:
        return ["memory phase: skipped"]
    met = "met" if memory["growth_mb"] <= MEMORY_TARGET_MB else "MISSED"
    lines = [f"\nmemory phase: {memory['requests']} mixed requests and {memory['uploads']} uploads of "
             f"{memory['upload_bytes'] / 1e6:.1f} MB (one new session each) in {memory['seconds']:.0f} s; "
             f"the app's resident memory warm {memory['warm_mb']:.0f} MB, peak "
             f"{memory['peak_mb']:.0f} MB, after {memory['after_mb']:.0f} MB: {memory['growth_mb']:+.0f} MB "
             f"(target <= +{MEMORY_TARGET_MB:.0f} MB: {met}); failed requests {memory['failed']}, failed uploads "
             f"{len(memory['uploads_failed'])}"]
    lines += [f"  {error}" for error in memory["errors"] + memory["uploads_failed"]]
    return lines + [f"  {r['kind']}: p50 {r['p50_ms']:.0f} ms, p99 {r['p99_ms']:.0f} ms" for r in memory["kinds"]]


def _hostile_lines(hostile: dict | None) -> list[str]:
    if not hostile:
        return ["hostile phase: skipped"]
    lines = [f"\nhostile phase: {hostile['clients']} clients sending hostile requests for {hostile['seconds']:.0f} s "
             f"while a probe times /reverse_dictionary and GET /gradio_api/info"]
    for name, label in (("rd", "/reverse_dictionary"), ("info", "/gradio_api/info")):
        a, h = hostile[f"{name}_alone"], hostile[f"{name}_hostile"]
        if not (a.get("n") and h.get("n")):
            lines.append(f"  {label}: no measurement ({a.get('n', 0)} alone, {h.get('n', 0)} under attack)")
            continue
        worst = hostile[f"{name}_added_max_ms"]
        met = "met" if worst <= 1000 * HOSTILE_TARGET_S else "MISSED"
        lines.append(f"  {label}: alone p50 {a['p50_ms']:.0f} ms (max {a['max_ms']:.0f}, n={a['n']}); under attack "
                     f"p50 {h['p50_ms']:.0f} / p95 {h['p95_ms']:.0f} / max {h['max_ms']:.0f} ms (n={h['n']}); "
                     f"added delay p50 {hostile[f'{name}_added_p50_ms']:.0f} ms, worst {worst:.0f} ms "
                     f"(target <= {1000 * HOSTILE_TARGET_S:.0f} ms: {met})")
    lines.append(f"  probe failures: {hostile['probe_failed']}; probe answers differing from the reference: "
                 f"{hostile['comparison']['differing']} of {hostile['comparison']['compared']}")
    lines += [f"    {example}" for example in hostile["comparison"]["examples"]]
    for name, row in hostile["hostile_requests"].items():
        refused = f", refused {row['refused']} ({row['error']})" if row["refused"] else ""
        lines.append(f"  hostile {name}: sent {row['sent']}, slowest {row['max_ms']:.0f} ms{refused}")
    return lines


def _switching_lines(switching: dict | None) -> list[str]:
    if not switching:
        return ["model switching phase: skipped"]
    if "error" in switching:
        return [f"model switching phase: {switching['error']}"]
    lines = [f"\nmodel switching phase: {switching['clients']} clients x {switching['requests_per_client']} requests "
             f"while another client made {switching['switches']} switches (slowest {switching['switch_s_max']} s); "
             f"errors: {switching['failed']}, failed switches: {len(switching['switch_failed'])}"]
    lines += [f"  {error}" for error in switching["errors"] + switching["switch_failed"]]
    lines += ["  " + line for line in _comparison_lines(switching["comparison"])]
    lines += [f"  {r['kind']}: p50 {r['p50_ms']:.0f} ms, p99 {r['p99_ms']:.0f} ms" for r in switching["kinds"]]
    return lines


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def passed(result: dict) -> bool:
    """0 failed requests, 0 differing answers (in every phase), and the job finished with a loadable
    checkpoint. Latency targets are printed, not judged here."""
    phases = [result] + [p for p in (result.get("hostile"), result.get("switching")) if p]
    return (result["failed"] == 0 and not result["reference_failed"] and result["job"]["finished"]
            and result["job"]["checkpoint_loads"]
            and all("error" not in p and p["comparison"]["differing"] == 0 and not p["comparison"]["no_reference"]
                    for p in phases)
            and all(p.get("failed", 0) == 0 and not p.get("switch_failed") for p in phases[1:])
            and (not result.get("hostile") or result["hostile"]["probe_failed"] == 0)
            and (not result.get("memory")
                 or (result["memory"]["failed"] == 0 and not result["memory"]["uploads_failed"])))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    torch.set_num_threads(1)  # this process only loads the saved checkpoint at the end
    result = run(args)
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0 if passed(result) else 1


if __name__ == "__main__":
    sys.exit(main())
