"""The commands that build or inspect data: `dictionary` (a dictionary's counts and split), `wordnet`
and `gcide` (the dictionaries from their sources, core/lexicon/), `corpus-index` (a corpus embedded on
Ray Data into a LanceDB collection, core/collection/) and `vocabulary-map` (the map of every word,
core/explore/vocabulary_map.py).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Sequence

from ..paths import CACHE_DIR, MODERN_CORPUS_DIR
from .flags import (InputError, add_threads_flag, check_range, command, parser_for, program,
                    set_threads)

MAX_BATCH = 4096  # sentences corpus-index encodes at once


# ---- data -----------------------------------------------------------------------------------------

@command("dictionary")
def dictionary(argv: Sequence[str]) -> int:
    """Counts and the split report of a dictionary file (default: the shipped WordNet)."""
    from ..lexicon.dictionary import WORDNET_PATH, largest_shared_definition_group, load_wordnet, split_by_word

    parser = parser_for("dictionary", dictionary)
    parser.add_argument("file", nargs="?", type=Path, default=WORDNET_PATH, help="gzip JSONL dictionary")
    parser.add_argument("--seed", type=int, default=0, help="seed of the 80/10/10 split by word")
    args = parser.parse_args(argv)
    entries = load_wordnet(args.file)
    print(f"{len(entries)} pairs, {len({entry.word for entry in entries})} words")
    print(f"largest group of words joined by shared definitions: {largest_shared_definition_group(entries)} words")
    print(split_by_word(entries, seed=args.seed).report())
    return 0


@command("corpus-index")
def corpus_index(argv: Sequence[str]) -> int:
    """Embed a corpus on Ray Data into a LanceDB collection, searchable by `search --in` and the app.

    python -m core corpus-index                                   # the modern corpus (vec2sent-corpus --modern)
    python -m core corpus-index --corpus posts.parquet --text-column body --out data/posts
    python -m core corpus-index --corpus FILE.jsonl --out s3://bucket/posts --ray-address ray://head:10001

    A .txt (one sentence a line), .csv, .tsv, .jsonl or .parquet file: the other columns are kept as the
    rows' metadata. Embedded on this machine (one Ray worker a CPU) or on the Ray cluster at
    --ray-address (one worker a GPU when it has GPUs). Resumable: a rerun embeds only the rows the table
    does not hold yet. Without --out the collection goes to the user cache, where the app finds the one
    named "modern" as its corpus sentences (core/collection/, docs/scale.md)."""
    from ..collection.sources import MAX_ROWS
    from ..collection.store import build_steps

    parser = parser_for("corpus-index", corpus_index)
    parser.add_argument("--corpus", type=Path, default=MODERN_CORPUS_DIR / "train.txt",
                        help=".txt (one sentence a line), .csv, .tsv, .jsonl or .parquet")
    parser.add_argument("--text-column", default=None,
                        help='the column of texts in a table (default: "text", else the only column of strings)')
    parser.add_argument("--out", default=None, metavar="PATH_OR_URI",
                        help="the LanceDB database: a folder or a URI LanceDB opens, e.g. s3://bucket/name "
                             "(default: the user cache, per model and --name)")
    parser.add_argument("--name", default="modern", help="the collection's name in the user cache (letters, digits, '-')")
    parser.add_argument("--limit", type=int, default=0, help=f"the first N rows (0: all, at most {MAX_ROWS:,})")
    parser.add_argument("--model", default=None, help="checkpoint directory (default: the shipped one)")
    parser.add_argument("--ray-address", default=None, metavar="ADDRESS",
                        help="a Ray cluster (ray://HOST:10001, or auto); default: Ray on this machine only")
    parser.add_argument("--batch-size", type=int, default=0,
                        help=f"sentences a worker encodes at once (1 to {MAX_BATCH}; 0: 32 a CPU worker, 128 a GPU)")
    args = parser.parse_args(argv)
    check_range("--batch-size", args.batch_size, 0, MAX_BATCH)
    check_range("--limit", args.limit, 0, MAX_ROWS)
    if not args.corpus.is_file() and args.corpus == MODERN_CORPUS_DIR / "train.txt":
        flag = f" --model {args.model}" if args.model else ""
        raise InputError(f"no sentence file at {args.corpus}: to index the modern corpus, {build_steps(flag)}")
    from ..collection import embed_corpus, read_corpus
    from ..collection.store import collection_uri
    from ..engine import Engine

    corpus = read_corpus(args.corpus, args.text_column, args.limit)  # bad input stops here: nothing written
    engine = Engine.load(args.model, decoder=None, open_vocabulary=False, device="cpu")  # its fingerprint
    uri = args.out or collection_uri(engine.fingerprint, args.name)
    print(f"{len(corpus):,} rows of {args.corpus.name} into {uri}", flush=True)
    collection, index = embed_corpus(corpus, uri, engine, args.model, args.ray_address, args.batch_size or None,
                                     _stage_progress(every=10.0))
    print(f"{collection.size:,} rows in {uri} ({index}); search it: {program()} search \"...\" --in {uri}")
    return 0


@command("vocabulary-map")
def vocabulary_map(argv: Sequence[str]) -> int:
    """Lay out every word of the open vocabulary on one 2-D map, once per model (core/explore/vocabulary_map.py).

    python -m core vocabulary-map                      # the shipped model: UMAP of 147k words, minutes
    python -m core vocabulary-map --model checkpoints/my-words   # a fine-tune: aligned to the shipped map

    A fine-tune's map is the shipped model's (or --align-to's): a word the fine-tune kept keeps its place, a
    word it moved or added lands on the word it now means; it keeps where each of its own words moved
    (before: where that model read its definitions; after: its place now). Uses the model's exact vectors
    (embedded first when the user cache has none: minutes). Every definition is then placed on the map, on
    its nearest word, and kept beside it. The app's Map tab draws the layout as "every word" and "every
    definition" once it exists."""
    import time

    from ..explore.vocabulary_map import build_map, default_parent

    parser = parser_for("vocabulary-map", vocabulary_map)
    parser.add_argument("--model", default=None, help="checkpoint directory (default: the shipped one)")
    parser.add_argument("--align-to", default=None,
                        help="the model whose map this one's is aligned to, with arrows for this model's own "
                             "words (default: the shipped model, for a fine-tune with its own words; 'none')")
    parser.add_argument("--seed", type=int, default=0, help="seed of the layout (UMAP)")
    add_threads_flag(parser)
    args = parser.parse_args(argv)
    set_threads(args.threads)
    from ..checkpoint import CheckpointError
    from ..engine import Engine
    from ..words.open_vocab_fit import progress
    started = time.perf_counter()
    try:
        engine = Engine.load_with_exact_vectors(args.model, progress("candidates"))
        align_to = args.align_to or str(default_parent(engine, args.model) or "none")
        parent = Engine.load_with_exact_vectors(align_to, progress("candidates")) if align_to != "none" else None
        path, moves, placed = build_map(engine, parent, args.seed)
    except (CheckpointError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    aligned = f", aligned to {align_to} with {len(moves)} of its own words' moves" if parent is not None else ""
    print(f"{len(engine.words.open_vocab.candidates):,} words laid out in {path}{aligned}, and {placed:,} "
          f"definitions on it ({time.perf_counter() - started:.0f} s)")
    return 0


def _stage_progress(every: float = 30.0) -> Callable[[str, int, int], None]:
    """A (stage, done, total) callback printing each stage's progress, rate and time left every `every` s."""
    import time
    started: dict[str, tuple[float, int]] = {}
    last = [0.0]

    def report(stage: str, done: int, total: int) -> None:
        begun, first = started.setdefault(stage, (time.monotonic(), done))
        now = time.monotonic()
        if now - last[0] < every and done < total:
            return
        last[0] = now
        rate = (done - first) / max(now - begun, 1e-9)
        left = f", {(total - done) / rate / 60:.1f} min left" if rate > 0 and done < total else ""
        print(f"  {stage}: {done:,}/{total:,} ({rate:,.0f}/s{left})", flush=True)
    return report


def _by_pos(entries) -> str:
    from collections import Counter
    return ", ".join(f"{pos or '?'} {count}" for pos, count in sorted(Counter(e.pos for e in entries).items()))


@command("wordnet")
def wordnet(argv: Sequence[str]) -> int:
    """Build core/data/wordnet.jsonl.gz (and the synsets file) from WordNet 3.0's data.* files (core/lexicon/wordnet.py).

    python -m core wordnet --wordnet-dir data/cache/wordnet-deb/usr/share/wordnet --out core/data/wordnet.jsonl.gz
    """
    from ..paths import CORE_DATA_DIR
    from ..lexicon.wordnet import write_wordnet

    parser = parser_for("wordnet", wordnet)
    parser.add_argument("--wordnet-dir", type=Path, required=True, help="folder with data.noun, data.verb, ...")
    parser.add_argument("--vocab", type=Path, help="BERT vocab.txt (default: all-MiniLM-L6-v2's)")
    parser.add_argument("--out", type=Path, default=CORE_DATA_DIR / "wordnet.jsonl.gz", help="gzip JSONL dictionary")
    parser.add_argument("--synsets-out", type=Path,
                        help="every synset with all its lemmas, the open vocabulary (default: "
                             "wordnet-synsets.jsonl.gz beside --out)")
    parser.add_argument("--copyright", type=Path,
                        help="Debian copyright file (default: WORDNET_DIR/../doc/wordnet-base/copyright)")
    args = parser.parse_args(argv)
    synsets, entries = write_wordnet(args.wordnet_dir, args.out, args.vocab, args.synsets_out, args.copyright)
    print(f"{len(synsets)} synsets, {sum(len(s.lemmas) for s in synsets)} lemmas -> {len(entries)} entries "
          f"({len({entry.word for entry in entries})} words; {_by_pos(entries)}) written to {args.out}")
    return 0


@command("gcide")
def gcide(argv: Sequence[str]) -> int:
    """Extra training definitions from GCIDE's dictd files (core/lexicon/gcide.py).

    python -m core gcide --dictd-dir data/cache/deb/gcide/usr/share/dictd --out data/cache/gcide.jsonl.gz
    """
    from ..lexicon.gcide import write_gcide

    parser = parser_for("gcide", gcide)
    parser.add_argument("--dictd-dir", type=Path, default=CACHE_DIR / "deb/gcide/usr/share/dictd",
                        help="folder with gcide.dict.dz and gcide.index (Debian dict-gcide, scripts/fetch_gcide.sh)")
    parser.add_argument("--vocab", type=Path, help="BERT vocab.txt (default: all-MiniLM-L6-v2's)")
    parser.add_argument("--out", type=Path, default=CACHE_DIR / "gcide.jsonl.gz", help="gzip JSONL dictionary")
    args = parser.parse_args(argv)
    entries = write_gcide(args.dictd_dir, args.out, args.vocab)
    print(f"{len(entries)} entries ({len({e.word for e in entries})} words; {_by_pos(entries)}) written to {args.out}")
    return 0
