"""The basin atlas (issue 19, part 4): where plain gradient descent on the L-DUFM lands from random starts.

Many full-batch GD runs of the batched trainer (:func:`~deepcollapse.dufm.trainer.train_dufm`, ``R`` runs per
trainer call, i.e. per kernel call on a GPU), each classified by the trainer's own analysis
(:func:`~deepcollapse.dufm.summary.analyze_dufm`: ``dnc``, ``dnc_converging``, ``srg_like``, ``low_rank``,
``zero``, ``not_converged``, ``diverged``) and its final loss divided by a reference loss of its cell:

* the best-known loss of a ``reproduce best-known`` table (``best_known``: its ``tables/best_known.csv``)
  when the table has the cell's (K, L, n, λ) and the model is MSE + ReLU, else
* ``min(L_DNC, L_SRG)`` of the theory (closed forms for MSE + ReLU;
  :func:`~deepcollapse.theory.family_compare.compare_family` for the other families: CE re-optimised
  constructions, σ_ε explicit evaluations).

The column ``reference`` of every row says which.  Both are upper bounds of the cell's global minimum, so a
run may end below its reference (ratio < 1).

A *cell* is one setting (K, L, n, width d, λ, learning rate η, init scale α).  The atlas has one-at-a-time
*slices* through a base cell along each axis of :data:`AXES` (the K and L slices are separate panels: they
change the problem, not only GD) and optional 2-D *maps* (every combination of two axes).  The init scale
``α`` multiplies the trainer's default initial stds (H_1: 1, W_l: 1/√d_l), so α = 1 is the default
initialisation.  Each cell's runs are split into trainer calls of ``runs_per_task`` runs (seeds 0, 1, ...),
one :class:`~deepcollapse.runs.executors.Task` each, so ``--workers`` processes or a Ray cluster run them in
parallel (:meth:`~deepcollapse.experiments.framework.Context.tasks`).

Outputs: ``tables/basins_runs.csv`` (one row per run; also ``results.csv``, with ``point`` = the cell),
``tables/basins_cells.csv`` (per cell and class: the fraction of runs with Wilson 95% intervals, the
loss-ratio quantiles), ``tables/basins_fig3_right.csv`` (the width slice), the figures of
:mod:`deepcollapse.analysis.basin_plots`, ``report.html``.  Sizes: :data:`BASINS_SMOKE` (seconds),
:data:`BASINS_LAPTOP` (≥ 2000 runs at n = 10, for two cores), :data:`BASINS_GPU` (≥ 100 000 runs; its
runtime is estimated from measured throughput by
:func:`~deepcollapse.experiments.basin_runtime.estimate_runtime` before it starts).  The settings (cells,
validation, tasks) are in :mod:`deepcollapse.experiments.basin_atlas`.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deepcollapse._core.checks import ConfigError
from deepcollapse.analysis.stats import wilson_interval
from deepcollapse.experiments.basin_atlas import (
    AXES,
    BASIN_CLASSES,
    BasinAtlas,
    Cell,
    atlas_tasks,
    cell_config,
)
from deepcollapse.experiments.basin_runtime import (
    atlas_runtime,
    costs_from_gpu_check,
    duration_text,
    estimate_runtime,
)
from deepcollapse.experiments.framework import Context, Experiment, register
from deepcollapse.runs.executors import Task

__all__ = [
    "AXES",
    "BASINS_GPU",
    "BASINS_LAPTOP",
    "BASINS_SMOKE",
    "BASIN_CLASSES",
    "BasinAtlas",
    "Cell",
    "atlas_tasks",
    "basin_rows",
    "cell_config",
    "class_probabilities",
    "compare_runtime",
    "describe_atlas",
    "estimate_runtime",
    "fig3_right_comparison",
    "no_gpu_text",
    "offer_cell_minima",
    "read_best_known",
    "reference_loss",
    "run_atlas",
    "runtime_estimate",
]

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------------------------
# reference losses
# ------------------------------------------------------------------------------------------------------------
def read_best_known(path: str | Path) -> dict[tuple[int, int, int, float], float]:
    """``(K, L, n, λ) -> best-known loss`` of a ``best_known.csv`` (``reproduce best-known``).

    Parameters
    ----------
    path : str or Path
        The table; it needs ``classes``, ``layers``, ``best_loss``; ``n`` and ``lam`` (or ``lam_h``) columns
        where present, else the best-known experiment's settings (n = 50, λ = 0.004).

    Returns
    -------
    dict
        The losses by problem.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "best_known.csv"
    >>> pd.DataFrame({"classes": [10], "layers": [4], "best_loss": [0.17]}).to_csv(path, index=False)
    >>> read_best_known(path)
    {(10, 4, 50, 0.004): 0.17}
    """
    from deepcollapse.experiments.search_experiments import BEST_KNOWN_FULL

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"best_known == {str(p)!r}, must be a best_known.csv of `reproduce best-known`.")
    df = pd.read_csv(p)
    missing = [c for c in ("classes", "layers", "best_loss") if c not in df.columns]
    if missing:
        raise ConfigError(f"best_known == {str(p)!r}: no column {', '.join(missing)}; use a best_known.csv.")
    lam_col = "lam" if "lam" in df.columns else ("lam_h" if "lam_h" in df.columns else None)
    out = {}
    for _, r in df.iterrows():
        n = int(r["n"]) if "n" in df.columns else BEST_KNOWN_FULL["n"]
        lam = float(r[lam_col]) if lam_col else BEST_KNOWN_FULL["lam"]
        out[(int(r["classes"]), int(r["layers"]), n, round(lam, 12))] = float(r["best_loss"])
    return out


def reference_loss(
    atlas: BasinAtlas, cell: Cell, best_known: dict[tuple[int, int, int, float], float] | None = None
) -> tuple[float | None, str]:
    """The reference loss of ``cell`` and where it comes from (module docstring).

    Parameters
    ----------
    atlas : BasinAtlas
        The atlas (model family).
    cell : Cell
        The setting.
    best_known : dict, optional
        :func:`read_best_known` of the atlas's table.

    Returns
    -------
    (float or None, str)
        The loss (``None`` where no reference exists) and ``"best-known table"``, ``"min(L_DNC, L_SRG)"``,
        ``"min(L_DNC, L_SRG), <status>"`` (other families) or ``"none: <why>"``.

    Examples
    --------
    >>> atlas = BasinAtlas(steps=100)
    >>> loss, source = reference_loss(atlas, atlas.base)
    >>> round(loss, 4), source
    (0.1748, 'min(L_DNC, L_SRG)')
    >>> reference_loss(atlas, atlas.base, {(10, 4, 50, 0.004): 0.17})
    (0.17, 'best-known table')
    """
    from deepcollapse.theory.compare import compare
    from deepcollapse.theory.family_compare import compare_family

    K, L, n, lam = cell.classes, cell.layers, cell.n, cell.lam
    mse_relu = atlas.loss == "mse" and atlas.activation == "relu"
    if lam <= 0:
        return None, "none: λ = 0 has no minimum"
    if mse_relu:
        c = compare(K, L, n, lam, lam)
        theory = min(v for v in (c.loss_dnc, c.loss_srg) if v is not None)
        bk = (best_known or {}).get((K, L, n, round(lam, 12)))
        if bk is not None and bk <= theory:
            return bk, "best-known table"
        return theory, "min(L_DNC, L_SRG)"
    fc = compare_family(K, L, n, lam, lam, loss=atlas.loss, activation=atlas.activation, eps=atlas.eps)
    cands = [
        (float(c.loss), str(c.status))
        for k, c in (fc.candidates or {}).items()
        if k in ("dnc", "srg") and c.loss is not None
    ]
    if not cands:
        return None, f"none: no DNC / SRG value for {fc.family}"
    loss, status = min(cands)
    return loss, f"min(L_DNC, L_SRG), {status}"


# ------------------------------------------------------------------------------------------------------------
# rows and aggregation
# ------------------------------------------------------------------------------------------------------------
def basin_rows(folder: str | Path, cell: Cell, reference: tuple[float | None, str]) -> list[dict[str, Any]]:
    """One row per run of a finished task folder (its ``summary.json``): the cell, the seed, the class, the
    final loss and ``loss_over_best = final_loss / reference``.

    Parameters
    ----------
    folder : str or Path
        A DUFM run folder written by the trainer (``summary.json``).
    cell : Cell
        Its cell.
    reference : (float or None, str)
        :func:`reference_loss` of the cell.

    Returns
    -------
    list of dict
        Columns ``cell``, the cell's fields, ``seed``, ``classification``, ``final_loss``, ``loss_dnc``,
        ``loss_srg``, ``reference_loss``, ``reference``, ``loss_over_best``, ``grad_norm``, ``run_dir``,
        ``mean_rank``.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> run = {"seed": 0, "classification": "dnc", "final_loss": 0.3, "ranks": [9, 9, 9, 9, 9]}
    >>> _ = (folder / "summary.json").write_text(json.dumps({"runs": [run], "loss_dnc": 0.3}))
    >>> row = basin_rows(folder, BasinAtlas(steps=100).base, (0.25, "best-known table"))[0]
    >>> row["cell"], row["classification"], row["loss_over_best"], row["mean_rank"]
    ('K10_L4_n50_d32_lam0.004_lr0.5_a1', 'dnc', 1.2, 9.0)
    """
    summary = json.loads((Path(folder) / "summary.json").read_text())
    ref, source = reference
    rows = []
    for run in summary.get("runs", []):
        loss = run.get("final_loss")
        ranks = run.get("ranks") or []
        mid = ranks[1:-1] if len(ranks) >= 3 else ranks[:-1]
        rows.append(
            {
                "cell": cell.id,
                **cell.to_dict(),
                "seed": int(run["seed"]),
                "classification": run.get("classification"),
                "final_loss": math.nan if loss is None else float(loss),
                "loss_dnc": summary.get("loss_dnc"),
                "loss_srg": summary.get("loss_srg"),
                "reference_loss": ref,
                "reference": source,
                "loss_over_best": float(loss) / ref if loss is not None and ref else math.nan,
                "grad_norm": run.get("grad_norm"),
                "run_dir": str(folder),
                "mean_rank": float(np.mean(mid)) if mid else math.nan,
            }
        )
    return rows


def class_probabilities(runs: pd.DataFrame, by: Sequence[str], z: float = 1.96) -> pd.DataFrame:
    """Per group of ``by``: the number of runs, and for each class of :data:`BASIN_CLASSES` and for
    ``reaches_dnc`` (dnc or dnc_converging) the fraction of runs ``p_<class>`` with its Wilson interval
    ``p_<class>_lo``, ``p_<class>_hi`` (:func:`~deepcollapse.analysis.stats.wilson_interval`), and the
    quantiles of ``loss_over_best`` (``ratio_min``, ``ratio_median``, ``ratio_max``; diverged runs left out).

    Parameters
    ----------
    runs : DataFrame
        Rows of :func:`basin_rows` (``classification``, ``loss_over_best`` and the ``by`` columns).
    by : sequence of str
        Grouping columns (e.g. ``["cell"]``, ``["width"]``).
    z : float
        Normal quantile of the intervals (1.96: 95 %).

    Returns
    -------
    DataFrame
        One row per group, sorted by ``by``.

    Examples
    --------
    >>> runs = pd.DataFrame({"width": [16, 16, 32, 32],
    ...                      "classification": ["dnc", "low_rank", "dnc", "dnc_converging"],
    ...                      "loss_over_best": [1.0, 1.2, 1.0, 1.01]})
    >>> class_probabilities(runs, ["width"])[["width", "n_runs", "p_reaches_dnc", "p_dnc"]].values.tolist()
    [[16.0, 2.0, 0.5, 0.5], [32.0, 2.0, 1.0, 0.5]]
    """
    out = []
    for key, g in runs.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(by, key))
        n = len(g)
        row["n_runs"] = n
        labels = g["classification"].astype(str)
        counts = {c: int((labels == c).sum()) for c in BASIN_CLASSES}
        counts["reaches_dnc"] = counts["dnc"] + counts["dnc_converging"]
        for c in ("reaches_dnc", *BASIN_CLASSES):
            lo, hi = wilson_interval(counts[c], n, z)
            row[f"p_{c}"] = counts[c] / n
            row[f"p_{c}_lo"], row[f"p_{c}_hi"] = lo, hi
        r = g["loss_over_best"].to_numpy(dtype=float)
        r = r[np.isfinite(r)]
        row["ratio_min"] = float(r.min()) if r.size else math.nan
        row["ratio_median"] = float(np.median(r)) if r.size else math.nan
        row["ratio_max"] = float(r.max()) if r.size else math.nan
        out.append(row)
    return pd.DataFrame(out)


# ------------------------------------------------------------------------------------------------------------
# presets
# ------------------------------------------------------------------------------------------------------------
#: Seconds: K = 4 (no SRG), tiny n and widths, 2000 steps; a width and an α slice and their 2 x 2 map.
BASINS_SMOKE = BasinAtlas(
    name="smoke",
    classes=4,
    layers=3,
    n=2,
    width=6,
    lam=0.004,
    lr=0.5,
    steps=2000,
    runs=4,
    runs_per_task=4,
    axes={
        "width": [6, 12],
        "init_factor": [0.5, 1.0],
        "lr": [0.5],
        "lam": [0.004],
        "classes": [4],
        "layers": [3],
    },
    maps=[("width", "init_factor")],
)
_FLAG: dict[str, Any] = {
    "classes": 10,
    "layers": 4,
    "n": 50,
    "width": 32,
    "lam": 0.004,
    "lr": 0.5,
    "init_factor": 1.0,
}
_AXES: dict[str, list[Any]] = {
    "width": [16, 32, 64, 128],  # 2024 Fig. 3 right
    "lam": [0.001, 0.002, 0.004, 0.008],  # below the all-zero threshold λ* ≈ 0.0096 of K = 10, L = 4, n = 50
    "lr": [0.125, 0.25, 0.5, 1.0],
    "init_factor": [0.25, 0.5, 1.0, 2.0],
    "classes": [6, 10, 15],
    "layers": [3, 4, 5],
}
#: Two cores: n = 10 samples per class (N = 100 columns instead of the paper's 500), the six slices and an
#: lr x α map, 80 runs per cell (over 2000 runs) of 20 000 steps: GD approaches DNC slowly, and a run counts
#: as heading to DNC only within DNC_CONVERGING_GAP of L_DNC.
BASINS_LAPTOP = BasinAtlas(
    name="laptop",
    **{**_FLAG, "n": 10},
    axes=_AXES,
    maps=[("lr", "init_factor")],
    runs=80,
    runs_per_task=40,
    steps=20_000,
)
#: One GPU: the laptop slices and maps plus a width x λ map, 3072 runs per cell (over 100 000 runs), 20 000
#: steps, 1024 runs per kernel call.
BASINS_GPU = BasinAtlas(
    name="gpu",
    **_FLAG,
    axes=_AXES,
    maps=[("width", "init_factor"), ("width", "lam")],
    runs=3072,
    runs_per_task=1024,
    steps=20_000,
    device="auto",
)


# ------------------------------------------------------------------------------------------------------------
# the experiment
# ------------------------------------------------------------------------------------------------------------
def run_atlas(ctx: Context, atlas: BasinAtlas, *, estimate: bool = False) -> pd.DataFrame:
    """Run (or reuse) every task of ``atlas`` with the context's executor, then write the tables, figures
    and report sections; return the per-run table.

    Parameters
    ----------
    ctx : Context
        The experiment context (folder, executor, workers, report).
    atlas : BasinAtlas
        The atlas to run.
    estimate : bool
        First estimate the runtime (:func:`estimate_runtime`) and put it into the report.

    Returns
    -------
    DataFrame
        One row per run (:func:`basin_rows`).

    Examples
    --------
    A one-cell atlas of two 10-step runs:

    >>> import tempfile
    >>> from deepcollapse.experiments.registry import get_experiment
    >>> ctx = Context(get_experiment("basins"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
    >>> atlas = BasinAtlas(classes=3, layers=2, n=2, width=4, steps=10, records=10, runs=2, runs_per_task=2)
    >>> runs = run_atlas(ctx, atlas)
    >>> runs["seed"].tolist(), (ctx.out_dir / "tables" / "basins_cells.csv").is_file()
    ([0, 1], True)
    """
    from deepcollapse.analysis import basin_plots as bp

    ctx.configs["basins"] = atlas.to_dict()
    cells = {c.id: c for c in atlas.cells()}
    ctx.report.section(f"Basin atlas ({atlas.name}): {len(cells)} cells x {atlas.runs} runs")
    tasks = atlas_tasks(atlas, ctx.out_dir)
    pending = [t for t in tasks if not t.done]
    est = runtime_estimate(ctx, atlas, pending) if estimate and pending else None
    t0 = time.perf_counter()
    ctx.tasks(tasks)
    elapsed = time.perf_counter() - t0
    ctx.report.add_note(
        f"{atlas.total_runs} runs of {atlas.steps} GD steps ({len(tasks)} trainer calls of up to "
        f"{atlas.runs_per_task} runs, {len(pending)} of them run now) took {duration_text(elapsed)} of wall "
        "time here (runs already in the folder reused)."
    )
    if est is not None:
        compare_runtime(ctx, est, elapsed)
    known = read_best_known(atlas.best_known) if atlas.best_known else None
    refs = {cid: reference_loss(atlas, c, known) for cid, c in cells.items()}
    rows = [r for t in tasks for r in basin_rows(t.out_dir, cells[t.meta["cell"]], refs[t.meta["cell"]])]
    runs = pd.DataFrame(rows)
    # one row per (point, seed), as every DUFM experiment writes
    runs.assign(point=runs["cell"]).to_csv(ctx.out_dir / "results.csv", index=False)
    per_cell = class_probabilities(
        runs, ["cell", "classes", "layers", "n", "width", "lam", "lr", "init_factor"]
    )
    per_cell["reference"] = per_cell["cell"].map(lambda c: refs[c][1])
    per_cell["reference_loss"] = per_cell["cell"].map(lambda c: refs[c][0])
    ctx.table(
        runs,
        "basins_runs",
        "One row per GD run: its cell, seed, class and final loss over the cell's reference loss.",
        columns=[
            "cell",
            "seed",
            "classification",
            "final_loss",
            "reference_loss",
            "reference",
            "loss_over_best",
        ],
    )
    shown = ["classes", "layers", "width", "lam", "lr", "init_factor", "n_runs"]
    shown += [f"p_{c}" for c in ("reaches_dnc", "dnc", "srg_like", "low_rank", "zero", "not_converged")]
    shown += ["p_reaches_dnc_lo", "p_reaches_dnc_hi", "ratio_median", "reference"]
    ctx.table(
        per_cell,
        "basins_cells",
        "Per cell: fraction of runs in each class (the Wilson 95 % intervals of every class are in the CSV).",
        columns=shown,
    )
    if ctx.registry is not None:  # `reproduce basins --registry`: each cell's lowest run, as every search
        offers = offer_cell_minima(
            runs, ctx.registry, ctx.out_dir, ctx.report.command or "deepcollapse reproduce basins"
        )
        ctx.table(
            offers,
            "basins_registry",
            "Per cell: its lowest run's point (float64 eq. (1) from the matrices) offered to the best-known "
            "registry, and whether the registry kept it (kept only below the cell's row).",
        )
    if "width" in atlas.axes:
        fig3_right_comparison(ctx, atlas, runs)
    for axis in atlas.axes:
        ids = [c.id for c in atlas.slice_cells(axis)]
        sl = runs[runs["cell"].isin(ids)]
        if sl[axis].nunique() < 2:
            continue
        fig, _ = bp.plot_class_curves(class_probabilities(sl, [axis]), axis)
        ctx.figure(
            fig,
            f"basins_classes_vs_{axis}",
            f"Fraction of runs in each class against {bp.axis_text(axis)} (other settings at the base cell), "
            "binomial Wilson 95 % intervals.",
        )
        fig, _ = bp.plot_ratio_ecdf(sl, axis)
        ctx.figure(
            fig,
            f"basins_loss_ratio_{axis}",
            f"Empirical distribution of the final loss over the reference loss per {bp.axis_text(axis)} "
            "(1 = as low as the reference).",
        )
    for a, b in atlas.maps:
        ids = [replace(atlas.base, **{a: u, b: v}).id for u in atlas.axes[a] for v in atlas.axes[b]]
        fig, _ = bp.plot_class_map(class_probabilities(runs[runs["cell"].isin(ids)], [a, b]), a, b)
        ctx.figure(
            fig,
            f"basins_map_{a}_{b}",
            f"P(DNC or heading to DNC) over {bp.axis_text(a)} × {bp.axis_text(b)}, Wilson 95 % intervals.",
        )
    return runs


def offer_cell_minima(runs: pd.DataFrame, registry: Any, out: Path, command: str) -> pd.DataFrame:
    """Offer each cell's lowest run to the best-known ``registry``: the run folder of the cell's lowest
    final loss, its lowest run in float64 (:func:`~deepcollapse.landscape.targets.load_point`), written as
    the solution file ``out/best_points/<cell>.npz`` and offered with ``command`` as provenance (kept only
    if its float64 eq. (1) is below the cell's row; diverged runs are left out).

    Parameters
    ----------
    runs : DataFrame
        Rows of :func:`basin_rows` (``cell``, ``seed``, ``final_loss``, ``run_dir``).
    registry : Registry
        The user registry (:class:`~deepcollapse.landscape.best_known.Registry`).
    out : Path
        The experiment folder.
    command : str
        The provenance of the offers.

    Returns
    -------
    DataFrame
        One row per cell: ``cell``, ``seed`` (of the cell's lowest final loss), ``loss`` (the offered
        point's float64 eq. (1)), ``kept``, ``reason``, ``solution``.

    Examples
    --------
    >>> import tempfile
    >>> from deepcollapse.experiments.registry import get_experiment
    >>> from deepcollapse.landscape.best_known import Registry
    >>> ctx = Context(get_experiment("basins"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
    >>> atlas = BasinAtlas(classes=3, layers=2, n=2, width=4, steps=10, records=10, runs=2)
    >>> runs = run_atlas(ctx, atlas)
    >>> registry = Registry.load(ctx.out_dir / "registry")
    >>> offers = offer_cell_minima(runs, registry, ctx.out_dir, "doc")
    >>> offers["kept"].tolist(), len(registry.rows)
    ([True], 1)
    >>> offer_cell_minima(runs, registry, ctx.out_dir, "doc")["reason"].str.startswith("not below").tolist()
    [True]
    """
    from deepcollapse.landscape.best_known import Provenance
    from deepcollapse.landscape.solution_file import save_solution
    from deepcollapse.landscape.targets import load_point

    rows = []
    finite = runs[np.isfinite(runs["final_loss"].to_numpy(dtype=float))]
    for cell, group in finite.groupby("cell", sort=True):
        best = group.loc[group["final_loss"].idxmin()]
        params, problem, _ = load_point(str(best["run_dir"]))  # the folder's lowest run, in float64
        path = save_solution(
            out / "best_points" / f"{cell}.npz",
            params[0],
            params[1:],
            n=problem.n,
            lam_h=problem.lam_h,
            lam_w=problem.lam_w,
            extra={"source": f"{command}: cell {cell}, run folder {best['run_dir']}"},
            family=problem.family,
        )
        offer = registry.offer(path, Provenance.now(command))
        rows.append(
            {
                "cell": cell,
                "seed": int(best["seed"]),
                "loss": offer.loss,
                "kept": offer.kept,
                "reason": offer.reason,
                "solution": str(path.relative_to(out)),
            }
        )
    return pd.DataFrame(rows, columns=["cell", "seed", "loss", "kept", "reason", "solution"])


def runtime_estimate(ctx: Context, atlas: BasinAtlas, pending: Sequence[Task]) -> pd.DataFrame:
    """The wall time of the ``pending`` tasks, estimated before they run, printed (:meth:`Context.say`) and
    put into the report (table ``basins_runtime_estimate``): from the rates of ``atlas.rates`` (a gpu-check
    JSON) where given, else from a short calibration on this machine
    (:func:`~deepcollapse.experiments.basin_runtime.estimate_runtime`).

    Parameters
    ----------
    ctx : Context
        Where it is said and written (its workers are the task processes).
    atlas : BasinAtlas
        The atlas.
    pending : sequence of Task
        Its tasks that are not done yet.

    Returns
    -------
    DataFrame
        :func:`~deepcollapse.experiments.basin_runtime.atlas_runtime`'s table.

    Examples
    --------
    >>> import tempfile
    >>> from deepcollapse.experiments.registry import get_experiment
    >>> ctx = Context(get_experiment("basins"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
    >>> atlas = BasinAtlas(classes=3, layers=2, n=2, width=4, steps=100, runs=2, runs_per_task=2)
    >>> est = runtime_estimate(ctx, atlas, atlas_tasks(atlas, ctx.out_dir))
    >>> est.attrs["tasks"], (ctx.out_dir / "tables" / "basins_runtime_estimate.csv").is_file()
    (1, True)
    """
    from deepcollapse._core.io import read_json
    from deepcollapse.dufm.config import DUFMConfig

    if atlas.rates is not None:
        device = DUFMConfig.from_dict(pending[0].config).device
        costs = costs_from_gpu_check(atlas, read_json(atlas.rates))
        est = atlas_runtime(atlas, costs, ctx.workers, device, pending)
        source = f"the rates measured in {atlas.rates}"
    else:
        est = estimate_runtime(atlas, ctx.workers, tasks=pending, progress=ctx.progress)
        source = f"a calibration on this machine ({est.attrs['device']})"
    a = est.attrs
    text = (
        f"estimated runtime {duration_text(a['wall_s'])} for {_count(a['tasks'], 'trainer call')} in "
        f"{_count(a['workers'], 'task process', 'es')} on {a['device']}, from {source}: stepping "
        f"{duration_text(a['device_s'])}, per-run analysis {duration_text(a['host_s'])} of CPU time"
    )
    ctx.say(text)
    ctx.table(est, "basins_runtime_estimate", text[0].upper() + text[1:] + ". One row per cost shape.")
    return est


def _count(n: int, word: str, plural: str = "s") -> str:
    return f"{n} {word}{'' if n == 1 else plural}"


def compare_runtime(ctx: Context, est: pd.DataFrame, elapsed: float) -> None:
    """Say and report the measured wall time against the estimate (table ``basins_runtime_check``: the
    estimate, the measurement and their ratio).

    Parameters
    ----------
    ctx : Context
        Where it is said and written.
    est : DataFrame
        The estimate made before the run (:func:`runtime_estimate`; its ``attrs`` and ``source`` column).
    elapsed : float
        The measured wall time, seconds.

    Returns
    -------
    None
        Says the comparison and writes the table ``basins_runtime_check`` into ``ctx``'s folder and report.

    Examples
    --------
    >>> import tempfile
    >>> from deepcollapse.experiments.registry import get_experiment
    >>> ctx = Context(get_experiment("basins"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
    >>> from deepcollapse.experiments.basin_runtime import ShapeCost, atlas_runtime, atlas_shapes
    >>> atlas = BasinAtlas(classes=3, layers=2, n=2, width=4, steps=100, runs=2, runs_per_task=2)
    >>> costs = {shape: ShapeCost(2, 0.001, 0.0001, 0.01, "made up") for shape in atlas_shapes(atlas)}
    >>> compare_runtime(ctx, atlas_runtime(atlas, costs, 1, "cpu"), 0.2444)
    >>> pd.read_csv(ctx.out_dir / "tables" / "basins_runtime_check.csv")["measured_over_estimated"].item()
    2.0
    """
    ratio = elapsed / max(est.attrs["wall_s"], 1e-9)
    text = (
        f"took {duration_text(elapsed)} against the estimated {duration_text(est.attrs['wall_s'])} "
        f"(measured / estimated = {ratio:.3g})"
    )
    ctx.say(text)
    check = pd.DataFrame(
        [
            {
                "estimated_s": est.attrs["wall_s"],
                "measured_s": elapsed,
                "measured_over_estimated": ratio,
                "tasks": est.attrs["tasks"],
                "workers": est.attrs["workers"],
                "device": est.attrs["device"],
                "source": str(est["source"].iloc[0]) if len(est) else "",
            }
        ]
    )
    ctx.table(
        check, "basins_runtime_check", "Runtime: the estimate made before the run and the wall time it took."
    )


def fig3_right_comparison(ctx: Context, atlas: BasinAtlas, runs: pd.DataFrame) -> pd.DataFrame:
    """The width slice beside the ``fig3-right`` experiment (2024 Fig. 3 right): its settings, P(DNC or
    heading to DNC) per width with Wilson intervals, and whether it rises with the width.

    Parameters
    ----------
    ctx : Context
        Where the section and table go.
    atlas : BasinAtlas
        The atlas (its ``width`` axis).
    runs : DataFrame
        The per-run table.

    Returns
    -------
    DataFrame
        One row per width: ``width, n_runs, p_reaches_dnc`` and its interval, ``p_dnc``.

    Examples
    --------
    >>> import tempfile
    >>> from deepcollapse.experiments.registry import get_experiment
    >>> ctx = Context(get_experiment("basins"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
    >>> atlas = BasinAtlas(steps=100, axes={"width": [16, 64]})
    >>> runs = pd.DataFrame([{"cell": c.id, "width": c.width, "classification": k, "loss_over_best": 1.0}
    ...                      for c in atlas.slice_cells("width") for k in ("dnc", "low_rank")])
    >>> fig3_right_comparison(ctx, atlas, runs)[["width", "n_runs", "p_reaches_dnc"]].values.tolist()
    [[16.0, 2.0, 0.5], [64.0, 2.0, 0.5]]
    """
    from deepcollapse.experiments.dufm_helpers import dufm_base
    from deepcollapse.experiments.paper2024 import FIG3_RIGHT_WIDTHS

    ids = [c.id for c in atlas.slice_cells("width")]
    table = class_probabilities(runs[runs["cell"].isin(ids)], ["width"])
    cols = ["width", "n_runs", "p_reaches_dnc", "p_reaches_dnc_lo", "p_reaches_dnc_hi", "p_dnc", "p_low_rank"]
    table = table[[c for c in cols if c in table.columns]]
    ref = dufm_base(False)
    same = {k: (ref[k], getattr(atlas, k)) for k in ("classes", "layers", "n", "lam", "lr")}
    diff = [f"{k} {a} vs {b}" for k, (a, b) in same.items() if a != b]
    p = table["p_reaches_dnc"].to_numpy()
    rises = bool(len(p) > 1 and p[-1] > p[0] and np.all(np.diff(p) >= -1e-12))
    ctx.report.section("2024 Fig. 3 right as one slice: P(DNC) against width")
    ctx.report.add_note(
        f"The fig3-right experiment: K = {ref['classes']}, L = {ref['layers']}, n = {ref['n']}, "
        f"λ = {ref['lam']}, lr {ref['lr']}, widths {FIG3_RIGHT_WIDTHS}, {ref['steps']} steps, 10 seeds. This "
        f"slice: widths {atlas.axes['width']}, {atlas.steps} steps, {atlas.runs} runs per width; "
        + ("same K, L, n, λ and lr." if not diff else "differs in " + ", ".join(diff) + ".")
        + f" P(DNC or heading to DNC) {'rises' if rises else 'does not rise monotonically'} with the width "
        f"here ({' → '.join(f'{v:.2f}' for v in p)})."
    )
    ctx.table(
        table,
        "basins_fig3_right",
        "The width slice of the atlas (the other settings at the base cell), Wilson 95 % intervals.",
    )
    return table


def _atlas(ctx: Context, shipped: BasinAtlas) -> BasinAtlas:
    """The atlas of this run: the one read from ``--config`` (described in the report's settings; a
    ``--device`` already in it), else the smoke or the shipped preset on ``--device`` where given."""
    if ctx.settings is not None:
        ctx.settings_section.text = f"Read from {ctx.config_file}: {describe_atlas(ctx.settings)}"
        return ctx.settings  # type: ignore[no-any-return]
    atlas = BASINS_SMOKE if ctx.smoke else shipped
    if "device" in ctx.run_options:
        atlas = atlas.replace(device=ctx.run_options["device"])
        if not ctx.smoke:
            ctx.settings_section.text = describe_atlas(atlas)
    return atlas


def _basins(ctx: Context) -> None:
    run_atlas(ctx, _atlas(ctx, BASINS_LAPTOP), estimate=not ctx.smoke)


def _basins_gpu(ctx: Context) -> None:
    atlas = _atlas(ctx, BASINS_GPU)
    if atlas.device == "auto":
        import torch

        if not torch.cuda.is_available():  # said at once: the calibration alone takes minutes on a CPU
            ctx.announce(f"{ctx.experiment.name}: {no_gpu_text(atlas)}")
    run_atlas(ctx, atlas, estimate=True)


def no_gpu_text(atlas: BasinAtlas) -> str:
    """What ``reproduce basins-gpu`` (device ``auto``) says at once on a machine without a GPU: that it
    runs on the CPU instead, how large the atlas is, and what comes first (the runtime calibration).

    Parameters
    ----------
    atlas : BasinAtlas
        The atlas about to run on the CPU.

    Returns
    -------
    str
        One line.

    Examples
    --------
    >>> no_gpu_text(BASINS_GPU).startswith("no GPU here (found torch ")
    True
    """
    from deepcollapse._core.devices import cuda_found
    from deepcollapse.experiments.basin_runtime import atlas_shapes

    shapes = len(atlas_shapes(atlas))
    return (
        f"no GPU here (found {cuda_found()}): device auto runs its {atlas.total_runs:,} runs of "
        f"{atlas.steps:,} steps on the CPU instead, far slower (the CPU size: reproduce basins; --device "
        f"cuda refuses without a GPU); first a runtime estimate from a calibration of its {shapes} cost "
        "shapes"
    )


def describe_atlas(atlas: BasinAtlas) -> str:
    """The settings of ``atlas`` in one paragraph (base cell, slices, maps, runs, steps), from its fields.

    Parameters
    ----------
    atlas : BasinAtlas
        The atlas.

    Returns
    -------
    str
        For the experiment's ``settings`` and the report.

    Examples
    --------
    >>> describe_atlas(BASINS_SMOKE).split("; ")[-1]
    '4 runs per cell (4 cells, 16 runs), 2000 GD steps, 4 runs per trainer call, device cpu.'
    """
    sym = {"width": "width", "lam": "λ", "lr": "lr", "init_factor": "α", "classes": "K", "layers": "L"}

    def vals(v: list[Any]) -> str:
        return "{" + ", ".join(f"{x:g}" for x in v) + "}"

    b = atlas.base
    text = (
        f"Base cell K = {b.classes}, L = {b.layers}, n = {b.n}, width {b.width}, λ = {b.lam:g} for H_1 and "
        "every "
        f"W_l, lr {b.lr:g}, init scale α = {b.init_factor:g} (× the default stds); {atlas.loss} + "
        f"{atlas.activation}; slices " + ", ".join(f"{sym[a]} ∈ {vals(v)}" for a, v in atlas.axes.items())
    )
    if atlas.maps:
        text += "; maps " + ", ".join(f"{sym[a]} × {sym[c]}" for a, c in atlas.maps)
    return text + (
        f"; {atlas.runs} runs per cell ({len(atlas.cells())} cells, {atlas.total_runs} runs), "
        f"{atlas.steps} GD steps, {atlas.runs_per_task} runs per trainer call, device {atlas.device}."
    )


register(
    Experiment(
        "basins",
        "2024",
        "beyond the paper: basin atlas (Fig. 3 right as one slice)",
        "Where GD from random starts lands: P(class) along width, λ, learning rate, init scale, K and L, "
        "with Wilson intervals, and the final loss over the best-known (or min(L_DNC, L_SRG)) loss.",
        describe_atlas(BASINS_LAPTOP),
        "under 1 h on 2 cores (the report gives the estimate from measured throughput and the measured time)",
        "dufm",
        _basins,
        config_class=BasinAtlas,
    )
)
register(
    Experiment(
        "basins-gpu",
        "2024",
        "beyond the paper: basin atlas, GPU size",
        f"The basin atlas at {BASINS_GPU.total_runs} runs on one GPU ({BASINS_GPU.runs_per_task} runs per "
        "kernel call), at the fig3-right settings (n = 50).",
        describe_atlas(BASINS_GPU),
        "estimated from measured throughput at the start of the run (report table basins_runtime_estimate)",
        "dufm",
        _basins_gpu,
        config_class=BasinAtlas,
    )
)
