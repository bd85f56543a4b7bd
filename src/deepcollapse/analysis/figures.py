"""Matplotlib figures matching the panels of the papers.

Every ``plot_*`` function takes data (arrays / pandas frames built by :mod:`deepcollapse.analysis.tables`) and
an optional ``ax``; it draws into ``ax`` (or a new figure) and returns ``(fig, ax)``.  Figures are created
with ``matplotlib.figure.Figure`` (no pyplot state, so the global backend is never touched: saving renders
with the Agg canvas; never ``plt.show()``); ``save_figure`` writes PNG and PDF.  Confidence bands are ± one
standard deviation over runs (seeds), as in the papers; on logarithmic axes (DNC1, singular values: quantities
spanning many decades) the band is ± one standard deviation of the log10 values, i.e. a geometric band around
the geometric mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from numpy.typing import ArrayLike

__all__ = [
    "new_axes",
    "plot_band",
    "plot_layer_metric",
    "plot_loss_curves",
    "plot_loss_parts",
    "plot_matrix",
    "plot_singular_values",
    "plot_sweep_curve",
    "save_figure",
]


def new_axes(ax: Axes | None = None, figsize: tuple[float, float] = (4.8, 3.6)) -> tuple[Figure, Axes]:
    """``(ax.figure, ax)`` or a new single-axes figure (no pyplot involved)."""
    if ax is not None:
        return ax.figure, ax  # type: ignore[return-value]
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot(1, 1, 1)


def save_figure(fig: Figure, out_dir: str | Path, name: str, dpi: int = 130) -> tuple[Path, Path]:
    """Write ``name.png`` and ``name.pdf`` into ``out_dir``; return both paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    png, pdf = out / f"{name}.png", out / f"{name}.pdf"
    fig.savefig(png, dpi=dpi)
    fig.savefig(pdf)
    return png, pdf


def plot_band(
    x: ArrayLike,
    mean: ArrayLike,
    std: ArrayLike | None = None,
    *,
    ax: Axes | None = None,
    label: str | None = None,
    color: Any = None,
    **kwargs: Any,
) -> tuple[Figure, Axes]:
    """A mean curve with a ± ``std`` band."""
    fig, ax = new_axes(ax)
    xs, m = np.asarray(x, dtype=float), np.asarray(mean, dtype=float)
    (line,) = ax.plot(xs, m, label=label, color=color, **kwargs)
    if std is not None:
        s = np.nan_to_num(np.asarray(std, dtype=float))
        ax.fill_between(xs, m - s, m + s, color=line.get_color(), alpha=0.25, linewidth=0)
    return fig, ax


def _log_band(ax: Axes, x: np.ndarray, m: np.ndarray, s: np.ndarray, label: str, **kwargs: Any) -> None:
    """Draw ``10**m`` with the band ``10**(m ± s)`` (``m``, ``s``: mean and std of log10 values)."""
    (line,) = ax.plot(x, 10.0**m, label=label, **kwargs)
    ax.fill_between(x, 10.0 ** (m - s), 10.0 ** (m + s), color=line.get_color(), alpha=0.25, linewidth=0)


def _mean_std(frame: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    g = frame.groupby(x)[y]
    return pd.DataFrame({"mean": g.mean(), "std": g.std(ddof=1).fillna(0.0)}).reset_index()


def plot_loss_curves(
    curves: pd.DataFrame,
    loss_dnc: float | None = None,
    loss_srg: float | None = None,
    *,
    ax: Axes | None = None,
    y: str = "loss",
    label: str = "GD (mean ± std)",
    logy: bool = True,
    zoom: bool = True,
) -> tuple[Figure, Axes]:
    """Training loss over steps (mean ± std over runs) against the L_DNC and L_SRG levels (2024 Fig. 2 left).

    ``curves``: columns ``step``, ``run`` and ``y``.  ``zoom`` limits the y-axis to the region around the
    theory levels (from 0.9 × the lowest of them and of the curve, up to max(0.6, 1.5 × L_DNC)), cutting the
    first steps' large losses.
    """
    fig, ax = new_axes(ax)
    stats = _mean_std(curves.dropna(subset=[y]), "step", y)
    plot_band(stats["step"], stats["mean"], stats["std"], ax=ax, label=label)
    if loss_dnc is not None and np.isfinite(loss_dnc):
        ax.axhline(loss_dnc, color="tab:red", linestyle="--", label=f"$L_{{DNC}}$ = {loss_dnc:.4f}")
    if loss_srg is not None and np.isfinite(loss_srg):
        ax.axhline(loss_srg, color="tab:green", linestyle=":", label=f"$L_{{SRG}}$ = {loss_srg:.4f}")
    if logy:
        ax.set_yscale("log")
    levels = [v for v in (loss_dnc, loss_srg) if v is not None and np.isfinite(v)]
    if (
        levels and zoom
    ):  # the papers' view: the converged region around the theory levels, not the first steps
        finite = stats["mean"][np.isfinite(stats["mean"])]
        low = min([*levels, float(finite.min())]) if len(finite) else min(levels)
        ax.set_ylim(0.9 * low, max(0.6, 1.5 * max(levels)))
    ax.set_xlabel("gradient step")
    ax.set_ylabel("training loss")
    ax.legend(fontsize=8)
    return fig, ax


def plot_loss_parts(
    curve: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None
) -> tuple[Figure, Axes]:
    """Loss of one run over steps, decomposed into fit and regularisation terms (2024 Figs. 5, 7, 8)."""
    fig, ax = new_axes(ax)
    for col, style in (("loss", "-"), ("fit", "--"), ("reg", ":")):
        if col in curve:
            ax.plot(curve["step"], curve[col], style, label=col)
    ax.set_yscale("log")
    ax.set_xlabel("gradient step")
    ax.set_ylabel("loss")
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=9)
    return fig, ax


def plot_layer_metric(
    frame: pd.DataFrame,
    metric: str = "dnc1",
    *,
    x: str = "step",
    kind: str = "post",
    ax: Axes | None = None,
    logy: bool = True,
) -> tuple[Figure, Axes]:
    """A per-layer metric over training, one curve (mean ± std over runs) per layer (2024 Fig. 2 middle, Fig.
    4 left).  ``frame``: long table with columns ``x``, ``run``, ``layer``, ``kind``, ``metric``."""
    fig, ax = new_axes(ax)
    df = frame[frame["kind"] == kind] if "kind" in frame else frame
    for layer, sub in df.groupby("layer"):
        sub = sub.dropna(subset=[metric]).copy()
        if logy:  # geometric band: mean ± std of log10 (these metrics span many decades)
            sub[metric] = np.log10(sub[metric].astype(float).clip(lower=1e-300))
        stats = _mean_std(sub, x, metric)
        m, s = stats["mean"].to_numpy(), stats["std"].to_numpy()
        if logy:
            _log_band(ax, stats[x].to_numpy(), m, s, label=f"layer {layer}")
        else:
            plot_band(stats[x], m, s, ax=ax, label=f"layer {layer}")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("gradient step" if x == "step" else x)
    ax.set_ylabel(metric.upper() if metric == "dnc1" else metric)
    ax.legend(fontsize=8)
    return fig, ax


def plot_singular_values(
    values: Mapping[Any, np.ndarray],
    *,
    ax: Axes | None = None,
    normalize: bool = True,
    logy: bool = True,
    label_fmt: str = "layer {}",
) -> tuple[Figure, Axes]:
    """Singular values of the class-mean matrices at convergence, one curve (mean ± std over runs) per layer
    (2024 Fig. 2 right, Fig. 4 middle, Fig. 6).  ``values[layer]``: array ``(runs, k)`` in decreasing order;
    ``normalize`` divides each run's values by its largest one."""
    fig, ax = new_axes(ax)
    for layer, arr in values.items():
        a = np.atleast_2d(np.asarray(arr, dtype=float))
        if normalize:
            top = a[:, :1]
            a = np.divide(a, top, out=np.zeros_like(a), where=top > 0)
        if logy:  # geometric band; exact zeros shown at the floor 1e-16
            a = np.log10(np.maximum(a, 1e-16))
        m, s = a.mean(0), (a.std(0, ddof=1) if a.shape[0] > 1 else np.zeros(a.shape[1]))
        idx = np.arange(1, a.shape[1] + 1)
        if logy:
            _log_band(ax, idx, m, s, label=label_fmt.format(layer), marker="o", markersize=3)
        else:
            plot_band(idx, m, s, ax=ax, label=label_fmt.format(layer), marker="o", markersize=3)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("index")
    ax.set_ylabel("singular value" + (" / largest" if normalize else ""))
    ax.legend(fontsize=8)
    return fig, ax


def plot_sweep_curve(
    summary: pd.DataFrame,
    x: str,
    y: str,
    *,
    ax: Axes | None = None,
    log2x: bool = False,
    label: str | None = None,
    ylabel: str | None = None,
    band: bool = True,
) -> tuple[Figure, Axes]:
    """``y`` (mean ± std over seeds) against a swept parameter ``x`` (2024 Fig. 3 middle and right, Figs. 9,
    10).

    ``summary``: one row per point with columns ``x``, ``<y>_mean`` and ``<y>_std`` (see ``aggregate_runs``).
    ``log2x`` plots against log2(x), as the papers do for weight decay.
    """
    fig, ax = new_axes(ax)
    df = summary.sort_values(x)
    xs = np.log2(df[x].astype(float)) if log2x else df[x].astype(float)
    std = df[f"{y}_std"] if band and f"{y}_std" in df else None
    plot_band(xs, df[f"{y}_mean"], std, ax=ax, label=label, marker="o")
    ax.set_xlabel(f"log2({x})" if log2x else x)
    ax.set_ylabel(ylabel or y)
    if label:
        ax.legend(fontsize=8)
    return fig, ax


def plot_matrix(
    M: np.ndarray,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    cmap: str = "viridis",
    symmetric: bool = False,
) -> tuple[Figure, Axes]:
    """A heat map of a class-mean matrix or Gram matrix (2024 Figs. 1, 4 right, 5–8).  ``symmetric`` centres
    the colour scale at 0 (for matrices with negative entries, e.g. pre-ReLU class means)."""
    fig, ax = new_axes(ax, figsize=(3.6, 3.2))
    A = np.asarray(M, dtype=float)
    kw: dict[str, Any] = {"cmap": cmap}
    if symmetric:
        v = float(np.max(np.abs(A))) or 1.0
        kw.update(cmap="RdBu_r", vmin=-v, vmax=v)
    im = ax.imshow(A, aspect="auto", interpolation="nearest", **kw)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.colorbar(im, ax=ax, shrink=0.8)
    if title:
        ax.set_title(title, fontsize=9)
    ax.set_xlabel("class")
    return fig, ax
