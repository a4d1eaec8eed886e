"""The reverse dictionary's top answers for a few everyday descriptions, single-token words only
against the open vocabulary (all WordNet words and phrases).

    python scripts/open_vocab_examples.py [--model checkpoints/defsent-minilm] [DESCRIPTION ...]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from core import Engine

DESCRIPTIONS = ["a person who is in charge", "a large grey animal with a trunk", "the day after today",
                "a tool for cutting wood", "a fear of small spaces", "a frozen sweet food made from cream",
                "official rules that slow things down", "to stop trying", "to move quickly on foot",
                "a place where books are kept"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("descriptions", nargs="*", default=DESCRIPTIONS)
    p.add_argument("--model", type=Path, default=None)
    p.add_argument("-k", type=int, default=5)
    args = p.parse_args()
    engine = Engine.load(args.model, decoder=None, precision="auto")
    closed = [engine.predict_words(d, k=args.k) for d in args.descriptions]
    engine.vocabulary.enable(cache_dir=Path("data/cache/open-vocab"))
    print("| description | single-token words (before) | open vocabulary |\n|---|---|---|")
    for description, before in zip(args.descriptions, closed):
        after = engine.predict_words(description, k=args.k)
        print(f"| {description} | {', '.join(w for w, _ in before)} | {', '.join(w for w, _ in after)} |")


if __name__ == "__main__":
    main()
