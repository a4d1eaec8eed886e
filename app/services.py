"""Engine-level helpers the app needs and the engine lacks: dictionary look-ups, the reverse
dictionary with definitions, similarity, semantic search, analogy, interpolation, nearest sentences.

Everything here returns plain data (lists, dataclasses, numpy arrays); rendering is in `app.views`.
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from core.dictionary import Entry, load_wordnet
from core.engine import Engine
from core.vec2sent import evaluate_expression

from .settings import cache_dir

Progress = Callable[..., object]  # progress(fraction, desc=...) like gr.Progress
POS_CODES = {"any": "", "noun": "n", "verb": "v", "adjective": "a", "adverb": "r"}
POS_NAMES = {code: name for name, code in POS_CODES.items() if code}
MAX_QUERY_CHARS = 1000
MAX_SENTENCES = 50
MAX_CORPUS_LINES = 20_000
REFERENCE_SIZE = 2000


def no_progress(*_args, **_kwargs) -> None:
    """A progress callback that ignores its calls."""


def check_text(text: str | None, what: str = "the text") -> str:
    """The stripped text; ValueError when it is empty or too long."""
    text = (text or "").strip()
    if not text:
        raise ValueError(f"Please enter {what}.")
    if len(text) > MAX_QUERY_CHARS:
        raise ValueError(f"{what.capitalize()} is {len(text)} characters long; the limit is {MAX_QUERY_CHARS}.")
    return text


def text_lines(text: str | None, limit: int, what: str = "sentences") -> list[str]:
    """Non-empty stripped lines of `text`; ValueError when there are none or more than `limit`."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"Please enter some {what}, one per line.")
    if len(lines) > limit:
        raise ValueError(f"{len(lines)} {what} given; the limit is {limit}.")
    return lines


def read_text_file(path: str | Path, limit: int = MAX_CORPUS_LINES) -> list[str]:
    """Lines of an uploaded UTF-8 text file (one sentence per line)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("The file is not UTF-8 text; save it as UTF-8 with one sentence per line.") from None
    return text_lines(text, limit, "lines in the file")


# ---- the dictionary -------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def wordnet_index() -> dict[str, tuple[Entry, ...]]:
    """word -> its WordNet entries (the shipped dictionary)."""
    index: dict[str, list[Entry]] = {}
    for entry in load_wordnet():
        index.setdefault(entry.word, []).append(entry)
    return {word: tuple(entries) for word, entries in index.items()}


def definitions_of(word: str, limit: int = 3) -> list[Entry]:
    """Up to `limit` WordNet entries of `word` (empty when the dictionary lacks it)."""
    return list(wordnet_index().get(word, ()))[:limit]


def dictionary_sample(size: int, seed: int = 0) -> list[Entry]:
    """A fixed random sample of WordNet entries (the same for the same size and seed)."""
    entries = load_wordnet()
    return random.Random(seed).sample(entries, min(size, len(entries)))


def vocabulary_sample(engine, size: int, seed: int = 0) -> list[tuple[str, str]]:
    """(word, part of speech) for a sample of the head's whole-word tokens that WordNet defines."""
    index = wordnet_index()
    words = sorted(w for w in engine.vocab.id_of if w in index)
    chosen = random.Random(seed).sample(words, min(size, len(words)))
    return [(word, index[word][0].pos) for word in chosen]


# ---- reverse dictionary -----------------------------------------------------------------------

@dataclass
class WordRow:
    """One predicted word with its probability and dictionary definitions."""
    word: str
    probability: float
    definitions: list[Entry]


@dataclass(frozen=True)
class WordQuery:
    """A reverse-dictionary request: the description and its filters."""
    text: str
    k: int = 10
    pos: str = "any"
    min_length: int = 0
    max_length: int = 0
    initial: str = ""
    pattern: str = ""
    exclude_query_words: bool = False

    def filters(self) -> dict:
        """Keyword filters for Engine.predict_words; ValueError for impossible values."""
        if self.pos not in POS_CODES:
            raise ValueError(f"Unknown part of speech {self.pos!r}; choose one of {', '.join(POS_CODES)}.")
        lo, hi = int(self.min_length or 0), int(self.max_length or 0)
        if lo < 0 or hi < 0 or (hi and lo > hi):
            raise ValueError(f"Word length from {lo} to {hi} is impossible.")
        initial = (self.initial or "").strip().lower()
        if initial and not initial.isalpha():
            raise ValueError("The initial letter filter takes letters only.")
        return {"pos": POS_CODES[self.pos], "min_length": lo, "max_length": hi,
                "initial": initial, "pattern": (self.pattern or "").strip()}


def reverse_dictionary(engine, query: WordQuery) -> list[WordRow]:
    """Ranked words for a description, each with up to three WordNet definitions."""
    text = check_text(query.text, "a description")
    if not 1 <= int(query.k) <= 100:
        raise ValueError("The number of words must be between 1 and 100.")
    words = engine.predict_words(text, k=int(query.k), exclude_query_words=query.exclude_query_words,
                                 **query.filters())
    return [WordRow(word, p, definitions_of(word)) for word, p in words]


# ---- similarity and search --------------------------------------------------------------------

def pair_cosine(engine, a: str, b: str) -> float:
    """Cosine similarity of two texts."""
    return float(engine.similarity([check_text(a, "the first text")], [check_text(b, "the second text")])[0, 0])


def similarity_matrix(engine, text: str) -> tuple[list[str], np.ndarray]:
    """The sentences (one per line) and their cosine matrix."""
    sentences = text_lines(text, MAX_SENTENCES)
    if len(sentences) < 2:
        raise ValueError("Enter at least two sentences, one per line.")
    return sentences, engine.similarity(sentences, sentences)


@dataclass
class Corpus:
    """Texts with their unit-length embeddings; `labels` (e.g. part of speech) for colouring."""
    texts: list[str]
    vectors: np.ndarray
    labels: list[str]
    name: str = ""

    def nearest(self, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """For each vector, the k most similar corpus rows as (index, cosine)."""
        hits = Engine.semantic_search(np.atleast_2d(vectors), self.vectors, top_k=k)
        return [[(h["corpus_id"], h["score"]) for h in row] for row in hits]


def embed_corpus(engine, texts: Sequence[str], labels: Sequence[str] | None = None, name: str = "",
                 progress: Progress = no_progress) -> Corpus:
    """Embed texts (normalised) into a Corpus, reporting encoding progress."""
    texts = list(texts)
    vectors = engine.encode(texts, normalize=True,
                            progress=lambda done, total: progress(done / total, desc=f"encoding {done}/{total}"))
    return Corpus(texts, vectors, list(labels) if labels is not None else [""] * len(texts), name)


def reference_corpus(engine, size: int = REFERENCE_SIZE, progress: Progress = no_progress) -> Corpus:
    """A fixed sample of WordNet definitions ("word: definition"), embedded; cached on disk per model."""
    entries = dictionary_sample(size)
    texts = [f"{e.word}: {e.definition}" for e in entries]
    file = cache_dir("embeddings") / f"wordnet-{engine.fingerprint}-{len(texts)}-{_digest(texts)}.npy"
    if file.is_file():
        vectors = np.load(file)
    else:
        vectors = embed_corpus(engine, [e.definition for e in entries], progress=progress).vectors
        np.save(file, vectors)
    return Corpus(texts, vectors, [POS_NAMES[e.pos] for e in entries], f"{len(texts):,} WordNet definitions")


def _digest(texts: Sequence[str]) -> str:
    return hashlib.sha1("\n".join(texts).encode()).hexdigest()[:10]


def semantic_search(engine, query: str, corpus: Corpus, k: int) -> list[tuple[str, float]]:
    """The k corpus texts most similar to the query, with cosines."""
    vector = engine.encode([check_text(query, "a query")], normalize=True)
    return [(corpus.texts[i], score) for i, score in corpus.nearest(vector, int(k))[0]]


# ---- analogy and interpolation ------------------------------------------------------------------

@dataclass
class VectorReading:
    """What can be read off one sentence vector: top words, nearest reference sentences, decoding."""
    words: list[tuple[str, float]]
    nearest: list[tuple[str, float]]
    decoded: str | None


def read_vectors(engine, vectors: np.ndarray, reference: Corpus, decoder=None, k: int = 5
                 ) -> list[VectorReading]:
    """Top words, nearest reference sentences and (if a decoder is given) the decoded sentence."""
    words = engine.words_for_vectors(vectors, k)
    nearest = reference.nearest(vectors, k)
    decoded = decoder.decode(vectors, beam_width=4) if decoder is not None else [None] * len(vectors)
    return [VectorReading(w, [(reference.texts[i], s) for i, s in n], d)
            for w, n, d in zip(words, nearest, decoded, strict=True)]


def analogy_vector(engine, sentences: dict[str, str], expression: str) -> np.ndarray:
    """The vector `expression` (e.g. "b - a + c") denotes over the named sentences' embeddings."""
    named = {name: check_text(text, f"sentence {name}") for name, text in sentences.items()}
    vectors = engine.encode(list(named.values()))
    return evaluate_expression(expression, dict(zip(named, vectors, strict=True)))


@dataclass
class Interpolation:
    """Points on the straight line from sentence a to sentence b."""
    alphas: np.ndarray     # (n,)
    vectors: np.ndarray    # (n, d)
    cos_a: np.ndarray      # (n,)
    cos_b: np.ndarray      # (n,)


def interpolate(engine, a: str, b: str, steps: int) -> Interpolation:
    """(1 - alpha) * u_a + alpha * u_b for `steps` alphas from 0 to 1."""
    if not 2 <= int(steps) <= 50:
        raise ValueError("The number of steps must be between 2 and 50.")
    ends = engine.encode([check_text(a, "sentence A"), check_text(b, "sentence B")])
    alphas = np.linspace(0.0, 1.0, int(steps), dtype=np.float32)
    vectors = (1 - alphas[:, None]) * ends[0] + alphas[:, None] * ends[1]
    cos = engine.similarity(vectors, ends)
    return Interpolation(alphas, vectors, cos[:, 0], cos[:, 1])
