"""Hostile and malformed input (issue 6): every case gets a clear message and changes nothing.

"Nothing changed" means: no checkpoint is written, the active model is the same object, no job is
queued, and no file appears beside the upload. App-level calls go through `app.wiring.handler`, so a
case that raised anything but a user error would show up as "Something went wrong".
"""
from __future__ import annotations

import asyncio

import builtins
import contextlib
import csv
import io
import os
import re
from pathlib import Path

import numpy as np
import pytest

from app.shared import services as sv
from app.shared.finetune import FinetuneResult, validate_upload
from app.handlers import Session, Studio
from app.shared.models import Models, ModelSpec
from core import Engine
from core.lexicon import user_files
from core.checkpoint import safe_checkpoint_name
from core.lexicon.user_files import read_user_dictionary
from core.encoder import SentenceEncoder
from core.vec2sent.expression import ExpressionError, evaluate_expression

gr = pytest.importorskip("gradio")
from app.wiring import handler  # (needs gradio)

GIGABYTE = 1 << 30
WORDS = ["dog", "cat", "king", "queen", "river", "bread", "car", "teacher", "song", "tree", "house", "fire",
         "wine", "road", "doctor", "city", "book", "boy", "girl", "water"]
GOOD_ROWS = "".join(f"{word},a {word} of some kind\n" for word in WORDS)


@pytest.fixture(scope="module")
def engine(tiny_mlm_dir) -> Engine:
    return Engine.from_base(str(tiny_mlm_dir))


@pytest.fixture
def studio(engine, tiny_mlm_dir, tmp_path, monkeypatch) -> Studio:
    """The app on the tiny engine; its caches and checkpoints live in tmp_path."""
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    return Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path / "checkpoints"))


@pytest.fixture
def uploads(tmp_path) -> Path:
    folder = tmp_path / "uploads"
    folder.mkdir()
    return folder


def write(folder: Path, name: str, content: str | bytes) -> Path:
    path = folder / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def user_error(call, *args) -> str:
    """The readable message a handler (`studio.<tab>.<method>`) gives through the UI wrapper (fails on any other outcome)."""
    with pytest.raises(gr.Error) as info:
        asyncio.run(handler(call)(*args))
    message = info.value.message
    assert "Something went wrong" not in message and "Traceback" not in message
    return message


def assert_unchanged(studio: Studio, active_before) -> None:
    """No checkpoint written, the same active model, no job queued."""
    folder = studio.models.checkpoints
    assert not folder.exists() or not any(folder.iterdir())
    assert studio.models.active() is active_before
    assert studio.jobs._jobs == {}


@contextlib.contextmanager
def no_file_opened(monkeypatch):
    """Within this block, opening any file fails the test (for checks that must not read the file)."""
    def refuse(*args, **kwargs):
        pytest.fail(f"a file was opened: {args[:1]}")

    with monkeypatch.context() as patch:
        for owner, name in ((builtins, "open"), (io, "open"), (Path, "open"), (Path, "read_bytes"),
                            (Path, "read_text")):
            patch.setattr(owner, name, refuse)
        yield


# ---- dictionary files ------------------------------------------------------------------------------

REFUSED_FILES = [
    ("empty.tsv", b"", "the file is empty"),
    ("blank.csv", "\n  \n\t\n", "the file is empty"),
    ("random.tsv", bytes(range(256)) * 16, "binary file (it contains NUL bytes)"),
    ("picture.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64), "binary file"),
    ("utf16.csv", "word,definition\ndog,a pet\n".encode("utf-16"), "UTF-16 text; save it as UTF-8"),
    ("wrong-columns.csv", "foo,bar\n1,2\n", "missing column word and definition"),
    ("no-definition.tsv", "word\tmeaning\ndog\ta pet\n", "missing column definition"),
    ("no-header.csv", "dog,a pet\ncat,a small pet\n", 'found: "dog", "a pet"'),
    ("duplicate-header.csv", "word,Word,definition\ndog,cat,a pet\n", "names the column 'word' more than once"),
    ("duplicate-definition.tsv", "word\tdefinition\tDEFINITION\ndog\ta\tb\n", "'definition' more than once"),
    ("header-only.csv", "word,definition\n", "no data rows after the header"),
    ("unclosed-quote.csv", 'word,definition\ndog,a pet\n"cat,a pet\ntree,a plant\n',
     "cannot parse the row that starts on line 3 (unexpected end of data); check its quotes"),
    ("huge-field.csv", "word,definition\ndog," + "x" * 200_000 + "\n", "field larger than field limit"),
    ("prose.txt", "just some prose without any delimiter\n", "cannot tell the format"),
    ("latin-1.csv", ("word,definition\n" + GOOD_ROWS.replace("a ", "à ")).encode("latin-1"),
     "undecodable bytes (not UTF-8) in 'definition'"),
    ("keys.jsonl", '{"w": "dog", "d": "a pet"}\n', "missing column 'word'"),
    ("deep.jsonl", "[" * 100_000 + "\n", "invalid JSON (nested too deeply)"),
    ("not-objects.jsonl", '[1, 2]\n"dog"\n', "not a JSON object"),
    ("not-text.jsonl", '{"word": 1, "definition": ["x"]}\n', "'word' is not text"),
    ("surrogate.jsonl", '{"word": "dog\\ud800", "definition": "a pet"}\n', "undecodable bytes"),
    ("too-many-fields.csv", "word,definition\ndog,a pet, that barks\n", "3 fields but the header has 2"),
    ("not-words.csv", "word,definition\n##s,a piece\n[CLS],a token\n42,a number\n", "3 of 3 rows rejected"),
    ("control-characters.tsv", "word\tdefinition\n\x1b[2J\x07\t\x1b]0;pwned\x07\n", "not a word or phrase"),
]


def test_phrases_and_non_ascii_words_are_answers_and_junk_is_rejected_with_a_reason(uploads):
    path = write(uploads, "open.csv", "word,definition\nice cream,a frozen food\ncafé,a small restaurant\n"
                                      "gallop,to run fast\n##s,a piece\n[CLS],a token\n42,a number\n")
    entries, report = read_user_dictionary(path)
    assert [e.word for e in entries] == ["ice cream", "café", "gallop"]
    assert [(r.row, r.value) for r in report.rejected] == [(5, "##s"), (6, "[cls]"), (7, "42")]
    assert all("not a word or phrase" in r.reason for r in report.rejected) and not report.set_aside


@pytest.mark.parametrize("name, content, message", REFUSED_FILES, ids=[case[0] for case in REFUSED_FILES])
def test_unusable_dictionary_is_refused_with_a_reason(studio, uploads, name, content, message):
    path = write(uploads, name, content)
    active = studio.models.active()
    entries, report = read_user_dictionary(path, vocab=lambda word: active.engine.words.vocab.token_id(word) is not None)
    assert (entries, report.ok) == ([], False)
    assert message in report.summary()
    assert report.rows_read == report.rows_accepted + len(report.rejected) + len(report.set_aside)
    shown, session = studio.finetune.validate_upload(str(path), 0, Session())
    assert shown.startswith("Not usable:") and message in shown
    assert session.upload is None
    assert all(line.isprintable() for line in shown.splitlines())  # no terminal escapes echoed
    assert user_error(studio.finetune.start_finetune, session, 1, 1e-4, 4, 0, 0, 1, 0) == \
        "Upload and validate a dictionary first."
    assert sorted(p.name for p in uploads.iterdir()) == [name]
    assert_unchanged(studio, active)


@pytest.mark.parametrize("content", [
    "\ufeffword,definition\n" + GOOD_ROWS,
    "\ufeffWord\tDefinition\n" + GOOD_ROWS.replace(",", "\t"),
    "\ufeff" + "".join(f'{{"word": "{w}", "definition": "a {w} of some kind"}}\n' for w in WORDS),
], ids=["csv", "tsv", "jsonl"])
def test_utf8_bom_is_accepted(engine, uploads, content):
    suffix = ".jsonl" if content.lstrip("\ufeff").startswith("{") else ".tsv" if "\t" in content else ".csv"
    upload = validate_upload(engine, write(uploads, "bom" + suffix, content))
    assert sorted(e.word for e in upload.entries) == sorted(WORDS)  # the first column is found, no "\ufeff"
    assert upload.entries[0].definition == f"a {WORDS[0]} of some kind"


def test_one_gigabyte_upload_is_refused_by_size_without_reading_it(studio, uploads, monkeypatch):
    path = uploads / "huge.tsv"
    path.write_bytes(b"word\tdefinition\n")
    os.truncate(path, GIGABYTE)  # sparse: takes no disk space
    active = studio.models.active()
    with no_file_opened(monkeypatch):
        _, report = read_user_dictionary(path)
        shown, session = studio.finetune.validate_upload(str(path), 0, Session())
    assert report.error == "the file has 1,073,741,824 bytes, over the limit of 20,000,000 bytes"
    assert report.error in shown and session.upload is None
    assert_unchanged(studio, active)


def test_one_gigabyte_text_file_for_search_is_refused_without_reading_it(studio, uploads, monkeypatch):
    path = uploads / "huge.txt"
    path.write_bytes(b"")
    os.truncate(path, GIGABYTE)
    with no_file_opened(monkeypatch):
        message = user_error(studio.similarity.search, "a dog", "uploaded file", str(path), 5, Session())
    assert message == f"The file has 1,073,741,824 bytes; the limit is {sv.MAX_TEXT_FILE_BYTES:,}."


def test_a_million_rows_hit_the_row_cap(studio, uploads, monkeypatch):
    path = write(uploads, "million.tsv", "word\tdefinition\n" + "dog\ta pet\n" * 1_000_000)
    rows_parsed = []
    parse = user_files._row_to_entry
    monkeypatch.setattr(user_files, "_row_to_entry", lambda *args: rows_parsed.append(1) or parse(*args))
    shown, session = studio.finetune.validate_upload(str(path), 0, Session())
    assert "more than 200,000 rows, over the limit; split the file" in shown
    assert "Rejected rows" not in shown  # a refused file lists no partial results
    assert session.upload is None
    assert len(rows_parsed) == 200_000  # parsing stops at the first row past the cap


def test_extremely_long_fields_are_rejected_and_echoed_short(engine, uploads):
    rows = "word,definition\n" + GOOD_ROWS + f"dog,{'a very long text ' * 6000}\n" + f"{'w' * 100_000},short\n"
    upload = validate_upload(engine, write(uploads, "long.csv", rows))
    assert len(upload.entries) == len(WORDS)
    assert "definition longer than 1000 characters" in upload.report
    assert "word longer than 50 characters" in upload.report
    assert max(len(line) for line in upload.report.splitlines()) < 200


FORMULAS = ["=cmd|' /C calc'!A0", "+SUM(1,2)", "-2+3+cmd|' /C calc'!A0", "@SUM(A1)", '=HYPERLINK("http://x")']


def test_formula_injection_is_neutralised_in_the_report(engine, uploads):
    rows = [["word", "definition"], *[[w, f"a {w} of some kind"] for w in WORDS]]
    rows += [[formula, "a formula as the word"] for formula in FORMULAS]  # rejected: not a word or phrase
    rows += [[formula, ""] for formula in FORMULAS]                        # rejected: empty definition
    text = io.StringIO()
    csv.writer(text).writerows(rows)
    upload = validate_upload(engine, write(uploads, "=cmd|' -C calc'!A0.csv", text.getvalue()))
    assert len(upload.entries) == len(WORDS)  # the formulas stay data: kept out of training, not executed
    assert "\"'=cmd|' /c calc'!a0\"" in upload.report and "\"'=cmd|' -C calc'!A0.csv\"" in upload.report
    quoted = re.findall(r'"(.)', upload.report)
    assert quoted and not {"=", "+", "-", "@"} & set(quoted)
    # Pasted into a spreadsheet as CSV, no cell starts like a formula.
    cells = [cell.strip() for row in csv.reader(io.StringIO(upload.report)) for cell in row]
    assert not [cell for cell in cells if cell.startswith(("=", "+", "-", "@"))]


def test_a_vanished_upload_asks_for_a_new_one_without_showing_server_paths(studio, uploads):
    gone = str(uploads / "deleted-by-gradio.tsv")
    shown, session = studio.finetune.validate_upload(gone, 0, Session())
    assert (shown, session.upload) == ("Not usable: the uploaded file is gone; upload it again.", None)
    assert user_error(studio.similarity.search, "a dog", "uploaded file", gone, 5, Session()) == \
        "The uploaded file is gone or not a regular file; upload it again."


def test_gradio_deletes_uploads_after_an_hour(studio):
    from app.ui import UPLOAD_LIFETIME, build_app
    assert build_app(studio).delete_cache == UPLOAD_LIFETIME == (600, 3600)


def test_special_files_are_refused_without_blocking(studio, uploads):
    fifo = uploads / "fifo.tsv"
    os.mkfifo(fifo)  # opening it for reading would block forever
    device = uploads / "zero.csv"
    device.symlink_to("/dev/zero")
    for path in (fifo, device, uploads):
        shown, session = studio.finetune.validate_upload(str(path), 0, Session())
        assert shown == f'Not usable:\n"{path.name}" (unknown format): 0 rows read, 0 accepted, 0 rejected, ' \
                        '0 set aside.\nNot usable: not a regular file'
        assert session.upload is None
    assert user_error(studio.similarity.search, "a dog", "uploaded file", str(fifo), 5, Session()) == \
        "The uploaded file is gone or not a regular file; upload it again."


def test_bad_text_files_for_search(studio, uploads):
    cases = {"latin-1.txt": ("caf\xe9 au lait\n".encode("latin-1"), "not UTF-8 text"),
             "empty.txt": (b"", "Please enter some lines in the file"),
             "long-line.txt": (("short\n" + "x" * 5000 + "\n").encode(), "Line 2 is 5,000 characters long")}
    for name, (content, message) in cases.items():
        assert message in user_error(studio.similarity.search, "a dog", "uploaded file",
                                     str(write(uploads, name, content)), 5, Session())


# ---- checkpoint names ------------------------------------------------------------------------------

BAD_NAMES = ["../escape", "..", ".", "a/../../escape", "/tmp/absolute", "C:\\Windows", "a/b", "a\\b",
             "x; touch pwned", "$(touch pwned)", "`touch pwned`", "a|b", "a&b", "a>b", "a\x00b", "a\nb",
             "", "   ", "a" * 65, "a" * 10_000, ".hidden", "-rf", "~", "naïve", "a b", "*", "a..b"]


@pytest.fixture
def finished(studio, tmp_path, monkeypatch) -> FinetuneResult:
    """A finished fine-tune (its staged model folder) that the studio will be asked to save."""
    staged = tmp_path / "staged"
    staged.mkdir()
    (staged / "weights.safetensors").write_bytes(b"not read for a refused name")
    result = FinetuneResult(staged, {}, {}, [], {})
    monkeypatch.setattr(studio.finetune, "_finished", lambda job_id: result)
    return result


@pytest.mark.parametrize("name", BAD_NAMES, ids=[repr(name)[:20] for name in BAD_NAMES])
def test_unsafe_checkpoint_names_are_refused_and_nothing_is_written(studio, finished, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)  # where a shell would have created "pwned"
    active = studio.models.active()
    message = user_error(studio.finetune.save_finetuned, "job", name)
    assert message.startswith("invalid checkpoint name") and len(message) < 250
    assert finished.saved is None
    assert not {"escape", "pwned", "absolute"} & {p.name for p in tmp_path.rglob("*")}
    assert_unchanged(studio, active)


@pytest.mark.parametrize("name", ["name\n", "\nname", "name\r", " name", "name\t"])
def test_names_with_surrounding_whitespace_are_not_safe_names(name):
    with pytest.raises(ValueError, match="invalid checkpoint name"):
        safe_checkpoint_name(name)


def test_an_existing_checkpoint_is_never_overwritten(studio, finished):
    existing = studio.models.checkpoints / "mine"
    existing.mkdir(parents=True)
    (existing / "notes.txt").write_text("keep me")
    assert user_error(studio.finetune.save_finetuned, "job", "mine") == \
        "A checkpoint called 'mine' already exists; choose another name."
    assert [p.name for p in existing.iterdir()] == ["notes.txt"] and finished.saved is None


# ---- analogy expressions ---------------------------------------------------------------------------

VECTORS = {"a": np.array([1.0, 0.0, 2.0]), "b": np.array([0.0, 1.0, 1.0]), "c": np.array([3.0, 3.0, 3.0])}

HOSTILE_EXPRESSIONS = [
    ("a.__class__", "attribute access"),
    ("a.__class__.__subclasses__()", "function call"),
    ("__import__('os').system('touch pwned')", "function call"),
    ("__import__", "unknown name '__import__'"),
    ("open('/etc/passwd')", "function call"),
    ("eval('a')", "function call"),
    ("a[0]", "indexing"),
    ("a[::-1]", "indexing"),
    ("lambda: a", "lambda"),
    ("2**99999", "** operator"),
    ("a * 9**9**9", "** operator"),
    ("a * 1e308 * 1e308", "not finite"),
    ("a * 1e309", "too large"),
    ("a * " + "9" * 400, "too large"),
    ("a / 1e-320", "not finite"),
    ("(" * 100 + "a" + ")" * 100, "nested more than 32 deep"),
    ("(" * 1000 + "a" + ")" * 1000, "longer than 500 characters"),
    ("-" * 200 + "a", "nested more than 32 deep"),
    ("a" + " + a" * 200, "longer than 500 characters"),
    ("os", "unknown name 'os'"),
    ("__builtins__", "unknown name '__builtins__'"),
    ("d + a", "unknown name 'd'"),
    ("[a, b]", "List syntax"),
    ("{a}", "Set syntax"),
    ("f'{a}'", "JoinedStr syntax"),
    ("'a' * 3", "only plain numbers"),
    ("1j * a", "only plain numbers"),
    ("a if b else c", "if/else"),
    ("(x := a)", "assignment"),
    ("a @ b", "@ operator"),
    ("~a", "UnaryOp syntax"),
    ("not a", "UnaryOp syntax"),
    ("a; b", "invalid syntax"),
    ("a + b # - c", "'#' is not allowed"),
    ("a\x00", "unexpected character"),
    ("a +\nb", "unexpected character"),
    ("[x for x in a]", "ListComp syntax"),
]


@pytest.mark.parametrize("expression, message", HOSTILE_EXPRESSIONS,
                         ids=[repr(e)[:30] for e, _ in HOSTILE_EXPRESSIONS])
def test_hostile_expressions_are_refused_with_a_column(expression, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    saved = {name: vector.copy() for name, vector in VECTORS.items()}
    with pytest.raises(ExpressionError, match=re.escape(message)) as info:
        evaluate_expression(expression, VECTORS)
    assert 1 <= info.value.column <= max(1, len(expression))
    assert f"(at column {info.value.column})" in str(info.value)
    assert all(np.array_equal(VECTORS[name], saved[name]) for name in VECTORS)  # inputs untouched
    assert list(tmp_path.iterdir()) == []  # nothing ran


def test_hostile_expressions_through_the_app(studio):
    for expression, message in HOSTILE_EXPRESSIONS[:12]:
        text = user_error(studio.analogy.analogy, "a dog", "a cat", "a king", expression)
        assert message in text and "(at column" in text


# ---- query text --------------------------------------------------------------------------------

LONG = "a person who is in charge " * 40_000  # about a million characters
NO_WORDS = {"emoji": "😀🐶🔥" * 10, "control characters": "\x00\x01\x07\x1b\x7f\x9b", "zero-width": "\u200b\u200d\ufeff",
            "punctuation": "?!...;"}


@pytest.mark.parametrize("call", ["reverse", "similarity", "search", "analogy", "interpolation", "candidates"])
def test_very_long_query_text_is_refused_before_anything_is_embedded(studio, call, monkeypatch):
    calls = {"reverse": (studio.reverse.reverse_dictionary, LONG),
             "similarity": (studio.similarity.pair_similarity, LONG, "a dog"),
             "search": (studio.similarity.search, LONG, sv.LARGEST_READY, None, 5, Session()),
             "analogy": (studio.analogy.analogy, "a dog", LONG, "a cat", "b - a + c"),
             "interpolation": (studio.analogy.interpolation, "a dog", LONG, 5),
             "candidates": (studio.map.candidates_map, LONG, 5, "PCA")}
    def no_encoding(*_args, **_kwargs):
        raise AssertionError("the text was embedded before it was refused")
    monkeypatch.setattr(SentenceEncoder, "encode", no_encoding)
    message = user_error(*calls[call])
    assert f"{len(LONG.strip()):,} characters long; the limit is 1,000" in message


@pytest.mark.parametrize("kind", NO_WORDS)
def test_text_without_words_is_refused(studio, kind):
    text = NO_WORDS[kind]
    assert "this text has no letters or digits" in user_error(studio.reverse.reverse_dictionary, text)
    assert "this text has no letters or digits" in user_error(studio.similarity.pair_similarity, "a dog", text)
    assert "this text has no letters or digits" in user_error(studio.similarity.search, text, "dictionary definitions",
                                                                  None, 5, Session())
    assert "sentence c in words" in user_error(studio.analogy.analogy, "a dog", "a cat", text, "b - a + c")


def test_long_or_many_lines_are_refused(studio):
    too_long = "a dog\n\n" + "x" * 2000 + "\na cat"
    assert "Line 3 is 2,000 characters long" in user_error(studio.similarity.heatmap, too_long)
    assert "More than 50 sentences given; the limit is 50" in user_error(studio.similarity.heatmap, "a dog\n" * 51)
    session = Session()
    assert "Line 1 is 5,000 characters long" in user_error(
        studio.map.draw_map, "my sentences", 10, "y" * 5000, None, "PCA", "2-D", "part of speech", session)
    assert session.map is None


def test_emoji_inside_words_are_fine(studio):
    html, _ = asyncio.run(handler(studio.reverse.reverse_dictionary)("a dog 🐶 that barks"))
    assert "ds-word" in html


def test_a_long_list_is_refused_once_its_encoding_runs_past_the_time_budget():
    from app.shared.services import TooSlow, embed_corpus

    class SlowEngine:
        batches = 0

        def encode(self, texts, normalize=False, progress=None):
            for done in range(1, 4):  # three batches; the budget runs out during the first
                SlowEngine.batches += 1
                progress(done, 3)
            return np.zeros((len(texts), 2), dtype=np.float32)

    with pytest.raises(TooSlow, match=r"longer than -1 s \(1 done"):
        embed_corpus(SlowEngine(), ["a", "b", "c"], budget_s=-1.0)
    assert SlowEngine.batches == 1  # stopped after the batch that ran past the budget
    assert embed_corpus(SlowEngine(), ["a", "b", "c"]).vectors.shape == (3, 2)  # within the budget


HUGE = "<script>alert(1)</script>" + "x" * 116_000  # as sent to /switch_model and as a job id (issue 55)


@pytest.mark.parametrize("refuse", [lambda studio: studio.choose_model(HUGE, Session()),
                                    lambda studio: studio.jobs.get(HUGE)], ids=["model name", "job id"])
def test_a_refusal_quotes_only_a_short_escaped_part_of_the_input(studio, refuse):
    with pytest.raises(ValueError) as refused:
        refuse(studio)
    message = str(refused.value)
    assert len(message) < 300 and "\n" not in message, message[:400]
    assert "<script>" not in message and '"&lt;script&gt;alert(1)&lt;/script&gt;xxxxxxxxxxxx..."' in message


def test_every_refusal_reaches_the_page_as_one_short_escaped_line():
    import gradio as gr

    from app.wiring import handler

    def refuse(text: str) -> str:
        raise ValueError("Bad input:\n" + text)

    with pytest.raises(gr.Error) as shown:
        asyncio.run(handler(refuse)(HUGE))
    assert len(shown.value.message) <= 600 and "\n" not in shown.value.message
    assert shown.value.message.startswith("Bad input: &lt;script&gt;")
