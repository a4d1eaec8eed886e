"""Probes for the open-vocabulary scoring (not shipped): channel weights and a learned word map,
on cached vectors written by scripts/eval_open_vocab.py. Prints dev numbers."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

from core import Engine
from core.lexicon.dictionary import lemma_split, load_wordnet_lemmas
from core.words.open_vocab import Candidates

CACHE = Path("data/cache/open-vocab")
torch.manual_seed(0)


def load(pattern: str) -> torch.Tensor:
    return torch.from_numpy(np.load(next(CACHE.glob(pattern))))


def ranks(scores: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    return (scores >= scores.gather(1, gold[:, None])).sum(1)


def summary(r: torch.Tensor, multi: torch.Tensor) -> str:
    def m(x):
        x = x.float()
        return f"mrr {float((1 / x).mean()):.4f} @1 {float((x <= 1).float().mean()):.3f} @10 {float((x <= 10).float().mean()):.3f} @100 {float((x <= 100).float().mean()):.3f}"
    return f"all {m(r)} | single {m(r[~multi])} | multi {m(r[multi])}"


def dev_sample(engine, cands, index, split, n: int = 3000):
    """A fixed-size random sample of WordNet dev: unit vectors (n, d), gold rows, the candidates'
    single-token mask, which golds are multi-token, and the engine's token scores (n, S)."""
    pick = torch.randperm(len(split.dev))[:n]
    dev = [split.dev[i] for i in pick]
    U = torch.nn.functional.normalize(load("*-wordnet-dev-*.npy")[pick], dim=1)
    gold = torch.tensor([index[e.word] for e in dev])
    single = torch.from_numpy(cands.single_token)
    tokens = torch.from_numpy(cands.token_ids[cands.single_token])
    return U, gold, single, ~single[gold], engine.words.logits(U)[:, tokens]


def main() -> None:
    engine = Engine.load("checkpoints/defsent-minilm", decoder=None)
    cands = Candidates(load_wordnet_lemmas(), engine.words.vocab)
    index = {w: i for i, w in enumerate(cands.words)}
    split = lemma_split()
    W = torch.nn.functional.normalize(load("*-words-*.npy"), dim=1)  # (C, d)
    U, gold, single, multi, logits = dev_sample(engine, cands, index, split)
    cos = U @ W.T  # (n, C)
    print("dev sample", len(U), "multi share", float(multi.float().mean()))
    for bias in (-8, -6, -4, -2, 0):
        s = 15 * cos + bias
        s[:, single] = logits
        print("bias", bias, summary(ranks(s, gold), multi))
    s = cos.clone()
    print("word channel alone, all candidates:", summary(ranks(s, gold), multi))



def fit_word_map(U: torch.Tensor, gold: torch.Tensor, W: torch.Tensor, epochs: int = 3, batch: int = 512,
                 negatives: int = 8192, lr: float = 1e-3, hidden: int = 0) -> torch.nn.Module:
    """A map of word vectors towards their definitions' vectors: softmax over the batch's words and
    `negatives` random candidates of tau * cos(u, map(w))."""
    d = W.shape[1]
    if hidden:
        net = torch.nn.Sequential(torch.nn.Linear(d, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, d))
        torch.nn.init.zeros_(net[2].weight), torch.nn.init.zeros_(net[2].bias)
        mapping = lambda w: w + net(w)  # noqa: E731
        params = list(net.parameters())
    else:
        lin = torch.nn.Linear(d, d)
        with torch.no_grad():
            lin.weight.copy_(torch.eye(d)), lin.bias.zero_()
        mapping, params, net = lin, list(lin.parameters()), lin
    log_tau = torch.nn.Parameter(torch.tensor(np.log(20.0), dtype=torch.float32))
    opt = torch.optim.Adam(params + [log_tau], lr=lr)
    for epoch in range(epochs):
        order = torch.randperm(len(gold))
        total = 0.0
        for start in range(0, len(order), batch):
            idx = order[start:start + batch]
            cand, target = torch.unique(torch.cat([gold[idx], torch.randint(len(W), (negatives,))]), return_inverse=True)
            mw = torch.nn.functional.normalize(mapping(W[cand]), dim=1)
            logits = log_tau.exp() * (U[idx] @ mw.T)
            loss = torch.nn.functional.cross_entropy(logits, target[:len(idx)])
            opt.zero_grad(), loss.backward(), opt.step()
            total += loss.item() * len(idx)
        print(f"epoch {epoch} loss {total / len(gold):.3f} tau {log_tau.exp().item():.1f}", flush=True)
    net.mapping = mapping
    return net


def definition_best(U: torch.Tensor, D: torch.Tensor, cands: Candidates, keep: np.ndarray | None = None) -> torch.Tensor:
    """(n, C) highest cosine of each query with one of the candidate's definitions (0: none kept)."""
    pd, pw = torch.from_numpy(cands.pair_definition), torch.from_numpy(cands.pair_word)
    if keep is not None:
        k = torch.from_numpy(keep[cands.pair_definition])
        pd, pw = pd[k], pw[k]
    out = []
    for start in range(0, len(U), 500):
        cos = U[start:start + 500] @ D.T
        best = torch.zeros(len(cos), len(cands))
        out.append(best.scatter_reduce(1, pw.expand(len(cos), -1), cos[:, pd], "amax", include_self=False))
    return torch.cat(out)


def probe_definitions() -> None:
    from core.lexicon.dictionary import definition_key
    from core.lexicon.gcide import read_gcide
    engine = Engine.load("checkpoints/defsent-minilm", decoder=None)
    cands = Candidates(load_wordnet_lemmas(), engine.words.vocab)
    index = {w: i for i, w in enumerate(cands.words)}
    split = lemma_split()
    W = torch.nn.functional.normalize(load("*-words-*.npy"), dim=1)
    D = torch.nn.functional.normalize(load("*-defs-*.npy"), dim=1)
    single = torch.from_numpy(cands.single_token)
    tokens = torch.from_numpy(cands.token_ids[cands.single_token])
    dev_words = {e.word for e in split.dev}
    gcide = [e for e in read_gcide(Path("data/cache/deb/gcide/usr/share/dictd"), None)
             if e.word in dev_words and e.word in index]
    U = torch.nn.functional.normalize(load(f"*-gcide-dev-{len(gcide)}.npy"), dim=1)
    pick = torch.randperm(len(U))[:2000]
    U, gcide = U[pick], [gcide[i] for i in pick]
    gold = torch.tensor([index[e.word] for e in gcide])
    multi = ~single[gold]
    base = 15 * (U @ W.T)
    base[:, single] = engine.words.logits(U)[:, tokens]
    best = definition_best(U, D, cands)
    print("gcide dev sample", len(U), "multi share", float(multi.float().mean()))
    for bias in (-2, -1, 0):
        for weight in (0, 10, 20, 40, 80):
            s = base.clone()
            s[:, ~single] += bias
            s += weight * best
            print("gcide bias", bias, "def weight", weight, summary(ranks(s, gold), multi), flush=True)
    held = {definition_key(e.definition) for e in split.dev + split.test}
    keep = np.array([definition_key(d) not in held for d in cands.definitions])
    n = 3000
    pick = torch.randperm(len(split.dev))[:n]
    dev = [split.dev[i] for i in pick]
    U = torch.nn.functional.normalize(load("*-wordnet-dev-*.npy")[pick], dim=1)
    gold = torch.tensor([index[e.word] for e in dev])
    multi = ~single[gold]
    base = 15 * (U @ W.T)
    base[:, single] = engine.words.logits(U)[:, tokens]
    k = torch.from_numpy(keep)
    newidx = torch.cumsum(k.long(), 0) - 1
    pd, pw = torch.from_numpy(cands.pair_definition), torch.from_numpy(cands.pair_word)
    kk = k[pd]
    pd, pw = newidx[pd[kk]], pw[kk]
    Dk = D[k]
    out = []
    for start in range(0, n, 500):
        cos = U[start:start + 500] @ Dk.T
        b = torch.zeros(len(cos), len(cands))
        out.append(b.scatter_reduce(1, pw.expand(len(cos), -1), cos[:, pd], "amax", include_self=False))
    best = torch.cat(out)
    for bias in (-1, 0):
        for weight in (0, 10, 20, 40):
            s = base.clone()
            s[:, ~single] += bias
            s += weight * best
            print("wordnet leak-free bias", bias, "def weight", weight, summary(ranks(s, gold), multi), flush=True)


def probe_map() -> None:
    engine = Engine.load("checkpoints/defsent-minilm", decoder=None)
    cands = Candidates(load_wordnet_lemmas(), engine.words.vocab)
    index = {w: i for i, w in enumerate(cands.words)}
    split = lemma_split()
    W = load("*-words-*.npy")
    Utr = load(f"*-wordnet-train-{len(split.train)}.npy")
    gtr = torch.tensor([index[e.word] for e in split.train])
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    word_map = fit_word_map(torch.nn.functional.normalize(Utr, dim=1), gtr, torch.nn.functional.normalize(W, dim=1),
                            epochs=epochs, negatives=8192)
    with torch.no_grad():
        M = torch.nn.functional.normalize(word_map.mapping(W), dim=1)
    Wn = torch.nn.functional.normalize(W, dim=1)
    U, gold, single, multi, logits = dev_sample(engine, cands, index, split)
    for name, V in (("raw", Wn), ("mapped", M)):
        cos = U @ V.T
        print(name, "alone", summary(ranks(cos, gold), multi))
        for scale in (15, 25):
            for bias in (-4, -2, 0, 2):
                s = scale * cos + bias
                s[:, single] = logits
                print(name, "scale", scale, "bias", bias, summary(ranks(s, gold), multi), flush=True)
    torch.save(word_map.state_dict(), "/tmp/word_map.pt")


if __name__ == "__main__":
    {"main": main, "definitions": probe_definitions, "map": probe_map}[sys.argv[1] if len(sys.argv) > 1 else "main"]()
