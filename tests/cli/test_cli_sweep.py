"""`deepcollapse sweep`: a YAML sweep, command-line grids, relaunch skips finished runs, bad files exit 2."""

import pandas as pd
import pytest
import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse.cli import main

torch.set_num_threads(1)

YAML = """\
name: cli-test
base: {classes: 3, n: 4, layers: 3, width: 6, steps: 40, log_every: 20}
grid: {lam: [0.004, 0.008]}
seeds: [0, 1]
"""


def test_sweep_file_then_relaunch(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text(YAML)
    out = tmp_path / "out"
    assert main(["sweep", str(f), "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "2 tasks (2 run now, 0 already done)" in text and "report:" in text
    assert len(pd.read_csv(out / "results.csv")) == 4
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "cli-test" in html
    assert main(["sweep", str(f), "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    assert "2 tasks (0 run now, 2 already done)" in capsys.readouterr().out
    assert len(pd.read_csv(out / "results.csv")) == 4


def test_sweep_from_command_line_only(tmp_path, capsys):
    argv = [
        "sweep",
        "--base",
        "classes=3",
        "--base",
        "n=3",
        "--base",
        "layers=2",
        "--base",
        "width=5",
        "--base",
        "steps=20",
        "--base",
        "log_every=10",
        "--grid",
        "lr=0.1,0.2",
        "--runs",
        "2",
        "--out",
        str(tmp_path),
        "--workers",
        "1",
        "--no-progress",
    ]
    assert main(argv) == 0
    runs = pd.read_csv(tmp_path / "results.csv")
    assert sorted(set(runs["lr"])) == [0.1, 0.2] and sorted(set(runs["seed"])) == [0, 1]
    # issue 32, point 7: the sweep ends with its points as a table in the terminal, not only file paths
    lines = capsys.readouterr().out.splitlines()
    head = lines.index("per point (mean ± std over seeds; every digit in summary.csv):")
    assert lines[head + 1].split()[:4] == ["point", "lr", "runs", "final_loss"]
    for i, row in pd.read_csv(tmp_path / "summary.csv").iterrows():
        shown = lines[head + 2 + i]
        assert shown.startswith(row["point"]) and f"{row['final_loss_mean']:.4g} ± " in shown


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("base: {classes: 3}\ngird: {lam: [1]}\n", "unknown key sweep.gird"),
        ("base: {classes: 3, widht: 4}\n", "unknown key base.widht"),
        ("base: {classes: 3}\ngrid: {}\n", "grid == {}"),
        ("base: {classes: 3}\ngrid: {lam: []}\n", "grid.lam == []"),
        ("- 1\n- 2\n", "bad.yaml: a YAML list, must be a mapping"),
        ("base: {classes: [\n", "bad.yaml line 2, column 1: expected the node content"),
    ],
)
def test_bad_sweep_files_exit_2(content, message, tmp_path, capsys):
    f = tmp_path / "bad.yaml"
    f.write_text(content)
    assert main(["sweep", str(f), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepcollapse: error: ") and message in err
    assert not (tmp_path / "o").exists()


def test_missing_file_and_out_exit_2(tmp_path, capsys):
    assert main(["sweep", str(tmp_path / "nope.yaml"), "--out", str(tmp_path)]) == 2
    assert "nope.yaml: no such file, must be an existing YAML file" in capsys.readouterr().err
    assert main(["sweep"]) == 2
    assert "file == None" in capsys.readouterr().err
    f = tmp_path / "s.yaml"
    f.write_text(YAML)
    assert main(["sweep", str(f)]) == 2
    assert "--out == None" in capsys.readouterr().err


def test_runs_is_the_sweep_key_and_n_seeds_still_works(tmp_path, recwarn):
    """The YAML key is `runs`, like the option --runs; `n_seeds` (before issue 17) still works, warned."""
    from deepcollapse.cli import build_parser
    from deepcollapse.cli.sweep import build_spec

    base = "base: {classes: 3, n: 4, layers: 3, width: 6, steps: 40}\n"
    f = tmp_path / "s.yaml"
    f.write_text(base + "runs: 3\n")
    spec = build_spec(build_parser().parse_args(["sweep", str(f)]))
    assert spec.seeds == [0, 1, 2] and not [w for w in recwarn if w.category is DeprecationWarning]
    f.write_text(base + "n_seeds: 3\n")
    with pytest.warns(DeprecationWarning, match="'n_seeds' is deprecated, use 'runs'"):
        assert build_spec(build_parser().parse_args(["sweep", str(f)])).seeds == [0, 1, 2]
    # --runs on the command line replaces the file's count under either spelling
    assert build_spec(build_parser().parse_args(["sweep", str(f), "--runs", "2"])).seeds == [0, 1]
    f.write_text(base + "runs: 3\nn_seeds: 3\n")
    with pytest.raises(ConfigError, match="both runs and n_seeds"):
        build_spec(build_parser().parse_args(["sweep", str(f)]))


def test_shipped_sweep_configs_use_runs(recwarn):
    from pathlib import Path

    from deepcollapse.runs.sweep import load_sweep

    files = sorted((Path(__file__).parents[2] / "configs").glob("*.yaml"))
    assert files
    for path in files:
        assert "n_seeds" not in path.read_text(), path
        load_sweep(path)
    assert not [w for w in recwarn if w.category is DeprecationWarning]
