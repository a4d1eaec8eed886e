"""Cold start of the command line (issue 62): one reverse-dictionary query in a fresh process, against the
time of `python -c "import torch"` on the same machine at the same moment. Prints a Markdown table.

    python -m bench.bench_cold_start --rounds 5
    python -m bench.bench_cold_start --rounds 5 --command "python -m core --help"

Each round runs the two commands one after the other, in alternating order (the machine is shared: a busy
moment then slows both), each a new process; the medians and their ratio are printed, with the load average
before and after (on a shared machine, say it with the numbers). One untimed query first fills the user cache
as any first use does once: WordNet's candidate list as arrays (core/words/candidate_cache.py) and the exact
vectors of the query's first candidates (core/words/exact_rescoring.py). What is timed is a query of a process
started afresh, as a person who looks up one word from a terminal starts one: torch imported, the shipped
model's encoder built (its tokenizer read without transformers: core/tokenizer.py), the open vocabulary's
compact vectors decoded, one forward pass and the scoring of 147k candidates.

A profile of one such query: `python -m cProfile -s cumulative -m core "a person who is in charge"`.
"""
from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUERY = [sys.executable, "-m", "core", "a person who is in charge"]
TORCH = [sys.executable, "-c", "import torch"]


def seconds(command: list[str]) -> float:
    """Wall seconds of `command` run to its end from the repository root; RuntimeError if it fails."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{shlex.join(command)} failed: {done.stderr.strip().splitlines()[-1:]}")
    return time.perf_counter() - start


def rounds(commands: dict[str, list[str]], count: int) -> dict[str, list[float]]:
    """`count` timings of each command, the order alternating from round to round."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for i in range(count):
        for name in names if i % 2 == 0 else names[::-1]:
            times[name].append(seconds(commands[name]))
    return times


def load_average() -> float:
    """The last minute's load average (NaN where the system has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--command", default=None, help="another command to time instead of the query")
    args = parser.parse_args()
    if not 1 <= args.rounds <= 50:
        parser.error("--rounds must be from 1 to 50")
    query = shlex.split(args.command) if args.command else QUERY
    seconds(query)  # fills the user cache once, untimed
    before = load_average()
    times = rounds({"query": query, "torch": TORCH}, args.rounds)
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"{os.cpu_count()} CPUs, load average {before:.1f} at the start and {load_average():.1f} at the end; "
          f"{args.rounds} rounds\n")
    print("| command | median s | all s |\n|---|---:|---|")
    for name, command in (("query", query), ("torch", TORCH)):
        print(f"| `{shlex.join(command).replace(sys.executable, 'python')}` | {median[name]:.2f} | "
              f"{', '.join(f'{t:.2f}' for t in times[name])} |")
    print(f"\nratio: {median['query'] / median['torch']:.2f}x the import of torch")


if __name__ == "__main__":
    main()
