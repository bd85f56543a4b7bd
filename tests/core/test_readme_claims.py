"""Numbers the README shows as command output are what the commands print today."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from deepcollapse.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_theory_compare_output(capsys):
    text = README.read_text()
    m = re.search(r"^(deepcollapse theory compare [^\n]+)\n#\s+(.+)$", text, flags=re.M)
    assert m, "README lost its theory compare example"
    assert main(shlex.split(m.group(1))[1:]) == 0
    out = capsys.readouterr().out
    shown = re.findall(r"\d+\.\d{4,}", m.group(2))  # every number quoted from the output
    assert len(shown) >= 3
    for number in shown:
        assert number in out, f"README shows {number}, `{m.group(1)}` prints:\n{out}"
