"""Copy a tree's ``.py`` files with every docstring blanked (line numbers kept): the code-only input of the
duplicate-code scan that issue 30 measures before and after (docstrings of sibling methods are alike by design).

    python tools/strip_docstrings.py src /tmp/code && (cd /tmp/code && duplicates --most 200 --seconds 300)
"""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path


def strip(src: Path, dst: Path) -> int:
    """Write every ``.py`` file under ``src`` to the same place under ``dst`` (replaced) with its module, class
    and function docstrings blanked; a body that was only a docstring keeps ``...``.  Returns the file count."""
    shutil.rmtree(dst, ignore_errors=True)
    count = 0
    for f in sorted(src.rglob("*.py")):
        text = f.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            first = node.body[0] if node.body else None
            if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)):
                continue
            if not isinstance(first.value.value, str) or first.end_lineno is None:
                continue
            for i in range(first.lineno - 1, first.end_lineno):
                lines[i] = ""
            if len(node.body) == 1:  # keep the body valid
                lines[first.lineno - 1] = " " * first.col_offset + "..."
        out = dst / f.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines) + "\n", encoding="utf-8")
        count += 1
    return count


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print(strip(Path(sys.argv[1]), Path(sys.argv[2])), "files")
