"""Every shell command of README.md runs as written (issue 32): the ```bash blocks' ``deepcollapse ...`` and
``python -c ...`` lines, in README order, in one temporary working directory per section (a later command
may use what an earlier one wrote, e.g. ``dufm analyze runs/flagship``).

A command that takes more than two minutes carries its time in a comment (``≈ 10–30 min``, ``under 1 h``,
``hours``) or says what it needs (``needs a GPU``, ``needs a Ray cluster``) and is not run here; neither is a
command that reads what such a command writes (``dufm landscape runs/search-k10`` after the marked
``dufm search --out runs/search-k10``).  The fast tier runs the theory, metrics and listing commands in this
process; the claim tier (``-m check``) runs every unmarked command as a user runs it (issue 45: a subprocess,
the command as written, in a temporary folder, without the test run's thread limits), timing each: one over
two minutes fails, so a slow example cannot stay unmarked.
"""

from __future__ import annotations

import os
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
LONG = re.compile(r"(≈|~|under|over)\s*\d+(?:[–-]\d+)?\s*(?:s|min|h)\b|\bhours\b|needs a (?:GPU|Ray cluster)")
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


def _runnable(comment: str) -> bool:
    """Whether a command with this comment runs here: no time over two minutes, nothing it needs."""
    return not LONG.search(comment)


def _outputs(command: str) -> list[str]:
    """The folders a command writes (its ``--out``)."""
    words = shlex.split(command)
    return [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--out"]


def _reads_unrun(command: str, unrun: set[str]) -> bool:
    """Whether ``command`` names a folder (or a path inside it) written by a command that is not run."""
    return any(w == o or w.startswith(o.rstrip("/") + "/") for w in shlex.split(command) for o in unrun)


def runnable_commands() -> list[tuple[str, str]]:
    """``(section, command)`` of every command run here, in README order: unmarked, and not reading what a
    command that is not run writes."""
    out: list[tuple[str, str]] = []
    unrun: set[str] = set()
    for section, _, command, comment in COMMANDS:
        if _runnable(comment) and not _reads_unrun(command, unrun):
            out.append((section, command))
        else:
            unrun.update(_outputs(command))
    return out


def _user_command(command: str) -> list[str]:
    """``command``'s words as a shell runs them: ``deepcollapse`` is the console script installed beside
    this Python (else ``python -m deepcollapse``), ``python`` is this Python."""
    words = shlex.split(command)
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    script = Path(sys.executable).with_name("deepcollapse")
    return (
        [str(script), *words[1:]] if script.is_file() else [sys.executable, "-m", "deepcollapse", *words[1:]]
    )


def _run_as_user(command: str, cwd: Path) -> float:
    """Run one README command as a subprocess in ``cwd`` with the environment of a user's shell (this test
    run's thread limits removed); return its wall time (s)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    t0 = time.perf_counter()
    done = subprocess.run(_user_command(command), cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    assert done.returncode == 0, (
        f"`{command}` exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    )
    return seconds


def _run(command: str) -> None:
    """Run one README command in this process, in the current directory."""
    words = shlex.split(command)
    if words[0] == "python":
        subprocess.run([sys.executable, *words[1:]], check=True)
    else:
        assert main(words[1:]) == 0, command


def test_the_readme_has_shell_examples_and_every_long_one_is_marked():
    assert len(COMMANDS) >= 20
    assert len(runnable_commands()) >= 12
    for _, line, command, comment in COMMANDS:
        if "--smoke" in command or command.startswith(FAST):
            continue
        if command.startswith(("deepcollapse reproduce ", "deepcollapse sweep ", "deepcollapse demo")):
            # a full-size experiment, sweep or demo takes minutes: it must say how long (or run in the check)
            assert LONG.search(comment) or "fig3-left" in command, (
                f"README.md:{line} `{command}` is a full-size run without its time"
            )


def test_the_check_tier_times_the_landscape_example_and_skips_what_reads_a_marked_run():
    # issue 45: `dufm landscape --construction srg ...` took 350 s, and no test ran it
    commands = [c for _, c in runnable_commands()]
    assert any(c.startswith("deepcollapse dufm landscape --construction srg --classes 10") for c in commands)
    assert "deepcollapse best-known show" in commands
    marked = [c for _, _, c, m in COMMANDS if not _runnable(m)]
    assert any(c.startswith("deepcollapse dufm search ") and "--out runs/search-k10" in c for c in marked)
    assert not [c for c in commands if "runs/search-k10" in c]  # they read the marked search's folder


def test_the_parser_joins_continuations_and_reads_marks():
    text = "## A\n```bash\ndeepcollapse x \\\n    --y 1   # ≈ 3 min\nls\n```\n"
    assert shell_commands(text) == [("A", 3, "deepcollapse x --y 1", "≈ 3 min")]
    assert not _runnable("# ≈ 3 min") and not _runnable("# full size; hours") and _runnable("# seconds")
    assert _outputs("deepcollapse dufm search --budget 5 --out runs/s") == ["runs/s"]
    assert _reads_unrun("deepcollapse theory check runs/s/solutions/rank01.npz", {"runs/s"})
    assert not _reads_unrun("deepcollapse theory check runs/s2/x.npz", {"runs/s"})


def test_a_user_command_is_the_console_script_in_a_shell_environment(tmp_path, monkeypatch):
    words = _user_command("deepcollapse theory compare --classes 4")
    assert words[-3:] == ["compare", "--classes", "4"] and "deepcollapse" in " ".join(words[:-3])
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the test run's limit, not the user's
    script = tmp_path / "env.py"
    script.write_text("import os\nassert 'OMP_NUM_THREADS' not in os.environ\nopen('ran', 'w').close()\n")
    assert _run_as_user(f"python {script}", tmp_path) > 0
    assert (tmp_path / "ran").is_file()  # it ran in the folder given


def _sections(fast: bool) -> list[tuple[str, list[str]]]:
    grouped: dict[str, list[str]] = {}
    for section, command in runnable_commands():
        if command.startswith(FAST) or not fast:
            grouped.setdefault(section, []).append(command)
    return list(grouped.items())


@pytest.mark.parametrize(("section", "commands"), _sections(fast=True), ids=[s for s, _ in _sections(True)])
def test_readme_shell_examples_fast(section, commands, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for command in commands:
        _run(command)


@pytest.mark.check
@pytest.mark.parametrize(("section", "commands"), _sections(fast=False), ids=[s for s, _ in _sections(False)])
def test_readme_shell_examples_all_unmarked_run_within_two_minutes(section, commands, tmp_path):
    # as a user runs them: a subprocess each, the command as written, in one temporary folder per section
    times = [(command, round(_run_as_user(command, tmp_path))) for command in commands]
    slow = [f"{c} ({s} s)" for c, s in times if s > LIMIT_S]
    assert not slow, f"README examples over two minutes without their time: {slow}; all (s): {times}"
