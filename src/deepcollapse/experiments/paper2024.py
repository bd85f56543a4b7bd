"""The 2024 paper's figures (Súkeník, Lampert, Mondelli, NeurIPS 2024): Figs. 1, 2 top, 3 left / middle /
right, 5-8, registered on import.

Settings the paper does not state (Fig. 3 middle/right grids and step counts, Figs. 5-8 hyper-parameters)
are marked "assumed" in each experiment's ``settings``: they follow the flagship setting of §6.1 (n = 50,
width 30, λ = 0.004 for all parameters, lr 0.5).  ``smoke=True`` shrinks every experiment to a few seconds
(n = 5, a few hundred steps, 1-2 seeds, small grids): the smoke outputs show the pipeline works, not the
paper's results.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from deepcollapse.experiments.dufm_helpers import (
    DNC_CRITERION,
    DNC_CRITERION_SHORT,
    best_means,
    dufm_base,
    point_curves,
    point_layer_frame,
    point_singular_values,
    runs_table,
    seeded_spec,
    summary_table,
    zero_threshold_lam,
)
from deepcollapse.experiments.framework import Context, Experiment, register
from deepcollapse.runs.sweep import SweepResult, SweepSpec, point_id

__all__ = ["FIG3_LEFT", "FIG3_MID_LAMS", "FIG3_RIGHT_WIDTHS", "STRUCTURE_LAMS", "fig2_panels", "fig2_spec"]


# ----------------------------------------------------------------------------------------------------
# 2024 Fig. 1 and Fig. 3 left: theory only
# ----------------------------------------------------------------------------------------------------


def fig1(ctx: Context, n: int = 1) -> None:
    """2024 Fig. 1 at K = 10, L = 4, λ = 0.004 and ``n`` samples per class (the experiment: n = 1, the
    paper's illustration; the demo: the flagship's n = 50, so its numbers are section 1's); the figure's
    title, captions and tables all state n and λ.

    Parameters
    ----------
    ctx : Context
        Where the section, figure and tables go (its ``configs["theory"]`` records the setting).
    n : int, default 1
        Samples per class.

    Returns
    -------
    None
        Writes ``figures/fig1_srg_dnc``, ``tables/fig1_ranks.csv`` (ranks of ``M_3``, ``M~_4``, ``M_4`` of
        both solutions) and ``tables/fig1_theory.csv`` (the closed-form losses) into ``ctx``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from deepcollapse.experiments.registry import get_experiment
    >>> ctx = Context(get_experiment("fig3-left"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
    >>> fig1(ctx)
    >>> pd.read_csv(ctx.out_dir / "tables" / "fig1_ranks.csv").query("matrix == 'M~_4'")["rank"].tolist()
    [5, 10]
    """
    from deepcollapse.analysis.theory_plots import plot_srg, srg_figure_data
    from deepcollapse.experiments.outputs import forward_class_means
    from deepcollapse.theory import compare, dnc_solution, srg_solution

    K, L, lam = 10, 4, 0.004
    setting = f"K = {K}, L = {L}, n = {n}, λ_H1 = λ_W = {lam:g}"
    ctx.configs["theory"] = {"classes": K, "layers": L, "n": n, "lam_h": lam, "lam_w": lam}
    ctx.report.section(f"SRG vs DNC class means ({setting}; r = 5)")
    fig, _ = plot_srg(srg_figure_data(K, L, n, lam, lam))
    ctx.figure(
        fig,
        "fig1_srg_dnc",
        f"At {setting}: SRG solution: M_3, pre-ReLU M~_4 (rank r = 5, ReLU(M~_4) has rank K) and "
        "its Gram matrix; DNC solution: Gram matrix of M~_4 (a multiple of the identity). The title gives "
        "both optimal losses at this setting.",
    )
    srg = srg_solution(K, L, n, lam, lam)
    dnc = dnc_solution(K, L, n, lam, lam)
    ms = forward_class_means(srg.H1, srg.weights, K)
    md = forward_class_means(dnc.H1, dnc.weights, K)
    ranks = []
    for name, sol, m in (("SRG", srg, ms), ("DNC", dnc, md)):
        assert m.post is not None and m.pre is not None and m.pre[3] is not None
        for mat, A in (("M_3", m.post[2]), ("M~_4", m.pre[3]), ("M_4", m.post[3])):
            ranks.append(
                {"solution": name, "matrix": mat, "rank": int(np.linalg.matrix_rank(A)), "loss": sol.loss}
            )
    ctx.table(
        pd.DataFrame(ranks),
        "fig1_ranks",
        "Ranks of the class-mean matrices (recomputed from the explicit "
        f"H_1, W_l by a forward pass) and the losses ({setting}).",
    )
    c = compare(K, L, n, lam, lam)
    ctx.table(
        pd.DataFrame([{k: c.get(k) for k in ("loss_dnc", "loss_srg", "ratio", "rank_srg")}]),
        "fig1_theory",
        f"Closed-form optimal losses (theory engine) at {setting}.",
    )


def _fig3_left_data(smoke: bool) -> pd.DataFrame:
    from deepcollapse.theory import compare

    rs = range(4, 7) if smoke else range(4, 16)
    rows = []
    for L in (3, 4, 5):
        for r in rs:
            K = r * (r - 1) // 2
            c = compare(K, L, FIG3_LEFT["n"], FIG3_LEFT["lam"], FIG3_LEFT["lam"])
            srg = c.get("loss_srg")
            rows.append(
                {
                    "layers": L,
                    "r": r,
                    "classes": K,
                    "loss_dnc": c["loss_dnc"],
                    "loss_srg": srg,
                    "ratio": (srg / c["loss_dnc"]) if srg is not None else math.nan,
                }
            )
    return pd.DataFrame(rows)


# λ for the SRG/DNC ratio curves: the paper does not state it; small enough that neither optimum is the
# all-zero point up to K = C(15, 2) = 105 and L = 5 (assumed).
FIG3_LEFT: dict[str, Any] = {"n": 1, "lam": 1e-3}


def fig3_left(ctx: Context) -> None:
    """2024 Fig. 3 left: ``L_SRG / L_DNC`` against ``r`` (``K = r(r-1)/2``) for L = 3, 4, 5 at
    :data:`FIG3_LEFT` (``r = 4 .. 15``; a smoke run ``4 .. 6``), from the closed forms.

    Parameters
    ----------
    ctx : Context
        Where the section, figure and table go (``ctx.smoke``: the short ``r`` range).

    Returns
    -------
    None
        Writes ``figures/fig3_left_ratio`` and ``tables/fig3_left.csv`` (one row per ``(L, r)``) into
        ``ctx``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from deepcollapse.experiments.registry import get_experiment
    >>> ctx = Context(get_experiment("fig3-left"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
    >>> fig3_left(ctx)
    >>> pd.read_csv(ctx.out_dir / "tables" / "fig3_left.csv")["r"].unique().tolist()
    [4, 5, 6]
    """
    from deepcollapse.analysis.theory_plots import plot_ratio, ratio_data

    rs = list(range(4, 7) if ctx.smoke else range(4, 16))
    ctx.configs["fig3_left"] = {**FIG3_LEFT, "layers": [3, 4, 5], "r": rs}
    ctx.report.section("L_SRG / L_DNC against r (K = r(r-1)/2)")
    fig, _ = plot_ratio(ratio_data(rs, [3, 4, 5], FIG3_LEFT["n"], FIG3_LEFT["lam"], FIG3_LEFT["lam"]))
    ctx.figure(
        fig, "fig3_left_ratio", "Ratio of the SRG and DNC optimal losses (below 1: DNC is not optimal)."
    )
    ctx.table(_fig3_left_data(ctx.smoke), "fig3_left", "Closed-form losses per (L, r).")


# ----------------------------------------------------------------------------------------------------
# 2024 Fig. 2 top: the flagship 4-DUFM
# ----------------------------------------------------------------------------------------------------


def fig2_spec(smoke: bool, steps: int | None = None, seeds: int | None = None) -> SweepSpec:
    """The flagship sweep (one point, 10 seeds in two batched trainer calls of 5).

    Parameters
    ----------
    smoke : bool
        The smoke flagship (:func:`~deepcollapse.experiments.dufm_helpers.dufm_base`) and 2 seeds.
    steps : int, optional
        GD steps instead of the base's (logged 100 times).
    seeds : int, optional
        Seeds instead of 10 (2 for a smoke run); split into two trainer calls.

    Returns
    -------
    SweepSpec

    Examples
    --------
    >>> spec = fig2_spec(False, steps=1000, seeds=4)
    >>> spec.seeds, spec.seeds_per_run, spec.base["steps"], spec.base["log_every"]
    ([0, 1, 2, 3], 2, 1000, 10)
    """
    base = dufm_base(smoke)
    if steps is not None:
        base.update(steps=steps, log_every=max(1, steps // 100))
    n_seeds = seeds if seeds is not None else (2 if smoke else 10)
    return seeded_spec("fig2-top", base, n_seeds, seeds_per_run=max(1, n_seeds // 2))


def fig2_panels(ctx: Context, result: SweepResult, prefix: str = "fig2") -> None:
    """Loss vs L_DNC / L_SRG, DNC1 per layer over training, singular values at convergence, tables.

    Parameters
    ----------
    ctx : Context
        Where the sections, figures and tables go.
    result : SweepResult
        A finished single-point DUFM sweep (e.g. of :func:`fig2_spec`).
    prefix : str, default "fig2"
        The prefix of the figure and table names.

    Returns
    -------
    None
        Writes ``figures/<prefix>_loss``, ``_dnc1``, ``_singular_values`` and ``tables/<prefix>_summary.csv``,
        ``_runs.csv`` into ``ctx``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from deepcollapse.experiments.registry import get_experiment
    >>> ctx = Context(get_experiment("fig2-top"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
    >>> from deepcollapse.experiments.dufm_helpers import dufm_base, seeded_spec
    >>> base = dufm_base(False, classes=3, layers=2, width=4, n=2, steps=20, log_every=10)
    >>> fig2_panels(ctx, ctx.sweep(seeded_spec("tiny", base, 2), "tiny"), prefix="tiny")
    >>> sorted(p.name for p in (ctx.out_dir / "tables").iterdir())
    ['tiny_runs.csv', 'tiny_summary.csv']
    """
    from deepcollapse.analysis.figures import plot_layer_metric, plot_loss_curves, plot_singular_values

    runs = result.runs
    loss_dnc = float(runs["loss_dnc"].iloc[0]) if not runs.empty else None
    loss_srg = float(runs["loss_srg"].iloc[0]) if not runs.empty else None
    ctx.report.section(
        "Training loss (mean ± 1 std over seeds, geometric), DNC1 (median and 25–75 % of seeds) and singular "
        "values (grouped by rank)"
    )
    fig, _ = plot_loss_curves(point_curves(result), loss_dnc, loss_srg)
    ctx.figure(fig, f"{prefix}_loss", "Training loss against the DNC and SRG optimal losses.")
    layers = point_layer_frame(result)
    if not layers.empty:
        fig, _ = plot_layer_metric(layers, "dnc1")
        ctx.figure(
            fig,
            f"{prefix}_dnc1",
            "DNC1 = tr(Σ_W)/tr(Σ_B) per layer (post-ReLU) over training: median over seeds, the band from "
            "the 25 % to the 75 % quantile (seeds collapse to depths decades apart, which a ± std band of "
            "log values would smear over every curve).",
        )
    sv = point_singular_values(result)
    if sv:
        fig, _ = plot_singular_values(sv)
        ctx.figure(
            fig,
            f"{prefix}_singular_values",
            "Singular values of the class means M_l at the end, divided by the largest; runs of a layer that "
            "end at different numerical ranks are averaged per rank (colour: the rank, marker: the layer).",
        )
    ctx.report.section("Results")
    summary_table(
        ctx,
        result,
        prefix,
        "Mean ± std over seeds.",
        ["final_loss", "loss_dnc", "loss_srg", "below_dnc", "loss_ratio_srg", "mean_rank", "is_dnc"],
    )
    runs_table(ctx, result, prefix, "Per run (classification by the trainer's analysis).")


def _fig2_top(ctx: Context) -> None:
    result = ctx.sweep(fig2_spec(ctx.smoke), "")
    fig2_panels(ctx, result)


# ----------------------------------------------------------------------------------------------------
# 2024 Fig. 3 middle and right: rank vs weight decay, P(DNC) vs width
# ----------------------------------------------------------------------------------------------------


FIG3_MID_LAMS = [2.0**-11, 2.0**-10, 2.0**-9, 2.0**-8, 2.0**-7.5]
FIG3_RIGHT_WIDTHS = [16, 32, 64, 128]


def _fig3_middle(ctx: Context) -> None:
    from deepcollapse.analysis.figures import plot_sweep_curve

    lams = [2.0**-9, 2.0**-8] if ctx.smoke else FIG3_MID_LAMS
    spec = seeded_spec(
        "fig3-middle", dufm_base(ctx.smoke, classes=15), 1 if ctx.smoke else 5, grid={"lam": lams}
    )
    result = ctx.sweep(spec)
    ctx.report.section("Average intermediate rank against weight decay (L = 4, K = 15)")
    fig, _ = plot_sweep_curve(result.summary, "lam", "mean_rank", log2x=True)
    ctx.figure(
        fig,
        "fig3_middle_rank",
        "Average rank of the intermediate class means at the end of training against the weight decay λ "
        "(log scale; mean ± std over seeds).",
    )
    summary_table(ctx, result, "fig3_middle", "Mean ± std over seeds.", ["mean_rank", "final_loss", "is_dnc"])
    runs_table(ctx, result, "fig3_middle", "Per run.")


def _fig3_right(ctx: Context) -> None:
    from deepcollapse.analysis.figures import plot_sweep_curve

    widths = [10, 20] if ctx.smoke else FIG3_RIGHT_WIDTHS
    spec = seeded_spec("fig3-right", dufm_base(ctx.smoke), 2 if ctx.smoke else 10, grid={"width": widths})
    result = ctx.sweep(spec)
    ctx.report.section("Probability of reaching DNC against width (L = 4, K = 10)")
    fig, ax = plot_sweep_curve(result.summary, "width", "reaches_dnc")  # Wilson 95% intervals
    ax.set_ylim(-0.05, 1.05)
    ax.text(0.02, 0.98, DNC_CRITERION_SHORT, transform=ax.transAxes, va="top", fontsize=7)
    ctx.figure(
        fig,
        "fig3_right_pdnc",
        f"Fraction of seeds whose solution is DNC or heading to DNC (binomial Wilson 95% intervals). "
        f"{DNC_CRITERION}",
    )
    fig, _ = plot_sweep_curve(result.summary, "width", "mean_rank")
    ctx.figure(fig, "fig3_right_rank", "Average intermediate rank against the width (rank K = 10 for DNC).")
    summary_table(
        ctx,
        result,
        "fig3_right",
        "Mean ± std over seeds (reaches_dnc: dnc or dnc_converging; is_dnc: dnc only).",
        ["reaches_dnc", "is_dnc", "mean_rank", "final_loss"],
    )
    runs_table(ctx, result, "fig3_right", "Per run.")


# ----------------------------------------------------------------------------------------------------
# 2024 Figs. 5–8: structure of the solutions found by GD
# ----------------------------------------------------------------------------------------------------


def _structure_panels(
    ctx: Context,
    result: SweepResult,
    points: Sequence[str],
    K: int,
    L: int,
    tag: str,
    panels: Sequence[tuple[str, str, int]],
    sv_layers: Sequence[tuple[str, int]] = (),
) -> None:
    """Heat maps of chosen class-mean matrices of the best run over ``points`` (lowest final loss / L_DNC),
    its loss decomposition, and singular values.  ``panels``: (what, kind, layer) with what in {"M", "gram"}
    and kind in {"pre", "post"}."""
    from deepcollapse.analysis.figures import plot_loss_parts, plot_matrix, plot_singular_values

    means, run, point = best_means(result, points, K)
    curves = point_curves(result, point)
    seed = run["seed"]
    ctx.report.section(
        f"{tag}: best run ({point}, seed {seed}, final loss {run.get('final_loss', float('nan')):.6g}, "
        f"classification {run.get('classification')}, ranks {run.get('ranks')})"
    )
    sub = curves[curves["seed"] == seed].sort_values("step")
    fig, _ = plot_loss_parts(sub, title=f"K = {K}, L = {L}, {point}")
    ctx.figure(fig, f"{tag}_loss_parts", "Loss of the best run and its fit / regularisation parts.")
    for what, kind, layer in panels:
        M = means[kind][layer - 1]
        sym = "\\tilde M" if kind == "pre" else "M"
        if what == "gram":
            A, title = M.T @ M, f"${sym}_{layer}^T {sym}_{layer}$"
        else:
            A, title = M, f"${sym}_{layer}$"
        fig, _ = plot_matrix(A, title=title, symmetric=bool((A < 0).any()))
        name = f"{tag}_{what}_{kind}{layer}"
        ctx.figure(
            fig,
            name,
            f"{'Gram matrix of ' if what == 'gram' else ''}{'pre' if kind == 'pre' else 'post'}"
            f"-ReLU class means, layer {layer}.",
        )
    if sv_layers:
        sv = {}
        for kind, layer in sv_layers:
            M = means[kind][layer - 1]
            label = f"{'M~' if kind == 'pre' else 'M'}_{layer}"
            sv[label] = np.linalg.svd(M, compute_uv=False)[None, :]
        fig, _ = plot_singular_values(sv, label_fmt="{}")
        ctx.figure(fig, f"{tag}_sv", "Singular values (normalised) of the class means of the best run.")


# Weight decays scanned by the structure figures (assumed; the papers do not state them).  Low-rank solutions
# appear with stronger weight decay, DNC with weaker (2024 §6.1); too strong traps GD at rank 1-2.  Measured
# here (30 000 steps, 3 seeds): K = 4 gives DNC up to λ = 0.012 and a rank-3 solution below L_DNC at 0.016;
# K = 6 a rank-5 solution below L_DNC at 0.008, rank-1/2 traps from 0.012; K = 15 rank-1 traps at 0.004,
# losses well below L_DNC at 0.002.
STRUCTURE_LAMS: dict[int, list[float]] = {
    3: [0.004, 0.008, 0.016, 0.024],
    4: [0.004, 0.008, 0.016],
    5: [0.004, 0.008, 0.012],
    6: [0.004, 0.006, 0.008, 0.010],
    15: [0.002, 0.003],
}


def _lam_points(K: int, smoke: bool) -> list[dict[str, Any]]:
    lams = STRUCTURE_LAMS[K][:1] if smoke else STRUCTURE_LAMS[K]
    return [{"classes": K, "lam": lam} for lam in lams]


def _fig5(ctx: Context) -> None:
    Ks = [3, 4, 5]
    points = [p for k in Ks for p in _lam_points(k, ctx.smoke)]
    spec = seeded_spec("fig5", dufm_base(ctx.smoke), 1 if ctx.smoke else 5, points=points)
    result = ctx.sweep(spec)
    for k in Ks:
        pids = [point_id(p) for p in points if p["classes"] == k]
        _structure_panels(
            ctx, result, pids, k, 4, f"fig5_K{k}", [("M", "post", 3), ("M", "pre", 4), ("gram", "post", 3)]
        )
    ctx.report.section("Results")
    summary_table(
        ctx,
        result,
        "fig5",
        "Mean ± std over seeds.",
        ["final_loss", "loss_dnc", "below_dnc", "mean_rank", "is_dnc"],
    )
    runs_table(ctx, result, "fig5", "Per run.")


def _fig6(ctx: Context) -> None:
    base = dufm_base(ctx.smoke, classes=15, layers=7, lam=0.0025, steps=200_000, log_every=2000)
    spec = seeded_spec("fig6", base, 1 if ctx.smoke else 5)
    result = ctx.sweep(spec)
    _structure_panels(
        ctx,
        result,
        ["base"],
        15,
        7,
        "fig6",
        [("M", "pre", 2), ("M", "pre", 6), ("M", "post", 6)],
        sv_layers=[("pre", 2), ("pre", 6), ("post", 6)],
    )
    ctx.report.section("Results")
    summary_table(
        ctx, result, "fig6", "Mean ± std over seeds.", ["final_loss", "loss_dnc", "loss_srg", "mean_rank"]
    )
    runs_table(ctx, result, "fig6", "Per run.")


def _srg_like(K: int, name: str) -> Callable[[Context], None]:
    def body(ctx: Context) -> None:
        points = _lam_points(K, ctx.smoke)
        spec = seeded_spec(name, dufm_base(ctx.smoke, classes=K), 1 if ctx.smoke else 5, points=points)
        result = ctx.sweep(spec)
        sv = [("post", 3)] if K == 6 else []
        _structure_panels(
            ctx,
            result,
            [point_id(p) for p in points],
            K,
            4,
            name.replace("-", "_"),
            [("gram", "pre", 3), ("M", "pre", 3), ("M", "pre", 4)],
            sv_layers=sv,
        )
        ctx.report.section("Results")
        summary_table(
            ctx,
            result,
            name.replace("-", "_"),
            "Mean ± std over seeds.",
            ["final_loss", "loss_dnc", "loss_srg", "below_dnc", "mean_rank", "is_dnc"],
        )
        runs_table(ctx, result, name.replace("-", "_"), "Per run.")

    return body


_FLAG = "K = 10, n = 50, L = 4, width 30, λ = 0.004 for H_1 and every W_l, lr 0.5"

for _exp in (
    Experiment(
        "fig1-srg-matrices",
        "2024",
        "Fig. 1",
        "The SRG construction for K = 10, L = 4 (r = 5): class means M_3, pre-ReLU M~_4 and its Gram matrix, "
        "against the Gram matrix of the DNC solution.",
        "Theory engine, K = 10, L = 4, n = 1, λ = 0.004 (the matrices' structure does not depend on λ, "
        "only the "
        "scales do).",
        "≈ 4 s (measured)",
        "theory",
        fig1,
    ),
    Experiment(
        "fig2-top",
        "2024",
        "Fig. 2 top",
        "Flagship 4-DUFM: training loss against L_DNC and L_SRG, DNC1 per layer over training, "
        "singular values of "
        "the class means at convergence; 10 seeds.",
        f"{_FLAG}, 100 000 full-batch GD steps (assumed; the paper's Fig. 6 uses 200 000), 10 seeds, logged "
        "every 1000 steps.",
        "≈ 2–7 min (measured 124 s: 1e6 run·steps × 9 MFLOP at 8 k run·steps/s)",
        "dufm",
        _fig2_top,
    ),
    Experiment(
        "fig3-left",
        "2024",
        "Fig. 3 left",
        "Ratio L_SRG / L_DNC of the closed-form optimal losses against r (K = r(r-1)/2) for L = 3, 4, 5.",
        f"Theory engine, r = 4..15, n = {FIG3_LEFT['n']}, λ = {FIG3_LEFT['lam']} everywhere "
        "(assumed: the paper does "
        "not state λ; the ratio depends on the λ's only through n·λ_H1·∏λ_Wl).",
        "≈ 4 s (measured)",
        "theory",
        fig3_left,
    ),
    Experiment(
        "fig3-middle",
        "2024",
        "Fig. 3 middle",
        "Average rank of the intermediate class means at convergence against the weight decay "
        "(L = 4, K = 15).",
        "K = 15, n = 50, L = 4, width 30, lr 0.5, λ ∈ 2^{-11, -10, -9, -8, -7.5} for all parameters, "
        "100 000 steps, "
        "5 seeds (grid and steps assumed; 2^-7.5 ≈ 0.0055 is just below the all-zero threshold "
        f"λ* = (Λ*/n)^(1/(L+1)) ≈ {zero_threshold_lam(15, 4, 50):.4f}, where L_DNC = 1/2).",
        "≈ 15–30 min (measured 893 s; the large-λ points run slower: denormal numbers in dead units)",
        "dufm",
        _fig3_middle,
    ),
    Experiment(
        "fig3-right",
        "2024",
        "Fig. 3 right",
        "Empirical probability that GD reaches a DNC solution against the width (L = 4, K = 10).",
        "K = 10, n = 50, L = 4, λ = 0.004, lr 0.5, width ∈ {16, 32, 64, 128}, 100 000 steps, 10 seeds "
        "(grid and "
        "steps assumed).",
        "≈ 0.8–2.7 h (4e6 run·steps, 2e14 FLOP; width 128 is 75 % of it)",
        "dufm",
        _fig3_right,
    ),
    Experiment(
        "fig5-small-k",
        "2024",
        "Fig. 5",
        "Low-rank solutions found by GD for K = 3, 4, 5 (L = 4): loss decomposition, M_3, M~_4, M_3^T M_3.",
        "K ∈ {3, 4, 5}, n = 50, L = 4, width 30, lr 0.5, 100 000 steps, 5 seeds, λ (all parameters) scanned "
        "per K (STRUCTURE_LAMS); the panels show the run with the lowest final loss / L_DNC (all assumed).",
        "≈ 5–10 min (measured 457 s; 5e6 cheap run·steps)",
        "dufm",
        _fig5,
    ),
    Experiment(
        "fig6-deep",
        "2024",
        "Fig. 6",
        "Deep DUFM (L = 7, K = 15): singular values and heat maps of M~_2, M~_6, M_6 "
        "(rank 3 in early layers).",
        "K = 15, n = 50, L = 7, width 30, λ = 0.0025, lr 0.5, 200 000 steps (paper), 5 seeds.",
        "≈ 15–20 min (measured 1031 s; 1e6 run·steps × 26 MFLOP)",
        "dufm",
        _fig6,
    ),
    Experiment(
        "fig7-srg-k6",
        "2024",
        "Fig. 7",
        "SRG-like solution found by GD for K = 6 (L = 4): M~_3^T M~_3, M~_3, M~_4, "
        "singular values of M_3, loss.",
        "K = 6, n = 50, L = 4, width 30, lr 0.5, 100 000 steps, 5 seeds, λ ∈ {0.004, 0.006, 0.008, 0.010}; "
        "panels from the run with the lowest final loss / L_DNC (all assumed).",
        "≈ 3–8 min (measured 273 s; 2e6 run·steps × 5 MFLOP)",
        "dufm",
        _srg_like(6, "fig7-srg-k6"),
    ),
    Experiment(
        "fig8-srg-k15",
        "2024",
        "Fig. 8",
        "SRG-like solution found by GD for K = 15 (L = 4): M~_3^T M~_3, M~_3, M~_4, loss decomposition.",
        "K = 15, n = 50, L = 4, width 30, lr 0.5, 100 000 steps, 5 seeds, λ ∈ {0.002, 0.003} (λ = 0.004 "
        "traps every seed at rank 1); panels from the run with the lowest final loss / L_DNC (all assumed).",
        "≈ 5–12 min (measured 237 s for one λ; 1e6 run·steps × 14 MFLOP)",
        "dufm",
        _srg_like(15, "fig8-srg-k15"),
    ),
):
    register(_exp)
