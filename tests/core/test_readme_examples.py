"""Every ```python block of README.md runs as written (issue 17: the README's Python examples run as tests).

Blocks run in the order they appear, in a temporary working directory; the blocks of one README section
(``## ...``) share one namespace, so an example may use what an earlier block of its section defined.  An
example that would be too slow for the fast tier is made smaller in the README, never skipped here.
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```python\n(.*?)^```", flags=re.M | re.S)


def readme_sections(text: str) -> list[tuple[str, list[tuple[int, str]]]]:
    """The README's ``## `` sections that hold Python blocks: ``[(title, [(line, code), ...]), ...]``."""
    sections: list[tuple[str, list[tuple[int, str]]]] = []
    starts = [(m.start(), m.group(1)) for m in re.finditer(r"^## (.+)$", text, flags=re.M)]
    bounds = [(0, "(preamble)")] + starts + [(len(text), "")]
    for (start, title), (end, _) in zip(bounds[:-1], bounds[1:], strict=True):
        blocks = [
            (text.count("\n", 0, start + m.start(1)) + 1, m.group(1)) for m in FENCE.finditer(text[start:end])
        ]
        if blocks:
            sections.append((title, blocks))
    return sections


SECTIONS = readme_sections(README.read_text())


def test_the_readme_has_python_examples():
    assert sum(len(blocks) for _, blocks in SECTIONS) >= 1


def test_fence_extraction_keeps_order_and_line_numbers():
    text = "intro\n## A\n```python\nx = 1\n```\n```bash\nls\n```\n## B\n```python\ny = x\n```\n"
    assert readme_sections(text) == [("A", [(4, "x = 1\n")]), ("B", [(11, "y = x\n")])]


def run_blocks(blocks: list[tuple[int, str]]) -> None:
    """Execute ``blocks`` in order in one namespace; fail on a deprecated deepcollapse name (a warning) and
    on a block that prints nothing."""
    namespace: dict[str, object] = {"__name__": "readme_example"}
    for line, code in blocks:
        out = io.StringIO()
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
            warnings.simplefilter("always", DeprecationWarning)
            exec(compile(code, f"README.md:{line}", "exec"), namespace)
        stale = [str(w.message) for w in caught if "deepcollapse" in str(w.message)]
        assert stale == [], f"README.md:{line} uses a deprecated deepcollapse name: {stale}"
        assert out.getvalue().strip(), f"README.md:{line} prints nothing: an example shows its result"


def test_the_runner_refuses_deprecated_names_and_silent_blocks():
    warn = "import warnings\nwarnings.warn('deepcollapse x is deprecated', DeprecationWarning)\nprint(1)\n"
    with pytest.raises(AssertionError, match="deprecated deepcollapse name"):
        run_blocks([(1, warn)])
    with pytest.raises(AssertionError, match="prints nothing"):
        run_blocks([(1, "x = 1\n")])
    run_blocks([(1, "x = 2\nprint(x)\n"), (5, "print(x + 1)\n")])  # a later block sees an earlier one's names


@pytest.mark.parametrize("title,blocks", SECTIONS, ids=[title for title, _ in SECTIONS])
def test_readme_python_examples_run(title, blocks, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_blocks(blocks)
