"""The basin atlas (issue 19, part 4): validation, cells and tasks, the classifier and the aggregation on
synthetic runs whose class is known by construction, the Wilson intervals, the smoke variant."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.summary import analyze_dufm
from deepcollapse.experiments.basins import (
    BASINS_GPU,
    BASINS_LAPTOP,
    BASINS_SMOKE,
    BasinAtlas,
    Cell,
    atlas_tasks,
    basin_rows,
    class_probabilities,
    estimate_runtime,
    reference_loss,
)
from deepcollapse.theory.constructions import dnc_solution, srg_solution, zero_solution

K, L, N_PER, D, LAM = 10, 4, 1, 30, 0.004


def _wilson_by_roots(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson interval as the two roots p of (k/n − p)² = z² p (1 − p) / n (an independent derivation)."""
    ph = k / n
    a = 1 + z * z / n
    b = -(2 * ph + z * z / n)
    c = ph * ph
    disc = math.sqrt(max(b * b - 4 * a * c, 0.0))
    return (-b - disc) / (2 * a), (-b + disc) / (2 * a)


def _synthetic_folder(tmp_path: Path) -> Path:
    """A trainer run folder holding four runs built by hand: DNC, SRG and zero from the constructions, and a
    random point whose recorded loss is still falling fast (not converged)."""
    cfg = DUFMConfig(
        classes=K,
        layers=L,
        n=N_PER,
        width=D,
        lam_h=LAM,
        lam_w=LAM,
        runs=4,
        steps=1000,
        log_every=100,
        polish=False,
    )
    dnc = dnc_solution(K, L, N_PER, LAM, LAM, width=D)
    srg = srg_solution(K, L, N_PER, LAM, LAM, width=D)
    zero = zero_solution(K, L, N_PER, width=D)
    rng = np.random.default_rng(0)
    rand_H1 = rng.normal(size=(D, K * N_PER))
    rand_W = [rng.normal(size=(D, D)) / math.sqrt(D) for _ in range(L - 1)] + [
        rng.normal(size=(K, D)) / math.sqrt(D)
    ]
    points = [(dnc.H1, dnc.weights), (srg.H1, srg.weights), (zero.H1, zero.weights), (rand_H1, rand_W)]
    folder = tmp_path / "run"
    folder.mkdir()
    cfg.to_yaml(folder / "config.yaml")
    stacked = [torch.tensor(np.stack([p[0] for p in points]))]
    stacked += [torch.tensor(np.stack([p[1][l] for p in points])) for l in range(L)]
    torch.save({"H1": stacked[0], "weights": stacked[1:], "step": 1000, "diverged": {}}, folder / "params.pt")
    with (folder / "metrics.jsonl").open("w") as f:
        for step in range(0, 1001, 100):
            for r in range(4):
                loss = 5.0 * (1.0 - step / 1000) + 1.0 if r == 3 else 0.3  # run 3 still falls fast at the end
                f.write(json.dumps({"step": step, "run": r, "seed": r, "loss": loss}) + "\n")
    return folder


def test_synthetic_runs_are_classified_and_counted_with_wilson_intervals(tmp_path):
    folder = _synthetic_folder(tmp_path)
    analyze_dufm(folder, write=True)
    cell = Cell(K, L, N_PER, D, LAM, 0.5, 1.0)
    ref = (0.25, "test reference")
    rows = basin_rows(folder, cell, ref)
    assert [r["classification"] for r in rows] == ["dnc", "srg_like", "zero", "not_converged"]
    summary = json.loads((folder / "summary.json").read_text())
    assert all(run["polished_loss"] is None for run in summary["runs"])  # polish=False: skipped
    # the loss ratio is the float64 final loss over the reference: DNC's is its closed form / 0.25
    assert rows[0]["loss_over_best"] == pytest.approx(
        dnc_solution(K, L, N_PER, LAM, LAM).loss / 0.25, rel=1e-9
    )
    assert rows[2]["final_loss"] == pytest.approx(0.5)  # the zero point: fit 1/2, no regularisation
    # six runs in one group: the four above, one more DNC, one diverged
    df = pd.DataFrame(rows + [{**rows[0], "seed": 4}, {**rows[3], "seed": 5, "classification": "diverged"}])
    table = class_probabilities(df, ["width"])
    row = table.iloc[0]
    assert row["n_runs"] == 6
    expected = {"dnc": 2, "srg_like": 1, "zero": 1, "not_converged": 1, "diverged": 1, "low_rank": 0}
    expected["reaches_dnc"] = 2
    for c, k in expected.items():
        lo, hi = _wilson_by_roots(k, 6)
        assert row[f"p_{c}"] == pytest.approx(k / 6)
        assert (row[f"p_{c}_lo"], row[f"p_{c}_hi"]) == pytest.approx((lo, hi), abs=1e-12)
    total = sum(
        row[f"p_{c}"]
        for c in ("dnc", "dnc_converging", "srg_like", "low_rank", "zero", "not_converged", "diverged")
    )
    assert total == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"axes": {"width": []}}, "axes['width'] == [], must list at least one value"),
        ({"axes": {"width": [16, -8]}}, "axes['width'][1] == -8, must be >= 1"),
        ({"width": -4}, "width == -4, must be >= 1"),
        ({"axes": {"depth": [3]}}, "axes == 'depth': did you mean 'width'? Must be one of"),
        ({"axes": {"width": [16]}, "maps": [("width", "lr")]}, "axis 'lr' must also be in axes"),
        ({"axes": {"lr": [0.0]}}, "axes['lr'][0] == 0.0, must be > 0"),
        ({"records": 5}, "records == 5, must be >= 10"),
    ],
)
def test_bad_atlas_is_one_line_config_error(kwargs, words):
    with pytest.raises(ConfigError) as err:
        BasinAtlas(**kwargs)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_cells_tasks_and_seeds():
    atlas = BasinAtlas(
        classes=4,
        layers=3,
        n=2,
        width=8,
        axes={"width": [8, 16], "init_factor": [0.5, 1]},
        maps=[("width", "init_factor")],
        runs=5,
        runs_per_task=2,
        steps=100,
    )
    cells = atlas.cells()
    assert len(cells) == 4 and len(set(cells)) == 4 and cells[0] == atlas.base  # the 2 x 2 map, base first
    tasks = atlas_tasks(atlas, Path("out"))
    assert len(tasks) == 4 * 3
    first = [t for t in tasks if t.meta["cell"] == cells[0].id]
    assert [(t.config["seed"], t.config["runs"]) for t in first] == [(0, 2), (2, 2), (4, 1)]
    half = next(t for t in tasks if "_a0.5" in t.meta["cell"] and "_d16_" in t.meta["cell"])
    # α = 0.5 halves the trainer's default stds: H1 1 -> 0.5, W_l 1/sqrt(16) -> 0.125
    assert half.config["init_scale"] == pytest.approx([0.5, 0.125, 0.125, 0.125])
    assert half.config["polish"] is False and half.config["log_every"] == 10


def test_presets_sizes():
    from deepcollapse.experiments.dufm_helpers import dufm_base
    from deepcollapse.experiments.paper2024 import FIG3_RIGHT_WIDTHS

    assert BASINS_LAPTOP.total_runs >= 2000
    assert BASINS_GPU.total_runs >= 100_000
    assert BASINS_SMOKE.total_runs <= 32
    ref = dufm_base(False)  # the fig3-right experiment (2024 Fig. 3 right)
    gpu = BASINS_GPU.slice_cells("width")  # the GPU slice is fig3-right's setting, n = 50 included
    assert [c.width for c in gpu] == FIG3_RIGHT_WIDTHS
    assert {(c.classes, c.layers, c.n, c.lam, c.lr) for c in gpu} == {
        (ref["classes"], ref["layers"], ref["n"], ref["lam"], ref["lr"])
    }
    laptop = BASINS_LAPTOP.slice_cells("width")  # the laptop slice: the same but n = 10 (cost)
    assert [c.width for c in laptop] == FIG3_RIGHT_WIDTHS
    assert {(c.classes, c.layers, c.lam, c.lr) for c in laptop} == {
        (ref["classes"], ref["layers"], ref["lam"], ref["lr"])
    }


def test_reference_prefers_a_lower_best_known_loss(tmp_path):
    atlas = BasinAtlas(classes=6, layers=3, n=50, width=30, steps=100)
    from deepcollapse.theory.compare import compare

    c = compare(6, 3, 50, 0.004, 0.004)
    theory = min(c.loss_dnc, c.loss_srg)
    table = tmp_path / "best_known.csv"
    pd.DataFrame([{"classes": 6, "layers": 3, "best_loss": theory - 1e-3}]).to_csv(table, index=False)
    from deepcollapse.experiments.basins import read_best_known

    assert reference_loss(atlas, atlas.base, read_best_known(table)) == (theory - 1e-3, "best-known table")
    pd.DataFrame([{"classes": 6, "layers": 3, "best_loss": theory + 1e-3}]).to_csv(table, index=False)
    assert reference_loss(atlas, atlas.base, read_best_known(table)) == (theory, "min(L_DNC, L_SRG)")
    assert reference_loss(atlas, atlas.base) == (theory, "min(L_DNC, L_SRG)")


@pytest.mark.check
def _eq1(path: Path) -> float:
    """formulas.md's eq. (1) (MSE + ReLU) from a solution file's matrices, written out with numpy."""
    d = np.load(path)
    H1, n, lam_h, lam_w = d["H1"], int(d["n"]), float(d["lam_h"]), d["lam_w"]
    weights = [d[f"W_{l}"] for l in range(1, len(lam_w) + 1)]
    K = weights[-1].shape[0]
    Y = np.kron(np.eye(K), np.ones((1, n)))
    H = H1
    for W in weights[:-1]:
        H = np.maximum(W @ H, 0.0)
    fit = np.sum((weights[-1] @ H - Y) ** 2) / (2 * K * n)
    return float(
        fit + lam_h / 2 * np.sum(H1**2) + sum(lw / 2 * np.sum(W**2) for lw, W in zip(lam_w, weights))
    )


def test_smoke_atlas_runs_and_estimates(tmp_path):
    from deepcollapse.experiments.registry import get_experiment
    from deepcollapse.landscape.best_known import Registry

    registry = Registry.load(tmp_path / "reg")
    get_experiment("basins").run(tmp_path / "b", smoke=True, workers=1, registry=registry)
    runs = pd.read_csv(tmp_path / "b" / "tables" / "basins_runs.csv")
    cells = pd.read_csv(tmp_path / "b" / "tables" / "basins_cells.csv")
    assert len(runs) == BASINS_SMOKE.total_runs and len(cells) == len(BASINS_SMOKE.cells())
    assert set(runs["classification"]) <= {
        "dnc",
        "dnc_converging",
        "srg_like",
        "low_rank",
        "zero",
        "not_converged",
        "diverged",
    }
    from deepcollapse.theory.compare import compare

    c = compare(4, 3, 2, 0.004, 0.004)  # K = 4: no SRG, the reference is L_DNC
    assert (runs["reference"] == "min(L_DNC, L_SRG)").all()
    assert runs["loss_over_best"].to_numpy() == pytest.approx(runs["final_loss"].to_numpy() / c.loss_dnc)
    assert (tmp_path / "b" / "figures" / "basins_classes_vs_width.png").is_file()
    assert (tmp_path / "b" / "figures" / "basins_map_width_init_factor.png").is_file()
    # each cell's lowest run was offered to the registry: the rows are the lowest offered point of each
    # problem (cells differing only in lr / init share one), each re-evaluated from its matrices
    offers = pd.read_csv(tmp_path / "b" / "tables" / "basins_registry.csv")
    assert sorted(offers["cell"]) == sorted(c.id for c in BASINS_SMOKE.cells())
    for o in offers.itertuples():
        assert o.loss == pytest.approx(_eq1(tmp_path / "b" / o.solution), rel=1e-10)
        assert o.loss <= 1.0001 * runs.loc[runs["cell"] == o.cell, "final_loss"].min()  # float32 runs
    rows = Registry.load(tmp_path / "reg").rows
    assert len(rows) == len({(c.width,) for c in BASINS_SMOKE.cells()})  # one problem per width
    for row in rows:
        same = offers[[f"_d{row.key.widths[0]}_" in c for c in offers["cell"]]]
        assert row.loss == pytest.approx(same["loss"].min(), rel=1e-12) and row.loss == pytest.approx(
            _eq1(row.path), rel=1e-10
        )
    est = estimate_runtime(BASINS_SMOKE, workers=2, probe_seconds=0.2)
    assert len(est) == 2 and (est["step_s"] > 0).all()
    assert est.attrs["wall_s"] == pytest.approx(est["total_s"].sum() / 2)


def test_every_atlas_column_is_explained(tmp_path):
    from deepcollapse.analysis.fields import field_meaning

    rows = [
        {"cell": "c", "width": 16, "seed": s, "classification": c, "loss_over_best": 1.0 + s}
        for s, c in enumerate(["dnc", "low_rank"])
    ]
    table = class_probabilities(pd.DataFrame(rows), ["cell", "width"])
    columns = [*table.columns, "reference", "reference_loss", "loss_over_best", "init_factor", "grad_norm"]
    missing = [c for c in columns if not field_meaning(c)]
    assert missing == []
