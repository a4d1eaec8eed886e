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
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import Engine  # noqa: E402
from core.engine import _words_in, singular  # noqa: E402
from core.word_prior import zipf_frequencies  # noqa: E402

HUMAN = Path(__file__).resolve().parents[2] / "shared" / "data" / "human-descriptions" / "thorat2016.tsv"
CACHE = Path("data/cache/open-vocab")
MISSING_RANK = 1000


@dataclass
class Channels:
    """Per query (B, C) channels of every candidate, and per candidate (C,) features."""
    word: torch.Tensor
    head: torch.Tensor  # token logits where the candidate is one token, 0 elsewhere
    definition: torch.Tensor
    single: torch.Tensor  # (C,) bool
    zipf: torch.Tensor  # (C,)
    phrase: torch.Tensor  # (C,) bool
    allowed: torch.Tensor  # (B, C) bool: not one of the query's own words
    gold: list[list[int]]  # per query, the candidate rows that count as its word


def read_human(path: Path = HUMAN) -> list[tuple[str, str]]:
    rows = [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(text, word.strip().lower()) for text, word in rows]


def channels(engine: Engine, queries: list[tuple[str, str]]) -> Channels:
    scorer = engine.open_vocab
    cands = scorer.candidates
    index = {w: i for i, w in enumerate(cands.words)}
    u = torch.from_numpy(engine.encode([t for t, _ in queries]))
    unit = torch.nn.functional.normalize(u, dim=1)
    word = scorer._cos(unit, "word")
    definition = scorer.definition_scores(unit, fallback=word)
    head = torch.zeros_like(word)
    head[:, scorer.single] = engine.word_logits(u)[:, scorer.single_tokens]
    allowed = torch.ones_like(word, dtype=torch.bool)
    for i, (text, _) in enumerate(queries):
        for w in _words_in(text):
            if w in index:
                allowed[i, index[w]] = False
    gold = [[index[w] for w in dict.fromkeys([word_, singular(word_)]) if w in index] for _, word_ in queries]
    zipf = torch.from_numpy(zipf_frequencies(cands.words))
    phrase = torch.tensor([(" " in w or "-" in w) for w in cands.words])
    return Channels(word, head, definition, torch.from_numpy(cands.single_token), zipf, phrase, allowed, gold)


def ranks(ch: Channels, w: dict) -> torch.Tensor:
    s = (w["word_scale"] * ch.word + w["head_weight"] * ch.head + w["definition_weight"] * ch.definition
         + w["frequency_weight"] * ch.zipf + w["phrase_bias"] * ch.phrase.float())
    s[:, ~ch.single] += w["multi_bias"]
    s = s.masked_fill(~ch.allowed, float("-inf"))
    out = []
    for i, rows in enumerate(ch.gold):
        if not rows:
            out.append(MISSING_RANK)
            continue
        best = s[i, rows].max()
        out.append(min(int((s[i] > best).sum()) + 1, MISSING_RANK))
    return torch.tensor(out, dtype=torch.float)


def summary(r: torch.Tensor) -> dict:
    return {"acc@1": round(float((r <= 1).float().mean()), 3), "acc@3": round(float((r <= 3).float().mean()), 3),
            "acc@10": round(float((r <= 10).float().mean()), 3), "acc@100": round(float((r <= 100).float().mean()), 3),
            "mrr": round(float((1 / r).mean()), 4), "median": float(r.median())}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="checkpoints/defsent-minilm")
    args = p.parse_args()
    engine = Engine.load(args.model, decoder=None)
    engine.set_scoring_precision("float32")
    engine.enable_open_vocabulary(cache_dir=CACHE)
    config = engine.open_vocab_config
    print("shipped config", config)
    ch = channels(engine, read_human())
    print("missing gold:", sum(not g for g in ch.gold))
    base = {"word_scale": config.word_scale, "head_weight": config.head_weight, "multi_bias": config.multi_bias,
            "definition_weight": config.definition_weight, "frequency_weight": 0.0, "phrase_bias": 0.0}
    print("app today", summary(ranks(ch, base)))
    results = []
    for ws, hw, mb, dw, fw, pb in itertools.product((40, 80, 160), (0.5, 1, 2, 4), (-8, -4, 0, 4, 8),
                                                    (0, 80, 160, 320, 640), (0, 2, 4, 8, 16), (0,)):
        w = dict(word_scale=ws, head_weight=hw, multi_bias=mb, definition_weight=dw, frequency_weight=fw,
                 phrase_bias=pb)
        results.append((summary(ranks(ch, w)), w))
    results.sort(key=lambda x: (-x[0]["mrr"]))
    for s, w in results[:15]:
        print(s, w)


if __name__ == "__main__":
    main()
