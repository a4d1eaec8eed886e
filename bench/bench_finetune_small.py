"""The Fine-tune tab's defaults on small glossaries (issue 62, 7): a glossary of 40 entries got 6 training steps
from 3 epochs and learned nothing. Prints a Markdown table, one row per glossary and number of steps.

    python -m bench.bench_finetune_small --glossaries 3 --steps 6 150 [--lr 5e-5 2e-4] [--rehearsal 0 16] [--guard 300]

Each glossary (fixed seeds) has 40 words of WordNet's held-out lemmas (`lemma_split().test`: neither the encoder
nor its word tower trained on them), one definition each: 15 words, 10 phrases and 15 invented names given a
held-out word's definition (their spelling says nothing, as with jargon). Each run is the Fine-tune tab's job
body (app/shared/finetune.py `run_finetune`) with the default settings but Max steps (6: what 3 epochs of 2 batches
gave). Columns: the dev MRR at the run's first and best evaluation, the held-out words' MRR among the glossary's
words before and after, and how many words of each part of the split the trained model still misses
(`still_missed`: its definition's first answer is another word).
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

SYLLABLES = ["bra", "clo", "dre", "fli", "gor", "hux", "jan", "kel", "lum", "mip", "nob", "pra", "quo", "rud",
             "sil", "tov", "ulk", "vex", "wim", "yar", "zed", "och", "arn", "isk"]
COUNTS = {"words": 15, "phrases": 10, "invented": 15}


def glossary(held_out, seed: int):
    """40 entries (core.lexicon.dictionary.Entry) of the held-out lemmas `held_out`, drawn with `seed`."""
    from core.lexicon.dictionary import Entry

    rng = random.Random(seed)
    first: dict[str, Entry] = {}
    for entry in held_out:
        if 15 <= len(entry.definition) <= 160:
            first.setdefault(entry.word, entry)
    words = sorted(first)
    rng.shuffle(words)
    single = [w for w in words if w.isalpha()]
    phrases = [w for w in words if " " in w and all(p.isalpha() for p in w.split())]
    chosen = single[:COUNTS["words"]] + phrases[:COUNTS["phrases"]]
    invented = single[COUNTS["words"]:COUNTS["words"] + COUNTS["invented"]]
    names = ["".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 3)))) for _ in invented]
    return ([Entry(w, first[w].definition, first[w].pos) for w in chosen]
            + [Entry(name, first[w].definition, first[w].pos) for name, w in zip(names, invented)])


def run(model: Path, entries, steps: int, out: Path, lr: float | None = None, guard=(), rehearsal: int | None = None,
        lora_rank: int = 0) -> dict:
    """One fine-tune of `model` on `entries` for `steps` steps at learning rate `lr` (None: the tab's), the
    tab's other settings: what it measured, and the trained model's MRR on the WordNet entries `guard` (what it
    knew before the glossary; nan without)."""
    from app.shared.finetune import FinetuneSettings, UploadData, run_finetune
    from core import Engine
    from core.lexicon.dictionary import split_by_word

    class Quiet:
        def report(self, **progress):
            pass

        def record(self, **point):
            pass

    split = split_by_word(entries, seed=0)
    upload = UploadData.pack("glossary.tsv", "", 0, entries, len(split.train))
    started = time.perf_counter()
    result = run_finetune(Quiet(), lambda: Engine.load(model, open_vocabulary=False), upload,
                          FinetuneSettings(max_steps=steps, **({} if lr is None else {"lr": lr}),
                                            **({} if rehearsal is None else {"rehearsal": rehearsal}),
                                            lora_rank=lora_rank), model.name, out)
    history = [h for h in result.training["result"]["history"] if "mrr" in h.get("dev", h)]
    dev = [h.get("dev", h)["mrr"] for h in history]
    return {"seconds": time.perf_counter() - started, "dev_first": dev[0] if dev else float("nan"),
            "dev_best": result.training["result"]["best_dev"].get("mrr", float("nan")),
            "before": result.before["mrr"], "after": result.after["mrr"], "missed": result.missed,
            "guard": guard_mrr(out, guard)}


def guard_mrr(model: Path, entries) -> float:
    """`model`'s word-prediction MRR on `entries` (nan for none)."""
    from core import Engine
    from core.words.word_eval import evaluate_words

    return evaluate_words(Engine.load(model, open_vocabulary=False, decoder=None), entries)["mrr"] if entries else float("nan")


def main(argv: list[str] | None = None) -> int:
    from core.checkpoint import DEFAULT_CHECKPOINT
    from core.lexicon.dictionary import lemma_split
    from core.train import MAX_REHEARSAL

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_CHECKPOINT)
    parser.add_argument("--glossaries", type=int, default=3, help="glossaries drawn (seeds 0..N-1)")
    parser.add_argument("--first", type=int, default=0, help="the first glossary's seed")
    parser.add_argument("--steps", type=int, nargs="+", default=[6, 150])
    parser.add_argument("--lr", type=float, nargs="+", default=[None], help="learning rates (default: the tab's)")
    parser.add_argument("--guard", type=int, default=0,
                        help="WordNet test definitions (not the glossary's words) scored before and after")
    parser.add_argument("--rehearsal", type=int, nargs="+", default=[None],
                        help="WordNet definitions rehearsed a batch (default: the tab's)")
    parser.add_argument("--lora-rank", type=int, default=0, help="> 0: train a low-rank delta of this rank instead")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    if not 1 <= args.glossaries <= 10 or not 0 <= args.first <= 100 or not all(1 <= s <= 2_000 for s in args.steps):
        parser.error("--glossaries from 1 to 10, --first from 0 to 100, --steps from 1 to 2,000")
    if not all(lr is None or 0 < lr <= 1e-2 for lr in args.lr):
        parser.error("--lr above 0, at most 1e-2")
    if not all(r is None or 0 <= r <= MAX_REHEARSAL for r in args.rehearsal) or not 0 <= args.lora_rank <= 64:
        parser.error(f"--rehearsal from 0 to {MAX_REHEARSAL}, --lora-rank from 0 to 64")
    import torch

    torch.set_num_threads(args.threads)
    held_out = lemma_split().test
    glossaries = {seed: glossary(held_out, seed) for seed in range(args.first, args.first + args.glossaries)}
    used = {text for entries in glossaries.values() for e in entries for text in (e.word, e.definition)}
    guard = [e for e in held_out if e.word not in used and e.definition not in used][:args.guard]
    if guard:
        print(f"guard: {len(guard)} WordNet test definitions, MRR before {guard_mrr(args.model, guard):.3f}", flush=True)
    print("| glossary | steps | lr | rehearsal | s | dev MRR first -> best | held-out MRR before -> after | "
          "still missed: training | dev | held out | guard MRR after |\n|---|---:|---:|---:|---:|---|---|---|---|---|---:|",
          flush=True)
    runs = [(steps, lr, rehearsal) for steps in args.steps for lr in args.lr for rehearsal in args.rehearsal]
    with tempfile.TemporaryDirectory() as tmp:
        for seed, entries in glossaries.items():
            for steps, lr, rehearsal in runs:
                r = run(args.model, entries, steps, Path(tmp) / f"g{seed}-{steps}-{lr}-{rehearsal}", lr, guard, rehearsal,
                        args.lora_rank)
                missed = {name: f"{len(p['missed'])}/{p['words']}" for name, p in r["missed"].items()}
                shown = [f"{v:g}" if v is not None else "default" for v in (lr, rehearsal)]
                print(f"| {seed} | {steps} | {shown[0]} | {shown[1]} | {r['seconds']:.0f} | {r['dev_first']:.3f} -> "
                      f"{r['dev_best']:.3f} | {r['before']:.3f} -> {r['after']:.3f} | {missed['training']} | "
                      f"{missed['dev']} | {missed['held out']} | {r['guard']:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
