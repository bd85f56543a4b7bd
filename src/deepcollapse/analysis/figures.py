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
    "BOUNDED",
    "LABELS",
    "L_DNC",
    "L_SRG",
    "axis_label",
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


#: How L_DNC and L_SRG are typeset in every figure (mathtext; upright subscripts).
L_DNC = r"$L_{\mathrm{DNC}}$"
L_SRG = r"$L_{\mathrm{SRG}}$"

#: Axis labels in words and symbols for the table columns figures plot (fallback: the column name).
LABELS: dict[str, str] = {
    "lam": "weight decay λ (every parameter)",
    "lam_h": r"feature decay $\lambda_{H_1}$",
    "width": r"width $d_l$",
    "classes": "classes K",
    "layers": "layers L",
    "mean_rank": r"average rank of $M_2, \ldots, M_{L-1}$",
    "is_dnc": "P(DNC)",
    "reaches_dnc": "P(DNC or heading to DNC)",
    "below_dnc": f"P(loss < {L_DNC})",
    "final_loss": "final training loss",
    "loss": "training loss",
    "dnc1": r"DNC1 = tr$(\Sigma_W)$ / tr$(\Sigma_B)$",
    "train_acc": "training accuracy",
    "test_acc": "test accuracy",
    "step": "gradient step",
    "epoch": "epoch",
}

#: Quantities bounded in [0, 1]: their bands are clipped to the bounds (a ± std band would leave them).
BOUNDED = ("is_dnc", "reaches_dnc", "below_dnc", "train_acc", "test_acc", "diverged")


def axis_label(name: str) -> str:
    """The label of a plotted column: words and symbols (``LABELS``), else the column name."""
    return LABELS.get(name, name)


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
    """A mean curve with a ± ``std`` band; ``bounds=(lo, hi)`` clips the band to the quantity's range."""
    bounds = kwargs.pop("bounds", None)
    fig, ax = new_axes(ax)
    xs, m = np.asarray(x, dtype=float), np.asarray(mean, dtype=float)
    (line,) = ax.plot(xs, m, label=label, color=color, **kwargs)
    if std is not None:
        s = np.nan_to_num(np.asarray(std, dtype=float))
        lo, hi = m - s, m + s
        if bounds is not None:
            lo, hi = np.clip(lo, *bounds), np.clip(hi, *bounds)
        ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.25, linewidth=0)
    return fig, ax


def _log_band(
    ax: Axes,
    x: np.ndarray,
    m: np.ndarray,
    s: np.ndarray,
    label: str,
    upper: float | None = None,
    **kwargs: Any,
) -> None:
    """Draw ``10**m`` with the band ``10**(m ± s)`` (``m``, ``s``: mean and std of log10 values), the band's
    top clipped at ``upper`` (e.g. 1 for singular values divided by the largest)."""
    (line,) = ax.plot(x, 10.0**m, label=label, **kwargs)
    hi = 10.0 ** (m + s) if upper is None else np.minimum(10.0 ** (m + s), upper)
    ax.fill_between(x, 10.0 ** (m - s), hi, color=line.get_color(), alpha=0.25, linewidth=0)


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
    label: str = "GD (mean ± std over seeds)",
    logy: bool = True,
    zoom: bool = True,
) -> tuple[Figure, Axes]:
    """Training loss over steps (mean ± std over runs) against the L_DNC and L_SRG levels (2024 Fig. 2 left).

    ``curves``: columns ``step``, ``run`` and ``y``.  ``zoom`` limits the y-axis to the region around the
    theory levels and the end of the curve: from 0.9 × the lowest of the levels and the curve, up to the
    largest of max(0.6, 1.5 × L_DNC) and 1.1 × the curve's last half (so a short run that has not come down
    yet, e.g. a smoke run, is still seen), cutting the first steps' large losses.  On a log axis the band is
    geometric (mean ± std of log10), so it stays positive.
    """
    fig, ax = new_axes(ax)
    data = curves.dropna(subset=[y])
    if logy:
        logged = data.assign(**{y: np.log10(data[y].astype(float).clip(lower=1e-300))})
        stats = _mean_std(logged, "step", y)
        _log_band(ax, stats["step"].to_numpy(), stats["mean"].to_numpy(), stats["std"].to_numpy(), label)
        mean = 10.0 ** stats["mean"]
    else:
        stats = _mean_std(data, "step", y)
        plot_band(stats["step"], stats["mean"], stats["std"], ax=ax, label=label)
        mean = stats["mean"]
    if loss_dnc is not None and np.isfinite(loss_dnc):
        ax.axhline(loss_dnc, color="tab:red", linestyle="--", label=f"{L_DNC} = {loss_dnc:.4f}")
    if loss_srg is not None and np.isfinite(loss_srg):
        ax.axhline(loss_srg, color="tab:green", linestyle=":", label=f"{L_SRG} = {loss_srg:.4f}")
    if logy:
        ax.set_yscale("log")
    levels = [v for v in (loss_dnc, loss_srg) if v is not None and np.isfinite(v)]
    finite = mean[np.isfinite(mean)].to_numpy()
    if levels and zoom and len(finite):  # the papers' view: the converged region, not the first steps
        tail = finite[len(finite) // 2 :]
        low = min([*levels, float(finite.min())])
        ax.set_ylim(0.9 * low, max(0.6, 1.5 * max(levels), 1.1 * float(tail.max())))
    ax.set_xlabel("gradient step")
    ax.set_ylabel("training loss (eq. (1))")
    ax.legend(fontsize=8)
    return fig, ax


def plot_loss_parts(
    curve: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None
) -> tuple[Figure, Axes]:
    """Loss of one run over steps, decomposed into fit and regularisation terms (2024 Figs. 5, 7, 8)."""
    fig, ax = new_axes(ax)
    names = {"loss": "loss (eq. (1))", "fit": r"fit $\|W_L H_L - Y\|_F^2 / (2N)$", "reg": "regularisation"}
    for col, style in (("loss", "-"), ("fit", "--"), ("reg", ":")):
        if col in curve:
            ax.plot(curve["step"], curve[col], style, label=names[col])
    ax.set_yscale("log")
    ax.set_xlabel("gradient step")
    ax.set_ylabel("loss and its parts")
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
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(axis_label(metric))
    ax.legend(fontsize=8)
    return fig, ax


def plot_singular_values(
    values: Mapping[Any, np.ndarray],
    *,
    ax: Axes | None = None,
    normalize: bool = True,
    logy: bool = True,
    label_fmt: str = "layer {}",
    rank_rtol: float = 1e-3,
) -> tuple[Figure, Axes]:
    """Singular values of the class-mean matrices at convergence, mean ± std over runs per layer (2024 Fig. 2
    right, Fig. 4 middle, Fig. 6).  ``values[layer]``: array ``(runs, k)`` in decreasing order; ``normalize``
    divides each run's values by its largest one.

    Runs of different numerical rank (σ_i / σ_1 > ``rank_rtol``) are not averaged into one curve: each rank
    gets its own curve, labelled with the rank and the number of runs.  The band of normalised values is
    clipped at 1 (their bound)."""
    fig, ax = new_axes(ax)
    for layer, arr in values.items():
        a = np.atleast_2d(np.asarray(arr, dtype=float))
        top = a[:, :1]
        rel = np.divide(a, top, out=np.zeros_like(a), where=top > 0)
        ranks = (rel > rank_rtol).sum(axis=1)
        groups = sorted(set(int(r) for r in ranks))
        for r in groups:
            g = (rel if normalize else a)[ranks == r]
            if logy:  # geometric band; exact zeros shown at the floor 1e-16
                g = np.log10(np.maximum(g, 1e-16))
            m, s = g.mean(0), (g.std(0, ddof=1) if g.shape[0] > 1 else np.zeros(g.shape[1]))
            idx = np.arange(1, g.shape[1] + 1)
            label = label_fmt.format(layer)
            if len(groups) > 1:
                label += f" (rank {r}, {g.shape[0]} run{'s' if g.shape[0] > 1 else ''})"
            if logy:
                upper = 1.0 if normalize else None
                _log_band(ax, idx, m, s, label=label, upper=upper, marker="o", markersize=3)
            else:
                bounds = (0.0, 1.0) if normalize else None
                plot_band(idx, m, s, ax=ax, label=label, marker="o", markersize=3, bounds=bounds)
    if logy:
        ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("index i")
    ax.set_ylabel(r"singular value $\sigma_i$" + (r" / $\sigma_1$" if normalize else ""))
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
    ``log2x`` puts ``x`` on a base-2 logarithmic axis (ticks 2^k), as the papers do for weight decay.  The
    band of a quantity bounded in [0, 1] (``BOUNDED``) is clipped to [0, 1].
    """
    fig, ax = new_axes(ax)
    df = summary.sort_values(x)
    xs = df[x].astype(float)
    std = df[f"{y}_std"] if band and f"{y}_std" in df else None
    bounds = (0.0, 1.0) if y in BOUNDED else None
    plot_band(xs, df[f"{y}_mean"], std, ax=ax, label=label, marker="o", bounds=bounds)
    if log2x:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(ylabel or axis_label(y))
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
