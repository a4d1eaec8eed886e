"""Probe (not shipped): GCIDE's glosses as more texts for the definition channel (issue 38). People
describe a word in words that one dictionary's gloss may miss and another's may hold ("Something that
shines" -> bright; GCIDE: "Radiating or reflecting light; shining"). Judged on the 179 human
descriptions (../shared/data/human-descriptions, dev only), with the dictionary sets as guards.

    score = shipped(c) + weight * max(0, gcide(c) - max(floor, wordnet(c)))

where shipped is the app's ranking score (`WordScorer.scores`), gcide(c) the highest cosine between the
description and a GCIDE gloss of c, and wordnet(c) the same over c's WordNet glosses (the definition
channel): a GCIDE gloss counts where it says what the description says better than WordNet's. Only
candidates in some query's first `--pool` answers are rescored (their glosses embedded once), so ranks
past the pool stay as they were. Guards (`--guards`): DefSent's Table 6, and samples of the WordNet test's
multi-token words and of the GCIDE test, scored with their leak-free indexes and without any GCIDE gloss
of a dev or test word (as if those words were unseen in both dictionaries).

    python -m research.gcide_gloss_probe --pool 100                 # the human dev set: the grid
    python -m research.gcide_gloss_probe --pool 50 --guards 300     # and the guards, at the best points
"""
from __future__ import annotations

import contextlib
import itertools

import torch

from core import Engine
from core.evaluation.reverse import reverse_query_sets, scored_with, summary
from core.lexicon.dictionary import lemma_split
from core.words.open_vocab_fit import read_gcide_dictd
from research.base_channel_probe import ranks
from research.human_fusion_probe import channels, guard_samples, probe_arguments, probe_engine

WEIGHTS = (0, 1, 2, 4, 8, 16, 32)
FLOORS = (0.0, 0.5, 0.6, 0.65, 0.7, 0.75)
GUARD_POINTS = ((0, 0.0), (1, 0.0), (2, 0.0), (2, 0.5), (4, 0.0), (4, 0.5))


def scored(engine: Engine, queries, index, glosses: dict[str, list[str]], pool: int):
    """(shipped (B, C), gcide cosine (B, C), -inf where unscored, channels) of `queries` under `index`."""
    with scored_with(engine, index) if index is not None else contextlib.nullcontext():
        scorer = engine.words.open_vocab
        ch = channels(engine, queries, scorer)
        texts = [q.text for q in queries]
        shipped = engine.words.scores(engine.encode(texts)).scores  # (B, C)
    unit = torch.nn.functional.normalize(torch.from_numpy(engine.encode(texts)), dim=1)  # (B, d)
    words = scorer.candidates.words
    rows = sorted(set((shipped + ch.blocked).topk(pool).indices.flatten().tolist()))
    flat = [(i, g) for i in rows for g in glosses.get(words[i], ())]
    print(f"{len(rows):,} pooled candidates, {len(flat):,} GCIDE glosses", flush=True)
    gcide = torch.full_like(shipped, float("-inf"))
    if flat:
        cos = unit @ torch.from_numpy(engine.encode([g for _, g in flat], normalize=True)).T  # (B, G)
        owner = torch.tensor([i for i, _ in flat])
        for b in range(len(texts)):
            gcide[b].scatter_reduce_(0, owner, cos[b], reduce="amax")
    return shipped, gcide, ch


def with_bonus(shipped, gcide, ch, weight: float, floor: float):
    return ranks(shipped + weight * (gcide - ch.definition.clamp(min=floor)).clamp(min=0).nan_to_num(neginf=0.0), ch)


def main() -> None:
    args = probe_arguments()
    engine = probe_engine(args.model)
    gcide = read_gcide_dictd()
    glosses: dict[str, list[str]] = {}
    for entry in gcide:
        glosses.setdefault(entry.word, []).append(entry.definition)
    sets = reverse_query_sets(engine, gcide)
    queries, _ = sets["human-dev"]
    human = scored(engine, queries, None, glosses, args.pool)
    print("shipped", summary(ranks(human[0], human[2])))
    for weight, floor in itertools.product(WEIGHTS, FLOORS):
        print(weight, floor, summary(with_bonus(*human, weight, floor)), flush=True)
    if not args.guards:
        return
    seed = int(engine.manifest.get("training", {}).get("split_seed", 0))
    split = lemma_split(seed)
    unseen = {e.word for e in split.dev + split.test}
    seen_glosses = {w: g for w, g in glosses.items() if w not in unseen}
    for name, (guard_queries, index) in guard_samples(engine, sets, args.guards).items():
        inputs = scored(engine, guard_queries, index, seen_glosses, args.pool)
        for weight, floor in GUARD_POINTS:
            print(name, weight, floor, summary(with_bonus(*inputs, weight, floor)), flush=True)


if __name__ == "__main__":
    main()
