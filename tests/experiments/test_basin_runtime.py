"""The basin atlas's runtime estimate (issue 28): the cost model on the CPU and on one GPU, the costs read
from a gpu-check JSON, and ``reproduce basins`` printing its estimate before the runs and comparing at the
end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from deepcollapse.cli import main
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.kernel import flops_per_step
from deepcollapse.experiments.basin_atlas import BasinAtlas
from deepcollapse.experiments.basin_runtime import (
    ShapeCost,
    atlas_runtime,
    atlas_shapes,
    costs_from_gpu_check,
)

#: Two widths (two cost shapes), 3 runs per cell in calls of 2 (two tasks per cell: 2 runs + 1 run).
ATLAS = dict(name="tiny", classes=4, layers=3, n=2, width=6, steps=200, runs=3, runs_per_task=2, records=10)
ATLAS["axes"] = {"width": [6, 8]}


def _costs() -> dict:
    return {
        (4, 3, 2, 6): ShapeCost(2, 1e-3, 0.01, 0.1, "test"),
        (4, 3, 2, 8): ShapeCost(2, 2e-3, 0.02, 0.3, "test"),
    }


def test_cost_model_on_the_cpu_and_on_one_gpu():
    atlas = BasinAtlas(**ATLAS)  # type: ignore[arg-type]
    # by hand: per shape 2 tasks of 200 steps; analysis of a task = runs x ((200 // 20 + 1) records x observe
    # + classify), with 2 + 1 runs per shape
    dev = 2 * 200 * 1e-3 + 2 * 200 * 2e-3
    host = 3 * (11 * 0.01 + 0.1) + 3 * (11 * 0.02 + 0.3)
    cpu = atlas_runtime(atlas, _costs(), 2, "cpu")
    assert cpu.attrs["tasks"] == 4 and cpu.attrs["workers"] == 2
    assert cpu.attrs["device_s"] == pytest.approx(dev) and cpu.attrs["host_s"] == pytest.approx(host)
    assert cpu.attrs["wall_s"] == pytest.approx((dev + host) / 2)  # the work spread over two processes
    gpu = atlas_runtime(atlas, _costs(), 4, "cuda")
    assert gpu.attrs["wall_s"] == pytest.approx(max(dev, (dev + host) / 4))
    slow_device = {k: ShapeCost(2, 1.0, c.observe_s, c.classify_s, "test") for k, c in _costs().items()}
    busy = atlas_runtime(atlas, slow_device, 4, "cuda")
    assert busy.attrs["wall_s"] == pytest.approx(4 * 200 * 1.0)  # one GPU: its stepping does not overlap
    first = atlas_shapes(atlas)[(4, 3, 2, 6)][:1]  # only the tasks given
    assert atlas_runtime(atlas, _costs(), 1, "cpu", first).attrs["wall_s"] == pytest.approx(
        200 * 1e-3 + 2 * (11 * 0.01 + 0.1)
    )


def _gpu_check(rows: list[dict]) -> dict:
    return {"gpu_check": "ran", "steps": {"dufm_throughput": {"rows": rows}}}


def test_costs_from_a_gpu_check_json():
    atlas = BasinAtlas(**ATLAS)  # type: ignore[arg-type]
    f6 = flops_per_step(DUFMConfig(classes=4, layers=3, n=2, width=6).shapes)
    f8 = flops_per_step(DUFMConfig(classes=4, layers=3, n=2, width=8).shapes)
    step = dict(kind="step", classes=4, layers=3, n=2, step_loop_ran="graph")
    rows = [
        {**step, "width": 6, "runs": 2, "flops_per_step": f6, "runs_steps_per_s": 1000.0},
        {**step, "width": 8, "runs": 2, "flops_per_step": f8, "runs_steps_per_s": 500.0},
        {
            **step,
            "width": 6,
            "runs": 1024,
            "flops_per_step": f6,
            "runs_steps_per_s": 9e9,
        },  # R above 2: unused
        {
            **step,
            "width": 6,
            "runs": 2,
            "flops_per_step": f6,
            "runs_steps_per_s": 1.0,
            "step_loop_ran": "chunk",
        },
        {
            "kind": "analysis",
            "classes": 4,
            "layers": 3,
            "n": 2,
            "width": 6,
            "observe_s": 0.01,
            "classify_s": 0.1,
        },
        {"kind": "step", "label": "flagship R=65536 graph", "skipped": "budget: 1.0 s left"},
    ]
    costs = costs_from_gpu_check(atlas, _gpu_check(rows))
    assert costs[(4, 3, 2, 6)].step_s == pytest.approx(2 / 1000.0)  # R / runs·steps/s at the measured size
    assert costs[(4, 3, 2, 8)].step_s == pytest.approx(2 / 500.0)
    assert costs[(4, 3, 2, 8)].observe_s == 0.01  # the nearest measured width of the same K, L, n
    assert "R = 2 (graph)" in costs[(4, 3, 2, 6)].source
    assert costs_from_gpu_check(atlas, _gpu_check(rows), "chunk")[(4, 3, 2, 6)].step_s == pytest.approx(2.0)
    with pytest.raises(ValueError, match="no analysis row for K = 4, L = 3, n = 2"):
        costs_from_gpu_check(atlas, _gpu_check(rows[:4]))
    with pytest.raises(ValueError, match="no dufm_throughput step rows"):
        costs_from_gpu_check(atlas, _gpu_check(rows[4:]))


def test_the_atlas_prints_its_estimate_first_and_compares_it_at_the_end(tmp_path: Path, capsys):
    path = tmp_path / "atlas.yaml"
    path.write_text(yaml.safe_dump({**ATLAS, "runs": 2, "axes": {"width": [6]}}))
    out = tmp_path / "out"
    assert main(["reproduce", "basins", "--config", str(path), "--out", str(out), "--workers", "1"]) == 0
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if line.startswith("basins: ")]
    assert len(said) == 2 and said[0].startswith("basins: estimated runtime ")
    assert "calibration on this machine (cpu)" in said[0] and said[1].startswith("basins: took ")
    assert err.index(said[0]) < err.index("dufm:") < err.index(said[1])  # before the trainer's bar, after it
    check = pd.read_csv(out / "tables" / "basins_runtime_check.csv").iloc[0]
    est = pd.read_csv(out / "tables" / "basins_runtime_estimate.csv")
    assert check["estimated_s"] == pytest.approx(est["total_s"].sum())  # one worker: the total
    assert check["measured_over_estimated"] == pytest.approx(check["measured_s"] / check["estimated_s"])
    assert math.isfinite(check["measured_over_estimated"]) and check["measured_s"] > 0
    report = (out / "report.html").read_text()
    assert "the estimate made before the run and the wall time it took" in report


def test_an_unreadable_rates_file_is_one_line_before_anything_is_written(tmp_path: Path, capsys):
    path = tmp_path / "atlas.yaml"
    (tmp_path / "rates.json").write_text("{not json")
    path.write_text(yaml.safe_dump({**ATLAS, "rates": str(tmp_path / "rates.json")}))
    out = tmp_path / "out"
    assert main(["reproduce", "basins", "--config", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rates.json" in err[0] and "gpu_check.py --out" in err[0]
    assert not out.exists()
    json.dumps(err)  # (one plain line)
