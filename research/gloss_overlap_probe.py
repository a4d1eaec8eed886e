"""Probe (not shipped): the words a description shares with a candidate's own glosses, as a bonus on the
app's score (issue 38's reranker item, its cheapest form). People often reuse a gloss's words ("an
unmarried woman" -> miss: "a form of address for an unmarried woman"), which a sentence vector blurs.

    score = shipped(c) + weight * overlap(c)

overlap(c): the idf-weighted share of the description's content words (stopwords out, crude suffixes
stripped) found in some gloss of c, under the index the query is scored with (a guard's leak-free index
holds none of its test word's glosses). Only candidates in a query's first `--pool` answers get a bonus.
Judged on the 179 human descriptions (dev only), guards as in research/gcide_gloss_probe.py.

    python -m research.gloss_overlap_probe --pool 100 --guards 300
"""
from __future__ import annotations

import contextlib
import math
import re
from collections import Counter

import torch

from core import Engine
from core.evaluation.reverse import reverse_query_sets, scored_with, summary
from core.words.open_vocab_fit import read_gcide_dictd
from research.base_channel_probe import ranks
from research.human_fusion_probe import channels, guard_samples, probe_arguments, probe_engine

WEIGHTS = (0, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16)
GUARD_WEIGHTS = (0, 1, 2, 4)
UNSEEN_IDF = 10.0
STOPWORDS = set("""a an the of to and or in on at for with by from as is are be been being that which who whom
whose what when where how it its this these those something someone somebody anything thing one ones you your
we our they their he his she her i my me not no very so such than then there do does did done have has had
can may might must will would shall should into out up down over under about more most some any all
""".split())


def stem(word: str) -> str:
    for suffix in ("ingly", "edly", "ing", "ed", "ies", "es", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content(text: str) -> set[str]:
    return {stem(w) for w in re.findall(r"[a-z]+", text.lower()) if w not in STOPWORDS and len(w) > 1}


def overlaps(engine: Engine, texts: list[str], shipped: torch.Tensor, blocked: torch.Tensor, pool: int) -> torch.Tensor:
    """(B, C) overlap of each description with the glosses of its first `pool` candidates (0 elsewhere)."""
    cands = engine.words.open_vocab.candidates
    gloss_words = [content(d) for d in cands.definitions]
    df = Counter(w for words in gloss_words for w in words)
    idf = {w: math.log(len(gloss_words) / n) for w, n in df.items()}
    by_word: dict[int, set[str]] = {}
    for g, i in zip(cands.pair_definition.tolist(), cands.pair_word.tolist()):
        by_word.setdefault(i, set()).update(gloss_words[g])
    out = torch.zeros_like(shipped)
    top = (shipped + blocked).topk(pool).indices
    for b, text in enumerate(texts):
        query = content(text)
        # a word no gloss holds counts as the rarest (log of 117k glosses is 11.7): it cannot match anyway
        total = sum(idf.get(w, UNSEEN_IDF) for w in query) or 1.0
        for i in top[b].tolist():
            out[b, i] = sum(idf.get(w, UNSEEN_IDF) for w in query & by_word.get(i, set())) / total
    return out


def scored(engine: Engine, queries, index, pool: int):
    with scored_with(engine, index) if index is not None else contextlib.nullcontext():
        ch = channels(engine, queries, engine.words.open_vocab)
        texts = [q.text for q in queries]
        shipped = engine.words.scores(engine.encode(texts)).scores  # (B, C)
        return shipped, overlaps(engine, texts, shipped, ch.blocked, pool), ch


def main() -> None:
    args = probe_arguments()
    engine = probe_engine(args.model)
    sets = reverse_query_sets(engine, read_gcide_dictd() if args.guards else None)
    shipped, overlap, ch = scored(engine, sets["human-dev"][0], None, args.pool)
    for weight in WEIGHTS:
        print("human-dev", weight, summary(ranks(shipped + weight * overlap, ch)), flush=True)
    if not args.guards:
        return
    for name, (queries, index) in guard_samples(engine, sets, args.guards).items():
        shipped, overlap, ch = scored(engine, queries, index, args.pool)
        for weight in GUARD_WEIGHTS:
            print(name, weight, summary(ranks(shipped + weight * overlap, ch)), flush=True)


if __name__ == "__main__":
    main()
