"""The app and the phases of the load test (bench/load_test.py, whose docstring describes them): the
app launched on a free local port (`running_app`) serving a tiny model or a linked checkpoint, the
fine-tuning job started and finished through the API, and the memory, concurrent, hostile and
model-switching phases, each returning its results as a dict. bench/cancel_test.py launches the app
with these too.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bench.bench_app import free_port
from bench.load_requests import (
    DESCRIPTIONS,
    RD,
    REQUEST_TIMEOUT,
    SENTENCES,
    Call,
    Outcome,
    client_calls,
    compare,
    latency_rows,
    new_client,
    references,
    run_clients,
    send,
)

REPO = Path(__file__).resolve().parents[1]
JOB_TIMEOUT = 1800.0
OPEN_VOCAB_TIMEOUT = 1800.0  # waiting for the open vocabulary (about 4 minutes on 2 cores, once per model)
CHECKPOINT_NAME = "load-test"
PENDING_NOTICE = "until the full vocabulary"  # app.handlers.reverse.OPEN_VOCABULARY_PENDING


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
    log is printed when the block fails, its tracebacks at the end; the app is stopped at the end."""
    port, log = free_port(), work / "app.log"
    process = launch_app(model, port, work, args, log)
    try:
        yield f"http://127.0.0.1:{port}/", process
    except BaseException:
        print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
        raise
    finally:
        print_tracebacks(log)
        process.terminate()
        process.wait(timeout=60)


def print_tracebacks(log: Path) -> None:
    """The server's tracebacks in `log`, on stderr: an answer "Something went wrong (X)" names only X."""
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    for start, line in enumerate(lines):
        if line.startswith("Traceback"):
            end = next((i for i in range(start + 1, len(lines)) if lines[i] and not lines[i][0].isspace()),
                       len(lines) - 1)
            print("server " + "\n".join(lines[max(0, start - 1):end + 1]), file=sys.stderr)


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
    mixed requests and uploads (see bench/load_test.py's docstring)."""
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
