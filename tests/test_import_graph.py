"""core/ imports as a tree of layers: no import cycle, no CLI inside a library module, no research/; app/
has no import cycle either.

The graph is read from the source (ast), with every import of a core module, at module level or
inside a function: a function-level import that closes a cycle still ties the modules together
(it hid the engine <-> hubness <-> word_eval <-> word_vectors <-> readout cycle).
"""
from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "core"
APP = CORE.parent / "app"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(CORE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The modules of `modules` that `path` imports anywhere in its body (`from .x import y` counts
    as core.x.y when that is a module, else as core.x)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target)
    return {m for m in found if m in modules and m != name}


def import_graph(package: Path = CORE) -> dict[str, set[str]]:
    """Each module of `package` (core/ or app/) -> the modules of the same package it imports."""
    files = {module_name(p): p for p in package.rglob("*.py")}
    return {name: imported_modules(path, set(files)) for name, path in files.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle as [a, b, ..., a], or [] when the graph has none (depth-first search)."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" after
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = "done"
        path.pop()
        return []

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return []


def test_the_finder_sees_a_cycle_through_a_function_level_import(tmp_path):
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_core_has_no_import_cycle():
    graph = import_graph()
    assert "core.engine" in graph and "core.words.hubness" in graph["core.engine"]  # the graph is read
    assert find_cycle(graph) == []


def test_app_has_no_import_cycle():
    """A function-level import counts: app.server.public once took download facts from app.shared.export inside
    `make_room` while app.shared.export took `reserved` from app.server.public."""
    graph = import_graph(APP)
    assert "app.handlers.studio" in graph and graph["app.handlers.studio"]  # the graph is read
    assert find_cycle(graph) == []


def wing_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between app/'s wings: a package under app/ (server, shared, views, handlers, tabs) stands for
    its modules, a module at app/'s top level for itself."""
    def wing(module: str) -> str:
        return ".".join(module.split(".")[:2])
    wings: dict[str, set[str]] = {}
    for module, targets in graph.items():
        wings.setdefault(wing(module), set()).update(wing(t) for t in targets if wing(t) != wing(module))
    return wings


def test_app_wings_import_one_way():
    """The wings import one way, launch -> ui -> tabs -> handlers and wiring -> views -> shared -> server ->
    settings and messages: no two wings import each other, even through others (launch inside server/ would)."""
    wings = wing_graph(import_graph(APP))
    assert {"app.server", "app.shared", "app.views", "app.handlers", "app.tabs"} <= set(wings)
    assert find_cycle(wings) == []


def test_app_keeps_at_most_eight_modules_at_its_top_level():
    assert len(list(APP.glob("*.py"))) <= 8, sorted(p.name for p in APP.glob("*.py"))


def test_core_never_imports_research():
    for path in CORE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        names += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and not node.level]
        assert not [n for n in names if n.split(".")[0] in ("research", "scripts", "app", "tests")], path



def test_at_most_two_command_line_entry_points_in_core():
    guards = [p.relative_to(CORE.parent) for p in CORE.rglob("*.py")
              if '__name__ == "__main__"' in p.read_text(encoding="utf-8")]
    assert len(guards) <= 2, guards


def test_no_sys_path_line_outside_tests():
    """The project installs (`pip install -e .`): nothing puts the repository on sys.path by hand."""
    root = CORE.parent
    sources = [p for folder in ("core", "app", "bench", "scripts", "research") for p in (root / folder).rglob("*.py")]
    offenders = [str(p.relative_to(root)) for p in [*sources, root / "app.py"]
                 if "sys.path.insert" in p.read_text(encoding="utf-8") or "sys.path.append" in p.read_text(encoding="utf-8")]
    assert offenders == []


# core/ in floors, bottom first: a module imports only its own floor or lower ones. A package name stands
# for its modules unless one of them is named on another floor (the most specific name wins); a package's
# own name (its __init__) is on the floor of what it exports.
FLOORS = [
    ("ground", ["core.text", "core.answers", "core.paths", "core.runtime.cancel", "core.runtime.hardware",
                "core.runtime.imports", "core.lora",
                "core.bert", "core.runtime.distributed", "core.explore.projector", "core.vec2sent.expression",
                "core.vec2sent.examples", "core.evaluation.files", "core.evaluation.metrics",
                "core.evaluation.reference", "core.spreadsheet", "core.tokenizer", "core.atomic"]),
    ("data and devices", ["core.runtime", "core.runtime.device", "core.checkpoint", "core.lexicon",
                          "core.evaluation.base", "core.evaluation.sts", "core.evaluation.senteval",
                          "core.evaluation.report"]),
    ("the encoder and the wings", ["core.encoder", "core.words", "core.corpus", "core.vec2sent"]),
    ("readers of vectors", ["core.readout", "core.explore", "core.train"]),
    ("the engine", ["core.engine"]),
    ("on the engine", ["core.evaluation", "core.export", "core.vec2sent.encoder_link", "core.vec2sent.train",
                       "core.vec2sent.diagnostics", "core.collection"]),
    ("entry points", ["core", "core.cli", "core.__main__"]),
]


def floor_of(module: str) -> int:
    """The floor of `module`: the most specific name of FLOORS that covers it ("core" only itself)."""
    names = [(len(name), floor) for floor, (_, names) in enumerate(FLOORS) for name in names
             if module == name or (name != "core" and module.startswith(name + "."))]
    assert names, f"{module} is on no floor of FLOORS: add it"
    return max(names)[1]


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, targets in graph.items() for b in targets if floor_of(b) > floor_of(a))


def test_no_core_module_imports_one_on_a_higher_floor():
    assert upward_imports(import_graph()) == []


def test_the_floor_check_sees_an_upward_import():
    assert upward_imports({"core.words.open_vocab": {"core.engine"}, "core.engine": {"core.words"}}) == [
        ("core.words.open_vocab", "core.engine")]


def test_scripts_and_research_use_the_engine_not_the_app():
    """The app is a UI over the engine; a script needing one of its settings finds it in core/ (bench/
    measures the app, so it may import it)."""
    root = CORE.parent
    for path in [*(root / "scripts").rglob("*.py"), *(root / "research").rglob("*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        names += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and not node.level]
        assert not [n for n in names if n.split(".")[0] == "app"], path


def test_the_app_uses_the_packages_public_faces():
    """app/ imports a package of core/ by its name (its `__all__`), never a module inside it."""
    packages = {p.parent.name for p in CORE.glob("*/__init__.py")}
    for path in (CORE.parent / "app").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deep = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
                and node.module.startswith("core.") and node.module.split(".")[1] in packages
                and node.module.count(".") > 1]
        assert deep == [], path
    for package in packages:
        module = __import__(f"core.{package}", fromlist=["__all__"])
        assert all(hasattr(module, name) for name in module.__all__), package


def test_the_app_never_reaches_into_an_engines_encoder():
    """app/ reads what it needs of the encoder through core.export (`encoder_facts`, `save_sentence_transformers`),
    so that the encoder's insides can change behind the engine: no `.encoder` attribute in app/."""
    reaching = [f"{path.relative_to(CORE.parent)}:{node.lineno}" for path in (CORE.parent / "app").rglob("*.py")
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, ast.Attribute) and node.attr == "encoder"]
    assert reaching == []
