"""The tutorial (docs/tutorial.py, jupytext percent format, paired with docs/tutorial.ipynb) runs headless
from start to end, and the committed notebook has the cells of the .py."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
TUTORIAL = DOCS / "tutorial.py"
NOTEBOOK = DOCS / "tutorial.ipynb"
HAVE_NOTEBOOK_TOOLS = all(importlib.util.find_spec(m) for m in ("jupytext", "nbclient", "ipykernel"))


def test_the_notebook_has_the_cells_of_the_script():
    """``jupytext --to ipynb docs/tutorial.py`` regenerates the notebook; a stale one fails here."""
    jupytext = pytest.importorskip("jupytext")
    nbformat = pytest.importorskip("nbformat")
    script = jupytext.read(TUTORIAL)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    cells = [(c.cell_type, c.source) for c in notebook.cells]
    assert cells == [(c.cell_type, c.source) for c in script.cells], (
        "docs/tutorial.ipynb is out of date: run `jupytext --to ipynb docs/tutorial.py`"
    )


@pytest.mark.check
def test_the_tutorial_runs_headless(tmp_path, monkeypatch):
    """Executed as a notebook (nbclient, a fresh kernel, cwd a temporary folder) where the notebook tools are
    installed, else as a script; any error fails.  It writes only below ``$TMPDIR``, nothing in its cwd."""
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    if HAVE_NOTEBOOK_TOOLS:
        import jupytext
        from nbclient import NotebookClient

        notebook = jupytext.read(TUTORIAL)
        NotebookClient(
            notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
        ).execute()
        text = "".join(
            out.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs
        )
    else:
        run = subprocess.run(
            [sys.executable, str(TUTORIAL)],
            cwd=cwd,
            env={**os.environ, "TMPDIR": str(tmp), "MPLBACKEND": "Agg"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        text = run.stdout
    figures = list(tmp.glob("deepcollapse-tutorial-*/tutorial.png"))
    assert len(figures) == 1 and figures[0].stat().st_size > 10_000, text[-2000:]
    assert f"figure: {figures[0]}" in text
    assert (figures[0].parent / "mnist5k-net" / "summary.json").is_file()
    assert list(cwd.iterdir()) == []
