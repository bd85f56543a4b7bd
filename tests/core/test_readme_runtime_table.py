"""The README's table of paper-scale GPU runtimes is what ``tools/runtime_table.py`` makes of the
committed gpu-check JSON (or says once that nothing is measured yet); the numbers of both its sections (the
basin atlases, the network presets) follow from made-up rates by a hand computation."""

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
    assert readme.count(tool.START) == readme.count(tool.END) == 1  # one table, one pair of markers
    if not tool.measured(summary):
        assert "Not measured yet" in table and "| experiment |" not in table
        assert readme.lower().count("not measured yet") == 1
    else:
        assert "`reproduce basins-gpu`" in table and "`reproduce net-2024-fig4-mnist`" in table
        assert summary["device"] in table


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
    assert table.count("\n| `reproduce basins") == 2 and "Test GPU" in table
    assert table.count("| not measured | no network rows for ") == 7  # the network presets: no rows given
    with pytest.raises(ValueError, match="markers"):
        tool.replace_table("no markers here", table)


def test_network_presets_from_measured_images_per_s(script_module):
    """The CUDA rows ``single`` / ``batched S=...`` of the network step give each preset's hours: every call
    of S seeds takes epochs × N_train / (images/s per seed at S), linear between measured S; a shape
    without rows is 'not measured'; the graph rows (not what the training loop runs) and the CPU rows are
    not used."""
    tool = script_module("tools/runtime_table.py")

    def row(label: str, S: int, per_seed: float, device: str = "cuda") -> dict:
        return {"device": device, "shape": "cifar10", "flops_per_image": 1.0, "label": label, "seeds": S,
                "images_per_s": S * per_seed, "images_per_s_per_seed": per_seed}  # fmt: skip

    rows = [row("single", 1, 10_000.0), row("batched S=4", 4, 30_000.0), row("batched S=8", 8, 25_000.0)]
    rows += [row("graph S=8", 8, 1.0), row("batched S=4", 4, 1.0, device="cpu")]
    rows.append({"label": "batched S=16", "device": "cuda", "shape": "cifar10", "skipped": "budget"})
    summary = {"gpu_check": "ran", "device": "GPU X", "steps": {"net_throughput": {"rows": rows}}}
    assert tool.net_rates(summary) == {"cifar10": {1: 10_000.0, 4: 30_000.0, 8: 25_000.0}}
    by_name = {r["experiment"]: r for r in tool.net_section(summary)}
    fig2 = by_name["`reproduce net-2024-fig2-bottom`"]
    # 5 seeds in one batch: 30 000 + (25 000 - 30 000) / 4 = 28 750 images/s per seed; 200 epochs of 50 000
    assert fig2["work"] == "5 runs × 200 epochs of 50 000 images, 1 trainer call of 5 seeds"
    assert fig2["estimate"] == (
        f"{duration_text(200 * 50_000 / 28_750)} of training steps (one seed at a time: "
        f"{duration_text(5 * 200 * 50_000 / 10_000)})"
    )
    assert fig2["basis"] == "network rows (cifar10): images/s per seed 28750 at S = 5"
    # the learning-rate sweep batches its 5 points x 2 seeds into one call of 10 (beyond S = 8: S = 8's rate)
    lr = by_name["`reproduce net-2024-fig9-lr`"]
    assert lr["estimate"].startswith(duration_text(200 * 50_000 / 25_000) + " of training steps")
    assert by_name["`reproduce net-2024-fig4-mnist`"]["estimate"] == "not measured"
    table = tool.render(summary)  # the DUFM step left no rows: its rows say so, the network rows stand
    assert (
        table.count("\n| `reproduce net-") == len(by_name) and "| `reproduce net-2024-fig2-bottom` |" in table
    )
    assert table.count("| not measured | no dufm_throughput step rows") == 2
