"""Probe (not shipped): does the base encoder (all-MiniLM-L6-v2 before DefSent training) read people's
descriptions better, as a third channel beside the shipped mixture? Judged on the 179 human
descriptions (../shared/data/human-descriptions, dev only; issue 38).

    score = shipped(c) + base_word_weight * cos_base(q, c) + base_definition_weight * max_d cos_base(q, d)

where shipped is the app's ranking score (`WordScorer.scores`) and cos_base reads the description, the
candidate and its glosses with the base encoder (its open vocabulary embedded once, minutes, cached).

    python -m research.base_channel_probe
"""
from __future__ import annotations

import argparse
import itertools

import torch

from core import Engine
from core.evaluation.reverse import reverse_query_sets, summary
from core.paths import user_cache_dir
from core.words.open_vocab_fit import read_gcide_dictd
from research.human_fusion_probe import channels

WEIGHTS = (0, 2, 4, 8, 16, 32, 64)


def ranks(score: torch.Tensor, ch) -> torch.Tensor:
    """(B,) rank of each query's word (its best form) under `score` (B, C), the query's words blocked."""
    s = score + ch.blocked
    gold = s.gather(1, ch.gold_rows).masked_fill(ch.gold_rows_missing, float("-inf")).amax(1)
    r = (s > gold[:, None]).sum(1).float() + 1
    return r.masked_fill(gold == float("-inf"), 1000).clamp(max=1000)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="checkpoints/defsent-minilm")
    args = p.parse_args()
    engine = Engine.load(args.model, decoder=None)
    engine.words.set_precision("float32")
    engine.enable_open_vocabulary(cache_dir=user_cache_dir("open-vocab"))
    base = Engine.load(args.model, decoder=None, untrained=True)
    base.words.set_precision("float32")
    base.enable_open_vocabulary(cache_dir=user_cache_dir("open-vocab"),
                                progress=lambda done, total: print(f"\rbase: {done:,}/{total:,}", end="", flush=True))
    print()
    assert base.words.open_vocab.candidates.words == engine.words.open_vocab.candidates.words
    queries, _ = reverse_query_sets(engine, read_gcide_dictd())["human-dev"]
    ch = channels(engine, queries, engine.words.open_vocab)
    texts = [q.text for q in queries]
    shipped = engine.words.scores(engine.encode(texts)).scores  # (B, C)
    unit = torch.nn.functional.normalize(torch.from_numpy(base.encode(texts)), dim=1)  # (B, d)
    scorer = base.words.open_vocab
    base_word = scorer._cos(unit, "word")  # (B, C)
    base_definition = scorer.definition_scores(unit, fallback=base_word)  # (B, C)
    print("shipped", summary(ranks(shipped, ch)))
    print("base word alone", summary(ranks(base_word, ch)))
    print("base definition alone", summary(ranks(base_definition, ch)))
    for a, b in itertools.product(WEIGHTS, WEIGHTS):
        print(a, b, summary(ranks(shipped + a * base_word + b * base_definition, ch)), flush=True)


if __name__ == "__main__":
    main()
