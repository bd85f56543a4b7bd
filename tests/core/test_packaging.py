"""Packaging and import-layering facts that a refactor could silently break."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_theory_import_loads_no_torch():
    """``deepcollapse.theory`` is numpy/scipy only: importing it (and computing with it) never loads torch."""
    code = (
        "import sys, deepcollapse.theory as t; t.compare(10, 4, 50, 0.004, 0.004); "
        "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_package_data_globs_match_real_files():
    """Every ``[tool.setuptools.package-data]`` pattern matches at least one file (a stale glob ships
    nothing)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_data = config["tool"]["setuptools"]["package-data"]
    assert package_data
    for package, patterns in package_data.items():
        base = ROOT / "src" / package.replace(".", "/")
        for pattern in patterns:
            assert list(base.glob(pattern)), f"package-data {package}: {pattern!r} matches no file"
