"""Figures of the basin atlas (:mod:`deepcollapse.experiments.basins`): P(class) curves and maps with binomial
Wilson 95% intervals, and the distribution of the final loss over the reference loss.

Every function takes the tables of :func:`~deepcollapse.experiments.basins.class_probabilities` (columns
``p_<class>``, ``p_<class>_lo``, ``p_<class>_hi``, ``n_runs``) or the per-run table, and returns
``(fig, ax)``; nothing is shown.  Axis labels come from the one table of field names (:mod:`.fields`); a
geometric grid (λ, widths in powers of two) gets a log axis (:func:`.stats.geometric_grid_base`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from deepcollapse.analysis.fields import field_label, field_text
from deepcollapse.analysis.figures import legend_outside, line_styles, new_axes
from deepcollapse.analysis.stats import geometric_grid_base

__all__ = ["CLASS_LABELS", "axis_text", "plot_class_curves", "plot_class_map", "plot_ratio_ecdf"]

#: Legend text of each class (the trainer's labels, :mod:`deepcollapse.dufm.classify`).
CLASS_LABELS = {
    "reaches_dnc": "DNC or heading to DNC",
    "dnc": "DNC",
    "dnc_converging": "heading to DNC",
    "srg_like": "SRG-like",
    "low_rank": "low rank",
    "zero": "zero",
    "not_converged": "not converged",
    "diverged": "diverged",
}


def axis_text(axis: str) -> str:
    """The caption text of an atlas axis (plain Unicode, :func:`.fields.field_text`).

    Parameters
    ----------
    axis : str
        An atlas axis (a column name).

    Returns
    -------
    str
        Its words and symbol, no mathtext.

    Examples
    --------
    >>> axis_text("width")
    'width d_l'
    """
    return field_text(axis)


def _log_axis(ax: Axes, values: np.ndarray, which: str = "x") -> None:
    base = geometric_grid_base(values)
    if base is not None:
        (ax.set_xscale if which == "x" else ax.set_yscale)("log", base=base)
    elif np.allclose(values % 1, 0):
        (ax.xaxis if which == "x" else ax.yaxis).set_major_locator(MaxNLocator(integer=True))


def plot_class_curves(
    table: pd.DataFrame, axis: str, *, ax: Axes | None = None, classes: tuple[str, ...] | None = None
) -> tuple[Figure, Axes]:
    """Fraction of runs in each class against ``axis``, with Wilson 95% error bars.

    Parameters
    ----------
    table : DataFrame
        :func:`~deepcollapse.experiments.basins.class_probabilities` grouped by ``axis``.
    axis : str
        The swept column (``width``, ``lam``, ``lr``, ``init_factor``, ``classes``, ``layers``).
    ax : Axes, optional
        Draw into it (default: a new figure).
    classes : tuple of str, optional
        The classes drawn (default: ``reaches_dnc`` and every class some run fell in).

    Returns
    -------
    (Figure, Axes)

    Examples
    --------
    >>> import pandas as pd
    >>> from deepcollapse.experiments.basins import class_probabilities
    >>> runs = pd.DataFrame({"width": [4, 4, 8, 8], "lam": [0.01, 0.1, 0.01, 0.1],
    ...                      "classification": ["dnc", "low_rank", "dnc", "dnc"],
    ...                      "loss_over_best": [1.0, 1.2, 1.0, 0.99]})
    >>> fig, ax = plot_class_curves(class_probabilities(runs, ["width"]), "width")
    >>> len(fig.axes), ax.get_title(), len(ax.containers)  # reaches_dnc, dnc, low_rank
    (1, '2 runs per point', 3)
    """
    fig, ax = new_axes(ax, figsize=(6.0, 3.6))
    df = table.sort_values(axis)
    xs = df[axis].astype(float).to_numpy()
    if classes is None:
        classes = ("reaches_dnc",) + tuple(
            c for c in CLASS_LABELS if c != "reaches_dnc" and f"p_{c}" in df and df[f"p_{c}"].max() > 0
        )
    styles = line_styles(len(classes))
    t = np.log(xs) if geometric_grid_base(xs) is not None else xs
    gap = float(np.min(np.diff(np.unique(t)))) if len(np.unique(t)) > 1 else 1.0
    for i, (c, st) in enumerate(zip(classes, styles)):
        p, lo, hi = (df[f"p_{c}{s}"].to_numpy(dtype=float) for s in ("", "_lo", "_hi"))
        off = (i - (len(classes) - 1) / 2) * 0.06 * gap  # dodge so the error bars do not hide each other
        x = np.exp(t + off) if geometric_grid_base(xs) is not None else t + off
        ls = "-" if c == "reaches_dnc" else "--"
        ax.errorbar(x, p, yerr=np.vstack([p - lo, hi - p]), capsize=3, ls=ls, label=CLASS_LABELS[c], **st)
    ax.set_ylim(-0.04, 1.04)
    _log_axis(ax, xs)
    ax.set_xlabel(field_label(axis))
    ax.set_ylabel("fraction of runs")
    n = df["n_runs"].to_numpy()
    ax.set_title(
        f"{int(n.min())}–{int(n.max())} runs per point"
        if n.min() != n.max()
        else f"{int(n[0])} runs per point",
        fontsize=9,
    )
    legend_outside(ax)
    return fig, ax


def plot_class_map(
    table: pd.DataFrame,
    x: str,
    y: str,
    cls: str = "reaches_dnc",
    *,
    ax: Axes | None = None,
    title: str | None = None,
) -> tuple[Figure, Axes]:
    """A heat map of ``P(cls)`` over two axes, each cell annotated ``p [lo, hi]`` (Wilson 95%).

    Parameters
    ----------
    table : DataFrame
        :func:`~deepcollapse.experiments.basins.class_probabilities` grouped by ``[x, y]``.
    x, y : str
        The two axes (columns).
    cls : str
        The class (``reaches_dnc``: dnc or dnc_converging).
    ax : Axes, optional
        Draw into it.
    title : str, optional
        The axes' title (default: ``P(class)`` over the two axes, with the number of runs per cell).

    Returns
    -------
    (Figure, Axes)
        The figure holds the map's axes and its colour bar.

    Examples
    --------
    >>> import pandas as pd
    >>> from deepcollapse.experiments.basins import class_probabilities
    >>> runs = pd.DataFrame({"width": [4, 4, 8, 8], "lam": [0.01, 0.1, 0.01, 0.1],
    ...                      "classification": ["dnc", "low_rank", "dnc", "dnc"],
    ...                      "loss_over_best": [1.0, 1.2, 1.0, 0.99]})
    >>> fig, ax = plot_class_map(class_probabilities(runs, ["width", "lam"]), "width", "lam", "dnc")
    >>> len(fig.axes), len(ax.texts)
    (2, 4)
    """
    fig, ax = new_axes(ax, figsize=(5.6, 4.2))
    if title is None:
        runs = table["n_runs"] if "n_runs" in table else None
        per_cell = "" if runs is None else f", {int(runs.min())}–{int(runs.max())} runs per cell"
        if runs is not None and int(runs.min()) == int(runs.max()):
            per_cell = f", {int(runs.min())} runs per cell"
        title = f"P({CLASS_LABELS.get(cls, cls)}) over {field_text(x)} × {field_text(y)}{per_cell}"
    ax.set_title(title, fontsize=9)
    xv = np.sort(table[x].unique())
    yv = np.sort(table[y].unique())
    P = np.full((len(yv), len(xv)), np.nan)
    for _, r in table.iterrows():
        i, j = int(np.searchsorted(yv, r[y])), int(np.searchsorted(xv, r[x]))
        P[i, j] = r[f"p_{cls}"]
        ax.text(
            j,
            i,
            f"{r[f'p_{cls}']:.2f}\n[{r[f'p_{cls}_lo']:.2f}, {r[f'p_{cls}_hi']:.2f}]",
            ha="center",
            va="center",
            fontsize=7,
            color="white" if r[f"p_{cls}"] < 0.5 else "black",
        )
    im = ax.imshow(P, origin="lower", vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(xv)), [f"{v:g}" for v in xv])
    ax.set_yticks(range(len(yv)), [f"{v:g}" for v in yv])
    ax.set_xlabel(field_label(x))
    ax.set_ylabel(field_label(y))
    fig.colorbar(im, ax=ax, label=f"P({CLASS_LABELS.get(cls, cls)})")
    return fig, ax


def plot_ratio_ecdf(runs: pd.DataFrame, axis: str, *, ax: Axes | None = None) -> tuple[Figure, Axes]:
    """Empirical CDF of ``loss_over_best`` (final loss / reference loss) per value of ``axis``, with a dotted
    line at 1 (as low as the reference; runs left of it went below it).

    Parameters
    ----------
    runs : DataFrame
        Per-run rows (:func:`~deepcollapse.experiments.basins.basin_rows`) of one slice.
    axis : str
        The column whose values get one curve each.
    ax : Axes, optional
        Draw into it.

    Returns
    -------
    (Figure, Axes)

    Examples
    --------
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"width": [4, 4, 8, 8], "loss_over_best": [1.0, 1.2, 1.0, 0.99]})
    >>> fig, ax = plot_ratio_ecdf(runs, "width")
    >>> len(fig.axes), len(ax.lines)  # two curves and the line at 1
    (1, 3)
    """
    fig, ax = new_axes(ax, figsize=(6.0, 3.6))
    values = sorted(runs[axis].unique())
    for v, st in zip(values, line_styles(len(values))):
        r = np.sort(runs.loc[runs[axis] == v, "loss_over_best"].to_numpy(dtype=float))
        r = r[np.isfinite(r)]
        if r.size == 0:
            continue
        kw: dict[str, Any] = {"color": st["color"]}
        ax.step(r, np.arange(1, r.size + 1) / r.size, where="post", label=f"{field_text(axis)} = {v:g}", **kw)
    ax.axvline(1.0, color="0.4", lw=0.8, ls=":")
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("final loss / reference loss")
    ax.set_ylabel("fraction of runs ≤ x")
    legend_outside(ax)
    return fig, ax
