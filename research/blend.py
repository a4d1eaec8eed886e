"""Blend a trained checkpoint with its base: encoder weights = base + alpha * (trained - base).

DefSent training buys word prediction with some STS. Scaling the checkpoint's encoder delta walks
the line between the two models without any training (weight-space ensembling), so the trade-off
can be chosen by measurement: this CLI prints dev MRR and STS for each alpha and can save one.

    python research/blend.py --model checkpoints/defsent-minilm --alphas 0 0.25 0.5 0.75 1
    python research/blend.py --model checkpoints/defsent-minilm --alphas 0.75 --out checkpoints/NAME

Choose alpha on the dev columns; the test columns are for reporting. Measured, not adopted
(docs/results.md, "Blending"): research code, which core/ never imports.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

import torch
from safetensors.torch import load_file

from core.engine import ENCODER_DELTA, Engine
from core.lora import dense_delta
from core.paths import SENTEVAL_DIR


class BlendedEngine:
    """The base encoder of checkpoint `path` with its head, whose delta can be scaled by `set_alpha`."""

    def __init__(self, path: Path):
        self.engine = Engine.load(path, untrained=True, decoder=None)
        self.delta = dense_delta(load_file(str(path / ENCODER_DELTA)))
        state = self.engine.encoder.state_dict()
        self.base = {k: state[k].clone() for k in self.delta}
        self.alpha = 0.0

    def set_alpha(self, alpha: float) -> Engine:
        """Make the encoder base + alpha * delta (alpha 0: the base, 1: the checkpoint); return the engine."""
        state = self.engine.encoder.state_dict()
        with torch.no_grad():
            for name, d in self.delta.items():
                state[name].copy_(self.base[name] + alpha * d)
        self.engine.weights_changed()
        if self.engine.words.vectors is not None:  # they come from the encoder: recompute
            self.engine.add_word_vectors(self.engine.words.vectors.scale)
        self.alpha = alpha
        return self.engine


def measure(engine: Engine, split, senteval: Path) -> dict[str, float]:
    """Dev and test MRR / top-10 on the WordNet split; STS-B dev and test, SICK-R test when present."""
    from core.evaluation.sts import StsScore, evaluate_sts, load_sick_relatedness, load_sts_benchmark
    from core.words.word_eval import evaluate_words

    row: dict[str, float] = {}
    for part in ("dev", "test"):
        metrics = evaluate_words(engine, getattr(split, part))
        row[f"{part} MRR"], row[f"{part} top-10"] = metrics["mrr"], metrics["top10"]
    files = {"STS-B dev": ("STS/STSBenchmark/sts-dev.csv", load_sts_benchmark),
             "STS-B test": ("STS/STSBenchmark/sts-test.csv", load_sts_benchmark),
             "SICK-R test": ("SICK/SICK_test_annotated.txt", load_sick_relatedness)}
    for name, (file, loader) in files.items():
        if (senteval / file).is_file():
            score: StsScore = evaluate_sts(engine, {"all": loader(senteval / file)}, show_progress=False)
            row[name] = score.all
    return row


def main(argv: Sequence[str] | None = None) -> int:
    from core.lexicon.dictionary import load_wordnet, split_by_word

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="trained checkpoint directory")
    parser.add_argument("--alphas", type=float, nargs="+", default=[0.0, 0.25, 0.5, 0.75, 1.0])
    parser.add_argument("--out", type=Path, help="save the blend of the (single) --alphas value here")
    parser.add_argument("--senteval", type=Path, default=SENTEVAL_DIR)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args(argv)
    if args.out and len(args.alphas) != 1:
        parser.error("--out saves one blend: give exactly one --alphas value")
    if args.threads:
        torch.set_num_threads(args.threads)

    blend = BlendedEngine(args.model)
    manifest = blend.engine.manifest
    split = split_by_word(load_wordnet(), seed=manifest.get("training", {}).get("split_seed", 0))
    rows = {}
    for alpha in args.alphas:
        engine = blend.set_alpha(alpha)
        engine.set_precision("auto")  # bfloat16 where the CPU has it: same STS-B, 2.8x faster
        rows[alpha] = measure(engine, split, args.senteval)
        print(f"alpha {alpha}: " + ", ".join(f"{k} {_cell(k, v)}" for k, v in rows[alpha].items()), flush=True)
    columns = list(rows[args.alphas[0]])
    print("\n| alpha | " + " | ".join(columns) + " |\n|---:|" + "---:|" * len(columns))
    for alpha, row in rows.items():
        print(f"| {alpha} | " + " | ".join(_cell(c, row[c]) for c in columns) + " |")
    if args.out:
        training = {**manifest.get("training", {}), "blend": {"from": str(args.model), "alpha": args.alphas[0]}}
        engine.save(args.out, name=args.out.name, training=training,
                    metrics={**manifest.get("metrics", {}), "blend": rows[args.alphas[0]]})
        print(f"saved {args.out}")
    return 0


def _cell(column: str, value: float) -> str:
    return f"{value:.3f}" if "MRR" in column or "top" in column else f"{value:.2f}"  # STS: Spearman x100


if __name__ == "__main__":
    sys.exit(main())
