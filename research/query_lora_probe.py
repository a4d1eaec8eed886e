"""Issue 53: a low-rank delta of the encoder that only the reverse dictionary's queries read (measured).

The query adapter (core/words/adapter_fit.py) reshapes the pooled vector of a description; it cannot read the
description's words again, and its gains stayed within noise. Here a copy of the shipped encoder gets a rank-r
delta on every Linear of its layers (core/lora.py) and learns, on the norms' training words' descriptions and
the WordNet training words' glosses, the log-probability of the described word in the open vocabulary's
mixture at a sharper temperature (as the adapter at T = 16). The candidates' vectors, the head and `encode`
stay the shipped ones: only the query's vector changes. Measured in the app's mixture (since issue 60 with the
exact vectors, as eval-reverse; the compact ones at 666302e).

    python -m research.query_lora_probe [--steps 800] [--rank 16] [--lr 5e-4] [--out DIR]

Issue 60, item 1: with `--action-batch N`, each step also learns from N action-shaped rewrites of WordNet
training words' verb and adjective glosses ("when somebody cuts or makes a notch into": core/lexicon/
action_shapes.py), their own gloss left out of the definition channel; the human dev set's action descriptions
and the rule-made dev slice (eval-reverse's "wordnet-dev/actions", its leak-free index) are measured too.

    python -m research.query_lora_probe --steps 500 --threads 1 --people-batch 24 --dictionary-batch 16 \
        --action-batch 24
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
from core.evaluation.reverse import (DEFSENT_TABLE6, Query, ranks, read_human_descriptions, reverse_query_sets,
                                     scored_with)
from core.lexicon.action_shapes import action_shapes
from core.lexicon.forms import describes_action
from core.lexicon.dictionary import lemma_split
from core.lexicon.norms import read_norms, split_norm_words
from core.lora import add_low_rank
from core.paths import user_cache_dir
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
    dictionary, actions = [], []
    for g, defined in enumerate(candidates.defined_rows):
        if defined and all(candidates.words[i] in train_words for i in defined):
            dictionary.append((len(texts), defined[0], g))
            texts.append(candidates.definitions[g])
            for shaped in action_shapes(candidates.definitions[g], candidates.definition_pos[g]).values():
                actions.append((len(texts), defined[0], g))  # its own gloss left out, as the gloss's
                texts.append(shaped)

    def examples(rows):
        at, gold, own = (torch.tensor(col, dtype=torch.long) for col in zip(*rows))
        return Examples(at[:, None].float(), gold, own)
    return texts, examples(people), examples(dictionary), examples(actions), norms


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
    parser.add_argument("--action-batch", type=int, default=0, help="action-shaped rewrites of glosses a step")
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
    engine = Engine.load(DEFAULT_CHECKPOINT, decoder=None, open_vocabulary=False)
    engine.words.set_precision("float32")
    # the exact vectors from the user cache, as eval-reverse (2026-11-29 this read the compact ones, which are now
    # re-scored with exact vectors embedded on demand: minutes a set on one thread)
    engine.vocabulary.enable(cache_dir=user_cache_dir("open-vocab"), compact=False)
    texts, people, dictionary, actions, norms = training_texts(engine)
    _, _, actions = common_candidates(engine.words.open_vocab, people, actions, args.candidates)  # the same subset
    scorer, people, dictionary = common_candidates(engine.words.open_vocab, people, dictionary, args.candidates)
    trained = {"mixture_temperature": args.train_temperature}
    if args.everyday_only:
        trained["everyday_share"] = args.train_share
    learnt_through = scorer.with_config(replace(scorer.config, **trained))
    print(f"{len(people):,} descriptions, {len(dictionary):,} glosses, {len(actions):,} action-shaped glosses, "
          f"{len(scorer.candidates):,} candidates",
          flush=True)

    human, descriptions = read_human_descriptions(), read_norms()
    normed = {d.word for d in descriptions}
    held = [Query(d.text, d.word) for d in descriptions if d.word in norms.held_out]
    sets = {"human-dev": human, "human-dev/in-norms": [q for q in human if q.word in normed],
            "human-dev/not-in-norms": [q for q in human if q.word not in normed],
            "norms-heldout": random.Random(0).sample(held, args.heldout_sample),
            "defsent-table6": [Query(d, w) for w, d in DEFSENT_TABLE6],
            "human-dev/actions": [q for q in human if describes_action(q.text)]}
    slice_queries, slice_index = reverse_query_sets(engine, norms=None)["wordnet-dev/actions"]
    sets["wordnet-dev/actions"] = slice_queries
    shipped = engine.encoder

    def measured() -> dict[str, np.ndarray]:
        with torch.no_grad():
            found = {name: ranks(engine, queries) for name, queries in sets.items() if name != "wordnet-dev/actions"}
            with scored_with(engine, slice_index):
                found["wordnet-dev/actions"] = ranks(engine, slice_queries)
        return found
    before = measured()

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
        batch = [part.take(torch.randint(len(part), (size,), generator=generator))
                 for part, size in ((people, args.people_batch), (dictionary, args.dictionary_batch),
                                    (actions, args.action_batch)) if size]
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
    after = measured()
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
