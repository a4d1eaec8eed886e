"""Genre sets for the decoder (issue 59, item 4): the genres people paste that the held-out corpus set
covers poorly, each from a source the decoder never trained on.

- headlines: news headlines of STS-B (its dev split for dev, its test split for test; the corpus leaves
  out every benchmark dev and test sentence);
- forums: answers from Q&A forums of STS-B (dev: answers-forums 2015; test: answer-answer 2016);
- tweets (dev only): bench/data/tweets-dev.txt, written by the developers; no packaged source has tweets.

    python -m bench.genre_set --out data/cache/genres     # writes dev.jsonl and test.jsonl
    python -m core vec2sent-diagnostics ... --test data/cache/genres/dev.jsonl --beams 5 --correct 1
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from core.corpus.sentences import dedup_key, normalize_cased, word_count
from core.paths import CACHE_DIR, SENTEVAL_DIR

TWEETS_DEV = Path(__file__).parent / "data" / "tweets-dev.txt"
STSB = Path("STS/STSBenchmark")
GENRE_OF_STS_FILE = {"headlines": "headlines", "answers-forums": "forums", "answer-answer": "forums"}
MIN_WORDS, MAX_WORDS = 4, 15  # as the held-out corpus set and the genre sets
PER_GENRE = 150


def sts_sentences(path: Path) -> dict[str, list[str]]:
    """genre -> the distinct sentences of the STS-B file's rows whose source file is a genre here."""
    out: dict[str, list[str]] = {}
    seen: set[str] = set()
    for row in path.read_text(encoding="utf-8").splitlines():
        cols = row.split("\t")
        genre = GENRE_OF_STS_FILE.get(cols[1]) if len(cols) >= 7 else None
        for text in cols[5:7] if genre else ():
            text = normalize_cased(text)
            if MIN_WORDS <= word_count(text) <= MAX_WORDS and dedup_key(text) not in seen:
                seen.add(dedup_key(text))
                out.setdefault(genre, []).append(text)
    return out


def tweets() -> list[str]:
    lines = TWEETS_DEV.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def genre_rows(by_genre: dict[str, list[str]], per_genre: int, seed: int) -> list[dict]:
    """At most `per_genre` sentences of each genre (a seeded sample), as {"text", "genre"} rows."""
    rows = []
    for genre in sorted(by_genre):
        texts = sorted(by_genre[genre])
        random.Random(seed).shuffle(texts)
        rows += [{"text": t, "genre": genre} for t in texts[:per_genre]]
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=CACHE_DIR / "genres")
    parser.add_argument("--senteval", type=Path, default=SENTEVAL_DIR)
    parser.add_argument("--per-genre", type=int, default=PER_GENRE)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)
    dev = sts_sentences(args.senteval / STSB / "sts-dev.csv") | {"tweets": tweets()}
    test = sts_sentences(args.senteval / STSB / "sts-test.csv")
    args.out.mkdir(parents=True, exist_ok=True)
    for name, by_genre in (("dev", dev), ("test", test)):
        rows = genre_rows(by_genre, args.per_genre, args.seed)
        (args.out / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        print(f"{args.out / name}.jsonl: " + ", ".join(f"{g} {min(len(t), args.per_genre)}"
                                                     for g, t in sorted(by_genre.items())))


if __name__ == "__main__":
    main()
