"""Probe (not shipped yet): a cross-encoder reranker over the open vocabulary's first answers (issue 38,
item 3), trained on research/reranker_mine.py's lists, judged on the human dev set's lists.

The reranker reads "[CLS] description [SEP] word : closest gloss [SEP]" with the first `--layers`
layers of the DefSent encoder (low-rank deltas, a linear score on the mean of its states); the fused
score of the k-th first answer is rerank + beta * -log(1 + k), beta learned with it (the first stage's
order is evidence the reranker adds to), then re-chosen on dev.

    python -m research.reranker_train --export        # the bundle: backbone, tokenizer, lists (here)
    python -m research.reranker_train --layers 6 --rank 16 --queries-per-step 32 --steps 800 --device cuda

Findings (docs/results.md, "A cross-encoder reranker"): it learns GCIDE's lists and makes people's worse.
"""
from __future__ import annotations

import argparse
import copy
import gzip
import json
import random
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from safetensors.torch import load_file, save_file

from core.bert import BertConfig, BertModel
from core.lora import add_low_rank


class CrossReranker(nn.Module):
    """(pairs tokenized) -> (N,) scores."""

    def __init__(self, backbone: nn.Module, layers: int, rank: int):
        super().__init__()
        self.backbone = copy.deepcopy(backbone)
        self.backbone.encoder.layer = self.backbone.encoder.layer[:layers]
        if rank:
            self.factors = add_low_rank(self.backbone, rank)
        else:  # the layers trained whole, the embeddings kept
            self.backbone.embeddings.requires_grad_(False)
        self.score = nn.Linear(backbone.config.hidden_size, 1)
        self.beta = nn.Parameter(torch.tensor(1.0))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.backbone(input_ids, attention_mask).last_hidden_state  # (N, T, H)
        mask = attention_mask[..., None].float()  # (N, T, 1)
        return self.score((hidden * mask).sum(1) / mask.sum(1)).squeeze(-1)  # (N,)


def candidate_texts(lists: dict, cands) -> list[list[str]]:
    """texts[q][k]: "word : its gloss closest to query q" for the k-th first answer of q."""
    return [[f"{cands.words[r]} : {cands.definitions[g]}" if g >= 0 else cands.words[r]
             for r, g in zip(rows, glosses)] for rows, glosses in zip(lists["rows"].tolist(), lists["glosses"].tolist())]


def pair_texts(lists: dict, q: int, positions: list[int]) -> list[tuple[str, str]]:
    return [(lists["texts"][q], lists["candidates"][q][k]) for k in positions]


def export_bundle(model: str, lists: Path, out: Path) -> None:
    """What training needs, without the engine (the device machine has no packages of ours): the
    encoder's backbone (float16), its tokenizer and the lists with their candidates' texts."""
    from core import Engine  # here: the device machine has none of the engine's packages

    engine = Engine.load(model, decoder=None)
    engine.vocabulary.enable()
    cands = engine.words.open_vocab.candidates
    data = torch.load(lists)
    strings: dict[str, int] = {}  # every candidate text once: the lists repeat them
    bundle = {name: {"texts": part["texts"], "gold_at": part["gold_at"].tolist(),
                     "candidates": [[strings.setdefault(t, len(strings)) for t in row]
                                    for row in candidate_texts(part, cands)]}
              for name, part in data.items()}
    out.mkdir(parents=True, exist_ok=True)
    with gzip.open(out / "lists.json.gz", "wt", encoding="utf-8") as f:
        json.dump({"strings": list(strings), "lists": bundle}, f)
    backbone = engine.encoder.backbone
    (out / "config.json").write_text(json.dumps(backbone.config.raw))
    save_file({k: v.half().contiguous() for k, v in backbone.state_dict().items()}, str(out / "backbone.safetensors"))
    engine.encoder.tokenizer.save_pretrained(str(out / "tokenizer"))


def load_bundle(bundle: Path):
    config = BertConfig.from_dict(json.loads((bundle / "config.json").read_text()))
    backbone = BertModel(config)
    backbone.load_state_dict({k: v.float() for k, v in load_file(str(bundle / "backbone.safetensors")).items()})
    from transformers import AutoTokenizer
    with gzip.open(bundle / "lists.json.gz", "rt", encoding="utf-8") as f:
        stored = json.load(f)
    lists = {name: {"texts": part["texts"], "gold_at": torch.tensor(part["gold_at"]),
                    "candidates": [[stored["strings"][i] for i in row] for row in part["candidates"]]}
             for name, part in stored["lists"].items()}
    return backbone, AutoTokenizer.from_pretrained(str(bundle / "tokenizer")), lists


def list_scores(model: CrossReranker, tokenizer, pairs: list[tuple[str, str]], max_length: int) -> torch.Tensor:
    """(N,) float32 scores of N (description, candidate text) pairs."""
    batch = tokenizer([a for a, _ in pairs], [b for _, b in pairs], padding=True, truncation="longest_first",
                      max_length=max_length, return_tensors="pt")
    device = model.score.weight.device
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        return model(batch["input_ids"].to(device), batch["attention_mask"].to(device)).float()


def prior(n: int, device="cpu") -> torch.Tensor:
    return -torch.log1p(torch.arange(n, dtype=torch.float32, device=device))  # (K,) the first stage's order


def evaluate(model, tokenizer, lists, queries: list[int], pool: int, max_length: int, betas=(None,)) -> dict:
    """acc@1/acc@10/median/MRR of `queries` after reranking the first `pool` (ranks past it unchanged)."""
    model.eval()
    with torch.inference_mode():
        scores = [list_scores(model, tokenizer, pair_texts(lists, q, list(range(pool))), max_length).cpu()
                  for q in queries]
    out = {}
    for beta in betas:
        b = float(model.beta.detach()) if beta is None else beta
        ranks = []
        for q, s in zip(queries, scores):
            at = int(lists["gold_at"][q])
            if at < 0 or at >= pool:
                ranks.append(at + 1 if at >= pool else 1000)
                continue
            fused = s + b * prior(pool)
            ranks.append(int((fused > fused[at]).sum()) + 1)
        r = np.array(ranks, dtype=float)
        out[round(b, 2)] = (round(float((r <= 1).mean()), 3), round(float((r <= 10).mean()), 3), float(np.median(r)),
                            round(float((1 / r).mean()), 3))
    model.train()
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="checkpoints/defsent-minilm")
    p.add_argument("--lists", type=Path, default=Path("data/cache/reranker/lists.pt"))
    p.add_argument("--bundle", type=Path, default=Path("data/cache/reranker/bundle"))
    p.add_argument("--export", action="store_true", help="write the bundle from --model and --lists, then stop")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--rank", type=int, default=16, help="low-rank deltas of this rank; 0: train the layers whole")
    p.add_argument("--pool", type=int, default=20, help="first answers reranked")
    p.add_argument("--train-pool", type=int, default=24)
    p.add_argument("--queries-per-step", type=int, default=8)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--max-length", type=int, default=48)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--save", type=Path)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.export:
        return export_bundle(args.model, args.lists, args.bundle)
    backbone, tokenizer, data = load_bundle(args.bundle)
    train, human = data["train"], data["human"]
    usable = [q for q in range(len(train["texts"])) if 0 <= int(train["gold_at"][q]) < 50]
    held, usable = usable[:len(usable) // 10], usable[len(usable) // 10:]  # lists never trained on: is the task learnt?
    print(f"{len(usable)} training lists with their word in the first 50, {len(held)} held out", flush=True)
    model = CrossReranker(backbone, args.layers, args.rank).to(args.device)
    betas = [model.beta]
    params = [p for p in model.parameters() if p.requires_grad and p is not model.beta]
    optimizer = torch.optim.AdamW([{"params": params}, {"params": betas, "lr": 0.05, "weight_decay": 0.0}],
                                  lr=args.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, [args.lr, 0.05], total_steps=args.steps, pct_start=0.1)
    everyone = list(range(len(human["texts"])))
    print("first stage alone: human", evaluate(model, tokenizer, human, everyone, 1, args.max_length, betas=(1.0,)),
          flush=True)
    rng = random.Random(0)
    started = time.time()
    k = args.train_pool
    for step in range(1, args.steps + 1):
        pairs, golds = [], []
        for q in rng.sample(usable, args.queries_per_step):
            at = int(train["gold_at"][q])
            positions = list(range(k - 1)) + [at if at >= k - 1 else k - 1]
            golds.append(min(at, k - 1))
            pairs += pair_texts(train, q, positions)
        s = list_scores(model, tokenizer, pairs, args.max_length).view(-1, k)  # (Q, K)
        fused = s + model.beta * prior(k, s.device)
        loss = nn.functional.cross_entropy(fused, torch.tensor(golds, device=s.device))
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if step % 50 == 0:
            print(f"step {step} loss {loss.item():.3f} beta {model.beta.item():.2f} {time.time() - started:.0f}s",
                  flush=True)
        if step % args.eval_every == 0 or step == args.steps:
            print(f"step {step} human", evaluate(model, tokenizer, human, everyone, args.pool, args.max_length,
                                                 betas=(None, 0.5, 1.0, 2.0, 4.0)), flush=True)
            print(f"step {step} held-out gcide", evaluate(model, tokenizer, train, held, args.pool, args.max_length,
                                                          betas=(None, 0.0, 1.0)), flush=True)
    if args.save:
        trained = {k: v.detach().half().cpu() for k, v in model.named_parameters() if v.requires_grad}
        torch.save({"state": trained, "args": {k: str(v) for k, v in vars(args).items()}}, args.save)


if __name__ == "__main__":
    main()
