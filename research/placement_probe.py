"""Which way of landing new points on the fixed map of every word keeps their neighbourhoods best
(issue 39, item 2: UMAP's transform, a parametric mapping, or placement by nearest neighbours).

    python -m research.placement_probe --held-out 2000

UMAP is fitted on every word but `--held-out` random ones (as `python -m core vocabulary-map` lays the
whole vocabulary out); then the held-out words, and as many WordNet definitions (what a description
looks like), are placed by each method. A placed point keeps its neighbourhood when the fitted words
nearest to it on the map are the ones nearest to it by cosine: the score is the share of its 10 nearest
words by cosine among its 10 nearest on the map. The fitted words' own share (UMAP's layout of points it
saw) is the ceiling. Time is per single query, engine side, the vectors already encoded.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from core.engine import Engine
from core.paths import user_cache_dir
from core.explore.vocabulary_map import UMAP_NEIGHBOURS

K = 10


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--held-out", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    engine = Engine.load(decoder=None, open_vocabulary=False)
    engine.enable_open_vocabulary(cache_dir=user_cache_dir("open-vocab"), compact=False)
    scorer = engine.words.open_vocab
    every = torch.arange(len(scorer.candidates))
    words = torch.nn.functional.normalize(scorer.vectors_of("word", every).float(), dim=1).numpy()  # (C, d)
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(words))
    held, fitted = order[:args.held_out], order[args.held_out:]
    definitions = scorer.vectors_of("definition", torch.from_numpy(rng.choice(len(scorer.candidates.definitions),
                                                                              args.held_out, replace=False)))
    queries = {"held-out words": words[held],
               "WordNet definitions": torch.nn.functional.normalize(definitions.float(), dim=1).numpy()}

    import umap
    started = time.perf_counter()
    reducer = umap.UMAP(n_components=2, n_neighbors=UMAP_NEIGHBOURS, metric="cosine", random_state=args.seed,
                        low_memory=True)
    coords = reducer.fit_transform(words[fitted]).astype(np.float32)  # (F, 2)
    print(f"UMAP fitted on {len(fitted):,} words in {time.perf_counter() - started:.0f} s", flush=True)
    base = torch.from_numpy(words[fitted])  # (F, d)
    sample = rng.choice(len(fitted), args.held_out, replace=False)
    print(f"ceiling, {args.held_out} fitted words on their own layout: "
          f"{kept(base, coords, words[fitted][sample], coords[sample], skip_self=True):.3f}")
    mlp = fit_mlp(base, torch.from_numpy(coords))
    methods = {
        "nearest word (k=1)": lambda q: knn_place(base, coords, q, 1),
        "cosine-weighted mean of 5 nearest": lambda q: knn_place(base, coords, q, 5),
        "cosine-weighted mean of 10 nearest (shipped)": lambda q: knn_place(base, coords, q, 10),
        "cosine-weighted mean of 30 nearest": lambda q: knn_place(base, coords, q, 30),
        "UMAP transform": lambda q: reducer.transform(q).astype(np.float32),
        "parametric (MLP 384-512-512-2 on the layout)": lambda q: mlp(torch.from_numpy(q)).detach().numpy(),
    }
    for name, place in methods.items():
        line = [name]
        for query_name, q in queries.items():
            line.append(f"{query_name} {kept(base, coords, q, place(q)):.3f}")
        started = time.perf_counter()
        for row in queries["WordNet definitions"][:50]:
            place(row[None])
        line.append(f"{1000 * (time.perf_counter() - started) / 50:.1f} ms a query")
        print(" | ".join(line), flush=True)


def kept(base: torch.Tensor, coords: np.ndarray, queries: np.ndarray, placed: np.ndarray,
         skip_self: bool = False) -> float:
    """Mean share of each query's K nearest fitted words by cosine among the K nearest to its map position."""
    extra = 1 if skip_self else 0
    by_cosine = (torch.from_numpy(queries) @ base.T).topk(K + extra).indices[:, extra:]  # (Q, K)
    on_map = torch.cdist(torch.from_numpy(placed), torch.from_numpy(coords))  # (Q, F)
    by_map = on_map.topk(K + extra, largest=False).indices[:, extra:]  # (Q, K)
    shared = [len(set(a.tolist()) & set(b.tolist())) for a, b in zip(by_cosine, by_map)]
    return float(np.mean(shared)) / K


def knn_place(base: torch.Tensor, coords: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """As core.explore.vocabulary_map.place: the cosine-weighted mean position of the k nearest words."""
    top = (torch.from_numpy(queries) @ base.T).topk(k)  # (Q, k)
    weights = top.values.clamp(min=1e-3).numpy()
    return (coords[top.indices.numpy()] * weights[..., None]).sum(1) / weights.sum(1, keepdims=True)


def fit_mlp(inputs: torch.Tensor, targets: torch.Tensor, epochs: int = 8) -> torch.nn.Module:
    """A small regression from a unit vector to its layout position, trained with MSE on the fitted words."""
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(inputs.shape[1], 512), torch.nn.GELU(), torch.nn.Linear(512, 512),
                              torch.nn.GELU(), torch.nn.Linear(512, 2))
    optimizer = torch.optim.AdamW(mlp.parameters(), lr=1e-3)
    mean, scale = targets.mean(0), targets.std(0)
    for _ in range(epochs):
        for batch in torch.randperm(len(inputs)).split(512):
            loss = ((mlp(inputs[batch]) - (targets[batch] - mean) / scale) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    mlp.eval()
    return lambda x: mlp(x) * scale + mean


if __name__ == "__main__":
    main()
