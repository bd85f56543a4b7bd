"""Helpers shared by the DUFM figure definitions: the flagship setting, sweep specs with the papers' seeds,
and the tables / curves / class means read back from a sweep's run folders."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from deepcollapse._core import flagship
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.experiments.framework import Context
from deepcollapse.runs.sweep import SweepResult, SweepSpec

if TYPE_CHECKING:
    from deepcollapse.experiments.outputs import ClassMeans

_DUFM_DEFAULTS = {f.name: f.default for f in dataclasses.fields(DUFMConfig)}

__all__ = ["DNC_CRITERION", "DNC_CRITERION_SHORT", "FLAGSHIP", "SMOKE", "dufm_base", "zero_threshold_lam"]

# The flagship 4-DUFM of 2024 §6.1 / Fig. 2 top as a DUFMConfig base: the problem of
# deepcollapse._core.flagship (K = 10, n = 50, L = 4, width 30, λ = 0.004 everywhere) trained with
# DUFMConfig's defaults (lr 0.5, 100 000 steps, logged every 1 000), which are the flagship's.
FLAGSHIP: dict[str, Any] = {
    "classes": flagship.CLASSES,
    "n": flagship.N,
    "layers": flagship.LAYERS,
    "width": flagship.WIDTH,
    "lam": flagship.LAM,
    **{k: _DUFM_DEFAULTS[k] for k in ("lr", "steps", "log_every")},
}
SMOKE: dict[str, Any] = {"n": 5, "steps": 300, "log_every": 50}


def zero_threshold_lam(classes: int, layers: int, n: int) -> float:
    """The common weight decay λ (λ_H1 = every λ_Wl = λ) at which the DNC optimum becomes the all-zero point:
    ``Λ = n λ^{L+1} = Λ*`` (:func:`deepcollapse.theory.zero_threshold`), i.e. ``λ* = (Λ*/n)^{1/(L+1)}``.

    Parameters
    ----------
    classes : int
        ``K``.
    layers : int
        ``L``.
    n : int
        Samples per class.

    Returns
    -------
    float
        ``λ*``.

    Examples
    --------
    >>> round(zero_threshold_lam(10, 4, 50), 4)
    0.0096
    """
    from deepcollapse.theory import zero_threshold

    return float((zero_threshold(classes, layers) / n) ** (1.0 / (layers + 1)))


def dufm_base(smoke: bool, **overrides: Any) -> dict[str, Any]:
    """The flagship config with ``overrides``; the smoke version has n = 5 and 300 steps (logged every 50).  A
    plain dict: the base of a sweep spec (it may hold ``lam``, which the spec expands), completed by the
    spec's grid and seeds before each point's ``DUFMConfig`` validates it.

    Parameters
    ----------
    smoke : bool
        Apply :data:`SMOKE` (after ``overrides``, so it wins over them).
    **overrides
        ``DUFMConfig`` fields (or ``lam``) that replace the flagship's.

    Returns
    -------
    dict
        The sweep base.

    Examples
    --------
    >>> base = dufm_base(True, lam=0.01)
    >>> base["classes"], base["lam"], base["n"], base["steps"]
    (10, 0.01, 5, 300)
    """
    base = {**FLAGSHIP, **overrides}
    if smoke:
        base.update(SMOKE)
    return base


def _dnc_criterion() -> tuple[str, str]:
    from deepcollapse.dufm.classify import DNC2_TOL, DNC_CONVERGING_COND, DNC_CONVERGING_GAP

    long = (
        f"DNC: rank K in every layer and σ_1/σ_K(M_L) ≤ {1 + DNC2_TOL:g}; heading to DNC (dnc_converging): "
        f"rank K in every layer, σ_1/σ_K(M_L) ≤ {1 + DNC_CONVERGING_COND:g} and a loss at most "
        f"{100 * DNC_CONVERGING_GAP:g} % above L_DNC."
    )
    short = (
        "DNC or heading to DNC:\n"
        rf"rank $K$, $\sigma_1/\sigma_K \leq {1 + DNC_CONVERGING_COND:g}$, "
        rf"loss $\leq (1 + {DNC_CONVERGING_GAP:g})\,L_{{\mathrm{{DNC}}}}$"
    )
    return long, short


DNC_CRITERION, DNC_CRITERION_SHORT = _dnc_criterion()


def _point_folders(result: SweepResult, point: str | None = None) -> list[Path]:
    return [
        Path(t.out_dir)
        for t in result.spec.tasks(result.out_dir)
        if point is None or t.meta["point"] == point
    ]


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def point_curves(result: SweepResult, point: str | None = None) -> pd.DataFrame:
    """Per (step, seed) losses of every run of a point; ``run`` is the seed (unique across run folders).

    Parameters
    ----------
    result : SweepResult
        A finished DUFM sweep.
    point : str, optional
        The point id (``result.runs["point"]``); default every point.

    Returns
    -------
    DataFrame
        ``step, run, seed, loss, fit, reg, diverged``
        (:func:`~deepcollapse.analysis.tables.step_metrics_frame` of each run folder); empty without records.

    Examples
    --------
    >>> import tempfile
    >>> from deepcollapse.runs.sweep import run_sweep
    >>> base = dufm_base(False, classes=3, layers=2, width=4, n=2, steps=20, log_every=10)
    >>> result = run_sweep(seeded_spec("tiny", base, 2), tempfile.mkdtemp(), workers=1)
    >>> curves = point_curves(result, "base")
    >>> sorted(curves["run"].unique().tolist()), sorted(curves["step"].unique().tolist())[:3]
    ([0, 1], [0, 10, 20])
    """
    from deepcollapse.analysis.tables import step_metrics_frame

    df = _concat([step_metrics_frame(f) for f in _point_folders(result, point)])
    if not df.empty:
        df["run"] = df["seed"]
    return df


def point_layer_frame(result: SweepResult, point: str | None = None) -> pd.DataFrame:
    """Per (step, seed, layer, kind) class-mean metrics of every run of a point (``dnc1``, ``dnc2_cond``,
    ``rank``); ``run`` is the seed.

    Parameters
    ----------
    result : SweepResult
        A finished DUFM sweep.
    point : str, optional
        The point id; default every point.

    Returns
    -------
    DataFrame
        :func:`~deepcollapse.analysis.tables.layer_metrics_frame` of each run folder, concatenated; empty
        without records.

    Examples
    --------
    >>> import tempfile
    >>> from deepcollapse.runs.sweep import run_sweep
    >>> base = dufm_base(False, classes=3, layers=2, width=4, n=2, steps=20, log_every=10)
    >>> result = run_sweep(seeded_spec("tiny", base, 2), tempfile.mkdtemp(), workers=1)
    >>> layers = point_layer_frame(result)
    >>> sorted(layers["layer"].unique().tolist()), {"dnc1", "rank"} <= set(layers.columns)
    ([1, 2], True)
    """
    from deepcollapse.analysis.tables import layer_metrics_frame

    df = _concat([layer_metrics_frame(f) for f in _point_folders(result, point)])
    if not df.empty:
        df["run"] = df["seed"]
    return df


def point_singular_values(
    result: SweepResult, point: str | None = None, kind: str = "post"
) -> dict[int, np.ndarray]:
    """The singular values of the class means at the last logged step of every run of a point, by layer.

    Parameters
    ----------
    result : SweepResult
        A finished DUFM sweep.
    point : str, optional
        The point id; default every point.
    kind : {"post", "pre"}, default "post"
        The post- or pre-activation class means.

    Returns
    -------
    dict of int to numpy.ndarray
        ``{layer: (runs, k)}``, the runs of all the point's folders stacked (rows zero-padded to the longest).

    Examples
    --------
    >>> import tempfile
    >>> from deepcollapse.runs.sweep import run_sweep
    >>> base = dufm_base(False, classes=3, layers=2, width=4, n=2, steps=20, log_every=10)
    >>> result = run_sweep(seeded_spec("tiny", base, 2), tempfile.mkdtemp(), workers=1)
    >>> {layer: sv.shape for layer, sv in point_singular_values(result, "base").items()}
    {1: (2, 3), 2: (2, 3)}
    """
    from deepcollapse.analysis.tables import final_singular_values

    out: dict[int, list[np.ndarray]] = {}
    for f in _point_folders(result, point):
        for layer, arr in final_singular_values(f, kind=kind).items():
            out.setdefault(layer, []).append(arr)
    merged = {}
    for layer, arrs in sorted(out.items()):
        k = max(a.shape[1] for a in arrs)
        merged[layer] = np.vstack([np.pad(a, ((0, 0), (0, k - a.shape[1]))) for a in arrs])
    return merged


def best_means(
    result: SweepResult, points: Sequence[str], classes: int
) -> tuple[ClassMeans, dict[str, Any], str]:
    """Class means of the best run over ``points``: the lowest ``final_loss / L_DNC`` (so that points with
    different λ compare fairly), non-diverged runs first.  Returns (means, summary entry, point id), the means
    a :class:`~deepcollapse.experiments.outputs.ClassMeans`.

    Parameters
    ----------
    result : SweepResult
        A finished DUFM sweep.
    points : sequence of str
        The point ids to choose from.
    classes : int
        ``K``.

    Returns
    -------
    tuple
        ``(ClassMeans, dict, str)``: the best run's class means
        (:func:`~deepcollapse.experiments.outputs.class_mean_matrices`), its entry of ``summary.json``
        and its point; ``ValueError`` when no run finished.

    Examples
    --------
    >>> import tempfile
    >>> from deepcollapse.runs.sweep import run_sweep
    >>> base = dufm_base(False, classes=3, layers=2, width=4, n=2, steps=20, log_every=10)
    >>> result = run_sweep(seeded_spec("tiny", base, 2), tempfile.mkdtemp(), workers=1)
    >>> means, run, point = best_means(result, ["base"], 3)
    >>> type(means).__name__, point, run["seed"] in (0, 1)
    ('ClassMeans', 'base', True)
    """
    from deepcollapse.analysis.tables import read_summary
    from deepcollapse.experiments.outputs import class_mean_matrices

    best: tuple[float, Path, int, dict[str, Any], str] | None = None
    for point in points:
        for f in _point_folders(result, point):
            summary = read_summary(f)
            loss_dnc = float(summary.get("loss_dnc") or 1.0)
            for i, run in enumerate(summary["runs"]):
                loss = float(run.get("final_loss") if run.get("final_loss") is not None else math.inf)
                score = loss / loss_dnc if not run.get("diverged") and math.isfinite(loss) else math.inf
                if best is None or score < best[0]:
                    best = (score, f, i, run, point)
    if best is None:
        raise ValueError(f"no finished run among points {list(points)}")
    _, folder, i, run, point = best
    return class_mean_matrices(folder, i, classes), run, point


_RUN_COLUMNS = [
    "point",
    "seed",
    "final_loss",
    "loss_dnc",
    "loss_srg",
    "classification",
    "mean_rank",
    "diverged",
]


def runs_table(ctx: Context, result: SweepResult, name: str, caption: str) -> None:
    """Write the sweep's per-run table (``tables/<name>_runs.csv``) and show its main columns in the report.

    Parameters
    ----------
    ctx : Context
        Where the table goes.
    result : SweepResult
        A finished DUFM sweep.
    name : str
        The table's prefix.
    caption : str
        The report's caption.

    Returns
    -------
    None
        Writes ``tables/<name>_runs.csv`` (every column) and adds the point, the varying settings, the seed,
        losses, class and ranks to the report.

    Examples
    --------
    >>> import tempfile
    >>> from deepcollapse.runs.sweep import run_sweep
    >>> base = dufm_base(False, classes=3, layers=2, width=4, n=2, steps=20, log_every=10)
    >>> result = run_sweep(seeded_spec("tiny", base, 2), tempfile.mkdtemp(), workers=1)
    >>> from deepcollapse.experiments.registry import get_experiment
    >>> ctx = Context(get_experiment("fig2-top"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
    >>> runs_table(ctx, result, "tiny", "One row per run.")
    >>> len(pd.read_csv(ctx.out_dir / "tables" / "tiny_runs.csv"))
    2
    """
    cols = list(dict.fromkeys(["point", *result.spec.varying_keys(), *_RUN_COLUMNS[1:]]))
    cols += [c for c in result.runs.columns if c.startswith("rank_")]
    ctx.table(result.runs, f"{name}_runs", caption, columns=cols)


def summary_table(ctx: Context, result: SweepResult, name: str, caption: str, metrics: Sequence[str]) -> None:
    """Write the full per-point table (CSV) and show ``metrics`` as "mean ± std" columns in the report.

    Parameters
    ----------
    ctx : Context
        Where the table goes.
    result : SweepResult
        A finished DUFM sweep.
    name : str
        The table's prefix (``tables/<name>_summary.csv``).
    caption : str
        The report's caption.
    metrics : sequence of str
        Metrics of ``result.summary`` shown as ``mean ± std``
        (:func:`~deepcollapse.analysis.tables.format_mean_std`).

    Returns
    -------
    None
        Writes ``tables/<name>_summary.csv`` and adds the formatted table to the report.

    Examples
    --------
    >>> import tempfile
    >>> from deepcollapse.runs.sweep import run_sweep
    >>> base = dufm_base(False, classes=3, layers=2, width=4, n=2, steps=20, log_every=10)
    >>> result = run_sweep(seeded_spec("tiny", base, 2), tempfile.mkdtemp(), workers=1)
    >>> from deepcollapse.experiments.registry import get_experiment
    >>> ctx = Context(get_experiment("fig2-top"), Path(tempfile.mkdtemp()), True, "local", 1, None, False)
    >>> summary_table(ctx, result, "tiny", "Per point.", ["final_loss"])
    >>> pd.read_csv(ctx.out_dir / "tables" / "tiny_summary.csv")["n_runs"].tolist()
    [2]
    """
    from deepcollapse.analysis.tables import format_mean_std

    path = ctx.out_dir / "tables" / f"{name}_summary.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    result.summary.to_csv(path, index=False)
    keys = ["point", *result.spec.varying_keys()]
    ctx.report.add_table(format_mean_std(result.summary, keys, metrics), caption)


def seeded_spec(
    name: str,
    base: dict[str, Any],
    seeds: int,
    *,
    grid: dict[str, list[Any]] | None = None,
    points: list[dict[str, Any]] | None = None,
    seeds_per_run: int | None = None,
) -> SweepSpec:
    """Seeds ``0..seeds-1``; a single-point experiment splits its seeds into two trainer calls (one per core
    of a 2-core machine; results do not depend on the split).

    Parameters
    ----------
    name : str
        The sweep's name.
    base : dict
        The base config (:func:`dufm_base`).
    seeds : int
        Seeds per point.
    grid : dict of str to list, optional
        Settings crossed with each other.
    points : list of dict, optional
        Explicit points (each overrides ``base``).
    seeds_per_run : int, optional
        Seeds per trainer call (default: half of them for a single point, else the spec's default).

    Returns
    -------
    SweepSpec

    Examples
    --------
    >>> spec = seeded_spec("flagship", dufm_base(True), 10)
    >>> spec.seeds, spec.seeds_per_run
    ([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 5)
    """
    if seeds_per_run is None and not grid and not points and seeds > 1:
        seeds_per_run = math.ceil(seeds / 2)
    return SweepSpec(
        base=base,
        grid=grid or {},
        points=points or [],
        seeds=list(range(seeds)),
        name=name,
        seeds_per_run=seeds_per_run,
    )
