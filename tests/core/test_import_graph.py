"""The package's import graph (module-level and function-level imports alike) has no cycles, and its arrows
point down the layers of docs/architecture.md:

    cli -> experiments -> runs -> landscape -> dufm, nets -> theory, metrics -> family -> _core

analysis (tables, figures, reports) reads run folders and theory results: it may import theory, metrics,
family and _core, never the trainers; theory stays numpy/scipy (never torch)."""

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


# package -> the packages it may import (besides itself); read from the layer diagram above
ALLOWED = {
    "<root>": {"_core"},
    "__main__": {"cli"},
    "_core": set(),
    "family": {"_core"},
    "theory": {"_core", "family"},
    "metrics": {"_core"},
    "dufm": {"_core", "family", "theory", "metrics"},
    "nets": {"_core", "family", "theory", "metrics"},
    "landscape": {"_core", "family", "theory", "metrics", "dufm"},
    "analysis": {"_core", "family", "theory", "metrics"},
    "runs": {"_core", "family", "theory", "metrics", "dufm", "nets", "landscape", "analysis"},
    "experiments": {"_core", "family", "theory", "metrics", "dufm", "nets", "landscape", "analysis", "runs"},
    "cli": {
        "_core",
        "family",
        "theory",
        "metrics",
        "dufm",
        "nets",
        "landscape",
        "analysis",
        "runs",
        "experiments",
    },
}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<root>"


def test_every_package_has_a_layer():
    assert {_package(m) for m in import_graph()} == set(ALLOWED)


def test_layers_point_down():
    wrong = [
        f"{name} -> {t}"
        for name, targets in import_graph().items()
        for t in targets
        if _package(t) != _package(name) and _package(t) not in ALLOWED[_package(name)]
    ]
    assert wrong == []


def test_theory_never_imports_torch():
    for path in (PKG / "theory").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not [n for n in names if n.split(".")[0] == "torch"], path
