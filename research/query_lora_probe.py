"""Issue 53: a low-rank delta of the encoder that only the reverse dictionary's queries read (measured).

The query adapter (core/words/adapter_fit.py) reshapes the pooled vector of a description; it cannot read the
description's words again, and its gains stayed within noise. Here a copy of the shipped encoder gets a rank-r
delta on every Linear of its layers (core/lora.py) and learns, on the norms' training words' descriptions and
the WordNet training words' glosses, the log-probability of the described word in the open vocabulary's
mixture at a sharper temperature (as the adapter at T = 16). The candidates' vectors, the head and `encode`
stay the shipped ones: only the query's vector changes. Measured in the app's mixture (compact vectors).

    python -m research.query_lora_probe [--steps 800] [--rank 16] [--lr 5e-4] [--out DIR]
"""
from __future__ import annotations

import argparse
import copy
import random
import re
import time
from dataclasses import replace

import numpy as np
import torch

from core.checkpoint import DEFAULT_CHECKPOINT
from core.engine import Engine
from core.evaluation.reverse import DEFSENT_TABLE6, Query, ranks, read_human_descriptions
from core.lexicon.dictionary import lemma_split
from core.lexicon.norms import read_norms, split_norm_words
from core.lora import add_low_rank
from core.text import singular
from core.words.adapter_fit import Examples, common_candidates


def line(r: np.ndarray) -> str:
    return f"{np.mean(r <= 1):.3f} / {np.mean(r <= 10):.3f} / MRR {np.mean(1 / r):.4f} / median {np.median(r):.0f}"


def training_texts(engine, split_seed: int = 0):
    """(texts, people Examples, dictionary Examples): Examples.vectors (n, 1) hold each query's row in texts."""
    descriptions = read_norms()
    split = lemma_split(split_seed)
    norms = split_norm_words({d.word for d in descriptions}, split_seed,
                             not_trained={e.word for e in split.dev + split.test})
    candidates = engine.words.open_vocab.candidates
    index = {w: i for i, w in enumerate(candidates.words)}
    texts, people = [], []
    for d in descriptions:
        gold = index.get(d.word, index.get(singular(d.word), -1))
        if d.word in norms.train and gold >= 0:
            people.append((len(texts), gold, -1))
            texts.append(d.text)
    train_words = {e.word for e in split.train}
    dictionary = []
    for g, defined in enumerate(candidates.defined_rows):
        if defined and all(candidates.words[i] in train_words for i in defined):
            dictionary.append((len(texts), defined[0], g))
            texts.append(candidates.definitions[g])

    def examples(rows):
        at, gold, own = (torch.tensor(col, dtype=torch.long) for col in zip(*rows))
        return Examples(at[:, None].float(), gold, own)
    return texts, examples(people), examples(dictionary), norms


KINDS = ("hint (1-3 words)", "list (, or ;)", "a thing that ...", "other phrase")
_THING = re.compile(r"^(a|an|the|to)?\s*(thing|something|someone|somebody|person|one|place|way|act|action|state|"
                    r"feeling|quality|device|object|animal|word|someone's)\b", re.I)


def description_kind(text: str) -> str:
    """Which kind of description a person wrote: a hint of 1-3 words, a list of parts (commas, semicolons),
    "a thing / person / place that ...", or another phrase."""
    words = text.split()
    if len(words) <= 3:
        return KINDS[0]
    if "," in text or ";" in text:
        return KINDS[1]
    if _THING.match(text.strip()):
        return KINDS[2]
    return KINDS[3]


class EverydayReading:
    """An adapter (u -> u_e) that answers each text's shipped vector u with its trained vector (the nearest key)."""

    def __init__(self, shipped, trained, texts: list[str]):
        texts = list(dict.fromkeys(texts))
        self.keys = torch.from_numpy(shipped.encode(texts, batch_size=64, normalize=True))  # (n, d)
        self.values = torch.from_numpy(trained.encode(texts, batch_size=64))  # (n, d)

    def __call__(self, u: torch.Tensor) -> torch.Tensor:
        nearest = (torch.nn.functional.normalize(u.float(), dim=1) @ self.keys.T).argmax(1)  # (b,)
        return self.values[nearest]  # (b, d)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--people-batch", type=int, default=32)
    parser.add_argument("--dictionary-batch", type=int, default=32)
    parser.add_argument("--train-temperature", type=float, default=16.0)
    parser.add_argument("--candidates", type=int, default=20000)
    parser.add_argument("--heldout-sample", type=int, default=300)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--everyday-only", action="store_true",
                        help="only the everyday expert reads the trained query (as the adapter); the dictionary "
                             "expert reads the shipped encoder's; trained at --train-share")
    parser.add_argument("--train-share", type=float, default=0.999)
    parser.add_argument("--out", default=None, help="save the trained delta (A, B of each Linear) here")
    parser.add_argument("--load", default=None, help="measure a delta saved by --out instead of training one")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    engine = Engine.load(DEFAULT_CHECKPOINT, decoder=None)  # the shipped compact vectors, float32
    engine.words.set_precision("float32")
    engine.enable_open_vocabulary()
    texts, people, dictionary, norms = training_texts(engine)
    scorer, people, dictionary = common_candidates(engine.words.open_vocab, people, dictionary, args.candidates)
    trained = {"mixture_temperature": args.train_temperature}
    if args.everyday_only:
        trained["everyday_share"] = args.train_share
    learnt_through = scorer.with_config(replace(scorer.config, **trained))
    print(f"{len(people):,} descriptions, {len(dictionary):,} glosses, {len(scorer.candidates):,} candidates",
          flush=True)

    human, descriptions = read_human_descriptions(), read_norms()
    normed = {d.word for d in descriptions}
    held = [Query(d.text, d.word) for d in descriptions if d.word in norms.held_out]
    sets = {"human-dev": human, "human-dev/in-norms": [q for q in human if q.word in normed],
            "human-dev/not-in-norms": [q for q in human if q.word not in normed],
            "norms-heldout": random.Random(0).sample(held, args.heldout_sample),
            "defsent-table6": [Query(d, w) for w, d in DEFSENT_TABLE6]}
    shipped = engine.encoder
    with torch.no_grad():
        before = {name: ranks(engine, queries) for name, queries in sets.items()}

    query_encoder = copy.deepcopy(shipped)
    factors = add_low_rank(query_encoder.backbone, args.rank)
    optimizer = torch.optim.AdamW(factors, lr=args.lr, weight_decay=0.0)
    generator = torch.Generator().manual_seed(0)
    query_encoder.train()
    started, losses = time.time(), []
    if args.load:
        saved = torch.load(args.load)
        for name, parameter in query_encoder.backbone.named_parameters():
            if parameter.requires_grad:
                parameter.data.copy_(saved[name])
    for step in range(1, 0 if args.load else args.steps + 1):
        for group in optimizer.param_groups:  # linear warm-up over 10 %, then linear decay to 0
            warm = max(1, args.steps // 10)
            group["lr"] = args.lr * min(step / warm, (args.steps - step + 1) / (args.steps - warm + 1))
        batch = [people.take(torch.randint(len(people), (args.people_batch,), generator=generator)),
                 dictionary.take(torch.randint(len(dictionary), (args.dictionary_batch,), generator=generator))]
        rows = torch.cat([b.vectors[:, 0] for b in batch]).long().tolist()
        gold, own = torch.cat([b.gold for b in batch]), torch.cat([b.own for b in batch])
        tokens = query_encoder.tokenize([texts[i] for i in rows])
        u = query_encoder(**tokens)  # (B, d)
        if args.everyday_only:
            with torch.no_grad():
                u_dictionary = shipped(**tokens)  # (B, d)
            log_p = learnt_through.mixture(u_dictionary, engine.words.token_scores(u_dictionary),
                                           (u, engine.words.token_scores(u)), own=own)  # (B, C)
        else:
            log_p = learnt_through.mixture(u, engine.words.token_scores(u), None, own=own)  # (B, C)
        loss = -log_p.gather(1, gold[:, None]).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 20 == 0:
            print(f"step {step}/{args.steps}: loss {np.mean(losses[-20:]):.3f} "
                  f"({(time.time() - started) / step:.2f} s a step)", flush=True)
    query_encoder.eval()
    if args.everyday_only:  # the everyday expert reads each query's trained vector, found by its shipped one
        engine.words.adapter = EverydayReading(shipped, query_encoder, [q.text for qs in sets.values() for q in qs])
    else:
        engine.encoder = query_encoder
    with torch.no_grad():
        after = {name: ranks(engine, queries) for name, queries in sets.items()}
    for name, queries in sets.items():
        print(f"{name:24} before {line(before[name])}   after {line(after[name])} (n {len(queries)})", flush=True)
    kinds = np.array([description_kind(q.text) for q in human])
    for kind in KINDS:
        rows = kinds == kind
        print(f"human-dev, {kind:22} before {line(before['human-dev'][rows])}   "
              f"after {line(after['human-dev'][rows])} (n {rows.sum()})", flush=True)
    if args.out:
        torch.save({n: p.detach() for n, p in query_encoder.backbone.named_parameters() if p.requires_grad},
                   args.out)


if __name__ == "__main__":
    main()
