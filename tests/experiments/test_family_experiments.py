"""The issue-9 experiments (family_experiments): their tables, and the direction of stable outcomes."""

from __future__ import annotations

import pandas as pd
import pytest

from deepcollapse.experiments.family_experiments import conjecture_grid, conjecture_table
from deepcollapse.theory import ce_dnc, ce_srg, linear_optimum


def test_conjecture_table_counts_where_srg_wins():
    rows = pd.DataFrame(
        {
            "classes": [6, 7, 8, 9, 6, 7, 8, 9],
            "layers": [3, 3, 3, 3, 4, 4, 4, 4],
            "loss_dnc_ce": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
            "loss_srg_ce": [1.05, 0.99, 0.9, 0.8, 0.95, 0.9, 0.8, 0.7],
            "loss_zero": [9.0] * 8,
            "loss_dnc_mse": [0.4, 0.4, 0.4, 0.5, 0.4, 0.4, 0.4, 0.5],
            "loss_srg_mse": [0.44, 0.41, 0.38, 0.5, 0.39, 0.37, 0.34, 0.5],
        }
    )
    t = conjecture_table(rows).set_index("layers")
    assert t.loc[3, "SRG < DNC (ce)"] == "3/4" and t.loc[3, "smallest K (ce)"] == 7
    assert t.loc[3, "K where DNC <= SRG (ce)"] == "6" and t.loc[3, "K where DNC <= SRG (mse)"] == "6-7"
    assert t.loc[3, "K with both zero (mse)"] == "9" and t.loc[3, "K with both zero (ce)"] == "none"
    assert t.loc[4, "SRG < DNC (mse)"] == "3/4" and t.loc[4, "K where DNC <= SRG (ce)"] == "none"
    assert t.loc[4, "min ratio (ce)"] == pytest.approx(0.7)


def test_conjecture_grid_matches_the_theory_engine():
    df = conjecture_grid("10,15", "4", 50, 0.004)
    for _, r in df.iterrows():
        K, L = int(r["classes"]), int(r["layers"])
        assert r["loss_dnc_ce"] == pytest.approx(ce_dnc(K, L, 50, 0.004, 0.004).loss, rel=1e-12)
        assert r["loss_srg_ce"] == pytest.approx(ce_srg(K, L, 50, 0.004, 0.004).loss, rel=1e-12)
        # measured direction at the flagship λ: SRG beats DNC under CE as under MSE (Theorem 5 region)
        assert r["ratio_ce"] < 1 and r["ratio_mse"] < 1 and r["theorem5"]


def test_linear_dufm_smoke_gd_never_below_the_optimum(smoke_report):
    out = smoke_report("linear-dufm").parent
    runs = pd.read_csv(out / "tables" / "linear_dufm_runs.csv")
    reg = runs[(runs["loss"] == "mse") & (runs["lam"] > 0)].dropna(subset=["final_loss"])
    assert len(reg) > 0
    for _, r in reg.iterrows():
        opt = linear_optimum(10, int(r["layers"]), 5, 0.004, 0.004).loss
        assert r["loss_optimum"] == pytest.approx(opt, rel=1e-12)
        assert r["final_loss"] >= opt * (1 - 1e-9)  # the global optimum is a lower bound for GD
    assert runs["min_rank"].dropna().between(0, 10).all()
    assert (out / "figures" / "linear_dufm_rank.png").is_file()
