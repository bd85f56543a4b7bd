"""Figures of the L-DUFM loss landscape and of the best-known solutions (matplotlib, Agg canvas).

* :func:`plot_slices`: the loss along the lowest-curvature direction ``v_1`` of the Hessian (off the
  symmetry directions) and over the plane ``(v_1, v_2)`` around a point (``deepcollapse dufm landscape``);
  with a certified descent, a zoomed panel along its direction around its step.
* :func:`plot_best_known`: best-known loss / L_DNC against K, one curve per L, with L_SRG / L_DNC dashed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["plot_best_known", "plot_slices"]


def _figure(ncols: int, size: tuple[float, float]) -> tuple[Any, Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(1, ncols, squeeze=False)[0]


def plot_slices(
    slices: Mapping[str, Any],
    result: dict[str, Any],
    title: str = "",
    zoom: Mapping[str, Any] | None = None,
) -> Any:
    """Panels: ``f(θ + t v_1) − f(θ)`` against ``t`` (with the quadratic model ``½ λ_1 t²``), with ``zoom``
    ``f(θ + a u) − f(θ)`` against ``a`` around the certified descent step ``t*`` (``|a| <= 3 t*``), and the
    contours of ``f(θ + s v_1 + t v_2) − f(θ)``.

    Parameters
    ----------
    slices : LossSlices or mapping
        From :func:`~deepcollapse.landscape.slices.loss_slices`.
    result : dict
        The landscape (``lowest_eigenvalues_off_symmetry``, ``verdict``, ``grad_norm``; with ``zoom`` also
        ``certified_descent``).
    title : str
        First line of the figure's title (what the point is).
    zoom : DescentSlice, mapping or None
        From :func:`~deepcollapse.landscape.slices.descent_slice` (``a``, ``f``, ``step``).

    Returns
    -------
    (Figure, tuple of Axes)
        Two panels (three with ``zoom``); the figure also holds the contour's colour bar.

    Examples
    --------
    A quadratic bowl sliced by hand (the shape of :func:`~deepcollapse.landscape.slices.loss_slices`):

    >>> import numpy as np
    >>> t, s = np.linspace(-1, 1, 5), np.linspace(-1, 1, 4)
    >>> slices = {"loss": 1.0, "t": t, "f1": 1.0 + 0.5 * t**2, "s": s, "f2": 1.0 + np.add.outer(s**2, s**2)}
    >>> result = {"lowest_eigenvalues_off_symmetry": [1.0, 2.0], "verdict": "local minimum",
    ...           "grad_norm": 1e-9}
    >>> fig, axes = plot_slices(slices, result, title="a point")
    >>> len(fig.axes), len(axes)
    (3, 2)
    """
    if zoom is None:
        fig, (ax1, ax2) = _figure(2, (10.0, 4.2))
    else:
        fig, (ax1, axz, ax2) = _figure(3, (15.0, 4.4))
        _plot_zoom(axz, zoom, result.get("certified_descent") or {})
    f0 = slices["loss"]
    t = np.asarray(slices["t"])
    lam1 = result["lowest_eigenvalues_off_symmetry"][0]
    lam2 = result["lowest_eigenvalues_off_symmetry"][
        min(1, len(result["lowest_eigenvalues_off_symmetry"]) - 1)
    ]
    ax1.plot(t, np.asarray(slices["f1"]) - f0, lw=2, label=r"$f(\theta + t v_1) - f(\theta)$")
    ax1.plot(
        t,
        0.5 * lam1 * t**2,
        ls="--",
        lw=1.5,
        label=rf"$\frac{{1}}{{2}}\lambda_1 t^2$, $\lambda_1$ = {lam1:.3g}",
    )
    ax1.axhline(0.0, color="0.6", lw=0.8)
    ax1.set_xlabel(r"step $t$ along $v_1$ (lowest curvature)")
    ax1.set_ylabel(r"loss change $f - f(\theta)$")
    ax1.legend(fontsize=9)
    ax1.set_title("1-D slice")
    s = np.asarray(slices["s"])
    F = np.asarray(slices["f2"]) - f0
    lim = float(np.max(np.abs(F))) or 1.0
    cs = ax2.contourf(s, s, F, levels=21, cmap="RdBu_r", vmin=-lim, vmax=lim)
    ax2.contour(s, s, F, levels=[0.0], colors="k", linewidths=1.0)
    fig.colorbar(cs, ax=ax2, label=r"loss change $f - f(\theta)$")
    ax2.plot([0], [0], "k+", ms=10)
    ax2.set_xlabel(rf"$s$ along $v_1$ ($\lambda_1$ = {lam1:.3g})")
    ax2.set_ylabel(rf"$t$ along $v_2$ ($\lambda_2$ = {lam2:.3g})")
    ax2.set_title("2-D slice")
    verdict = result["verdict"] + (f" ({result['verdict_note']})" if result.get("verdict_note") else "")
    fig.suptitle(
        f"{title}\nverdict: {verdict}; ‖∇f‖ = {result['grad_norm']:.2e}, f(θ) = {f0:.10f}", fontsize=10
    )
    return fig, (ax1, ax2) if zoom is None else (ax1, axz, ax2)


def _plot_zoom(ax: Any, zoom: Mapping[str, Any], descent: dict[str, Any]) -> None:
    """``f(θ + a u) − f(θ)`` against ``a`` on ``|a| <= 3 t*``, the certified step ``t*`` marked."""
    a, f = np.asarray(zoom["a"]), np.asarray(zoom["f"]) - zoom["loss"]
    step = float(zoom["step"])
    along = descent.get("along", "u")
    ax.plot(a, f, color="C0", lw=2, label=rf"$f(\theta + a\,u) - f(\theta)$, $u$ along {along}")
    at = f[np.argmin(np.abs(a - step))]
    ax.plot(
        [step],
        [at],
        "o",
        color="C3",
        ms=7,
        label=rf"certified step $t^*$ = {step:.3g}, $\Delta f$ = {at:.3g}",
    )
    ax.axvline(step, color="C3", ls=":", lw=1)
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set_xlabel(rf"step $a$ along the descent direction $u$ ({along}, unit length)")
    ax.set_ylabel(r"loss change $f - f(\theta)$")
    ax.ticklabel_format(axis="both", style="sci", scilimits=(-3, 3))
    ax.legend(fontsize=8)
    ax.set_title(r"zoom on the certified descent: $|a| \leq 3t^*$")


def plot_best_known(rows: list[dict[str, Any]], ax: Any = None, family: str = "") -> tuple[Any, Any]:
    """Best-known loss / L_DNC against K, one solid curve per L, and L_SRG / L_DNC dashed in the same colour.
    ``rows``: dicts with ``classes, layers, best_loss, loss_dnc, loss_srg``; ``family``: the tag of a model
    family other than MSE + ReLU (e.g. ``"ce"``), whose constructions are re-optimised for it (in the labels
    as ``L_DNC^ce``).

    Parameters
    ----------
    rows : list of dict
        One per ``(K, L)``: ``classes``, ``layers``, ``best_loss``, ``loss_dnc``, ``loss_srg`` (or None).
    ax : Axes, optional
        Draw into it (default: a new figure).
    family : str, default ""
        The model family's tag (empty: MSE + ReLU).

    Returns
    -------
    (Figure, Axes)

    Examples
    --------
    >>> rows = [{"classes": K, "layers": 2, "best_loss": 1.0, "loss_dnc": 1.0 + 0.1 * K, "loss_srg": 1.05}
    ...         for K in (6, 10)]
    >>> fig, ax = plot_best_known(rows)
    >>> len(fig.axes), len(ax.lines)  # best known, SRG, the line at 1
    (1, 3)
    """
    if ax is None:
        fig, (ax,) = _figure(1, (6.4, 4.4))
    else:
        fig = ax.figure
    layers = sorted({int(r["layers"]) for r in rows})
    for i, L in enumerate(layers):
        color = f"C{i}"
        sel = sorted((r for r in rows if int(r["layers"]) == L), key=lambda r: r["classes"])
        K = [r["classes"] for r in sel]
        ax.plot(
            K, [r["best_loss"] / r["loss_dnc"] for r in sel], "o-", color=color, label=f"best known, L = {L}"
        )
        srg = [(r["classes"], r["loss_srg"] / r["loss_dnc"]) for r in sel if r.get("loss_srg") is not None]
        if srg:
            ax.plot(*zip(*srg), "s--", color=color, mfc="none", label=f"SRG construction, L = {L}")
    from matplotlib.ticker import MaxNLocator

    ax.axhline(1.0, color="0.5", lw=0.8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("number of classes K")
    sup = "^{\\mathrm{" + family.replace("_", "-") + "}}" if family else ""
    ax.set_ylabel(r"loss / $\mathcal{L}_{DNC}" + sup + "$")
    ax.legend(fontsize=8, ncol=2)
    ax.set_title(
        "Best-known L-DUFM loss relative to DNC" + (f" ({family}, re-optimised DNC)" if family else "")
    )
    return fig, ax


def plot_depth_bound(rows: list[dict[str, Any]]) -> tuple[Any, Any]:
    """Two panels against depth L, one colour per (fit term, K): left, the number of singular values of the
    class means above the threshold, largest over ``M_1 .. M_{L-1}`` (``sv_count_max``, solid) and smallest
    (``sv_count_min``, dotted), with K dashed grey; right, ``best_over_dnc_family`` (best-known loss over the
    family's DNC loss).  The colours are named in the right panel's legend, the line styles in the left's.
    ``rows``: dicts with ``fit_term, classes, layers, sv_count_max, sv_count_min, best_over_dnc_family`` (the
    ``depth-bound`` table).

    Parameters
    ----------
    rows : list of dict
        The table's rows.

    Returns
    -------
    (Figure, tuple of Axes)
        The figure and its two panels.

    Examples
    --------
    >>> rows = [{"fit_term": "mse", "classes": 4, "layers": L, "sv_count_max": 4, "sv_count_min": 3,
    ...          "best_over_dnc_family": 0.99} for L in (2, 3)]
    >>> fig, (left, right) = plot_depth_bound(rows)
    >>> len(fig.axes), len(right.lines)
    (2, 2)
    """
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    fig, (ax, ax2) = _figure(2, (11.0, 4.4))
    series = sorted({(str(r["fit_term"]), int(r["classes"])) for r in rows})
    for i, (loss, K) in enumerate(series):
        sel = sorted(
            (r for r in rows if r["fit_term"] == loss and int(r["classes"]) == K), key=lambda r: r["layers"]
        )
        L = [int(r["layers"]) for r in sel]
        color, name = f"C{i}", f"{loss.upper()}, K = {K}"
        # a small horizontal offset per series keeps equal counts of different series apart
        dx = 0.06 * (i - (len(series) - 1) / 2)
        ax.plot([x + dx for x in L], [r["sv_count_max"] for r in sel], "o-", color=color)
        ax.plot([x + dx for x in L], [r["sv_count_min"] for r in sel], "v:", color=color)
        ax.axhline(K, color="0.6", ls="--", lw=0.8)
        ax2.plot(L, [r["best_over_dnc_family"] for r in sel], "o-", color=color, label=name)
    styles = [
        Line2D([], [], color="0.2", marker="o", ls="-", label=r"largest over $M_1 \ldots M_{L-1}$"),
        Line2D([], [], color="0.2", marker="v", ls=":", label="smallest"),
        Line2D([], [], color="0.6", ls="--", lw=0.8, label="K (all directions)"),
    ]
    ax.legend(handles=styles, fontsize=8, loc="center right")
    ax2.legend(fontsize=8)
    for a in (ax, ax2):
        a.xaxis.set_major_locator(MaxNLocator(integer=True))
        a.set_xlabel("number of layers L")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(bottom=0)
    ax.set_ylabel(r"singular values of $M_l$ above $10^{-3}\,\sigma_1$")
    ax.set_title("Non-negligible singular values at the best-known point")
    ax2.axhline(1.0, color="0.5", lw=0.8)
    ax2.set_ylabel(r"best-known loss / $\mathcal{L}_{DNC}$ (same loss)")
    ax2.set_title("Best-known loss relative to DNC")
    return fig, (ax, ax2)
