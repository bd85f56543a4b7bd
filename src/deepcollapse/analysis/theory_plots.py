"""Figures of the theory engine (2024 paper: Figure 3 left, Figure 1).

Plot functions follow ``plot_x(data, ax=None) -> (fig, ax)``: ``data`` is a typed result of the ``*_data``
helpers (:class:`RatioCurves`, :class:`SRGFigureData`; ``to_dict()`` is JSON-friendly) or a plain dict of the
same keys, nothing is shown, figures are built with :class:`matplotlib.figure.Figure` (no pyplot
state, Agg canvas), so saving is ``fig.savefig(path)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.results import Result
from deepcollapse.analysis.fields import field_label
from deepcollapse.analysis.figures import L_DNC, L_SRG, legend_outside, line_styles
from deepcollapse.theory import dnc_solution, loss_dnc, loss_srg, srg_geometry, srg_solution

__all__ = [
    "RatioCurves",
    "SRGFigureData",
    "plot_ratio",
    "plot_ratio_grid",
    "plot_runs_against",
    "plot_srg",
    "ratio_data",
    "srg_figure_data",
]


@dataclass(frozen=True, eq=False)
class RatioCurves(Result):
    """``L_SRG / L_DNC`` against ``r`` (``K = C(r, 2)``), one curve per ``L``: the result of
    :func:`ratio_data` and the data of :func:`plot_ratio` (2024 Fig. 3 left).

    Read-only key access (``data["curves"]``) works as for the dict of earlier releases.

    Attributes
    ----------
    r : list of int
        The values of ``r``.
    classes : list of int
        ``K = r(r − 1)/2`` for each ``r``.
    curves : dict of int to dict
        One entry per ``L``: ``{"ratio": [...], "dnc_is_zero": [...]}``, one value per ``r`` (the ratio
        ``L_SRG / L_DNC``, and whether the DNC optimum is the all-zero point).
    n : int
        Samples per class.
    lam_h : float
        ``λ_{H_1}``.
    lam_w : float
        ``λ_W``, the same for every layer.
    """

    r: list[int] | None = None
    classes: list[int] | None = None
    curves: dict[int, dict[str, list[Any]]] | None = None
    n: int | None = None
    lam_h: float | None = None
    lam_w: float | None = None


def ratio_data(rs: Sequence[int], layers: Sequence[int], n: int, lam_h: float, lam_w: float) -> RatioCurves:
    """``L_SRG / L_DNC`` for ``K = C(r, 2)``, ``r in rs``, one curve per ``L in layers`` (same ``λ_W`` per
    layer).

    Parameters
    ----------
    rs : sequence of int
        The values of ``r >= 4``.
    layers : sequence of int
        The values of ``L >= 2``, one curve each.
    n : int
        Samples per class.
    lam_h : float
        ``λ_{H_1}``.
    lam_w : float
        ``λ_W`` of every layer.

    Returns
    -------
    RatioCurves
        ``r``, ``classes``, ``curves`` (``{L: {"ratio": [...], "dnc_is_zero": [...]}}``), ``n``, ``lam_h``,
        ``lam_w``; ``to_dict()`` is the dict of earlier releases.

    Examples
    --------
    >>> data = ratio_data([4, 5], [3], 1, 1e-3, 1e-3)
    >>> data.classes, list(data.curves)
    ([6, 10], [3])
    >>> data.curves[3]["ratio"][1] < 1  # K = 10: the SRG beats DNC
    True
    """
    curves: dict[int, dict[str, list[Any]]] = {}
    for L in layers:
        ratios, zero = [], []
        for r in rs:
            K = r * (r - 1) // 2
            dnc = loss_dnc(K, L, n, lam_h, lam_w)
            srg = loss_srg(K, L, n, lam_h, lam_w)
            if srg is None:
                raise ConfigError(f"layers == {L}, must be >= 2 for an SRG solution.")
            ratios.append(srg.loss / dnc.loss)
            zero.append(dnc.is_zero)
        curves[int(L)] = {"ratio": ratios, "dnc_is_zero": zero}
    return RatioCurves(
        r=list(rs), classes=[r * (r - 1) // 2 for r in rs], curves=curves, n=n, lam_h=lam_h, lam_w=lam_w
    )


def plot_ratio(data: RatioCurves | Mapping[str, Any], ax: Axes | None = None) -> tuple[Figure, Axes]:
    """Figure 3 (left) of the 2024 paper: ``L_SRG / L_DNC`` against ``r`` (``K = C(r, 2)``), one line per
    ``L``. Points where the DNC optimum is the all-zero point (``L_DNC = 1/2``) are drawn hollow.

    Parameters
    ----------
    data : RatioCurves or mapping
        From :func:`ratio_data` (or its ``to_dict()``).
    ax : Axes, optional
        Draw into it (default: a new figure).

    Returns
    -------
    (Figure, Axes)

    Examples
    --------
    >>> fig, ax = plot_ratio(ratio_data([4, 5], [2, 3], 1, 1e-3, 1e-3))
    >>> len(fig.axes), len(ax.lines)  # one line per L and the line at 1
    (1, 3)
    """
    if ax is None:
        fig = Figure(figsize=(5.0, 3.6), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure  # type: ignore[assignment]
    r = np.asarray(data["r"])
    curves = list(data["curves"].items())
    for (L, curve), style in zip(curves, line_styles(len(curves))):
        ratio = np.asarray(curve["ratio"], dtype=float)
        zero = np.asarray(curve["dnc_is_zero"], dtype=bool)
        ax.plot(r, ratio, label=f"$L = {L}$", **style)
        if zero.any():
            ax.plot(r[zero], ratio[zero], linestyle="none", mfc="white", **style)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel(r"$r$  ($K = r(r-1)/2$ classes)")
    ax.set_ylabel(f"{L_SRG} / {L_DNC}")
    ax.set_title(
        rf"$n = {data['n']}$, $\lambda_{{H_1}} = {data['lam_h']}$, $\lambda_W = {data['lam_w']}$", fontsize=9
    )
    legend_outside(ax)
    return fig, ax


_FIGURE_ARRAYS = ("srg_mid", "srg_last", "srg_gram", "dnc_gram")


@dataclass(frozen=True, eq=False)
class SRGFigureData(Result):
    """The matrices of the 2024 paper's Figure 1: the result of :func:`srg_figure_data` and the data of
    :func:`plot_srg`.

    Read-only key access (``data["srg_gram"]``) works as for the dict of earlier releases; ``to_dict()`` holds
    the same keys, JSON-ready (arrays as nested lists), and ``from_dict`` reads them back as arrays.

    Attributes
    ----------
    classes : int
        ``K``.
    layers : int
        ``L >= 3``.
    n : int
        Samples per class.
    lam_h : float
        ``λ_{H_1}``.
    lam_w : list of float
        ``λ_{W_l}``, one per layer (length ``L``).
    construction : str
        The SRG construction drawn (``'def9'``, ``'def11.1'`` or ``'def11.2'``).
    unit_scales : bool
        The matrices are drawn at unit scales because an optimum (SRG or DNC) is the all-zero point.
    srg_mid : ndarray, (d, K)
        SRG ``M_{L-1}``.
    srg_last : ndarray, (d, K)
        SRG ``M~_L`` (before the last ReLU).
    srg_gram : ndarray, (K, K)
        SRG ``M~_L^T M~_L``.
    dnc_gram : ndarray, (K, K)
        DNC ``M~_L^T M~_L``.
    loss_srg, loss_dnc : float
        The optimal SRG and DNC losses.
    """

    classes: int | None = None
    layers: int | None = None
    n: int | None = None
    lam_h: float | None = None
    lam_w: list[float] | None = None
    construction: str | None = None
    unit_scales: bool | None = None
    srg_mid: np.ndarray | None = None
    srg_last: np.ndarray | None = None
    srg_gram: np.ndarray | None = None
    dnc_gram: np.ndarray | None = None
    loss_srg: float | None = None
    loss_dnc: float | None = None

    @classmethod
    def _read(cls, name: str, value: Any) -> Any:
        if name in _FIGURE_ARRAYS and value is not None:
            return np.asarray(value, dtype=np.float64)
        return value


def srg_figure_data(
    classes: int, layers: int, n: int, lam_h: float, lam_w: float | Sequence[float]
) -> SRGFigureData:
    """Matrices of Figure 1: SRG ``M_{L-1}``, ``M~_L``, ``M~_L^T M~_L`` and DNC ``M~_L^T M~_L`` at the optimal
    scales (unit scales, flagged by ``unit_scales``, where an optimum is the all-zero point).  Needs ``L >=
    3``.

    Parameters
    ----------
    classes : int
        ``K >= 6``.
    layers : int
        ``L >= 3`` (Figure 1 shows a middle layer).
    n : int
        Samples per class.
    lam_h : float
        ``λ_{H_1}``.
    lam_w : float or sequence of float
        ``λ_{W_l}``: one for every layer, or one per layer.

    Returns
    -------
    SRGFigureData
        The matrices, the setting and both optimal losses; ``to_dict()`` is the dict of earlier releases
        with the arrays as nested lists.

    Examples
    --------
    >>> data = srg_figure_data(10, 3, 1, 1e-3, 1e-3)
    >>> data.construction, data.srg_gram.shape, data.unit_scales
    ('def9', (10, 10), False)
    >>> data.loss_srg < data.loss_dnc
    True
    """
    if layers < 3:
        raise ConfigError(f"layers == {layers}, must be >= 3 (Figure 1 shows a middle layer).")
    srg = srg_solution(classes, layers, n, lam_h, lam_w)
    dnc = dnc_solution(classes, layers, n, lam_h, lam_w)
    unit = bool(srg.scales[-1] == 0 or dnc.scales[-1] == 0)
    if srg.scales[-1] > 0:
        M_mid, Mt_last = srg.class_means[-2], srg.class_means[-1]
    else:
        geom, _ = srg_geometry(classes, srg.construction)
        M_mid, Mt_last = geom.X_mid, geom.X_last
    Mt_dnc = dnc.class_means[-1] if dnc.scales[-1] > 0 else np.eye(classes)
    return SRGFigureData(
        classes=classes,
        layers=layers,
        n=n,
        lam_h=float(lam_h),
        lam_w=[float(x) for x in np.broadcast_to(np.asarray(lam_w, dtype=float), (layers,))],
        construction=srg.construction,
        unit_scales=unit,
        srg_mid=M_mid,
        srg_last=Mt_last,
        srg_gram=Mt_last.T @ Mt_last,
        dnc_gram=Mt_dnc.T @ Mt_dnc,
        loss_srg=srg.loss,
        loss_dnc=dnc.loss,
    )


def _setting_text(data: Mapping[str, Any]) -> str:
    """``, n = 50, λ_H1 = 0.004, λ_W = 0.004`` (λ_W as a list where the layers differ); ``""`` for data of
    earlier releases that did not record them."""
    if data.get("n") is None:
        return ""
    lam_w = data.get("lam_w") or []
    same = len(set(lam_w)) <= 1
    w = f"{lam_w[0]:g}" if same and lam_w else "[" + ", ".join(f"{x:g}" for x in lam_w) + "]"
    return f", $n = {data['n']}$, $\\lambda_{{H_1}} = {data['lam_h']:g}$, $\\lambda_W = {w}$"


def plot_srg(
    data: SRGFigureData | Mapping[str, Any], ax: Sequence[Axes] | None = None
) -> tuple[Figure, Sequence[Axes]]:
    """Figure 1 of the 2024 paper: SRG class means ``M_{L-1}``, ``M~_L``, Gram ``M~_L^T M~_L``, and the DNC
    Gram.

    Parameters
    ----------
    data : SRGFigureData or mapping
        From :func:`srg_figure_data` (or its ``to_dict()``).
    ax : sequence of Axes, optional
        Four axes to draw into (default: a new figure).

    Returns
    -------
    (Figure, sequence of Axes)
        The figure (the four panels and their colour bars) and the four panels.

    Examples
    --------
    >>> fig, axes = plot_srg(srg_figure_data(6, 3, 1, 1e-3, 1e-3))
    >>> len(axes), len(fig.axes)
    (4, 8)
    """
    if ax is None:
        fig = Figure(figsize=(13.0, 3.4), layout="constrained")
        axes: Sequence[Axes] = fig.subplots(1, 4)
    else:
        axes = ax
        fig = axes[0].figure  # type: ignore[assignment]
    L = data["layers"]
    panels = [
        (data["srg_mid"], rf"SRG  $M_{{{L - 1}}}$", f"unit of layer {L - 1} (row of $M_{{{L - 1}}}$)"),
        (data["srg_last"], rf"SRG  $\tilde M_{{{L}}}$", rf"unit of layer {L} (row of $\tilde M_{{{L}}}$)"),
        (data["srg_gram"], rf"SRG  $\tilde M_{{{L}}}^\top \tilde M_{{{L}}}$", "class"),
        (data["dnc_gram"], rf"DNC  $\tilde M_{{{L}}}^\top \tilde M_{{{L}}}$", "class"),
    ]
    for a, (M, title, ylabel) in zip(axes, panels):
        M = np.asarray(M)
        vmax = float(np.abs(M).max()) or 1.0
        im = a.imshow(M, cmap="RdBu_r", vmin=-vmax, vmax=vmax, interpolation="nearest")
        a.set_title(title, fontsize=10)
        a.set_xlabel("class")
        a.set_ylabel(ylabel)
        fig.colorbar(im, ax=a, shrink=0.8)
    suffix = " (unit scales: an optimum is all-zero)" if data.get("unit_scales") else ""
    fig.suptitle(
        f"$K = {data['classes']}$, $L = {L}${_setting_text(data)}, SRG {data['construction']}: "
        f"{L_SRG} = {data['loss_srg']:.6g}, {L_DNC} = {data['loss_dnc']:.6g}{suffix}",
        fontsize=10,
    )
    return fig, axes


# ----------------------------------------------------------------------------------------------------
# Model families (issue 9): the cross-entropy conjecture grid, curves over runs with bounded bands
# ----------------------------------------------------------------------------------------------------
def plot_ratio_grid(rows: Any, *, ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """``L_SRG / L_DNC`` over ``(K, L)`` as a heat map (rows: ``L``, columns: ``K``), diverging at 1 (blue:
    SRG better, red: DNC better); cells with ``ratio >= 1`` are marked ×, those where both optima are the
    all-zero point (optional boolean column ``both_zero``) with a grey dot.  ``rows``: records or a DataFrame
    with columns ``classes``, ``layers``, ``ratio`` (cells without a ratio are blank).

    Parameters
    ----------
    rows : list of dict or DataFrame
        One row per ``(K, L)``.
    ax : Axes, optional
        Draw into it (default: a new figure).
    title : str, optional
        The axes' title.

    Returns
    -------
    (Figure, Axes)
        The figure holds the map's axes and its colour bar.

    Examples
    --------
    >>> rows = [{"classes": K, "layers": L, "ratio": r}
    ...         for K, L, r in [(6, 2, 1.02), (10, 2, 0.98), (6, 3, 0.99), (10, 3, 0.95)]]
    >>> fig, ax = plot_ratio_grid(rows, title="L_SRG / L_DNC")
    >>> len(fig.axes), len(ax.lines)  # the × of the one cell where DNC wins
    (2, 1)
    """
    import pandas as pd
    from matplotlib.colors import TwoSlopeNorm

    df = pd.DataFrame(rows)
    pivot = df.pivot(index="layers", columns="classes", values="ratio").astype(float)
    Z = pivot.to_numpy()
    if ax is None:
        fig = Figure(figsize=(7.0, 3.2), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure  # type: ignore[assignment]
    finite = Z[np.isfinite(Z)]
    lo = min(float(finite.min()), 0.99) if finite.size else 0.9
    hi = max(float(finite.max()), 1.01) if finite.size else 1.1
    Ks, Ls = pivot.columns.to_numpy(), pivot.index.to_numpy()
    extent = (Ks[0] - 0.5, Ks[-1] + 0.5, Ls[0] - 0.5, Ls[-1] + 0.5)
    im = ax.imshow(
        Z,
        origin="lower",
        aspect="auto",
        cmap="RdBu_r",
        norm=TwoSlopeNorm(1.0, lo, hi),
        extent=extent,
        interpolation="nearest",
    )
    tie = np.zeros_like(Z, dtype=bool)
    if "both_zero" in df:  # both optima are the all-zero point: a tie, not a DNC win
        tie = df.pivot(index="layers", columns="classes", values="both_zero").fillna(False).to_numpy(bool)
    worse = np.argwhere(np.isfinite(Z) & (Z >= 1.0) & ~tie)  # DNC at least as good: marked
    if worse.size:
        ax.plot(Ks[worse[:, 1]], Ls[worse[:, 0]], "kx", markersize=5, label=f"{L_DNC} ≤ {L_SRG}")
    ties = np.argwhere(tie)
    if ties.size:
        ax.plot(Ks[ties[:, 1]], Ls[ties[:, 0]], ".", color="0.4", markersize=3, label="both zero (tie)")
    cbar = fig.colorbar(im, ax=ax)
    cbar.set_label(f"{L_SRG} / {L_DNC}  (< 1: SRG better)")
    if worse.size or ties.size:  # below the data area (the colour bar holds the right-hand side)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    ax.set_xlabel("number of classes K")
    ax.set_ylabel("number of layers L")
    ax.set_yticks(Ls)
    if title:
        ax.set_title(title, fontsize=9)
    return fig, ax


def plot_runs_against(
    frame: Any,
    x: str,
    y: str,
    *,
    group: str | None = None,
    ax: Axes | None = None,
    bounds: tuple[float, float] | None = None,
    logx: bool = False,
    logy: bool = False,
    xlabel: str | None = None,
    ylabel: str | None = None,
    label_fmt: str = "{}",
) -> tuple[Figure, Axes]:
    """Mean ± std over runs of ``y`` against ``x``, one curve per value of ``group``.

    ``frame``: one row per run (columns ``x``, ``y``, ``group``).  The band is clipped to ``bounds`` (e.g.
    ranks in ``[0, K]``); with ``logy`` it is geometric (mean ± std of ``log10 y``), so it stays positive.

    Parameters
    ----------
    frame : DataFrame or records
        One row per run.
    x, y : str
        The columns on the axes.
    group : str, optional
        One curve per value of this column (default: one curve).
    ax : Axes, optional
        Draw into it (default: a new figure).
    bounds : tuple of float, optional
        Clip the band to ``(lo, hi)``.
    logx, logy : bool, default False
        Log axes (``logy``: geometric band).
    xlabel, ylabel : str, optional
        The axis labels (default :func:`~deepcollapse.analysis.fields.field_label` of the columns).
    label_fmt : str, default "{}"
        The legend entry of a group value.

    Returns
    -------
    (Figure, Axes)

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"layers": [2, 2, 3, 3] * 2, "mean_rank": [3, 2.5, 2, 2, 3, 3, 2.5, 2],
    ...                       "classes": [3] * 4 + [4] * 4})
    >>> fig, ax = plot_runs_against(frame, "layers", "mean_rank", group="classes", bounds=(0, 4),
    ...                             label_fmt="K = {}")
    >>> len(fig.axes), [t.get_text() for t in ax.get_legend().get_texts()]
    (1, ['K = 3', 'K = 4'])
    """
    import pandas as pd

    df = pd.DataFrame(frame).dropna(subset=[x, y])
    if ax is None:
        fig = Figure(figsize=(4.8, 3.6), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure  # type: ignore[assignment]
    groups = [(None, df)] if group is None else list(df.groupby(group, sort=True))
    for (key, sub), style in zip(groups, line_styles(len(groups))):
        vals = sub[y].astype(float)
        if logy:
            vals = np.log10(vals.clip(lower=1e-300))
        g = pd.DataFrame({"x": sub[x].astype(float), "v": vals}).groupby("x")["v"]
        xs = np.asarray(g.mean().index, dtype=float)
        m, s = g.mean().to_numpy(), g.std(ddof=1).fillna(0.0).to_numpy()
        lo, hi = (10.0 ** (m - s), 10.0 ** (m + s)) if logy else (m - s, m + s)
        mid = 10.0**m if logy else m
        if bounds is not None:
            lo, hi = np.clip(lo, *bounds), np.clip(hi, *bounds)
        ax.plot(xs, mid, markersize=4, label=None if key is None else label_fmt.format(key), **style)
        ax.fill_between(xs, lo, hi, color=style["color"], alpha=0.25, linewidth=0)
    if logx:
        ax.set_xscale("log")
    elif np.allclose(df[x].astype(float) % 1, 0):  # integer x (layers, widths): integer ticks
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel or field_label(x))
    ax.set_ylabel(ylabel or field_label(y))
    if group is not None:
        legend_outside(ax)
    return fig, ax
