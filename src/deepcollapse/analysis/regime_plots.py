"""Figures of the network regime map (:mod:`deepcollapse.experiments.net_regime_map`): the outcome map (one
colour per outcome, the seeds' agreement written in every cell) and maps of one number per cell (ranks, Gram
distances), with the paper's settings marked.

Every function takes the per-cell table of :func:`~deepcollapse.experiments.regime_map.cell_table` (columns
``lam``, ``lr``, ``width``, ``outcome``, ``agreement``, ``seeds``, ``p_<label>`` ...) and returns the figure;
nothing is shown.  The grid's cells are equally spaced, so a geometric grid (the maps' λ and η grow by a
constant factor) is drawn on a log scale: the tick labels are the values and the axis labels say so.  A head
``width`` axis (the GPU variant) and convention ``variant`` s give one panel per width and variant.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from deepcollapse.analysis.stats import geometric_grid_base

__all__ = ["OUTCOME_COLOURS", "OUTCOME_TEXT", "plot_norm_curves", "plot_outcome_map", "plot_value_map"]

#: Legend text of each network outcome (:data:`deepcollapse.nets.outcome.OUTCOMES`).
OUTCOME_TEXT = {
    "dnc": "DNC",
    "srg_like": "SRG-like",
    "low_rank": "low rank",
    "full_rank": "full rank, not DNC",
    "zero": "zero output",
    "constant": "constant output (≠ 0)",
    "not_converged": "not converged",
    "diverged": "diverged",
}
#: One distinct colour per outcome (colour-blind-safe Okabe–Ito palette, grey for "not converged").
OUTCOME_COLOURS = {
    "dnc": "#0072B2",
    "srg_like": "#CC79A7",
    "low_rank": "#009E73",
    "full_rank": "#56B4E9",
    "zero": "#E69F00",
    "constant": "#F0E442",
    "not_converged": "#999999",
    "diverged": "#D55E00",
}

#: The outcome's name written inside a cell.
_SHORT = {
    "dnc": "DNC",
    "srg_like": "SRG-like",
    "low_rank": "low rank",
    "full_rank": "full rank",
    "zero": "zero",
    "constant": "constant",
    "not_converged": "not conv.",
    "diverged": "diverged",
}

Mark = tuple[str, float, float]  # (label, λ, η)


def _axis_title(name: str, values: np.ndarray) -> str:
    symbol = {"lam": "weight decay λ", "lr": "learning rate η"}[name]
    base = geometric_grid_base(values)
    if base is not None and len(values) > 1:
        factor = float(np.exp(np.median(np.diff(np.log(np.sort(values))))))
        return f"{symbol} (log scale, ×{factor:.3g} per cell)"
    return symbol


def _position(values: np.ndarray, v: float) -> float | None:
    """Fractional cell index of ``v`` on an equally spaced (log) axis; ``None`` outside the grid's range
    ``[min, max]`` (the rule of :func:`~deepcollapse.experiments.regime_location.locate`, so a setting the
    report calls outside the grid is not drawn on it)."""
    vs = np.sort(values)
    lo, hi = float(vs[0]), float(vs[-1])
    if not (lo <= v <= hi or math.isclose(v, lo, rel_tol=1e-9) or math.isclose(v, hi, rel_tol=1e-9)):
        return None
    if len(vs) == 1:
        return 0.0
    return float(np.interp(math.log(v), np.log(vs), np.arange(len(vs))))


def _panels(cells: pd.DataFrame, title: str, per_panel: tuple[float, float]) -> tuple[Figure, list, list]:
    keys = ["width", *(["variant"] if "variant" in cells else [])]
    groups = [(_panel_title(dict(zip(keys, key))), sub) for key, sub in cells.groupby(keys, sort=False)]
    cols = min(len(groups), 4)
    rows = -(-len(groups) // cols)
    fig = Figure(figsize=(per_panel[0] * cols + 0.6, per_panel[1] * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[len(groups) :]:
        ax.set_visible(False)
    chars = max(36, int(11 * fig.get_figwidth()))  # what fits at 10 pt
    fig.suptitle(textwrap.fill(title, chars), fontsize=10)
    return fig, list(axes), groups


def _panel_title(key: dict) -> str:
    text = f"head width {int(key['width'])}"
    return text + (f", {key['variant']}" if key.get("variant") else "")


def _shown(marks: Sequence[Mark], lams: np.ndarray, lrs: np.ndarray) -> list[Mark]:
    """The marks inside the grid: those drawn, and so those the legend names."""
    return [m for m in marks if _position(lams, m[1]) is not None and _position(lrs, m[2]) is not None]


def _frame(ax, lams: np.ndarray, lrs: np.ndarray, marks: Sequence[Mark], title: str) -> None:
    ax.set_xticks(range(len(lams)), [f"{v:g}" for v in lams], rotation=30, fontsize=8)
    ax.set_yticks(range(len(lrs)), [f"{v:g}" for v in lrs], fontsize=8)
    ax.set_xlabel(_axis_title("lam", lams), fontsize=9)
    ax.set_ylabel(_axis_title("lr", lrs), fontsize=9)
    ax.set_title(title, fontsize=9)
    ax.set_xlim(-0.5, len(lams) - 0.5)
    ax.set_ylim(-0.5, len(lrs) - 0.5)
    for k, (label, lam, lr) in enumerate(marks):
        x, y = _position(lams, lam), _position(lrs, lr)
        if x is None or y is None:
            continue
        ax.add_patch(
            Rectangle(
                (x - 0.48, y - 0.48),
                0.96,
                0.96,
                fill=False,
                edgecolor="black",
                linewidth=2.2,
                linestyle=("-", "--", ":")[k % 3],
                label=label,
            )
        )


def plot_outcome_map(cells: pd.DataFrame, marks: Sequence[Mark] = (), *, title: str | None = None) -> Figure:
    """Outcome map: each cell coloured by its most frequent outcome, with ``k/S`` (seeds in it / seeds) and
    the other outcomes' counts written in it; a cell where the seeds disagree is hatched.

    Parameters
    ----------
    cells : DataFrame
        :func:`~deepcollapse.experiments.regime_map.cell_table`.
    marks : sequence of (label, λ, η)
        Settings outlined on the map (the paper's); one outside the grid (``[min, max]`` of each axis) is left
        out, of the legend too.
    title : str, optional
        The figure's title.

    Returns
    -------
    Figure
        One panel per head width (and variant), with the legend of outcomes and marks.

    Examples
    --------
    >>> import pandas as pd
    >>> cells = pd.DataFrame({"lam": [1e-3, 1e-2, 1e-3, 1e-2], "lr": [0.01, 0.01, 0.1, 0.1], "width": 16,
    ...                       "outcome": ["dnc", "dnc", "low_rank", "zero"],
    ...                       "agreement": [1.0, 0.5, 1.0, 1.0],
    ...                       "seeds": 2, "p_dnc": [1.0, 0.5, 0.0, 0.0], "p_low_rank": [0.0, 0.5, 1.0, 0.0],
    ...                       "p_zero": [0.0, 0.0, 0.0, 1.0], "rank_mean": [3.0, 2.5, 2.0, 0.0]})
    >>> fig = plot_outcome_map(cells, [("paper", 1e-3, 0.1)])
    >>> len(fig.axes), len(fig.legends)
    (1, 1)
    """
    labels = list(OUTCOME_COLOURS)
    cmap = ListedColormap([OUTCOME_COLOURS[k] for k in labels])
    lams, lrs = np.sort(cells["lam"].unique()), np.sort(cells["lr"].unique())
    marks = _shown(marks, lams, lrs)
    fig, axes, groups = _panels(cells, title or "Where the network lands", (1.1 * len(lams) + 1.6, 4.2))
    for ax, (panel, sub) in zip(axes, groups):
        grid = np.full((len(lrs), len(lams)), np.nan)
        for _, r in sub.iterrows():
            i, j = int(np.searchsorted(lrs, r["lr"])), int(np.searchsorted(lams, r["lam"]))
            grid[i, j] = labels.index(r["outcome"])
            agree = int(round(r["agreement"] * r["seeds"]))
            others = [
                f"{_SHORT[k]} {int(round(r[f'p_{k}'] * r['seeds']))}"
                for k in labels
                if k != r["outcome"] and r.get(f"p_{k}", 0) > 0
            ]
            text = f"{_SHORT[r['outcome']]}\n{agree}/{int(r['seeds'])}"
            if others:
                text += "\n" + "\n".join(others)
            box = {"boxstyle": "round,pad=0.2", "facecolor": "white", "alpha": 0.75, "linewidth": 0}
            ax.text(j, i, text, ha="center", va="center", fontsize=6.5, color="black", bbox=box, zorder=5)
            if agree < r["seeds"]:
                ax.add_patch(
                    Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="//", linewidth=0, zorder=2)
                )
        ax.imshow(
            grid, origin="lower", cmap=cmap, vmin=-0.5, vmax=len(labels) - 0.5, aspect="auto", alpha=0.8
        )
        _frame(ax, lams, lrs, marks, panel)
    present = [k for k in labels if (cells["outcome"] == k).any()]
    handles: list[Artist] = [Patch(facecolor=OUTCOME_COLOURS[k], alpha=0.8) for k in present]
    handles.append(Patch(facecolor="white", edgecolor="black", hatch="//"))
    handles += [
        Rectangle((0, 0), 1, 1, fill=False, edgecolor="black", linewidth=2, linestyle=("-", "--", ":")[k % 3])
        for k in range(len(marks))
    ]
    names = [OUTCOME_TEXT[k] for k in present] + ["seeds disagree"] + [m[0] for m in marks]
    fig.legend(handles, names, loc="outside right center", fontsize=8, frameon=False)
    return fig


def plot_value_map(
    cells: pd.DataFrame,
    column: str,
    label: str,
    marks: Sequence[Mark] = (),
    *,
    title: str | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
    fmt: str = "{:.2g}",
    cmap: str = "viridis",
) -> Figure:
    """A heat map of one number per cell (``column``: a mean rank, a Gram distance), the value written in
    every cell, with the settings ``marks`` outlined.

    Parameters
    ----------
    cells : DataFrame
        :func:`~deepcollapse.experiments.regime_map.cell_table`.
    column : str
        The cells' column drawn.
    label : str
        The colour bar's label (words and symbols).
    marks : sequence of (label, λ, η)
        Settings outlined (as in :func:`plot_outcome_map`).
    title : str, optional
        The figure's title.
    vmin, vmax : float, optional
        The colour range (default: the data's).
    fmt : str
        Format of the written values.
    cmap : str
        A sequential colour map.

    Returns
    -------
    Figure
        One panel per head width (and variant) and the colour bar.

    Examples
    --------
    >>> import pandas as pd
    >>> cells = pd.DataFrame({"lam": [1e-3, 1e-2, 1e-3, 1e-2], "lr": [0.01, 0.01, 0.1, 0.1], "width": 16,
    ...                       "outcome": ["dnc", "dnc", "low_rank", "zero"],
    ...                       "agreement": [1.0, 0.5, 1.0, 1.0],
    ...                       "seeds": 2, "p_dnc": [1.0, 0.5, 0.0, 0.0], "p_low_rank": [0.0, 0.5, 1.0, 0.0],
    ...                       "p_zero": [0.0, 0.0, 0.0, 1.0], "rank_mean": [3.0, 2.5, 2.0, 0.0]})
    >>> fig = plot_value_map(cells, "rank_mean", "mean rank", fmt="{:.1f}")
    >>> len(fig.axes), [t.get_text() for t in fig.axes[0].texts]
    (2, ['3.0', '2.5', '2.0', '0.0'])
    """
    lams, lrs = np.sort(cells["lam"].unique()), np.sort(cells["lr"].unique())
    marks = _shown(marks, lams, lrs)
    fig, axes, groups = _panels(cells, title or label, (1.0 * len(lams) + 1.4, 4.0))
    values = pd.to_numeric(cells[column], errors="coerce")
    lo = float(np.nanmin(values)) if vmin is None and values.notna().any() else (vmin or 0.0)
    hi = float(np.nanmax(values)) if vmax is None and values.notna().any() else (vmax or 1.0)
    im = None
    for ax, (panel, sub) in zip(axes, groups):
        grid = np.full((len(lrs), len(lams)), np.nan)
        for _, r in sub.iterrows():
            i, j = int(np.searchsorted(lrs, r["lr"])), int(np.searchsorted(lams, r["lam"]))
            v = pd.to_numeric(r[column], errors="coerce")
            grid[i, j] = v
            text = "n/a" if pd.isna(v) else fmt.format(v)
            dark = not pd.isna(v) and hi > lo and (float(v) - lo) / (hi - lo) < 0.5  # viridis: dark low end
            ax.text(j, i, text, ha="center", va="center", fontsize=7.5, color="white" if dark else "black")
        im = ax.imshow(grid, origin="lower", cmap=cmap, vmin=lo, vmax=hi, aspect="auto")
        _frame(ax, lams, lrs, marks, panel)
    if im is not None:
        fig.colorbar(im, ax=[a for a in axes if a.get_visible()], label=label, shrink=0.9)
    if marks:  # named in the title: a figure legend would sit on the title or on a smoke mark below
        boxes = "; ".join(f"{('solid', 'dashed', 'dotted')[k % 3]} box: {m[0]}" for k, m in enumerate(marks))
        chars = max(36, int(11 * fig.get_figwidth()))
        text = textwrap.fill(f"{title or label} ({boxes})", chars, break_on_hyphens=False)
        fig.suptitle(text, fontsize=10)
    return fig


def plot_norm_curves(curves: pd.DataFrame, *, title: str | None = None, by: str = "variant") -> Figure:
    """The mechanism behind a constant or zero head: the norm of the BatchNorm scales and of every head
    layer's weights over training, one colour per ``by`` group (mean over seeds, each seed a thin line).

    Parameters
    ----------
    curves : DataFrame
        :func:`~deepcollapse.experiments.regime_map.norm_curves` (``epoch``, ``bn_scale_norm``, ``W1`` ..).
    title : str, optional
        The figure's title.
    by : str, default "variant"
        The column whose groups get one colour each (e.g. ``variant``, or ``lam``).

    Returns
    -------
    Figure
        One panel for ``‖γ‖`` (where the network has BatchNorm) and one per head layer, log-scale norms.

    Examples
    --------
    >>> import pandas as pd
    >>> curves = pd.DataFrame({"variant": ["a", "a", "b", "b"], "seed": 0, "epoch": [0, 10, 0, 10],
    ...                        "bn_scale_norm": [8.0, 2.0, 8.0, 7.0], "W1": [1.0, 0.2, 1.0, 0.9],
    ...                        "W2": [1.0, 0.3, 1.0, 1.1]})
    >>> fig = plot_norm_curves(curves)
    >>> [ax.get_title() for ax in fig.axes]
    ['BatchNorm scales ‖γ‖₂', 'head layer 1: ‖W_1‖_F', 'head layer 2: ‖W_2‖_F']
    """
    layers = sorted(
        (c for c in curves.columns if c.startswith("W") and c[1:].isdigit()), key=lambda c: int(c[1:])
    )
    has_bn = (
        "bn_scale_norm" in curves and pd.to_numeric(curves["bn_scale_norm"], errors="coerce").notna().any()
    )
    columns = (["bn_scale_norm"] if has_bn else []) + layers
    cols = min(len(columns), 3)
    rows = -(-len(columns) // cols)
    fig = Figure(figsize=(3.4 * cols + 1.8, 2.7 * rows + 0.5), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[len(columns) :]:
        ax.set_visible(False)
    groups = list(curves.groupby(by, sort=False)) if by in curves else [("", curves)]
    palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999"]
    for ax, col in zip(axes, columns):
        for k, (name, sub) in enumerate(groups):
            colour = palette[k % len(palette)]
            for _, seed in sub.groupby("seed"):
                seed = seed.sort_values("epoch")
                ax.plot(seed["epoch"], seed[col], color=colour, linewidth=0.6, alpha=0.45)
            mean = sub.groupby("epoch")[col].mean()
            ax.plot(
                mean.index, mean.values, color=colour, linewidth=1.8, label=str(name) if name != "" else None
            )
        ax.set_yscale("log")
        ax.set_xlabel("epoch", fontsize=9)
        ax.set_ylabel("norm (log scale)", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(True, which="major", alpha=0.3)
        ax.set_title(
            "BatchNorm scales ‖γ‖₂" if col == "bn_scale_norm" else f"head layer {col[1:]}: ‖W_{col[1:]}‖_F",
            fontsize=9,
        )
    if len(groups) > 1:
        handles, labels = axes[0].get_legend_handles_labels()
        legend_title = {"variant": "convention", "lam": "weight decay λ", "lr": "learning rate η"}.get(by, by)
        fig.legend(handles, labels, loc="outside right upper", fontsize=8, frameon=False, title=legend_title)
    if title:
        fig.suptitle(textwrap.fill(title, max(40, int(11 * fig.get_figwidth()))), fontsize=10)
    return fig
