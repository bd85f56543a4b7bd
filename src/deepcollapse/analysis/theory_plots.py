"""Figures of the theory engine (2024 paper: Figure 3 left, Figure 1).

Plot functions follow ``plot_x(data, ax=None) -> (fig, ax)``: ``data`` is a plain dict (from the ``*_data``
helpers, JSON-friendly), nothing is shown, figures are built with :class:`matplotlib.figure.Figure` (no pyplot
state, Agg canvas), so saving is ``fig.savefig(path)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from deepcollapse._checks import ConfigError
from deepcollapse.theory import dnc_solution, loss_dnc, loss_srg, srg_geometry, srg_solution

__all__ = ["plot_ratio", "plot_srg", "ratio_data", "srg_figure_data"]


def ratio_data(
    rs: Sequence[int], layers: Sequence[int], n: int, lam_h: float, lam_w: float
) -> dict[str, Any]:
    """``L_SRG / L_DNC`` for ``K = C(r, 2)``, ``r in rs``, one curve per ``L in layers`` (same ``λ_W`` per
    layer).

    Returns ``{"r": [...], "classes": [...], "curves": {L: {"ratio": [...], "dnc_is_zero": [...]}}, ...}``.
    """
    out: dict[str, Any] = {
        "r": list(rs),
        "classes": [r * (r - 1) // 2 for r in rs],
        "curves": {},
        "n": n,
        "lam_h": lam_h,
        "lam_w": lam_w,
    }
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
        out["curves"][int(L)] = {"ratio": ratios, "dnc_is_zero": zero}
    return out


def plot_ratio(data: dict[str, Any], ax: Axes | None = None) -> tuple[Figure, Axes]:
    """Figure 3 (left) of the 2024 paper: ``L_SRG / L_DNC`` against ``r`` (``K = C(r, 2)``), one line per
    ``L``. Points where the DNC optimum is the all-zero point (``L_DNC = 1/2``) are drawn hollow."""
    if ax is None:
        fig = Figure(figsize=(5.0, 3.6), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure  # type: ignore[assignment]
    r = np.asarray(data["r"])
    for L, curve in data["curves"].items():
        ratio = np.asarray(curve["ratio"], dtype=float)
        zero = np.asarray(curve["dnc_is_zero"], dtype=bool)
        (line,) = ax.plot(r, ratio, marker="o", label=f"L = {L}")
        if zero.any():
            ax.plot(r[zero], ratio[zero], "o", mfc="white", color=line.get_color())
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("r  (K = r(r-1)/2 classes)")
    ax.set_ylabel("L_SRG / L_DNC")
    ax.set_title(f"n = {data['n']}, λ_H = {data['lam_h']}, λ_W = {data['lam_w']}", fontsize=9)
    ax.legend()
    return fig, ax


def srg_figure_data(classes: int, layers: int, n: int, lam_h: float, lam_w: float | Sequence[float]) -> dict:
    """Matrices of Figure 1: SRG ``M_{L-1}``, ``M~_L``, ``M~_L^T M~_L`` and DNC ``M~_L^T M~_L`` at the optimal
    scales (unit scales, flagged by ``unit_scales``, where an optimum is the all-zero point).  Needs ``L >=
    3``."""
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
    return {
        "classes": classes,
        "layers": layers,
        "construction": srg.construction,
        "unit_scales": unit,
        "srg_mid": M_mid,
        "srg_last": Mt_last,
        "srg_gram": Mt_last.T @ Mt_last,
        "dnc_gram": Mt_dnc.T @ Mt_dnc,
        "loss_srg": srg.loss,
        "loss_dnc": dnc.loss,
    }


def plot_srg(data: dict[str, Any], ax: Sequence[Axes] | None = None) -> tuple[Figure, Sequence[Axes]]:
    """Figure 1 of the 2024 paper: SRG class means ``M_{L-1}``, ``M~_L``, Gram ``M~_L^T M~_L``, and the DNC
    Gram."""
    if ax is None:
        fig = Figure(figsize=(13.0, 3.4), layout="constrained")
        axes: Sequence[Axes] = fig.subplots(1, 4)
    else:
        axes = ax
        fig = axes[0].figure  # type: ignore[assignment]
    L = data["layers"]
    panels = [
        (data["srg_mid"], f"SRG  M_{L - 1}"),
        (data["srg_last"], f"SRG  M~_{L}"),
        (data["srg_gram"], f"SRG  M~_{L}^T M~_{L}"),
        (data["dnc_gram"], f"DNC  M~_{L}^T M~_{L}"),
    ]
    for a, (M, title) in zip(axes, panels):
        M = np.asarray(M)
        vmax = float(np.abs(M).max()) or 1.0
        im = a.imshow(M, cmap="RdBu_r", vmin=-vmax, vmax=vmax, interpolation="nearest")
        a.set_title(title, fontsize=10)
        a.set_xlabel("class")
        fig.colorbar(im, ax=a, shrink=0.8)
    suffix = " (unit scales: an optimum is all-zero)" if data.get("unit_scales") else ""
    fig.suptitle(
        f"K = {data['classes']}, L = {L}, {data['construction']}: L_SRG = {data['loss_srg']:.6g}, "
        f"L_DNC = {data['loss_dnc']:.6g}{suffix}",
        fontsize=10,
    )
    return fig, axes
