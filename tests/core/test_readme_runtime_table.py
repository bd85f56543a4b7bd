"""The README's table of paper-scale GPU runtimes is what ``tools/runtime_table.py`` makes of the
committed gpu-check JSON (or says that nothing is measured yet); the tool's numbers follow from the rates."""

from __future__ import annotations

import pytest

from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.kernel import flops_per_step
from deepcollapse.experiments.basin_runtime import atlas_shapes, duration_text
from deepcollapse.experiments.basins import BASINS_GPU, BASINS_LAPTOP


def test_readme_table_is_what_the_tool_makes_of_the_committed_json(script_module):
    tool = script_module("tools/runtime_table.py")
    readme = tool.README.read_text()
    summary = tool.load(tool.RESULTS)
    assert tool.replace_table(readme, tool.render(summary)) == readme, (
        "run python tools/runtime_table.py --write"
    )
    table = readme.split(tool.START)[1].split(tool.END)[0]
    if not tool.measured(summary):
        assert "Not measured yet" in table and "| experiment |" not in table
    else:
        assert "`reproduce basins-gpu`" in table and summary["device"] in table


def test_the_tool_turns_measured_rates_into_runtimes(script_module):
    """Every DUFM row at C FLOP/s achieved and free analysis: basins-gpu's wall time is its FLOPs over C, the
    stepping of one GPU (computed here from the atlas's cells, independently of the tool's model)."""
    tool = script_module("tools/runtime_table.py")
    C = 2e13
    rows = []
    for K, L, width in ((10, 4, 30), (15, 7, 64)):
        f = flops_per_step(DUFMConfig(classes=K, layers=L, width=width, n=50).shapes)
        for R in (16, 1024):
            rows.append({"kind": "step", "classes": K, "layers": L, "n": 50, "width": width, "runs": R,
                         "step_loop_ran": "graph", "flops_per_step": f,
                         "runs_steps_per_s": C / f})  # fmt: skip
    for K, L, n, d in {*atlas_shapes(BASINS_GPU), *atlas_shapes(BASINS_LAPTOP)}:
        rows.append({"kind": "analysis", "classes": K, "layers": L, "n": n, "width": d, "observe_s": 0.0,
                     "classify_s": 0.0})  # fmt: skip
    summary = {
        "gpu_check": "ran",
        "device": "Test GPU",
        "cpus": 16,
        "steps": {"dufm_throughput": {"rows": rows}},
    }
    flops = sum(
        BASINS_GPU.runs * BASINS_GPU.steps * flops_per_step(DUFMConfig(classes=c.classes, layers=c.layers,
                                                                       n=c.n, width=c.width).shapes)
        for c in BASINS_GPU.cells()
    )  # fmt: skip
    row = tool.dufm_section(summary)[0]
    assert row["experiment"] == "`reproduce basins-gpu`"
    assert row["estimate"].startswith(duration_text(flops / C) + " (stepping " + duration_text(flops / C))
    assert "R = 1024 (graph)" in row["basis"] and "107 520 runs × 20 000 GD steps" in row["work"]
    table = tool.render(summary)
    assert table.count("\n| `reproduce ") == 2 and "Test GPU" in table
    with pytest.raises(ValueError, match="markers"):
        tool.replace_table("no markers here", table)
