"""The package's import graph (module-level and function-level imports alike) has no cycles, and its arrows
point down: cli -> experiments -> training -> models / metrics / data -> _checks; theory and analysis never
import training code."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PKG = SRC / "deepcollapse"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for t in targets:
                if t in modules and t != name and not modules[t].name == "__init__.py":
                    graph[name].add(t)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state, stack = [], {}, []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                found.append(stack[stack.index(n) :] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found


def test_no_import_cycles():
    assert _cycles(import_graph()) == []


def test_layers_point_down():
    graph = import_graph()
    for name, targets in graph.items():
        if name.startswith(("deepcollapse.theory", "deepcollapse.analysis")):
            assert not [t for t in targets if t.startswith(("deepcollapse.training", "deepcollapse.cli"))], (
                name
            )
        if not name.startswith("deepcollapse.cli"):
            assert not [t for t in targets if t.startswith("deepcollapse.cli")], name
