"""How a source's files are read as documents (`Doc`): markup (HTML, reStructuredText, POD, roff, Vim
help, LyX) turned into prose paragraphs, and the readers of dictd databases, fortune cookies, e-mail,
chat bot dialogues, news and game text. Which package each source comes from, and which reader reads
it, is in core/corpus/sources.py.
"""
from __future__ import annotations

import email
import gzip
import html
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.corpus.sentences import split_sentences

# ----------------------------------------------------------------------------- documents

@dataclass
class Doc:
    """One document of a source: an id (stable across builds), its raw sentences, its genre when
    the source mixes genres."""
    id: str
    sentences: list[str]
    genre: str | None = None


def paragraphs_to_sentences(paragraphs: Iterable[str]) -> list[str]:
    return [s for p in paragraphs for s in split_sentences(" ".join(p.split()))]


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
