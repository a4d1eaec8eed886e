"""Probe (not shipped): fusing the open vocabulary's channels with the single-token head and a word
prior, judged on the 179 human descriptions (../shared/data/human-descriptions, dev only; issue 38).

Every channel is computed once per query for all 147k candidates, then weights are tried on those:
    score = word_scale * word + head_weight * head[single] + multi_bias [multi]
            + definition_weight * definition + frequency_weight * zipf(c) + phrase_bias * [c has a space]
Ranks follow the app's default (the description's own words left out); a word that is not a
candidate counts as found through its singular ("facts" -> fact); missing: rank 1000.

    python research/human_fusion_probe.py            # the grid on the human dev set, then the guards
"""
from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from core import Engine
from core.text import query_words, singular
from core.evaluation.reverse import MAX_RANK, Query, reverse_query_sets, summary
from core.words.open_vocab_fit import read_gcide_dictd
from core.paths import user_cache_dir
from core.words.word_prior import zipf_frequencies



@dataclass
class Channels:
    """Per query (B, C) channels of every candidate, and per candidate (C,) features."""
    word: torch.Tensor
    head: torch.Tensor  # token logits where the candidate is one token, 0 elsewhere
    definition: torch.Tensor
    single: torch.Tensor  # (C,) bool
    zipf: torch.Tensor  # (C,)
    phrase: torch.Tensor  # (C,) bool
    blocked: torch.Tensor  # (B, C): -inf for the query's own words, else 0
    gold_rows: torch.Tensor  # (B, 2) the candidate rows that count as its word (padded with row 0)
    gold_rows_missing: torch.Tensor  # (B, 2) True where that row is padding


def channels(engine: Engine, queries: list[Query], scorer) -> Channels:
    """The channels of `queries` under `scorer` (the engine's open vocabulary or a leak-free index)."""
    queries = [(q.text, q.word) for q in queries]
    cands = scorer.candidates
    index = {w: i for i, w in enumerate(cands.words)}
    u = torch.from_numpy(engine.encode([t for t, _ in queries]))
    unit = torch.nn.functional.normalize(u, dim=1)
    word = scorer._cos(unit, "word")
    definition = scorer.definition_scores(unit, fallback=word)
    head = torch.zeros_like(word)
    head[:, scorer.single] = engine.words.logits(u)[:, scorer.single_tokens]
    allowed = torch.ones_like(word, dtype=torch.bool)
    for i, (text, _) in enumerate(queries):
        for w in query_words(text):
            if w in index:
                allowed[i, index[w]] = False
    gold = [[index[w] for w in dict.fromkeys([word_, singular(word_)]) if w in index] for _, word_ in queries]
    gold_rows = torch.tensor([(g + [0, 0])[:2] for g in gold])
    missing = torch.tensor([[j >= len(g) for j in range(2)] for g in gold])
    zipf = torch.from_numpy(zipf_frequencies(cands.words))
    phrase = torch.tensor([(" " in w or "-" in w) for w in cands.words])
    blocked = torch.zeros_like(word).masked_fill(~allowed, float("-inf"))
    return Channels(word, head, definition, torch.from_numpy(cands.single_token), zipf, phrase, blocked, gold_rows,
                    missing)


def ranks(ch: Channels, w: dict) -> torch.Tensor:
    """(B,) rank of each query's word (the best of its forms) under the weights `w`."""
    s = (w["word_scale"] * ch.word + w["head_weight"] * ch.head + w["definition_weight"] * ch.definition
         + (w["frequency_weight"] * ch.zipf + w["phrase_bias"] * ch.phrase.float()
            + w["multi_bias"] * (~ch.single).float()) + ch.blocked)  # (B, C)
    gold = s.gather(1, ch.gold_rows).masked_fill(ch.gold_rows_missing, float("-inf")).amax(1)  # (B,)
    r = (s > gold[:, None]).sum(1).float() + 1
    return r.masked_fill(gold == float("-inf"), MAX_RANK).clamp(max=MAX_RANK)


GUARD_SAMPLE = 600  # queries of each dictionary set (fixed seed): enough to see a guard move


def probe_engine(model: str) -> Engine:
    """`model` answering from its open vocabulary in float32 (vectors from Engine.load's cache): what the
    probes score."""
    engine = Engine.load(model, decoder=None)
    engine.words.set_precision("float32")
    engine.enable_open_vocabulary(cache_dir=user_cache_dir("open-vocab"))
    return engine


def probe_arguments(pool: bool = True) -> argparse.Namespace:
    """A probe's command line: --model, --guards and (with `pool`: it rescores the first answers) --pool."""
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="checkpoints/defsent-minilm")
    if pool:
        p.add_argument("--pool", type=int, default=100, help="first answers of each query rescored")
    p.add_argument("--guards", type=int, default=0, help="queries of each dictionary guard sample (0: none)")
    return p.parse_args()


def guard_samples(engine: Engine, sets: dict, size: int) -> dict:
    """The dictionary guards, {name: (queries, their index)}: DefSent's Table 6 whole, then `size` random
    (seed 0) multi-token WordNet-test queries and as many GCIDE-test ones (when `sets` has them)."""
    rng = random.Random(0)
    multi = [q for q in sets["wordnet-test"][0] if " " in q.word or engine.words.vocab.token_id(q.word) is None]
    guards = {"defsent-table6": sets["defsent-table6"],
              "wordnet-multi": (rng.sample(multi, size), sets["wordnet-test"][1])}
    if "gcide-test" in sets:
        guards["gcide-test"] = (rng.sample(sets["gcide-test"][0], size), sets["gcide-test"][1])
    return guards


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="checkpoints/defsent-minilm")
    p.add_argument("--save", type=Path, default=None, help="also save the channels here (torch.save)")
    args = p.parse_args()
    engine = probe_engine(args.model)
    config = engine.words.config
    print("shipped config", config)
    sets = reverse_query_sets(engine, read_gcide_dictd())
    chosen = {"human-dev": sets["human-dev"], **guard_samples(engine, sets, GUARD_SAMPLE)}
    ch = {name: channels(engine, queries, index or engine.words.open_vocab) for name, (queries, index) in chosen.items()}
    if args.save:
        torch.save(ch, args.save)
    base = {"word_scale": config.word_scale, "head_weight": config.head_weight, "multi_bias": config.multi_bias,
            "definition_weight": config.definition_weight, "frequency_weight": 0.0, "phrase_bias": 0.0}
    floor = {name: summary(ranks(ch[name], base)) for name in ("defsent-table6", "wordnet-multi", "gcide-test")}
    print("app today", {name: summary(ranks(c, base)) for name, c in ch.items()})
    head_only = {**base, "word_scale": 0.0, "head_weight": 1.0, "multi_bias": -1e4, "definition_weight": 0.0}
    print("single-token words by the head's score", summary(ranks(ch["human-dev"], head_only)))
    best = coordinate_search(ch, base, GRID, guarded(floor))
    print("chosen", best, {name: summary(ranks(c, best)) for name, c in ch.items()})


def guarded(floor: dict) -> Callable[[dict], bool]:
    """Whether the guards hold: Table 6 top-3 and the dictionary samples' acc@10 no lower than today's."""
    def holds(results: dict) -> bool:
        return (results["defsent-table6"]["acc@3"] >= floor["defsent-table6"]["acc@3"]
                and all(results[name]["acc@10"] >= floor[name]["acc@10"] - 0.01 for name in ("wordnet-multi", "gcide-test")))
    return holds


GRID = {"frequency_weight": (0, 2, 4, 8, 12, 16, 24, 32, 48), "head_weight": (0.5, 1, 2, 4, 6, 8, 12, 16),
        "multi_bias": (-48, -32, -24, -16, -8, 0, 6), "definition_weight": (0, 80, 160, 320, 640),
        "word_scale": (40, 80, 160, 240, 320, 480), "phrase_bias": (-8, 0, 4, 8, 16, 24)}


def coordinate_search(ch: dict, start: dict, grid: dict, holds: Callable[[dict], bool], passes: int = 3) -> dict:
    """Each weight in turn set to its grid value of best human-dev MRR among those where the guards
    hold, the others held; `passes` rounds."""
    best = dict(start)
    for round_ in range(passes):
        for name, values in grid.items():
            scored = []
            for v in values:
                weights = {**best, name: v}
                results = {set_name: summary(ranks(c, weights)) for set_name, c in ch.items()}
                if holds(results):
                    scored.append((results["human-dev"]["mrr"], v))
            if scored:
                mrr, best[name] = max(scored)
                print(f"pass {round_ + 1} {name}: {best[name]} (MRR {mrr:.4f})", flush=True)
    return best


if __name__ == "__main__":
    main()
