"""Load test of the web app: `python app.py` on a free local port, a fine-tuning job started through its
API, then concurrent gradio_client clients sending mixed requests (reverse dictionary, similarity,
analogy with decoding, a map of a few sentences) while the job runs. Prints, per request kind, the
count, failures and p50/p95 latency, then whether the job finished and whether its checkpoint, saved
through the API, loads with `Engine.load`. Exits with 1 on any failed request or job problem.

    python bench/load_test.py                                   # 8 clients x 200 requests, shipped model
    python bench/load_test.py --tiny --clients 4 --requests 25  # the CI form: a tiny random model
    python bench/load_test.py --json load.json                  # also write the numbers as JSON

Before the timed part one request of each kind is sent (not counted), so the reference sentences are
embedded. The app runs with --no-umap-warmup (maps use PCA), and talks only to 127.0.0.1.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.bench_app import first_answer, free_port

REQUEST_TIMEOUT = 300.0  # seconds; a request with no answer by then is counted as failed (a hang)
JOB_TIMEOUT = 1800.0
CHECKPOINT_NAME = "load-test"
DESCRIPTIONS = ["a person who is in charge", "a place where books are kept", "a large grey animal with a trunk",
                "to move quickly on foot", "feeling or showing pleasure", "a building where people live",
                "the man who rules the country", "a drink made of grapes", "a small animal that people keep"]
SENTENCES = ["The man is walking.", "The woman is walking.", "The man is running.", "A cat sits on the mat.",
             "A dog lies on the rug.", "The stock market fell sharply.", "Shares dropped today.",
             "A man is playing a guitar.", "Someone plays an instrument.", "The weather is cold and wet.",
             "I love sunny summer days.", "The king rules the city.", "Children read books at school.",
             "The river runs to the sea.", "She bakes bread every morning.", "The doctor treats the sick."]
MAP_POINTS = 12
Request = tuple[str, list]  # (api name, arguments)


def reverse_dictionary(rng: random.Random) -> Request:
    return "/reverse_dictionary", [rng.choice(DESCRIPTIONS), 10, "any", 0, 0, "", "", False, False]


def similarity(rng: random.Random) -> Request:
    return "/similarity", rng.sample(SENTENCES, 2)


def analogy(rng: random.Random) -> Request:
    return "/analogy", [*rng.sample(SENTENCES, 3), "b - a + c"]


def small_map(rng: random.Random) -> Request:
    sentences = "\n".join(rng.sample(SENTENCES, MAP_POINTS))
    return "/draw_map", ["my sentences", 500, sentences, None, "PCA", "2-D", "part of speech"]


KINDS: dict[str, Callable[[random.Random], Request]] = {
    "reverse dictionary": reverse_dictionary, "similarity": similarity, "analogy (decode)": analogy,
    f"map of {MAP_POINTS} sentences": small_map}


@dataclass(frozen=True)
class Outcome:
    """One timed request; `error` is empty when it succeeded."""
    kind: str
    seconds: float
    error: str = ""


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


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8, help="concurrent gradio_client clients (default 8)")
    parser.add_argument("--requests", type=int, default=200, help="requests per client (default 200)")
    parser.add_argument("--tiny", action="store_true", help="serve a tiny random model built here (CI form)")
    parser.add_argument("--model", type=Path, default=None, help="checkpoint to serve (default: the app's default)")
    parser.add_argument("--threads", type=int, default=1, help="the app's torch threads (default 1)")
    parser.add_argument("--job-words", type=int, default=60, help="words in the fine-tuning dictionary (default 60)")
    parser.add_argument("--job-steps", type=int, default=0,
                        help="training steps of the job (default: 50 on --tiny, else 150)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def tiny_checkpoint(work: Path) -> tuple[Path, set[str]]:
    """A checkpoint of a tiny random BERT (as the tests build it) and the words its head can predict."""
    from core import Engine
    from tests.conftest import TINY_WORDS, build_tiny_bert

    engine = Engine.from_base(str(build_tiny_bert(work / "tiny-base")))
    return engine.save(work / "tiny", name="tiny"), set(TINY_WORDS)


def write_dictionary(path: Path, n_words: int, seed: int, words: set[str] | None = None) -> Path:
    """A TSV dictionary (word, definition, pos) of every WordNet definition of `n_words` sampled words
    (from `words` if given; all of them if there are fewer)."""
    from core.dictionary import load_wordnet

    entries = [e for e in load_wordnet() if words is None or e.word in words]
    candidates = sorted({e.word for e in entries})
    chosen = set(random.Random(seed).sample(candidates, min(n_words, len(candidates))))
    rows = [f"{e.word}\t{e.definition}\t{e.pos}\n" for e in entries if e.word in chosen]
    path.write_text("word\tdefinition\tpos\n" + "".join(rows), encoding="utf-8")
    return path


def launch_app(model: Path | None, port: int, work: Path, threads: int, log: Path) -> subprocess.Popen:
    """`python app.py` on 127.0.0.1:port, saving checkpoints into work/checkpoints."""
    command = [sys.executable, "app.py", "--port", str(port), "--threads", str(threads), "--no-umap-warmup",
               "--warm-up-delay", "0", "--checkpoints", str(work / "checkpoints")]
    command += ["--model", str(model)] if model else []
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)


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
        engine = Engine.load(checkpoints / CHECKPOINT_NAME)
        job.checkpoint_loads = bool(engine.predict_words(DESCRIPTIONS[0], k=3))
    except Exception as err:  # reported as the job's problem, whatever it is
        job.error = f"{type(err).__name__}: {err}"
    return job


def client_requests(url: str, n: int, seed: int) -> list[Outcome]:
    """One client's `n` requests, the kinds in equal shares in a shuffled order, one at a time."""
    from gradio_client import Client

    client = Client(url, verbose=False, download_files=False, httpx_kwargs={"timeout": REQUEST_TIMEOUT})
    rng = random.Random(seed)
    kinds = [list(KINDS)[i % len(KINDS)] for i in range(n)]
    rng.shuffle(kinds)
    return [timed_request(client, kind, rng) for kind in kinds]


def timed_request(client, kind: str, rng: random.Random) -> Outcome:
    api_name, args = KINDS[kind](rng)
    start = time.perf_counter()
    try:
        client.submit(*args, api_name=api_name).result(timeout=REQUEST_TIMEOUT)
    except Exception as err:  # every failure counts, whatever it is
        return Outcome(kind, time.perf_counter() - start, f"{type(err).__name__}: {err}")
    return Outcome(kind, time.perf_counter() - start)


def run_load(url: str, clients: int, requests: int, seed: int) -> list[Outcome]:
    with ThreadPoolExecutor(clients) as pool:
        per_client = pool.map(lambda i: client_requests(url, requests, seed * 1000 + i), range(clients))
        return [outcome for outcomes in per_client for outcome in outcomes]


def kind_rows(outcomes: list[Outcome]) -> list[dict]:
    """Per request kind: count, failures, p50 and p95 latency (ms) of the successful requests."""
    rows = []
    for kind in KINDS:
        mine = [o for o in outcomes if o.kind == kind]
        ms = [1000 * o.seconds for o in mine if not o.error]
        p50, p95 = np.percentile(ms, [50, 95]) if ms else (float("nan"), float("nan"))
        rows.append({"kind": kind, "count": len(mine), "failed": sum(bool(o.error) for o in mine),
                     "p50_ms": round(float(p50), 1), "p95_ms": round(float(p95), 1)})
    return rows


def run(args: argparse.Namespace) -> dict:
    """The whole test; a dict of results (see `report`)."""
    with tempfile.TemporaryDirectory(prefix="load_test_") as tmp:
        work = Path(tmp)
        model, words = tiny_checkpoint(work) if args.tiny else (args.model, None)
        dictionary = write_dictionary(work / "dictionary.tsv", args.job_words, args.seed, words)
        port, log = free_port(), work / "app.log"
        process = launch_app(model, port, work, args.threads, log)
        try:
            outcomes, load_seconds, job = measure(f"http://127.0.0.1:{port}/", process, dictionary,
                                                  work / "checkpoints", args)
        except BaseException:
            print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
            raise
        finally:
            process.terminate()
            process.wait(timeout=60)
    return {"clients": args.clients, "requests_per_client": args.requests, "app_threads": args.threads,
            "model": "tiny" if args.tiny else str(args.model or "default"), "load_seconds": round(load_seconds, 1),
            "kinds": kind_rows(outcomes), "failed": sum(bool(o.error) for o in outcomes),
            "errors": sorted({o.error for o in outcomes if o.error})[:10], "job_steps": job_steps(args),
            "job": asdict(job)}


def job_steps(args: argparse.Namespace) -> int:
    return args.job_steps or (50 if args.tiny else 150)


def measure(url: str, process: subprocess.Popen, dictionary: Path, checkpoints: Path, args: argparse.Namespace
            ) -> tuple[list[Outcome], float, JobReport]:
    """Once the app answers: warm up, start the job, run the load, wait for the job and check it."""
    client = first_answer(url, process)
    warm_up(client, args.seed)
    job_started = time.perf_counter()
    job = JobReport(start_job(client, dictionary, job_steps(args), args.seed))
    job.running_at_load_start = job_active(client, job.id)
    load_started = time.perf_counter()
    outcomes = run_load(url, args.clients, args.requests, args.seed)
    load_seconds = time.perf_counter() - load_started
    job.running_at_load_end = job_active(client, job.id)
    return outcomes, load_seconds, finish_job(client, job, job_started, checkpoints)


def warm_up(client, seed: int) -> None:
    """One request of each kind, not timed (the first analogy embeds the reference sentences)."""
    rng = random.Random(seed)
    for make in KINDS.values():
        api_name, args = make(rng)
        client.predict(*args, api_name=api_name)


def report(result: dict) -> str:
    """The results as Markdown."""
    lines = ["| request | count | failed | p50 ms | p95 ms |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['kind']} | {r['count']} | {r['failed']} | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} |"
              for r in result["kinds"]]
    job = result["job"]
    total = sum(r["count"] for r in result["kinds"])
    lines.append(f"\n{result['clients']} clients x {result['requests_per_client']} requests in "
                 f"{result['load_seconds']} s ({total / result['load_seconds']:.1f} requests/s); "
                 f"failed requests: {result['failed']}")
    lines += [f"  {error}" for error in result["errors"]]
    lines.append(f"fine-tuning job ({result['job_steps']} steps): running when the load started: "
                 f"{_yes(job['running_at_load_start'])}, when it ended: {_yes(job['running_at_load_end'])}; "
                 f"finished: {_yes(job['finished'])} ({job['seconds']:.0f} s); checkpoint saved through the API "
                 f"loads with Engine.load: {_yes(job['checkpoint_loads'])}")
    lines += [f"  {job['error']}"] if job["error"] else []
    return "\n".join(lines)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def passed(result: dict) -> bool:
    """0 failed requests, and the job finished with a loadable checkpoint."""
    return result["failed"] == 0 and result["job"]["finished"] and result["job"]["checkpoint_loads"]


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
