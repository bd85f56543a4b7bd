"""The ``depth-bound`` experiment: how many non-negligible singular values the best-known points have as depth
grows (Garrod & Keating 2025 prove the count stays bounded at global minima under cross-entropy).

For K = 10 and K = 15, L = 2..10, n = 50, λ = 0.004, width 30, under MSE and under cross-entropy (ReLU):
the best-known point of each (loss, K, L) is the ``best-known`` experiment's search (one ``search`` task per
point, :func:`~deepcollapse.experiments.search_experiments.best_known_rows`, its rounds each).  From each
saved best solution the float64 class means ``M_1 .. M_L`` are recomputed (:func:`layer_sv_counts`) and the
singular values above ``1e-3 · σ_1(M_l)`` counted per layer.  Outputs: ``tables/depth_bound.csv`` (one row per
point: the counts per layer, their largest and smallest over ``M_1 .. M_{L-1}`` (every layer below the last
one; ``M_L`` feeds the linear last layer and is counted apart), the best-known
loss beside the family's DNC loss, structure, verdict), ``results.csv`` (the points' rows as the searches
wrote them, with ``point`` and ``seed``), ``figures/depth_bound.png|pdf``.

``ce-depth-rank`` (:mod:`~deepcollapse.experiments.family_experiments`) measures the same count at the end
of plain gradient descent from random starts (what GD finds); this experiment measures it at the lowest loss
the search finds (what the theorem is about).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deepcollapse.experiments.framework import Context, Experiment, register
from deepcollapse.experiments.search_experiments import BEST_KNOWN_FULL, BEST_KNOWN_SMOKE, best_known_rows

__all__ = ["DEPTH_BOUND_FULL", "DEPTH_BOUND_SMOKE", "SV_RTOL", "depth_bound_table", "layer_sv_counts"]

log = logging.getLogger(__name__)

#: a singular value of M_l counts when it is above SV_RTOL · σ_1(M_l) (the trainer's rank_rtol)
SV_RTOL = 1e-3
DEPTH_BOUND_FULL: dict[str, Any] = {
    **BEST_KNOWN_FULL,
    "classes": [10, 15],
    "layers": list(range(2, 11)),
    "losses": ["mse", "ce"],
}
DEPTH_BOUND_SMOKE: dict[str, Any] = {
    **BEST_KNOWN_SMOKE,
    "classes": [4],
    "layers": [2, 3],
    "losses": ["mse", "ce"],
}


def layer_sv_counts(solution: str | Path, rtol: float = SV_RTOL) -> list[int]:
    """Per layer ``l = 1 .. L``: the number of singular values of the class means ``M_l`` above
    ``rtol · σ_1(M_l)``, recomputed in float64 from a solution file.

    ``M_l`` is the ``(d_l, K)`` matrix of class means of the post-activation features ``H_l`` (``H_1`` itself
    for ``l = 1``), computed by the forward pass of the file's model family
    (:func:`deepcollapse.theory.objective.forward`); an all-zero ``M_l`` counts 0.

    Parameters
    ----------
    solution : str or Path
        A solution file (:func:`~deepcollapse.landscape.solution_file.load_solution`).
    rtol : float
        Relative threshold (default ``1e-3``).

    Returns
    -------
    list of int
        ``L`` counts.

    Examples
    --------
    K = 2 classes of n = 2 samples, L = 2:

    >>> import tempfile
    >>> from deepcollapse.landscape.solution_file import save_solution
    >>> H1 = np.vstack([np.kron(np.eye(2), np.ones((1, 2))), np.zeros((1, 4))])  # (d_1, K n) = (3, 4)
    >>> f = save_solution(f"{tempfile.mkdtemp()}/p.npz", H1, [np.eye(3), np.ones((2, 3))], n=2, lam_h=0.1,
    ...                   lam_w=[0.1, 0.1])
    >>> layer_sv_counts(f)
    [2, 2]
    """
    from deepcollapse.landscape.solution_file import load_solution
    from deepcollapse.theory.objective import forward

    sol = load_solution(solution)
    assert sol.H1 is not None and sol.weights is not None and sol.classes and sol.n  # set by load_solution
    K, n = sol.classes, sol.n
    _, posts, _ = forward(sol.H1, sol.weights, sol.family)
    counts = []
    for H in posts:  # (d_l, K n), columns ordered by class
        M = H.reshape(H.shape[0], K, n).mean(axis=2)  # (d_l, K)
        s = np.linalg.svd(M, compute_uv=False)
        counts.append(int(np.sum(s > rtol * s[0])) if s.size and s[0] > 0 else 0)
    return counts


def depth_bound_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The depth-bound table from the points' rows, sorted by (fit term, K, L).

    Parameters
    ----------
    rows : list of dict
        One per point: ``fit_term`` (``"mse"`` or ``"ce"``), ``classes, layers, best_loss, loss_dnc,
        loss_srg`` (the constructions of that family) and ``sv_counts`` (the list of :func:`layer_sv_counts`);
        other keys are kept, except the ratios ``best_over_dnc`` / ``best_over_srg``, recomputed here.

    Returns
    -------
    DataFrame
        The rows with ``loss_dnc`` / ``loss_srg`` renamed ``loss_dnc_family`` / ``loss_srg_family`` (the
        constructions of the row's family: the closed forms under MSE, re-optimised under CE),
        ``best_over_dnc_family = best_loss / loss_dnc_family``, ``sv_count_<l>`` per layer (empty beyond
        the row's ``L``), ``sv_counts`` as text (``"3-2-2"``), ``sv_count_max`` / ``sv_count_min`` over
        ``M_1 .. M_{L-1}`` (the layers below the last, whose count the depth bound is about),
        ``sv_count_last`` (``M_L``, the input of the linear last layer).

    Examples
    --------
    >>> rows = [{"fit_term": "mse", "classes": 4, "layers": 3, "best_loss": 0.9, "loss_dnc": 1.0,
    ...          "loss_srg": None, "sv_counts": [3, 2, 4]}]
    >>> row = depth_bound_table(rows).iloc[0]
    >>> row["sv_counts"], int(row["sv_count_max"]), int(row["sv_count_last"])
    ('3-2-4', 3, 4)
    >>> float(row["best_over_dnc_family"])
    0.9
    """
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    counts = [list(c) for c in df["sv_counts"]]
    df["sv_counts"] = ["-".join(map(str, c)) for c in counts]
    df["sv_count_max"] = [max(c[:-1]) for c in counts]
    df["sv_count_min"] = [min(c[:-1]) for c in counts]
    df["sv_count_last"] = [c[-1] for c in counts]
    for l in range(1, max(len(c) for c in counts) + 1):
        df[f"sv_count_{l}"] = pd.array([c[l - 1] if l <= len(c) else None for c in counts], dtype="Int64")
    df = df.drop(columns=["best_over_dnc", "best_over_srg"], errors="ignore")
    df = df.rename(columns={"loss_dnc": "loss_dnc_family", "loss_srg": "loss_srg_family"})
    df["best_over_dnc_family"] = df["best_loss"] / df["loss_dnc_family"]
    return df.sort_values(["fit_term", "classes", "layers"], kind="stable").reset_index(drop=True)


def depth_bound_rows(ctx: Context, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The points of the ``depth-bound`` experiment: for each fit term of ``settings["losses"]`` the
    best-known search of every (K, L) (:func:`~deepcollapse.experiments.search_experiments.best_known_rows`,
    run with the context's executor, offered to its registry), with ``fit_term`` and the per-layer singular
    value counts of its best solution (:func:`layer_sv_counts`, ``sv_counts``).

    Parameters
    ----------
    ctx : Context
        The experiment context (folder, executor, registry, report command).
    settings : dict
        :data:`DEPTH_BOUND_FULL` or :data:`DEPTH_BOUND_SMOKE`: the best-known settings plus ``losses``.

    Returns
    -------
    list of dict
        One row per (loss, K, L): the point's ``point.json`` row plus ``fit_term`` and ``sv_counts``; the
        rows of :func:`depth_bound_table`.

    Examples
    --------
    One tiny search (K = 3, L = 2, MSE; seconds):

    >>> import tempfile
    >>> from deepcollapse.experiments.registry import get_experiment
    >>> ctx = Context(get_experiment("depth-bound"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
    >>> settings = {**DEPTH_BOUND_SMOKE, "classes": [3], "layers": [2], "losses": ["mse"], "budget": 0.1,
    ...             "steps": 20, "runs": 2}
    >>> rows = depth_bound_rows(ctx, settings)
    >>> [(r["fit_term"], r["classes"], r["layers"], len(r["sv_counts"])) for r in rows]
    [('mse', 3, 2, 2)]
    """
    rows = []
    for loss in settings["losses"]:
        for row in best_known_rows(
            ctx.out_dir,
            settings,
            ctx.tasks,
            family={"loss": loss},
            registry=ctx.registry,
            command=ctx.report.command or "deepcollapse reproduce depth-bound",
        ):
            row["fit_term"] = loss
            row["sv_counts"] = layer_sv_counts(Path(ctx.out_dir) / row["solution"])
            rows.append(row)
    return rows


def _depth_bound(ctx: Context) -> None:
    from deepcollapse.analysis.landscape_plots import plot_depth_bound

    settings = DEPTH_BOUND_SMOKE if ctx.smoke else DEPTH_BOUND_FULL
    ctx.configs["depth-bound"] = settings
    rows = depth_bound_rows(ctx, settings)
    # one row per (point, seed), as every DUFM experiment writes (the search seed is 0)
    pd.DataFrame(rows).assign(
        point=[f"{r['fit_term']}_K{r['classes']}_L{r['layers']}" for r in rows], seed=0
    ).to_csv(ctx.out_dir / "results.csv", index=False)
    df = depth_bound_table(rows)
    layer_cols = sorted(
        (c for c in df.columns if c.startswith("sv_count_") and c[9:].isdigit()), key=lambda c: int(c[9:])
    )
    ctx.table(
        df,
        "depth_bound",
        f"Per (fit term, K, L): singular values of the class means M_l above {SV_RTOL:g} σ_1(M_l) per layer "
        "(recomputed from the saved best solution), their largest and smallest over M_1 … M_{L-1} and the "
        "count of M_L (the input of the linear last layer), the best-known loss beside the family's DNC "
        "loss, structure and Hessian verdict.",
        columns=[
            "fit_term",
            "classes",
            "layers",
            "sv_counts",
            "sv_count_max",
            "sv_count_min",
            "sv_count_last",
            "best_loss",
            "loss_dnc_family",
            "best_over_dnc_family",
            "structure",
            "verdict",
            *layer_cols,
        ],
    )
    fig, _ = plot_depth_bound(df.to_dict("records"))
    full_last = int((df["sv_count_last"] == df["classes"]).sum())
    ctx.figure(
        fig,
        "depth_bound",
        f"Left: singular values of M_l above {SV_RTOL:g} σ_1 against depth L, largest over M_1 … M_(L−1) "
        "(solid) and smallest (dotted), one colour per (loss, K), K as a dashed grey line; M_L, the input of "
        f"the linear last layer, is left out (it has all K at {full_last} of the {len(df)} points). Right: "
        "best-known loss / L_DNC of the same family (MSE: closed form; CE: re-optimised DNC).",
    )


register(
    Experiment(
        "depth-bound",
        "Garrod & Keating 2025",
        "rank bound vs depth",
        "Number of singular values above 1e-3 σ_1 of the class means in each layer at the best-known point "
        "(global search), L = 2..10 at K = 10 and 15, under MSE and cross-entropy: does it stay bounded as "
        "depth grows, and at what value?",
        "n = 50, λ = 0.004 for H_1 and every W_l, width 30, ReLU; per point `dufm search --loss mse|ce` for "
        "12 rounds (32 GD starts x 10 000 steps per round; a count), then `dufm landscape`; "
        "points run in parallel on --workers processes (or Ray).",
        "several hours on 2 cores (36 points, each as a best-known point: search, verdict, refinement, "
        "descent)",
        "dufm",
        _depth_bound,
    )
)
