"""Matplotlib figures matching the panels of the papers.

Every ``plot_*`` function takes data (arrays / pandas frames built by :mod:`deepcollapse.analysis.tables`) and
an optional ``ax``; it draws into ``ax`` (or a new figure) and returns ``(fig, ax)``.  Figures are created
with ``matplotlib.figure.Figure`` (no pyplot state, so the global backend is never touched: saving renders
with the Agg canvas; never ``plt.show()``); ``save_figure`` writes PNG and PDF.  Confidence bands are ± one
standard deviation over runs (seeds), as in the papers; on logarithmic axes (DNC1, singular values: quantities
spanning many decades) the band is ± one standard deviation of the log10 values, i.e. a geometric band around
the geometric mean.  Probabilities (one 0/1 outcome per run) get binomial Wilson intervals instead.  Every
line of a panel gets its own colour and marker (:func:`line_styles`); legends sit outside the data area
(:func:`legend_outside`); axis labels come from the one table of field names (:mod:`.fields`).
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

from deepcollapse.analysis.fields import FIELDS, PROBABILITIES, field_label
from deepcollapse.analysis.stats import geometric_grid_base, wilson_interval

__all__ = [
    "SMOKE_MARK",
    "figure_suffixes",
    "mark_smoke",
    "BOUNDED",
    "LABELS",
    "L_DNC",
    "L_SRG",
    "MARKERS",
    "axis_label",
    "legend_outside",
    "line_styles",
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

#: Axis labels of the table columns: the one table of field names (:data:`.fields.FIELDS`), as label strings.
LABELS: dict[str, str] = {name: f.label for name, f in FIELDS.items()}

#: Quantities bounded in [0, 1]: their bands are clipped to the bounds (a ± std band would leave them).
BOUNDED = ("is_dnc", "reaches_dnc", "below_dnc", "train_acc", "test_acc", "diverged")


def axis_label(name: str) -> str:
    """The label of a plotted column in words and symbols (:func:`.fields.field_label`), else its name.

    Parameters
    ----------
    name : str
        A column name.

    Returns
    -------
    str
        Its axis label (mathtext), or ``name`` for a column the table of fields does not know.

    Examples
    --------
    >>> print(axis_label("lam"))
    weight decay $\\lambda$ (every parameter)
    >>> axis_label("my_column")
    'my_column'
    """
    return field_label(name)


#: Markers cycled with the colours, so lines stay apart in grey print and where colours are close.
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p")


def line_styles(count: int) -> list[dict[str, Any]]:
    """``count`` line styles (``color``, ``marker``) with pairwise distinct colours and, up to 12 lines,
    distinct markers: the ``tab10`` colours for up to 10 lines, ``tab20`` up to 20, an even sample of
    ``turbo`` beyond (matplotlib's default cycle repeats after 10, so an 11th line would share a colour).

    Parameters
    ----------
    count : int
        Number of lines.

    Returns
    -------
    list of dict
        Keyword arguments for ``Axes.plot`` (``color`` as an RGBA tuple, ``marker``).

    Examples
    --------
    >>> styles = line_styles(12)
    >>> len({s["color"] for s in styles}), [s["marker"] for s in styles[:3]]
    (12, ['o', 's', '^'])
    """
    import matplotlib

    if count <= 10:
        colors = [matplotlib.colormaps["tab10"](i) for i in range(count)]
    elif count <= 20:
        colors = [matplotlib.colormaps["tab20"](i) for i in range(count)]
    else:
        colors = [matplotlib.colormaps["turbo"](x) for x in np.linspace(0.05, 0.95, count)]
    return [{"color": c, "marker": MARKERS[i % len(MARKERS)]} for i, c in enumerate(colors)]


def legend_outside(ax: Axes, **kwargs: Any) -> None:
    """The legend of ``ax`` to the right of its data area (never over the curves); nothing if no labels.

    Parameters
    ----------
    ax : Axes
        The axes.
    **kwargs
        More ``Axes.legend`` keywords (they override the placement and the font size 8).

    Returns
    -------
    None
        The legend is added to ``ax``.

    Examples
    --------
    >>> fig, ax = new_axes()
    >>> _ = ax.plot([0, 1], [0, 1], label="a line")
    >>> legend_outside(ax)
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['a line']
    """
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    kw: dict[str, Any] = {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "borderaxespad": 0.0}
    kw["fontsize"] = 8
    kw.update(kwargs)
    ax.legend(handles, labels, **kw)


def new_axes(ax: Axes | None = None, figsize: tuple[float, float] = (4.8, 3.6)) -> tuple[Figure, Axes]:
    """``(ax.figure, ax)`` or a new single-axes figure (no pyplot involved).

    Parameters
    ----------
    ax : Axes, optional
        Axes to draw into.
    figsize : tuple of float, default (4.8, 3.6)
        The new figure's size in inches.

    Returns
    -------
    (Figure, Axes)
        A new figure (constrained layout) and its axes, or ``ax`` and its figure.

    Examples
    --------
    >>> fig, ax = new_axes(figsize=(3.0, 2.0))
    >>> len(fig.axes), new_axes(ax)[0] is fig
    (1, True)
    """
    if ax is not None:
        return ax.figure, ax  # type: ignore[return-value]
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot(1, 1, 1)


def figure_suffixes() -> list[str]:
    """The file suffixes matplotlib can write a figure to (``.png``, ``.pdf``, ``.svg``, ...), with their dot:
    what a command that saves a figure under a name the user gives accepts (the format follows the suffix).

    Returns
    -------
    list of str
        Lower-case suffixes, ``.png`` first.

    Examples
    --------
    >>> suffixes = figure_suffixes()
    >>> suffixes[:3], ".svg" in suffixes
    (['.png', '.pdf', '.svg'], True)
    """
    from matplotlib.backend_bases import FigureCanvasBase

    found = sorted("." + s.lower() for s in FigureCanvasBase.get_supported_filetypes())
    return sorted(found, key=lambda s: (s != ".png", s != ".pdf", s != ".svg", s))


SMOKE_MARK = "SMOKE RUN: reduced settings, not the paper's result"


def mark_smoke(fig: Figure, strip: float = 0.32) -> None:
    """Add a strip of ``strip`` inches below ``fig`` holding :data:`SMOKE_MARK` (red, boxed), so that a smoke
    run's figure is never taken for the full experiment's, also outside its report.  The figure's content
    keeps its size.  Under constrained layout the mark is the figure's ``supxlabel``, which the layout keeps
    clear of the axes and of legends placed outside them; otherwise the axes and texts move into the upper
    part (through the layout engine's ``rect`` where the figure has one).

    Parameters
    ----------
    fig : Figure
        The figure, changed in place.
    strip : float, default 0.32
        The strip's height in inches.

    Returns
    -------
    None
        ``fig`` is taller by ``strip`` and holds the mark.

    Examples
    --------
    >>> fig, ax = new_axes(figsize=(4.0, 3.0))
    >>> mark_smoke(fig)
    >>> round(float(fig.get_size_inches()[1]), 2), fig.texts[-1].get_text() == SMOKE_MARK
    (3.32, True)
    """
    from matplotlib.layout_engine import ConstrainedLayoutEngine, TightLayoutEngine

    style: dict[str, Any] = {
        "fontsize": 8,
        "color": "#b2182b",
        "fontweight": "bold",
        "bbox": {"boxstyle": "round,pad=0.25", "facecolor": "white", "edgecolor": "#b2182b"},
    }
    width, height = fig.get_size_inches()
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine) and getattr(fig, "_supxlabel", None) is None:
        # the layout engine itself keeps the mark clear of the panels and of every legend outside them
        fig.set_size_inches(width, height + strip)
        fig.supxlabel(SMOKE_MARK, **style)
        return
    frac = height / (height + strip)  # the part of the new figure the old content takes, at the top
    fig.set_size_inches(width, height + strip)
    if isinstance(engine, ConstrainedLayoutEngine):
        engine.set(rect=(0.0, 1.0 - frac, 1.0, frac))  # (left, bottom, width, height)
    elif isinstance(engine, TightLayoutEngine):
        engine.set(rect=(0.0, 1.0 - frac, 1.0, 1.0))  # (left, bottom, right, top)
    else:
        for ax in fig.axes:
            pos = ax.get_position()
            ax.set_position((pos.x0, 1.0 - frac + pos.y0 * frac, pos.width, pos.height * frac))
    for text in fig.texts:  # the suptitle and other figure texts, in figure coordinates
        x, y = text.get_position()
        text.set_position((x, 1.0 - frac + y * frac))
    fig.text(0.5, 0.5 * strip / (height + strip), SMOKE_MARK, ha="center", va="center", **style)


def save_figure(fig: Figure, out_dir: str | Path, name: str, dpi: int = 130) -> tuple[Path, Path]:
    """Write ``name.png`` and ``name.pdf`` into ``out_dir``; return both paths.

    Parameters
    ----------
    fig : Figure
        The figure.
    out_dir : str or Path
        The folder (made if missing).
    name : str
        The file name without suffix.
    dpi : int, default 130
        The PNG's resolution.

    Returns
    -------
    tuple of Path
        ``(png, pdf)``.

    Examples
    --------
    >>> import tempfile
    >>> fig, ax = plot_band([0, 1], [0, 1])
    >>> png, pdf = save_figure(fig, tempfile.mkdtemp(), "band")
    >>> png.name, pdf.name, png.is_file() and pdf.is_file()
    ('band.png', 'band.pdf', True)
    """
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
    """A mean curve with a ± ``std`` band; ``bounds=(lo, hi)`` clips the band to the quantity's range.

    Parameters
    ----------
    x, mean : array_like
        The curve.
    std : array_like, optional
        The band's half-width (NaN as 0); no band without it.
    ax : Axes, optional
        Draw into it (default: a new figure).
    label : str, optional
        The curve's legend entry.
    color : optional
        The curve's and the band's colour.
    **kwargs
        ``bounds=(lo, hi)``, and more ``Axes.plot`` keywords.

    Returns
    -------
    (Figure, Axes)

    Examples
    --------
    >>> fig, ax = plot_band([0, 1, 2], [0.2, 0.5, 0.9], [0.1, 0.2, 0.3], bounds=(0.0, 1.0))
    >>> len(fig.axes), len(ax.lines), len(ax.collections)
    (1, 1, 1)
    """
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
    label: str | None,
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
    yet, e.g. a smoke run, is still seen).  When that cuts off the first steps' larger losses, an inset
    (upper right, labelled "whole run") shows the whole mean curve on a log axis, so nothing is hidden.  On a
    log axis the band is geometric (mean ± std of log10), so it stays positive.  The legend sits to the right
    of the data area.

    Parameters
    ----------
    curves : DataFrame
        Columns ``step``, ``run`` and ``y``.
    loss_dnc, loss_srg : float, optional
        The theory levels drawn as horizontal lines.
    ax : Axes, optional
        Draw into it (default: a new figure).
    y : str, default "loss"
        The column plotted.
    label : str
        The curve's legend entry.
    logy : bool, default True
        Log y-axis, geometric band.
    zoom : bool, default True
        Zoom to the levels and the end of the curve (with the inset described above).

    Returns
    -------
    (Figure, Axes)

    Examples
    --------
    >>> import pandas as pd
    >>> curves = pd.DataFrame({"step": [0, 1, 2] * 2, "run": [0] * 3 + [1] * 3,
    ...                        "loss": [1.0, 0.5, 0.3, 1.1, 0.6, 0.35]})
    >>> fig, ax = plot_loss_curves(curves, loss_dnc=0.3, loss_srg=0.25)
    >>> len(fig.axes), ax.get_yscale(), len(ax.lines)
    (1, 'log', 3)
    """
    fig, ax = new_axes(ax, figsize=(6.4, 3.6))
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
    ok = np.isfinite(mean.to_numpy())
    finite = mean[ok].to_numpy()
    if levels and zoom and len(finite):  # the papers' view: the converged region, not the first steps
        tail = finite[len(finite) // 2 :]
        low = min([*levels, float(finite.min())])
        top = max(0.6, 1.5 * max(levels), 1.1 * float(tail.max()))
        ax.set_ylim(0.9 * low, top)
        if float(finite.max()) > top:  # the zoom cuts the start off: show the whole run in an inset
            inset = ax.inset_axes((0.55, 0.55, 0.42, 0.4))
            inset.plot(stats["step"].to_numpy()[ok], finite, color="tab:blue", lw=1)
            for v, c, ls in ((loss_dnc, "tab:red", "--"), (loss_srg, "tab:green", ":")):
                if v is not None and np.isfinite(v):
                    inset.axhline(v, color=c, linestyle=ls, lw=0.8)
            if logy:
                inset.set_yscale("log")
            inset.set_title("whole run", fontsize=7, pad=2)
            inset.tick_params(labelsize=6)
    ax.set_xlabel(field_label("step"))
    ax.set_ylabel(r"training loss $f(\theta)$ (eq. (1))")
    legend_outside(ax)
    return fig, ax


def plot_loss_parts(
    curve: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None
) -> tuple[Figure, Axes]:
    """Loss of one run over steps, decomposed into fit and regularisation terms (2024 Figs. 5, 7, 8).

    Parameters
    ----------
    curve : DataFrame
        Column ``step`` and any of ``loss``, ``fit``, ``reg``.
    ax : Axes, optional
        Draw into it (default: a new figure).
    title : str, optional
        The axes' title.

    Returns
    -------
    (Figure, Axes)

    Examples
    --------
    >>> import pandas as pd
    >>> curve = pd.DataFrame({"step": [0, 1], "loss": [1.0, 0.5], "fit": [0.8, 0.3], "reg": [0.2, 0.2]})
    >>> fig, ax = plot_loss_parts(curve, title="one run")
    >>> len(fig.axes), len(ax.lines)
    (1, 3)
    """
    fig, ax = new_axes(ax, figsize=(6.4, 3.6))
    names = {
        "loss": r"loss $f(\theta)$ (eq. (1))",
        "fit": r"fit $\|W_L H_L - Y\|_F^2 / (2N)$",
        "reg": "regularisation",
    }
    for (col, style), color in zip((("loss", "-"), ("fit", "--"), ("reg", ":")), ("C0", "C1", "C2")):
        if col in curve:
            ax.plot(curve["step"], curve[col], style, color=color, label=names[col])
    ax.set_yscale("log")
    ax.set_xlabel(field_label("step"))
    ax.set_ylabel("loss and its parts")
    legend_outside(ax)
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
    """A per-layer metric over training, one curve per layer (2024 Fig. 2 middle, Fig. 4 left): on a log axis
    (``logy``, the default: DNC1 spans many decades and runs differ by several) the median over runs with the
    band from the 25 % to the 75 % quantile, which a log axis shows as it is (a ± std band of log values
    covered every curve when runs collapse to different depths); on a linear axis mean ± std.  ``frame``:
    long table with columns ``x``, ``run``, ``layer``, ``kind``, ``metric``.

    Parameters
    ----------
    frame : DataFrame
        The long table (:func:`~deepcollapse.analysis.tables.layer_metrics_frame`).
    metric : str, default "dnc1"
        The column plotted.
    x : str, default "step"
        The x column.
    kind : str, default "post"
        The rows of this ``kind`` (``"pre"`` or ``"post"``) are drawn.
    ax : Axes, optional
        Draw into it (default: a new figure).
    logy : bool, default True
        Log axis with median and quartiles; False: linear, mean ± std.

    Returns
    -------
    (Figure, Axes)

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"step": [0, 1] * 2, "run": 0, "layer": [1, 1, 2, 2], "kind": "post",
    ...                       "dnc1": [1.0, 0.1, 1.0, 0.01]})
    >>> fig, ax = plot_layer_metric(frame)
    >>> len(fig.axes), len(ax.lines), ax.get_yscale()
    (1, 2, 'log')
    """
    fig, ax = new_axes(ax, figsize=(6.0, 3.6))
    df = frame[frame["kind"] == kind] if "kind" in frame else frame
    groups = list(df.groupby("layer"))
    for (layer, sub), style in zip(groups, line_styles(len(groups))):
        sub = sub.dropna(subset=[metric]).copy()
        every = max(1, sub[x].nunique() // 12)  # markers: ~12 per curve, enough to tell the lines apart
        kw = {**style, "markersize": 4, "markevery": every}
        if logy:  # runs that span decades: median and interquartile range (quantiles respect the log scale)
            q = sub.groupby(x)[metric].quantile([0.25, 0.5, 0.75]).unstack()
            xs = q.index.to_numpy(dtype=float)
            (line,) = ax.plot(xs, q[0.5].to_numpy(), label=f"layer {layer}", **kw)
            ax.fill_between(xs, q[0.25], q[0.75], color=line.get_color(), alpha=0.2, linewidth=0)
        else:
            stats = _mean_std(sub, x, metric)
            m, s = stats["mean"].to_numpy(), stats["std"].to_numpy()
            plot_band(stats[x], m, s, ax=ax, label=f"layer {layer}", **kw)
    if logy:
        ax.set_yscale("log")
        ax.text(
            0.99,
            0.98,
            "median over runs, band: 25–75 % of runs",
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=7,
            color="0.3",
        )
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(axis_label(metric))
    legend_outside(ax)
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
    gets its own curve.  Then the colour is the rank (a discrete colour map with a colour bar) and the marker
    the layer (a legend of one entry per layer), so a flagship run with 17 (layer, rank) groups still reads;
    otherwise each layer gets its own colour and marker (:func:`line_styles`) and the legend sits to the
    right of the data area.  The band of normalised values is clipped at 1 (their bound).

    Parameters
    ----------
    values : mapping of layer to numpy.ndarray
        ``(runs, k)`` singular values per layer, decreasing.
    ax : Axes, optional
        Draw into it (default: a new figure).
    normalize : bool, default True
        Divide each run's values by its largest.
    logy : bool, default True
        Log axis, geometric band.
    label_fmt : str, default "layer {}"
        The legend entry of a layer.
    rank_rtol : float, default 1e-3
        The relative threshold of the numerical rank that groups the runs.

    Returns
    -------
    (Figure, Axes)
        With a colour bar (a second axes) when runs of a layer differ in rank.

    Examples
    --------
    >>> import numpy as np
    >>> sv = {1: np.array([[3.0, 1.0, 0.5], [2.0, 1.0, 0.4]]),
    ...       2: np.array([[1.0, 0.5, 0.1], [1.0, 0.4, 0.1]])}
    >>> fig, ax = plot_singular_values(sv)
    >>> len(fig.axes), len(ax.lines)
    (1, 2)
    """
    fig, ax = new_axes(ax, figsize=(6.8, 3.8))
    curves: list[tuple[int, Any, int, str, np.ndarray, np.ndarray]] = []
    for i_layer, (layer, arr) in enumerate(values.items()):
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
            curves.append((i_layer, layer, r, label_fmt.format(layer), m, s))
    split = len(curves) > len(values)  # runs of some layer differ in rank: colour = rank, marker = layer
    if split:
        return _singular_values_by_rank(fig, ax, curves, list(values), label_fmt, normalize, logy)
    for (_, _, _, label, m, s), style in zip(curves, line_styles(len(curves))):
        _sv_curve(ax, m, s, label, normalize, logy, markersize=4, **style)
    if logy:
        ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("index i")
    ax.set_ylabel(r"singular value $\sigma_i$" + (r" / $\sigma_1$" if normalize else ""))
    legend_outside(ax)
    return fig, ax


def _sv_curve(
    ax: Axes, m: np.ndarray, s: np.ndarray, label: str | None, normalize: bool, logy: bool, **style: Any
) -> None:
    idx = np.arange(1, m.shape[0] + 1)
    if logy:
        _log_band(ax, idx, m, s, label=label, upper=1.0 if normalize else None, **style)
    else:
        plot_band(idx, m, s, ax=ax, label=label, bounds=(0.0, 1.0) if normalize else None, **style)


def _singular_values_by_rank(
    fig: Figure,
    ax: Axes,
    curves: list[tuple[int, Any, int, str, np.ndarray, np.ndarray]],
    layers: list[Any],
    label_fmt: str,
    normalize: bool,
    logy: bool,
) -> tuple[Figure, Axes]:
    """The singular values when the runs of a layer end at different ranks: one curve per (layer, rank),
    coloured by the rank on a discrete colour map with a colour bar, the layer told by the marker (a legend
    of one entry per layer, whatever the number of curves)."""
    import matplotlib
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import BoundaryNorm
    from matplotlib.lines import Line2D

    ranks = sorted({c[2] for c in curves})
    cmap = matplotlib.colormaps["viridis"]
    norm = BoundaryNorm(np.arange(ranks[0] - 0.5, ranks[-1] + 1.5), cmap.N)
    for i, _layer, rank, _, m, s in curves:
        marker = MARKERS[i % len(MARKERS)]
        _sv_curve(ax, m, s, None, normalize, logy, color=cmap(norm(rank)), marker=marker, markersize=4)
    if logy:
        ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("index i")
    ax.set_ylabel(r"singular value $\sigma_i$" + (r" / $\sigma_1$" if normalize else ""))
    handles = [
        Line2D([], [], color="0.35", marker=MARKERS[i % len(MARKERS)], label=label_fmt.format(layer))
        for i, layer in enumerate(layers)
    ]
    ax.legend(handles=handles, loc="lower left", fontsize=8, title="marker: layer", title_fontsize=8)
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, pad=0.02)
    bar.set_ticks(ranks)
    bar.set_label("numerical rank of the layer's runs\n(runs grouped by it; mean over a group)", fontsize=8)
    return fig, ax


def plot_sweep_curve(
    summary: pd.DataFrame,
    x: str,
    y: str,
    *,
    ax: Axes | None = None,
    log2x: bool = False,
    logx: bool | None = None,
    label: str | None = None,
    ylabel: str | None = None,
    band: bool = True,
    style: Mapping[str, Any] | None = None,
    dodge: float = 0.0,
) -> tuple[Figure, Axes]:
    """``y`` against a swept parameter ``x`` (2024 Fig. 3 middle and right, Figs. 9, 10).

    ``summary``: one row per point with columns ``x``, ``<y>_mean``, ``<y>_std`` and ``n_runs`` (see
    ``aggregate_runs``).  A probability (``y`` in :data:`.fields.PROBABILITIES`: one 0/1 outcome per run) is
    drawn as the observed fraction with binomial Wilson 95% intervals (:func:`.stats.wilson_interval`, within
    [0, 1]), never as mean ± std; any other quantity as mean ± std over seeds (a band clipped to [0, 1] for
    accuracies).  The x-axis is logarithmic when the swept values form a geometric grid
    (:func:`.stats.geometric_grid_base`; ``logx=False`` forces a linear axis, ``log2x`` base 2).  ``style``:
    extra ``Axes.plot`` keywords (``color``, ``marker``) for this curve.  ``dodge`` shifts the points
    sideways by that fraction of the smallest gap between swept values (on the axis' own scale), so that
    error bars of several curves at the same values do not hide each other; the values are unchanged.

    Parameters
    ----------
    summary : DataFrame
        One row per point (:func:`~deepcollapse.analysis.tables.aggregate_runs`).
    x, y : str
        The swept column and the quantity.
    ax : Axes, optional
        Draw into it (default: a new figure).
    log2x : bool, default False
        A base-2 log x-axis.
    logx : bool, optional
        Force a log (True) or linear (False) x-axis; default: log for a geometric grid.
    label : str, optional
        The curve's legend entry.
    ylabel : str, optional
        The y-axis label (default :func:`axis_label` of ``y``).
    band : bool, default True
        Draw the error bars or the band.
    style : mapping, optional
        Extra ``Axes.plot`` keywords.
    dodge : float, default 0.0
        The sideways shift, as a fraction of the smallest gap.

    Returns
    -------
    (Figure, Axes)

    Examples
    --------
    A probability over a geometric grid of ``λ``: Wilson error bars on a log axis:

    >>> import pandas as pd
    >>> summary = pd.DataFrame({"lam": [1e-3, 1e-2, 1e-1], "is_dnc_mean": [1.0, 0.5, 0.0],
    ...                         "is_dnc_std": [0.0, 0.5, 0.0], "n_runs": [4, 4, 4]})
    >>> fig, ax = plot_sweep_curve(summary, "lam", "is_dnc")
    >>> len(fig.axes), ax.get_xscale(), len(ax.containers)
    (1, 'log', 1)
    """
    fig, ax = new_axes(ax)
    df = summary.sort_values(x)
    xs = df[x].astype(float).to_numpy()
    kw: dict[str, Any] = {"marker": "o", **(style or {})}
    base = 2 if log2x else (geometric_grid_base(xs) if logx is not False else None)
    if logx and base is None:
        base = 10
    if dodge and len(np.unique(xs)) > 1:
        t = np.log(xs) if base is not None else xs
        gap = float(np.min(np.diff(np.unique(t))))
        xs = np.exp(t + dodge * gap) if base is not None else t + dodge * gap
    if y in PROBABILITIES and "n_runs" in df:
        n = df["n_runs"].to_numpy(dtype=float)
        p = df[f"{y}_mean"].to_numpy(dtype=float)
        ok = np.isfinite(p) & (n > 0)
        k = np.round(p[ok] * n[ok])  # one 0/1 outcome per run: the mean times the runs is the count
        lo, hi = wilson_interval(k, n[ok])
        frac = k / n[ok]
        yerr = np.vstack([frac - lo, hi - frac]) if band else None
        ax.errorbar(xs[ok], frac, yerr=yerr, capsize=3, label=label, **kw)
        ax.set_ylim(-0.04, 1.04)
    else:
        std = df[f"{y}_std"] if band and f"{y}_std" in df else None
        bounds = (0.0, 1.0) if y in BOUNDED else None
        plot_band(xs, df[f"{y}_mean"], std, ax=ax, label=label, bounds=bounds, **kw)
    if base is not None:
        ax.set_xscale("log", base=base)
    elif not dodge and np.allclose(xs % 1, 0):  # integer grid (widths, layers): integer ticks
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(ylabel or axis_label(y))
    if label:
        legend_outside(ax)
    return fig, ax


def plot_matrix(
    M: np.ndarray,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    cmap: str = "viridis",
    symmetric: bool = False,
    vmax: float | None = None,
) -> tuple[Figure, Axes]:
    """A heat map of a class-mean matrix or Gram matrix (2024 Figs. 1, 4 right, 5–8).  ``symmetric`` centres
    the colour scale at 0 (for matrices with negative entries, e.g. pre-ReLU class means); ``vmax`` fixes its
    upper end (and, when symmetric, ``-vmax`` its lower), so matrices shown side by side share one scale.

    Parameters
    ----------
    M : numpy.ndarray, 2-D
        The matrix.
    ax : Axes, optional
        Draw into it (default: a new figure).
    title : str, optional
        The axes' title.
    cmap : str, default "viridis"
        The colour map (``RdBu_r`` when ``symmetric``).
    symmetric : bool, default False
        A colour scale symmetric about 0.
    vmax : float, optional
        The colour scale's upper end (default: the matrix's largest entry, or largest magnitude when
        symmetric).

    Returns
    -------
    (Figure, Axes)
        The figure holds the heat map's axes and its colour bar.

    Examples
    --------
    >>> import numpy as np
    >>> fig, ax = plot_matrix(np.eye(3) - 0.5, symmetric=True, title="centred")
    >>> len(fig.axes), ax.images[0].get_clim()
    (2, (-0.5, 0.5))
    """
    fig, ax = new_axes(ax, figsize=(3.6, 3.2))
    A = np.asarray(M, dtype=float)
    kw: dict[str, Any] = {"cmap": cmap}
    if symmetric:
        v = vmax if vmax is not None else (float(np.max(np.abs(A))) or 1.0)
        kw.update(cmap="RdBu_r", vmin=-v, vmax=v)
    elif vmax is not None:
        kw.update(vmax=vmax)
    im = ax.imshow(A, aspect="auto", interpolation="nearest", **kw)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.colorbar(im, ax=ax, shrink=0.8)
    if title:
        ax.set_title(title, fontsize=9)
    ax.set_xlabel("class")
    return fig, ax
