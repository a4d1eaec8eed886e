"""Probe (not shipped): a ceiling on the word prior (issue 38). The prior lifts the most common words
("be", "go", "get", "well", "big": Zipf 6-7) above the word people meant ("take one's place" -> bring, be,
go, ...; replace 12th); capped at `cap`, every word at least that common gets the same lift.

    python -m research.zipf_cap_probe             # the human dev set (179, dev only)
    python -m research.zipf_cap_probe --guards 300
"""
from __future__ import annotations

import contextlib

from core.evaluation.reverse import reverse_query_sets, scored_with, summary
from core.words.open_vocab_fit import read_gcide_dictd
from research.base_channel_probe import ranks
from research.human_fusion_probe import channels, guard_samples, probe_arguments, probe_engine

CAPS = (None, 6.5, 6.0, 5.5, 5.0, 4.5)


def main() -> None:
    args = probe_arguments(pool=False)
    engine = probe_engine(args.model)
    sets = reverse_query_sets(engine, read_gcide_dictd() if args.guards else None)
    chosen = {"human-dev": sets["human-dev"], **(guard_samples(engine, sets, args.guards) if args.guards else {})}
    for name, (queries, index) in chosen.items():
        with scored_with(engine, index) if index is not None else contextlib.nullcontext():
            scorer = engine.words.open_vocab
            prior, ch, vectors = scorer.prior, channels(engine, queries, scorer), engine.encode([q.text for q in queries])
            for cap in CAPS:
                scorer.prior = prior if cap is None else prior.clamp(max=cap)
                print(name, cap, summary(ranks(engine.words.scores(vectors).scores, ch)), flush=True)
            scorer.prior = prior


if __name__ == "__main__":
    main()
