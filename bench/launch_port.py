"""How soon a launched app's port answers (issue 61): `python app.py` started beside `--busy` busy loops (each a
process spinning on a core), the port asked every 0.05 s; seconds until it answers at all (the starting page's
503) and until it serves the app's page (200), for each of `--launches` launches.

    python -m bench.launch_port                          # 2 busy loops, 3 launches, --single-token-words
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.bench_app import free_port, launch

BUSY_LOOP = "while True: pass"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--busy", type=int, default=2, help="busy loops beside the app (0-16)")
    parser.add_argument("--launches", type=int, default=3, help="launches to time (1-20)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a launch may take to serve its page")
    args = parser.parse_args(argv)
    if not 0 <= args.busy <= 16 or not 1 <= args.launches <= 20 or args.timeout <= 0:
        parser.error("0-16 busy loops, 1-20 launches, a positive timeout")
    return args


def time_launch(timeout: float) -> tuple[float, float]:
    """(seconds until the port answered, seconds until it served the app's page) of one launch."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        process, started = launch(None, port, Path(tmp) / "app.log", flags=["--single-token-words",
                                                                            "--no-umap-warmup"])
        first = None
        try:
            while time.perf_counter() - started < timeout:
                try:
                    status = httpx.get(f"http://127.0.0.1:{port}/", timeout=5).status_code
                except httpx.HTTPError:
                    status = None
                now = time.perf_counter() - started
                first = first if first is not None or status is None else now
                if status == 200:
                    return first, now
                time.sleep(0.05)
            raise SystemExit(f"the app did not serve its page within {timeout} s")
        finally:
            process.kill()
            process.wait()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    loops = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(args.busy)]
    try:
        times = [time_launch(args.timeout) for _ in range(args.launches)]
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    answered, served = [t[0] for t in times], [t[1] for t in times]
    print(f"{args.launches} launches beside {args.busy} busy loops: the port answered after "
          f"{', '.join(f'{t:.1f}' for t in answered)} s (median {statistics.median(answered):.1f}); the app's page "
          f"after {', '.join(f'{t:.1f}' for t in served)} s (median {statistics.median(served):.1f}).")
    print(f"- the port answers within 10 s: {'met' if max(answered) <= 10 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
