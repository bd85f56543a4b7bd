"""Every docstring example in the package runs (issue 30, item 5): each module under ``src/deepcollapse``
whose source holds a ``>>>`` line is collected here and run with :func:`doctest.testmod` (claims tier,
``make check``; the front door's and the fit's examples also run in the fast tier, tests/test_front_door.py).

Modules are found from the source tree, so a new example is run without touching this file."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import deepcollapse

ROOT = Path(deepcollapse.__file__).parent


def _modules_with_examples() -> list[str]:
    names = []
    for path in sorted(ROOT.rglob("*.py")):
        if ">>> " not in path.read_text(encoding="utf-8"):
            continue
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = _modules_with_examples()


def test_examples_are_found():
    assert "deepcollapse.dufm.fit" in MODULES and len(MODULES) >= 10


@pytest.mark.check
@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    result = doctest.testmod(
        importlib.import_module(module), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 0 and result.failed == 0, result
