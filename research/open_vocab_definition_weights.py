"""GCIDE dev MRR of the shipped open vocabulary at definition weights beyond the recipe's grid, the
other weights kept (not shipped; docs/training.md). Reads the vector caches that
scripts/eval_open_vocab.py writes.

    python research/open_vocab_definition_weights.py [--weights 640 960 1280 1920 2560 5120]
"""
from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import torch

from core.words.open_vocab_fit import Queries, WeightGrid, near_copies
from research.open_vocab_hubs import CACHE, open_vocabulary_and_queries


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", type=Path, default=Path("checkpoints/defsent-minilm"))
    p.add_argument("--weights", type=float, nargs="+", default=[640, 960, 1280, 1920, 2560, 5120])
    args = p.parse_args()
    engine, _, sets = open_vocabulary_and_queries(args.model)
    scorer = engine.words.open_vocab
    index = scorer.without_definitions(near_copies(sets["gcide-dev"] + sets["gcide-test"], scorer.candidates))
    dev = Queries(engine, "gcide-dev", sets["gcide-dev"], scorer.candidates.words, CACHE)
    sample = torch.randperm(len(dev), generator=torch.Generator().manual_seed(0))[:WeightGrid().sample]  # as the fit
    for weight in args.weights:
        config = replace(index.config, definition_weight=weight)
        print(f"definition weight {weight:g}: {dev.report(index.with_config(config), sample)['all']}", flush=True)


if __name__ == "__main__":
    main()
