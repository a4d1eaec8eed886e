"""The sentence-vector expression language: valid forms, rejections with positions, fuzzing."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.vec2sent.expression import MAX_DEPTH, MAX_LENGTH, ExpressionError, evaluate_expression, sentence_names

A, B, C = np.array([1.0, 0.0, 2.0]), np.array([0.0, 1.0, 1.0]), np.array([3.0, 3.0, 3.0])
VECTORS = {"a": A, "b": B, "c": C, "s1": A}


@pytest.mark.parametrize("expression, expected", [
    ("b - a + c", B - A + C),
    ("a", A),
    ("-a", -A),
    ("+a", A),
    ("2 * a", 2 * A),
    ("a * 2", 2 * A),
    ("a / 4", A / 4),
    ("(a + b) / 2", (A + B) / 2),
    ("0.5*a + 0.5*(b - -c)", 0.5 * A + 0.5 * (B + C)),
    ("(1 + 2) * a - 3e-1 * s1", 3 * A - 0.3 * A),
    ("  a  +  b  ", A + B),
    ("-(-(a))", A),
])
def test_valid_expressions(expression, expected):
    result = evaluate_expression(expression, VECTORS)
    assert result.dtype == np.float32
    np.testing.assert_allclose(result, expected, rtol=1e-6)


@pytest.mark.parametrize("expression, message, column", [
    ("a.__class__", "attribute access", 2),
    ("b + a.real", "attribute access", 6),
    ("__import__('os')", "function call", 11),
    ("a + abs(b)", "function call", 8),
    ("a[0]", "indexing", 2),
    ("a + zz", "unknown name 'zz'", 5),
    ("__import__", "unknown name '__import__'", 1),
    ("a ** 2", "** operator", 3),
    ("a // 2", "// operator", 3),
    ("a * b", "multiply two sentences", 3),
    ("2 / a", "divide by a sentence", 3),
    ("a / (1 - 1)", "division by zero", 3),
    ("a + 1", "add a number and a sentence", 3),
    ("1 - a", "subtract a number and a sentence", 3),
    ("2 + 3", "evaluates to a number", 1),
    ("a +* b", "invalid syntax", 4),
    ("(a + b", "invalid syntax", 1),
    ("a, b", "tuple", 1),
    ("a if b else c", "if/else", 1),
    ("lambda: a", "lambda", 1),
    ("'text' * a", "only plain numbers", 1),
    ("True * a", "only plain numbers", 1),
    ("1e999 * a", "too large", 1),
    ("a\n+ b", "unexpected character", 2),
    ("", "empty", 1),
    ("é + a", "unknown name 'é'", 1),
    ("a + é.x", "attribute access", 6),  # columns count characters, not UTF-8 bytes
])
def test_rejections_name_the_column(expression, message, column):
    with pytest.raises(ExpressionError, match=re.escape(message)) as info:
        evaluate_expression(expression, VECTORS)
    assert info.value.column == column
    assert f"column {column}" in str(info.value)


def test_a_syntax_error_is_named_once_and_keeps_pythons_detail_when_there_is_one():
    """"b - a + c +" said "invalid syntax (invalid syntax)" (a new user's walk, session 51)."""
    with pytest.raises(ExpressionError) as plain:
        evaluate_expression("a - b +", VECTORS)
    assert "invalid syntax;" in str(plain.value) and "(invalid syntax)" not in str(plain.value)
    with pytest.raises(ExpressionError) as unclosed:
        evaluate_expression("(a + b", VECTORS)
    assert "invalid syntax ('(' was never closed);" in str(unclosed.value)


def test_oversize_input_is_rejected():
    with pytest.raises(ExpressionError, match="longer than") as info:
        evaluate_expression(" + ".join(["a"] * MAX_LENGTH), VECTORS)
    assert info.value.column == MAX_LENGTH + 1


def test_deep_nesting_is_rejected():
    with pytest.raises(ExpressionError, match="nested") as info:
        evaluate_expression("(" * 100 + "a" + ")" * 100, VECTORS)
    assert info.value.column == MAX_DEPTH + 1
    with pytest.raises(ExpressionError, match="nested"):
        evaluate_expression("-" * 100 + "a", VECTORS)


def test_vectors_of_different_shapes_are_rejected():
    with pytest.raises(ExpressionError, match="shape") as info:
        evaluate_expression("a + d", {"a": A, "d": np.zeros(5)})
    assert info.value.column == 5


def test_non_finite_result_is_rejected():
    with pytest.raises(ExpressionError, match="not finite"):
        evaluate_expression("1e300 * 1e300 * a", VECTORS)


def test_non_text_is_rejected():
    with pytest.raises(ExpressionError):
        evaluate_expression(42, VECTORS)  # type: ignore[arg-type]


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=60) | st.text(alphabet="abc012()+-*/.e _[]'\"", max_size=60))
def test_random_text_raises_only_expression_error(text):
    try:
        result = evaluate_expression(text, VECTORS)
    except ExpressionError:
        return
    assert result.shape == A.shape


def test_zero_result_is_rejected():
    with pytest.raises(ExpressionError, match="zero vector"):
        evaluate_expression("a - a", VECTORS)
    with pytest.raises(ExpressionError, match="zero vector"):
        evaluate_expression("0 * a", VECTORS)


def test_names_may_be_written_in_either_case():
    assert np.allclose(evaluate_expression("B - A + C", VECTORS), B - A + C)
    with pytest.raises(ExpressionError, match="unknown name 'D'"):
        evaluate_expression("D - a", VECTORS)


@pytest.mark.parametrize("expression, used", [("b - a + c", ["a", "b", "c"]), ("a", ["a"]), ("2 * C - c", ["c"]),
                                              ("(b + b) / 2", ["b"])])
def test_sentence_names_are_the_known_names_an_expression_uses(expression, used):
    assert sentence_names(expression, "abc") == used


@pytest.mark.parametrize("expression, message", [("a + d", "unknown name 'd'"), ("a +", "invalid syntax"),
                                                 ("", "empty"), (None, "must be text")])
def test_sentence_names_reject_what_evaluation_rejects(expression, message):
    with pytest.raises(ExpressionError, match=message):
        sentence_names(expression, "abc")
