"""Benchmark of the web app: launch to first answered request, reverse-dictionary latency through
the HTTP API (gradio_client), and PCA / UMAP times for 1k, 5k and 10k points. Prints a Markdown table.

    nice -n 15 python bench/bench_app.py                       # default model, 30 requests
    python bench/bench_app.py --skip-projection --launches 9   # launch time: median and range of 9
    python bench/bench_app.py --skip-projection --fresh --requests 5   # a fresh clone's first launch
    python bench/bench_app.py --model checkpoints/NAME --requests 50 --settle 120

`--settle` waits after the first answer before measuring latency, so the app's background work
(embedding the reference sentences, warming UMAP up) is over. Projection times use real sentence
vectors: WordNet definitions embedded by the model (cached under the user cache dir after one run).
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parents[1]
QUERY = ["a person who is in charge", 10, "any", 0, 0, "", "", False, False]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(model: Path | None, port: int, log: Path, cache: Path | None = None, flags: Sequence[str] = ()
           ) -> tuple[subprocess.Popen, float]:
    """Start `python app.py` with `flags` (and `cache` as its user cache: an empty one is a fresh clone's);
    return the process and the moment it was started."""
    command = [sys.executable, "app.py", "--port", str(port), *flags] + (["--model", str(model)] if model else [])
    env = {**os.environ, **({"DEFSENT_CACHE_DIR": str(cache)} if cache else {})}
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)
    return process, started


def until_full_vocabulary(client, timeout: float = 1800) -> None:
    """Returns once the reverse dictionary answers without the notice that the full vocabulary is pending."""
    deadline = time.perf_counter() + timeout
    while "ds-notice" in client.predict(*QUERY, api_name="/reverse_dictionary")[0]:
        if time.perf_counter() > deadline:
            raise SystemExit(f"the full vocabulary was not ready within {timeout} s")
        time.sleep(0.5)


def first_answer(url: str, process: subprocess.Popen, timeout: float = 900):
    """A connected gradio_client once the app answers a reverse-dictionary request.

    The timeouts are hang guards only: a loaded machine can be several times slower than usual.
    """
    from gradio_client import Client

    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if process.poll() is not None:
            raise SystemExit("the app exited; see its log")
        try:
            client = Client(url, verbose=False, httpx_kwargs={"timeout": 120})
        except Exception:  # not listening yet
            time.sleep(0.1)
            continue
        client.predict(*QUERY, api_name="/reverse_dictionary")
        return client
    raise SystemExit(f"no answer within {timeout} s")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def latency_ms(client, n: int) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        client.predict(*QUERY, api_name="/reverse_dictionary")
        times.append(1000 * (time.perf_counter() - start))
    return times


def projection_rows(model: Path | None, sizes: list[int]) -> list[tuple[str, str]]:
    """Seconds for PCA and UMAP (first fit incl. import and JIT, then warm) on `sizes` definitions."""
    from app.settings import configure_numba_cache, limit_threads
    limit_threads(1)  # as app.py does by default
    from app.shared.models import ModelSpec, default_spec
    from app.views.projection import pca, umap_fit
    from app.shared.services import reference_corpus

    numba_dir = configure_numba_cache()
    cached = any(numba_dir.rglob("*.nbi"))
    spec = ModelSpec(model.name, model) if model else default_spec()
    vectors = reference_corpus(spec.load(), max(sizes)).vectors
    rows = []
    for n in sizes:
        rows.append((f"PCA, {n:,} points", f"{timed(pca, vectors[:n]):.3f} s"))
    first = timed(umap_fit, vectors[:sizes[0]])
    state = "warm" if cached else "cold"
    rows.append((f"UMAP import + first fit, {sizes[0]:,} points (numba cache {state})", f"{first:.1f} s"))
    for n in sizes:
        timed(umap_fit, vectors[:n])  # compile this size's code path
        rows.append((f"UMAP after warm-up, {n:,} points", f"{timed(umap_fit, vectors[:n]):.1f} s"))
    return rows


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def app_rows(model: Path | None, launches: int, requests: int, settle: float, fresh: bool = False
             ) -> list[tuple[str, str]]:
    """Launch the app `launches` times (first answer each time; with `fresh`, an empty user cache each time
    and the moment the full vocabulary answers too), then time requests on the last."""
    seconds, rows = [], []
    for run in range(launches):
        port = free_port()
        cache = Path(tempfile.mkdtemp(prefix="bench-app-")) if fresh else None
        process, started = launch(model, port, Path("/tmp") / f"bench_app_{port}.log", cache)
        try:
            client = first_answer(f"http://127.0.0.1:{port}/", process)
            seconds.append(time.perf_counter() - started)
            print(f"launch {run + 1}/{launches}: {seconds[-1]:.1f} s", file=sys.stderr, flush=True)
            if fresh:
                until_full_vocabulary(client)
                rows.append((f"fresh launch {run + 1} to the full vocabulary's first answer",
                             f"{time.perf_counter() - started:.1f} s"))
            if run < launches - 1:
                continue
            rows.append(("launch to first answered reverse-dictionary request",
                         f"median {statistics.median(seconds):.1f} s over {launches} "
                         f"({min(seconds):.1f}–{max(seconds):.1f} s)"))
            rows.append(("  CPU time the app used until then, last launch", f"{cpu_seconds(process.pid):.1f} s"))
            time.sleep(settle)
            times = latency_ms(client, requests)
            rows.append((f"reverse dictionary via gradio_client, median of {len(times)}",
                         f"{statistics.median(times):.0f} ms"))
            rows.append(("  same, 90th percentile", f"{statistics.quantiles(times, n=10)[-1]:.0f} ms"))
        finally:
            process.terminate()
            process.wait(timeout=30)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=None, help="checkpoint to serve (default: the app's default)")
    parser.add_argument("--requests", type=int, default=30, help="reverse-dictionary requests to time")
    parser.add_argument("--settle", type=float, default=0, help="seconds to wait before timing requests")
    parser.add_argument("--fresh", action="store_true",
                        help="each launch with an empty user cache (a fresh clone's), timed to the full vocabulary")
    parser.add_argument("--launches", type=int, default=1,
                        help="launch the app this many times; report the median and range of launch times")
    parser.add_argument("--skip-app", action="store_true", help="only the projection timings")
    parser.add_argument("--skip-projection", action="store_true", help="only the app timings")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000],
                        help="points to project (default: 1000 5000 10000)")
    args = parser.parse_args()
    if args.launches < 1:
        parser.error("--launches must be at least 1")
    if min(args.sizes) < 10:
        parser.error("--sizes: each projection needs at least 10 points")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows: list[tuple[str, str]] = []
    if not args.skip_app:
        rows += app_rows(args.model, args.launches, args.requests, args.settle, args.fresh)
    if not args.skip_projection:
        rows += projection_rows(args.model, sorted(args.sizes))
    print("| measurement | result |\n|---|---:|")
    print("\n".join(f"| {name} | {value} |" for name, value in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
