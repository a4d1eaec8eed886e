"""Issue 53, a second lever: what people say of a word, remembered for the everyday expert (measured, not
adopted: docs/results.md, "People's words").

Each training word of the feature norms gets a prototype: the normalised mean of the unit embeddings of its
people's descriptions (the shipped encoder's). A query's cosine with a word's prototype is a people channel
of the open vocabulary's everyday expert (core/words/open_vocab.py), which adds

    weight * (max(cos(u, prototype(c)), definition(c)) - definition(c))      # (B, C)

to its score: a word moves up only where people's way of describing it is closer to the query than its
closest definition. Modes: "centroid" (the prototypes of the remembered words), "knn" (every description
of them kept as its own vector), "tower:RIDGE" (a prototype predicted for every candidate by a ridge
regression from its word vector and mean definition vector, fitted on the remembered words: the only mode
that can reach words nobody described).

    python -m research.people_memory_probe --vectors V.npy [--weights 0 20 40 80] [--modes centroid knn tower:1]

V.npy: every norms description embedded by the shipped encoder, in `read_norms()` order (float32, (n, d)).
Prints acc@1/10, MRR and median on the human dev set (all, in the norms, not in the norms), a sample of the
held-out norm words and DefSent's Table 6, per mode and weight, with the shipped compact vectors (as the app
answers; the query's own words left out, no filter).
"""
from __future__ import annotations

import argparse
import random

import numpy as np
import torch

from core.checkpoint import DEFAULT_CHECKPOINT
from core.engine import Engine
from core.evaluation.reverse import DEFSENT_TABLE6, MAX_RANK, Query, read_human_descriptions
from core.lexicon.dictionary import lemma_split
from core.lexicon.norms import read_norms, split_norm_words
from core.text import singular

Memory = tuple[torch.Tensor, torch.Tensor]  # unit vectors (P, d) and their candidate rows (P,)


def remembered(descriptions, vectors: np.ndarray, words: set[str], index: dict[str, int], mode: str) -> Memory:
    """The prototypes of `words` that are candidates ("centroid"), or all their descriptions ("knn")."""
    rows = np.array([index.get(d.word, index.get(singular(d.word), -1)) if d.word in words else -1
                     for d in descriptions])
    keep = np.flatnonzero(rows >= 0)
    unit = torch.nn.functional.normalize(torch.from_numpy(vectors[keep]), dim=1)  # (n', d)
    owners = torch.from_numpy(rows[keep])
    if mode == "knn":
        return unit, owners
    distinct, inverse = owners.unique(return_inverse=True)
    sums = torch.zeros(len(distinct), unit.shape[1]).index_add_(0, inverse, unit)  # (P, d)
    return torch.nn.functional.normalize(sums, dim=1), distinct


def predicted(scorer, memory: Memory, ridge: float) -> Memory:
    """A prototype for every candidate: ridge regression from [word vector, mean definition vector] (C, 2d)
    to the remembered prototypes, applied to all candidates."""
    definitions, owners = scorer._pairs
    mean_definition = torch.zeros_like(scorer.word_vectors).index_add_(0, owners, scorer.definition_vectors[definitions])
    has = mean_definition.norm(dim=1, keepdim=True) > 0
    mean_definition = torch.where(has, torch.nn.functional.normalize(mean_definition, dim=1), scorer.word_vectors)
    x_all = torch.cat([scorer.word_vectors, mean_definition], dim=1)  # (C, 2d)
    x, y = x_all[memory[1]], memory[0]  # (P, 2d), (P, d)
    weights = torch.linalg.solve(x.T @ x + ridge * torch.eye(x.shape[1]), x.T @ y)  # (2d, d)
    return torch.nn.functional.normalize(x_all @ weights, dim=1), torch.arange(len(x_all))


def mixture(scorer, unit: torch.Tensor, logits: torch.Tensor, memory: Memory, weight: float) -> torch.Tensor:
    """OpenScorer.mixture (no adapter) with the people channel added to the everyday expert: log p (B, C)."""
    c = scorer.config
    word = scorer._cos(unit, "word")  # (B, C)
    head = logits[:, scorer.single_tokens]  # (B, S)
    definition = scorer.definition_scores(unit, fallback=word)  # (B, C)
    dictionary = scorer._expert(word, head, definition, c.word_scale, c.head_weight, c.multi_bias, c.definition_weight)
    everyday = scorer._expert(word, head, definition, c.everyday_word_scale, c.everyday_head_weight,
                              c.everyday_multi_bias, c.everyday_definition_weight)
    everyday = everyday + c.frequency_weight * scorer.prior + c.phrase_bias * scorer.phrase
    if weight:
        vectors, rows = memory
        people = definition.scatter_reduce(1, rows.expand(len(unit), -1), unit @ vectors.T, "amax")  # (B, C)
        everyday = everyday + weight * (people - definition)
    t = c.mixture_temperature
    return torch.logaddexp(np.log1p(-c.everyday_share) + (dictionary / t).log_softmax(-1),
                           np.log(c.everyday_share) + (everyday / t).log_softmax(-1))


def ranks(engine, queries, memory: Memory, weights) -> dict[float, np.ndarray]:
    """Per weight, each query's rank as eval-reverse ranks it (no filter, the query's own words left out)."""
    out = {w: [] for w in weights}
    for start in range(0, len(queries), 64):
        batch = queries[start:start + 64]
        vectors = engine.encode([q.text for q in batch])
        scored = engine.words.scores(vectors, exclude_words_of=[q.text for q in batch])  # its allowed mask
        unit = torch.nn.functional.normalize(torch.from_numpy(vectors).float(), dim=1)  # (B, d)
        logits = engine.words.logits(vectors)  # (B, V)
        index = scored.vocab.id_of
        golds = [[index[w] for w in dict.fromkeys([q.word, singular(q.word)]) if w in index] for q in batch]
        for w in weights:
            s = mixture(engine.words.open_vocab, unit, logits, memory, w).masked_fill(~scored.allowed, float("-inf"))
            out[w] += [min([int((s[i] > s[i, g]).sum()) + 1 for g in forms if scored.allowed[i, g]] + [MAX_RANK])
                       for i, forms in enumerate(golds)]
    return {w: np.array(r) for w, r in out.items()}


def line(r: np.ndarray) -> str:
    return f"{np.mean(r <= 1):.3f} / {np.mean(r <= 10):.3f} / MRR {np.mean(1 / r):.4f} / median {np.median(r):.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vectors", required=True)
    parser.add_argument("--weights", type=float, nargs="+", default=[0, 20, 40, 80, 160])
    parser.add_argument("--modes", nargs="+", default=["centroid", "knn", "tower:1"])
    parser.add_argument("--heldout-sample", type=int, default=1000)
    parser.add_argument("--all-trained-words", action="store_true",
                        help="remember the WordNet dev and test words too (the guards would need a memory without them)")
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    engine = Engine.load(DEFAULT_CHECKPOINT, decoder=None)  # the shipped compact vectors, as the app answers
    engine.words.set_precision("float32")
    engine.enable_open_vocabulary()
    descriptions = read_norms()
    vectors = np.load(args.vectors)
    if len(vectors) != len(descriptions):
        raise SystemExit(f"{args.vectors}: {len(vectors)} vectors for {len(descriptions)} descriptions")
    split = lemma_split(0)
    not_trained = () if args.all_trained_words else {e.word for e in split.dev + split.test}
    norms = split_norm_words({d.word for d in descriptions}, 0, not_trained=not_trained)
    index = {w: i for i, w in enumerate(engine.words.open_vocab.candidates.words)}
    human, words = read_human_descriptions(), {d.word for d in descriptions}
    held = [Query(d.text, d.word) for d in descriptions if d.word in norms.held_out]
    sets = {"human-dev": human, "human-dev/in-norms": [q for q in human if q.word in words],
            "human-dev/not-in-norms": [q for q in human if q.word not in words],
            "norms-heldout": random.Random(0).sample(held, args.heldout_sample),
            "defsent-table6": [Query(d, w) for w, d in DEFSENT_TABLE6]}
    for mode in args.modes:
        memory = remembered(descriptions, vectors, set(norms.train), index, "knn" if mode == "knn" else "centroid")
        if mode.startswith("tower:"):
            memory = predicted(engine.words.open_vocab, memory, float(mode.split(":")[1]))
        print(f"## {mode}: {len(memory[0]):,} vectors of {len(set(memory[1].tolist())):,} words", flush=True)
        for name, queries in sets.items():
            for w, r in ranks(engine, queries, memory, args.weights).items():
                print(f"{mode:8} {name:24} weight {w:6g}: {line(r)} (n {len(r)})", flush=True)


if __name__ == "__main__":
    main()
