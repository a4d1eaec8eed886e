"""Fit, tune and evaluate the open-vocabulary reverse dictionary (core/words/open_vocab.py).

    python scripts/eval_open_vocab.py                      # evaluate the shipped model as it is
    python scripts/eval_open_vocab.py --fit --write        # train the word tower on the training split and
                                                           # choose the weights on dev again, store both
                                                           # in the checkpoint, evaluate (`python -m core
                                                           # train` does this at its end)
    python scripts/eval_open_vocab.py --tune --write       # choose the weights again, keep the tower

The fit, the weight choice and the evaluation are `core.words.open_vocab_fit.fit_open_vocabulary` (its
docstring says which split and index each set is scored with); this script picks the sets, writes
the JSON report and, with --write, the checkpoint. Vectors are cached in data/cache/open-vocab.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from core import Engine
from core.lexicon.dictionary import load_wordnet, split_by_word
from core.words.open_vocab_fit import (GCIDE_DICTD, QUERY_SETS, WeightGrid, fit_open_vocabulary,
                                 overall, read_gcide_dictd)

CACHE = Path("data/cache/open-vocab")


def main() -> None:
    args = parse_args()
    gcide = read_gcide_dictd(args.gcide)
    engine = Engine.load(args.model, decoder=None, precision="auto")  # bfloat16 encoding where native
    split = split_by_word(load_wordnet(), seed=engine.manifest.get("training", {}).get("split_seed", 0))
    grid = WeightGrid(tuple(args.word_scales), tuple(args.head_weights), tuple(args.biases),
                      tuple(args.definition_weights))
    results = fit_open_vocabulary(engine, split, gcide, fit_tower=args.fit, choose=args.fit or args.tune, grid=grid,
                                  report=args.sets, cache_dir=CACHE, say=lambda line: print(line, flush=True))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    if args.write:
        engine.save_word_scoring(args.model, metrics={"open_vocab": overall(results)})
        print(f"wrote the word tower and weights into {args.model}")


def parse_args() -> argparse.Namespace:
    grid = WeightGrid()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", type=Path, default=Path("checkpoints/defsent-minilm"))
    p.add_argument("--gcide", type=Path, default=GCIDE_DICTD, help="unpacked dict-gcide (scripts/fetch_gcide.sh)")
    p.add_argument("--fit", action="store_true", help="train the word tower and choose the weights on dev")
    p.add_argument("--tune", action="store_true", help="choose the weights on dev (the checkpoint's tower)")
    p.add_argument("--write", action="store_true", help="store the tower and weights in --model's checkpoint")
    p.add_argument("--word-scales", type=float, nargs="+", default=list(grid.word_scales))
    p.add_argument("--head-weights", type=float, nargs="+", default=list(grid.head_weights))
    p.add_argument("--biases", type=float, nargs="+", default=list(grid.biases))
    p.add_argument("--definition-weights", type=float, nargs="+", default=list(grid.definition_weights))
    p.add_argument("--sets", nargs="+", default=list(QUERY_SETS), choices=QUERY_SETS, help="which query sets to report")
    p.add_argument("--out", type=Path, default=Path("results/open_vocab.json"))
    args = p.parse_args()
    if args.write and not (args.fit or args.tune):
        p.error("--write stores what --fit or --tune finds: give one of them")
    return args


if __name__ == "__main__":
    main()
