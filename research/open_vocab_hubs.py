"""Does a hubness correction of the open vocabulary's channels help (not shipped)? CSLS-style: a
definition's cosine with the query less `a` times its mean cosine with its k nearest reference
queries (WordNet training definitions other than itself), and the same for the word channel with
weight `b`. Chosen on GCIDE dev (3,000 definitions), then scored on GCIDE test and WordNet test
(definition channel off) with the checkpoint's weights.

    python research/open_vocab_hubs.py [--model checkpoints/defsent-minilm] [--references 20000] [--k 10]
"""
from __future__ import annotations

import argparse
import itertools
from dataclasses import replace
from pathlib import Path

import torch

from core import Engine
from core.lexicon.dictionary import DictionarySplit, definition_key, lemma_split
from core.words.open_vocab_fit import Queries, metrics, near_copies, query_sets, read_gcide_dictd
from core.words.word_eval import rank_of_gold

CACHE = Path("data/cache/open-vocab")


def open_vocabulary_and_queries(model: Path) -> tuple[Engine, DictionarySplit, dict[str, list]]:
    """`model` with its float32 open vocabulary (vectors from CACHE), its split over all lemmas and
    the query sets of `core.words.open_vocab_fit.query_sets`."""
    engine = Engine.load(model, decoder=None, precision="auto")
    engine.words.set_precision("float32")
    engine.enable_open_vocabulary(cache_dir=CACHE)
    seed = engine.manifest.get("training", {}).get("split_seed", 0)
    split = lemma_split(seed)
    return engine, split, query_sets(split, set(engine.words.open_vocab.candidates.words), read_gcide_dictd())


def neighbourhood(targets: torch.Tensor, references: torch.Tensor, k: int) -> torch.Tensor:
    """(T,) mean cosine of each unit row of `targets` with its k nearest unit `references`, a
    reference equal to the target (cosine > .999) left out."""
    out = []
    for chunk in targets.split(4096):
        cos = chunk @ references.T  # (t, R)
        cos[cos > 0.999] = -1.0
        out.append(cos.topk(k, dim=1).values.mean(1))
    return torch.cat(out)


@torch.inference_mode()
def corrected_ranks(scorer, queries: Queries, rows: torch.Tensor, r_def: torch.Tensor, r_word: torch.Tensor,
                     a: float, b: float) -> torch.Tensor:
    """(n,) ranks of the gold words with both channels hubness-corrected. A candidate without a
    definition falls back on its corrected word cosine (lowered by b, not by a). Needs a float32
    scorer (`engine.words.set_precision("float32")`) of a word-tower checkpoint."""
    config = scorer.config
    definitions, words = scorer._pairs
    ranks = []
    for batch in rows.split(512):
        u = queries.vectors[batch]  # (b, d)
        out = scorer.with_config(replace(config, definition_weight=0.0)).scores(u, queries.engine.words.logits(u))
        out -= config.word_scale * b * r_word  # (b, C)
        if config.definition_weight:
            unit = torch.nn.functional.normalize(u.float(), dim=1)
            word = unit @ scorer._products["word"] - b * r_word  # (b, C): the fallback
            cos = unit @ scorer._products["definition"] - a * r_def  # (b, G)
            best = word.clone().scatter_reduce(1, words.expand(len(batch), -1), cos[:, definitions], "amax",
                                               include_self=False)
            out += config.definition_weight * best
        ranks.append(rank_of_gold(out, queries.gold[batch]))
    return torch.cat(ranks)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", type=Path, default=Path("checkpoints/defsent-minilm"))
    p.add_argument("--references", type=int, default=20000)
    p.add_argument("--k", type=int, default=10)
    args = p.parse_args()
    torch.manual_seed(0)
    engine, split, sets = open_vocabulary_and_queries(args.model)
    scorer = engine.words.open_vocab
    words = scorer.candidates.words
    train = Queries(engine, "wordnet-train", split.train, words, CACHE)
    refs = torch.nn.functional.normalize(train.vectors[torch.randperm(len(train))[:args.references]].float(), dim=1)
    r_def = neighbourhood(scorer.definition_vectors, refs, args.k)  # (G,)
    r_word = neighbourhood(scorer.word_vectors, refs, args.k)  # (C,)
    print(f"r_def mean {r_def.mean():.3f} sd {r_def.std():.3f}; r_word mean {r_word.mean():.3f} sd {r_word.std():.3f}",
          flush=True)
    copied_texts = near_copies(sets["gcide-dev"] + sets["gcide-test"], scorer.candidates)
    gcide_index = scorer.without_definitions(copied_texts)
    copies = {definition_key(t) for t in copied_texts}
    r_def_gcide = r_def[torch.tensor([definition_key(d) not in copies for d in scorer.candidates.definitions])]
    dev = Queries(engine, "gcide-dev", sets["gcide-dev"], words, CACHE)
    test = Queries(engine, "gcide-test", sets["gcide-test"], words, CACHE)
    sample = torch.randperm(len(dev), generator=torch.Generator().manual_seed(0))[:3000]
    best = None
    for a, b in itertools.product((0.0, 0.25, 0.5, 0.75, 1.0), (0.0, 0.25, 0.5, 1.0)):
        m = metrics(corrected_ranks(gcide_index, dev, sample, r_def_gcide, r_word, a, b))
        print(f"gcide-dev a {a} b {b}: {m}", flush=True)
        if best is None or m["mrr"] > best[0]:
            best = (m["mrr"], a, b)
    _, a, b = best
    all_rows = torch.arange(len(test))
    print(f"chosen a {a} b {b}")
    print("gcide-test baseline:", metrics(corrected_ranks(gcide_index, test, all_rows, r_def_gcide, r_word, 0, 0)))
    print("gcide-test corrected:", metrics(corrected_ranks(gcide_index, test, all_rows, r_def_gcide, r_word, a, b)))
    if b:  # the word channel's correction also changes the leak-free WordNet test
        wn = Queries(engine, "wordnet-test", split.test, words, CACHE)
        off = gcide_index.with_config(replace(gcide_index.config, definition_weight=0.0))
        rows = torch.arange(len(wn))
        for b_ in (0.0, b):
            print(f"wordnet-test, definition channel off, b {b_}:",
                  metrics(corrected_ranks(off, wn, rows, r_def_gcide, r_word, 0, b_)))


if __name__ == "__main__":
    main()
