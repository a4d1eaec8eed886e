"""app/ uses the engine's public face: its methods, `engine.vocabulary` (the open vocabulary's state and transitions)
and the small result types they return, never the engine's parts (`engine.words`, the word scorer), so that they can
change behind it (issue 73): nor `engine.reader` (decoding) nor `engine.encoder` (the transformer and its tokenizer).
"""
from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"
PARTS = {"words", "reader", "encoder"}  # attributes of an engine that app/ never reads


def engine_parts_read(source: str) -> list[tuple[int, str]]:
    """(line, "engine.<part>") for each read of a part of PARTS of something named `engine` (`engine.words`,
    `active.engine.words`, `self.engine.words`) in `source`."""
    def is_engine(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "engine") or (
            isinstance(node, ast.Attribute) and node.attr == "engine")
    return sorted((node.lineno, f"engine.{node.attr}") for node in ast.walk(ast.parse(source))
                  if isinstance(node, ast.Attribute) and node.attr in PARTS and is_engine(node.value))


def test_the_app_never_reads_the_engines_parts():
    reads = [f"{path.relative_to(APP.parent)}:{line}: {what}" for path in sorted(APP.rglob("*.py"))
             for line, what in engine_parts_read(path.read_text(encoding="utf-8"))]
    assert reads == []


def test_the_check_sees_each_way_of_reaching_a_part():
    source = ("a = engine.words.vocab\nb = active.engine.words\nc = self.engine.words.open_vocab\n"
              "d = candidates.words\ne = engine.vocabulary.scorer\nf = active.engine.reader.fluency_model\n"
              "g = engine.encoder.tokenizer\n")
    assert engine_parts_read(source) == [(1, "engine.words"), (2, "engine.words"), (3, "engine.words"),
                                         (6, "engine.reader"), (7, "engine.encoder")]
