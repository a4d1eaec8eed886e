"""The evaluation commands: `eval` scores any encoder on word prediction, STS, SentEval and Vec2Sent
(core/evaluation/runner.py), and `eval-reverse` scores the reverse dictionary as the app answers, on
human descriptions, DefSent's Table 6, WordNet and GCIDE (core/evaluation/reverse.py).
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Sequence

from ..paths import SENTEVAL_DIR
from ..runtime.hardware import PRECISIONS
from .flags import (add_device_flag, add_threads_flag, command, device_from_flag, parser_for, set_threads,
                    shown_path)

MAX_NORMS_SAMPLE = 200_000  # descriptions (the feature norms hold 173k in all)
MAX_DECODER_SENTENCES = 100_000
MAX_FOLDS = 100  # SentEval's cross-validation (its default 10)


# ---- evaluation -----------------------------------------------------------------------------------

@command("eval")
def evaluate(argv: Sequence[str]) -> int:
    """Evaluation: word prediction, STS, SentEval and Vec2Sent diagnostics of any encoder (core/evaluation).

    python -m core eval --model checkpoints/defsent-minilm --tasks words            # WordNet test MRR
    python -m core eval --model checkpoints/defsent-minilm --tasks words --untrained  # its base, same head
    python -m core eval --model minilm-st --tasks sts,senteval --out results/minilm-st.json

    Missing datasets are reported (naming the absent files) and skipped; the rest still runs. words
    and vec2sent need an Engine checkpoint (a word head; a Vec2Sent decoder trained on its encoder)
    and are skipped with a note for other models.
    """
    import time

    from ..checkpoint import DEFAULT_CHECKPOINT
    from ..evaluation.base import SENTEVAL_SEED, EvaluationConfig
    from ..evaluation.baselines import ENCODERS, load_encoder
    from ..evaluation.decoding import DEFAULT_TEST
    from ..evaluation.report import markdown_report
    from ..evaluation.runner import TASKS, save_results
    from ..evaluation.runner import evaluate as run_tasks

    parser = parser_for("eval", evaluate)
    parser.add_argument("--model", default=str(DEFAULT_CHECKPOINT),
                        help=f"one of {', '.join(ENCODERS)}, an Engine checkpoint folder or any Hugging Face "
                             "model folder (e.g. a sentence-transformers model); default: the shipped checkpoint")
    parser.add_argument("--untrained", action="store_true",
                        help="an Engine checkpoint's base encoder with its word head: the model before DefSent training")
    parser.add_argument("--data", type=Path, default=SENTEVAL_DIR,
                        help="folder in SentEval's data/downstream layout")
    parser.add_argument("--tasks", default=",".join(TASKS),
                        help=f"comma-separated, from: {', '.join(TASKS)} (default: all)")
    parser.add_argument("--words-split", default="test", choices=["dev", "test"],
                        help="the WordNet split the words task scores (default: test)")
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
                        help="sentences for the vec2sent task: one a line, or JSON lines with \"text\" "
                             f"(default: {shown_path(DEFAULT_TEST)})")
    parser.add_argument("--decoder-sentences", type=int, default=500, help="first N of them (default: 500)")
    add_device_flag(parser)
    args = parser.parse_args(argv)
    device = device_from_flag(parser, args.device)
    tasks = [task.strip() for task in args.tasks.split(",") if task.strip()]
    unknown = [task for task in tasks if task not in TASKS]
    if unknown or not tasks:
        parser.error(f"unknown or no task(s) in --tasks {args.tasks!r}; choose from {', '.join(TASKS)}")
    if not args.data.is_dir() and set(tasks) & {"sts", "senteval"}:
        parser.error(f"data folder not found: {args.data} (pass --data)")
    if not 1 <= args.decoder_sentences <= MAX_DECODER_SENTENCES:
        parser.error(f"--decoder-sentences must be from 1 to {MAX_DECODER_SENTENCES:,}")
    if not 2 <= args.kfold <= MAX_FOLDS:
        parser.error(f"--kfold must be from 2 to {MAX_FOLDS}")

    start = time.perf_counter()
    try:
        encoder = load_encoder(args.model, args.precision, args.pooling, untrained=args.untrained, device=device)
    except (ValueError, ImportError) as error:
        parser.error(f"cannot load model {args.model!r}: {error}")
    config = EvaluationConfig(args.data, args.sts_dir, args.kfold, args.seed, decoder_test=args.decoder_test,
                              decoder_sentences=args.decoder_sentences, words_split=args.words_split)
    with _log_to_stderr("core.evaluation"):
        results = run_tasks(encoder, config, tasks)
    seconds = time.perf_counter() - start

    model = Path(args.model).name + (" (untrained base)" if args.untrained else "")
    print(markdown_report(model, results) + f"\nTotal wall time: {seconds:.0f} s (model loading included).")
    if args.out:
        paths = save_results(args.out, model, config, results, total_seconds=seconds)
        print("Wrote " + " and ".join(str(path) for path in paths), file=sys.stderr)
    return 0


@command("eval-reverse")
def evaluate_reverse(argv: Sequence[str]) -> int:
    """The reverse dictionary as the app answers: human descriptions, DefSent's Table 6, WordNet, GCIDE.

    python -m core eval-reverse                       # every set, no filter / initial / initial+length
    python -m core eval-reverse --sets human-dev --out results/reverse.json
    python -m core eval-reverse --sets human-dev human-dev/in-norms human-dev/not-in-norms norms-heldout

    acc@1/3/10/100, MRR and median rank of the described word among all candidates (core/evaluation/
    reverse.py says how each set is scored). The open vocabulary's vectors are cached in the user cache,
    as Engine.load caches them (minutes the first time); --single-token-words ranks the head's words only.
    """
    import json

    from ..checkpoint import DEFAULT_CHECKPOINT
    from ..engine import Engine
    from ..evaluation.reverse import FILTERS, SET_NAMES, evaluate_reverse as run, reverse_query_sets
    from ..words.open_vocab_fit import GCIDE_DICTD, missing_gcide, progress, read_gcide_dictd
    from ..paths import FEATURE_NORMS, user_cache_dir

    parser = parser_for("eval-reverse", evaluate_reverse)
    parser.add_argument("--model", type=Path, default=DEFAULT_CHECKPOINT, help="an Engine checkpoint folder")
    parser.add_argument("--sets", nargs="+", default=None, choices=SET_NAMES, metavar="SET",
                        help=f"of {', '.join(SET_NAMES)} (default: those with data)")
    parser.add_argument("--filters", nargs="+", default=list(FILTERS), choices=FILTERS,
                        help="none; the word's initial given; its initial and length given (the app's filters)")
    parser.add_argument("--single-token-words", action="store_true", help="the word head's words only")
    parser.add_argument("--gcide", type=Path, default=GCIDE_DICTD, help="unpacked dict-gcide (scripts/fetch_gcide.sh)")
    parser.add_argument("--weights", nargs="+", default=[], metavar="NAME=VALUE",
                        help="open-vocabulary weights instead of the checkpoint's, e.g. frequency_weight=16")
    parser.add_argument("--norms", type=Path, default=FEATURE_NORMS,
                        help="the feature norms (their held-out words are a set; scripts/fetch_feature_norms.sh)")
    parser.add_argument("--norms-sample", type=int, default=0,
                        help="score a seeded sample of this many held-out norms descriptions (default 0: all)")
    parser.add_argument("--out", type=Path, default=None, help="also write the results here as JSON")
    add_threads_flag(parser)
    add_device_flag(parser)
    args = parser.parse_args(argv)
    if not 0 <= args.norms_sample <= MAX_NORMS_SAMPLE:
        parser.error(f"--norms-sample must be from 0 (all) to {MAX_NORMS_SAMPLE:,}")
    set_threads(args.threads)
    engine = Engine.load(args.model, decoder=None, open_vocabulary=False,  # enabled below, in float32
                         device=device_from_flag(parser, args.device))
    try:
        engine.words.config = dataclasses.replace(engine.words.config, **_weights(args.weights))
    except (TypeError, ValueError) as err:
        parser.error(f"--weights: {err}")
    if not args.single_token_words:
        engine.words.set_precision("float32")  # the leak-free indexes drop definitions from float32 vectors
        engine.vocabulary.enable(cache_dir=user_cache_dir("open-vocab"), progress=progress("candidates", print),
                                 compact=False)  # the exact vectors, as the app answers once they are in
    gcide = None if args.single_token_words or missing_gcide(args.gcide) else read_gcide_dictd(args.gcide)
    sets = reverse_query_sets(engine, gcide, norms=args.norms, norms_sample=args.norms_sample)
    unknown = sorted(set(args.sets or ()) - set(sets))
    if unknown:
        parser.error(f"no data for set(s) {', '.join(unknown)} (available: {', '.join(sets)})")
    chosen = {name: sets[name] for name in (args.sets or sets)}
    results = run(engine, chosen, args.filters, say=lambda line: print(line, flush=True))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"model": str(args.model), "config": dataclasses.asdict(engine.words.config),
                                        "results": results}, indent=1) + "\n")
    return 0


def _weights(pairs: Sequence[str]) -> dict[str, float]:
    """{"frequency_weight": 16.0} from ["frequency_weight=16"]; ValueError for a malformed pair."""
    weights = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if not value:
            raise ValueError(f"{pair!r} is not NAME=VALUE")
        weights[name.strip()] = float(value)
    return weights


class _log_to_stderr:
    """Log `name`'s records to stderr while in the block. Only that logger, not the root:
    sentence-transformers turns on its own progress bars when its effective level is INFO."""

    def __init__(self, name: str):
        import logging
        self.logger, self.handler = logging.getLogger(name), logging.StreamHandler(sys.stderr)
        self.level = logging.INFO

    def __enter__(self) -> None:
        self.logger.addHandler(self.handler)
        self.logger.setLevel(self.level)

    def __exit__(self, *exc) -> None:
        self.logger.removeHandler(self.handler)
