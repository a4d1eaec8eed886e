"""Arithmetic over sentence vectors: `evaluate_expression("b - a + c", {"a": va, "b": vb, "c": vc})`.

Allowed: names of the given sentences, numbers, `+ - * /`, unary `-`/`+` and parentheses. The text
is parsed with Python's `ast` module and walked under a whitelist of node types; nothing is ever
passed to eval or exec. Every rejection is an ExpressionError that names the column (1-based) of
the offending part.
"""
from __future__ import annotations

import ast
import math
import operator
import warnings
from typing import Iterable, Mapping, Union

import numpy as np

MAX_LENGTH = 500  # characters
MAX_DEPTH = 32  # nested operators or parentheses

Value = Union[float, np.ndarray]  # a number or a sentence vector
_OPERATORS = {ast.Add: ("+", operator.add), ast.Sub: ("-", operator.sub),
              ast.Mult: ("*", operator.mul), ast.Div: ("/", operator.truediv)}
_NAMED_OPERATORS = {ast.Pow: "**", ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@",
                    ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}
_FORBIDDEN = {ast.Attribute: "attribute access", ast.Call: "a function call", ast.Subscript: "indexing",
              ast.Compare: "a comparison", ast.BoolOp: "and/or", ast.Lambda: "lambda",
              ast.IfExp: "if/else", ast.Starred: "*unpacking", ast.Tuple: "a tuple (a comma)",
              ast.NamedExpr: "assignment (:=)"}
_HELP = "use sentence names, numbers, + - * / and parentheses"


class ExpressionError(ValueError):
    """An expression that cannot be evaluated; `column` is the 1-based position of the problem."""

    def __init__(self, message: str, column: int):
        super().__init__(f"{message} (at column {column})")
        self.column = column


def evaluate_expression(expression: str, vectors: Mapping[str, np.ndarray]) -> np.ndarray:
    """The vector that `expression` denotes over the named `vectors` (all of the same shape).

    vector +/- vector, number * vector, vector * number and vector / number give vectors; numbers
    may be combined with each other freely. Raises ExpressionError for anything else, including an
    expression whose result is a plain number.
    """
    tree = _parse(expression)
    result = _Evaluator(expression, vectors).value(tree.body, depth=1)
    if not isinstance(result, np.ndarray):
        raise ExpressionError("the expression has no sentence in it: it evaluates to a number", 1)
    if not np.all(np.isfinite(result)):
        raise ExpressionError("the result is not finite (a number is too large)", 1)
    if not np.any(result.astype(np.float32)):
        raise ExpressionError("the result is the zero vector (as a - a is): it has no direction, so no "
                              "words or sentence can be read from it", 1)
    return result.astype(np.float32)


def sentence_names(expression: str, known: Iterable[str]) -> list[str]:
    """The names of `known` that `expression` uses, in `known`'s order (a name may be written in either case:
    "B - A + C" uses b, a and c). ExpressionError for an expression that does not parse or a name not known."""
    known, tree = list(known), _parse(expression)
    evaluator = _Evaluator(expression, {name: np.ones(1) for name in known})
    evaluator.value(tree.body, depth=1)  # rejects what evaluation rejects, first problem first
    used = {evaluator.resolve(node) for node in ast.walk(tree) if isinstance(node, ast.Name)}
    return [name for name in known if name in used]


def _parse(expression: str) -> ast.Expression:
    if not isinstance(expression, str):
        raise ExpressionError(f"the expression must be text, not {type(expression).__name__}", 1)
    if len(expression) > MAX_LENGTH:
        raise ExpressionError(f"the expression is longer than {MAX_LENGTH} characters", MAX_LENGTH + 1)
    if not expression.strip():
        raise ExpressionError("the expression is empty", 1)
    for i, char in enumerate(expression):
        if not char.isprintable():
            raise ExpressionError(f"unexpected character {char!r}", i + 1)
        if char == "#":  # the parser would silently drop the rest of the line as a comment
            raise ExpressionError(f"'#' is not allowed; {_HELP}", i + 1)
    _check_parentheses(expression)
    try:
        with warnings.catch_warnings():  # e.g. SyntaxWarning for odd literals: we reject them anyway
            warnings.simplefilter("ignore")
            return ast.parse(expression.lstrip(), mode="eval")  # eval mode rejects leading blanks
    except SyntaxError as err:  # its offset counts characters of the text parsed, 1-based
        offset = (err.offset or 1) + len(expression) - len(expression.lstrip())
        detail = "" if err.msg == "invalid syntax" else f" ({err.msg})"  # Python's message is often just that
        raise ExpressionError(f"invalid syntax{detail}; {_HELP}", offset) from None
    except (ValueError, RecursionError, MemoryError) as err:
        raise ExpressionError(f"cannot parse the expression ({type(err).__name__})", 1) from None


def _check_parentheses(expression: str) -> None:
    """Reject deep nesting before the parser sees it (Python's own limit raises other errors)."""
    depth = 0
    for i, char in enumerate(expression):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth > MAX_DEPTH:
            raise ExpressionError(f"parentheses are nested more than {MAX_DEPTH} deep", i + 1)


class _Evaluator:
    """Walks the parsed tree; numbers are floats, sentences are float64 vectors."""

    def __init__(self, source: str, vectors: Mapping[str, np.ndarray]):
        self.parsed = source.lstrip().encode("utf-8")  # the text ast saw; its offsets count these bytes
        self.indent = len(source) - len(source.lstrip())
        self.vectors = vectors
        self.shape: tuple[int, ...] | None = None

    def error(self, message: str, node: ast.AST | None = None, column: int | None = None) -> ExpressionError:
        if column is None:
            column = self._column(getattr(node, "col_offset", 0))
        return ExpressionError(message, column)

    def _column(self, utf8_offset: int) -> int:
        """ast offsets count UTF-8 bytes; columns count characters, 1-based."""
        return len(self.parsed[:utf8_offset].decode("utf-8", errors="ignore")) + self.indent + 1

    def value(self, node: ast.AST, depth: int) -> Value:
        if depth > MAX_DEPTH:
            raise self.error(f"the expression is nested more than {MAX_DEPTH} deep", node)
        if isinstance(node, ast.Constant):
            return self._number(node)
        if isinstance(node, ast.Name):
            return self._sentence(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.value(node.operand, depth + 1)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp):
            return self._binary(node, depth)
        what = _FORBIDDEN.get(type(node), f"{type(node).__name__} syntax")
        if isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):  # point at the `.`, `(` or `[`
            owner = node.func if isinstance(node, ast.Call) else node.value
            raise self.error(f"{what} is not allowed; {_HELP}", column=self._column(owner.end_col_offset))
        raise self.error(f"{what} is not allowed; {_HELP}", node)

    def _number(self, node: ast.Constant) -> float:
        if type(node.value) not in (int, float):
            raise self.error(f"{node.value!r} is not allowed: only plain numbers", node)
        try:
            number = float(node.value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise self.error("the number is too large", node)
        return number

    def resolve(self, node: ast.Name) -> str:
        """The known name that `node` stands for: itself, or else its lower-case form."""
        for name in (node.id, node.id.lower()):
            if name in self.vectors:
                return name
        known = ", ".join(sorted(self.vectors)) or "none"
        raise self.error(f"unknown name {node.id!r}; the sentences are: {known}", node)

    def _sentence(self, node: ast.Name) -> np.ndarray:
        name = self.resolve(node)
        vector = np.asarray(self.vectors[name], dtype=np.float64)
        if self.shape is None:
            self.shape = vector.shape
        if vector.shape != self.shape or vector.ndim != 1:
            raise self.error(f"sentence {name!r} has shape {vector.shape}, expected {self.shape} "
                             f"like the others", node)
        return vector

    def _binary(self, node: ast.BinOp, depth: int) -> Value:
        column = self._operator_column(node)
        symbol, apply = _OPERATORS.get(type(node.op), (None, None))
        if symbol is None:
            name = _NAMED_OPERATORS.get(type(node.op), type(node.op).__name__)
            raise self.error(f"the {name} operator is not allowed; {_HELP}", column=column)
        left, right = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
        left_is_vector, right_is_vector = isinstance(left, np.ndarray), isinstance(right, np.ndarray)
        if symbol in "+-" and left_is_vector != right_is_vector:
            raise self.error(f"cannot {'add' if symbol == '+' else 'subtract'} a number and a sentence; "
                             f"scale the sentence instead (e.g. 2 * a)", column=column)
        if symbol == "*" and left_is_vector and right_is_vector:
            raise self.error("cannot multiply two sentences; multiply a sentence by a number", column=column)
        if symbol == "/" and right_is_vector:
            raise self.error("cannot divide by a sentence; divide a sentence by a number", column=column)
        if symbol == "/" and right == 0:
            raise self.error("division by zero", column=column)
        with np.errstate(all="ignore"):  # overflow shows as a non-finite result, checked at the end
            return apply(left, right)

    def _operator_column(self, node: ast.BinOp) -> int:
        """Column of the operator: the first non-blank, non-parenthesis byte between the operands."""
        start = node.left.end_col_offset or node.left.col_offset
        for offset in range(start, node.right.col_offset):
            if chr(self.parsed[offset]) not in " \t()":
                return self._column(offset)
        return self._column(node.col_offset)
