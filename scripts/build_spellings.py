"""Build core/data/spellings.tsv: the British and American spellings of one word among all WordNet lemmas
(core/lexicon/spelling.py says which count).

    python scripts/build_spellings.py
"""
from __future__ import annotations

import argparse
from pathlib import Path

from core.lexicon.dictionary import load_wordnet_lemmas
from core.lexicon.spelling import SPELLINGS_FILE, spelling_groups, write_groups


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=SPELLINGS_FILE)
    args = p.parse_args()
    groups = spelling_groups(load_wordnet_lemmas())
    write_groups(groups, args.out)
    print(f"{len(groups):,} words in {len(set(groups.values())):,} groups; wrote {args.out}")


if __name__ == "__main__":
    main()
