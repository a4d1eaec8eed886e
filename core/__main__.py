"""Reverse dictionary on the command line: `python -m core "a person who is in charge"`."""
from __future__ import annotations

import argparse
import sys

from .checkpoint import CheckpointError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core", description=__doc__)
    parser.add_argument("text", nargs="+", help="a description (several: one after another)")
    parser.add_argument("-k", type=int, default=10, help="how many words")
    parser.add_argument("--model", default=None, help="checkpoint directory (default: the shipped one)")
    parser.add_argument("--pos", default="", help="part of speech: n, v, a or r")
    parser.add_argument("--pattern", default="", help="wildcard for the word, e.g. 'l?ad*'")
    parser.add_argument("--exclude-query-words", action="store_true")
    args = parser.parse_args(argv)
    from .engine import Engine
    try:
        engine = Engine.load(args.model)
        results = engine.predict_words_batch(args.text, k=args.k, pos=args.pos, pattern=args.pattern,
                                             exclude_query_words=args.exclude_query_words)
    except (CheckpointError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for text, words in zip(args.text, results):
        print(text)
        for rank, (word, p) in enumerate(words, 1):
            print(f"  {rank:2d}. {word:<16} {p:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
