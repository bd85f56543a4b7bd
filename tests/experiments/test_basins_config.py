"""`reproduce basins --config FILE.yaml`: an atlas of the user's own settings (issue 19's bad input: an atlas
grid with an empty axis or a negative width gets one line, exit 2, nothing written)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from deepcollapse.cli import main
from deepcollapse.experiments.basin_atlas import BasinAtlas

SHIPPED = sorted((Path(__file__).resolve().parents[2] / "configs" / "basins").glob("*.yaml"))

#: Seconds: K = 4 (no SRG), n = 2, widths 6 and 8, 2 runs of 200 steps per cell.
TINY = {
    "name": "tiny",
    "classes": 4,
    "layers": 3,
    "n": 2,
    "width": 6,
    "steps": 200,
    "runs": 2,
    "runs_per_task": 2,
    "axes": {"width": [6, 8]},
}


def _write(tmp_path: Path, data: object, name: str = "atlas.yaml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def test_shipped_atlas_files_load_and_their_headers_hold():
    assert SHIPPED, "configs/basins/ ships at least one example"
    for path in SHIPPED:
        atlas = BasinAtlas.from_yaml(path)
        head = path.read_text().split("\nname:")[0]
        assert f"deepcollapse reproduce basins --config configs/basins/{path.name}" in head, path
        m = re.search(r"(\d+) cells x (\d+) runs = (\d+) GD runs of ([\d ]+) steps", head)
        assert m, f"{path.name}: the header states the atlas's size"
        cells, runs, total, steps = (int(g.replace(" ", "")) for g in m.groups())
        assert (cells, runs, total, steps) == (len(atlas.cells()), atlas.runs, atlas.total_runs, atlas.steps)


def test_yaml_round_trip():
    atlas = BasinAtlas(**{**TINY, "maps": [("width", "lr")], "axes": {"width": [6, 8], "lr": [0.25, 0.5]}})
    again = BasinAtlas.from_yaml(atlas.to_yaml())
    assert again == atlas and again.maps == [("width", "lr")]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"axes": {"width": []}}, "axes['width'] == [], must list at least one value"),
        ({"axes": {"width": [6, -8]}}, "axes['width'][1] == -8, must be >= 1"),
        ({"width": -4}, "width == -4, must be >= 1"),
        ({"axes": {"depth": [3]}}, "axes == 'depth': did you mean 'width'? Must be one of"),
        ({"widht": 8}, "unknown key config.widht"),
        ({"maps": [["width", "lr"]]}, "axis 'lr' must also be in axes"),
    ],
)
def test_a_bad_atlas_file_is_one_line_exit_2_and_nothing_is_written(change, words, tmp_path, capsys):
    path = _write(tmp_path, {**TINY, **change})
    out = tmp_path / "out"
    assert main(["reproduce", "basins", "--config", str(path), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"deepcollapse: error: {path}: ") and words in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("text", "words"), [("", "empty"), ("axes: [\n", "YAML syntax"), ("- 1\n- 2\n", "must be a mapping")]
)
def test_an_unreadable_atlas_file_names_the_file(text, words, tmp_path, capsys):
    path = _write(tmp_path, text)
    out = tmp_path / "out"
    assert main(["reproduce", "basins", "--config", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"deepcollapse: error: {path}") and words in err and err.count("\n") == 1, err
    assert not out.exists()


def test_config_is_refused_where_it_has_no_meaning(tmp_path, capsys):
    path = _write(tmp_path, TINY)
    out = tmp_path / "out"
    assert main(["reproduce", "fig3-left", "--config", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--config == " in err and "'fig3-left' has no settings file" in err and "basins, basins-gpu" in err
    assert main(["reproduce", "basins", "--smoke", "--config", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "with --smoke, must be one of the two" in err and err.count("\n") == 1
    assert not out.exists()


def test_an_atlas_file_runs_resumes_and_names_itself_in_the_report(tmp_path, capsys):
    path = _write(tmp_path, {**TINY, "device": "cuda"})  # written for a GPU box; --device cpu wins over it
    out = tmp_path / "out"
    argv = ["reproduce", "basins", "--config", str(path), "--out", str(out), "--no-progress"]
    argv += ["--workers", "1", "--device", "cpu"]
    assert main(argv) == 0
    configs = [yaml.safe_load(p.read_text()) for p in (out / "points").rglob("config.yaml")]
    assert configs and all(c["device"] == "cpu" for c in configs)
    runs = pd.read_csv(out / "tables" / "basins_runs.csv")
    atlas = BasinAtlas(**TINY)  # type: ignore[arg-type]
    assert len(runs) == atlas.total_runs == 4
    assert sorted(runs["width"].unique()) == [6, 8] and (runs["classes"] == 4).all()
    report = (out / "report.html").read_text()
    assert f"Read from {path.resolve()}" in report
    assert (
        f"deepcollapse reproduce basins --config {path.resolve()} --device cpu --out {out.resolve()}"
        in report
    )
    assert "does not apply" in report  # the shipped settings' runtime is not promised for this file
    before = {p: p.stat().st_mtime_ns for p in (out / "points").rglob("params.pt")}
    assert len(before) == 2  # one trainer call per cell
    assert main(argv) == 0  # the same command again reuses every finished trainer call
    assert {p: p.stat().st_mtime_ns for p in (out / "points").rglob("params.pt")} == before


def test_device_sets_where_the_shipped_atlas_runs(tmp_path, monkeypatch):
    """``reproduce basins-gpu --device cpu``: the shipped GPU atlas with its device replaced (every other
    setting as shipped), said in the report's settings and its command."""
    import deepcollapse.experiments.basins as basins
    from deepcollapse.experiments.registry import get_experiment

    ran: list[BasinAtlas] = []
    monkeypatch.setattr(basins, "run_atlas", lambda ctx, atlas, estimate=False: ran.append(atlas))
    report = get_experiment("basins-gpu").run(tmp_path / "out", device="cpu").read_text()
    (atlas,) = ran
    assert basins.BASINS_GPU.device == "auto" and atlas == basins.BASINS_GPU.replace(device="cpu")
    assert (
        "runs per trainer call, device cpu." in report and "reproduce basins-gpu --device cpu --out" in report
    )


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["fig3-left", "--device", "cpu"], "--device == 'cpu', experiment 'fig3-left' has no device setting"),
        (["basins", "--device", "mps"], "--device == 'mps', must be one of 'cpu', 'cuda', 'auto'"),
        (["basins", "--batch-seeds", "on"], "--batch-seeds == 'on', experiment 'basins' trains no network"),
        pytest.param(
            ["basins-gpu", "--device", "cuda"],
            "--device == 'cuda', must be a CUDA device of this machine (found torch ",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present"),
        ),
    ],
)
def test_device_and_batch_seeds_where_they_have_no_meaning_or_no_device(argv, words, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["reproduce", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepcollapse: error: ") and words in err and err.count("\n") == 1, err
    if "fig3-left" in argv:
        assert "run one that computes where you say (the network experiments, basins, basins-gpu)" in err
    assert not out.exists()


@pytest.mark.parametrize("no_progress", [False, True])
def test_basins_gpu_without_a_gpu_says_so_at_once(no_progress, tmp_path, monkeypatch, capsys):
    """Issue 45, point 3: `reproduce basins-gpu` on a CPU-only machine printed nothing for the minutes of its
    runtime calibration. Now its first line, before any calibration or run (with --no-progress too), says
    there is no GPU, what it does instead and what comes first."""
    import deepcollapse.experiments.basins as basins

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    seen: list[str] = []

    def record(ctx, atlas, estimate=False):
        seen.append(capsys.readouterr().err)  # what was said before the calibration and the runs
        assert atlas.device == "auto" and estimate

    monkeypatch.setattr(basins, "run_atlas", record)
    argv = ["reproduce", "basins-gpu", "--out", str(tmp_path / "out")]
    assert main(argv + (["--no-progress"] if no_progress else [])) == 0
    (err,) = seen
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("deepcollapse: basins-gpu: no GPU here (found torch "), err
    total = f"{basins.BASINS_GPU.total_runs:,}"
    assert f"device auto runs its {total} runs of 20,000 steps on the CPU instead" in lines[0]
    assert "reproduce basins" in lines[0] and "calibration of its 8 cost shapes" in lines[0]


def test_the_runtime_calibration_shows_its_progress(capsys):
    from deepcollapse.experiments.basin_runtime import estimate_runtime

    atlas = BasinAtlas(**TINY)  # type: ignore[arg-type]
    estimate_runtime(atlas, 1, probe_seconds=0.01, progress=True)
    err = capsys.readouterr().err
    assert "runtime calibration: 100%" in err and "2/2" in err  # one step per cost shape (widths 6, 8)
    estimate_runtime(atlas, 1, probe_seconds=0.01)  # the default: silent
    assert capsys.readouterr().err == ""
