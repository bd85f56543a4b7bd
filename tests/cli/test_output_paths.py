"""Output paths are checked like input paths (issue 32, point 4): one check shared by every command that
writes a file (``_core.io.check_output_file``), the format chosen by the suffix and the file named exactly
as promised, nothing overwritten without ``--force``, and ``theory grid`` files that record n and λ."""

from __future__ import annotations

import csv
import io
import json

import pytest

from deepcollapse import ConfigError
from deepcollapse._core.io import check_output_file, check_output_folder
from deepcollapse.cli import main

GRID = ["theory", "grid", "--classes", "6,7", "--layers", "4", "--n", "5", "--lam", "0.003"]
RATIO = ["theory", "plot", "ratio", "--r", "4:5", "--layers", "3"]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("folder", "must be a file name ending in .csv, .md (it is a folder)"),
        ("table", "must end in one of .csv, .md (the suffix chooses the format; e.g. table.csv)"),
        ("table.xyz", "must end in one of .csv, .md (not .xyz)"),
        ("existing.csv", "must be a new file (it exists; pass force=True to replace it)"),
        ("no/such/t.csv", "must be in an existing folder (no/such does not exist; create it first)"),
        ("a_file/t.csv", "must be in a folder (a_file is a file)"),
    ],
)
def test_the_output_file_check_says_what_is_wrong_in_one_line(name, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    (tmp_path / "existing.csv").write_text("x\n")
    (tmp_path / "a_file").write_text("x\n")
    with pytest.raises(ConfigError) as exc:
        check_output_file(name, suffixes=[".csv", ".md"], option="--out")
    assert str(exc.value) == f"--out == {name!r}, {message}."
    assert check_output_file("existing.csv", suffixes=[".csv"], force=True).name == "existing.csv"


def test_the_output_folder_check_refuses_files_on_the_way(tmp_path):
    (tmp_path / "f").write_text("x\n")
    with pytest.raises(ConfigError, match="must be a folder .it is a file"):
        check_output_folder(tmp_path / "f")
    with pytest.raises(ConfigError, match="must be a folder path .* is a file"):
        check_output_folder(tmp_path / "f" / "run")
    assert check_output_folder(tmp_path / "new" / "run") == tmp_path / "new" / "run"


def test_plot_ratio_writes_exactly_the_file_it_names_and_refuses_a_bare_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([*RATIO, "--out", "runs"]) == 2
    err = capsys.readouterr().err
    assert "--out == 'runs', must end in one of .png, .pdf, .svg" in err and not list(tmp_path.iterdir())
    assert main([*RATIO, "--out", "r.xyz"]) == 2
    assert "(not .xyz)" in capsys.readouterr().err
    assert main([*RATIO, "--out", "ratio.svg"]) == 0
    assert capsys.readouterr().out == "wrote ratio.svg\n"
    assert [p.name for p in tmp_path.iterdir()] == ["ratio.svg"]
    assert (tmp_path / "ratio.svg").read_text().lstrip().startswith("<?xml")
    assert main([*RATIO, "--out", "ratio.svg"]) == 2  # no silent overwrite
    assert "pass --force to replace it" in capsys.readouterr().err
    assert main([*RATIO, "--out", "ratio.svg", "--force"]) == 0


def test_grid_writer_follows_the_suffix_and_records_n_and_lambda(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([*GRID, "--out", "grid.md"]) == 0
    md = (tmp_path / "grid.md").read_text()
    assert md.startswith("L_DNC and L_SRG of the L-DUFM at n = 5, λ_H1 = 0.003, λ_W = 0.003")
    assert "| classes | layers |" in md and "," not in md.split("\n")[2]  # a Markdown table, not CSV
    assert main([*GRID, "--out", "grid.md"]) == 2
    assert "must be a new file (it exists; pass --force" in capsys.readouterr().err
    assert (tmp_path / "grid.md").read_text() == md
    assert main([*GRID, "--out", "grid.csv"]) == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "grid.csv").read_text())))
    assert [(r["n"], r["lam_h"], r["lam_w"]) for r in rows] == [("5", "0.003", "0.003")] * 2
    assert main([*GRID, "--out", "grid.json"]) == 0
    data = json.loads((tmp_path / "grid.json").read_text())
    assert [(r["n"], r["lam_h"]) for r in data] == [(5, 0.003)] * 2
    assert main([*GRID, "--format", "csv", "--out", "other.md"]) == 2
    assert "--format == 'csv', must be 'markdown' for --out other.md" in capsys.readouterr().err
    assert main([*GRID, "--out", "folder_that_is_new/"]) == 2  # no suffix: refused, nothing made
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.csv", "grid.json", "grid.md"]


def test_grid_files_keep_full_precision(tmp_path, monkeypatch):
    from deepcollapse.theory import loss_dnc

    monkeypatch.chdir(tmp_path)
    assert main([*GRID, "--out", "g.csv"]) == 0
    row = next(csv.DictReader(io.StringIO((tmp_path / "g.csv").read_text())))
    assert float(row["loss_dnc"]) == loss_dnc(6, 4, 5, 0.003, 0.003).loss  # every digit
