"""The package reads in pieces a maintainer can hold (issue 29, acceptance 2 and 3): no module
over 1,000 lines, no function over 80 (its whole span, docstring and nested functions included),
and no import cycle between the package's modules (imports inside functions count: a cycle broken
by a deferred import is still a cycle of the design). The layers themselves are checked in
``tests/test_layers.py``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from test_layers import PACKAGE, _imported, _name

MAX_MODULE_LINES = 1000
MAX_FUNCTION_LINES = 80
MODULES = sorted(PACKAGE.rglob("*.py"))


def _id(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """Each function (or method, or nested function) whose span runs over ``limit`` lines."""
    return [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines, from line {node.lineno})"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > limit
    ]


@pytest.mark.parametrize("path", MODULES, ids=_id)
def test_a_module_is_at_most_a_thousand_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_id(path)}: {lines} lines; split it by what it does"


@pytest.mark.parametrize("path", MODULES, ids=_id)
def test_a_function_is_at_most_eighty_lines(path):
    assert long_functions(path.read_text(encoding="utf-8")) == []


def import_graph() -> dict[str, set[str]]:
    known = {_name(p) for p in MODULES}
    graph = {}
    for path in MODULES:
        module = _name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # importing a module of a package runs the package's face too
        reached = {t for node in ast.walk(tree) for t in _imported(node)}
        reached |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        graph[module] = (reached & known) - {module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm), a package's
    face (its ``__init__``) set apart: importing a package runs its face, which may gather what
    its modules define, so a module reading its own package's face is what the layer test
    refuses, not a cycle here."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def _without_faces(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    faces = {m for m, p in zip(map(_name, MODULES), MODULES, strict=True) if p.stem == "__init__"}
    return {
        m: {t for t in ts if t not in faces or not m.startswith(f"{t}.")} for m, ts in graph.items()
    }


def test_no_import_cycle_between_modules():
    assert cycles(_without_faces(import_graph())) == []


def test_the_checks_see_what_they_refuse():
    # none of the three checks can pass by seeing nothing
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    body = "\n".join(["    x = 1"] * 80)
    assert long_functions(f"def f():\n{body}\n") == ["f (81 lines, from line 1)"]
    assert long_functions(f"def f():\n{body[:-10]}\n") == []
    graph = import_graph()
    assert "powermodel.models.thermal" in graph["powermodel.simulate"] or any(
        "powermodel.models" in t for t in graph["powermodel.simulate"]
    )


def test_every_docs_page_the_code_names_exists():
    # a module's docstring that names its stage's page (docs/model/campus.md) points at a page
    # that is there: two stages once named pages that never were
    named = {
        (str(_id(path)), page)
        for path in MODULES
        for page in re.findall(r"docs/[\w/.-]+\.md", path.read_text(encoding="utf-8"))
    }
    assert named and [n for n in sorted(named) if not (PACKAGE.parent / n[1]).exists()] == []
