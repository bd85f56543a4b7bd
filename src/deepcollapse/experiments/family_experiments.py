"""Experiments for the model families of issue 9 (cross-entropy, deep linear, relaxed ReLU σ_ε).

* ``ce-conjecture`` — the 2024 paper's conclusion conjectures that the SRG construction still beats DNC under
  cross-entropy.  Theory engine on a grid ``K = 6..100``, ``L = 3..8``
  (:mod:`deepcollapse.theory.cross_entropy`: both structures with scales and last layer re-optimised under
  CE), next to the MSE closed forms; plus GD at the flagship size under CE (loss against both candidates,
  ranks per layer).
* ``ce-depth-rank`` — number of non-negligible singular values of the class means at convergence against
  depth ``L = 2..8`` (CE, ReLU and linear), mean ± std over seeds (Garrod & Keating 2025 bound it at global
  minima as depth grows).
* ``linear-dufm`` — the deep linear UFM with and without regularisation: does GD reach the rank-``K``
  optimum (:func:`deepcollapse.theory.linear_optimum`), and how the rank at convergence moves with depth and
  width (with the unregularised CE model of *The Implicit Bias of Depth*, 2026).
* ``relu-eps`` — DNC1 in every layer at convergence for the relaxed model L-DUFM_ε as ``ε → 0`` (Theorem 8
  of the 2024 paper, measured), ReLU as the reference.

"Non-negligible" singular values: above ``rank_rtol · σ_1`` with the trainer's ``rank_rtol = 1e-3`` (the
``rank_<l>`` columns of the run tables).  All GD settings not in the papers are marked "assumed"; they follow
the flagship (n = 50, width 30, λ = 0.004, lr 0.5).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from deepcollapse._core.format import fmt_ranges
from deepcollapse.experiments.dufm_helpers import (
    dufm_base,
    point_curves,
    point_layer_frame,
    point_singular_values,
    seeded_spec,
)
from deepcollapse.experiments.framework import Context, Experiment, register

__all__ = ["CE_GRID", "DEPTHS", "EPS_VALUES", "LINEAR_POINTS"]

LAM = 0.004
# the conjecture grid (theory only): K = 6..100, L = 3..8 at the flagship n and λ, and at the weaker
# regularisation of Fig. 3 left (n = 1, λ = 1e-3), where no MSE optimum up to K = 100 is the zero point
CE_GRID: dict[str, Any] = {"classes": "6:100", "layers": "3:8", "settings": [(50, LAM), (1, 1e-3)]}
CE_GRID_SMOKE: dict[str, Any] = {"classes": "6:12", "layers": "3:5", "settings": [(50, LAM)]}
DEPTHS = [2, 3, 4, 5, 6, 7, 8]
EPS_VALUES = [0.5, 0.2, 0.1, 0.05, 0.02]


def _rank_columns(runs: pd.DataFrame) -> list[str]:
    return sorted(
        (c for c in runs.columns if c.startswith("rank_") and c[5:].isdigit()), key=lambda c: int(c[5:])
    )


def _with_layer_ranks(runs: pd.DataFrame) -> pd.DataFrame:
    """Add ``rank_last`` (rank of ``M_L``, the class means the classifier sees) and ``min_rank`` (smallest
    rank over the hidden layers ``M_2 .. M_L``) to a run table."""
    df = runs.copy()
    if df.empty:
        return df

    def pick(row: pd.Series, how: str) -> float:
        vals = [row[c] for c in _rank_columns(df) if int(c[5:]) >= 2 and pd.notna(row[c])]
        if not vals:
            return np.nan
        return float(vals[-1]) if how == "last" else float(min(vals))

    df["rank_last"] = df.apply(pick, axis=1, how="last")
    df["min_rank"] = df.apply(pick, axis=1, how="min")
    return df


# ----------------------------------------------------------------------------------------------------
# ce-conjecture
# ----------------------------------------------------------------------------------------------------
def conjecture_table(grid_rows: pd.DataFrame) -> pd.DataFrame:
    """Per ``L``: the ``K`` where ``L_SRG < L_DNC`` under CE and under MSE (count, smallest ``K``, the ``K``
    where DNC is strictly better, and the ``K`` where both optima are the all-zero point, a tie).

    Parameters
    ----------
    grid_rows : DataFrame
        Columns ``classes, layers, loss_{dnc,srg}_{ce,mse}`` and ``loss_zero`` (CE's ``log K``; MSE's is
        1/2), e.g. :func:`conjecture_grid`.

    Returns
    -------
    DataFrame
        One row per ``L``: ``layers``, ``K range`` and, per fit term ``(ce)`` / ``(mse)``, ``SRG < DNC``
        (``"count/total"``), ``smallest K``, ``K where DNC <= SRG``, ``K with both zero`` (as ranges,
        ``"6-7, 29-31"``) and ``min ratio`` (the smallest ``L_SRG / L_DNC``).

    Examples
    --------
    >>> row = conjecture_table(conjecture_grid("6,7", "3", 5, 0.004)).iloc[0]
    >>> row["K range"], row["SRG < DNC (ce)"], row["K where DNC <= SRG (mse)"]
    ('6..7', '0/2', '6-7')
    """
    out = []
    for L, sub in grid_rows.groupby("layers"):
        row: dict[str, Any] = {"layers": int(L), "K range": f"{sub['classes'].min()}..{sub['classes'].max()}"}
        for tag in ("ce", "mse"):
            r = sub.dropna(subset=[f"loss_srg_{tag}", f"loss_dnc_{tag}"])
            zero = r["loss_zero"] if tag == "ce" else 0.5
            dnc, srg = r[f"loss_dnc_{tag}"], r[f"loss_srg_{tag}"]
            both_zero = (dnc >= zero - 1e-12) & (srg >= zero - 1e-12)
            beats = r[srg < dnc]["classes"].astype(int).tolist()
            worse = r[(srg >= dnc) & ~both_zero]["classes"].astype(int).tolist()
            ties = r[both_zero]["classes"].astype(int).tolist()
            row[f"SRG < DNC ({tag})"] = f"{len(beats)}/{len(r)}"
            row[f"smallest K ({tag})"] = min(beats) if beats else None
            row[f"K where DNC <= SRG ({tag})"] = fmt_ranges(worse, sep="-")
            row[f"K with both zero ({tag})"] = fmt_ranges(ties, sep="-")
            row[f"min ratio ({tag})"] = float((srg / dnc).min()) if len(r) else None
        out.append(row)
    return pd.DataFrame(out)


def conjecture_grid(classes: str, layers: str, n: int, lam: float, progress: bool = False) -> pd.DataFrame:
    """The CE grid next to the MSE closed forms: one row per ``(K, L)``.

    Parameters
    ----------
    classes, layers : str
        The ``K`` and ``L`` values: an integer, a range ``START:STOP[:STEP]`` or a comma-separated list.
    n : int
        Samples per class.
    lam : float
        ``λ`` of ``H_1`` and of every ``W_l``.
    progress : bool, default False
        Show a progress bar over the CE grid.

    Returns
    -------
    DataFrame
        ``classes, layers``, the CE columns ``loss_dnc_ce, loss_srg_ce, ratio_ce, srg_beats_dnc_ce,
        srg_construction_ce, rank_srg_ce, status_dnc, status_srg, loss_zero``
        (:func:`~deepcollapse.theory.grid_family`) and the MSE columns ``loss_dnc_mse, loss_srg_mse,
        ratio_mse, srg_beats_dnc_mse, theorem5`` (:func:`~deepcollapse.theory.grid`).

    Examples
    --------
    >>> df = conjecture_grid("6,7", "3", 5, 0.004)
    >>> df[["classes", "layers", "srg_beats_dnc_ce", "srg_beats_dnc_mse"]].values.tolist()
    [[6, 3, False, False], [7, 3, False, False]]
    """
    from deepcollapse.theory import grid, grid_family

    ce = pd.DataFrame(grid_family(classes, layers, n, lam, lam, loss="ce", progress=progress))
    mse = pd.DataFrame(grid(classes, layers, n, lam, lam))
    df = ce.rename(
        columns={
            "loss_dnc": "loss_dnc_ce",
            "loss_srg": "loss_srg_ce",
            "ratio": "ratio_ce",
            "srg_beats_dnc": "srg_beats_dnc_ce",
            "srg_construction": "srg_construction_ce",
            "rank_srg": "rank_srg_ce",
        }
    )[
        [
            "classes",
            "layers",
            "loss_dnc_ce",
            "loss_srg_ce",
            "ratio_ce",
            "srg_beats_dnc_ce",
            "srg_construction_ce",
            "rank_srg_ce",
            "status_dnc",
            "status_srg",
            "loss_zero",
        ]
    ]
    mse = mse.rename(
        columns={
            "loss_dnc": "loss_dnc_mse",
            "loss_srg": "loss_srg_mse",
            "ratio": "ratio_mse",
            "srg_beats_dnc": "srg_beats_dnc_mse",
        }
    )[["classes", "layers", "loss_dnc_mse", "loss_srg_mse", "ratio_mse", "srg_beats_dnc_mse", "theorem5"]]
    return df.merge(mse, on=["classes", "layers"])


def _ce_conjecture(ctx: Context) -> None:
    from deepcollapse.analysis.figures import plot_loss_curves, plot_singular_values
    from deepcollapse.analysis.theory_plots import plot_ratio_grid
    from deepcollapse.theory import compare_family

    g = CE_GRID_SMOKE if ctx.smoke else CE_GRID
    ctx.configs["theory_grid"] = {**g, "loss": "ce"}
    ctx.report.section("Theory: does SRG beat DNC under cross-entropy? (K × L grid)")
    for n, lam in g["settings"]:
        tag = f"n{n}_lam{lam:g}"
        df = conjecture_grid(g["classes"], g["layers"], n, lam, ctx.progress)
        ctx.table(
            df,
            f"ce_conjecture_grid_{tag}",
            f"Every (K, L) at n = {n}, λ = {lam:g}: CE candidates (numerical re-optimisation) and MSE "
            "(closed forms).",
            columns=["classes", "layers", "loss_dnc_ce", "loss_srg_ce", "ratio_ce", "ratio_mse"],
        )
        ctx.table(
            conjecture_table(df),
            f"ce_conjecture_summary_{tag}",
            f"Where L_SRG < L_DNC, per L (n = {n}, λ = {lam:g} for H_1 and every W_l), "
            "cross-entropy and MSE.",
        )
        for loss, name in (("ce", "cross-entropy"), ("mse", "MSE")):
            zero = df["loss_zero"] if loss == "ce" else 0.5
            cells = df.rename(columns={f"ratio_{loss}": "ratio"}).assign(
                both_zero=(df[f"loss_dnc_{loss}"] >= zero - 1e-12) & (df[f"loss_srg_{loss}"] >= zero - 1e-12)
            )
            fig, _ = plot_ratio_grid(cells, title=f"{name}, n = {n}, λ = {lam:g}")
            ctx.figure(
                fig,
                f"ce_conjecture_ratio_{loss}_{tag}",
                f"L_SRG / L_DNC under {name} (n = {n}, λ = {lam:g}); ×: DNC at least as good; "
                "grey dots: both optima are the all-zero point (a tie).",
            )
    # GD at the flagship size under CE
    base = dufm_base(ctx.smoke, loss="ce")
    seeds = 2 if ctx.smoke else 10
    result = ctx.sweep(seeded_spec("ce-conjecture-gd", base, seeds, seeds_per_run=max(1, seeds // 2)))
    K, L, n = base["classes"], base["layers"], base["n"]
    theory = compare_family(K, L, n, base["lam"], base["lam"], loss="ce")
    l_dnc, l_srg = theory["loss_dnc"], theory["loss_srg"]
    ctx.report.section(f"GD under cross-entropy at the flagship size (K = {K}, L = {L}, n = {n})")
    fig, _ = plot_loss_curves(point_curves(result), l_dnc, l_srg, zoom=True)
    ctx.figure(
        fig, "ce_conjecture_gd_loss", "Training loss (CE) against the CE-re-optimised DNC and SRG losses."
    )
    sv = point_singular_values(result)
    if sv:
        fig, _ = plot_singular_values(sv)
        ctx.figure(
            fig, "ce_conjecture_gd_singular_values", "Singular values of the class means M_l at the end."
        )
    runs = _with_layer_ranks(result.runs)
    if not runs.empty:
        runs["loss_dnc_ce"], runs["loss_srg_ce"] = l_dnc, l_srg
        runs["below_dnc_ce"] = runs["final_loss"] < l_dnc
        runs["ratio_srg_ce"] = runs["final_loss"] / l_srg if l_srg else np.nan
        cols = [
            "seed",
            "final_loss",
            "loss_dnc_ce",
            "loss_srg_ce",
            "below_dnc_ce",
            "ratio_srg_ce",
            *_rank_columns(runs),
            "diverged",
        ]
        ctx.table(
            runs,
            "ce_conjecture_gd_runs",
            "Per run: final loss against both candidates, rank of M_l.",
            columns=cols,
        )


# ----------------------------------------------------------------------------------------------------
# ce-depth-rank
# ----------------------------------------------------------------------------------------------------
def _ce_depth_rank(ctx: Context) -> None:
    from deepcollapse.analysis.theory_plots import plot_runs_against

    depths = [2, 3, 4] if ctx.smoke else DEPTHS
    points = [{"activation": act, "layers": L} for act in ("relu", "linear") for L in depths]
    seeds = 2 if ctx.smoke else 5
    result = ctx.sweep(seeded_spec("ce-depth-rank", dufm_base(ctx.smoke, loss="ce"), seeds, points=points))
    runs = mark_trained(_with_layer_ranks(result.runs), dufm_base(ctx.smoke, loss="ce"))
    K = dufm_base(ctx.smoke)["classes"]
    ctx.report.section("Rank of the class means at convergence against depth (cross-entropy)")
    if runs.empty:
        return
    trained = runs[runs["reached_dnc"]]
    shown, who = (
        trained,
        "the seeds whose final loss reached the CE-re-optimised DNC candidate's (runs stuck "
        "above it are left out and counted in the table)",
    )
    if trained.empty:  # e.g. the smoke variant: show the pipeline on every run, and say so
        shown, who = runs, "all seeds (none reached the DNC candidate's loss: not converged)"
    for y, what in (
        ("rank_last", "rank of M_L (last hidden layer)"),
        ("min_rank", "smallest rank over M_2 … M_L"),
    ):
        fig, _ = plot_runs_against(
            shown, "layers", y, group="activation", bounds=(0, K), xlabel="number of layers L", ylabel=what
        )
        ctx.figure(fig, f"ce_depth_rank_{y}", f"{what} (singular values > 1e-3 σ_1), mean ± std over {who}.")
    summary = runs.groupby(["activation", "layers"]).agg(
        seeds=("seed", "size"),
        reached_dnc=("reached_dnc", "sum"),
        loss_dnc_ce=("loss_dnc_ce", "first"),
        final_loss_mean=("final_loss", "mean"),
    )
    ranks = trained.groupby(["activation", "layers"])[["rank_last", "min_rank"]].agg(["mean", "std"])
    ranks.columns = [f"{a}_{b}" for a, b in ranks.columns]
    ctx.table(
        summary.join(ranks).reset_index(),
        "ce_depth_rank_summary",
        "Per (activation, L): seeds, how many reached the DNC candidate's loss, their ranks (mean, std).",
    )
    ctx.table(
        runs,
        "ce_depth_rank_runs",
        "Per run.",
        columns=[
            "activation",
            "layers",
            "seed",
            "final_loss",
            "loss_dnc_ce",
            "reached_dnc",
            "rank_last",
            "min_rank",
            *_rank_columns(runs),
        ],
    )


def mark_trained(runs: pd.DataFrame, base: dict[str, Any]) -> pd.DataFrame:
    """Add ``loss_dnc_ce`` (the CE-re-optimised DNC candidate of each run's ``L``; valid for ReLU and linear
    alike, its class means are non-negative) and ``reached_dnc`` (final loss at most that, +1e-3 relative):
    runs stuck above it (e.g. near the all-zero point) did not train, so their ranks say nothing about
    minima.

    Parameters
    ----------
    runs : DataFrame
        Per-run rows with ``layers`` and ``final_loss``.
    base : dict
        The sweep's base: ``classes``, ``n`` and ``lam`` (of ``H_1`` and every ``W_l``).

    Returns
    -------
    DataFrame
        A copy of ``runs`` with the two columns (``runs`` itself when empty).

    Examples
    --------
    >>> runs = pd.DataFrame({"layers": [3, 3], "final_loss": [0.3, 2.3]})
    >>> mark_trained(runs, {"classes": 10, "n": 5, "lam": 0.004})["reached_dnc"].tolist()
    [True, False]
    """
    from deepcollapse.theory import ce_dnc

    df = runs.copy()
    if df.empty:
        return df
    cache: dict[int, float] = {}
    for L in df["layers"].astype(int).unique():
        cache[int(L)] = ce_dnc(base["classes"], int(L), base["n"], base["lam"], base["lam"]).loss
    df["loss_dnc_ce"] = df["layers"].astype(int).map(cache)
    df["reached_dnc"] = df["final_loss"] <= df["loss_dnc_ce"] * (1 + 1e-3)
    return df


# ----------------------------------------------------------------------------------------------------
# linear-dufm
# ----------------------------------------------------------------------------------------------------
LINEAR_POINTS: list[dict[str, Any]] = [
    {"loss": loss, "lam": lam, "layers": L, "width": w}
    for loss, lam in (("mse", LAM), ("mse", 0.0), ("ce", 0.0))
    for L in (2, 4, 6)
    for w in (10, 30)
]


# lr 0.5 with the default initialisation diverged for L = 6 in a trial run; a smaller step and a smaller
# initial scale (std 0.2 for H_1 and every W_l) train every point (assumed)
LINEAR_BASE: dict[str, Any] = {
    "activation": "linear",
    "lr": 0.2,
    "init_scale": 0.2,
    "steps": 50_000,
    "log_every": 500,
}


def _linear_points(smoke: bool) -> list[dict[str, Any]]:
    if smoke:
        return [p for p in LINEAR_POINTS if p["layers"] in (2, 4) and p["width"] == 10]
    return LINEAR_POINTS


def _linear_dufm(ctx: Context) -> None:
    from deepcollapse.analysis.theory_plots import plot_runs_against
    from deepcollapse.theory import linear_optimum

    base = dufm_base(ctx.smoke, **LINEAR_BASE)
    if ctx.smoke:
        base.update(steps=300, log_every=50)
    seeds = 2 if ctx.smoke else 3
    result = ctx.sweep(seeded_spec("linear-dufm", base, seeds, points=_linear_points(ctx.smoke)))
    runs = _with_layer_ranks(result.runs)
    K, n = base["classes"], base["n"]
    ctx.report.section("Deep linear UFM: GD against the optimum, rank against depth and width")
    if runs.empty:
        return

    def optimum(row: pd.Series) -> float:
        if row["loss"] != "mse" or float(row["lam"]) == 0:
            return np.nan  # CE: no closed form; λ = 0: the infimum 0 (exact fit / unbounded logits)
        return linear_optimum(K, int(row["layers"]), n, float(row["lam"]), float(row["lam"]), "mse").loss

    runs["loss_optimum"] = runs.apply(optimum, axis=1)
    runs["gap_to_optimum"] = (runs["final_loss"] - runs["loss_optimum"]) / runs["loss_optimum"]
    runs["model"] = runs.apply(
        lambda r: f"{r['loss']}, λ = {float(r['lam']):g}, width {int(r['width'])}", axis=1
    )
    fig, _ = plot_runs_against(
        runs,
        "layers",
        "min_rank",
        group="model",
        bounds=(0, K),
        xlabel="number of layers L",
        ylabel="smallest rank over M_2 … M_L",
    )
    ctx.figure(fig, "linear_dufm_rank", "Rank of the class means at convergence (> 1e-3 σ_1), mean ± std.")
    keys = ["loss", "lam", "layers", "width"]
    summary = runs.groupby(keys)[
        ["final_loss", "loss_optimum", "gap_to_optimum", "min_rank", "rank_last"]
    ].agg(["mean", "std"])
    summary.columns = [f"{a}_{b}" for a, b in summary.columns]
    ctx.table(
        summary.reset_index(),
        "linear_dufm_summary",
        "Per point: final loss, the MSE optimum (closed form; NaN where none), relative gap, ranks.",
    )
    ctx.table(
        runs,
        "linear_dufm_runs",
        "Per run.",
        columns=[*keys, "seed", "final_loss", "loss_optimum", "gap_to_optimum", "min_rank", "rank_last"],
    )


# ----------------------------------------------------------------------------------------------------
# relu-eps
# ----------------------------------------------------------------------------------------------------
def _relu_eps(ctx: Context) -> None:
    from deepcollapse.analysis.theory_plots import plot_runs_against

    eps_values = [0.2, 0.05] if ctx.smoke else EPS_VALUES
    points: list[dict[str, Any]] = [{"activation": "relu"}]
    points += [{"activation": "relu_eps", "eps": e} for e in eps_values]
    seeds = 2 if ctx.smoke else 3
    result = ctx.sweep(seeded_spec("relu-eps", dufm_base(ctx.smoke), seeds, points=points))
    runs = result.runs.copy()
    ctx.report.section("DNC1 per layer at convergence as ε → 0 (Theorem 8)")
    if runs.empty:
        return
    dnc1_cols = sorted((c for c in runs.columns if c.startswith("dnc1_")), key=lambda c: int(c[5:]))
    long = runs.melt(
        id_vars=["activation", "eps", "seed"], value_vars=dnc1_cols, var_name="layer", value_name="dnc1"
    )
    long["layer"] = long["layer"].str[5:].astype(int)
    eps_runs = long[long["activation"] == "relu_eps"].copy()
    eps_runs["eps"] = eps_runs["eps"].astype(float)
    fig, ax = plot_runs_against(
        eps_runs,
        "eps",
        "dnc1",
        group="layer",
        logx=True,
        logy=True,
        xlabel="ε of σ_ε",
        ylabel="DNC1 = tr Σ_W / tr Σ_B",
        label_fmt="layer {}",
    )
    relu = long[long["activation"] == "relu"].groupby("layer")["dnc1"].mean()
    for v in relu.to_numpy():
        if np.isfinite(v) and v > 0:
            ax.axhline(v, lw=0.6, ls=":", color="grey")
    ctx.figure(
        fig,
        "relu_eps_dnc1",
        "DNC1 of H_l at convergence against ε (mean ± std of log10 over seeds); dotted: ReLU (ε = 0).",
    )
    runs["max_dnc1"] = runs[dnc1_cols].max(axis=1)
    ctx.table(
        runs,
        "relu_eps_runs",
        "Per run: DNC1 of every layer at convergence.",
        columns=["activation", "eps", "seed", "final_loss", "max_dnc1", *dnc1_cols],
    )
    layer_frame = point_layer_frame(result)
    if not layer_frame.empty:
        ctx.configs["relu_eps_layers_logged"] = sorted(layer_frame["layer"].unique().tolist())


_FLAG = "K = 10, n = 50, L = 4, width 30, λ = 0.004 for H_1 and every W_l, lr 0.5"

for _exp in (
    Experiment(
        "ce-conjecture",
        "2024",
        "conclusion (conjecture)",
        "Does the SRG construction beat DNC under cross-entropy? Theory grid K = 6..100, L = 3..8 "
        "(both structures with scales and last layer re-optimised under CE; MSE closed forms beside), "
        "and GD at the flagship size under CE: loss against both candidates, ranks per layer.",
        "Theory: (n = 50, λ = 0.004) and (n = 1, λ = 0.001) for H_1 and every W_l. "
        f"GD: {_FLAG}, cross-entropy, 100 000 steps, 10 seeds (assumed).",
        "≈ 25 min on a busy 2-core CPU (grids 4.5 and 11 min, GD 7.5 min; measured under load)",
        "dufm",
        _ce_conjecture,
    ),
    Experiment(
        "ce-depth-rank",
        "Garrod & Keating 2025",
        "rank vs depth (CE)",
        "Number of non-negligible singular values (> 1e-3 σ_1) of the class means at convergence against "
        "depth L = 2..8 under cross-entropy, ReLU and linear activations, mean ± std over seeds.",
        "K = 10, n = 50, width 30, λ = 0.004, lr 0.5, cross-entropy, 100 000 steps, 5 seeds (assumed).",
        "≈ 1.5 h (a 3-seed, 30 000-step variant took 17 min on a busy 2-core CPU)",
        "dufm",
        _ce_depth_rank,
    ),
    Experiment(
        "linear-dufm",
        "Implicit bias of depth 2026",
        "deep linear UFM",
        "Deep linear UFM with (λ = 0.004) and without (λ = 0) regularisation: does GD reach the rank-K "
        "optimum (closed form under MSE), and the rank at convergence against depth and width (MSE; CE "
        "unregularised).",
        "K = 10, n = 50, lr 0.2, init std 0.2, L ∈ {2, 4, 6}, width ∈ {10, 30}, 50 000 steps, 3 seeds "
        "(assumed).",
        "≈ 15 min (a 2-seed, 20 000-step variant took 4 min)",
        "dufm",
        _linear_dufm,
    ),
    Experiment(
        "relu-eps",
        "2024",
        "Theorem 8 (measured)",
        "Relaxed model L-DUFM_ε (σ_ε of Definition 7): DNC1 of every layer at convergence as ε → 0, against "
        "ReLU.",
        f"{_FLAG}, MSE, ε ∈ {{0.5, 0.2, 0.1, 0.05, 0.02}} and ReLU, 100 000 steps, 3 seeds (assumed).",
        "≈ 25 min (a 2-seed, 50 000-step variant took 8.5 min)",
        "dufm",
        _relu_eps,
    ),
):
    register(_exp)
