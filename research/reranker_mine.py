"""Probe (not shipped yet): the training and dev lists of a reranker over the open vocabulary's first
answers (issue 38, item 3). For each query, the shipped first stage's top `--pool` candidates, the
gold's place among them (-1: not there) and, per candidate, the gloss that reads closest to the query
(the one a reader would check against it).

Training queries never come from the human dev set or a dev/test word: GCIDE's senses of WordNet
*train* words (another dictionary's wording: a paraphrase of the glosses the candidates show), common
words first (people describe common words), at most `--senses` per word, each scored with an index
that leaves out its near copies (core/words/open_vocab_fit.near_copies). The human dev set is mined
alike (its own words left out, as the app does) for choosing the fusion weight.

Still open (docs/results.md, "A cross-encoder reranker"): lists mined from descriptions in a person's words, the
feature norms of issue 53 (`--descriptions`, a description<TAB>word a line), were not tried.

    python -m research.reranker_mine --queries 16000 --out data/cache/reranker/lists.pt
"""
from __future__ import annotations

import argparse
import random
from pathlib import Path

import numpy as np
import torch

from core import Engine
from core.evaluation.reverse import read_human_descriptions
from core.lexicon.dictionary import Entry, definition_key, lemma_split
from core.paths import user_cache_dir
from core.text import singular
from core.words.open_vocab_fit import GCIDE_DICTD, near_copies, read_gcide_dictd


def probe_engine(model: str) -> Engine:
    """`model` answering from its open vocabulary in float32 (vectors from Engine.load's cache), as the
    issue-38 probes scored it (`git show 666302e:research/human_fusion_probe.py`, where this came from)."""
    engine = Engine.load(model, decoder=None)
    engine.words.set_precision("float32")
    engine.vocabulary.enable(cache_dir=user_cache_dir("open-vocab"))
    return engine


def training_queries(scorer, gcide: list[Entry], count: int, senses: int, min_zipf: float) -> list[Entry]:
    """GCIDE senses of WordNet train words that are candidates, common words only, `senses` a word."""
    split = lemma_split()
    train_words = {e.word for e in split.train}
    row = {w: i for i, w in enumerate(scorer.candidates.words)}
    zipf = scorer.candidates.zipf
    taken: dict[str, int] = {}
    out = []
    for e in gcide:
        if e.word in train_words and e.word in row and zipf[row[e.word]] >= min_zipf \
                and taken.get(e.word, 0) < senses and 3 <= len(e.definition.split()) <= 40:
            taken[e.word] = taken.get(e.word, 0) + 1
            out.append(e)
    random.Random(0).shuffle(out)
    return out[:count]


def word_definitions(candidates) -> list[np.ndarray]:
    """defs[i]: the definition ids of candidate i."""
    order = np.argsort(candidates.pair_word, kind="stable")
    bounds = np.searchsorted(candidates.pair_word[order], np.arange(len(candidates) + 1))
    return [candidates.pair_definition[order[a:b]] for a, b in zip(bounds[:-1], bounds[1:])]


def mine(engine, texts: list[str], golds: list[list[str]], dropped: set[str], pool: int, batch: int = 64) -> dict:
    """The first stage's lists for `texts` (definition texts in `dropped` never vote nor show)."""
    full = engine.words.open_vocab
    cands = full.candidates
    row = {w: i for i, w in enumerate(cands.words)}
    defs = word_definitions(cands)
    dropped_keys = {definition_key(t) for t in dropped}
    blocked = torch.tensor([definition_key(d) in dropped_keys for d in cands.definitions])  # (G,)
    engine.words.open_vocab = full.without_definitions(dropped) if dropped else full
    rows, gold_at, glosses = [], [], []
    try:
        for start in range(0, len(texts), batch):
            chunk = texts[start:start + batch]
            u = engine.encode(chunk)
            scored = engine.words.scores(u, exclude_words_of=chunk)
            s = scored.scores.masked_fill(~scored.allowed, float("-inf"))  # (B, C)
            top = s.topk(pool).indices  # (B, K)
            cos = full.cosines(torch.nn.functional.normalize(torch.from_numpy(u), dim=1), "definition")  # (B, G)
            cos[:, blocked] = -2.0
            for b, candidates in enumerate(top.tolist()):
                gold = [row[w] for w in golds[start + b] if w in row]
                gold_at.append(next((k for k, c in enumerate(candidates) if c in gold), -1))
                rows.append(candidates)
                glosses.append([_closest(defs[c], cos[b]) for c in candidates])
            print(f"{start + len(chunk)}/{len(texts)}", flush=True)
    finally:
        engine.words.open_vocab = full
    return {"texts": texts, "golds": golds, "rows": torch.tensor(rows), "gold_at": torch.tensor(gold_at),
            "glosses": torch.tensor(glosses)}


def _closest(definition_ids: np.ndarray, cos: torch.Tensor) -> int:
    """The definition of `definition_ids` closest to the query (-1: none left)."""
    if not len(definition_ids):
        return -1
    values = cos[torch.from_numpy(definition_ids)]
    best = int(values.argmax())
    return int(definition_ids[best]) if values[best] > -2 else -1


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="checkpoints/defsent-minilm")
    p.add_argument("--queries", type=int, default=16000)
    p.add_argument("--senses", type=int, default=2)
    p.add_argument("--min-zipf", type=float, default=3.0)
    p.add_argument("--pool", type=int, default=30)
    p.add_argument("--gcide", type=Path, default=GCIDE_DICTD)
    p.add_argument("--descriptions", type=Path, help="train on these description<TAB>word lines instead of GCIDE "
                   "(research/lm_descriptions.py at 666302e)")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    engine = probe_engine(args.model)
    human = read_human_descriptions()
    out = {"human": mine(engine, [q.text for q in human], [[q.word, singular(q.word)] for q in human], set(),
                         args.pool)}
    print("human gold within the pool:", float((out["human"]["gold_at"] >= 0).float().mean()))
    if args.descriptions:  # not glosses: no dictionary text copies them
        train, copies = [Entry(w, t) for t, w in (line.split("\t") for line in
                                                  args.descriptions.read_text(encoding="utf-8").splitlines())], set()
    else:
        train = training_queries(engine.words.open_vocab, read_gcide_dictd(args.gcide), args.queries, args.senses,
                                 args.min_zipf)
        copies = near_copies(train, engine.words.open_vocab.candidates)
    out["train"] = mine(engine, [e.definition for e in train], [[e.word] for e in train], copies, args.pool)
    at = out["train"]["gold_at"]
    print("train gold within the pool:", float((at >= 0).float().mean()), "first:", float((at == 0).float().mean()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(out, args.out)


if __name__ == "__main__":
    main()
