"""A fine-tune through the app with the Fine-tune tab's default settings: Start -> done, and the reverse
dictionary's latency meanwhile (issue 42's "200-entry fine-tune in 60 s").

    python bench/bench_finetune.py                 # first: writes the glossary to data/cache/finetune-bench.jsonl.gz
    python bench/bench_finetune_app.py             # the app's training threads (every usable core, niced)
    DEFSENT_TRAINING_THREADS=1 python bench/bench_finetune_app.py
    python bench/bench_finetune_app.py --small-glossary 0 --entries 30 --as-app   # issue 76's 30-word glossary

--as-app starts the model as `python app.py` does (`start_studio`: loaded, then prepared in the background: on
an empty cache its exact vectors are embedded meanwhile, as a new user's first hour has it) and presses Start once
the model answers. --small-glossary SEED takes bench.bench_finetune_small's glossary of that seed instead.

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
    parser.add_argument("--small-glossary", type=int, metavar="SEED",
                        help="bench.bench_finetune_small's glossary of this seed instead of --glossary")
    parser.add_argument("--entries", type=int, default=0, help="only the first N entries (0: all)")
    parser.add_argument("--as-app", action="store_true", help="start and prepare the model as `python app.py` does")
    parser.add_argument("--query-every", type=float, default=0.5,
                        help="seconds between reverse-dictionary requests while the job runs (0: none)")
    args = parser.parse_args(argv)
    if not 0 <= args.entries <= 100_000 or not 0 <= (args.small_glossary or 0) <= 100:
        parser.error("--entries from 0 to 100,000, --small-glossary from 0 to 100")
    if not 0 <= args.query_every <= 60:
        parser.error("--query-every from 0 to 60 seconds")
    os.environ["DEFSENT_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-finetune-app-")  # staging off the user cache
    from app.settings import limit_threads
    limit_threads(1)
    from app.handlers import Session, Studio, start_studio
    from app.shared.finetune import FinetuneSettings, stage_summary, training_threads
    from app.shared.models import Models, ModelSpec
    from core.checkpoint import DEFAULT_CHECKPOINT

    entries = glossary_entries(args.glossary, args.small_glossary)[:args.entries or None]
    spec = ModelSpec(DEFAULT_CHECKPOINT.name, DEFAULT_CHECKPOINT)
    if args.as_app:
        studio = start_studio(spec, DEFAULT_CHECKPOINT.parent)
        studio.models.active()  # waits for the model; its preparation goes on in the background
    else:
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
        if args.query_every:
            sent = time.perf_counter()
            studio.reverse.reverse_dictionary(QUERY, 10)
            latencies.append(1000 * (time.perf_counter() - sent))
        time.sleep(args.query_every or 0.1)
    print(f"{len(entries)} rows, {training_threads(public=False)} training thread(s): Start -> {job.status} in "
          f"{time.perf_counter() - started:.1f} s {job.error or ''}")
    if job.status == "done":
        print(f"the job's report: {stage_summary(job.result.training['stage_seconds'])}")
    if latencies:
        print(f"reverse dictionary meanwhile: median {statistics.median(latencies):.0f} ms, max {max(latencies):.0f} "
              f"ms ({len(latencies)} requests; the first one builds the int8 scoring)")
    return 0 if job.status == "done" else 1


def glossary_entries(path: Path, small_glossary: int | None) -> list:
    """The glossary's entries: bench.bench_finetune_small's of seed `small_glossary`, else those in `path`."""
    from core.lexicon.dictionary import load_wordnet
    if small_glossary is None:
        return load_wordnet(path)
    from bench.bench_finetune_small import glossary
    from core.lexicon.dictionary import lemma_split
    return glossary(lemma_split().test, small_glossary)


if __name__ == "__main__":  # required: the training process is spawned and re-imports this module
    code = main()
    sys.stdout.flush()
    os._exit(code)  # --as-app's background preparation may still be inside torch: a normal exit aborts there
