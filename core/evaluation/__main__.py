"""Command line: python -m core.evaluation --model NAME_OR_PATH [--tasks sts,senteval,words,vec2sent]
[--out FILE.json] [--precision bfloat16]

Missing datasets are reported (naming the absent files) and skipped; the rest still runs. words
and vec2sent need an Engine checkpoint (a word head; a Vec2Sent decoder trained on its encoder)
and are skipped with a note for other models.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from core.encoder import PRECISIONS

from .base import SENTEVAL_SEED, EvaluationConfig
from .baselines import ENCODERS, load_encoder
from .decoding import DEFAULT_TEST
from .report import markdown_report
from .runner import DEFAULT_DATA_DIR, TASKS, evaluate, save_results


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core.evaluation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True,
                        help=f"one of {', '.join(ENCODERS)}, an Engine checkpoint folder or any Hugging Face "
                             "model folder (e.g. a sentence-transformers model)")
    parser.add_argument("--data", type=Path, default=None,
                        help=f"folder in SentEval's data/downstream layout (default: {DEFAULT_DATA_DIR})")
    parser.add_argument("--tasks", default=",".join(TASKS),
                        help=f"comma-separated, from: {', '.join(TASKS)} (default: all)")
    parser.add_argument("--sts-dir", type=Path, default=None,
                        help="SentEval's STS folder holding STS12-en-test ... STS16-en-test (default: DATA/STS)")
    parser.add_argument("--out", type=Path, default=None,
                        help="write results here as JSON, and as Markdown beside it (.md)")
    parser.add_argument("--kfold", type=int, default=10, help="folds for cross-validation (default: 10)")
    parser.add_argument("--seed", type=int, default=SENTEVAL_SEED, help="fold shuffling seed (default: SentEval's)")
    parser.add_argument("--precision", default="float32", choices=PRECISIONS,
                        help="encoding precision of this project's models (bfloat16, int8: faster; see bench/)")
    parser.add_argument("--pooling", default="mean", choices=["mean", "cls", "max"],
                        help="pooling of a plain Hugging Face model folder given as --model (default: mean)")
    parser.add_argument("--decoder-test", type=Path, default=None,
                        help=f"sentences for the vec2sent task, one a line (default: {DEFAULT_TEST})")
    parser.add_argument("--decoder-sentences", type=int, default=500, help="first N of them (default: 500)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    data_dir = args.data or DEFAULT_DATA_DIR
    if not data_dir.is_dir():
        parser.error(f"data folder not found: {data_dir} (pass --data)")
    tasks = [task.strip() for task in args.tasks.split(",") if task.strip()]
    unknown = [task for task in tasks if task not in TASKS]
    if unknown or not tasks:
        parser.error(f"unknown or no task(s) in --tasks {args.tasks!r}; choose from {', '.join(TASKS)}")
    if args.decoder_sentences < 1:
        parser.error("--decoder-sentences must be >= 1")

    start = time.perf_counter()
    try:
        encoder = load_encoder(args.model, args.precision, args.pooling)
    except (ValueError, ImportError) as error:
        parser.error(f"cannot load model {args.model!r}: {error}")
    config = EvaluationConfig(data_dir, args.sts_dir, args.kfold, args.seed, decoder_test=args.decoder_test,
                              decoder_sentences=args.decoder_sentences)
    with _log_to_stderr():
        results = evaluate(encoder, config, tasks)
    seconds = time.perf_counter() - start

    model = Path(args.model).name
    print(markdown_report(model, results) + f"\nTotal wall time: {seconds:.0f} s (model loading included).")
    if args.out:
        paths = save_results(args.out, model, config, results, total_seconds=seconds)
        print("Wrote " + " and ".join(str(path) for path in paths), file=sys.stderr)
    return 0


@contextmanager
def _log_to_stderr() -> Iterator[None]:
    # Only this package's logger, not the root: sentence-transformers turns on its own progress
    # bars when its effective level is INFO.
    logger, handler = logging.getLogger("core.evaluation"), logging.StreamHandler(sys.stderr)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)


if __name__ == "__main__":
    sys.exit(main())
