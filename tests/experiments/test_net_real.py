"""Real-data network experiments (digits, MNIST-1D): the smoke runs show the papers' directions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from deepcollapse.experiments.net_figures import NET_FIGURES, figure_spec
from deepcollapse.experiments.net_reports import average_ranks
from deepcollapse.nets.theory_levels import theory_levels
from deepcollapse.theory.constructions import loss_dnc

torch.set_num_threads(1)


@pytest.mark.check
def test_rank_falls_with_weight_decay_for_both_regularisations(smoke_report):
    out = smoke_report("real-digits-rank-wd").parent
    summary = pd.read_csv(out / "tables" / "real-digits-rank-wd_summary.csv")
    for reg in ("dufm", "standard"):
        sub = summary[summary["reg"] == reg].sort_values("lam")
        assert len(sub) == 2 and (sub["seeds"] == 2).all()
        small, large = sub.iloc[0], sub.iloc[-1]
        assert small["avg_rank_mean"] == 10.0  # every M~_l full rank at the smallest weight decay
        assert large["avg_rank_mean"] < small["avg_rank_mean"]
        assert small["train_acc_mean"] > 0.5  # well above chance (0.1) after 200 smoke steps
    assert (out / "figures" / "real-digits-rank-wd_rank.png").is_file()


def test_average_rank_definition():
    rec = {
        "layers": [
            {"layer": 1, "kind": "post", "rank": 10},
            {"layer": 2, "kind": "pre", "rank": 4},
            {"layer": 2, "kind": "post", "rank": 6},
            {"layer": 3, "kind": "pre", "rank": 5},
            {"layer": 3, "kind": "post", "rank": 10},
        ]
    }
    assert average_ranks(rec) == (4.5, 6.0)  # pre: M~_2, M~_3; post: only the middle layer M_2


def test_theory_levels_are_the_dufm_optimum_at_the_runs_n_and_lambda():
    cfg = figure_spec(NET_FIGURES["real-digits-dnc"], smoke=False).tasks("/nonexistent")[0].config
    assert cfg["reg"] == "dufm" and cfg["lam_h_scale"] == "batch_mean"
    N = cfg["n"] * 10
    lv = theory_levels(cfg, N)
    assert lv is not None and lv["n"] == cfg["n"]
    # batch_mean: λ_H1 = lam_h / N (net_config docstring); the DNC loss is independent of how n λ_H1 splits
    assert lv["lam_h"] == pytest.approx(cfg["lam_h"] / N)
    ref = loss_dnc(10, 4, 1, cfg["lam_h"] / 10, [cfg["lam"]] * 4).loss  # n = 1 with n λ_H1 = lam_h / K
    assert lv["loss_dnc"] == pytest.approx(ref, rel=1e-9)
    assert lv["loss_srg"] is not None and lv["loss_dnc"] < 0.5
    assert theory_levels({**cfg, "reg": "standard"}, N) is None
    assert theory_levels({**cfg, "mse_reduction": "mean"}, N) is None  # torch's MSELoss: not eq. (1)'s fit


@pytest.mark.check
def test_dnc_smoke_dnc1_falls_in_every_head_layer_and_levels_are_drawn(smoke_report):
    from deepcollapse.analysis.tables import layer_metrics_frame

    out = smoke_report("real-digits-dnc").parent
    folders = sorted((out / "net" / "points").glob("*/seed_*"))
    assert len(folders) == 4  # 2 regularisations × 2 seeds
    for folder in folders:
        df = layer_metrics_frame(folder, x="epoch")
        for (_layer, _kind), sub in df.groupby(["layer", "kind"]):
            sub = sub.sort_values("epoch")
            assert sub["dnc1"].iloc[-1] < 0.5 * sub["dnc1"].iloc[0]
    levels = pd.read_csv(out / "tables" / "real-digits-dnc_theory.csv")
    assert list(levels["reg"]) == ["dufm"] and np.isfinite(levels["L_DNC"]).all()
    runs = pd.read_csv(out / "tables" / "real-digits-dnc_runs.csv")
    assert (runs["train_acc"] > 0.2).all()  # above chance (0.1) after 200 smoke steps
    assert (out / "figures" / "real-digits-dnc_dufm.png").is_file()


@pytest.mark.check
def test_fig2_bottom_draws_the_loss_against_the_theory_levels(smoke_report):
    report = smoke_report("net-2024-fig2-bottom")
    out = report.parent
    assert (out / "figures" / "net-2024-fig2-bottom_loss.png").is_file()
    html = report.read_text()
    # smoke: 20 digits per class, lam_h_scale dataset -> λ_H1 = lam_h = 5e-6, λ_W = 0.005, L = 4, K = 10
    assert "n = 20, λ_H1 = 5e-06, λ_W = 0.005" in html
