"""Real-data network experiments a CPU finishes: the low-rank bias and deep neural collapse on data that ships
with a package (scikit-learn's 8×8 digits; MNIST-1D generated offline by the ``mnist1d`` package).

They are the small counterparts of the 2024 paper's end-to-end figures, with an MLP backbone (two affine +
ReLU layers, :mod:`deepcollapse.nets.mlp_backbone`) in place of ResNet20 and the same bias-free 4-layer MLP
head:

- ``real-<data>-rank-wd`` (2024 Figs. 9 left and 10): average rank of the head's class means at the end of
  training against log2 weight decay, with DUFM-like regularisation (``reg = dufm``: ``λ`` on the head,
  ``λ_H1`` on the backbone output) and with standard regularisation (``reg = standard``: weight decay ``λ`` on
  every parameter);
- ``real-<data>-rank-lr`` (2024 Fig. 9 right): the same against log2 learning rate, per regularisation;
- ``real-<data>-dnc`` (2024 Figs. 2 bottom and 4): DNC1 of every head layer over training, the singular values
  of the class means at the end, and (DUFM-like regularisation, MSE loss) the training loss against the
  optimal DNC and SRG losses ``L_DNC``, ``L_SRG`` that the theory engine (:func:`deepcollapse.theory.compare`)
  gives at the run's ``K``, ``L``, ``n`` and ``λ`` values.

**Average rank** (what Figs. 3, 9 and 10 plot): the mean numerical rank (``rank_rtol = 1e-3``, relative to the
largest singular value) of the pre-activation class-mean matrices ``M~_2, ..., M~_L`` of the head, the
matrices whose rank the SRG construction lowers to ``r ≈ √(2K)``; ``M_L = ReLU(M~_L)`` has rank ``K`` in every
good fit and ``H1`` is the backbone's, so neither enters.  The tables also give the mean rank of the post-ReLU
middle layers ``M_2 .. M_{L-1}`` (``avg_rank_post``) and the training accuracy: a run whose accuracy is at
chance has collapsed to the trivial (all-zero) solution, whose rank is 1 for a different reason.

**The theory levels**: DUFM-like regularisation with ``lam_h_scale = batch_mean`` is the DUFM objective (eq.
(1)) with ``λ_{H1} = lam_h / N`` and ``λ_{W_l} = lam`` (see :mod:`deepcollapse.nets.config`); the
training set is a balanced subsample with ``n`` per class, so the levels are computed at exactly the run's
``n``.  The network's ``H1`` is constrained by the backbone, so its loss can approach, never beat, the DUFM
optimum, which is at most ``min(L_DNC, L_SRG)``.

Settings are ours (the papers have no such runs): balanced training subsamples (digits 139 per class of the
fixed stratified split, MNIST-1D 200 per class of its 4000 training signals), batch 128, SGD with momentum
0.9, lr 0.05 with a ×0.1 step at 50 % and 75 % of 200 (digits) / 100 (MNIST-1D) epochs, MSE loss, ``λ_H1 =
5e-4`` (``batch_mean``), MLP backbone of width 128 (digits) / 256 (MNIST-1D), head width 32.  Weight-decay
grids run from values that keep every rank at ``K`` to values where the rank is well below ``K`` (the largest
DUFM-like value on digits costs training accuracy).  The small MLP does not fit MNIST-1D completely in 100
epochs and its accuracy falls along the grids (and at small learning rates): read MNIST-1D ranks together with
the accuracy panel.  Smoke variants: 30 samples per class, 40 epochs of batch 60, grid ends, 2 seeds;
the rank-vs-lr smoke points train ``⌈40 · max(lr) / lr⌉`` epochs (:func:`smoke_epochs`: 640 at lr 0.0125,
40 at lr 0.2), so every point takes the ``lr × steps`` of the largest learning rate (in 40 epochs the
smallest one ends at chance accuracy and checks nothing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deepcollapse.experiments.framework import Context, Experiment, register
from deepcollapse.experiments.net_figures import NET_FIGURES, REGS, NetFigure, figure_spec, smoke_epochs
from deepcollapse.nets.theory_levels import theory_levels  # the one definition (nets may import theory)
from deepcollapse.runs.sweep import SweepResult

__all__ = ["average_ranks", "dnc_runs", "rank_table", "smoke_epochs", "summarise", "theory_levels"]

# ------------------------------------------------------------------------------------------------------------
# Tables
# ------------------------------------------------------------------------------------------------------------


def _last_record(folder: str | Path) -> dict[str, Any] | None:
    from deepcollapse.analysis.tables import read_jsonl

    recs = read_jsonl(Path(folder) / "metrics.jsonl")
    return recs[-1] if recs else None


def average_ranks(record: dict[str, Any]) -> tuple[float, float]:
    """``(avg_rank, avg_rank_post)`` of one evaluation record: the mean rank of ``M~_2 .. M~_L`` and of the
    post-ReLU middle layers ``M_2 .. M_{L-1}`` (NaN where a layer has no rank or the head has no such
    layer).

    Parameters
    ----------
    record : dict
        One record of a run's ``metrics.jsonl``; its ``layers`` entries have ``layer``, ``kind`` and ``rank``.

    Returns
    -------
    tuple of float
        ``(avg_rank, avg_rank_post)``.

    Examples
    --------
    >>> layers = [{"layer": 1, "kind": "post", "rank": 10}, {"layer": 2, "kind": "pre", "rank": 8},
    ...           {"layer": 2, "kind": "post", "rank": 7}, {"layer": 3, "kind": "pre", "rank": 6},
    ...           {"layer": 3, "kind": "post", "rank": 6}]
    >>> average_ranks({"layers": layers})
    (7.0, 7.0)
    """
    layers = record.get("layers", [])
    top = max((int(e["layer"]) for e in layers), default=1)
    pre = [e["rank"] for e in layers if e.get("kind") == "pre" and e.get("rank") is not None]
    post = [
        e["rank"]
        for e in layers
        if e.get("kind") == "post" and 2 <= int(e["layer"]) < top and e.get("rank") is not None
    ]
    return (float(np.mean(pre)) if pre else math.nan, float(np.mean(post)) if post else math.nan)


def rank_table(result: SweepResult) -> pd.DataFrame:
    """One row per run: ``reg, lam, lr, seed, train_acc, test_acc, loss, avg_rank, avg_rank_post`` and the
    rank of every head feature (``rank_<name>``), from the last evaluation of each run folder.

    Parameters
    ----------
    result : SweepResult
        A network sweep (:func:`~deepcollapse.experiments.net_figures.figure_spec`); runs without an
        evaluation are left out.

    Returns
    -------
    DataFrame
        The rows above.

    Examples
    --------
    A 2-epoch run on 100 digits (seconds):

    >>> import dataclasses, tempfile
    >>> from deepcollapse.runs.sweep import run_sweep
    >>> spec = figure_spec(NET_FIGURES["real-digits-dnc"], smoke=True)
    >>> tiny = {**spec.base, "epochs": 2, "eval_every": 1, "n": 10, "batch_size": 50}
    >>> spec = dataclasses.replace(spec, base=tiny, points=spec.points[:1], seeds=[0])
    >>> result = run_sweep(spec, tempfile.mkdtemp(), workers=1)
    >>> rank_table(result)[["reg", "lam", "seed"]].values.tolist()
    [['dufm', 0.008, 0]]
    """
    rows = []
    for task in result.spec.tasks(result.out_dir):
        rec = _last_record(task.out_dir)
        if rec is None:
            continue
        cfg = task.config
        avg, avg_post = average_ranks(rec)
        row = {
            "reg": cfg["reg"],
            "lam": cfg["lam"],
            "lr": cfg["lr"],
            "seed": cfg["seed"],
            "train_acc": rec.get("train_acc"),
            "test_acc": rec.get("test_acc"),
            "loss": rec.get("loss"),
            "avg_rank": avg,
            "avg_rank_post": avg_post,
        }
        for e in rec.get("layers", []):
            row[f"rank_{e['name']}"] = e.get("rank")
        rows.append(row)
    return pd.DataFrame(rows)


def summarise(runs: pd.DataFrame, x: str) -> pd.DataFrame:
    """Mean and sample std over seeds per ``(reg, x)``: ``avg_rank``, ``avg_rank_post``, accuracies, loss.

    Parameters
    ----------
    runs : DataFrame
        :func:`rank_table`'s rows.
    x : str
        The swept setting (``"lam"`` or ``"lr"``).

    Returns
    -------
    DataFrame
        ``reg``, ``x``, ``<metric>_mean`` and ``<metric>_std`` of each metric above, and ``seeds``.

    Examples
    --------
    >>> runs = pd.DataFrame({"reg": "dufm", "lam": [0.002, 0.002, 0.008], "avg_rank": [9.0, 8.0, 5.0],
    ...                      "avg_rank_post": [9.0, 8.0, 5.0], "train_acc": [1.0, 1.0, 0.9],
    ...                      "test_acc": [0.9, 0.9, 0.8], "loss": [0.1, 0.1, 0.2]})
    >>> summarise(runs, "lam")[["lam", "avg_rank_mean", "seeds"]].values.tolist()
    [[0.002, 8.5, 2.0], [0.008, 5.0, 1.0]]
    """
    cols = ["avg_rank", "avg_rank_post", "train_acc", "test_acc", "loss"]
    g = runs.groupby(["reg", x])[cols]
    mean, std = g.mean().add_suffix("_mean"), g.std(ddof=1).add_suffix("_std")
    out = pd.concat([mean, std], axis=1).reset_index()
    out["seeds"] = g.size().to_numpy()
    return out


# ------------------------------------------------------------------------------------------------------------
# Bodies
# ------------------------------------------------------------------------------------------------------------


def _fmt(summary: pd.DataFrame, x: str) -> pd.DataFrame:
    shown = summary[["reg", x, "seeds"]].copy()
    for c in ("avg_rank", "avg_rank_post", "train_acc", "test_acc"):
        shown[c] = [
            f"{m:.3g} ± {s:.2g}" if np.isfinite(s) else f"{m:.3g}"
            for m, s in zip(summary[f"{c}_mean"], summary[f"{c}_std"])
        ]
    return shown


def _rank_body(row: NetFigure) -> Any:
    x = str(row.x)

    def body(ctx: Context) -> None:
        from deepcollapse.analysis.net_real_plots import plot_rank_sweep

        result = ctx.sweep(figure_spec(row, ctx.smoke), "net")
        runs = rank_table(result)
        summary = summarise(runs, x)
        name = ctx.experiment.name
        (ctx.out_dir / "tables").mkdir(parents=True, exist_ok=True)
        summary.to_csv(ctx.out_dir / "tables" / f"{name}_summary.csv", index=False)
        ctx.report.section("Average rank of the head's class means")
        fig = plot_rank_sweep(summary, x)
        what = "weight decay λ" if x == "lam" else "learning rate η"
        ctx.figure(
            fig,
            f"{name}_rank",
            f"Left: average rank of M~_2..M~_L at the end of training against log2 {what}, "
            "per regularisation "
            f"(mean ± std over {int(summary['seeds'].min())} seeds; K = 10). Right: training accuracy "
            "(chance is 0.1: a run there has collapsed to the zero solution).",
        )
        ctx.report.add_table(
            _fmt(summary, x), "Mean ± std over seeds (avg_rank: M~_2..M~_L; post: M_2..M_{L-1})."
        )
        ctx.table(runs, f"{name}_runs", "Per run (last evaluation).")

    return body


def dnc_runs(
    tasks: list[Any],
) -> tuple[pd.DataFrame, dict[int, np.ndarray], pd.DataFrame, Mapping[str, Any] | None] | None:
    """What the DNC panels of a set of network runs show (:func:`~deepcollapse.analysis.net_real_plots.
    plot_dnc_panels`), read from their run folders.

    Parameters
    ----------
    tasks : list
        The sweep tasks of the runs (``out_dir`` and ``config`` each).

    Returns
    -------
    tuple or None
        ``(layers, singular_values, curves, levels)``: the per-layer metrics over the epochs (column ``run`` =
        the seed), the final singular values of ``M~_l`` for ``l >= 2`` stacked over runs, the training-loss
        curves, and the theory's ``L_DNC`` / ``L_SRG`` levels at the runs' problem (:func:`theory_levels`;
        ``None`` for runs it does not describe); ``None`` when no run has written metrics yet.

    Examples
    --------
    A 2-epoch run on 100 digits (seconds):

    >>> import dataclasses, tempfile
    >>> from deepcollapse.runs.sweep import run_sweep
    >>> spec = figure_spec(NET_FIGURES["real-digits-dnc"], smoke=True)
    >>> tiny = {**spec.base, "epochs": 2, "eval_every": 1, "n": 10, "batch_size": 50}
    >>> spec = dataclasses.replace(spec, base=tiny, points=spec.points[:1], seeds=[0])
    >>> result = run_sweep(spec, tempfile.mkdtemp(), workers=1)
    >>> layers, sv, curves, levels = dnc_runs(result.spec.tasks(result.out_dir))
    >>> sorted(sv), curves["epoch"].tolist(), levels.classes
    ([2, 3, 4], [0, 1, 2], 10)
    """
    from deepcollapse.analysis.tables import final_singular_values, layer_metrics_frame, read_jsonl

    layers: list[pd.DataFrame] = []
    curves: list[pd.DataFrame] = []
    sv_acc: dict[int, list[np.ndarray]] = {}
    levels = None
    for t in tasks:
        df = layer_metrics_frame(t.out_dir, x="epoch")
        if df.empty:
            continue
        layers.append(df.assign(run=t.config["seed"]))
        recs = read_jsonl(Path(t.out_dir) / "metrics.jsonl")
        curves.append(
            pd.DataFrame({"epoch": [r["epoch"] for r in recs], "loss": [r.get("loss") for r in recs]}).assign(
                run=t.config["seed"]
            )
        )
        for layer, arr in final_singular_values(t.out_dir, kind="pre", x="epoch").items():
            sv_acc.setdefault(layer, []).append(arr)
        levels = theory_levels(t.config, int(t.config["n"]) * 10)
    if not layers:
        return None
    sv = {k: np.vstack(v) for k, v in sorted(sv_acc.items()) if int(k) >= 2}
    return pd.concat(layers, ignore_index=True), sv, pd.concat(curves, ignore_index=True), levels


def _dnc_body(row: NetFigure) -> Any:
    def body(ctx: Context) -> None:
        from deepcollapse.analysis.net_real_plots import plot_dnc_panels

        result = ctx.sweep(figure_spec(row, ctx.smoke), "net")
        name = ctx.experiment.name
        levels_rows = []
        for reg in REGS:
            tasks = [t for t in result.spec.tasks(result.out_dir) if t.config["reg"] == reg]
            runs = dnc_runs(tasks)
            if runs is None:
                continue
            curves, levels = runs[2], runs[3]
            fig = plot_dnc_panels(*runs)
            lam = tasks[0].config["lam"]
            caption = (
                f"{'DUFM-like' if reg == 'dufm' else 'Standard'} regularisation, λ = {lam}: "
                "DNC1 of every post-ReLU head feature H_l over the epochs, "
                "singular values of M~_l at the end "
                f"(normalised by the largest), mean ± std over {len(tasks)} seeds"
            )
            if levels is not None:
                caption += (
                    "; right: training loss against L_DNC and L_SRG from the theory engine at "
                    f"K = {levels['classes']}, L = {levels['layers']}, n = {levels['n']}, "
                    f"λ_H1 = {levels['lam_h']:.3g}, λ_W = {lam}"
                )
                levels_rows.append(
                    {
                        "reg": reg,
                        "K": levels["classes"],
                        "L": levels["layers"],
                        "n": levels["n"],
                        "lam_h": levels["lam_h"],
                        "lam_w": lam,
                        "L_DNC": levels["loss_dnc"],
                        "L_SRG": levels["loss_srg"],
                        "srg_construction": levels["srg_construction"],
                        "final_loss_mean": float(curves.groupby("run")["loss"].last().mean()),
                    }
                )
            ctx.report.section(f"Collapse in the head ({reg})")
            ctx.figure(fig, f"{name}_{reg}", caption + ".")
        if levels_rows:
            ctx.table(
                pd.DataFrame(levels_rows), f"{name}_theory", "Final training loss against the theory levels."
            )
        runs = rank_table(result)
        ctx.table(
            runs, f"{name}_runs", "Per run (last evaluation): accuracies, loss, rank of every head feature."
        )

    return body


def _settings_text(row: NetFigure) -> str:
    base = ", ".join(f"{k} = {v}" for k, v in row.base.items() if k not in ("threads", "device"))
    grid = "; ".join(", ".join(f"{k} = {v}" for k, v in p.items()) for p in row.points)
    return f"{base}; {grid}; {row.seeds} seeds (smoke: {row.smoke_seeds}, grid ends only)"


for _row in NET_FIGURES.values():
    if _row.base.get("backbone") == "mlp":
        register(
            Experiment(
                _row.name,
                _row.paper,
                _row.figure,
                _row.what,
                _settings_text(_row),
                _row.runtime,
                "net",
                _dnc_body(_row) if _row.kind == "dnc" else _rank_body(_row),
            )
        )
