"""Submit-and-cancel load test (issue 43): `python app.py` on a free local port, then clients that
submit slow requests and cancel them in a loop, as an attacker of a public Space would. Work that
outlived its cancelled request used to pile up in threads and slow every visitor. Phases:

1. **Alone**: the answer of each light request (reverse dictionary, similarity) and of each slow kind
   (refined analogy and interpolation, a map of 5,000 vocabulary words, a heatmap of 50 sentences,
   word-prediction evaluation on 1,000 definitions, the smoke evaluation), one at a time; the light requests' latency over `--probes` rounds; the app's
   resident memory (VmRSS) and thread count.
2. **Attack**: `--clients` clients send `--rounds` rounds in all: submit a slow request (the kinds in
   turn), wait until the app has queued it, then a random 0 to `--max-wait` seconds, cancel.
   Cancelling returns once the app has answered the cancel.
3. **After**: once every cancel is answered, the app's count of running handler work
   (/running_work) must be 0. Then the light requests' latency again (p99 within `--p99-ratio` x of
   alone), resident memory (within `--memory-mb` of alone), and one uncancelled request of every
   kind, light and slow: each answer must equal its answer alone.
4. **Early cancels** (issue 55): `--early-batches` batches of `--early-rounds` refined analogies, each
   submitted by one gradio_client and cancelled at once (before the client knows the event id, so the
   cancel carries event_id null), while a second session sends light requests: none of those may be
   refused, their p99 stays within `--early-p99-ratio` x of alone, and 10 s after each batch's last
   cancel (read once the light requests have stopped) no work runs.

    python bench/cancel_test.py                    # the shipped model, 4 clients, 100 rounds
    python bench/cancel_test.py --tiny --rounds 12  # the CI form: a tiny random model
    python bench/cancel_test.py --rounds 0 --early-batches 2 --early-rounds 60  # phase 4 only

The app runs with --single-token-words (no open vocabulary to wait for) and --no-umap-warmup (maps
use PCA: their seconds go to embedding, which a cancel stops between batches; UMAP's epochs are
checked too, tests/test_cancel.py), and talks only to 127.0.0.1.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from bench.bench_app import first_answer
from bench.load_phases import linked_checkpoint, rss_mb, running_app, tiny_checkpoints
from bench.load_requests import Call, new_client, send

LIGHT = [Call("reverse dictionary", "/reverse_dictionary", ("a person who is in charge", 10, "any", 0, 0, "", "",
                                                            True, False)),
         Call("similarity", "/similarity", ("A man is playing a guitar.", "Someone plays an instrument."))]
HEATMAP_LINES = "\n".join(f"Sentence number {i} is about {topic}." for i, topic in
                          enumerate(["cats", "stocks", "rain", "music", "bread"] * 10))  # 50 lines, the bound
# Every slow endpoint's costly form, one pool after another (decode, heavy, evaluate).
SLOW = [Call("refined analogy", "/analogy", ("The man is walking.", "The woman is walking.",
                                             "The king rules the city.", "b - a + c", True, "largest ready")),
        Call("map of 5,000 words", "/draw_map", ("vocabulary words", 5000, "", None, "PCA", "2-D",
                                                 "part of speech")),
        Call("evaluation", "/evaluate_words", (1000, True)),
        Call("refined interpolation", "/interpolate", ("The weather is cold and wet.", "I love sunny summer days.",
                                                       6, True, "largest ready")),
        Call("heatmap of 50 sentences", "/heatmap", (HEATMAP_LINES,)),
        Call("smoke evaluation", "/evaluate_smoke", (True,))]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=4, help="attacking clients (default 4)")
    parser.add_argument("--rounds", type=int, default=100, help="submit-and-cancel rounds in all (default 100)")
    parser.add_argument("--max-wait", type=float, default=1.0,
                        help="longest wait between a submit and its cancel, seconds (default 1.0)")
    parser.add_argument("--probes", type=int, default=40, help="light-request rounds timed alone and after")
    parser.add_argument("--tiny", action="store_true", help="serve a tiny random model built here (CI form)")
    parser.add_argument("--model", type=Path, default=None, help="checkpoint to serve (default: the shipped one)")
    parser.add_argument("--threads", type=int, default=1, help="the app's torch threads (default 1)")
    parser.add_argument("--p99-ratio", type=float, default=1.5, help="target: light p99 after / alone")
    parser.add_argument("--memory-mb", type=float, default=200.0, help="target: resident memory after - alone")
    parser.add_argument("--early-rounds", type=int, default=60, help="early cancels a batch (default 60)")
    parser.add_argument("--early-batches", type=int, default=2, help="batches of early cancels (default 2; 0: none)")
    parser.add_argument("--early-p99-ratio", type=float, default=2.0,
                        help="target: light p99 during the early cancels / alone")
    parser.add_argument("--attacker-nice", type=int, default=0, choices=range(0, 20), metavar="0-19",
                        help="run each early-cancel batch's attacking client in a process of its own at this nice "
                             "level (default 0: in the bench's process, competing with the server for its cores)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.single_token_words = True
    if args.clients < 1 or args.rounds < 0 or args.probes < 1 or args.max_wait < 0 or args.early_rounds < 1 \
            or args.early_batches < 0:
        parser.error("--clients, --probes and --early-rounds must be at least 1, --rounds, --early-batches and "
                     "--max-wait at least 0")
    return args


def threads_of(pid: int) -> int:
    """The process's thread count (Threads: of /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise RuntimeError(f"no thread count for process {pid}")


def latencies(client, probes: int) -> tuple[dict, list]:
    """The light requests sent `probes` times in turn: {p50_ms, p99_ms, n} and the outcomes."""
    outcomes = [send(client, call) for _ in range(probes) for call in LIGHT]
    ms = [o.seconds * 1000 for o in outcomes if not o.error]
    summary = {"n": len(ms), "failed": len(outcomes) - len(ms)}
    if ms:
        summary.update(p50_ms=round(float(np.percentile(ms, 50)), 1), p99_ms=round(float(np.percentile(ms, 99)), 1))
    return summary, outcomes


def attack(url: str, clients: int, rounds: int, max_wait: float, seed: int) -> dict:
    """`rounds` submit-and-cancel rounds over `clients` clients; counts of what the rounds met."""
    lock, seen = threading.Lock(), {"rounds": 0, "finished_before_cancel": 0, "cancel_s": []}

    def one(index: int) -> None:
        client, rng = new_client(url), random.Random(seed + index)
        for n in range(index, rounds, clients):
            job = client.submit(*SLOW[n % len(SLOW)].args, api_name=SLOW[n % len(SLOW)].api)
            joined(job)
            time.sleep(rng.uniform(0, max_wait))
            started = time.perf_counter()
            job.cancel()
            with lock:
                seen["rounds"] += 1
                seen["finished_before_cancel"] += job.done() and not job.cancelled()
                seen["cancel_s"].append(time.perf_counter() - started)

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(clients)))
    cancel_s = seen.pop("cancel_s") or [0.0]
    return {**seen, "cancel_answer_s_max": round(max(cancel_s), 2),
            "cancel_answer_s_median": round(float(np.median(cancel_s)), 3)}


def submit_and_cancel(url: str, rounds: int) -> float:
    """`rounds` refined analogies submitted by one new client, each cancelled at once; the seconds it took."""
    attacker, started = new_client(url), time.perf_counter()
    for _ in range(rounds):
        attacker.submit(*SLOW[0].args, api_name=SLOW[0].api).cancel()
    return time.perf_counter() - started


def attack_elsewhere(url: str, rounds: int, nice: int) -> float:
    """`submit_and_cancel` in a process of its own, at `nice` (0: in this one): an attacker on another machine
    does not take the server's cores, while one in the bench's process competes with it for the same two."""
    if nice == 0:
        return submit_and_cancel(url, rounds)
    # os._exit: the client's heartbeat thread would keep the process alive after its answer
    code = (f"import os; from bench.cancel_test import submit_and_cancel; "
            f"print(submit_and_cancel({url!r}, {rounds}), flush=True); os._exit(0)")
    done = subprocess.run(["nice", "-n", str(nice), sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=900)
    return float(done.stdout.split()[-1])


def early_cancels(url: str, rounds: int, attacker_nice: int = 0) -> dict:
    """One batch of phase 4: `rounds` refined analogies submitted by one client and each cancelled at once, while
    another session sends light requests until 10 s after the last cancel; then, once the light requests have
    stopped (a light request running then would be counted as work that ran on after its cancel: issue 55), the
    running work."""
    from bench.load_requests import Outcome

    prober, stop = new_client(url), threading.Event()
    probes: list[Outcome] = []

    def probe() -> None:
        while not stop.is_set():
            probes.extend(send(prober, call) for call in LIGHT)

    with ThreadPoolExecutor(1) as pool:
        probing = pool.submit(probe)
        cancelled_s = attack_elsewhere(url, rounds, attacker_nice)
        time.sleep(10.0)
        stop.set()
        probing.result()  # its last light request answered: its work is no longer counted
        running = prober.predict(api_name="/running_work")
    ms = [o.seconds * 1000 for o in probes if not o.error]
    return {"rounds": rounds, "cancels_s": round(cancelled_s, 1), "running_10s_after": running["total"],
            "running_by_handler": running["by_handler"],
            "light": len(probes), "light_refused": len(probes) - len(ms),
            "light_errors": sorted({o.error for o in probes if o.error})[:3],
            "light_p99_ms": round(float(np.percentile(ms, 99)), 1) if ms else None}


def joined(job, timeout: float = 60.0) -> None:
    """Wait until the app has queued the request (it has an event id to cancel): a cancel sent before
    that reaches no event, so the request would run as if never cancelled (the browser, too, can
    cancel only a request it has been told the id of)."""
    from gradio_client.utils import Status

    deadline = time.perf_counter() + timeout
    while job.status().code in (Status.STARTING, Status.JOINING_QUEUE) and time.perf_counter() < deadline:
        time.sleep(0.01)


def compare(references: dict[str, str], outcomes: list) -> dict:
    """Each answer against the same request's answer alone."""
    differing = [o.call.kind for o in outcomes if o.error or o.answer != references.get(o.call.key)]
    return {"compared": len(outcomes), "differing": len(differing), "kinds_differing": sorted(set(differing))}


def measure(url: str, process: subprocess.Popen, args: argparse.Namespace) -> dict:
    """Once the app answers: the three phases."""
    client, pid = first_answer(url, process), process.pid
    for call in LIGHT + SLOW:  # warm: the reference sentences, the evaluation's data
        send(client, call)
    alone = {o.call.key: o.answer for o in (send(client, call) for call in LIGHT + SLOW)}
    before, _ = latencies(client, args.probes)
    rss_before, threads_before = rss_mb(pid), threads_of(pid)
    started = time.perf_counter()
    rounds = attack(url, args.clients, args.rounds, args.max_wait, args.seed)
    attack_s = time.perf_counter() - started
    running = client.predict(api_name="/running_work")
    threads_cancelled = threads_of(pid)
    after, probes = latencies(client, args.probes)
    again = [send(client, call) for call in SLOW]
    early = [early_cancels(url, args.early_rounds, args.attacker_nice) for _ in range(args.early_batches)]
    return {"early": early, "alone": before, "after": after, "attack": {**rounds, "seconds": round(attack_s, 1)},
            "running_after_cancels": running, "threads": {"alone": threads_before, "after_cancels": threads_cancelled},
            "rss_mb": {"alone": round(rss_before), "after": round(rss_mb(pid))},
            "comparison": compare(alone, probes + again)}


def run(args: argparse.Namespace) -> dict:
    """The whole test; a dict of results (see `report`)."""
    from core.checkpoint import DEFAULT_CHECKPOINT

    with tempfile.TemporaryDirectory(prefix="cancel_test_") as tmp:
        work = Path(tmp)
        (work / "checkpoints").mkdir()
        model = (tiny_checkpoints(work, work / "checkpoints")[0] if args.tiny
                 else linked_checkpoint(args.model or DEFAULT_CHECKPOINT, work / "checkpoints"))
        with running_app(model, work, args) as (url, process):
            result = measure(url, process, args)
    result.update(model="tiny" if args.tiny else str(model.resolve()), clients=args.clients, rounds=args.rounds,
                  targets={"p99_ratio": args.p99_ratio, "memory_mb": args.memory_mb,
                           "early_p99_ratio": args.early_p99_ratio})
    return result


def verdicts(result: dict) -> dict[str, bool]:
    """Each target: met or not."""
    alone, after, early = result["alone"], result["after"], result["early"]
    early_p99 = result["targets"]["early_p99_ratio"] * alone["p99_ms"]
    return {"early cancels: no light request refused": all(not b["light_refused"] for b in early),
            "early cancels: light p99 within the ratio of alone": all(
                b["light_p99_ms"] is not None and b["light_p99_ms"] <= early_p99 for b in early),
            "early cancels: no work running 10 s after": all(not b["running_10s_after"] for b in early),
            "no work running once the cancels are answered": result["running_after_cancels"]["total"] == 0,
            "light p99 within the ratio of alone": (not after["failed"] and "p99_ms" in after and
                                                     after["p99_ms"] <= result["targets"]["p99_ratio"] * alone["p99_ms"]),
            "memory within the bound of alone": (result["rss_mb"]["after"] - result["rss_mb"]["alone"]
                                                 <= result["targets"]["memory_mb"]),
            "every uncancelled answer as alone": result["comparison"]["differing"] == 0}


def report(result: dict) -> str:
    """The results as Markdown."""
    alone, after, rounds = result["alone"], result["after"], result["attack"]
    lines = [f"Model: {result['model']}; {result['clients']} clients, {rounds['rounds']} submit-and-cancel rounds "
             f"in {rounds['seconds']} s ({rounds['finished_before_cancel']} finished before their cancel); "
             f"a cancel answered in {rounds['cancel_answer_s_median']} s (median), {rounds['cancel_answer_s_max']} s "
             "at most.", "",
             "| moment | light p50 / p99 (ms) | running work | threads | resident MB |", "|---|---|---|---|---|",
             f"| alone | {alone['p50_ms']} / {alone['p99_ms']} | 0 | {result['threads']['alone']} | "
             f"{result['rss_mb']['alone']} |",
             f"| after the cancels | {after.get('p50_ms')} / {after.get('p99_ms')} | "
             f"{result['running_after_cancels']['total']} | {result['threads']['after_cancels']} | "
             f"{result['rss_mb']['after']} |", "",
             f"Answers compared with alone: {result['comparison']['compared']}, differing "
             f"{result['comparison']['differing']} {result['comparison']['kinds_differing'] or ''}", ""]
    lines += [f"Early cancels, batch {i + 1}: {b['rounds']} refined analogies submitted and cancelled at once in "
              f"{b['cancels_s']} s; light requests meanwhile {b['light']}, refused {b['light_refused']} "
              f"{b['light_errors'] or ''}, p99 {b['light_p99_ms']} ms; work running 10 s after the last cancel: "
              f"{b['running_10s_after']} {b.get('running_by_handler') or ''}" for i, b in enumerate(result["early"])]
    lines += ["", *[f"- {name}: {'met' if ok else 'MISSED'}" for name, ok in verdicts(result).items()]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args)
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0 if all(verdicts(result).values()) else 1


if __name__ == "__main__":
    sys.exit(main())
