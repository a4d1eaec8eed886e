"""A fine-tune through the app with the Fine-tune tab's default settings: Start -> done, and the reverse
dictionary's latency meanwhile (issue 42's "200-entry fine-tune in 60 s").

    python bench/bench_finetune.py                 # first: writes the glossary to data/cache/finetune-bench.jsonl.gz
    python bench/bench_finetune_app.py             # the app's training threads (every usable core, niced)
    DEFSENT_TRAINING_THREADS=1 python bench/bench_finetune_app.py

The server side answers with one torch thread, as `python app.py` does by default; a request is sent
every half second while the job runs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

QUERY = "a person who is in charge"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--glossary", type=Path, default=Path("data/cache/finetune-bench.jsonl.gz"))
    args = parser.parse_args(argv)
    os.environ["DEFSENT_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-finetune-app-")  # staging off the user cache
    from app.settings import limit_threads
    limit_threads(1)
    from app.shared.finetune import FinetuneSettings, training_threads
    from app.handlers import Session, Studio
    from app.shared.models import Models, ModelSpec
    from core.checkpoint import DEFAULT_CHECKPOINT
    from core.lexicon.dictionary import load_wordnet

    entries = load_wordnet(args.glossary)
    spec = ModelSpec(DEFAULT_CHECKPOINT.name, DEFAULT_CHECKPOINT)
    studio = Studio(Models.from_engine(spec.load(), spec, DEFAULT_CHECKPOINT.parent))
    upload = Path(tempfile.mkdtemp(prefix="bench-finetune-app-")) / "glossary.tsv"
    upload.write_text("word\tdefinition\n" + "".join(f"{e.word}\t{e.definition}\n" for e in entries), encoding="utf-8")
    _, session = studio.finetune.validate_upload(str(upload), 0, Session())
    s = FinetuneSettings()
    started = time.perf_counter()
    job = studio.jobs.get(studio.finetune.start_finetune(session, s.epochs, s.lr, s.batch_size, s.trainable_layers,
                                                s.max_steps, s.evaluations, s.seed))
    latencies = []
    while job.status in ("queued", "running"):
        sent = time.perf_counter()
        studio.reverse.reverse_dictionary(QUERY, 10)
        latencies.append(1000 * (time.perf_counter() - sent))
        time.sleep(0.5)
    print(f"{len(entries)} rows, {training_threads(public=False)} training thread(s): Start -> {job.status} in "
          f"{time.perf_counter() - started:.1f} s {job.error or ''}")
    print(f"reverse dictionary meanwhile: median {statistics.median(latencies):.0f} ms, max {max(latencies):.0f} ms "
          f"({len(latencies)} requests; the first one builds the int8 scoring)")
    return 0 if job.status == "done" else 1


if __name__ == "__main__":  # required: the training process is spawned and re-imports this module
    sys.exit(main())
