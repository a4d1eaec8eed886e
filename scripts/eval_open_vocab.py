"""Fit, tune and evaluate the open-vocabulary reverse dictionary (core/open_vocab.py).

    python scripts/eval_open_vocab.py                      # evaluate the shipped model as it is
    python scripts/eval_open_vocab.py --fit --write        # the recipe: fit the word map on the
                                                           # training split, choose the weights on dev,
                                                           # store both in the checkpoint, evaluate
    python scripts/eval_open_vocab.py --tune --write       # choose the weights again, keep the map

Splits: WordNet over all 147k lemmas, extending the model's own training split
(`core.dictionary.extend_split`), so no evaluated text was trained on. WordNet dev and test are
scored with a definition index that leaves out every dev and test text (leak-free: held-out words
are found only through their own embedding). GCIDE: definitions of the held-out words written by
another dictionary, scored with the product's index (all WordNet definitions), the closest thing
to a person's description. Vectors are cached in data/cache/open-vocab.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import Engine  # noqa: E402
from core.dictionary import Entry, extend_split, load_wordnet, load_wordnet_lemmas, split_by_word  # noqa: E402
from core.gcide import read_gcide  # noqa: E402
from core.open_vocab import OpenScorer, WordMapConfig, fit_word_map  # noqa: E402
from core.word_eval import rank_of_gold  # noqa: E402

CACHE = Path("data/cache/open-vocab")
TUNE_SIZE = 3000  # dev definitions scored per weight setting (a fixed sample)


def main() -> None:
    args = parse_args()
    engine = Engine.load(args.model, decoder=None, precision="auto")  # bfloat16 encoding where native
    engine.set_scoring_precision("float32")  # the float32 scorer can be re-weighted and re-indexed
    started = time.time()
    engine.enable_open_vocabulary(cache_dir=CACHE, progress=_progress("candidates and definitions"))
    scorer = engine.open_vocab
    words = scorer.candidates.words
    print(f"{len(words)} candidates ({int(scorer.candidates.single_token.sum())} single-token), "
          f"{len(scorer.candidates.definitions)} definitions ({time.time() - started:.0f} s)", flush=True)
    split = extend_split(split_by_word(load_wordnet(), seed=engine.manifest.get("training", {}).get("split_seed", 0)),
                         load_wordnet_lemmas())
    sets = query_sets(split, set(words), args.gcide)
    queries = {name: Queries(engine, name, entries, words) for name, entries in sets.items()}
    leak_free = scorer.without_definitions(e.definition for e in split.dev + split.test)
    if args.fit:
        train = Queries(engine, "wordnet-train", split.train, words)
        engine.open_vocab_map = fit_word_map(train.vectors, train.gold, scorer.word_vectors, WordMapConfig(),
                                             lambda epoch, loss: print(f"word map epoch {epoch}: loss {loss:.3f}", flush=True))
    if args.fit or args.tune:
        engine.open_vocab_config = choose_weights(engine, queries, args)
    config = engine.open_vocab_config
    results = {"config": asdict(config), "word_map": engine.open_vocab_map is not None}
    for name, query in queries.items():
        if name not in args.sets:
            continue
        index = rebuilt(leak_free if name.startswith("wordnet") else scorer, config, engine.open_vocab_map)
        results[name] = query.report(index)
        print(name, json.dumps(results[name]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    if args.write:
        engine.save_word_scoring(args.model, metrics={"open_vocab": {k: results[k]["all"] for k in queries}})
        print(f"wrote the word map and weights into {args.model}")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", type=Path, default=Path("checkpoints/defsent-minilm"))
    p.add_argument("--gcide", type=Path, default=Path("data/cache/deb/gcide/usr/share/dictd"),
                   help="unpacked dict-gcide (scripts/fetch_gcide.sh)")
    p.add_argument("--fit", action="store_true", help="fit the word map and choose the weights on dev")
    p.add_argument("--tune", action="store_true", help="choose the weights on dev (the checkpoint's map)")
    p.add_argument("--write", action="store_true", help="store the map and weights in --model's checkpoint")
    p.add_argument("--word-scales", type=float, nargs="+", default=[45, 60, 80, 100])
    p.add_argument("--head-weights", type=float, nargs="+", default=[0.5, 0.75])
    p.add_argument("--biases", type=float, nargs="+", default=[4, 6, 8])
    p.add_argument("--definition-weights", type=float, nargs="+", default=[0, 80, 160, 320, 640])
    p.add_argument("--sets", nargs="+", default=["wordnet-dev", "wordnet-test", "gcide-dev", "gcide-test"],
                   help="which query sets to report")
    p.add_argument("--out", type=Path, default=Path("results/open_vocab.json"))
    args = p.parse_args()
    if args.write and not (args.fit or args.tune):
        p.error("--write stores what --fit or --tune finds: give one of them")
    return args


def query_sets(split, candidates: set[str], gcide_dir: Path) -> dict[str, list[Entry]]:
    gcide = read_gcide(gcide_dir, None)
    dev_words, test_words = ({e.word for e in part} for part in (split.dev, split.test))
    return {"wordnet-dev": split.dev, "wordnet-test": split.test,
            "gcide-dev": [e for e in gcide if e.word in dev_words and e.word in candidates],
            "gcide-test": [e for e in gcide if e.word in test_words and e.word in candidates]}


class Queries:
    """Definitions with their embeddings (cached per model and set), engine token scores and gold rows."""

    def __init__(self, engine: Engine, name: str, entries: list[Entry], words: list[str]):
        path = CACHE / f"{engine.fingerprint[:12]}-{name}-{len(entries)}.npy"
        if not path.exists():
            CACHE.mkdir(parents=True, exist_ok=True)
            np.save(path, engine.encode([e.definition for e in entries], batch_size=128, progress=_progress(name)))
        self.vectors = torch.from_numpy(np.load(path))  # (n, d)
        self.engine = engine
        index = {w: i for i, w in enumerate(words)}
        self.gold = torch.tensor([index[e.word] for e in entries])  # (n,)

    def ranks(self, scorer: OpenScorer, rows: torch.Tensor | None = None) -> torch.Tensor:
        rows = torch.arange(len(self.gold)) if rows is None else rows
        out = []
        for batch in rows.split(512):
            u = self.vectors[batch]
            out.append(rank_of_gold(scorer.scores(u, self.engine.word_logits(u)), self.gold[batch]))
        return torch.cat(out)

    def report(self, scorer: OpenScorer, rows: torch.Tensor | None = None) -> dict:
        ranks = self.ranks(scorer, rows)
        gold = self.gold if rows is None else self.gold[rows]
        multi = torch.from_numpy(~scorer.candidates.single_token)[gold]
        return {"all": metrics(ranks), "single_token": metrics(ranks[~multi]), "multi_token": metrics(ranks[multi])}


def metrics(ranks: torch.Tensor) -> dict:
    r = ranks.float()
    if not len(r):
        return {"n": 0}
    return {"n": len(r), "mrr": round(float((1 / r).mean()), 4),
            **{f"acc@{k}": round(float((r <= k).float().mean()), 4) for k in (1, 10, 100)},
            "median_rank": float(r.median())}


def rebuilt(scorer: OpenScorer, config, word_map) -> OpenScorer:
    """`scorer`'s vectors and definition index with other weights and word map."""
    other = OpenScorer(scorer.candidates, scorer.word_vectors, torch.zeros(0, scorer.word_vectors.shape[1]),
                       config, word_map)
    other.definition_vectors, other._pairs = scorer.definition_vectors, scorer._pairs
    other._products["definition"] = scorer._products["definition"]
    return other


def choose_weights(engine: Engine, queries: dict, args):
    """word_scale, head_weight and multi_bias by WordNet dev MRR (definition channel off: held-out
    words have no definition in the leak-free index), then definition_weight by GCIDE dev MRR."""
    scorer = engine.open_vocab
    sample = {name: torch.randperm(len(q.gold), generator=torch.Generator().manual_seed(0))[:TUNE_SIZE]
              for name, q in queries.items()}
    best = None
    for scale, head, bias in itertools.product(args.word_scales, args.head_weights, args.biases):
        config = replace(engine.open_vocab_config, word_scale=scale, head_weight=head, multi_bias=bias,
                         definition_weight=0.0)
        mrr = queries["wordnet-dev"].report(rebuilt(scorer, config, engine.open_vocab_map),
                                            sample["wordnet-dev"])["all"]["mrr"]
        print(f"wordnet-dev word scale {scale} head weight {head} bias {bias}: MRR {mrr:.4f}", flush=True)
        best = max(best or (mrr, config), (mrr, config), key=lambda t: t[0])
    chosen = best[1]
    best = None
    for weight in args.definition_weights:
        config = replace(chosen, definition_weight=weight)
        mrr = queries["gcide-dev"].report(rebuilt(scorer, config, engine.open_vocab_map), sample["gcide-dev"])["all"]["mrr"]
        print(f"gcide-dev definition weight {weight}: MRR {mrr:.4f}", flush=True)
        best = max(best or (mrr, config), (mrr, config), key=lambda t: t[0])
    print("chosen:", best[1], flush=True)
    return best[1]


def _progress(what: str):
    last = [0.0]

    def report(done: int, total: int) -> None:
        if time.time() - last[0] > 30 or done == total:
            last[0] = time.time()
            print(f"  embedding {what}: {done}/{total}", flush=True)
    return report


if __name__ == "__main__":
    main()
