"""Fine-tune job timings: from Start to the first training step, request latency while a job trains,
and how soon a SIGKILLed training process is reported as a failed job.

    python bench/bench_faults.py [--model checkpoints/defsent-minilm] [--words 400] [--requests 10]

Uploads the first `--words` WordNet entries as the user's dictionary, kills the training process
after 6 steps and checks that the checkpoint folder is unchanged.
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from app.settings import limit_threads

QUERY = "a person who is in charge"


def wait_for_step(job, step: int) -> float:
    """Seconds until the job has reported `step` training steps (AssertionError if it fails first)."""
    started = time.perf_counter()
    while job.progress.get("step", 0) < step:
        assert job.status in ("queued", "running"), job.error
        time.sleep(0.01)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=None, help="checkpoint (default: the shipped one)")
    parser.add_argument("--words", type=int, default=400)
    parser.add_argument("--requests", type=int, default=10)
    args = parser.parse_args()
    os.environ["DEFSENT_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-faults-")  # staging off the user cache
    limit_threads(1)
    from app.handlers import Session, Studio
    from app.shared.models import Models, ModelSpec
    from core.checkpoint import DEFAULT_CHECKPOINT, list_checkpoints
    from core.lexicon.dictionary import load_wordnet

    path = args.model or DEFAULT_CHECKPOINT
    spec = ModelSpec(path.name, path)
    studio = Studio(Models.from_engine(spec.load(), spec, path.parent))
    before = list_checkpoints(path.parent)
    upload = Path(tempfile.mkdtemp(prefix="bench-faults-")) / "words.tsv"
    upload.write_text("word\tdefinition\n" + "".join(f"{e.word}\t{e.definition}\n"
                                                      for e in load_wordnet()[: args.words]), encoding="utf-8")
    _, session = studio.finetune.validate_upload(str(upload), 0, Session())
    job = studio.jobs.get(studio.finetune.start_finetune(session, 1, 5e-5, 16, 0, 100_000, 2, 0))
    first_step = wait_for_step(job, 1)
    five_steps = wait_for_step(job, 6)
    latencies = []
    for _ in range(args.requests):
        started = time.perf_counter()
        studio.reverse.reverse_dictionary(QUERY, 10)
        latencies.append(1000 * (time.perf_counter() - started))
    os.kill(job.pid, signal.SIGKILL)
    killed = time.perf_counter()
    while job.status == "running":
        time.sleep(0.005)
    print(f"Start -> first training step: {first_step:.1f} s; next 5 steps: {five_steps:.1f} s")
    print(f"reverse dictionary while training: median {statistics.median(latencies):.0f} ms, "
          f"max {max(latencies):.0f} ms ({args.requests} requests)")
    print(f"SIGKILL -> job {job.status} after {1000 * (time.perf_counter() - killed):.0f} ms: {job.error}")
    print(f"checkpoints unchanged: {list_checkpoints(path.parent) == before}; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":  # required: the training process is spawned and re-imports this module
    sys.exit(main())
