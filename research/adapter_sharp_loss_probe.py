"""Issue 53: the everyday adapter trained through the everyday expert's own, sharp softmax (measured).

The first adapter (core/words/adapter_fit.py) learned through the whole mixture at its temperature 64,
whose softmax is so flat that a perfect everyday answer moves log p(word) by a few nats: the loss went
from 7.33 to 7.06 in 600 steps and the human dev set barely moved (docs/results.md, "People's words").
Here the same adapter, data and steps learn through the mixture with the everyday expert's share near 1
and a temperature of `--train-temperature` (`AdapterFitConfig.train_temperature`, now 16 by default), and
are then measured in the shipped mixture, as the app answers (compact vectors, float32).

    python -m research.adapter_sharp_loss_probe --vectors V.npy [--steps 600] [--train-temperature 1]

V.npy: every norms description embedded by the shipped encoder, in `read_norms()` order (float32, (n, d)).
"""
from __future__ import annotations

import argparse
import random

import numpy as np
import torch

from core.checkpoint import DEFAULT_CHECKPOINT
from core.engine import Engine
from core.evaluation.reverse import DEFSENT_TABLE6, Query, ranks, read_human_descriptions
from core.lexicon.norms import read_norms, split_norm_words
from core.words.adapter_fit import AdapterFitConfig, train_everyday_adapter


def line(r: np.ndarray) -> str:
    return f"{np.mean(r <= 1):.3f} / {np.mean(r <= 10):.3f} / MRR {np.mean(1 / r):.4f} / median {np.median(r):.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vectors", required=True)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--train-temperature", type=float, default=1.0)
    parser.add_argument("--heldout-sample", type=int, default=300)
    args = parser.parse_args()
    engine = Engine.load(DEFAULT_CHECKPOINT, decoder=None)  # the shipped compact vectors, float32
    engine.words.set_precision("float32")
    engine.enable_open_vocabulary()
    descriptions, vectors = read_norms(), np.load(args.vectors)
    human, words = read_human_descriptions(), {d.word for d in descriptions}
    held_out = split_norm_words(words, 0).held_out
    held = [Query(d.text, d.word) for d in descriptions if d.word in held_out]
    sets = {"human-dev": human, "human-dev/in-norms": [q for q in human if q.word in words],
            "human-dev/not-in-norms": [q for q in human if q.word not in words],
            "norms-heldout": random.Random(0).sample(held, args.heldout_sample),
            "defsent-table6": [Query(d, w) for w, d in DEFSENT_TABLE6]}
    with torch.no_grad():
        before = {name: ranks(engine, queries) for name, queries in sets.items()}
    config = AdapterFitConfig(steps=args.steps, lr=args.lr, measured=200, eval_every=args.steps,
                              train_temperature=args.train_temperature)  # measured in the app's mixture
    train_everyday_adapter(engine, descriptions, vectors, config=config)
    with torch.no_grad():
        for name, queries in sets.items():
            print(f"{name:24} before {line(before[name])}   after {line(ranks(engine, queries))} (n {len(queries)})",
                  flush=True)


if __name__ == "__main__":
    main()
