"""Probe (not shipped): how still a fine-tune's aligned map of every word keeps the words it did not teach
(issue 39: "aligned to the base one so that a word's move is visible").

    python -m core vocabulary-map --model FINE_TUNE      # the aligned layout and its own words' moves
    python -m research.alignment_probe --model FINE_TUNE

For every word both maps hold, the distance between its place on the shipped model's map and on the
fine-tune's, in word spacings (the median distance between neighbouring words) and in % of the map's width;
and the length of the fine-tune's own words' moves, for comparison.
"""
from __future__ import annotations

import argparse

import numpy as np

from core import Engine
from core.explore.vocabulary_map import load_moves, word_spacing
from core.paths import user_cache_dir


def layout_of(engine: Engine) -> tuple[list[str], np.ndarray]:
    """(candidate words, their map (C, 2)) of `engine`, read from the user cache (`vocabulary-map` wrote it)."""
    engine.enable_open_vocabulary(cache_dir=user_cache_dir("open-vocab"), compact=False)
    return engine.words.open_vocab.candidates.words, np.load(engine.vocabulary_layout_path())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a fine-tuned checkpoint whose map was aligned to the shipped one")
    args = p.parse_args()
    parent_words, parent = layout_of(Engine.load(decoder=None, open_vocabulary=False))
    child = Engine.load(args.model, decoder=None, open_vocabulary=False)
    child_words, coords = layout_of(child)
    where = {w: i for i, w in enumerate(parent_words)}
    pairs = np.array([(i, where[w]) for i, w in enumerate(child_words) if w in where])  # (S, 2) rows
    own = {e.word for e in child.words.user_dictionary}
    untaught = np.array([child_words[i] not in own for i in pairs[:, 0]])  # (S,)
    moved = np.linalg.norm(coords[pairs[untaught, 0]] - parent[pairs[untaught, 1]], axis=1)  # (S',)
    spacing, width = word_spacing(parent), float((parent.max(0) - parent.min(0)).max())
    print(f"{untaught.sum():,} words the fine-tune did not teach: median move {np.median(moved):.3f} "
          f"({np.median(moved) / spacing:.0f} word spacings, {100 * np.median(moved) / width:.1f} % of the map's "
          f"width), 90th percentile {100 * np.percentile(moved, 90) / width:.1f} %, within 1 % of the width: "
          f"{(moved < 0.01 * width).mean():.3f}, moved at all: {(moved > 0).sum():,} (the largest move "
          f"{100 * moved.max() / width:.1f} %)")
    moves = load_moves(child.vocabulary_layout_path())
    lengths = np.array([np.linalg.norm(np.subtract(m["after"], m["before"])) for m in moves])
    if len(lengths):
        print(f"its own {len(moves)} words' moves: median {100 * np.median(lengths) / width:.1f} % of the width")


if __name__ == "__main__":
    main()
