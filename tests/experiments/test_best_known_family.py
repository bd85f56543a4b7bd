"""``reproduce best-known --loss ce``: the family reaches the search, the points and tables are the family's
own, the construction columns say they are re-optimised; and the table built from synthetic rows."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deepcollapse._core.checks import ConfigError
from deepcollapse.experiments.framework import _check_experiment_family, family_options
from deepcollapse.experiments.registry import get_experiment
from deepcollapse.experiments.search_experiments import best_known_table, family_tag, table_columns


def _rows() -> list[dict]:
    rows = [
        {"classes": 6, "layers": 4, "best_loss": 0.18, "loss_dnc": 0.2, "loss_srg": 0.19},
        {"classes": 3, "layers": 4, "best_loss": 0.05, "loss_dnc": 0.05, "loss_srg": None},
        {"classes": 6, "layers": 3, "best_loss": 0.15, "loss_dnc": 0.16, "loss_srg": 0.12},
    ]
    return [{**r, "structure": "dnc", "rank_profile": "3-3-3", "verdict": "local minimum"} for r in rows]


def test_table_ratios_order_and_family_columns():
    df = best_known_table(_rows())
    assert list(zip(df["layers"], df["classes"])) == [(3, 6), (4, 3), (4, 6)]  # sorted by (L, K)
    assert df["best_over_dnc"].tolist() == pytest.approx([0.15 / 0.16, 1.0, 0.18 / 0.2])
    assert df["best_over_srg"].iloc[0] == pytest.approx(0.15 / 0.12)
    assert math.isnan(df["best_over_srg"].iloc[1])  # SRG undefined at K = 3: no ratio
    ce = best_known_table(_rows(), {"loss": "ce"})
    assert "loss_dnc" not in ce.columns and ce["loss_dnc_family"].tolist() == [0.16, 0.05, 0.2]
    assert ce["best_over_dnc_family"].tolist() == pytest.approx(df["best_over_dnc"].tolist())
    assert set(table_columns({"loss": "ce"})) <= set(ce.columns)
    assert set(table_columns(None)) <= set(df.columns)
    assert best_known_table([]).empty


def test_family_tags_and_options():
    assert family_tag(None) == "" and family_tag({"loss": "mse", "activation": "relu"}) == ""
    assert family_tag({"loss": "ce"}) == "ce"
    assert family_tag({"loss": "mse", "activation": "relu_eps", "eps": 0.1}) == "mse_relu_eps0.1"
    assert family_options({"loss": "ce", "activation": "relu", "eps": None}) == " --loss ce"
    assert family_options({"loss": "mse", "activation": "relu_eps", "eps": 0.1}) == (
        " --activation relu_eps --eps 0.1"
    )


def test_only_experiments_with_families_take_one():
    best = get_experiment("best-known")
    assert _check_experiment_family(best, {"loss": "ce", "activation": None})["loss"] == "ce"
    assert _check_experiment_family(get_experiment("fig2-top"), None)["loss"] == "mse"
    with pytest.raises(ConfigError, match=r"^--loss == 'ce', experiment 'fig2-top' .*best-known"):
        _check_experiment_family(get_experiment("fig2-top"), {"loss": "ce"})
    with pytest.raises(ConfigError, match="eps"):
        _check_experiment_family(best, {"activation": "relu_eps"})


def test_reproduce_refuses_a_family_in_one_line(tmp_path, capsys):
    from deepcollapse.cli import main

    assert main(["reproduce", "fig2-top", "--loss", "ce", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("deepcollapse: error: --loss == 'ce'")
    assert not (tmp_path / "o").exists()  # nothing written


def _independent_loss(path: Path) -> tuple[float, str]:
    """Eq. (1) of a solution file written out by hand (numpy, float64): the family's fit on
    W_L σ(..σ(W_1 H_1)) plus (λ/2) times the squared norms."""
    a = np.load(path)
    H = a["H1"]
    L = sum(1 for k in a.files if k.startswith("W_"))
    Ws = [a[f"W_{l}"] for l in range(1, L + 1)]
    for W in Ws[:-1]:
        H = np.maximum(W @ H, 0.0)
    out = Ws[-1] @ H  # (K, N)
    K, N = out.shape
    labels = np.repeat(np.arange(K), N // K)
    loss = str(a["family_loss"])
    if loss == "ce":
        z = out - out.max(axis=0)
        fit = float(np.mean(np.log(np.exp(z).sum(axis=0)) - z[labels, np.arange(N)]))
    else:
        Y = np.eye(K)[:, labels]
        fit = float(np.sum((out - Y) ** 2)) / (2 * N)
    lam_w = np.broadcast_to(a["lam_w"], (L,))
    reg = 0.5 * float(a["lam_h"]) * float(np.sum(a["H1"] ** 2))
    reg += sum(0.5 * float(lam) * float(np.sum(W**2)) for lam, W in zip(lam_w, Ws))
    return fit + reg, loss


@pytest.mark.check
def test_best_known_ce_smoke_is_at_or_below_the_ce_dnc(smoke_report):
    from deepcollapse.theory.family_compare import compare_family

    out = smoke_report("best-known", loss="ce").parent
    df = pd.read_csv(out / "tables" / "best_known_ce.csv")
    assert len(df) == 2 and (out / "figures" / "best_known_ce.png").is_file()
    assert not (out / "tables" / "best_known.csv").exists()  # the MSE table is not written by a CE run
    for row in df.itertuples():
        assert str(row.solution).startswith("points/ce/")
        loss, fam = _independent_loss(out / row.solution)
        assert fam == "ce" and loss == pytest.approx(row.best_loss, rel=1e-10)
        dnc = compare_family(row.classes, row.layers, 3, 0.004, 0.004, loss="ce").loss_dnc
        assert dnc == pytest.approx(row.loss_dnc_family, rel=1e-9)
        assert row.best_loss <= dnc * (1 + 1e-9)  # never above the CE-re-optimised DNC
        assert len(str(row.rank_profile).split("-")) == row.layers
    assert "best-known --smoke --loss ce" in (out / "report.html").read_text()


def test_verdict_counts_and_improved_cells_per_stage():
    """Issue 31: per table, the points in each verdict at each stage and the loss each improved point gained
    (rows written by hand: one refined, one descended, one untouched, one of an older point.json)."""
    from deepcollapse.experiments.search_experiments import improved_cells, verdict_counts

    rows = [
        {  # undecided, refined to a certified kink point
            "classes": 5,
            "layers": 4,
            "best_loss": 0.30,
            "verdict": "critical at a kink",
            "verdict_before_refinement": "undecided at kinks",
            "verdict_before_descent": "critical at a kink",
            "kink_refinement": {"loss_before": 0.32, "loss_after": 0.30},
            "descent": None,
        },
        {  # not critical, refinement kept nothing, the descent lowered it and certified it
            "classes": 3,
            "layers": 4,
            "best_loss": 0.20,
            "verdict": "local minimum (of the smooth piece)",
            "verdict_before_refinement": "not critical",
            "verdict_before_descent": "not critical",
            "kink_refinement": {"loss_before": 0.26, "loss_after": 0.27},
            "descent": {"loss_before": 0.26, "loss_after": 0.20},
        },
        {  # certified by the search itself
            "classes": 4,
            "layers": 3,
            "best_loss": 0.10,
            "verdict": "local minimum",
            "verdict_before_refinement": "local minimum",
            "verdict_before_descent": "local minimum",
            "kink_refinement": None,
            "descent": None,
        },
        {"classes": 6, "layers": 3, "best_loss": 0.4, "verdict": "saddle"},  # before the stages were recorded
    ]
    counts = verdict_counts(rows).set_index("stage")
    assert counts.loc["search's best point", "undecided at kinks"] == 1
    assert counts.loc["search's best point", "not critical"] == 1
    assert counts.loc["search's best point", "certified"] == 1
    assert counts.loc["after kink refinement", "certified"] == 2
    assert counts.loc["after continued descent", "certified"] == 3
    assert counts.loc["after continued descent", "saddle"] == 1
    assert (counts["points"] == 4).all()
    gained = improved_cells(rows)
    assert gained[["classes", "layers"]].values.tolist() == [[3, 4], [5, 4]]  # sorted by (L, K)
    by_k = gained.set_index("classes")
    assert by_k.loc[5, "gain"] == pytest.approx(0.02) and by_k.loc[5, "after_refinement"] == 0.30
    assert by_k.loc[3, "gain"] == pytest.approx(0.06)
    assert by_k.loc[3, "after_refinement"] == 0.26  # the refinement above its start was not kept
    assert by_k.loc[3, "verdict"] == "local minimum"


def test_an_uncertified_cell_says_why():
    """Issue 31: every cell not certified carries its Clarke residual and the reason in the table."""
    rows = [
        {"classes": 3, "layers": 3, "best_loss": 0.06, "loss_dnc": 0.06, "loss_srg": None,
         "verdict": "local minimum", "clarke_residual": 1e-9},
        {"classes": 8, "layers": 3, "best_loss": 0.16, "loss_dnc": 0.17, "loss_srg": 0.16,
         "verdict": "not critical (descent found: Δf = -5.9e-09 at step 7.7e-06)", "clarke_residual": 1e-3,
         "descent": {"note": "still not critical after 8 round(s) (the budget), loss lowered by 5.1e-05"}},
        {"classes": 9, "layers": 3, "best_loss": 0.17, "loss_dnc": 0.18, "loss_srg": 0.17,
         "verdict": "undecided at kinks", "clarke_residual": 2e-6, "best_from": "user registry",
         "descent": {"note": "a note of the point the registry row replaced"}},
    ]  # fmt: skip
    df = best_known_table(rows).set_index("classes")
    assert df.loc[3, "open_reason"] == ""
    assert df.loc[8, "open_reason"].startswith("not critical (descent found")
    assert df.loc[8, "open_reason"].endswith("continued descent: still not critical after 8 round(s) (the "
                                             "budget), loss lowered by 5.1e-05")  # fmt: skip
    assert df.loc[9, "open_reason"] == "undecided at kinks"  # the registry's point: its own verdict
    assert df.loc[8, "clarke_residual"] == 1e-3
