"""Build core/data/word-frequency.tsv.gz: how common each WordNet lemma is in everyday English, on the
Zipf scale of the `wordfreq` package (log10 of occurrences per billion words: "the" 7.7, "bird" 4.6,
"ovenbird" 0). Lemmas wordfreq has never seen are left out (they read as 0).

    pip install wordfreq==3.1.1 && python scripts/build_word_frequency.py

wordfreq's data (Speer, 2022) is licensed CC BY-SA 4.0; the table is a derived work under the same
licence (core/data/README.md). Only this script needs wordfreq; the app reads the table.
"""
from __future__ import annotations

import argparse
import gzip
from pathlib import Path

from core.lexicon.dictionary import load_wordnet_lemmas
from core.words.word_prior import FREQUENCY_FILE


def main() -> None:
    from wordfreq import zipf_frequency

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=FREQUENCY_FILE)
    args = p.parse_args()
    words = sorted({e.word for e in load_wordnet_lemmas()})
    rows = [(w, zipf_frequency(w, "en")) for w in words]
    known = [(w, z) for w, z in rows if z > 0]
    # mtime=0: the same lemmas and wordfreq version give the same bytes
    with gzip.GzipFile(args.out, "wb", mtime=0) as out:
        out.write("".join(f"{w}\t{z:.2f}\n" for w, z in known).encode("utf-8"))
    print(f"{len(known):,} of {len(words):,} lemmas have a frequency; wrote {args.out}")


if __name__ == "__main__":
    main()
