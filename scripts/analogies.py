"""Decode the app's analogy examples, the Vec2Sent paper's analogies and an interpolation with the
shipped models (docs/vec2sent.md tables).

    python scripts/analogies.py [--model checkpoints/defsent-minilm] [--decoder PATH] [--beam 5] [--precision float32]

For the app's examples (core/vec2sent/examples.py) it prints whether each decoding contains the
expected content words and the cosine between the decoded sentence's embedding and the analogy vector.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

from core import Engine
from core.checkpoint import DEFAULT_CHECKPOINT
from core.runtime.hardware import PRECISIONS
from core.vec2sent import APP_BEAM, MOST_EXACT
from core.vec2sent.examples import ANALOGY_EXAMPLES
from core.vec2sent.refine import RefineSettings
from core.text import canonical_tokens

# (a, b, c) for z = a - b + c, the paper's notation; engine.analogy(x, y, z) reads y - x + z
PAPER_ANALOGIES = [("he visits italy", "he eats pizza", "she drinks wine"),
                   ("he is a doctor", "his name is robert", "her name is julia")]
INTERPOLATION = ("he visits italy", "she drinks wine")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_CHECKPOINT)
    parser.add_argument("--decoder", default="auto",
                        help="a Vec2Sent checkpoint (default: the one beside the model that was trained on it)")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--precision", default="float32", choices=PRECISIONS)
    parser.add_argument("--steps", type=int, default=5, help="interpolation points")
    args = parser.parse_args()
    torch.set_num_threads(1)
    engine = Engine.load(args.model, decoder=None)
    engine.set_decoder(args.decoder, args.model.parent, args.precision)
    if engine.decoder is None:
        print(f"no Vec2Sent decoder beside {args.model} was trained on it", file=sys.stderr)
        return 2
    app_examples(engine, args.beam)
    print(f"\n| a - b + c | decoded (greedy) | beam {args.beam} | beam {args.beam}, reranked | "
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


def app_examples(engine: Engine, beam: int) -> None:
    """The app's analogy examples: each decoding, whether it has the expected words, its cosine."""
    exact = MOST_EXACT.correct
    print(f"| a : b :: c : ? | expected | beam {beam}, corrected once (default) | cos | beam {APP_BEAM}, corrected "
          f"{exact.rounds} times by {exact.step} (the app's most exact) | cos |\n"
          "|---|---|---|---:|---|---:|")
    found = {"default": 0, "exact": 0}
    for example in ANALOGY_EXAMPLES:
        vector = engine.reader.evaluate_expression("b - a + c", {"a": example.a, "b": example.b, "c": example.c})
        cells = []
        for name, text in (("default", engine.decode(vector, beam=beam)[0]),
                           ("exact", engine.decode(vector, MOST_EXACT)[0])):
            has = set(example.expected) <= set(canonical_tokens(text))
            found[name] += has
            cosine = float(engine.similarity([text], vector[None])[0][0]) if text.strip() else float("nan")
            cells.append(f"{text} {'✓' if has else '✗'} | {cosine:.2f}")
        print(f"| {example.a} : {example.b} :: {example.c} | {', '.join(example.expected)} | {' | '.join(cells)} |")
    print(f"\nexpected words found: default {found['default']}/{len(ANALOGY_EXAMPLES)}, "
          f"most exact {found['exact']}/{len(ANALOGY_EXAMPLES)}")


if __name__ == "__main__":
    sys.exit(main())
