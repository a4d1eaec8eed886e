"""Hubness correction for the reverse dictionary (CSLS, Conneau et al. 2018).

In a high-dimensional space a few words ("hubs", often general ones) score high for almost any text
and crowd the top of every ranking. CSLS lowers each word's score by how high it scores on the
reference texts nearest to it:

    score'(u, v) = score(u, v) - weight * r[v],   r[v] = mean of the k highest score(x, v) over references x

The references are training definitions, and a definition never counts for the words it defines:
the encoder was fitted to rank those words first, so counting it would push every word seen in
training down and every unseen word up, which would flatter a split by word without helping users.
Like the word vectors, r comes from the encoder it is stored with and is recomputed after training.

    python -m core.hubness --model checkpoints/defsent-minilm --sweep-k 5 10 20 --sweep-weight 0.4 0.5 0.6
    python -m core.hubness --model checkpoints/defsent-minilm --k 10 --weight 0.5 --write
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from safetensors.torch import load_file, save_file

HUB_PENALTY = "hub_penalty.safetensors"
DEFAULT_K, DEFAULT_WEIGHT = 10, 0.5  # chosen on the WordNet dev split: docs/training.md, "What was tried"


@dataclass
class HubPenalty:
    """r (V,): each word's mean score over its k nearest references; subtracted `weight` times."""
    penalty: torch.Tensor
    k: int
    weight: float
    references: int

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        return logits - self.weight * self.penalty  # (n, V)

    @classmethod
    def compute(cls, score: Callable[[np.ndarray], torch.Tensor], vectors: np.ndarray,
                defined: Sequence[Sequence[int]], k: int = DEFAULT_K, weight: float = DEFAULT_WEIGHT,
                batch_size: int = 1024) -> "HubPenalty":
        """`score(vectors) -> (n, V)` word scores; `defined[i]`: the ids reference i defines (not counted)."""
        if k < 1 or len(vectors) == 0:
            raise ValueError("the hubness correction needs k >= 1 and at least one reference text")
        best = None  # (V, k') highest scores so far, per word
        for start in range(0, len(vectors), batch_size):
            s = score(vectors[start:start + batch_size]).clone()  # (b, V)
            rows = [i for i, ids in enumerate(defined[start:start + len(s)]) for _ in ids]
            cols = [v for ids in defined[start:start + len(s)] for v in ids]
            s[rows, cols] = float("-inf")
            s = s.T.contiguous()  # (V, b): top-k along rows is many times faster than down columns
            if best is not None:
                s = torch.cat([best, s], dim=1)
            best = s.topk(min(k, s.shape[1]), dim=1).values
        best = torch.where(torch.isfinite(best), best, torch.nan)
        penalty = best.nanmean(dim=1).nan_to_num(0.0)  # a word defined by every reference: no penalty
        return cls(penalty.float(), k, float(weight), len(vectors))

    def save(self, path: Path) -> None:
        save_file({"penalty": self.penalty.contiguous()}, str(path))

    @classmethod
    def load(cls, path: Path, k: int, weight: float, references: int) -> "HubPenalty":
        return cls(load_file(str(path))["penalty"], k, weight, references)

    def describe(self) -> dict:
        return {"file": HUB_PENALTY, "k": self.k, "weight": self.weight, "references": self.references}


def group_definitions(texts: Sequence[str], gold: Sequence[int]) -> tuple[list[str], list[list[int]]]:
    """Distinct definition texts and, for each, every word id it defines (synonyms share a gloss)."""
    defined: dict[str, list[int]] = {}
    for text, word in zip(texts, gold, strict=True):
        ids = defined.setdefault(text, [])
        if int(word) not in ids:
            ids.append(int(word))
    return list(defined), list(defined.values())


def main(argv: Sequence[str] | None = None) -> int:
    from tqdm import tqdm

    from .dictionary import load_wordnet, split_by_word
    from .engine import Engine
    from .word_eval import definition_pairs, evaluate_vectors, format_table, write_word_scoring

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, default=None, help="checkpoint directory (default: the shipped one)")
    p.add_argument("--sweep-k", type=int, nargs="*", default=[], help="k values to evaluate")
    p.add_argument("--sweep-weight", type=float, nargs="*", default=[], help="weights to evaluate (0 = none)")
    p.add_argument("--split", default="dev", choices=["dev", "test"], help="WordNet split for the sweep")
    p.add_argument("--k", type=int, default=DEFAULT_K, help="k to store with --write")
    p.add_argument("--weight", type=float, default=DEFAULT_WEIGHT, help="weight to store with --write")
    p.add_argument("--write", action="store_true", help="store the correction in --model with its dev and test metrics")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = p.parse_args(argv)
    if args.write and args.model is None:
        p.error("--write needs an explicit --model")
    if args.threads:
        torch.set_num_threads(args.threads)

    engine = Engine.load(args.model, decoder=None)
    engine.hub_penalty = None  # scores without a stored correction, which is measured and replaced here
    split = split_by_word(load_wordnet(), seed=engine.manifest.get("training", {}).get("split_seed", 0))
    references, defined = group_definitions(*definition_pairs(split.train, engine.vocab))
    with tqdm(total=len(references), unit="definition", desc="encoding the references") as bar:
        reference_vectors = engine.encode(references, progress=lambda done, _total: bar.update(done - bar.n))

    computed: dict[int, HubPenalty] = {}  # by k: the sweep's penalty is reused by --write

    def penalty(k: int, weight: float) -> HubPenalty:
        if k not in computed:
            engine.hub_penalty = None
            computed[k] = HubPenalty.compute(engine.word_logits, reference_vectors, defined, k)
        return replace(computed[k], weight=weight)

    if args.sweep_k or args.sweep_weight:
        texts, gold = definition_pairs(getattr(split, args.split), engine.vocab)
        vectors = engine.encode(texts)
        rows = {"no correction": evaluate_vectors(engine, vectors, gold)}
        for k in args.sweep_k or [args.k]:
            for weight in args.sweep_weight or [args.weight]:
                engine.hub_penalty = penalty(k, weight)
                rows[f"k {k}, weight {weight:g}"] = evaluate_vectors(engine, vectors, gold)
        print(f"WordNet {args.split} split:\n\n{format_table(rows)}")
    if args.write:
        engine.hub_penalty = penalty(args.k, args.weight)
        write_word_scoring(engine, args.model, split, ("dev", "test"), "hubness-corrected")
        print(f"wrote {args.model / HUB_PENALTY} (k {args.k}, weight {args.weight:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
