"""Every refused command leaves the file system as it found it (issue 32, point 3).

Each command line below is refused (exit 2, or argparse's SystemExit 2) and must neither create, change nor
delete anything under the working directory: the tree (paths, sizes and contents) is compared before and
after.  The commands cover every sub-command that writes, with bad values of the problem, of the run and of
the output path; the working directory holds one valid file of each kind the commands read, and a file and a
folder where others are meant, so that a command that validates late would leave a trace.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from deepcollapse.cli import main

TINY_DUFM = ["--n", "2", "--layers", "2", "--width", "3", "--steps", "2", "--runs", "1", "--no-progress"]
TINY_NET = ["--dataset", "digits", "--layers", "2", "--width", "4", "--epochs", "1", "--no-progress"]

REFUSED: list[list[str]] = [
    # dufm train: the problem, the run, the output path
    ["dufm", "train", "--classes", "1", *TINY_DUFM, "--out", "m5"],
    ["dufm", "train", "--classes", "four", *TINY_DUFM, "--out", "m5"],
    ["dufm", "train", "--classes", "3", "--lam", "-1", *TINY_DUFM, "--out", "m5"],
    ["dufm", "train", "--classes", "3", *TINY_DUFM, "--lr", "0", "--out", "m5"],
    ["dufm", "train", "--classes", "3", *TINY_DUFM, "--max-steps", "-1", "--out", "m5"],
    ["dufm", "train", "--classes", "3", *TINY_DUFM, "--config", "missing.yaml", "--out", "m5"],
    ["dufm", "train", "--classes", "3", *TINY_DUFM, "--config", "bad.yaml", "--out", "m5"],
    ["dufm", "train", "--classes", "3", *TINY_DUFM, "--out", "a_file.txt"],
    ["dufm", "train", "--classes", "3", *TINY_DUFM, "--out", "a_file.txt/run"],
    ["dufm", "train", "--classes", "3", *TINY_DUFM, "--out", "busy"],
    ["dufm", "train", "--classes", "3", *TINY_DUFM, "--seeds", "1,2", "--out", "m5"],
    ["dufm", "resume", "missing"],
    ["dufm", "resume", "busy"],
    ["dufm", "analyze", "busy"],
    # net train
    ["net", "train", *TINY_NET, "--classes", "0,1,11", "--out", "n5"],
    ["net", "train", *TINY_NET, "--n", "0", "--out", "n5"],
    ["net", "train", *TINY_NET, "--lr", "-1", "--out", "n5"],
    ["net", "train", *TINY_NET, "--dataset", "mnist", "--data-dir", "nowhere", "--out", "n5"],
    ["net", "train", *TINY_NET, "--out", "a_file.txt"],
    ["net", "train", *TINY_NET, "--out", "busy"],
    ["net", "train", *TINY_NET, "--epochs", "many", "--out", "n5"],
    ["net", "resume", "missing"],
    # theory commands that write a file
    ["theory", "grid", "--classes", "2:3", "--layers", "2", "--out", "folder"],
    ["theory", "grid", "--classes", "2:3", "--layers", "2", "--out", "table.xyz"],
    ["theory", "grid", "--classes", "2:3", "--layers", "2", "--out", "existing.csv"],
    ["theory", "grid", "--classes", "2:3", "--layers", "2", "--out", "no/such/dir/grid.csv"],
    ["theory", "grid", "--classes", "1:3", "--layers", "2", "--out", "g.csv"],
    ["theory", "plot", "ratio", "--r", "4:5", "--layers", "3", "--out", "r.xyz"],
    ["theory", "plot", "ratio", "--r", "4:5", "--layers", "3", "--out", "folder"],
    ["theory", "plot", "ratio", "--r", "4:5", "--layers", "3", "--out", "existing.png"],
    ["theory", "plot", "ratio", "--r", "4:5", "--layers", "3", "--out", "no/such/dir/r.png"],
    ["theory", "plot", "ratio", "--r", "4:5", "--layers", "3", "--out", "runs"],
    ["theory", "plot", "ratio", "--r", "2:5", "--layers", "3", "--out", "r.png"],
    ["theory", "plot", "srg", "--classes", "4", "--out", "s.png"],
    ["theory", "plot", "srg", "--classes", "10", "--out", "s.tiffany"],
    ["theory", "compare", "--classes", "four"],
    ["theory", "check", "missing.npz"],
    ["metrics", "missing.npz"],
    # sweeps, experiments, the demo
    ["sweep", "bad.yaml", "--out", "s5", "--no-progress"],
    ["sweep", "missing.yaml", "--out", "s5", "--no-progress"],
    ["sweep", "--base", "classes=1", "--base", "steps=2", "--out", "s5", "--no-progress"],
    ["sweep", "sweep.yaml", "--out", "a_file.txt", "--no-progress"],
    ["sweep", "sweep.yaml", "--out", "s5", "--workers", "0", "--no-progress"],
    ["reproduce", "fig2top", "--smoke", "--out", "e5"],
    ["reproduce", "fig2-top", "--smoke", "--out", "a_file.txt"],
    ["reproduce", "fig2-top", "--smoke", "--out", "e5", "--workers", "0"],
    ["reproduce", "fig2-top", "--smoke", "--out", "e5", "--config", "bad.yaml"],
    ["reproduce", "fig2-top", "--smoke", "--out", "e5", "--loss", "ce"],
    ["demo", "--out", "a_file.txt", "--no-progress"],
    ["demo", "--out", "d5", "--steps", "-3", "--no-progress"],
]


def _tree(root: Path) -> dict[str, str]:
    """``relative path -> content hash`` (``"dir"`` for folders) of everything under ``root``."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEEPCOLLAPSE_KERNEL", "numpy")
    (tmp_path / "a_file.txt").write_text("not a folder\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "runs").mkdir()
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("someone's notes\n")
    (tmp_path / "existing.csv").write_text("a,b\n1,2\n")
    (tmp_path / "existing.png").write_bytes(b"\x89PNG not really\n")
    (tmp_path / "bad.yaml").write_text("kind: [unclosed\n")
    (tmp_path / "sweep.yaml").write_text("kind: dufm\nbase: {classes: 3, n: 2, layers: 2, steps: 2}\n")
    np.savez(tmp_path / "features.npz", features=np.ones((4, 2)), labels=np.arange(4) % 2)
    return tmp_path


@pytest.mark.parametrize("argv", REFUSED, ids=[" ".join(a) for a in REFUSED])
def test_a_refused_command_leaves_the_file_system_as_it_found_it(argv, workdir, capsys):
    before = _tree(workdir)
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, f"exit {code}: {err}"
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if ": error: " in line]
    assert len(errors) == 1 and "Traceback" not in err, err
    # issue 45, point 10b: argparse's refusals start as the config errors do (not `deepcollapse dufm train:`)
    assert errors[0].startswith("deepcollapse: error: "), errors[0]
    assert _tree(workdir) == before, f"{' '.join(argv)} changed the folder; it said: {err}"
