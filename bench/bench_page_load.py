"""Benchmark of page loads and of the app's start (issue 54, items 0, 1 and 3). Prints Markdown tables.

    python -m bench.bench_page_load --loads 50          # page loads with the model loaded: latency, memory
    python -m bench.bench_page_load --loads 50 --app-flags "--single-token-words --no-umap-warmup"  # alone
    python -m bench.bench_page_load --launches 20 --busy 2 --skip-loads   # starts under load, asked early
    python -m bench.bench_page_load --loads 10 --fresh --settle 240  # while the exact vectors embed beside them

Page loads: the app is launched (the shipped model), asked a reverse-dictionary query so the model is
loaded, then `GET /` and `GET /config` are asked `--loads` times each, one after the other; it prints the
latency of each path and the app's resident memory before, after and at its peak (Linux /proc).

Launches: each launch has an empty user cache (a fresh clone's: the open vocabulary starts embedding in the
background) and is asked for `/` every 0.2 s from the moment its port opens, for `--watch` seconds, while
`--busy` processes spin on the CPU beside it; a launch whose process exits counts as a death.
"""
from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.bench_app import first_answer, free_port, launch


def resident_mb(pid: int) -> tuple[float, float]:
    """(resident, peak resident) memory of a process in MB (Linux /proc)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def page_load_rows(model: Path | None, loads: int, flags: list[str], fresh: bool = False, settle: float = 0
                   ) -> list[tuple[str, str]]:
    """Launch once (`flags`; with `fresh` an empty user cache, so that the open vocabulary's exact vectors
    are embedded in the background during the loads), wait for an answer and `settle` seconds more (for the
    app's background work to start), then time `loads` loads of / and of /config; the resident memory is
    read every tenth of the loads."""
    port = free_port()
    cache = Path(tempfile.mkdtemp(prefix="bench-page-load-")) if fresh else None
    process, _ = launch(model, port, Path("/tmp") / f"bench_page_load_{port}.log", cache, flags=flags)
    url = f"http://127.0.0.1:{port}"
    try:
        first_answer(url + "/", process)
        time.sleep(settle)
        memory = [resident_mb(process.pid)[0]]
        times: dict[str, list[float]] = {"/": [], "/config": []}
        for load in range(loads):
            if load and load % max(1, loads // 10) == 0:
                memory.append(resident_mb(process.pid)[0])
            for path, seconds in times.items():
                start = time.perf_counter()
                httpx.get(url + path, timeout=120).raise_for_status()
                seconds.append(time.perf_counter() - start)
        after, peak = resident_mb(process.pid)
        memory.append(after)
    finally:
        process.terminate()
        process.wait(timeout=30)
    beside = ", the exact vectors embedding beside them (empty cache)" if fresh else ""
    rows = [(f"GET {path}, {loads} loads with the model loaded{beside}",
             f"median {1000 * statistics.median(s):.0f} ms, max {1000 * max(s):.0f} ms") for path, s in times.items()]
    rows.append((f"resident memory over the {2 * loads} loads (peak since start)",
                 f"{' / '.join(f'{mb:,.0f}' for mb in memory)} MB ({peak:,.0f} MB)"))
    return rows


def spin(seconds: float) -> None:
    """Keep one core busy for `seconds` (the other work of a busy machine)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def launch_rows(model: Path | None, launches: int, busy: int, watch: float) -> list[tuple[str, str]]:
    """Launch `launches` times with an empty cache beside `busy` spinning processes, asking for / every 0.2 s."""
    deaths, first_pages = 0, []
    spinners = [multiprocessing.Process(target=spin, args=(launches * (watch + 60),), daemon=True) for _ in range(busy)]
    for spinner in spinners:
        spinner.start()
    try:
        for run in range(launches):
            port = free_port()
            process, started = launch(model, port, Path("/tmp") / f"bench_launch_{port}.log",
                                      Path(tempfile.mkdtemp(prefix="bench-launch-")))
            first_page, deadline = None, None
            try:
                while process.poll() is None and (deadline is None or time.perf_counter() < deadline):
                    try:
                        answered = httpx.get(f"http://127.0.0.1:{port}/", timeout=60).status_code == 200
                    except httpx.TransportError:  # not listening yet, or a page that took over 60 s
                        answered = False
                    if answered and first_page is None:
                        first_page = time.perf_counter() - started
                        deadline = time.perf_counter() + watch
                    time.sleep(0.2)
                died = process.poll() is not None
            finally:
                process.terminate()
                process.wait(timeout=30)
            deaths += died
            if first_page is not None:
                first_pages.append(first_page)
            print(f"launch {run + 1}/{launches}: {'DIED' if died else 'up'}, first page "
                  f"{first_page if first_page is None else round(first_page, 1)} s", file=sys.stderr, flush=True)
    finally:
        for spinner in spinners:
            spinner.terminate()
    return [(f"launches with an empty cache, / asked every 0.2 s, {busy} busy processes beside",
             f"{launches - deaths} of {launches} started, {deaths} died"),
            ("  first page after start", f"median {statistics.median(first_pages):.1f} s "
                                         f"({min(first_pages):.1f}-{max(first_pages):.1f} s)" if first_pages else "none")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=None, help="checkpoint to serve (default: the app's default)")
    parser.add_argument("--loads", type=int, default=50, help="page loads to time (each of / and /config; 1-1000)")
    parser.add_argument("--launches", type=int, default=0, help="launches to watch for deaths (0-100)")
    parser.add_argument("--busy", type=int, default=0, help="spinning processes beside each launch (0-16)")
    parser.add_argument("--watch", type=float, default=20, help="seconds each launch is asked for / after its first page")
    parser.add_argument("--skip-loads", action="store_true", help="only the launches")
    parser.add_argument("--settle", type=float, default=0, help="seconds to wait after the first answer (0-1800)")
    parser.add_argument("--fresh", action="store_true", help="page loads with an empty user cache: the exact "
                        "vectors are embedded in the background meanwhile (issue 54, 3)")
    parser.add_argument("--app-flags", default="", help="more flags for app.py when timing page loads, e.g. "
                        "'--single-token-words --no-umap-warmup' (no background work beside the loads)")
    args = parser.parse_args()
    if (not 1 <= args.loads <= 1000 or not 0 <= args.launches <= 100 or not 0 <= args.busy <= 16
            or not 0 <= args.settle <= 1800):
        parser.error("--loads 1-1000, --launches 0-100, --busy 0-16, --settle 0-1800")
    rows = [] if args.skip_loads else page_load_rows(args.model, args.loads, args.app_flags.split(), args.fresh, args.settle)
    if args.launches:
        rows += launch_rows(args.model, args.launches, args.busy, args.watch)
    print("| measurement | result |\n|---|---:|")
    print("\n".join(f"| {name} | {value} |" for name, value in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
