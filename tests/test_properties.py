"""Property-based tests (hypothesis) of the two parsers that take arbitrary user text.

- The dictionary parser never raises on any content: it returns a report whose counts add up
  (rows read = accepted + rejected + set aside), and accepted entries are clean.
- The expression parser on any string returns a finite vector or raises ExpressionError with a
  column inside the string; on linear combinations it computes what numpy computes.
"""
from __future__ import annotations

import csv
import io
import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.lexicon.user_files import read_user_dictionary
from core.vec2sent.expression import ExpressionError, evaluate_expression

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
VOCAB = {"dog", "cat", "tree", "house", "run", "##s", "[CLS]"}
SUFFIXES = [".tsv", ".csv", ".jsonl", ".txt", ""]

# Text that looks like a dictionary file: delimiters, quotes, JSON punctuation, BOMs, odd whitespace,
# control characters, non-ASCII letters and lone surrogates (which become undecodable bytes).
def joined(pieces: list[str], max_size: int) -> st.SearchStrategy[str]:
    """Strings made of up to `max_size` of the given pieces (characters or whole words)."""
    return st.lists(st.sampled_from(pieces), max_size=max_size).map("".join)


TRICKY = joined(list('dogcat \t,;"\'{}[]:\\\n\r=+-@#\x00\x1b\x85\u2028\ufeffé😀')
                + ["\ud800", "word", "definition", "pos", "null"], 200)
HEADERS = st.sampled_from(["", "word\tdefinition\n", "Word,Definition,POS\n", "word,word,definition\n",
                           "\ufeffword,definition\n", "definition\tword\textra\n", '{"word": "dog", '])
FIELD = st.one_of(st.sampled_from(sorted(VOCAB) + ["", " ", "=cmd|' /C calc'!A0", "x" * 60]),
                  st.text(max_size=12))


def encode(text: str) -> bytes:
    """UTF-8, with lone surrogates written as the (invalid) bytes they would take."""
    return text.encode("utf-8", errors="surrogatepass")


def delimited(rows: list[list[str]], delimiter: str) -> str:
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE,
               escapechar="\\").writerows(rows)
    return out.getvalue()


@st.composite
def dictionary_files(draw) -> tuple[str, bytes]:
    """(file suffix, content): raw bytes, tricky text, or well-formed rows of random fields."""
    suffix = draw(st.sampled_from(SUFFIXES))
    kind = draw(st.sampled_from(["bytes", "text", "tsv", "csv", "jsonl"]))
    if kind == "bytes":
        return suffix, draw(st.binary(max_size=400))
    if kind == "text":
        return suffix, encode(draw(HEADERS) + draw(TRICKY))
    rows = draw(st.lists(st.lists(FIELD, min_size=0, max_size=4), max_size=12))
    if kind == "jsonl":
        keys = draw(st.lists(st.sampled_from(["word", "definition", "pos", "Word", "x"]), min_size=4, max_size=4))
        lines = [json.dumps(dict(zip(keys, row))) for row in rows]
        return suffix, encode("\n".join(lines))
    delimiter = "\t" if kind == "tsv" else ","
    header = draw(st.sampled_from([["word", "definition"], ["Word", "Definition", "pos"], ["definition", "word"]]))
    try:
        return suffix, encode(delimited([header, *rows], delimiter))
    except csv.Error:  # a TSV field that cannot be written unquoted
        return suffix, encode("\t".join(header) + "\n")


@FAST
@given(dictionary_files())
def test_dictionary_parser_reports_any_content(tmp_path_factory, file):
    suffix, content = file
    path = tmp_path_factory.getbasetemp() / f"property{suffix}"
    path.write_bytes(content)
    entries, report = read_user_dictionary(path, vocab=VOCAB, max_rows=8)
    assert report.rows_read == report.rows_accepted + len(report.rejected) + len(report.set_aside)
    assert len(entries) == report.rows_accepted <= report.rows_read
    assert report.ok == (not report.error) == bool(entries)
    for entry in entries:
        assert entry.word in VOCAB and entry.word.isalpha()
        assert entry.definition == entry.definition.strip() and entry.definition
        assert not any("\ud800" <= char <= "\udfff" for char in entry.word + entry.definition + entry.pos)
    summary = report.summary()
    assert all(line.isprintable() for line in summary.splitlines())
    json.dumps(report.to_dict(), ensure_ascii=True)


VECTORS = {"a": np.array([1.0, -2.0, 0.5]), "b": np.array([0.0, 3.0, 1.0]), "c": np.array([2.0, 2.0, -1.0])}
EXPRESSION_TEXT = st.one_of(
    st.text(max_size=80),
    joined(list("abcd0129.e()+-*/ _[]'\"#,:@%<>=!~&|^\\\t") + ["**", "__import__", "lambda", "1e308"], 60),
)


@FAST
@given(EXPRESSION_TEXT)
def test_expression_parser_gives_a_finite_vector_or_an_expression_error(text):
    try:
        result = evaluate_expression(text, VECTORS)
    except ExpressionError as err:
        assert 1 <= err.column <= max(1, len(text))
        assert str(err).endswith(f"(at column {err.column})")
        return
    assert result.shape == (3,) and result.dtype == np.float32
    assert np.all(np.isfinite(result))


NAMES = st.sampled_from(sorted(VECTORS))
COEFFICIENTS = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False).map(lambda x: round(x, 3))


@FAST
@given(st.lists(st.tuples(COEFFICIENTS, NAMES), min_size=1, max_size=6), st.sampled_from(["", " ", "  "]))
def test_linear_combinations_compute_what_numpy_computes(terms, space):
    text = f"{space}+{space}".join(f"({coefficient!r}){space}*{space}{name}" for coefficient, name in terms)
    expected = sum(coefficient * VECTORS[name] for coefficient, name in terms)
    try:
        result = evaluate_expression(text, VECTORS)
    except ExpressionError as err:  # 0 * a or a - a: the zero vector is refused, never decoded
        assert "zero vector" in str(err)
        result = np.zeros(3, dtype=np.float32)
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-3)
