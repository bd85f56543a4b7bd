"""Count the public API's functions: how many there are, how many have numpydoc Parameters and Returns
sections, how many have an ``Examples`` section with a ``>>>`` line, how many have no docstring, and how
many return a plain ``dict`` (issue 30's measure).

A public function is a module-level function or a method of a public class, with a name that does not start
with ``_``, in a module whose path has no part starting with ``_`` (``__init__.py`` aside).  It returns a dict
when its return annotation starts with ``dict`` or, without an annotation, a ``return {...}`` appears in it.
Those are split three ways:

- *serialisations*: the methods ``to_dict``, ``to_file_dict`` and ``state_dict`` (a typed result's or a
  config's JSON form, or torch's convention; the typed results the issue asks for have them);
- *typed mappings*: ``dict[K, V]`` with a value type other than ``Any`` -- a collection keyed by data
  (``{layer: singular values}``, ``{cell: registry row}``, ``{eigenvalue: multiplicity}``);
- *records*: ``dict``, ``dict[str, Any]`` or an unannotated dict literal -- named fields of mixed types, which
  should be a typed result unless the docstring says why not (a sentence starting "A plain dict"); those
  without such a reason are counted too.

    python tools/api_counts.py [src/deepcollapse] [-v]     # -v lists the dict-returning functions
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def count(root: Path) -> tuple[dict[str, int], list[str]]:
    """The counts and the dict-returning functions (``module path:name``) under ``root``."""
    counts = {
        "public functions": 0,
        "numpydoc": 0,
        "with an example": 0,
        "no docstring": 0,
        "return dict": 0,
        "serialisations": 0,
        "typed mappings": 0,
        "records": 0,
        "records without a reason": 0,
    }
    names = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent)
        if any(part.startswith("_") and part != "__init__.py" for part in rel.parts):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nodes: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        for top in tree.body:
            if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
                nodes.append(top)
            elif isinstance(top, ast.ClassDef) and not top.name.startswith("_"):
                nodes += [m for m in top.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for node in nodes:
            if node.name.startswith("_"):
                continue
            counts["public functions"] += 1
            doc = ast.get_docstring(node) or ""
            counts["no docstring"] += not doc
            counts["with an example"] += "Examples\n" in doc and ">>> " in doc
            returns = "Returns\n" in doc or "Yields\n" in doc  # a generator documents what it yields
            counts["numpydoc"] += (
                ("Parameters\n" in doc and returns) or "Returns\n---" in doc or "Yields\n---" in doc
            )
            annotation = ast.unparse(node.returns) if node.returns is not None else ""
            is_dict = annotation.startswith(("dict", "Dict", "typing.Dict"))
            if not annotation:
                is_dict = any(
                    isinstance(sub, ast.Return) and isinstance(sub.value, (ast.Dict, ast.DictComp))
                    for sub in ast.walk(node)
                )
            if is_dict:
                counts["return dict"] += 1
                if node.name in ("to_dict", "to_file_dict", "state_dict"):
                    kind = "serialisations"
                elif isinstance(node.returns, ast.Subscript) and not _any_value(node.returns):
                    kind = "typed mappings"
                else:
                    kind = "records"
                    counts["records without a reason"] += "A plain dict" not in " ".join(doc.split())
                counts[kind] += 1
                names.append(f"{rel}:{node.name} [{kind}]")
    return counts, names


def _any_value(annotation: ast.Subscript) -> bool:
    """Whether ``dict[K, V]``'s value type ``V`` is (or contains) ``Any``."""
    args = annotation.slice
    value = args.elts[-1] if isinstance(args, ast.Tuple) else args
    return "Any" in ast.unparse(value)


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "-v"]
    counts, names = count(Path(args[0] if args else "src/deepcollapse"))
    print(", ".join(f"{k} {v}" for k, v in counts.items()))
    if "-v" in argv:
        print("\n".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
