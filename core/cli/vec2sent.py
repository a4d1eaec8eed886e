"""The Vec2Sent commands: `vec2sent-corpus` builds the decoder's training corpus (core/corpus/),
`vec2sent-train` trains a decoder on one encoder's embeddings of it (core/vec2sent/train.py), and
`vec2sent-diagnostics` scores a decoder's reconstructions (core/vec2sent/diagnostics.py).
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Sequence

from ..paths import CACHE_DIR, CORPUS_DIR, MODERN_CORPUS_DIR, SENTEVAL_DIR
from ..runtime.hardware import PRECISIONS, TRAINING_PRECISIONS
from .flags import (InputError, add_config_flags, add_device_flag, add_threads_flag, check_range, command,
                    config_from_flags, device_from_flag, parse_with_recipe, parser_for, set_threads, shown_path)

MAX_STYLED_SENTENCES = 1_000_000  # of each kind in a --styles-from corpus (the modern corpus has 1,028,415)
MAX_SET_SIZE = 100_000  # sentences of a held-out or test set
MAX_DIAGNOSED = 100_000  # test sentences one diagnostics run decodes


# ---- Vec2Sent ---------------------------------------------------------------------------------------

@command("vec2sent-corpus")
def vec2sent_corpus(argv: Sequence[str]) -> int:
    """Build the Vec2Sent training corpus from packaged sources (core/corpus/classic.py).

    python -m core vec2sent-corpus --out data/cache/corpus
    python -m core vec2sent-corpus --modern --out data/cache/corpus-modern   # cased, broad (sources.py)
    """
    import json

    from ..corpus.classic import TRAIN_ONLY_SOURCES, make_corpus

    parser = parser_for("vec2sent-corpus", vec2sent_corpus)
    parser.add_argument("--out", type=Path, default=None,
                        help=f"default {shown_path(CORPUS_DIR)}, with --modern {shown_path(MODERN_CORPUS_DIR)}")
    parser.add_argument("--modern", action="store_true",
                        help="build the cased modern corpus (core/corpus/modern.py): 4-30 words, Debian "
                        "documentation, e-mail, dialogue, fortunes, SentEval training splits and the old sources, "
                        "with a held-out evaluation set (heldout.jsonl) of whole held-out documents and "
                        "benchmark test sentences")
    parser.add_argument("--heldout-size", type=int, default=1000, help="--modern: sentences in the held-out set")
    parser.add_argument("--only", nargs="*", default=None,
                        help="--modern: use only these new sources (names in sources.MODERN_SOURCES)")
    parser.add_argument("--no-old", action="store_true", help="--modern: leave the first corpus' sources out")
    parser.add_argument("--cache", type=Path, default=CACHE_DIR, help="where the npm and Debian packages are unpacked")
    parser.add_argument("--senteval", type=Path, default=SENTEVAL_DIR,
                        help="SentEval's data folder (training splits as sources, test sentences left out)")
    parser.add_argument("--test-size", type=int, default=2000, help="sentences in the first corpus' test set")
    parser.add_argument("--seed", type=int, default=13, help="seed of the shuffle and the held-out choice")
    parser.add_argument("--train-only", nargs="*", default=[], choices=sorted(TRAIN_ONLY_SOURCES),
                        help="extra sources that add training sentences only (the test set stays the same)")
    parser.add_argument("--styles-from", type=Path, default=None, metavar="MODERN_CORPUS",
                        help="build a corpus of headline and post rewrites of a modern corpus' sentences, with "
                        "--replay of its sentences as they are (core/corpus/styles.py)")
    parser.add_argument("--replay", type=int, default=60_000, help="--styles-from: sentences kept as they are")
    parser.add_argument("--headlines", type=int, default=30_000, help="--styles-from: headline rewrites")
    parser.add_argument("--posts", type=int, default=30_000, help="--styles-from: post rewrites")
    args = parser.parse_args(argv)
    check_range("--heldout-size", args.heldout_size, 1, MAX_SET_SIZE)
    check_range("--test-size", args.test_size, 1, MAX_SET_SIZE)
    if args.styles_from:
        return _styled_corpus(args)
    if args.modern:
        from ..corpus.modern import make_modern_corpus

        out = args.out or MODERN_CORPUS_DIR
        modern = make_modern_corpus(out, args.cache, args.senteval, args.heldout_size, args.seed, args.only,
                                    not args.no_old, log=lambda line: print(line, file=sys.stderr))
        summary = {k: modern.stats[k] for k in ("train", "train_by_genre", "heldout", "seconds")}
        print(json.dumps(summary, indent=2))
        print(f"wrote {len(modern.train)} train / {len(modern.heldout)} held-out sentences to {out}", file=sys.stderr)
        return 0
    args.out = args.out or CORPUS_DIR
    corpus = make_corpus(args.out, args.cache, args.senteval, args.test_size, args.seed, args.train_only)
    removed = sum(s.get("in_sts_or_sick", 0) for s in corpus.stats["sources"].values())
    print(json.dumps({k: v for k, v in corpus.stats.items() if "_train" not in k}, indent=2))
    print(f"removed {removed} sentences that occur in STS-B or SICK", file=sys.stderr)
    print(f"wrote {len(corpus.train)} train / {len(corpus.test)} test sentences to {args.out}", file=sys.stderr)
    return 0


def _styled_corpus(args) -> int:
    import json

    from ..corpus.styles import write_styled_corpus

    if args.out is None:
        raise InputError("--styles-from needs --out (a new corpus folder)")
    if not args.styles_from.is_dir():
        raise InputError(f"--styles-from: no corpus folder at {args.styles_from} (build one with `python -m core "
                         "vec2sent-corpus --modern --out FOLDER`)")
    for flag in ("replay", "headlines", "posts"):
        check_range(f"--{flag}", getattr(args, flag), 0, MAX_STYLED_SENTENCES)
    stats = write_styled_corpus(args.styles_from, args.out, args.replay, args.headlines, args.posts, args.seed)
    print(json.dumps(stats, indent=2))
    return 0


@command("vec2sent-train")
def vec2sent_train(argv: Sequence[str]) -> int:
    """Train a Vec2Sent decoder on one encoder's embeddings of a corpus (core/vec2sent/train.py).

    python -m core vec2sent-train --encoder CKPT --corpus data/cache/corpus --out checkpoints/vec2sent-NAME --minutes 80
    python -m core vec2sent-train --recipe recipes/vec2sent-defsent-minilm.json --out checkpoints/NAME   # the shipped one

    A recipe whose decoder goes on from another decoder names that one's recipe ("init_recipe"; its flag
    --init is where it is built): while that run is unfinished, the same command trains it first, then this
    one. --session-minutes and --resume apply to both.
    """
    import time

    parser = vec2sent_train_parser()
    args = parse_with_recipe(parser, argv)
    started = time.monotonic()
    first = _unfinished_init_stage(args)
    if first is not None:
        print(f"first the decoder it goes on from: --recipe {first.recipe} --out {first.out}", flush=True)
        stats, settings = _train(parser, first)
        if not settings.finished(stats):
            print(f"{first.out} is not finished ({stats.seconds / 60:.0f} of {settings.minutes:g} minutes): the same "
                  "command with --resume goes on")
            return 0
        if args.session_minutes is not None:
            args.session_minutes -= (time.monotonic() - started) / 60
            if args.session_minutes <= 0:
                print(f"{first.out} is finished; the same command with --resume trains {args.out} from it")
                return 0
    stats, _ = _train(parser, args)
    print(f"{stats.steps} steps, {stats.epochs:.2f} epochs, {stats.sentences_per_second:.0f} sentences/s, "
          f"final loss {stats.curve[-1]['loss']}; saved {args.out}")
    return 0


def _train(parser: argparse.ArgumentParser, args: argparse.Namespace):
    """(TrainStats, TrainSettings) of training the decoder the flags `args` describe (resumed with --resume)."""
    from ..runtime.device import OutOfDeviceMemory, resolve_precision
    from ..vec2sent.train import RUNS_DIR, TrainSettings, read_corpus, train_for_encoder, validation_size

    set_threads(args.threads)
    from ..vec2sent.encoder_link import link_engine

    device = device_from_flag(parser, args.device)
    settings = config_from_flags(TrainSettings, args, precision=resolve_precision(args.precision, device),
                                 device=str(device))
    if args.vectors_from and not args.normalize_input:
        raise InputError("--vectors-from: a collection holds unit vectors, so the decoder must normalise its input "
                         "(leave out --no-normalize-input)")
    sentences, corpus = read_corpus(args.corpus, args.corpus_sentences) if not args.vectors_from else ([], {})
    link = link_engine(args.encoder, batch_size=128, precision=args.encoder_precision, device=device)
    embeddings = None
    if args.vectors_from:
        sentences, embeddings, corpus = _collection_rows(args.vectors_from, link.fingerprint, args.corpus_sentences)
    try:
        stats = train_for_encoder(sentences, link, args.out, _decoder_overrides(args), settings,
                                  validation_size(len(sentences)), init=args.init, corpus=corpus,
                                  run_dir=args.run_dir or RUNS_DIR / args.out.name, resume=args.resume,
                                  embeddings=embeddings)
    except OutOfDeviceMemory as err:
        raise InputError(f"{err} (the last checkpoint written stays whole; --resume goes on from it)") from None
    return stats, settings


def _collection_rows(uri: str, fingerprint: str, first: int):
    """(texts, vectors, the corpus's description for the manifest) of the collection at `uri`, which must
    hold the vectors of the encoder of `fingerprint`; InputError saying why not."""
    from ..collection import training_rows

    try:
        sentences, vectors = training_rows(uri, fingerprint, first)
    except ValueError as err:
        raise InputError(f"--vectors-from: {err}") from None
    return sentences, vectors, {"collection": uri, **({"first_sentences": first} if first else {})}


def _unfinished_init_stage(args: argparse.Namespace) -> argparse.Namespace | None:
    """The flags of the run that builds --init, when the recipe names one ("init_recipe") and that run is not
    finished (its run state in data/cache/vec2sent-runs/INIT_NAME); None otherwise. The per-invocation flags
    (--session-minutes, --resume, --threads, --device) carry over."""
    import json

    from ..vec2sent.train import RUNS_DIR, TrainSettings, run_stats

    recipe = json.loads(args.recipe.read_text(encoding="utf-8")) if args.recipe else {}
    if not recipe.get("init_recipe"):
        return None
    if args.init is None:
        raise InputError(f"{args.recipe} names an init_recipe but no --init to build it into")
    argv = ["--recipe", recipe["init_recipe"], "--out", str(args.init), "--threads", str(args.threads),
            "--device", args.device, *(["--resume"] if args.resume else []),
            *(["--session-minutes", str(args.session_minutes)] if args.session_minutes else [])]
    first = parse_with_recipe(vec2sent_train_parser(), argv)
    stats = run_stats(RUNS_DIR / Path(args.init).name)
    if stats is not None and TrainSettings(minutes=first.minutes, max_steps=first.max_steps).finished(stats):
        return None
    return first


def _decoder_overrides(args: argparse.Namespace) -> dict:
    """The decoder's config fields from the flags: the transformer's size comes from --base."""
    from ..vec2sent.model import Vec2SentConfig

    if args.architecture == "transformer":
        return {"architecture": "transformer", "base": args.base, "prefix_length": args.prefix_length,
                "dropout": args.dropout}
    skipped = {"vocab_size", "sent_dim"}  # from the corpus and the encoder
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(Vec2SentConfig) if f.name not in skipped}


def vec2sent_train_parser() -> argparse.ArgumentParser:
    """The flags of `python -m core vec2sent-train` (TrainSettings' and Vec2SentConfig's among them)."""
    from ..checkpoint import DEFAULT_BASE
    from ..vec2sent.model import Vec2SentConfig
    from ..vec2sent.train import TrainSettings

    parser = parser_for("vec2sent-train", vec2sent_train)
    parser.add_argument("--encoder", type=Path, required=True, help="encoder checkpoint (core.engine)")
    parser.add_argument("--corpus", type=Path, default=MODERN_CORPUS_DIR,
                        help="a corpus folder `vec2sent-corpus` wrote (its train.txt)")
    parser.add_argument("--corpus-sentences", type=int, default=0,
                        help="train on the first N sentences of the corpus (its train.txt is shuffled), to embed "
                             "and train within a budget (0: all)")
    parser.add_argument("--vectors-from", default=None, metavar="PATH_OR_URI",
                        help="instead of --corpus: the texts and vectors of a collection `corpus-index` built with "
                             "this encoder (embedded there, on Ray: a GPU or a cluster), in the order of its file")
    parser.add_argument("--out", type=Path, required=True, help="the decoder's folder (written at each checkpoint)")
    parser.add_argument("--init", type=Path, help="start from this decoder, e.g. the decoder of the encoder "
                        "this one was fine-tuned or blended from (another corpus' pieces are mapped)")
    add_config_flags(parser, TrainSettings, skip=("precision", "device"))
    add_device_flag(parser)
    add_config_flags(parser, Vec2SentConfig, skip=("sent_dim", "architecture"))
    parser.add_argument("--architecture", choices=("lstm", "transformer"), default="lstm",
                        help="transformer: warm-started from --base (core/vec2sent/transformer.py); "
                             "of the LSTM's flags it uses --dropout only")
    parser.add_argument("--base", default=DEFAULT_BASE, help="the transformer's BERT checkpoint: package:NAME or a path")
    parser.add_argument("--prefix-length", type=int, default=10, help="the transformer's prefix vectors")
    parser.add_argument("--encoder-precision", default="float32", choices=TRAINING_PRECISIONS,
                        help="precision in which the corpus is embedded (bfloat16: as the app encodes, 1.7x faster)")
    parser.add_argument("--resume", action="store_true",
                        help="go on from the run state in --run-dir (its seconds count against --minutes)")
    parser.add_argument("--run-dir", type=Path, help="where the run's state is saved at each checkpoint "
                        "(default data/cache/vec2sent-runs/OUT_NAME)")
    parser.add_argument("--precision", choices=("auto", *TRAINING_PRECISIONS), default="auto",
                        help="bfloat16 autocasts the forward pass (weights stay float32); auto: bfloat16 "
                             "on a GPU or CPU with native bfloat16 matrix instructions, else float32")
    add_threads_flag(parser, default=1, note="; decoder training: 2 threads measured 2.5x slower beside another job")
    return parser


@command("vec2sent-diagnostics")
def vec2sent_diagnostics(argv: Sequence[str]) -> int:
    """Vec2Sent diagnostics: Id, PERM, BLEU and the word-head round trip (core/vec2sent/diagnostics.py).

    python -m core vec2sent-diagnostics --decoder CKPT --encoder CKPT --test data/cache/corpus-modern/heldout.jsonl
    """
    from ..vec2sent.decode import LENGTH_ALPHA
    from ..vec2sent.refine import CorrectSettings

    parser = parser_for("vec2sent-diagnostics", vec2sent_diagnostics)
    parser.add_argument("--decoder", type=Path, required=True, help="a decoder folder (vec2sent-train --out)")
    parser.add_argument("--encoder", type=Path, required=True, help="the encoder checkpoint it was trained on")
    parser.add_argument("--test", type=Path, required=True,
                        help="one sentence a line, or a .jsonl file of {\"text\", \"genre\"} (scores by genre too)")
    parser.add_argument("--limit", type=int, default=1000, help="first N test sentences")
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 4], help="beam widths (1 = greedy)")
    parser.add_argument("--alpha", type=float, default=LENGTH_ALPHA, help="length normalisation exponent")
    parser.add_argument("--rerank", action="store_true",
                        help="also each beam width > 1 with its hypotheses reranked by cosine to the vector")
    parser.add_argument("--refine", action="store_true",
                        help="also each beam width > 1 refined by one-word edits (core/vec2sent/refine.py)")
    parser.add_argument("--correct", type=int, default=None, metavar="ROUNDS",
                        help="also each beam width with ROUNDS of correction in the embedding space "
                             "(core/vec2sent/refine.py: correct), and refined too with --refine")
    parser.add_argument("--correct-step", type=float, default=CorrectSettings.step,
                        help="how far a correction round moves the target")
    parser.add_argument("--examples", type=int, default=10, help="decoded examples to print")
    add_threads_flag(parser, default=1)
    parser.add_argument("--precision", default="auto", choices=PRECISIONS,
                        help="decoder weights (auto: int8 where torch can; see load_checkpoint)")
    parser.add_argument("--encoder-precision", default="float32", choices=TRAINING_PRECISIONS,
                        help="the encoder's, for the test vectors, reranking and refining (the app: bfloat16)")
    add_device_flag(parser)
    args = parser.parse_args(argv)
    correct = None if args.correct is None else CorrectSettings(args.correct, args.correct_step)  # bounds its rounds
    _check_diagnostics_flags(args)
    set_threads(args.threads)
    device = device_from_flag(parser, args.device)
    from ..vec2sent.checkpoint import load_checkpoint
    from ..vec2sent.diagnostics import (decodings, diagnostic_settings, format_table, read_test_sentences,
                                       round_trip_agreement, score_reconstructions)
    from ..vec2sent.fit import mean_cosine
    from ..vec2sent.encoder_link import link_engine

    link = link_engine(args.encoder, precision=args.encoder_precision, device=device)
    decoder = load_checkpoint(args.decoder, encoder_fingerprint=link.fingerprint, precision=args.precision,
                              device=device)
    references, genres = read_test_sentences(args.test, args.limit)
    vectors = link.encode(references)
    rows, by_genre = {}, {}
    for width in args.beams:
        settings = diagnostic_settings(width, args.alpha, args.rerank, args.refine, correct)
        for name, (hypotheses, seconds) in decodings(decoder, link, vectors, settings).items():
            rows[f"{name} ({1000 * seconds / len(references):.0f} ms)"] = (
                score_reconstructions(references, hypotheses),
                round_trip_agreement(references, hypotheses, link.top_word),
                mean_cosine(vectors, hypotheses, link.encode))
            for genre in sorted(set(genres) - {None}):
                rows_of = [i for i, g in enumerate(genres) if g == genre]
                by_genre[f"{name}: {genre}"] = (score_reconstructions([references[i] for i in rows_of],
                                                                      [hypotheses[i] for i in rows_of]), None,
                                                mean_cosine(vectors[rows_of], [hypotheses[i] for i in rows_of],
                                                            link.encode))
            print(f"{name}:")
            for ref, hyp in list(zip(references, hypotheses))[:args.examples]:
                print(f"  in:  {ref}\n  out: {hyp}")
    print(format_table(rows))
    if by_genre:
        print("\nby genre:\n" + format_table(by_genre))
    return 0


def _check_diagnostics_flags(args: argparse.Namespace) -> None:
    """InputError for a diagnostics flag out of bounds or a path that is not there, before any model loads."""
    from .vectors import MAX_BEAM

    check_range("--limit", args.limit, 1, MAX_DIAGNOSED)
    for width in args.beams:
        check_range("--beams", width, 1, MAX_BEAM)
    check_range("--examples", args.examples, 0, MAX_DIAGNOSED)
    if not args.test.is_file():
        raise InputError(f"--test: no file {args.test}")
    for flag, folder in (("--decoder", args.decoder), ("--encoder", args.encoder)):
        if not folder.is_dir():
            raise InputError(f"{flag}: no checkpoint folder {folder}")

