"""The command line of the engine: `python -m core COMMAND [flags]`.

    python -m core "a person who is in charge"      # the reverse dictionary (the command `words`)
    python -m core train --out checkpoints/NAME     # DefSent training (docs/training.md)
    python -m core eval --model checkpoints/NAME --tasks words,sts
    python -m core COMMAND --help                   # a command's flags

Library modules hold no argument parsing: each command here parses its flags and calls them.
Flags of a configuration dataclass are made from its fields (`add_config_flags`), so a new field
is a new flag. Heavy modules are imported inside the commands, so `--help` answers at once.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from pathlib import Path
from typing import Callable, Sequence

from .runtime.hardware import PRECISIONS, TRAINING_PRECISIONS
from .paths import CACHE_DIR, CORPUS_DIR, MODERN_CORPUS_DIR, SENTEVAL_DIR

Command = Callable[[Sequence[str]], int]
COMMANDS: dict[str, Command] = {}
DEFAULT_COMMAND = "words"


def command(name: str) -> Callable[[Command], Command]:
    """Register a function taking the command's arguments (after its name) as `python -m core NAME`."""
    def register(function: Command) -> Command:
        COMMANDS[name] = function
        return function
    return register


def main(argv: Sequence[str] | None = None) -> int:
    """Run `python -m core ARGS`: a command by its name, else the reverse dictionary."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in COMMANDS:
        return COMMANDS[args[0]](args[1:])
    if args and args[0] in ("-h", "--help"):
        print(usage())
        return 0
    return COMMANDS[DEFAULT_COMMAND](args)


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {(function.__doc__ or '').strip().splitlines()[0]}"
             for name, function in COMMANDS.items()]
    return (f"usage: python -m core COMMAND [flags]   (python -m core COMMAND --help)\n"
            f"       python -m core \"a description\" ...   (the command {DEFAULT_COMMAND})\n\ncommands:\n"
            + "\n".join(lines))


def parser_for(name: str, function: Command) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=f"python -m core {name}", description=function.__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def add_config_flags(parser: argparse.ArgumentParser, config: type, skip: Sequence[str] = ()) -> None:
    """One flag per field of the dataclass `config`: --field-name with the field's type and default
    (a bool: --field-name / --no-field-name; `int | None`: an int, None by default)."""
    hints = typing.get_type_hints(config)
    for f in dataclasses.fields(config):
        if f.name in skip or f.default is dataclasses.MISSING:
            continue
        flag = "--" + f.name.replace("_", "-")
        if isinstance(f.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        else:
            kind = next(t for t in typing.get_args(hints[f.name]) or (hints[f.name],) if t is not type(None))
            parser.add_argument(flag, type=kind, default=f.default)


def config_from_flags(config: type, args: argparse.Namespace, **given):
    """The dataclass `config` from the flags `add_config_flags` made (and `given` fields)."""
    names = {f.name for f in dataclasses.fields(config)}
    return config(**{k: v for k, v in vars(args).items() if k in names and k not in given}, **given)


def parse_with_recipe(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse `argv`, the flags of a --recipe FILE (recipes/*.json: {"flags": {dest: value}}) being
    the defaults, so that a flag given on the command line still wins."""
    parser.add_argument("--recipe", type=Path, help="a JSON recipe (recipes/*.json) whose flags are the defaults")
    recipe = argparse.ArgumentParser(add_help=False)
    recipe.add_argument("--recipe", type=Path)
    path = recipe.parse_known_args(argv)[0].recipe
    if path is not None:
        import json
        flags = json.loads(path.read_text(encoding="utf-8"))["flags"]
        unknown = sorted(set(flags) - {action.dest for action in parser._actions})
        if unknown:
            parser.error(f"{path} sets flags this command does not have: {', '.join(unknown)}")
        for action in parser._actions:
            action.required = action.required and action.dest not in flags
        parser.set_defaults(**flags)  # string defaults are converted by each flag's type
    return parser.parse_args(argv)


def set_threads(threads: int) -> None:
    if threads:
        import torch
        torch.set_num_threads(threads)


def _threads_flag(parser: argparse.ArgumentParser, default: int = 0, note: str = "") -> None:
    parser.add_argument("--threads", type=int, default=default,
                        help="torch threads (0: torch's default; 1 is fastest on a busy 2-core machine)" + note)


def _device_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default="auto",
                        help="where to compute: auto (a CUDA GPU, else Apple's MPS, else the CPU), cpu, cuda, "
                             "cuda:N or mps (core/runtime/device.py)")


def device_from_flag(parser: argparse.ArgumentParser, name: str):
    """The torch.device `--device` names; a parser error (exit 2) naming what this machine has when absent."""
    from .runtime.device import DeviceError, resolve_device

    try:
        return resolve_device(name)
    except DeviceError as err:
        parser.error(str(err))


# ---- the reverse dictionary ---------------------------------------------------------------------

@command("words")
def words(argv: Sequence[str]) -> int:
    """The reverse dictionary: ranked words for each description."""
    parser = parser_for("words", words)
    parser.add_argument("text", nargs="+", help="a description (several: one after another)")
    parser.add_argument("-k", type=int, default=10, help="how many words")
    parser.add_argument("--model", default=None, help="checkpoint directory (default: the shipped one)")
    parser.add_argument("--pos", default="", help="part of speech: n, v, a or r")
    parser.add_argument("--pattern", default="", help="wildcard for the word, e.g. 'l?ad*'")
    parser.add_argument("--exclude-query-words", action="store_true")
    parser.add_argument("--single-token-words", action="store_true",
                        help="answer with the word head's single-token words only (skips embedding the open "
                             "vocabulary, minutes the first time for a model)")
    _device_flag(parser)
    args = parser.parse_args(argv)
    device = device_from_flag(parser, args.device)
    from .checkpoint import CheckpointError
    from .engine import Engine
    try:
        engine = Engine.load(args.model, open_vocabulary=not args.single_token_words, device=device)
        results = engine.predict_words_batch(args.text, k=args.k, pos=args.pos, pattern=args.pattern,
                                             exclude_query_words=args.exclude_query_words)
    except (CheckpointError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for text, ranked in zip(args.text, results):
        print(text)
        for rank, (word, p) in enumerate(ranked, 1):
            print(f"  {rank:2d}. {word:<16} {p:.3f}")
    return 0


# ---- training and word scoring ------------------------------------------------------------------

@command("train")
def train(argv: Sequence[str]) -> int:
    """DefSent training: the word head (for a base without one), then the encoder (core/train.py),
    then the open vocabulary's word tower and weights (core/words/open_vocab_fit.py; --no-open-vocab skips it).

    python -m core train --recipe recipes/defsent-minilm.json --out checkpoints/NAME   # the shipped recipe
    """
    from .runtime.device import OutOfDeviceMemory
    from .train import TrainConfig

    p = train_parser()
    args = parse_with_recipe(p, argv)
    if args.init and args.head_from:
        p.error("--init and --head-from both choose the starting model: give one")
    if _fits_open_vocabulary(args):  # fail before hours of training, not after
        from .words.open_vocab_fit import missing_gcide

        if missing_gcide(args.open_vocab_gcide):
            p.error(missing_gcide(args.open_vocab_gcide) + " (or --no-open-vocab to skip the fit)")
    set_threads(args.threads)
    device = device_from_flag(p, args.device)
    from .runtime import distributed

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
    from .checkpoint import DEFAULT_BASE
    from .words.open_vocab_fit import GCIDE_DICTD, WeightGrid
    from .train import HEAD_STAGES, TrainConfig
    from .words.word_head import HEAD_KINDS

    p = parser_for("train", train)
    p.add_argument("--out", type=Path, required=True, help="checkpoint directory to write")
    p.add_argument("--base", default=DEFAULT_BASE, help="base model: package:NAME, a path or a hub id")
    p.add_argument("--init", type=Path, help="continue from this checkpoint (its base, pooling and head)")
    p.add_argument("--pooling", default="mean", choices=["cls", "mean", "max"])
    p.add_argument("--head-kind", default="mlm", choices=HEAD_KINDS)
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
    _threads_flag(p)
    _device_flag(p)
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
    return p


def _run_training(args: argparse.Namespace, config, main_process: bool, device) -> int:
    """Train; only the main process prints, tests and saves (the others train their shards)."""
    from tqdm import tqdm

    from .runtime import distributed
    from .lexicon.dictionary import add_training_entries, load_wordnet, read_user_dictionary, split_by_word
    from .engine import Engine
    from .train import TrainProgress, head_stage, sts_dev_scorer
    from .train import train as train_engine
    from .words.word_eval import evaluate_words, format_table

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
        engine.reset_open_vocabulary()
        if not args.no_open_vocab:
            print("open vocabulary: not fitted (a --dictionary run fits it only over --open-vocab-lemmas)")
    engine.save(args.out, name=args.out.name, metrics=metrics,
                training={"data": source, "split_seed": args.split_seed, "split": split.stats(),
                          "extra_train": {"file": str(args.extra_train), **extra_counts} if extra_counts else None,
                          "init": str(args.init) if args.init else None,
                          "head_stage": args.head_stage, "result": result.to_dict(), "open_vocab": open_vocab})
    print(f"saved {args.out} (best step {result.best_step} of {result.steps}, {result.seconds / 60:.1f} min)")
    return 0


def _fits_open_vocabulary(args: argparse.Namespace) -> bool:
    """Whether the run ends with the open vocabulary's fit: by default on WordNet; on a user's
    --dictionary only with --open-vocab-lemmas (its split extends to those candidates)."""
    return not args.no_open_vocab and (args.dictionary is None or args.open_vocab_lemmas is not None)


def _fit_open_vocabulary(engine, split, args: argparse.Namespace) -> tuple[dict, dict]:
    """The open vocabulary's word tower and weights fitted on `split` (core/words/open_vocab_fit.py): the test
    metrics of each query set and what the manifest records of the run."""
    import time
    from dataclasses import asdict

    from .lexicon.dictionary import load_wordnet_lemmas
    from .words.open_vocab_fit import WeightGrid, fit_open_vocabulary, overall, read_gcide_dictd
    from .words.word_tower import WordTowerConfig

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
    _threads_flag(p)
    return p


def _scoring_setup(p: argparse.ArgumentParser, args: argparse.Namespace):
    """The engine of --model (no decoder) and its WordNet split; refuses --write without --model
    before any work."""
    if args.write and args.model is None:
        p.error("--write needs an explicit --model")
    set_threads(args.threads)
    from .lexicon.dictionary import load_wordnet, split_by_word
    from .engine import Engine

    engine = Engine.load(args.model, decoder=None)
    return engine, split_by_word(load_wordnet(), seed=engine.manifest.get("training", {}).get("split_seed", 0))


@command("word-vectors")
def word_vectors(argv: Sequence[str]) -> int:
    """Word vectors (core/words/word_vectors.py): sweep their scale on a split, or write them into a checkpoint.

    python -m core word-vectors --model checkpoints/defsent-minilm --sweep 0 10 15 20 --split dev
    python -m core word-vectors --model checkpoints/defsent-minilm --scale 15 --write
    """
    from .words.word_vectors import DEFAULT_SCALE, WORD_VECTORS

    p = _scoring_parser("word-vectors", word_vectors)
    p.add_argument("--sweep", type=float, nargs="*", default=[], help="scales to evaluate (0 = head alone)")
    p.add_argument("--scale", type=float, default=DEFAULT_SCALE, help="scale to store with --write")
    p.add_argument("--record-split", nargs="*", default=["dev", "test"], choices=["dev", "test"],
                   help="the splits whose metrics --write records")
    args = p.parse_args(argv)
    engine, split = _scoring_setup(p, args)
    from .words.word_eval import definition_pairs, evaluate_vectors, format_table, write_word_scoring

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

    from .words.hubness import DEFAULT_K, DEFAULT_WEIGHT, HUB_PENALTY, HubPenalty, group_definitions

    p = _scoring_parser("hubness", hubness)
    p.add_argument("--sweep-k", type=int, nargs="*", default=[], help="k values to evaluate")
    p.add_argument("--sweep-weight", type=float, nargs="*", default=[], help="weights to evaluate (0 = none)")
    p.add_argument("--k", type=int, default=DEFAULT_K, help="k to store with --write")
    p.add_argument("--weight", type=float, default=DEFAULT_WEIGHT, help="weight to store with --write")
    args = p.parse_args(argv)
    engine, split = _scoring_setup(p, args)
    from tqdm import tqdm

    from .words.word_eval import definition_pairs, evaluate_vectors, format_table, write_word_scoring

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

    from .checkpoint import DEFAULT_CHECKPOINT
    from .evaluation.base import SENTEVAL_SEED, EvaluationConfig
    from .evaluation.baselines import ENCODERS, load_encoder
    from .evaluation.decoding import DEFAULT_TEST
    from .evaluation.report import markdown_report
    from .evaluation.runner import TASKS, save_results
    from .evaluation.runner import evaluate as run_tasks

    parser = parser_for("eval", evaluate)
    parser.add_argument("--model", default=str(DEFAULT_CHECKPOINT),
                        help=f"one of {', '.join(ENCODERS)}, an Engine checkpoint folder or any Hugging Face "
                             "model folder (e.g. a sentence-transformers model); default: the shipped checkpoint")
    parser.add_argument("--untrained", action="store_true",
                        help="an Engine checkpoint's base encoder with its word head: the model before DefSent training")
    parser.add_argument("--data", type=Path, default=SENTEVAL_DIR,
                        help=f"folder in SentEval's data/downstream layout (default: {SENTEVAL_DIR})")
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
                             f"(default: {DEFAULT_TEST})")
    parser.add_argument("--decoder-sentences", type=int, default=500, help="first N of them (default: 500)")
    _device_flag(parser)
    args = parser.parse_args(argv)
    device = device_from_flag(parser, args.device)
    tasks = [task.strip() for task in args.tasks.split(",") if task.strip()]
    unknown = [task for task in tasks if task not in TASKS]
    if unknown or not tasks:
        parser.error(f"unknown or no task(s) in --tasks {args.tasks!r}; choose from {', '.join(TASKS)}")
    if not args.data.is_dir() and set(tasks) & {"sts", "senteval"}:
        parser.error(f"data folder not found: {args.data} (pass --data)")
    if args.decoder_sentences < 1:
        parser.error("--decoder-sentences must be >= 1")

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

    acc@1/3/10/100, MRR and median rank of the described word among all candidates (core/evaluation/
    reverse.py says how each set is scored). The open vocabulary's vectors are cached in the user cache,
    as Engine.load caches them (minutes the first time); --single-token-words ranks the head's words only.
    """
    import json

    from .checkpoint import DEFAULT_CHECKPOINT
    from .engine import Engine
    from .evaluation.reverse import FILTERS, evaluate_reverse as run, reverse_query_sets
    from .words.open_vocab_fit import GCIDE_DICTD, missing_gcide, progress, read_gcide_dictd
    from .paths import user_cache_dir

    parser = parser_for("eval-reverse", evaluate_reverse)
    parser.add_argument("--model", type=Path, default=DEFAULT_CHECKPOINT)
    parser.add_argument("--sets", nargs="+", default=None,
                        help="human-dev, defsent-table6, wordnet-test, gcide-test (default: those with data)")
    parser.add_argument("--filters", nargs="+", default=list(FILTERS), choices=FILTERS)
    parser.add_argument("--single-token-words", action="store_true", help="the word head's words only")
    parser.add_argument("--gcide", type=Path, default=GCIDE_DICTD, help="unpacked dict-gcide (scripts/fetch_gcide.sh)")
    parser.add_argument("--weights", nargs="+", default=[], metavar="NAME=VALUE",
                        help="open-vocabulary weights instead of the checkpoint's, e.g. frequency_weight=16")
    parser.add_argument("--out", type=Path, default=None, help="also write the results here as JSON")
    _threads_flag(parser)
    _device_flag(parser)
    args = parser.parse_args(argv)
    set_threads(args.threads)
    engine = Engine.load(args.model, decoder=None, open_vocabulary=False,  # enabled below, in float32
                         device=device_from_flag(parser, args.device))
    try:
        engine.words.config = dataclasses.replace(engine.words.config, **_weights(args.weights))
    except (TypeError, ValueError) as err:
        parser.error(f"--weights: {err}")
    if not args.single_token_words:
        engine.words.set_precision("float32")  # the leak-free indexes drop definitions from float32 vectors
        engine.enable_open_vocabulary(cache_dir=user_cache_dir("open-vocab"), progress=progress("candidates", print),
                                      compact=False)  # the exact vectors, as the app answers once they are in
    gcide = None if args.single_token_words or missing_gcide(args.gcide) else read_gcide_dictd(args.gcide)
    sets = reverse_query_sets(engine, gcide)
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


# ---- data -----------------------------------------------------------------------------------------

@command("dictionary")
def dictionary(argv: Sequence[str]) -> int:
    """Counts and the split report of a dictionary file (default: the shipped WordNet)."""
    from .lexicon.dictionary import WORDNET_PATH, largest_shared_definition_group, load_wordnet, split_by_word

    parser = parser_for("dictionary", dictionary)
    parser.add_argument("file", nargs="?", type=Path, default=WORDNET_PATH, help="gzip JSONL dictionary")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    entries = load_wordnet(args.file)
    print(f"{len(entries)} pairs, {len({entry.word for entry in entries})} words")
    print(f"largest group of words joined by shared definitions: {largest_shared_definition_group(entries)} words")
    print(split_by_word(entries, seed=args.seed).report())
    return 0


@command("corpus-index")
def corpus_index(argv: Sequence[str]) -> int:
    """Embed a sentence file and index it for nearest-neighbour search: the app's corpus sentences.

    python -m core corpus-index                                  # the modern corpus (vec2sent-corpus --modern)
    python -m core corpus-index --corpus FILE --name mine --limit 100000

    One sentence per line. Resumable: a rerun after a kill embeds only the chunks still missing.
    The app offers the index named "modern" (the default) of its model from the user cache as its
    corpus sentences (core/explore/corpus_index.py, docs/results.md)."""
    from .explore.corpus_index import MAX_ROWS, build_corpus_index, index_folder, read_sentences

    parser = parser_for("corpus-index", corpus_index)
    parser.add_argument("--corpus", type=Path, default=MODERN_CORPUS_DIR / "train.txt", help="one sentence a line")
    parser.add_argument("--name", default="modern", help="the collection's name (letters, digits, '-')")
    parser.add_argument("--limit", type=int, default=0, help=f"the first N sentences (0: all, at most {MAX_ROWS:,})")
    parser.add_argument("--model", default=None, help="checkpoint directory (default: the shipped one)")
    parser.add_argument("--out", type=Path, default=None, help="folder (default: the user cache, per model)")
    parser.add_argument("--batch-size", type=int, default=128)
    _threads_flag(parser)
    _device_flag(parser)
    args = parser.parse_args(argv)
    device = device_from_flag(parser, args.device)
    set_threads(args.threads)
    from .checkpoint import CheckpointError
    from .engine import Engine
    try:
        sentences = read_sentences(args.corpus, args.limit)
        engine = Engine.load(args.model, decoder=None, open_vocabulary=False, device=device)
        folder = args.out or index_folder(engine.fingerprint, args.name)
        index = build_corpus_index(lambda texts: engine.encode(texts, batch_size=args.batch_size, normalize=True),
                                   engine.fingerprint, sentences, folder, _stage_progress(), args.name)
    except (CheckpointError, ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{index.name} in {folder} ({index.manifest['seconds']:.0f} s)")
    return 0


@command("vocabulary-map")
def vocabulary_map(argv: Sequence[str]) -> int:
    """Lay out every word of the open vocabulary on one 2-D map, once per model (core/explore/vocabulary_map.py).

    python -m core vocabulary-map                      # the shipped model: UMAP of 147k words, minutes
    python -m core vocabulary-map --model checkpoints/my-words   # a fine-tune: aligned to the shipped map

    A fine-tune's map starts from the shipped model's (or --align-to's) and is mapped onto it, and keeps
    where each of its own words moved (before: where that model read its definitions; after: its place now). Uses the model's exact vectors (embedded first when the user cache has none: minutes). The app's
    Map tab draws the layout as "every word" once it exists."""
    import time

    from .explore.vocabulary_map import lay_out, save_layout, save_moves

    parser = parser_for("vocabulary-map", vocabulary_map)
    parser.add_argument("--model", default=None, help="checkpoint directory (default: the shipped one)")
    parser.add_argument("--align-to", default=None,
                        help="the model whose map this one's is aligned to, with arrows for this model's own "
                             "words (default: the shipped model, for a fine-tune with its own words; 'none')")
    parser.add_argument("--seed", type=int, default=0)
    _threads_flag(parser)
    args = parser.parse_args(argv)
    set_threads(args.threads)
    from .checkpoint import CheckpointError
    from .engine import Engine
    from .words.open_vocab_fit import progress
    from .paths import user_cache_dir
    from .checkpoint import DEFAULT_CHECKPOINT
    started = time.perf_counter()

    def with_vectors(model: str | None) -> Engine:
        engine = Engine.load(model, decoder=None, open_vocabulary=False)
        engine.enable_open_vocabulary(cache_dir=user_cache_dir("open-vocab"), progress=progress("candidates"),
                                      compact=False)
        return engine
    shipped = args.model is None or Path(args.model).resolve() == DEFAULT_CHECKPOINT.resolve()
    try:
        engine = with_vectors(args.model)
        # a fine-tune (a model with its own words) is aligned to the shipped model's map by default
        align_to = args.align_to or (str(DEFAULT_CHECKPOINT) if engine.words.user_dictionary and not shipped else "none")
        parent = with_vectors(align_to) if align_to != "none" else None
        coords, moves = lay_out(engine, parent, args.seed)
        path = engine.vocabulary_layout_path()
        save_layout(coords, path)
        save_moves(moves, path)
    except (CheckpointError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    aligned = f", aligned to {align_to} with {len(moves)} of its own words' moves" if parent is not None else ""
    print(f"{len(engine.words.open_vocab.candidates):,} words laid out in {path}{aligned} "
          f"({time.perf_counter() - started:.0f} s)")
    return 0


def _stage_progress(every: float = 30.0) -> Callable[[str, int, int], None]:
    """A (stage, done, total) callback printing each stage's progress, rate and time left every `every` s."""
    import time
    started: dict[str, tuple[float, int]] = {}
    last = [0.0]

    def report(stage: str, done: int, total: int) -> None:
        begun, first = started.setdefault(stage, (time.monotonic(), done))
        now = time.monotonic()
        if now - last[0] < every and done < total:
            return
        last[0] = now
        rate = (done - first) / max(now - begun, 1e-9)
        left = f", {(total - done) / rate / 60:.1f} min left" if rate > 0 and done < total else ""
        print(f"  {stage}: {done:,}/{total:,} ({rate:,.0f}/s{left})", flush=True)
    return report


def _by_pos(entries) -> str:
    from collections import Counter
    return ", ".join(f"{pos or '?'} {count}" for pos, count in sorted(Counter(e.pos for e in entries).items()))


@command("wordnet")
def wordnet(argv: Sequence[str]) -> int:
    """Build core/data/wordnet.jsonl.gz (and the synsets file) from WordNet 3.0's data.* files (core/lexicon/wordnet.py).

    python -m core wordnet --wordnet-dir data/cache/wordnet-deb/usr/share/wordnet --out core/data/wordnet.jsonl.gz
    """
    from .paths import CORE_DATA_DIR
    from .lexicon.wordnet import write_wordnet

    parser = parser_for("wordnet", wordnet)
    parser.add_argument("--wordnet-dir", type=Path, required=True, help="folder with data.noun, data.verb, ...")
    parser.add_argument("--vocab", type=Path, help="BERT vocab.txt (default: all-MiniLM-L6-v2's)")
    parser.add_argument("--out", type=Path, default=CORE_DATA_DIR / "wordnet.jsonl.gz")
    parser.add_argument("--synsets-out", type=Path,
                        help="every synset with all its lemmas, the open vocabulary (default: "
                             "wordnet-synsets.jsonl.gz beside --out)")
    parser.add_argument("--copyright", type=Path,
                        help="Debian copyright file (default: WORDNET_DIR/../doc/wordnet-base/copyright)")
    args = parser.parse_args(argv)
    synsets, entries = write_wordnet(args.wordnet_dir, args.out, args.vocab, args.synsets_out, args.copyright)
    print(f"{len(synsets)} synsets, {sum(len(s.lemmas) for s in synsets)} lemmas -> {len(entries)} entries "
          f"({len({entry.word for entry in entries})} words; {_by_pos(entries)}) written to {args.out}")
    return 0


@command("gcide")
def gcide(argv: Sequence[str]) -> int:
    """Extra training definitions from GCIDE's dictd files (core/lexicon/gcide.py).

    python -m core gcide --dictd-dir data/cache/deb/gcide/usr/share/dictd --out data/cache/gcide.jsonl.gz
    """
    from .lexicon.gcide import write_gcide

    parser = parser_for("gcide", gcide)
    parser.add_argument("--dictd-dir", type=Path, default=CACHE_DIR / "deb/gcide/usr/share/dictd")
    parser.add_argument("--vocab", type=Path, help="BERT vocab.txt (default: all-MiniLM-L6-v2's)")
    parser.add_argument("--out", type=Path, default=CACHE_DIR / "gcide.jsonl.gz")
    args = parser.parse_args(argv)
    entries = write_gcide(args.dictd_dir, args.out, args.vocab)
    print(f"{len(entries)} entries ({len({e.word for e in entries})} words; {_by_pos(entries)}) written to {args.out}")
    return 0


# ---- Vec2Sent ---------------------------------------------------------------------------------------

@command("vec2sent-corpus")
def vec2sent_corpus(argv: Sequence[str]) -> int:
    """Build the Vec2Sent training corpus from packaged sources (core/corpus/classic.py).

    python -m core vec2sent-corpus --out data/cache/corpus
    python -m core vec2sent-corpus --modern --out data/cache/corpus-modern   # cased, broad (sources.py)
    """
    import json

    from .corpus.classic import TRAIN_ONLY_SOURCES, make_corpus

    parser = parser_for("vec2sent-corpus", vec2sent_corpus)
    parser.add_argument("--out", type=Path, default=None,
                        help=f"default {CORPUS_DIR}, with --modern {MODERN_CORPUS_DIR}")
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
    parser.add_argument("--senteval", type=Path, default=SENTEVAL_DIR)
    parser.add_argument("--test-size", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--train-only", nargs="*", default=[], choices=sorted(TRAIN_ONLY_SOURCES),
                        help="extra sources that add training sentences only (the test set stays the same)")
    args = parser.parse_args(argv)
    if args.modern:
        from .corpus.modern import make_modern_corpus

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


@command("vec2sent-train")
def vec2sent_train(argv: Sequence[str]) -> int:
    """Train a Vec2Sent decoder on one encoder's embeddings of a corpus (core/vec2sent/train.py).

    python -m core vec2sent-train --encoder CKPT --corpus data/cache/corpus --out checkpoints/vec2sent-NAME --minutes 80
    python -m core vec2sent-train --recipe recipes/vec2sent-defsent-minilm.json --out checkpoints/NAME   # the shipped one
    """
    from .runtime.device import OutOfDeviceMemory, resolve_precision
    from .vec2sent.train import TrainSettings

    parser = vec2sent_train_parser()
    args = parse_with_recipe(parser, argv)
    set_threads(args.threads)
    from .vec2sent.encoder_link import link_engine
    from .vec2sent.train import RUNS_DIR, read_corpus, train_for_encoder

    device = device_from_flag(parser, args.device)
    settings = config_from_flags(TrainSettings, args, precision=resolve_precision(args.precision, device),
                                 device=str(device))
    sentences, corpus = read_corpus(args.corpus, args.corpus_sentences)
    link = link_engine(args.encoder, batch_size=128, precision=args.encoder_precision, device=device)
    try:
        stats = train_for_encoder(sentences, link, args.out, _decoder_overrides(args), settings,
                                  init=args.init, corpus=corpus,
                                  run_dir=args.run_dir or RUNS_DIR / args.out.name, resume=args.resume)
    except OutOfDeviceMemory as err:
        print(f"error: {err} (the last checkpoint written stays whole; --resume goes on from it)", file=sys.stderr)
        return 2
    print(f"{stats.steps} steps, {stats.epochs:.2f} epochs, {stats.sentences_per_second:.0f} sentences/s, "
          f"final loss {stats.curve[-1]['loss']}; saved {args.out}")
    return 0


def _decoder_overrides(args: argparse.Namespace) -> dict:
    """The decoder's config fields from the flags: the transformer's size comes from --base."""
    from .vec2sent.model import Vec2SentConfig

    if args.architecture == "transformer":
        return {"architecture": "transformer", "base": args.base, "prefix_length": args.prefix_length,
                "dropout": args.dropout}
    skipped = {"vocab_size", "sent_dim"}  # from the corpus and the encoder
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(Vec2SentConfig) if f.name not in skipped}


def vec2sent_train_parser() -> argparse.ArgumentParser:
    """The flags of `python -m core vec2sent-train` (TrainSettings' and Vec2SentConfig's among them)."""
    from .checkpoint import DEFAULT_BASE
    from .vec2sent.model import Vec2SentConfig
    from .vec2sent.train import TrainSettings

    parser = parser_for("vec2sent-train", vec2sent_train)
    parser.add_argument("--encoder", type=Path, required=True, help="encoder checkpoint (core.engine)")
    parser.add_argument("--corpus", type=Path, default=MODERN_CORPUS_DIR)
    parser.add_argument("--corpus-sentences", type=int, default=0,
                        help="train on the first N sentences of the corpus (its train.txt is shuffled), to embed "
                             "and train within a budget (0: all)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--init", type=Path, help="start from this decoder, e.g. the decoder of the encoder "
                        "this one was fine-tuned or blended from (another corpus' pieces are mapped)")
    add_config_flags(parser, TrainSettings, skip=("precision", "device"))
    _device_flag(parser)
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
    _threads_flag(parser, default=1, note="; decoder training: 2 threads measured 2.5x slower beside another job")
    return parser


@command("vec2sent-diagnostics")
def vec2sent_diagnostics(argv: Sequence[str]) -> int:
    """Vec2Sent diagnostics: Id, PERM, BLEU and the word-head round trip (core/vec2sent/diagnostics.py).

    python -m core vec2sent-diagnostics --decoder CKPT --encoder CKPT --test data/cache/corpus-modern/heldout.jsonl
    """
    from .vec2sent.refine import CorrectSettings

    parser = parser_for("vec2sent-diagnostics", vec2sent_diagnostics)
    parser.add_argument("--decoder", type=Path, required=True)
    parser.add_argument("--encoder", type=Path, required=True)
    parser.add_argument("--test", type=Path, required=True,
                        help="one sentence a line, or a .jsonl file of {\"text\", \"genre\"} (scores by genre too)")
    parser.add_argument("--limit", type=int, default=1000, help="first N test sentences")
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 4], help="beam widths (1 = greedy)")
    parser.add_argument("--alpha", type=float, default=0.6, help="length normalisation exponent")
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
    _threads_flag(parser, default=1)
    parser.add_argument("--precision", default="auto", choices=PRECISIONS,
                        help="decoder weights (auto: int8 where torch can; see load_checkpoint)")
    parser.add_argument("--encoder-precision", default="float32", choices=TRAINING_PRECISIONS,
                        help="the encoder's, for the test vectors, reranking and refining (the app: bfloat16)")
    _device_flag(parser)
    args = parser.parse_args(argv)
    set_threads(args.threads)
    device = device_from_flag(parser, args.device)
    from .vec2sent.checkpoint import load_checkpoint, mean_cosine
    from .vec2sent.diagnostics import (decodings, format_table, read_test_sentences, round_trip_agreement,
                                       score_reconstructions)
    from .vec2sent.encoder_link import link_engine

    link = link_engine(args.encoder, precision=args.encoder_precision, device=device)
    decoder = load_checkpoint(args.decoder, encoder_fingerprint=link.fingerprint, precision=args.precision,
                              device=device)
    references, genres = read_test_sentences(args.test, args.limit)
    vectors = link.encode(references)
    rows, by_genre = {}, {}
    correct = None if args.correct is None else CorrectSettings(args.correct, args.correct_step)
    for width in args.beams:
        for name, (hypotheses, seconds) in decodings(decoder, link, vectors, width, args.alpha,
                                                     args.rerank, args.refine, correct).items():
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
