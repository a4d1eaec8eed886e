"""Extra training definitions from GCIDE (the GNU Collaborative International Dictionary of English).

    scripts/fetch_gcide.sh        # Debian package dict-gcide -> data/cache/deb/gcide
    python -m core gcide --dictd-dir data/cache/deb/gcide/usr/share/dictd --out data/cache/gcide.jsonl.gz

GCIDE (Webster's 1913 plus later additions; GPL-3, see the package's copyright file) is read from
its dictd files: `gcide.index` (headword, base64 offset, base64 length) and `gcide.dict.dz`. Each
numbered or single sense of a one-word headword becomes an Entry; cross-references ("See ...",
"Same as ..."), inflections ("imp. of ..."), notes, phrases, quotations and senses that use the
headword itself are left out, and so are the senses GCIDE took from WordNet 1.5 (tagged so). It adds
training pairs (`python -m core train --extra-train`; `add_training_entries` drops every dev/test word
and every dev/test definition text) and is the open vocabulary's cross-dictionary dev and test set
(core/words/open_vocab_fit.py).
"""
from __future__ import annotations

import gzip
import re
from collections.abc import Collection, Iterator
from pathlib import Path

from core.lexicon.dictionary import Entry, is_predictable, read_vocab
from core.lexicon.wordnet import default_vocab_path, write_entries

_BASE64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
_SENSE = re.compile(r"^(?: {3}(?:\d+\. )?| {3,6}\([a-z]\) )(?=[A-Za-z(])")  # "   1. ", "      (a) " or "   "
_NUMBERED = re.compile(r"^ {3}(?: {3})?(?:\d+\.|\([a-z]\)) ")
_POS = {"n.": "n", "v.": "v", "v. t.": "v", "v. i.": "v", "a.": "a", "adj.": "a", "adv.": "r"}
_DOMAIN = re.compile(r"^\((?:[A-Z][A-Za-z. &]*)\)\s*")          # (Zool.) (Mech.) at the start of a sense
_BRACKETED = re.compile(r"\[[^\]]*\]")                          # [Obs.] [Colloq.] [R.] [=e] ...
_UNWANTED = re.compile(r"^(?:see |same as |alt\. |of |obs\.|a variant|an? (?:obs|var)|usage|\d)|"
                       r"\b(?:p\. ?pr\.|p\. ?p\.|imp\.|pl\.|pret\.|preterit|plural of|past tense)", re.IGNORECASE)
_WORD = re.compile(r"[a-z]+")
MIN_WORDS, MAX_WORDS = 3, 40


def parse_index(index_path: Path) -> Iterator[tuple[str, int, int]]:
    """(headword, byte offset, byte length) for every line of a dictd `.index` file."""
    for line in index_path.read_text(encoding="utf-8").splitlines():
        word, offset, length = line.split("\t")
        yield word, _decode_base64(offset), _decode_base64(length)


def _decode_base64(text: str) -> int:
    value = 0
    for char in text:
        value = value * 64 + _BASE64[char]
    return value


def entries_of_article(word: str, article: str) -> list[Entry]:
    """The usable senses of `word` in one article (the text the index points to).

    An article may hold other headwords that merely mention `word` ("called also {dog}") or
    inflections pointing to their lemma: only senses under a header for `word` itself count.
    Senses tagged "[WordNet 1.5]" are left out: they are WordNet's wording, and GCIDE serves as
    another dictionary's wording of WordNet's words (the cross-dictionary test).
    """
    entries, pos, paragraph, open_brackets = [], None, None, 0
    sense: list[Entry] = []  # the entries of the current sense, kept unless its source tag is WordNet
    from_wordnet = False
    for line in article.splitlines() + [""]:
        stripped, indent = line.strip(), len(line) - len(line.lstrip())
        from_wordnet |= "WordNet" in line
        if paragraph is not None and stripped and 3 <= indent < 12 and not _NUMBERED.match(line) \
                and not stripped.startswith(("[", '"')):
            paragraph.append(stripped)  # the current sense runs on
            continue
        if paragraph and pos is not None:
            sense.extend(_entry(word, " ".join(paragraph), pos))
        paragraph = None
        starts_sense = _SENSE.match(line) and not stripped.startswith(("Note", "Syn", "Usage"))
        if (indent == 0 and stripped) or starts_sense:  # the last sense and its source tag are over
            entries.extend([] if from_wordnet else sense)
            sense, from_wordnet = [], "WordNet" in line
        if stripped and (indent == 0 or open_brackets > 0):  # a header, or its etymology running on
            if indent == 0:
                headword = re.sub(r"[\"*`'\s]", "", line.split(" \\")[0]).lower()
                pos, open_brackets = (_part_of_speech(line) if headword == word else None), 0
            open_brackets += line.count("[") - line.count("]")
        elif starts_sense:
            paragraph = [line[_SENSE.match(line).end():].strip()]
    return entries + ([] if from_wordnet else sense)


def _part_of_speech(header: str) -> str:
    """n/v/a/r from a header line ("Dog \\Dog\\ (d[add]g), n. [AS. docga ...]"), "" when unknown."""
    match = re.search(r"\\[^\\]*\\\s*(?:\([^)]*\))?\s*,\s*((?:[a-z]+\.\s?)+)", header)
    return _POS.get(match.group(1).strip(), "") if match else ""


def _entry(word: str, text: str, pos: str) -> list[Entry]:
    """[Entry] for one sense's text when it is a usable definition of `word`, else []."""
    text = _DOMAIN.sub("", text.split("--")[0].split("; as,")[0])
    text = " ".join(_BRACKETED.sub("", text).replace("{", "").replace("}", "").split()).rstrip(" ;,:")
    words = _WORD.findall(text.lower())
    if (not text.isascii() or _UNWANTED.search(text) or not MIN_WORDS <= len(words) <= MAX_WORDS
            or any(w == word or w.startswith(word[:max(4, len(word) - 2)]) for w in words)):
        return []
    return [Entry(word, text, pos)]


def read_gcide(dictd_dir: Path, vocab: Collection[str] | None) -> list[Entry]:
    """Every usable sense of every headword that is one whole vocabulary token (any one alphabetic
    word when `vocab` is None), deduplicated, sorted."""
    data = gzip.open(dictd_dir / "gcide.dict.dz").read()
    entries = set()
    for headword, offset, length in parse_index(dictd_dir / "gcide.index"):
        word = headword.lower()
        if word.isalpha() if vocab is None else is_predictable(word, vocab):
            entries.update(entries_of_article(word, data[offset:offset + length].decode("utf-8", "replace")))
    return sorted(entries, key=lambda e: (e.word, e.definition, e.pos))


def write_gcide(dictd_dir: Path, out: Path, vocab_path: Path | None = None) -> list[Entry]:
    """`read_gcide` with the vocabulary of `vocab_path` (default: all-MiniLM-L6-v2's), written to `out`."""
    entries = read_gcide(dictd_dir, read_vocab(vocab_path or default_vocab_path()))
    out.parent.mkdir(parents=True, exist_ok=True)
    write_entries(entries, out)
    return entries
