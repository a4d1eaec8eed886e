"""GCIDE dev MRR of the shipped open vocabulary at definition weights beyond the recipe's grid, the
other weights kept (not shipped; docs/training.md). Reads the vector caches that
scripts/eval_open_vocab.py writes.

    python research/open_vocab_definition_weights.py [--weights 640 960 1280 1920 2560 5120]
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import Engine  # noqa: E402
from core.dictionary import extend_split, load_wordnet, load_wordnet_lemmas, split_by_word  # noqa: E402
from core.open_vocab_fit import Queries, WeightGrid, near_copies, query_sets, read_gcide_dictd  # noqa: E402

CACHE = Path("data/cache/open-vocab")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", type=Path, default=Path("checkpoints/defsent-minilm"))
    p.add_argument("--weights", type=float, nargs="+", default=[640, 960, 1280, 1920, 2560, 5120])
    args = p.parse_args()
    engine = Engine.load(args.model, decoder=None, precision="auto")
    engine.set_scoring_precision("float32")
    engine.enable_open_vocabulary(cache_dir=CACHE)
    scorer = engine.open_vocab
    seed = engine.manifest.get("training", {}).get("split_seed", 0)
    split = extend_split(split_by_word(load_wordnet(), seed=seed), load_wordnet_lemmas())
    sets = query_sets(split, set(scorer.candidates.words), read_gcide_dictd())
    index = scorer.without_definitions(near_copies(sets["gcide-dev"] + sets["gcide-test"], scorer.candidates))
    dev = Queries(engine, "gcide-dev", sets["gcide-dev"], scorer.candidates.words, CACHE)
    sample = torch.randperm(len(dev), generator=torch.Generator().manual_seed(0))[:WeightGrid().sample]  # as the fit
    for weight in args.weights:
        config = replace(index.config, definition_weight=weight)
        print(f"definition weight {weight:g}: {dev.report(index.with_config(config), sample)['all']}", flush=True)


if __name__ == "__main__":
    main()
