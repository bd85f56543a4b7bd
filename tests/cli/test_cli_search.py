"""CLI: `dufm search`, `dufm landscape`, `theory check` (exit codes, one-line errors)."""

from __future__ import annotations

import json

import numpy as np

from deepcollapse.cli import main
from deepcollapse.landscape.solution_file import save_solution
from deepcollapse.theory import dnc_solution


def test_theory_check_and_bad_files(tmp_path, capsys):
    sol = dnc_solution(3, 3, 2, 0.01, 0.01, width=4)
    path = save_solution(tmp_path / "dnc.npz", sol.H1, sol.weights, n=2, lam_h=0.01, lam_w=[0.01] * 3)
    assert main(["theory", "check", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert abs(out["loss"] - sol.loss) < 1e-14
    np.savez(tmp_path / "junk.npz", A=np.zeros(3))
    assert main(["theory", "check", str(tmp_path / "junk.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "must hold H1, W_1 .. W_L, n, lam_h, lam_w" in err


def test_landscape_construction_and_bad_target(tmp_path, capsys):
    args = ["dufm", "landscape", "--construction", "dnc", "--classes", "2", "--layers", "3", "--n", "3"]
    args += ["--lam", "0.01", "--width", "2", "--out", str(tmp_path / "land"), "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "local minimum"
    assert (tmp_path / "land" / "landscape_slices.png").is_file()
    assert (tmp_path / "land" / "landscape.json").is_file()
    assert main(["dufm", "landscape", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "must be a DUFM run folder" in err and "--construction dnc|srg" in err


def test_search_tiny_then_landscape_of_the_result(tmp_path, capsys):
    out = tmp_path / "s"
    args = ["dufm", "search", "--classes", "3", "--layers", "3", "--n", "2", "--width", "4", "--runs", "2"]
    args += ["--steps", "100", "--rounds", "1", "--keep", "1", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "rank01.npz" in text and "L_DNC" in text
    assert main(["dufm", "landscape", str(out), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["verdict"] in ("local minimum", "saddle", "not critical", "critical at a kink")
    assert main(["dufm", "search", "--classes", "3", "--width", "2", "--out", str(tmp_path / "x")]) == 2
    assert "width == 2, must be >= 3" in capsys.readouterr().err
