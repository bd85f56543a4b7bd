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


def test_readme_and_demo_state_one_demo_runtime():
    """Issue 45, point 10: the README said the demo takes ≈ 3 min, the demo's --help about 1 min (up to ~10
    min on a busy machine); both now say the demo's own words."""
    from deepcollapse.cli.demo import __doc__ as demo_doc

    line = next(
        line for line in README.read_text().splitlines() if line.startswith("deepcollapse demo --out")
    )
    assert "1 min on an idle 2-core CPU, up to ~10 min on a busy one" in line
    assert "1 min on an idle 2-core CPU, up to ~10 min on a busy one" in " ".join(demo_doc.split())
