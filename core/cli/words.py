"""The commands on words: `words` (the reverse dictionary), `train` (DefSent training, ending with
the open vocabulary's fit), and `word-vectors` and `hubness`, which sweep the word head's scoring on a
WordNet split or write it into a checkpoint. They parse flags and call core/train.py, core/engine.py
and core/words/.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from ..answers import EXCLUDE_QUERY_WORDS, SCORE_NOTE, relative_scores
from ..lexicon.forms import written_forms
from ..paths import SENTEVAL_DIR, user_cache_dir
from .flags import (MAX_K, Command, InputError, add_config_flags, add_device_flag, add_output_flags, add_text_flags,
                    add_threads_flag, check_range, command, config_from_flags, device_from_flag, parse_with_recipe,
                    parser_for, print_json, set_threads, texts_from)

# How long a model's own open-vocabulary vectors take to embed, once (147k words and their definitions; the app
# built the shipped model's in about 6 minutes on 2 cores, issue 76)
EXACT_VECTORS_TIME = "about 6 minutes on 2 cores"


# ---- the reverse dictionary ---------------------------------------------------------------------

@command("words")
def words(argv: Sequence[str]) -> int:
    """The reverse dictionary: ranked words for each description.

    python -m core words "a person who is in charge" -k 5
    python -m core "a person who is in charge"            # the same: `words` is the default command
    python -m core words --file descriptions.txt --json   # one description a line; JSON for scripts

    The score is the model's probability of each word as a share of the first answer's (100), as the app
    shows it; --json gives both. The description's own words are left out, as in the app and in
    `Engine.predict_words` (core/answers.py; --no-exclude-query-words keeps them).
    """
    parser = parser_for("words", words)
    add_text_flags(parser, "a description")
    parser.add_argument("-k", type=int, default=10, help=f"how many words (1 to {MAX_K})")
    parser.add_argument("--pos", default="", help="part of speech: n, v, a or r")
    parser.add_argument("--pattern", default="", help="wildcard for the word, e.g. 'l?ad*'")
    parser.add_argument("--exclude-query-words", action=argparse.BooleanOptionalAction, default=EXCLUDE_QUERY_WORDS,
                        help="leave the description's own words out of its answers (default: yes, as the app)")
    parser.add_argument("--single-token-words", action="store_true",
                        help="answer with the word head's single-token words only (skips the open vocabulary)")
    parser.add_argument("--exact-vectors", action="store_true",
                        help=f"first embed this model's own open-vocabulary vectors where they are not yet in the user "
                             f"cache ({EXACT_VECTORS_TIME}), then answer from them")
    add_threads_flag(parser, note="; a query's scores may differ in their last digits with another count")
    add_output_flags(parser)
    args = parser.parse_args(argv)
    texts = texts_from(args)
    check_range("-k", args.k, 1, MAX_K)
    check_range("--threads", args.threads, 0, 1024)
    if args.pos not in ("", "n", "v", "a", "r"):
        raise InputError(f"--pos must be n, v, a or r, not {args.pos!r}")
    if args.exact_vectors and args.single_token_words:
        raise InputError("--exact-vectors embeds the open vocabulary, which --single-token-words leaves out: give one")
    device = device_from_flag(parser, args.device)
    set_threads(args.threads)
    from ..engine import Engine

    # no decoder: the reverse dictionary never decodes, and "auto" would look one up
    engine = Engine.load(args.model, decoder=None, device=device,
                         open_vocabulary=not (args.single_token_words or args.exact_vectors))
    if args.exact_vectors:  # the vectors the app embeds in the background, in the same cache
        from ..words.open_vocab_fit import progress

        engine.vocabulary.enable(cache_dir=user_cache_dir("open-vocab"), compact=False,
                                 progress=progress("the open vocabulary", lambda line: print(line, file=sys.stderr)))
    # a few queries: quantizing the 264k open-vocabulary vectors to int8 (7 s on 2 busy cores) would
    # cost more than it saves (0.7 instead of 4.6 ms a query); float32 ranks alike (docs/results.md)
    engine.words.set_precision("float32")
    results = engine.predict_words_batch(texts, k=args.k, pos=args.pos, pattern=args.pattern,
                                         exclude_query_words=args.exclude_query_words)
    if engine.vocabulary.approximate:  # said once, before the answers
        from ..words.open_vocab import APPROXIMATE_ANSWERS  # here: `--help` imports no torch

        print(f"note: {APPROXIMATE_ANSWERS} (once, {EXACT_VECTORS_TIME}: add --exact-vectors, or start the app, "
              "which embeds them in the background)", file=sys.stderr)
    # the form the description asks for ("candles" for "sticks of wax that burn"), its lemma beside it
    written = [written_forms(text, [word for word, _ in ranked]) for text, ranked in zip(texts, results)]
    if args.json:
        print_json([{"text": text, "words": [{"word": w, "written": shown, "score": s, "probability": p}
                                             for (w, p), s, shown in zip(ranked, relative_scores([p for _, p in ranked]), forms)]}
                    for text, ranked, forms in zip(texts, results, written)])
        return 0
    for text, ranked, forms in zip(texts, results, written):
        print(text)
        for rank, ((word, p), score, shown) in enumerate(zip(ranked, relative_scores([p for _, p in ranked]), forms), 1):
            print(f"  {rank:2d}. {shown:<20} {score:3d}   ({100 * p:.2g} %)" + (f"  ({word})" if shown != word else ""))
    print(f"({SCORE_NOTE}; in brackets: the probability)", file=sys.stderr)
    return 0


# ---- training and word scoring ------------------------------------------------------------------

@command("train")
def train(argv: Sequence[str]) -> int:
    """DefSent training: the word head, the encoder, then the open vocabulary (core/train.py).

    The word head is fitted first for a base without one; the open vocabulary's word tower and weights
    (core/words/open_vocab_fit.py) last, unless --no-open-vocab.

    python -m core train --recipe recipes/defsent-minilm.json --out checkpoints/NAME   # the shipped recipe
    """
    from ..runtime.device import OutOfDeviceMemory
    from ..train import TrainConfig

    p = train_parser()
    args = parse_with_recipe(p, argv)
    if args.init and args.head_from:
        p.error("--init and --head-from both choose the starting model: give one")
    if _fits_open_vocabulary(args):  # fail before hours of training, not after
        from ..words.open_vocab_fit import missing_gcide

        if missing_gcide(args.open_vocab_gcide):
            p.error(missing_gcide(args.open_vocab_gcide) + " (or --no-open-vocab to skip the fit)")
        if args.everyday_adapter and _missing_adapter_data(args.everyday_adapter):
            p.error(_missing_adapter_data(args.everyday_adapter))
    set_threads(args.threads)
    device = device_from_flag(p, args.device)
    from ..runtime import distributed

    distributed.start(device)  # under torchrun: join the other processes (docs/training.md, "More than one process")
    try:
        return _run_training(args, config_from_flags(TrainConfig, args), distributed.is_main(), device)
    except OutOfDeviceMemory as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        distributed.stop()


def train_parser() -> argparse.ArgumentParser:
    """The flags of `python -m core train` (TrainConfig's among them)."""
    from ..checkpoint import DEFAULT_BASE
    from ..words.open_vocab_fit import GCIDE_DICTD, WeightGrid
    from ..train import HEAD_STAGES, TrainConfig
    from ..words.word_head import HEAD_KINDS

    p = parser_for("train", train)
    p.add_argument("--out", type=Path, required=True, help="checkpoint directory to write")
    p.add_argument("--base", default=DEFAULT_BASE, help="base model: package:NAME, a path or a hub id")
    p.add_argument("--init", type=Path, help="continue from this checkpoint (its base, pooling and head)")
    p.add_argument("--pooling", default="mean", choices=["cls", "mean", "max"],
                   help="how the encoder's token vectors make the sentence embedding")
    p.add_argument("--head-kind", default="mlm", choices=HEAD_KINDS,
                   help="the word head: the base's masked-LM head, or a new one (core/words/word_head.py)")
    p.add_argument("--unit-rows", action="store_true",
                   help="new head scores against equal-length embedding rows (see core/words/word_head.py)")
    p.add_argument("--head-stage", default="definitions", choices=HEAD_STAGES,
                   help="how a base without a masked-LM head gets its word head")
    p.add_argument("--head-epochs", type=int, default=10, help="epochs of the head's fit")
    p.add_argument("--head-weight-decay", type=float, default=0.0,
                   help="AdamW weight decay of the head's fit on definitions (1.0: dev MRR .169 -> .182 zero-shot)")
    p.add_argument("--dictionary", type=Path, help="a user dictionary (TSV/CSV/JSONL); default WordNet")
    p.add_argument("--senteval", type=Path, default=SENTEVAL_DIR,
                   help="SentEval data folder, for STS-B dev in checkpoint selection (optional)")
    p.add_argument("--extra-train", type=Path,
                   help="gzip JSONL dictionary whose pairs are added to the training split only (e.g. GCIDE, "
                        "python -m core gcide); its dev/test words and texts are dropped")
    p.add_argument("--split-seed", type=int, default=0, help="seed of the 80/10/10 split by word")
    add_threads_flag(p)
    add_device_flag(p)
    p.add_argument("--head-from", type=Path, help="start from the base of this checkpoint with its head "
                   "(the encoder's training is redone, the head stage skipped)")
    add_config_flags(p, TrainConfig)
    grid = WeightGrid()
    p.add_argument("--no-open-vocab", action="store_true",
                   help="skip the open vocabulary's fit at the end (word tower + weights, core/words/open_vocab_fit.py)")
    p.add_argument("--open-vocab-gcide", type=Path, default=GCIDE_DICTD,
                   help="unpacked dict-gcide (scripts/fetch_gcide.sh): GCIDE dev chooses the definition weight")
    p.add_argument("--open-vocab-lemmas", type=Path,
                   help="the candidates: a synsets file like core/data/wordnet-synsets.jsonl.gz (the default "
                        "when training on WordNet; a run on --dictionary fits the open vocabulary only with it)")
    p.add_argument("--open-vocab-word-scales", type=float, nargs="+", default=list(grid.word_scales),
                   help="word scales tried on WordNet dev")
    p.add_argument("--open-vocab-head-weights", type=float, nargs="+", default=list(grid.head_weights),
                   help="head weights tried on WordNet dev")
    p.add_argument("--open-vocab-biases", type=float, nargs="+", default=list(grid.biases),
                   help="multi-token biases tried on WordNet dev")
    p.add_argument("--open-vocab-definition-weights", type=float, nargs="+", default=list(grid.definition_weights),
                   help="definition weights tried on GCIDE dev")
    p.add_argument("--open-vocab-temperatures", type=float, nargs="+", default=list(grid.temperatures),
                   help="temperatures of the shown probabilities tried on GCIDE dev (likelihood)")
    p.add_argument("--everyday-adapter", type=Path, metavar="RECIPE",
                   help="end with the everyday expert's query adapter trained on the feature norms, as this recipe "
                        "of `python -m core everyday-adapter` says (after the open vocabulary's fit)")
    return p


def _run_training(args: argparse.Namespace, config, main_process: bool, device) -> int:
    """Train; only the main process prints, tests and saves (the others train their shards)."""
    from tqdm import tqdm

    from ..runtime import distributed
    from ..lexicon.dictionary import add_training_entries, load_wordnet, split_by_word
    from ..lexicon.user_files import read_user_dictionary
    from ..engine import Engine
    from ..train import TrainProgress, head_stage, sts_dev_scorer
    from ..train import train as train_engine
    from ..words.word_eval import evaluate_words, format_table

    say = print if main_process else lambda *_: None
    if distributed.backend():
        say(f"distributed: {distributed.backend()} backend, {distributed.world_size()} process(es), on {device}")
    if args.dictionary:
        entries, report = read_user_dictionary(args.dictionary)
        say(report.summary())
        if not report.ok:
            return 2
        source = str(args.dictionary)
    else:
        entries, source = load_wordnet(), "WordNet 3.0 (core/data/wordnet.jsonl.gz)"
    split = split_by_word(entries, seed=args.split_seed)
    say(split.report())
    open_split, extra_counts = split, None  # the open vocabulary's split extends the dictionary's own
    if args.extra_train:
        split, extra_counts = add_training_entries(split, load_wordnet(args.extra_train))
        say(f"extra training pairs from {args.extra_train}:", extra_counts)
    engine = (Engine.load(args.init) if args.init
              else Engine.load(args.head_from, untrained=True) if args.head_from
              else Engine.from_base(args.base, args.pooling, args.head_kind, unit_rows=args.unit_rows))
    engine.to(device)
    engine.manifest["head"]["origin"] = head_stage(engine, split, args.head_stage, args.head_epochs,
                                                   args.split_seed, args.head_weight_decay)
    say("word head:", engine.manifest["head"]["origin"])

    bar = tqdm(total=1, unit="step", dynamic_ncols=True, disable=not main_process)

    def show(p: TrainProgress) -> None:
        bar.total = p.total_steps
        bar.n = p.step
        bar.set_postfix(loss=f"{p.loss:.3f}", defs_s=f"{p.definitions_per_second:.0f}",
                        dev_mrr=f"{p.dev.get('mrr', 0):.4f}", sts=f"{p.dev.get('sts_dev', float('nan')):.1f}")
        bar.refresh()

    result = train_engine(engine, split.train, split.dev, config, progress=show,
                          sts_dev=sts_dev_scorer(args.senteval))
    bar.close()
    if not main_process:
        return 0
    test = evaluate_words(engine, split.test)
    print(format_table({"DefSent (best dev)": test}))
    metrics, open_vocab = {"test": test, "dev": result.best_dev}, None
    if _fits_open_vocabulary(args):
        metrics["open_vocab"], open_vocab = _fit_open_vocabulary(engine, open_split, args)
    else:  # an --init checkpoint's tower and weights were fitted to the encoder before this training
        engine.vocabulary.reset()
        if not args.no_open_vocab:
            print("open vocabulary: not fitted (a --dictionary run fits it only over --open-vocab-lemmas)")
    if args.everyday_adapter and _fits_open_vocabulary(args):
        _fit_everyday_adapter(engine, args.everyday_adapter)
    engine.save(args.out, name=args.out.name, metrics=metrics,
                training={"data": source, "split_seed": args.split_seed, "split": split.stats(),
                          "extra_train": {"file": str(args.extra_train), **extra_counts} if extra_counts else None,
                          "init": str(args.init) if args.init else None,
                          "head_stage": args.head_stage, "result": result.to_dict(), "open_vocab": open_vocab})
    print(f"saved {args.out} (best step {result.best_step} of {result.steps}, {result.seconds / 60:.1f} min)")
    return 0


def _adapter_flags(recipe: Path) -> dict:
    import json
    return json.loads(Path(recipe).read_text(encoding="utf-8"))["flags"]


def _missing_adapter_data(recipe: Path) -> str | None:
    """What is missing for the adapter `recipe` trains: the recipe or its norms file (None: nothing)."""
    from ..lexicon.norms import missing_norms
    from ..paths import FEATURE_NORMS

    if not Path(recipe).is_file():
        return f"--everyday-adapter: no recipe at {recipe}"
    return missing_norms(Path(_adapter_flags(recipe).get("norms", FEATURE_NORMS)))


def _fit_everyday_adapter(engine, recipe: Path) -> None:
    """The query adapter of `recipe` (a JSON file of `everyday-adapter`'s flags) set on
    `engine` (core/words/adapter_fit.py)."""
    import dataclasses

    from ..lexicon.norms import HELD_OUT_SHARE
    from ..paths import FEATURE_NORMS
    from ..words.adapter_fit import AdapterFitConfig, adapt_engine, summary

    flags = _adapter_flags(recipe)
    config = AdapterFitConfig(**{f.name: flags[f.name] for f in dataclasses.fields(AdapterFitConfig) if f.name in flags})
    print(f"everyday adapter: trained on the feature norms ({recipe})", flush=True)
    result = adapt_engine(engine, Path(flags.get("norms", FEATURE_NORMS)), config, flags.get("split_seed", 0),
                          flags.get("held_out_share", HELD_OUT_SHARE), lambda line: print(line, flush=True))
    print(f"everyday adapter, held-out words: {summary(result['before'])} -> {summary(result['after'])}")


def _fits_open_vocabulary(args: argparse.Namespace) -> bool:
    """Whether the run ends with the open vocabulary's fit: by default on WordNet; on a user's
    --dictionary only with --open-vocab-lemmas (its split extends to those candidates)."""
    return not args.no_open_vocab and (args.dictionary is None or args.open_vocab_lemmas is not None)


def _fit_open_vocabulary(engine, split, args: argparse.Namespace) -> tuple[dict, dict]:
    """The open vocabulary's word tower and weights fitted on `split` (core/words/open_vocab_fit.py): the test
    metrics of each query set and what the manifest records of the run."""
    import time
    from dataclasses import asdict

    from ..lexicon.dictionary import load_wordnet_lemmas
    from ..words.open_vocab_fit import WeightGrid, fit_open_vocabulary, overall, read_gcide_dictd
    from ..words.word_tower import WordTowerConfig

    started = time.time()
    print("open vocabulary: training the word tower and choosing the weights (core/words/open_vocab_fit.py)", flush=True)
    grid = WeightGrid(tuple(args.open_vocab_word_scales), tuple(args.open_vocab_head_weights),
                      tuple(args.open_vocab_biases), tuple(args.open_vocab_definition_weights),
                      tuple(args.open_vocab_temperatures))
    dictionary = load_wordnet_lemmas(args.open_vocab_lemmas) if args.open_vocab_lemmas else None
    results = fit_open_vocabulary(engine, split, read_gcide_dictd(args.open_vocab_gcide), grid=grid,
                                  dictionary=dictionary, say=lambda line: print(line, flush=True))
    print(f"open vocabulary: {results['config']} ({(time.time() - started) / 60:.1f} min)", flush=True)
    record = {"grid": asdict(grid), "word_tower": asdict(WordTowerConfig()),
              "lemmas": str(args.open_vocab_lemmas or "core/data/wordnet-synsets.jsonl.gz")}
    return overall(results), record


def _scoring_parser(name: str, function: Command) -> argparse.ArgumentParser:
    """The flags word-vectors and hubness share: a model, a WordNet split for sweeps, --write."""
    p = parser_for(name, function)
    p.add_argument("--model", type=Path, default=None, help="checkpoint directory (default: the shipped one)")
    p.add_argument("--split", default="dev", choices=["dev", "test"], help="WordNet split for the sweep")
    p.add_argument("--write", action="store_true",
                   help="store the result in --model, with the dev and test metrics it gives")
    add_threads_flag(p)
    return p


def _scoring_setup(p: argparse.ArgumentParser, args: argparse.Namespace):
    """The engine of --model (no decoder) and its WordNet split; refuses --write without --model
    before any work."""
    if args.write and args.model is None:
        p.error("--write needs an explicit --model")
    set_threads(args.threads)
    from ..lexicon.dictionary import load_wordnet, split_by_word
    from ..engine import Engine

    engine = Engine.load(args.model, decoder=None)
    return engine, split_by_word(load_wordnet(), seed=engine.manifest.get("training", {}).get("split_seed", 0))


@command("word-vectors")
def word_vectors(argv: Sequence[str]) -> int:
    """Word vectors (core/words/word_vectors.py): sweep their scale on a split, or write them into a checkpoint.

    python -m core word-vectors --model checkpoints/defsent-minilm --sweep 0 10 15 20 --split dev
    python -m core word-vectors --model checkpoints/defsent-minilm --scale 15 --write
    """
    from ..words.word_vectors import DEFAULT_SCALE, WORD_VECTORS

    p = _scoring_parser("word-vectors", word_vectors)
    p.add_argument("--sweep", type=float, nargs="*", default=[], help="scales to evaluate (0 = head alone)")
    p.add_argument("--scale", type=float, default=DEFAULT_SCALE, help="scale to store with --write")
    p.add_argument("--record-split", nargs="*", default=["dev", "test"], choices=["dev", "test"],
                   help="the splits whose metrics --write records")
    args = p.parse_args(argv)
    engine, split = _scoring_setup(p, args)
    from ..words.word_eval import definition_pairs, evaluate_vectors, format_table, write_word_scoring

    if args.sweep:
        print(f"encoding {sum(w is not None for w in engine.words.vocab.words)} words and the {args.split} definitions...")
        engine.add_word_vectors(args.scale)
        texts, gold = definition_pairs(getattr(split, args.split), engine.words.vocab)
        vectors = engine.encode(texts)
        rows = {}
        for scale in args.sweep:
            engine.words.vectors.scale = scale
            rows[f"scale {scale:g}"] = evaluate_vectors(engine, vectors, gold)
        print(format_table(rows))
    if args.write:
        engine.add_word_vectors(args.scale)
        write_word_scoring(engine, args.model, split, args.record_split, "word vectors")
        print(f"wrote {args.model / WORD_VECTORS} (scale {args.scale:g})")
    return 0


@command("hubness")
def hubness(argv: Sequence[str]) -> int:
    """The hubness correction (core/words/hubness.py): sweep k and weight on a split, or write it into a checkpoint.

    python -m core hubness --model checkpoints/defsent-minilm --sweep-k 10 --sweep-weight 0 0.25 0.5 0.75
    python -m core hubness --model checkpoints/defsent-minilm --k 10 --weight 0.25 --write
    """
    from dataclasses import replace

    from ..words.hubness import DEFAULT_K, DEFAULT_WEIGHT, HUB_PENALTY, HubPenalty, group_definitions

    p = _scoring_parser("hubness", hubness)
    p.add_argument("--sweep-k", type=int, nargs="*", default=[], help="k values to evaluate")
    p.add_argument("--sweep-weight", type=float, nargs="*", default=[], help="weights to evaluate (0 = none)")
    p.add_argument("--k", type=int, default=DEFAULT_K, help="k to store with --write")
    p.add_argument("--weight", type=float, default=DEFAULT_WEIGHT, help="weight to store with --write")
    args = p.parse_args(argv)
    engine, split = _scoring_setup(p, args)
    from tqdm import tqdm

    from ..words.word_eval import definition_pairs, evaluate_vectors, format_table, write_word_scoring

    engine.words.hub_penalty = None  # scores without a stored correction, which is measured and replaced here
    references, defined = group_definitions(*definition_pairs(split.train, engine.words.vocab))
    with tqdm(total=len(references), unit="definition", desc="encoding the references") as bar:
        reference_vectors = engine.encode(references, progress=lambda done, _total: bar.update(done - bar.n))
    computed: dict[int, HubPenalty] = {}  # by k: the sweep's penalty is reused by --write

    def penalty(k: int, weight: float) -> HubPenalty:
        if k not in computed:
            engine.words.hub_penalty = None
            computed[k] = HubPenalty.compute(engine.words.logits, reference_vectors, defined, k)
        return replace(computed[k], weight=weight)

    if args.sweep_k or args.sweep_weight:
        texts, gold = definition_pairs(getattr(split, args.split), engine.words.vocab)
        vectors = engine.encode(texts)
        rows = {"no correction": evaluate_vectors(engine, vectors, gold)}
        for k in args.sweep_k or [args.k]:
            for weight in args.sweep_weight or [args.weight]:
                engine.words.hub_penalty = penalty(k, weight)
                rows[f"k {k}, weight {weight:g}"] = evaluate_vectors(engine, vectors, gold)
        print(f"WordNet {args.split} split:\n\n{format_table(rows)}")
    if args.write:
        engine.words.hub_penalty = penalty(args.k, args.weight)
        write_word_scoring(engine, args.model, split, ("dev", "test"), "hubness-corrected")
        print(f"wrote {args.model / HUB_PENALTY} (k {args.k}, weight {args.weight:g})")
    return 0


@command("everyday-adapter")
def everyday_adapter(argv: Sequence[str]) -> int:
    """The everyday expert's query adapter, trained on descriptions people wrote (core/words/query_adapter.py).

    Trained on the feature norms (core/lexicon/norms.py) and the dictionary's glosses (core/words/adapter_fit.py),
    measured on the norms' held-out words, and written into --model (its encoder and head unchanged). The
    shipped checkpoint has none (docs/training.md, "People's descriptions").

    python -m core everyday-adapter --model checkpoints/NAME --steps 600 --lr 1e-3   # train, measure, write
    python -m core everyday-adapter --steps 300 --no-write       # the shipped model: train and measure only
    """
    from ..lexicon.norms import HELD_OUT_SHARE, missing_norms
    from ..paths import FEATURE_NORMS
    from ..words.adapter_fit import AdapterFitConfig

    parser = parser_for("everyday-adapter", everyday_adapter)
    parser.add_argument("--model", type=Path, default=None,
                        help="the checkpoint to train it for (default: the shipped one, with --no-write only)")
    parser.add_argument("--norms", type=Path, default=FEATURE_NORMS,
                        help="the feature norms' word<TAB>response file (scripts/fetch_feature_norms.sh)")
    parser.add_argument("--split-seed", type=int, default=0, help="the seed of the norms' and WordNet's word splits")
    parser.add_argument("--held-out-share", type=float, default=HELD_OUT_SHARE, help="the norms' words never trained on")
    parser.add_argument("--write", action=argparse.BooleanOptionalAction, default=True,
                        help="write the adapter into --model or only train and measure")
    add_config_flags(parser, AdapterFitConfig)
    add_threads_flag(parser)
    args = parse_with_recipe(parser, argv)
    if args.write and args.model is None:
        parser.error("--write needs an explicit --model (the checkpoint the adapter is written into); "
                     "--no-write trains and measures for the shipped one")
    set_threads(args.threads)
    try:
        config = config_from_flags(AdapterFitConfig, args)
    except ValueError as err:
        parser.error(str(err))
    if missing_norms(args.norms):
        parser.error(missing_norms(args.norms))
    from ..engine import Engine
    from ..words.adapter_fit import adapt_engine, summary

    engine = Engine.load(args.model, decoder=None, open_vocabulary=False)
    say = lambda line: print(line, flush=True)  # noqa: E731
    result = adapt_engine(engine, args.norms, config, args.split_seed, args.held_out_share, say)
    say(f"held-out words, before: {summary(result['before'])}\n                 after:  {summary(result['after'])}")
    if args.write:
        engine.save_word_scoring(args.model)
        say(f"wrote the adapter into {args.model}")
    return 0
