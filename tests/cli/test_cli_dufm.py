"""`deepcollapse dufm train / resume / analyze` through the real command-line entry point."""

from __future__ import annotations

import json

import torch
import yaml

from deepcollapse.cli import main

torch.set_num_threads(1)

SMALL = [
    "--classes",
    "3",
    "--n",
    "2",
    "--layers",
    "3",
    "--width",
    "5",
    "--lam",
    "0.01",
    "--lr",
    "0.3",
    "--steps",
    "60",
    "--runs",
    "2",
    "--seed",
    "4",
    "--log-every",
    "20",
    "--checkpoint-every",
    "20",
    "--no-progress",
]


def test_train_analyze_resume(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["dufm", "train", *SMALL, "--lam-w", "0.02", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "L_DNC" in text and "classifications" in text
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert (
        cfg["lam_h"] == 0.01 and cfg["lam_w"] == [0.02, 0.02, 0.02] and cfg["seed"] == 4 and cfg["runs"] == 2
    )
    assert main(["dufm", "analyze", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [r["seed"] for r in summary["runs"]] == [4, 5] and summary["step"] == 60
    assert summary == json.loads((out / "summary.json").read_text())
    # resume of a finished run re-analyses; --steps extends it
    assert main(["dufm", "resume", str(out), "--steps", "80", "--no-progress", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["step"] == 80


def test_config_file_and_overrides(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("classes: 3\nn: 2\nlayers: 2\nwidth: [4, 6]\nsteps: 10\nlam_h: 0.02\n")
    out = tmp_path / "run"
    assert (
        main(["dufm", "train", "--config", str(cfg), "--steps", "12", "--no-progress", "--out", str(out)])
        == 0
    )
    d = yaml.safe_load((out / "config.yaml").read_text())
    assert d["width"] == [4, 6] and d["steps"] == 12 and d["lam_h"] == 0.02
    capsys.readouterr()
    out2 = tmp_path / "run2"
    argv = ["dufm", "train", "--config", str(cfg), "--seeds", "3,8", "--no-progress", "--json"]
    argv += ["--out", str(out2)]
    assert main(argv) == 0
    assert [r["seed"] for r in json.loads(capsys.readouterr().out)["runs"]] == [3, 8]


def test_errors_are_one_line_exit_2(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["dufm", "train", *SMALL, "--lam", "-1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("deepcollapse: error: --lam == -1.0") and "\n" not in err
    assert main(["dufm", "train", *SMALL, "--width", "0", "--out", str(out)]) == 2
    assert "width == 0" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("classes: 3\nwidht: 4\n")
    assert main(["dufm", "train", "--config", str(bad), "--out", str(out)]) == 2
    assert "widht" in capsys.readouterr().err
    # an existing non-empty folder is never overwritten without --force
    assert main(["dufm", "train", *SMALL, "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["dufm", "train", *SMALL, "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["dufm", "train", *SMALL, "--steps", "20", "--out", str(out), "--force"]) == 0
    assert main(["dufm", "analyze", str(tmp_path / "nothing")]) == 2


def test_zero_steps_is_refused_before_anything_is_written(tmp_path, capsys):
    """Issue 45, point 8: `dufm train --steps 0` wrote a run folder and classified its initialisation. Now one
    line naming --steps (or the settings file's steps), must be >= 1, exit 2, no folder."""
    out = tmp_path / "run"
    for steps in ("0", "-3"):
        assert main(["dufm", "train", *SMALL, "--steps", steps, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert err.startswith(f"deepcollapse: error: --steps == {steps}, must be >= 1 ")
        assert "e.g. --steps 1000" in err
        assert not out.exists()
    cfg = tmp_path / "zero.yaml"
    cfg.write_text("classes: 3\nn: 2\nlayers: 2\nwidth: 4\nsteps: 0\n")
    assert main(["dufm", "train", "--config", str(cfg), "--no-progress", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"deepcollapse: error: steps (in --config {cfg}) == 0, must be >= 1 ")
    assert not out.exists()
    assert main(["dufm", "train", *SMALL, "--steps", "1", "--out", str(out)]) == 0  # one step is a run
