"""``reproduce depth-bound``: the per-layer count of singular values above 1e-3 σ_1 (on solutions whose
ranks are known by construction), the table built from synthetic rows, and the smoke run."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from deepcollapse.experiments.depth_bound import depth_bound_table, layer_sv_counts
from deepcollapse.family import get_family
from deepcollapse.landscape.solution_file import save_solution


def test_counts_follow_the_construction(tmp_path):
    K, n, d = 4, 2, 5
    rng = np.random.default_rng(0)
    A = rng.uniform(0.5, 1.0, (d, 2)) @ rng.uniform(0.5, 1.0, (2, K))  # (d, K), rank 2, positive
    M1 = A + 1e-6 * rng.uniform(0.0, 1.0, (d, K))  # full rank, but its extra σ's are < 1e-3 σ_1
    H1 = np.repeat(M1, n, axis=1) + 1e-9 * rng.standard_normal((d, K * n))  # samples near their mean
    P = np.zeros((d, d))
    P[0, 0] = 1.0  # W_2 keeps one coordinate: M_3 has rank 1
    W3 = rng.standard_normal((K, d))
    path = save_solution(tmp_path / "s.npz", H1, [np.eye(d), P, W3], n=n, lam_h=1e-3, lam_w=[1e-3] * 3)
    assert layer_sv_counts(path) == [2, 2, 1]  # M_1, M_2 = ReLU(M_1) = M_1, M_3 = e_1 e_1^T M_1
    assert layer_sv_counts(path, rtol=1e-12)[:2] == [4, 4]  # the tiny directions count at a tiny threshold
    Z = save_solution(tmp_path / "z.npz", H1, [-np.eye(d), P, W3], n=n, lam_h=1e-3, lam_w=[1e-3] * 3)
    assert layer_sv_counts(Z) == [2, 0, 0]  # ReLU of a negative matrix: all-zero class means count 0
    lin = save_solution(
        tmp_path / "l.npz",
        H1,
        [-np.eye(d), P, W3],
        n=n,
        lam_h=1e-3,
        lam_w=[1e-3] * 3,
        family=get_family("mse", "linear"),
    )
    assert layer_sv_counts(lin) == [2, 2, 1]  # the file's own activation (linear) is used


def _row(loss: str, K: int, L: int, counts: list[int], best: float, dnc: float) -> dict:
    return {
        "fit_term": loss,
        "classes": K,
        "layers": L,
        "best_loss": best,
        "loss_dnc": dnc,
        "loss_srg": None,
        "best_over_dnc": 0.0,
        "best_over_srg": None,
        "sv_counts": counts,
    }


def test_table_counts_and_ratios():
    rows = [
        _row("mse", 4, 3, [4, 3, 2], 0.3, 0.4),
        _row("ce", 4, 2, [4, 4], 0.1, 0.1),
        _row("mse", 4, 2, [4, 1], 0.2, 0.25),
    ]
    df = depth_bound_table(rows)
    assert list(zip(df["fit_term"], df["layers"])) == [("ce", 2), ("mse", 2), ("mse", 3)]
    assert df["sv_counts"].tolist() == ["4-4", "4-1", "4-3-2"]
    assert df["sv_count_max"].tolist() == [4, 4, 4] and df["sv_count_min"].tolist() == [4, 4, 3]
    assert df["sv_count_last"].tolist() == [4, 1, 2]
    assert df["sv_count_3"].isna().tolist() == [True, True, False] and df["sv_count_3"].iloc[2] == 2
    assert df["best_over_dnc_family"].tolist() == pytest.approx([1.0, 0.8, 0.75])
    assert {"best_over_dnc", "loss_dnc", "loss_srg"}.isdisjoint(df.columns)  # only the family's columns
    assert depth_bound_table([]).empty


def test_depth_bound_figure_draws_every_series():
    from deepcollapse.analysis.landscape_plots import plot_depth_bound

    df = depth_bound_table([_row("mse", 4, 2, [4, 1], 0.2, 0.25), _row("ce", 4, 2, [4, 4], 0.1, 0.1)])
    fig, (ax, ax2) = plot_depth_bound(df.to_dict("records"))
    assert len(ax2.get_lines()) >= 2 and "L" in ax.get_xlabel()


@pytest.mark.check
def test_depth_bound_smoke_points_are_at_or_below_dnc(smoke_report):
    from deepcollapse.landscape.solution_file import load_solution
    from deepcollapse.theory.family_compare import compare_family
    from deepcollapse.theory.objective import evaluate
    from deepcollapse.theory.problem import Problem

    out = smoke_report("depth-bound").parent
    df = pd.read_csv(out / "tables" / "depth_bound.csv")
    assert sorted(set(df["fit_term"])) == ["ce", "mse"] and sorted(set(df["layers"])) == [2, 3]
    for row in df.itertuples():
        sol = load_solution(out / row.solution)
        assert sol["family"].loss.name == row.fit_term
        pb = Problem(row.classes, row.layers, sol["n"], sol["lam_h"], tuple(sol["lam_w"]), loss=row.fit_term)
        total = evaluate(sol["H1"], sol["weights"], pb).total  # re-evaluated on the saved solution
        assert total == pytest.approx(row.best_loss, rel=1e-10)
        dnc = compare_family(row.classes, row.layers, sol["n"], 0.004, 0.004, loss=row.fit_term).loss_dnc
        assert dnc == pytest.approx(row.loss_dnc_family, rel=1e-9)
        assert total <= dnc * (1 + 1e-9)
        counts = [int(c) for c in row.sv_counts.split("-")]
        assert len(counts) == row.layers and max(counts) <= row.classes
        assert (
            row.sv_count_max == max(counts[:-1])
            and row.sv_count_last == counts[-1]
            and not math.isnan(row.best_over_dnc_family)
        )
    assert (out / "figures" / "depth_bound.png").is_file()
