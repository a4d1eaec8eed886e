"""A nearest-neighbour index over a large sentence collection: the modern corpus's million sentences as a
reference collection for semantic search and an analogy's or interpolation's nearest sentences (issue 39).

    python -m core corpus-index --corpus data/cache/corpus-modern/train.txt          # into the user cache
    python -m core corpus-index --corpus FILE --limit 200000 --out DIR

One folder per model and collection, built in two steps; a kill loses at most the chunk or index being made:
1. the sentences are embedded in chunks of CHUNK_ROWS, each saved (int8 unit rows, atomically) as soon as
   it is done, so a rerun embeds only the chunks still missing;
2. a FAISS index is filled from the chunks: an HNSW graph over 8-bit scalar-quantized rows, inner product
   on unit rows (= cosine), chosen by measurement against exact search, IVF-SQ8 and IVF-PQ (EF_SEARCH;
   docs/results.md, "Reference collections"), made again whole by a rerun. It is written last, so a folder
   with an index is complete.
The texts stay on disk (texts.txt and a memory-mapped array of line offsets); a row's vector is read back
from its chunk. `CorpusIndex` is a `core.readout.Reference`.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from ..atomic import atomic_file, save_json_atomically, save_npy_atomically
from ..encoder import l2_normalize
from ..paths import user_cache_dir
from ..readout import Reference
from ..words.open_vocab import int8_rows

CHUNK_ROWS = 16_384
MAX_ROWS = 10_000_000  # sentences in one collection: 3.8 GB of int8 vectors and an index as large (docs/results.md)
MANIFEST, TEXTS, OFFSETS, INDEX = "manifest.json", "texts.txt", "offsets.npy", "index.faiss"
MAX_SENTENCE_CHARS = 1_000  # longer lines are cut: the encoder reads 128 tokens of them anyway
# The index, chosen on the modern corpus's 1,028,415 sentences against exact search, IVF-SQ8 and IVF-PQ
# (bench/bench_corpus_index.py, docs/results.md): HNSW with 32 links a node over 8-bit rows, 128 candidates
# a search: recall@10 .963 in 0.8 ms a query on 2 threads, 675 MB.
HNSW_LINKS = 32
EF_SEARCH = 128
TRAINING_ROWS = 65_536  # the 8-bit quantizer learns each dimension's range from this many rows
Progress = Callable[[str, int, int], None]  # (stage, done, total)


def build_corpus_index(encode: Callable[[list[str]], np.ndarray], fingerprint: str, sentences: Sequence[str],
                       folder: Path, progress: Progress | None = None, name: str = "") -> "CorpusIndex":
    """Embed `sentences` with `encode` (texts -> unit rows (n, d)) into `folder` and index them, resuming
    from the chunks already there when the folder was begun for the same model (`fingerprint`) and texts;
    another model's or collection's folder is refused. Returns the loaded index."""
    folder.mkdir(parents=True, exist_ok=True)
    texts = [" ".join(s.split())[:MAX_SENTENCE_CHARS] for s in sentences]
    manifest = {"model": fingerprint, "rows": len(texts), "chunk_rows": CHUNK_ROWS,
                "texts_sha1": hashlib.sha1("\n".join(texts).encode()).hexdigest(), "name": name or folder.name}
    _begin(folder, manifest, texts)
    started, chunks = time.monotonic(), math.ceil(len(texts) / CHUNK_ROWS)
    missing = [c for c in range(chunks) if not _chunk_path(folder, c).exists()]
    done = len(texts) - sum(len(texts[c * CHUNK_ROWS:(c + 1) * CHUNK_ROWS]) for c in missing)  # by an earlier run
    if progress:
        progress("embedding", done, len(texts))
    for c in missing:
        rows = encode(texts[c * CHUNK_ROWS:(c + 1) * CHUNK_ROWS])  # (m, d)
        save_npy_atomically(_chunk_path(folder, c), int8_rows(torch.from_numpy(rows)).numpy())
        done += len(rows)
        if progress:
            progress("embedding", done, len(texts))
    _write_index(folder, chunks, progress)
    manifest.update(seconds=round(time.monotonic() - started, 1))
    save_json_atomically(folder / MANIFEST, manifest)
    return CorpusIndex(folder)


class CorpusIndex(Reference):
    """A built folder (`build_corpus_index`): `nearest` searches the FAISS index, `rows` reads the chunks."""

    def __init__(self, folder: Path, ef_search: int = EF_SEARCH):
        import faiss

        if not (folder / INDEX).is_file():
            raise FileNotFoundError(f"{folder} holds no finished corpus index (python -m core corpus-index)")
        self.folder = folder
        self.manifest = json.loads((folder / MANIFEST).read_text())
        self.index = faiss.read_index(str(folder / INDEX))
        self.index.hnsw.efSearch = ef_search
        self.texts = DiskTexts(folder / TEXTS, np.load(folder / OFFSETS, mmap_mode="r"))
        self.name = f"{len(self.texts):,} {self.manifest['name']} sentences"

    def nearest(self, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        unit = l2_normalize(np.atleast_2d(vectors))  # (B, d)
        cosines, rows = self.index.search(unit, min(k, len(self.texts)))  # (B, k) each, -1 where none
        return [[(int(i), float(c)) for i, c in zip(r, s) if i >= 0] for r, s in zip(rows, cosines)]

    def rows(self, indices: list[int]) -> np.ndarray:
        chunk_rows = self.manifest["chunk_rows"]
        rows = np.stack([np.load(_chunk_path(self.folder, i // chunk_rows), mmap_mode="r")[i % chunk_rows]
                         for i in indices])  # (n, d) int8
        return l2_normalize(rows)


class DiskTexts(Sequence[str]):
    """Lines of a UTF-8 file read by offset (the file is not held in memory)."""

    def __init__(self, path: Path, offsets: np.ndarray):
        self.path, self.offsets = path, offsets  # offsets (n + 1,): line i is bytes offsets[i]:offsets[i + 1]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = range(len(self))[i]  # negative indices count from the end; IndexError past it
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        with open(self.path, "rb") as f:
            f.seek(start)
            return f.read(end - start).decode().rstrip("\n")


def index_folder(fingerprint: str, name: str) -> Path:
    """Where the app looks for the index of collection `name` for the model of `fingerprint`."""
    if not name.replace("-", "").isalnum():
        raise ValueError(f"a collection's name is letters, digits and '-', not {name!r}")
    return user_cache_dir("corpus-index") / f"{name}-{fingerprint[:16]}"


def build_steps(model_flag: str = "") -> str:
    """How the modern corpus's index of a model is built, both steps with what they took on a busy 2-core
    machine (docs/vec2sent.md, docs/results.md "The million-sentence index"): what the app and the
    command say when it is missing. `model_flag`: " --model X" for another model than the shipped one."""
    return ("first build the corpus, `python -m core vec2sent-corpus --modern --out data/cache/corpus-modern` "
            "(1,028,415 sentences, 8-24 min), then embed and index it for the model, `python -m core corpus-index"
            f"{model_flag}` (resumable; about 3.5 h on 2 CPU cores: 53-88 sentences/s, then 4 min for the index)")


def read_sentences(path: Path, limit: int = 0) -> list[str]:
    """The non-empty lines of a UTF-8 file, the first `limit` of them (0: all, at most MAX_ROWS)."""
    if not 0 <= limit <= MAX_ROWS:
        raise ValueError(f"limit must be between 0 (all) and {MAX_ROWS:,}, not {limit}")
    sentences = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                sentences.append(line.strip())
            if len(sentences) > MAX_ROWS:
                raise ValueError(f"{path} has more than {MAX_ROWS:,} sentences (line {number}); pass --limit")
            if limit and len(sentences) == limit:
                break
    if not sentences:
        raise ValueError(f"{path} holds no sentences")
    return sentences


def _begin(folder: Path, manifest: dict, texts: list[str]) -> None:
    """Write the texts and manifest of a new folder, or check that an existing one was begun alike."""
    path = folder / MANIFEST
    for partial in folder.glob("*.partial-*"):  # left by a killed run: its chunk or index is made again
        partial.unlink()
    if path.exists():
        begun = json.loads(path.read_text())
        differs = [key for key in ("model", "rows", "chunk_rows", "texts_sha1") if begun.get(key) != manifest[key]]
        if differs:
            raise ValueError(f"{folder} was begun with another {', '.join(differs)} (another model, --limit or "
                             f"corpus); choose another --name or --out, or delete the folder")
        return
    encoded = [(t + "\n").encode() for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    with open(folder / TEXTS, "wb") as f:
        f.writelines(encoded)
    save_npy_atomically(folder / OFFSETS, offsets)
    save_json_atomically(path, manifest)  # last: a folder with a manifest has its texts


def _write_index(folder: Path, chunks: int, progress: Progress | None) -> None:
    """Train the 8-bit quantizer on a sample of the rows, fill the HNSW graph chunk by chunk, write it atomically."""
    import faiss

    if (folder / INDEX).exists():
        return
    stored = [np.load(_chunk_path(folder, c), mmap_mode="r") for c in range(chunks)]  # each (m, d) int8
    rows = sum(len(chunk) for chunk in stored)
    index = faiss.index_factory(stored[0].shape[1], f"HNSW{HNSW_LINKS},SQ8", faiss.METRIC_INNER_PRODUCT)
    per_chunk = math.ceil(TRAINING_ROWS / chunks)  # the quantizer's sample is drawn from every chunk
    if progress:
        progress("indexing", 0, rows)
    index.train(np.concatenate([l2_normalize(chunk[:per_chunk]) for chunk in stored]))
    for chunk in stored:
        index.add(l2_normalize(chunk))
        if progress:
            progress("indexing", index.ntotal, rows)
    with atomic_file(folder / INDEX) as partial:
        faiss.write_index(index, str(partial))


def _chunk_path(folder: Path, c: int) -> Path:
    return folder / f"vectors-{c:05d}.npy"


