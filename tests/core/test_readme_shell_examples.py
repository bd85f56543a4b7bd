"""Every shell command of README.md runs as written (issue 32): the ```bash blocks' ``deepcollapse ...`` and
``python -c ...`` lines, in README order, in one temporary working directory per section (a later command
may use what an earlier one wrote, e.g. ``dufm analyze runs/flagship``).

A command that takes more than two minutes carries its time in a comment (``≈ 10–30 min``, ``under 1 h``) or
says what it needs (``needs a GPU``, ``needs a Ray cluster``) and is not run here; the search and landscape
examples (their own section, issue 31) are not run here either.  The fast tier runs the theory, metrics and
listing commands; the claim tier (``-m check``) runs every other unmarked command, timing each: one over two
minutes fails, so a slow example cannot stay unmarked.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deepcollapse.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```bash\n(.*?)^```", flags=re.M | re.S)
#: The comment of a command that is not run here: its time (over two minutes) or what it needs.
LONG = re.compile(r"(≈|~|under|over)\s*\d+(?:[–-]\d+)?\s*(?:s|min|h)\b|needs a (?:GPU|Ray cluster)")
#: Sections whose examples other tests own (the search / landscape sequence: issue 31).
OWNED_ELSEWHERE = ("How low can the L-DUFM go",)
#: Commands the fast tier runs (seconds); every other unmarked command runs in the claim tier.
FAST = ("deepcollapse theory ", "deepcollapse metrics ", "deepcollapse reproduce --list", "python -c ")
LIMIT_S = 120.0


def shell_commands(text: str) -> list[tuple[str, int, str, str]]:
    """``(section, line, command, comment)`` of every ``deepcollapse`` / ``python -c`` command of the
    README's bash blocks, continuation lines joined."""
    out = []
    heads = [(m.start(), m.group(1)) for m in re.finditer(r"^## (.+)$", text, flags=re.M)]
    for block in FENCE.finditer(text):
        section = next((t for pos, t in reversed(heads) if pos < block.start()), "(preamble)")
        first = text.count("\n", 0, block.start(1)) + 1
        lines = block.group(1).splitlines()
        i = 0
        while i < len(lines):
            start, line = i, lines[i]
            while line.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line.rstrip()[:-1].rstrip() + " " + lines[i].strip()
            i += 1
            code, _, comment = line.partition("  #") if "  #" in line else (line, "", "")
            code = code.strip()
            if code.startswith(("deepcollapse ", "python -c ")):
                out.append((section, first + start, code, comment.strip()))
    return out


COMMANDS = shell_commands(README.read_text())


def _runnable(section: str, comment: str) -> bool:
    return not LONG.search(comment) and not section.startswith(OWNED_ELSEWHERE)


def _run(command: str) -> float:
    """Run one README command in the current directory; return its wall time (s)."""
    t0 = time.perf_counter()
    words = shlex.split(command)
    if words[0] == "python":
        subprocess.run([sys.executable, *words[1:]], check=True)
    else:
        assert main(words[1:]) == 0, command
    return time.perf_counter() - t0


def test_the_readme_has_shell_examples_and_every_long_one_is_marked():
    assert len(COMMANDS) >= 20
    runnable = [c for s, _, c, m in COMMANDS if _runnable(s, m)]
    assert len(runnable) >= 12
    for section, line, command, comment in COMMANDS:
        if "--smoke" in command or command.startswith(FAST):
            continue
        if command.startswith(("deepcollapse reproduce ", "deepcollapse sweep ", "deepcollapse demo")):
            # a full-size experiment, sweep or demo takes minutes: it must say how long (or run in the check)
            assert LONG.search(comment) or section.startswith(OWNED_ELSEWHERE) or "fig3-left" in command, (
                f"README.md:{line} `{command}` is a full-size run without its time"
            )


def test_the_parser_joins_continuations_and_reads_marks():
    text = "## A\n```bash\ndeepcollapse x \\\n    --y 1   # ≈ 3 min\nls\n```\n"
    assert shell_commands(text) == [("A", 3, "deepcollapse x --y 1", "≈ 3 min")]
    assert not _runnable("A", "# ≈ 3 min") and _runnable("A", "# seconds")


def _sections(fast: bool) -> list[tuple[str, list[str]]]:
    grouped: dict[str, list[str]] = {}
    for section, _, command, comment in COMMANDS:
        if _runnable(section, comment) and (command.startswith(FAST) or not fast):
            grouped.setdefault(section, []).append(command)
    return list(grouped.items())


@pytest.mark.parametrize(("section", "commands"), _sections(fast=True), ids=[s for s, _ in _sections(True)])
def test_readme_shell_examples_fast(section, commands, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for command in commands:
        _run(command)


@pytest.mark.check
@pytest.mark.parametrize(("section", "commands"), _sections(fast=False), ids=[s for s, _ in _sections(False)])
def test_readme_shell_examples_all_unmarked_run_within_two_minutes(section, commands, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    times = [(command, round(_run(command))) for command in commands]
    slow = [f"{c} ({s} s)" for c, s in times if s > LIMIT_S]
    assert not slow, f"README examples over two minutes without their time: {slow}; all (s): {times}"
