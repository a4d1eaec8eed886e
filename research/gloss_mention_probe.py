"""Probe (not shipped): the words that the glosses of a description's own words mention, as a bonus on the
app's score (issue 38). "a large grey animal with a trunk": WordNet's glosses of trunk say "a long
flexible snout as of an elephant", while elephant's own glosses ("five-toed pachyderm") say nothing of a
trunk, so neither the sentence vector nor a gloss of elephant finds it.

    score = shipped(c) + weight * mention(c)

mention(c): the idf-weighted share of the description's content words (research/gloss_overlap_probe.py's
`content`) one of whose WordNet glosses names c (a one-word candidate, matched by the same crude stem). A
description's text is never a gloss here (a dictionary guard's query is some word's gloss). Judged on the
179 human descriptions (dev only), guards as in research/gloss_overlap_probe.py.

    python -m research.gloss_mention_probe --guards 300
"""
from __future__ import annotations

import contextlib
import math
from collections import Counter

import torch

from core.evaluation.reverse import reverse_query_sets, scored_with, summary
from core.lexicon.dictionary import definition_key
from core.words.open_vocab_fit import read_gcide_dictd
from research.base_channel_probe import ranks
from research.gloss_overlap_probe import content, stem
from research.human_fusion_probe import channels, guard_samples, probe_arguments, probe_engine

WEIGHTS = (0, 0.25, 0.5, 1, 2, 4, 8)
GUARD_WEIGHTS = (0, 0.5, 1, 2, 4)


class Mentions:
    """Which one-word candidates the glosses of each word name."""

    def __init__(self, candidates):
        self.candidates = candidates
        rows_of_stem: dict[str, list[int]] = {}
        for i, word in enumerate(candidates.words):
            if word.isalpha():
                rows_of_stem.setdefault(stem(word), []).append(i)
        self.named = [frozenset(r for w in content(d) for r in rows_of_stem.get(w, ())) for d in candidates.definitions]
        self.keys = [definition_key(d) for d in candidates.definitions]
        self.glosses_of: dict[str, list[int]] = {}  # stem of a word -> its definitions
        for g, i in zip(candidates.pair_definition.tolist(), candidates.pair_word.tolist()):
            if candidates.words[i].isalpha():
                self.glosses_of.setdefault(stem(candidates.words[i]), []).append(g)
        df = Counter(w for words in map(content, candidates.definitions) for w in words)
        self.idf = {w: math.log(len(candidates.definitions) / n) for w, n in df.items()}

    def scores(self, texts: list[str]) -> torch.Tensor:
        """(B, C) mention(c) of each description."""
        out = torch.zeros(len(texts), len(self.candidates))
        for b, text in enumerate(texts):
            words = content(text)
            total = sum(self.idf.get(w, 10.0) for w in words) or 1.0
            own = definition_key(text)
            for w in words:
                named = set().union(*(self.named[g] for g in self.glosses_of.get(w, ()) if self.keys[g] != own))
                if named:
                    out[b, list(named)] += self.idf.get(w, 10.0) / total
        return out


def scored(engine, mentions: Mentions, queries, index):
    with scored_with(engine, index) if index is not None else contextlib.nullcontext():
        ch = channels(engine, queries, engine.words.open_vocab)
        texts = [q.text for q in queries]
        return engine.words.scores(engine.encode(texts)).scores, mentions.scores(texts), ch


def main() -> None:
    args = probe_arguments(pool=False)
    engine = probe_engine(args.model)
    mentions = Mentions(engine.words.open_vocab.candidates)
    sets = reverse_query_sets(engine, read_gcide_dictd() if args.guards else None)
    shipped, mention, ch = scored(engine, mentions, sets["human-dev"][0], None)
    for weight in WEIGHTS:
        print("human-dev", weight, summary(ranks(shipped + weight * mention, ch)), flush=True)
    if not args.guards:
        return
    for name, (queries, index) in guard_samples(engine, sets, args.guards).items():
        shipped, mention, ch = scored(engine, mentions, queries, index)
        for weight in GUARD_WEIGHTS:
            print(name, weight, summary(ranks(shipped + weight * mention, ch)), flush=True)


if __name__ == "__main__":
    main()
