"""Decode the Vec2Sent paper's analogies and an interpolation with the shipped models (docs/vec2sent.md table).

    python scripts/analogies.py [--model checkpoints/defsent-minilm] [--beam 5] [--precision float32]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import Engine  # noqa: E402
from core.checkpoint import DEFAULT_CHECKPOINT  # noqa: E402
from core.hardware import PRECISIONS  # noqa: E402
from core.vec2sent.refine import RefineSettings  # noqa: E402

# (a, b, c) for z = a - b + c, the paper's notation; engine.analogy(x, y, z) reads y - x + z
PAPER_ANALOGIES = [("he visits italy", "he eats pizza", "she drinks wine"),
                   ("he is a doctor", "his name is robert", "her name is julia")]
INTERPOLATION = ("he visits italy", "she drinks wine")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_CHECKPOINT)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--precision", default="float32", choices=PRECISIONS)
    parser.add_argument("--steps", type=int, default=5, help="interpolation points")
    args = parser.parse_args()
    torch.set_num_threads(1)
    engine = Engine.load(args.model, decoder=None)
    engine.set_decoder("auto", args.model.parent, args.precision)
    if engine.decoder is None:
        print(f"no Vec2Sent decoder beside {args.model} was trained on it", file=sys.stderr)
        return 2
    print(f"| a - b + c | decoded (greedy) | beam {args.beam} | beam {args.beam}, reranked | "
          f"beam {args.beam}, refined | top words |\n|---|---|---|---|---|---|")
    for a, b, c in PAPER_ANALOGIES:
        result = engine.analogy(b, a, c, beam=args.beam)
        greedy = engine.decode(result.vector, beam=1)[0]
        likeliest = engine.decode(result.vector, beam=args.beam, rerank=False)[0]
        refined = engine.decode(result.vector, beam=args.beam, refine=RefineSettings())[0]
        words = ", ".join(w for w, _ in result.words[:5])
        print(f"| {a} − {b} + {c} | {greedy} | {likeliest} | {result.decoded} | {refined} | {words} |")
    print(f"\n| alpha | decoded (beam {args.beam}, reranked) | refined | cos to x | cos to y | top words |\n"
          "|---:|---|---|---:|---:|---|")
    points = engine.interpolate(*INTERPOLATION, steps=args.steps, beam=args.beam)
    refined = engine.decode(np.stack([p.vector for p in points]), beam=args.beam, refine=RefineSettings())
    for point, edited in zip(points, refined):
        words = ", ".join(w for w, _ in point.words[:3])
        print(f"| {point.alpha:.2f} | {point.decoded} | {edited} | {point.cos_x:.2f} | {point.cos_y:.2f} | {words} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
