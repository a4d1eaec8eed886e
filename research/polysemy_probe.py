"""Probe (not shipped): a penalty (or, negative, a bonus) on how many glosses a candidate has, on the app's
score (issue 38): the definition channel takes the best of a word's glosses, so words with many glosses
("fox": .62 for "a large grey animal with a trunk", elephant .44) get more chances.

    score = shipped(c) - weight * log(number of glosses of c)

Judged on the 179 human descriptions (dev only).

    python -m research.polysemy_probe
"""
from __future__ import annotations

import numpy as np
import torch

from core.evaluation.reverse import read_human_descriptions, summary
from research.base_channel_probe import ranks
from research.human_fusion_probe import channels, probe_arguments, probe_engine

WEIGHTS = (-0.5, -0.25, -0.1, 0, 0.25, 0.5, 1, 2)


def main() -> None:
    args = probe_arguments(pool=False)
    engine = probe_engine(args.model)
    candidates = engine.words.open_vocab.candidates
    glosses = torch.from_numpy(np.bincount(candidates.pair_word, minlength=len(candidates))).float()  # (C,)
    queries = read_human_descriptions()
    ch = channels(engine, queries, engine.words.open_vocab)
    shipped = engine.words.scores(engine.encode([q.text for q in queries])).scores  # (B, C)
    for weight in WEIGHTS:
        print("human-dev", weight, summary(ranks(shipped - weight * glosses.log(), ch)), flush=True)


if __name__ == "__main__":
    main()
