"""Evaluate the open-vocabulary reverse dictionary (core/open_vocab.py) and choose its weights on dev.

    python scripts/eval_open_vocab.py --model checkpoints/defsent-minilm

WordNet: the split over all 147k lemmas that extends the model's own training split
(`core.dictionary.extend_split`), so no evaluated text was trained on; the definition index leaves
out every dev and test text. GCIDE: definitions of the held-out words from another dictionary, with
the definition index of the product (all WordNet definitions). Vectors are cached in data/cache.
"""
from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np
import torch

from core import Engine
from core.dictionary import extend_split, load_wordnet, load_wordnet_lemmas, split_by_word
from core.gcide import read_gcide
from core.open_vocab import Candidates, OpenScorer, OpenVocabConfig
from core.word_eval import rank_of_gold

CACHE = Path("data/cache/open-vocab")


def cached(name: str, compute) -> torch.Tensor:
    path = CACHE / f"{name}.npy"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, compute())
    return torch.from_numpy(np.load(path))


def metrics(ranks: torch.Tensor) -> dict:
    r = ranks.float()
    return {"n": len(r), "mrr": round(float((1 / r).mean()), 4),
            **{f"acc@{k}": round(float((r <= k).float().mean()), 4) for k in (1, 10, 100)},
            "median_rank": float(r.median())}


def report(ranks: torch.Tensor, multi: torch.Tensor) -> dict:
    return {"all": metrics(ranks), "single_token": metrics(ranks[~multi]), "multi_token": metrics(ranks[multi])}


def ranks_for(scorer: OpenScorer, u: torch.Tensor, logits: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    out = []
    for start in range(0, len(gold), 512):
        s = slice(start, start + 512)
        out.append(rank_of_gold(scorer.scores(u[s], logits[s]), gold[s]))
    return torch.cat(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="checkpoints/defsent-minilm")
    p.add_argument("--gcide", type=Path, default=Path("data/cache/deb/gcide/usr/share/dictd"))
    p.add_argument("--biases", type=float, nargs="+", default=[-6, -4, -2, 0, 2])
    p.add_argument("--weights", type=float, nargs="+", default=[0, 5, 10, 20, 40])
    p.add_argument("--out", type=Path, default=Path("results/open_vocab.json"))
    args = p.parse_args()
    engine = Engine.load(args.model, decoder=None, precision="auto")
    tag = engine.fingerprint[:12]
    candidates = Candidates(load_wordnet_lemmas(), engine.vocab)
    index_of = {w: i for i, w in enumerate(candidates.words)}
    print(f"{len(candidates)} candidates ({int(candidates.single_token.sum())} single-token), "
          f"{len(candidates.definitions)} definitions")
    words = cached(f"{tag}-words-{candidates.fingerprint()}", lambda: engine.encode(candidates.words, batch_size=256))
    defs = cached(f"{tag}-defs-{candidates.fingerprint()}", lambda: engine.encode(candidates.definitions, batch_size=128))
    scorer = OpenScorer(candidates, words, defs, engine.word_vectors.scale)
    split = extend_split(split_by_word(load_wordnet(), seed=engine.manifest.get("training", {}).get("split_seed", 0)),
                         load_wordnet_lemmas())
    held_out = [e.definition for e in split.dev + split.test]
    leak_free = scorer.without_definitions(held_out)
    sets = {"wordnet-dev": split.dev, "wordnet-test": split.test}
    gcide = read_gcide(args.gcide, None)
    gcide_dev, gcide_test = ({e.word for e in part} for part in (split.dev, split.test))
    sets["gcide-dev"] = [e for e in gcide if e.word in gcide_dev and e.word in index_of]
    sets["gcide-test"] = [e for e in gcide if e.word in gcide_test and e.word in index_of]
    data = {}
    for name, entries in sets.items():
        u = cached(f"{tag}-{name}-{len(entries)}", lambda: engine.encode([e.definition for e in entries]))
        logits = torch.cat([engine.word_logits(u[i:i + 512]) for i in range(0, len(u), 512)])
        gold = torch.tensor([index_of[e.word] for e in entries])
        data[name] = (u, logits, gold, torch.from_numpy(~candidates.single_token[gold.numpy()]))
    results = {"grid": {}}
    for bias, weight in itertools.product(args.biases, args.weights):
        config = OpenVocabConfig(bias, weight)
        for name, index in (("wordnet-dev", leak_free), ("gcide-dev", scorer)):
            u, logits, gold, multi = data[name]
            r = report(ranks_for(index.with_config(config), u, logits, gold), multi)
            results["grid"][f"{name} bias={bias} weight={weight}"] = r
            print(name, bias, weight, {k: (v["mrr"], v["acc@1"], v["acc@10"]) for k, v in r.items()}, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
