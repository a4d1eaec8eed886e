"""The commands on sentence vectors, one for each thing the engine does with them: `encode` (texts to an
(n, d) float32 .npy or a .jsonl), `similarity`, `search`, `decode` (Vec2Sent), `analogy` and `interpolate`.
Each reads texts from its arguments, a file or standard input (core/cli/flags.py `texts_from`), prints text
or, with --json, one JSON document, and reports bad input in one line (exit status 2). Torch and the model
are imported and loaded only after the flags and the input have been checked.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from ..atomic import atomic_file
from .flags import (MAX_K, InputError, add_output_flags, add_text_flags, check_range, command, device_from_flag,
                    parser_for, print_json, texts_from)

VECTOR_FILES = (".npy", ".jsonl")  # what `encode` writes and `decode` / `search --in` read back
MAX_BEAM = 20
MAX_STEPS = 50


# ---- encode, similarity, search -------------------------------------------------------------------

@command("encode")
def encode(argv: Sequence[str]) -> int:
    """Sentence vectors: texts to an (n, d) float32 .npy, or a .jsonl of {"text", "vector"} lines.

    python -m core encode "a sentence to embed" "another" --out vectors.npy
    python -m core encode --file sentences.txt --out vectors.jsonl --normalize
    """
    parser = parser_for("encode", encode)
    add_text_flags(parser)
    parser.add_argument("--out", type=Path, required=True, help="FILE.npy ((n, d) float32) or FILE.jsonl")
    parser.add_argument("--normalize", action="store_true", help="unit-length rows (cosine = dot product)")
    add_output_flags(parser)
    args = parser.parse_args(argv)
    if args.out.suffix not in VECTOR_FILES:
        raise InputError(f"--out must end in .npy or .jsonl, not {args.out.name!r}")
    if not args.out.parent.is_dir():
        raise InputError(f"--out: no folder {args.out.parent}")
    texts = texts_from(args)
    engine = _load(parser, args)
    vectors = engine.encode(texts, normalize=args.normalize)
    write_vectors(args.out, texts, vectors)
    summary = {"out": str(args.out), "rows": int(vectors.shape[0]), "dimensions": int(vectors.shape[1])}
    print_json(summary) if args.json else print(f"wrote {args.out}: {summary['rows']} x {summary['dimensions']} float32")
    return 0


@command("similarity")
def similarity(argv: Sequence[str]) -> int:
    """Cosine similarity of the first text with each of the others.

    python -m core similarity "a cat sat on the mat" "a kitten rested on the rug" "stock prices fell"
    """
    parser = parser_for("similarity", similarity)
    add_text_flags(parser, "texts: the first is compared with each of the others")
    add_output_flags(parser)
    args = parser.parse_args(argv)
    texts = texts_from(args, minimum=2)
    cosines = _load(parser, args).similarity(texts[:1], texts[1:])[0]
    rows = [{"text": text, "cosine": float(c)} for text, c in zip(texts[1:], cosines)]
    if args.json:
        print_json({"text": texts[0], "similar": rows})
        return 0
    print(texts[0])
    for row in rows:
        print(f"  {row['cosine']:+.3f}  {row['text']}")
    return 0


@command("search")
def search(argv: Sequence[str]) -> int:
    """Semantic search: the texts of a collection nearest to each query, by cosine.

    python -m core search "a musical instrument with strings" --in sentences.txt -k 5
    python -m core search "a musical instrument with strings" --in vectors.jsonl   # vectors from `encode`
    python -m core search "a musical instrument with strings" --in data/posts      # from `corpus-index`
    """
    parser = parser_for("search", search)
    add_text_flags(parser, "a query")
    parser.add_argument("--in", dest="collection", required=True, metavar="FILE_OR_URI",
                        help="the collection: texts one a line, what `encode` wrote (.jsonl, or .npy: rows by "
                             "number), or a LanceDB collection `corpus-index` wrote (a folder or URI)")
    parser.add_argument("-k", type=int, default=10, help=f"how many texts a query (1 to {MAX_K})")
    add_output_flags(parser)
    args = parser.parse_args(argv)
    check_range("-k", args.k, 1, MAX_K)
    queries = texts_from(args)
    from ..collection.store import is_collection

    stored = is_collection(args.collection)
    if not stored and not Path(args.collection).is_file():
        raise InputError(f"--in: no file or collection {args.collection}")
    engine = _load(parser, args)
    if stored:
        found = _search_collection(engine, queries, args.collection, args.k)
    else:
        texts, vectors = read_collection(Path(args.collection), engine)
        hits = engine.semantic_search(engine.encode(queries), vectors, top_k=args.k)
        found = [{"query": q, "hits": [{"text": texts[h["corpus_id"]], "row": h["corpus_id"], "cosine": h["score"]}
                                       for h in row]} for q, row in zip(queries, hits)]
    if args.json:
        print_json(found)
        return 0
    for result in found:
        print(result["query"])
        for rank, hit in enumerate(result["hits"], 1):
            print(f"  {rank:2d}. {hit['cosine']:+.3f}  {hit['text']}")
    return 0


def _search_collection(engine, queries: list[str], uri: str, k: int) -> list[dict]:
    """`search` over a LanceDB collection: each hit's row is its row id, with the collection's metadata columns."""
    from ..collection import Collection

    collection = Collection(uri, engine.fingerprint)  # another model's table is refused
    hits = collection.search(engine.encode(queries, normalize=True), k, collection.columns)
    return [{"query": q, "hits": [{"text": h.pop("text"), "row": h.pop("row_id"), "cosine": h.pop("cosine"),
                                   "columns": h} for h in row]} for q, row in zip(queries, hits)]


# ---- decode, analogy, interpolate (core/readout.py) -------------------------------------------------

@command("decode")
def decode(argv: Sequence[str]) -> int:
    """Vec2Sent: one sentence for each vector of a file `encode` wrote (.npy (n, d) or (d,), or .jsonl).

    python -m core decode vectors.npy --beam 5
    """
    from ..vec2sent.reading import API_DEFAULT

    parser = parser_for("decode", decode)
    parser.add_argument("vectors", type=Path, help="FILE.npy or FILE.jsonl")
    parser.add_argument("--beam", type=int, default=API_DEFAULT.beam,
                        help=f"beam width (1: greedy; at most {MAX_BEAM})")
    add_output_flags(parser)
    args = parser.parse_args(argv)
    check_range("--beam", args.beam, 1, MAX_BEAM)
    check_vector_file(args.vectors)
    engine = _load(parser, args, decoder="auto")
    vectors = read_vectors(args.vectors, engine.encoder.hidden_size)[1]
    sentences = engine.decode(vectors, beam=args.beam)
    print_json([{"row": i, "sentence": s} for i, s in enumerate(sentences)]) if args.json else print(*sentences, sep="\n")
    return 0


@command("analogy")
def analogy(argv: Sequence[str]) -> int:
    """a : b :: c : ?  The vector b - a + c read back: its sentence (with a decoder), words and nearest texts.

    python -m core analogy "a man" "a king" "a woman"
    python -m core analogy "a man" "a king" "a woman" --in sentences.txt   # nearest among your texts
    """
    parser = parser_for("analogy", analogy)
    parser.add_argument("a", help="a sentence (or word)")
    parser.add_argument("b", nargs="?", default="", help="what a becomes")
    parser.add_argument("c", nargs="?", default="", help="what is to become as a became b")
    parser.add_argument("--expression", default="b - a + c",
                        help='another expression over a, b and c ("a" alone decodes a)')
    add_reading_flags(parser)
    args = parser.parse_args(argv)
    engine, reference = _reader(parser, args)
    reading = engine.analogy(args.a, args.b, args.c, reference=reference, k=args.k, beam=args.beam,
                             expression=args.expression)
    document = {"expression": reading.expression, "sentence_fit": reading.fit, **_reading(reading)}
    fit = "" if reading.fit is None else f" (its sentence fits it {reading.fit:.2f})"
    print_json(document) if args.json else _print_reading(reading.expression + fit, document)
    return 0


@command("interpolate")
def interpolate(argv: Sequence[str]) -> int:
    """Points from one sentence to another, each read back like an analogy.

    python -m core interpolate "a happy child" "a sad old man" --steps 5
    """
    parser = parser_for("interpolate", interpolate)
    parser.add_argument("x", help="the sentence the path starts from")
    parser.add_argument("y", help="the sentence it ends at")
    parser.add_argument("--steps", type=int, default=5, help=f"points, the two ends included (2 to {MAX_STEPS})")
    add_reading_flags(parser)
    args = parser.parse_args(argv)
    check_range("--steps", args.steps, 2, MAX_STEPS)
    engine, reference = _reader(parser, args)
    points = engine.interpolate(args.x, args.y, steps=args.steps, reference=reference, k=args.k, beam=args.beam)
    documents = [{"alpha": p.alpha, "cos_x": p.cos_x, "cos_y": p.cos_y, "sentence_fit": p.fit,
                  "sentence_cos_x": p.decoded_cos_x, "sentence_cos_y": p.decoded_cos_y, **_reading(p)} for p in points]
    if args.json:
        print_json(documents)
        return 0
    for d in documents:
        fit = "" if d["sentence_fit"] is None else f", its sentence fits it {d['sentence_fit']:.2f}"
        _print_reading(f"alpha {d['alpha']:.2f} (cos x {d['cos_x']:.2f}, cos y {d['cos_y']:.2f}{fit})", d)
    return 0


def add_reading_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of the commands that read a vector back: -k, --beam, --in, --single-token-words and output."""
    from ..vec2sent.reading import PATH_DEFAULT

    parser.add_argument("-k", type=int, default=5, help=f"how many words and nearest texts (1 to {MAX_K})")
    parser.add_argument("--beam", type=int, default=PATH_DEFAULT.beam,
                        help=f"the decoder's beam width (1 to {MAX_BEAM})")
    parser.add_argument("--in", dest="collection", type=Path, metavar="FILE",
                        help="nearest texts among these (texts one a line, or .jsonl / .npy from `encode`); "
                             "default: 2,000 WordNet definitions")
    parser.add_argument("--single-token-words", action="store_true",
                        help="words from the word head's single-token words only (skips the open vocabulary)")
    add_output_flags(parser)


def _reader(parser: argparse.ArgumentParser, args: argparse.Namespace):
    """The engine (its decoder if one fits, its open vocabulary unless --single-token-words) and the
    reference texts of --in (None: the default sample) for analogy and interpolate."""
    check_range("-k", args.k, 1, MAX_K)
    check_range("--beam", args.beam, 1, MAX_BEAM)
    engine = _load(parser, args, decoder="auto", open_vocabulary=not args.single_token_words)
    engine.vocabulary.use_now()
    if args.collection is None:
        from ..paths import user_cache_dir
        from ..readout import dictionary_reference

        return engine, dictionary_reference(engine, cache_dir=user_cache_dir("references"))
    from ..readout import EmbeddedTexts
    from ..encoder import l2_normalize

    texts, vectors = read_collection(args.collection, engine)
    return engine, EmbeddedTexts(texts, l2_normalize(vectors))


def _reading(reading) -> dict:
    """A Reading (core/readout.py) as JSON: the sentence (None without a decoder), words and nearest texts."""
    return {"sentence": reading.decoded,
            "words": [{"word": w, "probability": p} for w, p in reading.words],
            "nearest": [{"text": t, "cosine": c} for t, c in reading.nearest]}


def _print_reading(title: str, document: dict) -> None:
    from ..answers import relative_scores

    scores = relative_scores([w["probability"] for w in document["words"]])
    print(title)
    print(f"  sentence: {document['sentence'] if document['sentence'] is not None else '(no Vec2Sent decoder for this model)'}")
    print("  words:    " + ", ".join(f"{w['word']} {s}" for w, s in zip(document["words"], scores)))
    for near in document["nearest"]:
        print(f"  {near['cosine']:+.3f}  {near['text']}")


# ---- loading ------------------------------------------------------------------------------------

def _load(parser: argparse.ArgumentParser, args: argparse.Namespace, decoder: str | None = None,
          open_vocabulary: bool = False):
    """The engine of --model on --device: no decoder and no open vocabulary unless asked (encoding needs
    neither)."""
    device = device_from_flag(parser, args.device)
    from ..engine import Engine

    return Engine.load(args.model, decoder=decoder, open_vocabulary=open_vocabulary, device=device)


# ---- vector files --------------------------------------------------------------------------------

def write_vectors(path: Path, texts: Sequence[str], vectors) -> None:
    """`vectors` (n, d) float32 to `path`: a .npy of the matrix, or a .jsonl of {"text", "vector"} lines;
    written beside it first, then renamed, so a failure leaves no half-written file."""
    import numpy as np

    with atomic_file(path) as partial, open(partial, "wb") as out:
        if path.suffix == ".npy":
            np.save(out, np.asarray(vectors, dtype=np.float32))
        else:
            for text, row in zip(texts, vectors):
                out.write((json.dumps({"text": text, "vector": row.tolist()}, ensure_ascii=False) + "\n").encode())


def read_vectors(path: Path, dimensions: int):
    """(texts or None, vectors (n, d) float32) from a .npy or .jsonl that `encode` wrote; InputError for
    another file, another width than `dimensions`, or values that are not finite numbers."""
    import numpy as np

    check_vector_file(path)
    texts = None
    try:
        if path.suffix == ".npy":
            vectors = np.load(path, mmap_mode="r", allow_pickle=False)
        else:
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            texts, vectors = [str(r.get("text", "")) for r in rows], np.array([r["vector"] for r in rows])
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise InputError(f"{path.name} is not a vector file `encode` writes ({type(err).__name__}: {err})") from None
    vectors = np.atleast_2d(vectors)
    if vectors.ndim != 2 or vectors.shape[1] != dimensions or not len(vectors):
        raise InputError(f"{path.name} holds vectors of shape {tuple(vectors.shape)}: this model's are (n, {dimensions})")
    if not np.issubdtype(vectors.dtype, np.number) or not np.isfinite(vectors).all():
        raise InputError(f"{path.name} holds values that are not finite numbers")
    return texts, np.ascontiguousarray(vectors, dtype=np.float32)


def check_vector_file(path: Path) -> None:
    """InputError unless `path` is a .npy or .jsonl file that is there (checked before a model loads)."""
    if path.suffix not in VECTOR_FILES:
        raise InputError(f"{path.name}: vectors are read from .npy or .jsonl (python -m core encode --out ...)")
    if not path.is_file():
        raise InputError(f"no file {path}")


def read_collection(path: Path, engine) -> tuple[list[str], object]:
    """(texts, vectors (n, d)) of a collection: a vector file from `encode` (a .npy's rows named "row i"),
    else a text file, one text a line, encoded now."""
    if path.suffix in VECTOR_FILES:
        texts, vectors = read_vectors(path, engine.encoder.hidden_size)
        return texts or [f"row {i}" for i in range(len(vectors))], vectors
    texts = texts_from(argparse.Namespace(text=[], file=path), stdin=sys.stdin)
    return texts, engine.encode(texts)
