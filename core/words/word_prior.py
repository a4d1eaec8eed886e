"""What a person most likely means before reading their description: a common word. People describe
"bird", rarely "ovenbird"; the open vocabulary's channels cannot tell them apart, since both have
definitions that fit "an animal with wings that flies and builds nests".

The prior of a candidate is its frequency in everyday English on the Zipf scale (log10 of occurrences
per billion words; `wordfreq`, shipped as core/data/word-frequency.tsv.gz by
scripts/build_word_frequency.py). A word the table lacks (a rare, taxonomic or invented word) reads 0;
a word of the user's own dictionary reads at least `USER_WORD_ZIPF`, since they added it to find it.
"""
from __future__ import annotations

import gzip
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..paths import CORE_DATA_DIR

FREQUENCY_FILE = CORE_DATA_DIR / "word-frequency.tsv.gz"
USER_WORD_ZIPF = 4.0  # about "tree" or "bridge": a user's own word is as likely as a common one


@lru_cache(maxsize=2)
def load_frequencies(path: Path = FREQUENCY_FILE) -> dict[str, float]:
    """word -> Zipf frequency for every word the table holds (read once)."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return {word: float(zipf) for word, zipf in (line.rstrip("\n").split("\t") for line in lines)}


def zipf_frequencies(words: Sequence[str], user_words: Iterable[str] = ()) -> np.ndarray:
    """(len(words),) float32: each word's Zipf frequency, 0 where unknown, at least USER_WORD_ZIPF
    for the `user_words`."""
    table, users = load_frequencies(), set(user_words)
    return np.array([max(table.get(w, 0.0), USER_WORD_ZIPF if w in users else 0.0) for w in words],
                    dtype=np.float32)


# (lowest Zipf frequency, name) from the most common band down: a word falls in the first it reaches
FREQUENCY_BANDS = ((4.0, "common (Zipf 4+)"), (3.0, "everyday (Zipf 3-4)"), (1.0, "rare (Zipf 1-3)"),
                   (float("-inf"), "rarest or unknown"))


def frequency_bands(words: Sequence[str]) -> list[str]:
    """Each word's FREQUENCY_BANDS name (a map's colour by frequency)."""
    return [next(name for lowest, name in FREQUENCY_BANDS if zipf >= lowest) for zipf in zipf_frequencies(words)]
