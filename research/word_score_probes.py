"""Probes of the reverse dictionary's ranking on the WordNet dev split: ideas measured, not shipped.

    python research/word_score_probes.py --other-encoder data/cache/all-mpnet-base-v2   # scripts/fetch_mpnet.sh
    python research/word_score_probes.py --templates "{} (a word)" "the word for {}"
    python research/word_score_probes.py --query-word-penalty 0 1 2 1e9

- --other-encoder DIR: another sentence encoder's own word-vector ranking, cos(enc(definition),
  enc(word)), alone, and added to the shipped ranking with weight lambda (how much a distillation
  teacher could add);
- --templates: the definition wrapped in a template, alone and with its logits added to the plain ones;
- --query-word-penalty: lower the score of the words the definition itself contains.
Results (docs/training.md, "What was tried") are dev MRR and top-10 over all whole-word candidates.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import torch

from core import Engine
from core.lexicon.dictionary import load_wordnet, split_by_word
from core.encoder import SentenceEncoder
from core.words.word_eval import definition_pairs, metrics_from_ranks, rank_of_gold


def candidate_scores(engine: Engine, texts: list[str]) -> torch.Tensor:
    """The shipped ranking's scores (n, V), -1e9 for tokens that are not whole-word candidates."""
    logits = engine.words.logits(engine.encode(texts, batch_size=128))
    return logits.masked_fill(~torch.from_numpy(engine.words.vocab.candidate_mask), -1e9)


def show(name: str, logits: torch.Tensor, gold: torch.Tensor) -> None:
    m = metrics_from_ranks(rank_of_gold(logits, gold))
    print(f"| {name} | {m['mrr']:.4f} | {m['top10']:.4f} |", flush=True)


def other_encoder(engine: Engine, texts: list[str], shipped: torch.Tensor, gold: torch.Tensor,
                  path: str, lambdas: list[float]) -> None:
    encoder, _ = SentenceEncoder.from_pretrained(path, pooling="mean")
    encoder.set_precision("auto")
    words = [w or "" for w in engine.words.vocab.words]
    ids = np.flatnonzero(engine.words.vocab.candidate_mask)
    definitions = encoder.encode(texts, batch_size=128, normalize=True)  # (n, H)
    vectors = encoder.encode([words[i] for i in ids], batch_size=256, normalize=True)  # (C, H)
    other = torch.full_like(shipped, -1e9)
    other[:, torch.from_numpy(ids)] = torch.from_numpy(definitions @ vectors.T)  # (n, V)
    show(f"{Path(path).name}: cos(definition, word) alone", other, gold)
    for lam in lambdas:
        show(f"shipped + {lam:g} x that", shipped + lam * other.clamp(min=-1), gold)


def templates(engine: Engine, texts: list[str], shipped: torch.Tensor, gold: torch.Tensor,
              forms: list[str]) -> None:
    for form in forms:
        logits = candidate_scores(engine, [form.format(t) for t in texts])
        show(f"'{form}' alone", logits, gold)
        show(f"'{form}' + plain (logits added)", logits + shipped, gold)


def query_word_penalty(engine: Engine, texts: list[str], shipped: torch.Tensor, gold: torch.Tensor,
                       penalties: list[float]) -> None:
    in_query = torch.zeros_like(shipped)
    for row, text in enumerate(texts):
        for word in re.findall(r"[a-z]+", text.lower()):
            if (token := engine.words.vocab.token_id(word)) is not None:
                in_query[row, token] = 1.0
    print(f"gold word in its own definition: {in_query.gather(1, gold[:, None]).mean():.1%}")
    for penalty in penalties:
        show(f"query-word penalty {penalty:g}", shipped - penalty * in_query, gold)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="checkpoint (default: the shipped one)")
    p.add_argument("--other-encoder", help="a Hugging Face sentence-encoder folder")
    p.add_argument("--lambdas", type=float, nargs="+", default=[5, 10, 15, 20, 30])
    p.add_argument("--templates", nargs="+", default=[])
    p.add_argument("--query-word-penalty", type=float, nargs="+", default=[])
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    engine = Engine.load(args.model, decoder=None)
    engine.set_precision("auto")
    texts, gold = definition_pairs(split_by_word(load_wordnet(), seed=0).dev, engine.words.vocab)
    gold = torch.from_numpy(gold)
    shipped = candidate_scores(engine, texts)
    print("| ranking (WordNet dev) | MRR | top-10 |\n|---|---:|---:|")
    show("shipped", shipped, gold)
    if args.other_encoder:
        other_encoder(engine, texts, shipped, gold, args.other_encoder, args.lambdas)
    if args.templates:
        templates(engine, texts, shipped, gold, args.templates)
    if args.query_word_penalty:
        query_word_penalty(engine, texts, shipped, gold, args.query_word_penalty)
    return 0


if __name__ == "__main__":
    sys.exit(main())
