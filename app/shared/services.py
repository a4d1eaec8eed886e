"""Engine-level helpers the app needs and the engine lacks: dictionary look-ups, the reverse
dictionary with definitions, similarity, semantic search, embedded corpora. (Analogy, interpolation
and decoding are engine methods: see core/readout.py.)

Everything here returns plain data (lists, dataclasses, numpy arrays); rendering is in `app.views.render`.
"""
from __future__ import annotations

import itertools
import random
import re
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from core.answers import EXCLUDE_QUERY_WORDS
from core.lexicon import Entry, load_wordnet_lemmas, written_forms
from core.encoder import l2_normalize
from core.explore import read_projector, table_columns
from core.readout import PART_OF_SPEECH, REFERENCE_SIZE, EmbeddedTexts, Reference, dictionary_reference

from ..settings import cache_dir, upload_dir

Progress = Callable[..., object]  # progress(fraction, desc=...) like gr.Progress
POS_NAMES = PART_OF_SPEECH
POS_CODES = {"any": "", **{name: code for code, name in POS_NAMES.items()}}
MAX_QUERY_CHARS = 1000
MAX_K = 100  # answers a request asks for at most: words of the reverse dictionary, rows of a collection
MAX_SENTENCES = 50
MAX_CORPUS_LINES = 20_000
MAX_TEXT_FILE_BYTES = 10_000_000
LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")  # str.splitlines' line breaks


def no_progress(*_args, **_kwargs) -> None:
    """A progress callback that ignores its calls."""


def check_k(k: int, what: str) -> int:
    """`k` as an int; ValueError unless 1 <= k <= MAX_K (`what`: what is counted, "words")."""
    if not 1 <= int(k) <= MAX_K:
        raise ValueError(f"The number of {what} must be between 1 and {MAX_K}.")
    return int(k)


def check_text(text: str | None, what: str = "the text") -> str:
    """The stripped text; ValueError when it is empty, too long, or has no letter or digit."""
    text = (text or "").strip()
    if not text:
        raise ValueError(f"Please enter {what}.")
    if len(text) > MAX_QUERY_CHARS:
        # the first letter raised alone: str.capitalize lowered the rest ("The from sentence")
        raise ValueError(f"{what[:1].upper() + what[1:]} is {len(text):,} characters long; the limit is "
                         f"{MAX_QUERY_CHARS:,}.")
    # The tokenizer drops control characters and reads emoji as unknown tokens: the model would
    # answer for an empty text, so say so instead.
    if not any(char.isalnum() for char in text):
        raise ValueError(f"Please enter {what} in words: this text has no letters or digits.")
    return text


def lines_of(text: str) -> Iterator[str]:
    """The lines of `text`, one at a time, as `str.splitlines` gives them (every line break it knows), without a
    list of them all: a pasted or uploaded text of 10 MB holds millions of short lines."""
    start = 0
    for end in LINE_BREAK.finditer(text):
        yield text[start:end.start()]
        start = end.end()
    if start < len(text):
        yield text[start:]


def text_lines(text: str | None, limit: int, what: str = "sentences") -> list[str]:
    """Non-empty stripped lines of `text`; ValueError when there are none, more than `limit`, or one is too long.
    Reads no further than the line past `limit` (`lines_of`)."""
    numbered = ((n, line.strip()) for n, line in enumerate(lines_of(text or ""), start=1))
    return _checked_lines(list(itertools.islice(((n, line) for n, line in numbered if line), limit + 1)), limit, what)


def _checked_lines(numbered: list[tuple[int, str]], limit: int, what: str) -> list[str]:
    """The texts of (line number, non-empty text) pairs; ValueError for none, more than `limit`, one too long."""
    if not numbered:
        raise ValueError(f"Please enter some {what}, one per line.")
    if len(numbered) > limit:
        raise _too_many(limit, what)
    for n, line in numbered:
        if len(line) > MAX_QUERY_CHARS:
            raise ValueError(f"Line {n} is {len(line):,} characters long; the limit is {MAX_QUERY_CHARS:,} per line.")
    return [line for _, line in numbered]


def _too_many(limit: int, what: str) -> ValueError:
    return ValueError(f"More than {limit:,} {what} given; the limit is {limit:,}.")


def _rows_with_text(table: str, most: int) -> int:
    """How many rows of a tab-separated `table` below its first non-blank line (the header) have a text in their
    first column, counted line by line and no further than `most`."""
    rows = (line for line in lines_of(table) if line.strip())
    next(rows, None)
    return sum(1 for _ in itertools.islice((row for row in rows if row.split("\t", 1)[0].strip()), most))


def discard_upload(path: str | Path, uploads: Path | None = None) -> bool:
    """Delete an uploaded file once it has been read, with its per-upload folder if that is now
    empty; only inside Gradio's upload folder (`uploads`), never a file elsewhere. True if deleted."""
    path, uploads = Path(path).resolve(), (uploads or upload_dir()).resolve()
    if not path.is_relative_to(uploads) or path == uploads or not path.is_file():
        return False
    path.unlink()
    if path.parent != uploads and not any(path.parent.iterdir()):
        path.parent.rmdir()
    return True


def read_text_file(path: str | Path, limit: int = MAX_CORPUS_LINES) -> tuple[list[str], dict[str, list[str]]]:
    """(texts, columns) of an uploaded UTF-8 text file; its size is checked before reading. A file whose
    first line holds a tab, as do most of its lines (blank ones aside) as many, is a table, read by the
    Projector's metadata rule (core.explore.table_columns): its first line names the columns, the first
    column holds the texts and the others are kept as `columns` (name -> one value a text); a row without
    text is skipped. Any other file: one text a line, blank lines skipped, no columns."""
    path = Path(path)
    if not path.is_file():  # gone, or e.g. a FIFO, which would block the read
        raise ValueError("The uploaded file is gone or not a regular file; upload it again.")
    size = path.stat().st_size
    if size > MAX_TEXT_FILE_BYTES:
        raise ValueError(f"The file has {size:,} bytes; the limit is {MAX_TEXT_FILE_BYTES:,}.")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("The file is not UTF-8 text; save it as UTF-8 with one sentence per line.") from None
    if not _is_table(text):
        return text_lines(text, limit, "lines in the file"), {}
    if _rows_with_text(text, limit + 1) > limit:  # before the table is split and parsed whole
        raise _too_many(limit, "lines in the file")
    lines = text.splitlines()
    rows = [line for line in lines if line.strip()]  # blank lines are skipped in either kind
    width = rows[0].count("\t")
    header = lines.index(rows[0])  # 0-based; the blank lines below it stay, as rows without text: each
    table = [line if line.strip() else "\t" * width for line in lines[header:]]  # line keeps its number
    columns = table_columns("\n".join(table), path.name, first_line=header + 1)
    first = columns.pop(next(iter(columns)))
    kept = [i for i, value in enumerate(first) if value.strip()]  # skipped, as a plain file's blank lines
    texts = _checked_lines([(header + i + 2, first[i].strip()) for i in kept], limit, "lines in the file")
    return texts, {name: [values[i] for i in kept] for name, values in columns.items()}


def _is_table(text: str) -> bool:
    """Whether the first non-blank line of `text` holds a tab and more than half of its non-blank lines (blank ones
    are skipped in either kind) as many: one pass, no list of the lines."""
    rows = (line for line in lines_of(text) if line.strip())
    width = next(rows, "").count("\t")
    if not width:
        return False
    same = total = 1
    for row in rows:
        same, total = same + (row.count("\t") == width), total + 1
    return 2 * same > total  # else a tab in a sentence


# ---- the dictionary -------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def wordnet_index() -> dict[str, tuple[Entry, ...]]:
    """word or phrase -> its WordNet entries (all lemmas of the shipped dictionary)."""
    index: dict[str, list[Entry]] = {}
    for entry in load_wordnet_lemmas():
        index.setdefault(entry.word, []).append(entry)
    return {word: tuple(entries) for word, entries in index.items()}


def definitions_of(word: str, limit: int = 3) -> list[Entry]:
    """Up to `limit` WordNet entries of `word` (empty when the dictionary lacks it)."""
    return list(wordnet_index().get(word, ()))[:limit]


def vocabulary_sample(engine, size: int, seed: int = 0) -> list[tuple[str, str]]:
    """(word, part of speech) for a sample of the head's whole-word tokens that WordNet defines."""
    index = wordnet_index()
    words = sorted(w for w in engine.head_words.id_of if w in index)
    chosen = random.Random(seed).sample(words, min(size, len(words)))
    return [(word, index[word][0].pos) for word in chosen]


# ---- reverse dictionary -----------------------------------------------------------------------

@dataclass
class WordRow:
    """One predicted word with its probability and dictionary definitions."""
    word: str
    probability: float
    definitions: list[Entry]
    written: str = ""  # the word in the form the description asks for ("candles"), when it differs


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
    exclude_query_words: bool = EXCLUDE_QUERY_WORDS

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
    """Ranked words for a description, each with up to three WordNet definitions: the senses that best
    match the description first (`senses_by_fit`). The description is embedded once, for both."""
    text = check_text(query.text, "a description")
    check_k(query.k, "words")
    filters = query.filters()
    vector = engine.encode([text])  # (1, d): `Engine.predict_words`'s vector, ranked as it ranks it
    words = engine.rank_words(vector, int(query.k), [text], query.exclude_query_words, **filters)[0]
    senses = senses_by_fit(engine, l2_normalize(vector)[0], [word for word, _ in words], pos=filters["pos"])
    written = written_forms(text, [word for word, _ in words])  # lemmas written in the form asked, if any
    return [WordRow(word, p, shown, "" if form == word else form)
            for (word, p), shown, form in zip(words, senses, written)]


def senses_by_fit(engine, query: np.ndarray, words: Sequence[str], limit: int = 3, pos: str = "") -> list[list[Entry]]:
    """For each of `words`, up to `limit` of its WordNet entries: those of part of speech `pos` (a WordNet tag;
    "" any) first, then by how well each definition matches the description whose unit vector (d,) is `query`
    (cosine of their embeddings; ties keep the dictionary's order). The shipped WordNet file is in synset order,
    not WordNet's sense order, so its first entry is often a rare sense ("head": "oral stimulation of the
    genitals"); the description says which sense the user means, and a part-of-speech filter which senses they
    ask for ("head" as a verb: "be in charge of")."""
    entries = [wordnet_index().get(word, ()) for word in words]
    texts = sorted({e.definition for senses in entries for e in senses})
    if not texts:
        return [[] for _ in words]
    fit = dict(zip(texts, definition_fit(engine, query, texts).tolist()))
    return [sorted(senses, key=lambda e: (bool(pos) and e.pos != pos, -fit[e.definition]))[:limit]
            for senses in entries]


def definition_fit(engine, unit: np.ndarray, texts: list[str]) -> np.ndarray:
    """(n,): the cosine of a unit vector (d,) with each definition of `texts`: from the open vocabulary's
    stored vectors when it holds them all (no encoding), else embedded now."""
    scorer = engine.vocabulary.scorer
    stored = scorer.definition_cosines(unit, texts) if scorer is not None else None
    return stored if stored is not None else engine.encode(texts, normalize=True) @ unit


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


ENCODE_TIME_BUDGET_S = 120.0  # a user's list of texts is embedded within this time, or refused


class TooSlow(ValueError):
    """A request's work ran past its time budget (shown to the user: ValueError)."""


def embed_corpus(engine, texts: Sequence[str], labels: Sequence[str] | None = None, name: str = "",
                 progress: Progress = no_progress, budget_s: float = ENCODE_TIME_BUDGET_S) -> EmbeddedTexts:
    """Embed texts (normalised), reporting encoding progress; TooSlow once the encoding runs past
    `budget_s` seconds (checked after each batch), so no list holds a worker for longer."""
    texts = list(texts)
    started, report = time.monotonic(), _encoding_progress(progress)

    def within_budget(done: int, total: int) -> None:
        report(done, total)
        if done < total and time.monotonic() - started > budget_s:
            raise TooSlow(f"Embedding {total:,} texts took longer than {budget_s:.0f} s ({done:,} done; the "
                          f"server may be busy): try again with fewer lines.")
    vectors = engine.encode(texts, normalize=True, progress=within_budget)
    return EmbeddedTexts(texts, vectors, list(labels or []), name)


# What nearest-neighbour look-ups search (`ActiveModel.reference_texts`): the first resolves to the largest
# collection that is ready (the corpus's index once `python -m core corpus-index` built it for the model,
# else the open vocabulary's definitions once they are built, else the sample).
LARGEST_READY = "largest ready"
CORPUS_SENTENCES = "modern corpus sentences (when indexed)"
CORPUS_NAME = "modern"  # the collection `python -m core corpus-index` builds by default
EVERY_DEFINITION, EVERY_WORD = "every WordNet definition (117k)", "every WordNet word and phrase (147k)"
SAMPLE = f"{REFERENCE_SIZE:,} WordNet definitions"
VOCABULARY_REFERENCES = {EVERY_DEFINITION: "definition", EVERY_WORD: "word"}  # core/explore/reference.py's kinds
REFERENCE_CHOICES = (LARGEST_READY, CORPUS_SENTENCES, EVERY_DEFINITION, EVERY_WORD, SAMPLE)
UPLOADED_FILE = "uploaded file"


def projector_corpus(files: list[str]) -> EmbeddedTexts:
    """Points of the Embedding Projector's files (core/explore/projector.py): one vectors.tsv and, if it has
    one, its metadata.tsv (the file whose name holds "meta"), at most MAX_CORPUS_LINES points. Labels
    are the first metadata column; the second, if any, colours the map by "part of speech"; the columns
    after the first are kept as the points' `columns`."""
    tsv = [Path(f) for f in files if str(f).lower().endswith(".tsv")]
    metadata = [path for path in tsv if "meta" in path.name.lower()]
    vectors = [path for path in tsv if path not in metadata]
    if len(vectors) != 1 or len(metadata) > 1:
        raise ValueError("Upload the Projector's vectors.tsv, and its metadata.tsv if it has one (the file whose "
                         "name holds 'meta').")
    points = read_projector(vectors[0], metadata[0] if metadata else None, MAX_CORPUS_LINES)
    unit = l2_normalize(points.vectors)  # (n, d)
    columns = dict(list(points.columns.items())[1:])  # the first holds the labels: the texts, as a table's does
    colour = next(iter(columns.values()), [])
    return EmbeddedTexts(points.labels, unit, colour, f"{len(unit):,} points of {vectors[0].name}", columns)


def reference_corpus(engine, size: int = REFERENCE_SIZE, progress: Progress = no_progress,
                     cache: Path | None = None) -> EmbeddedTexts:
    """A fixed sample of WordNet definitions ("word: definition"), embedded; cached on disk per model in `cache`
    (default: the app's cache folder)."""
    return dictionary_reference(engine, size, cache or cache_dir("embeddings"), _encoding_progress(progress))


def _encoding_progress(progress: Progress) -> Callable[[int, int], None]:
    return lambda done, total: progress(done / total, desc=f"encoding {done}/{total}")


def semantic_search(engine, query: str, corpus: Reference, k: int) -> list[tuple[str, float]]:
    """The k corpus texts most similar to the query, with cosines."""
    vector = engine.encode([check_text(query, "a query")], normalize=True)
    return corpus.nearest_texts(vector, int(k))[0]
