"""Time a Reverse dictionary query as the app answers it (`app.shared.services.reverse_dictionary`: the ranked
words and each one's senses ordered by fit), in process, without HTTP: ms a query over the first `--queries`
human descriptions, after one pass that warms the exact re-scoring's cache up. Writes every answer (words,
probabilities, senses) to `--out`, so that two versions can be compared answer for answer.

    python -m bench.bench_reverse_query --queries 50 --threads 1 --out /tmp/answers.json

The model is loaded as the app loads it (`ModelSpec.load`) and given its stored vocabulary as the app does at a
fresh start (the checkpoint's compact vectors, the first candidates re-scored exactly), in an empty cache.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=None, help="checkpoint folder (default: the shipped one)")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="the answers, as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        os.environ["DEFSENT_CACHE_DIR"] = cache  # before core is imported: a fresh start's empty cache
        import torch

        from app.shared import services as sv
        from app.shared.models import ModelSpec
        from core.checkpoint import DEFAULT_CHECKPOINT
        from core.evaluation.reverse import read_human_descriptions
        from core.paths import user_cache_dir

        torch.set_num_threads(args.threads)
        path = args.model or DEFAULT_CHECKPOINT
        engine = ModelSpec(path.name, path).load()
        engine.vocabulary.read_stored(user_cache_dir("open-vocab"))
        queries = [sv.WordQuery(q.text) for q in read_human_descriptions()[:args.queries]]
        for query in queries:  # the exact re-scoring embeds each query's first candidates once
            sv.reverse_dictionary(engine, query)
        times, answers = [], []
        for query in queries:
            started = time.perf_counter()
            rows = sv.reverse_dictionary(engine, query)
            times.append(1000 * (time.perf_counter() - started))
            answers.append([[r.word, r.probability, [e.definition for e in r.definitions], r.written] for r in rows])
    print(json.dumps({"queries": len(queries), "threads": args.threads, "state": engine.vocabulary.state.value,
                      "median_ms": round(statistics.median(times), 1), "mean_ms": round(statistics.mean(times), 1),
                      "loadavg": Path("/proc/loadavg").read_text().split()[:3]}))
    if args.out:
        args.out.write_text(json.dumps(answers), encoding="utf-8")


if __name__ == "__main__":
    main()
