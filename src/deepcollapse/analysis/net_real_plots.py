"""Figures of the network experiments (:mod:`deepcollapse.experiments.net_reports`).

- :func:`plot_rank_sweep`: average rank of the head's class means (and training accuracy) against log2 of a
  swept hyper-parameter, one curve per regularisation (small counterparts of 2024 Figs. 9 and 10);
- :func:`plot_dnc_panels`: DNC1 per head layer over the epochs, singular values of the class means at the end
  and, when the theory levels are given, the training loss against ``L_DNC`` and ``L_SRG`` (2024 Figs. 2
  bottom, 4); :func:`plot_dnc_figures`: the same panels, a figure each.

Bands are mean ± sample std over seeds, clipped to the quantity's range (ranks in [0, K], accuracies in [0,
1]).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from deepcollapse.analysis.figures import (
    legend_outside,
    line_styles,
    plot_layer_metric,
    plot_loss_curves,
    plot_singular_values,
)

__all__ = ["plot_dnc_figures", "plot_dnc_panels", "plot_rank_sweep"]

_REG_LABELS = {
    "dufm": r"DUFM-like ($\lambda$ on the head, $\lambda_{H_1}$ on $H_1$)",
    "standard": r"standard ($\lambda$ on all parameters)",
}
_X_LABELS = {"lam": r"$\log_2$ weight decay $\lambda$", "lr": r"$\log_2$ learning rate $\eta$"}


def _clipped_band(
    ax: Any, x: np.ndarray, m: np.ndarray, s: np.ndarray, lo: float, hi: float, label: str, **style: Any
) -> None:
    (line,) = ax.plot(x, m, label=label, **({"marker": "o"} | style))
    s = np.nan_to_num(s)
    ax.fill_between(
        x, np.clip(m - s, lo, hi), np.clip(m + s, lo, hi), color=line.get_color(), alpha=0.25, lw=0
    )


def plot_rank_sweep(summary: pd.DataFrame, x: str, num_classes: int = 10, title: str | None = None) -> Figure:
    """Two panels against ``log2(x)``: average rank of ``M~_2..M~_L`` and training accuracy, one curve per
    regularisation, under ``title`` (what was trained).  ``summary``: columns ``reg, x,
    avg_rank_mean/_std, train_acc_mean/_std``.

    Parameters
    ----------
    summary : DataFrame
        One row per (regularisation, swept value), aggregated over seeds.
    x : str
        The swept column (``lam`` or ``lr``; positive values).
    num_classes : int, default 10
        ``K``: the rank of DNC and the chance accuracy ``1/K``.
    title : str, optional
        The figure's title.

    Returns
    -------
    Figure
        Two axes: the rank and the accuracy.

    Examples
    --------
    >>> import pandas as pd
    >>> summary = pd.DataFrame({"reg": ["dufm", "dufm", "standard", "standard"], "lam": [1e-3, 1e-2] * 2,
    ...                         "avg_rank_mean": [3.0, 2.0, 3.0, 3.0], "avg_rank_std": [0.0, 0.5, 0.0, 0.0],
    ...                         "train_acc_mean": [1.0, 0.9, 1.0, 1.0], "train_acc_std": 0.0})
    >>> fig = plot_rank_sweep(summary, "lam", num_classes=3, title="digits, K = 3")
    >>> len(fig.axes), len(fig.axes[0].lines)  # two curves and the line at K
    (2, 3)
    """
    fig = Figure(figsize=(11.0, 3.6))
    ax_r, ax_a = fig.subplots(1, 2)
    regs = list(summary.groupby("reg", sort=False))
    for (reg, sub), style in zip(regs, line_styles(len(regs))):
        sub = sub.sort_values(x)
        xs = np.log2(sub[x].to_numpy(dtype=float))
        label = _REG_LABELS.get(str(reg), str(reg))
        _clipped_band(
            ax_r,
            xs,
            sub["avg_rank_mean"].to_numpy(float),
            sub["avg_rank_std"].to_numpy(float),
            0,
            num_classes,
            label,
            **style,
        )
        _clipped_band(
            ax_a,
            xs,
            sub["train_acc_mean"].to_numpy(float),
            sub["train_acc_std"].to_numpy(float),
            0,
            1,
            label,
            **style,
        )
    ax_r.axhline(num_classes, color="grey", lw=0.8, ls="--", label=f"K = {num_classes} (DNC)")
    ax_r.set_ylim(0, num_classes + 0.5)
    ax_r.set_xlabel(_X_LABELS.get(x, f"log2 {x}"))
    ax_r.set_ylabel(r"average rank of $\tilde M_2..\tilde M_L$")
    legend_outside(ax_r, fontsize=7)
    ax_a.axhline(1.0 / num_classes, color="grey", lw=0.8, ls=":", label="chance")
    ax_a.set_ylim(0, 1.05)
    ax_a.set_xlabel(_X_LABELS.get(x, f"log2 {x}"))
    ax_a.set_ylabel("training accuracy")
    legend_outside(ax_a, fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_dnc_panels(
    layers: pd.DataFrame,
    singular_values: Mapping[Any, np.ndarray],
    curves: pd.DataFrame,
    levels: Mapping[str, Any] | None,
) -> Figure:
    """DNC1 of the post-ReLU head features ``H_1..H_L`` over the epochs (median over seeds and the 25–75 %
    band), normalised singular values of ``M~_l`` at the end and, with ``levels`` (a
    :func:`deepcollapse.theory.compare` dict), the training loss against ``L_DNC`` and ``L_SRG``.

    ``layers``: :func:`deepcollapse.analysis.tables.layer_metrics_frame` rows (``x = "epoch"``) with ``run``;
    ``curves``: columns ``epoch, run, loss``.

    Parameters
    ----------
    layers : DataFrame
        Per-layer metrics over the epochs (``epoch``, ``run``, ``layer``, ``kind``, ``dnc1``).
    singular_values : mapping of layer to numpy.ndarray
        ``(runs, k)`` singular values of ``M~_l`` at the end.
    curves : DataFrame
        The training loss per epoch and run.
    levels : mapping, optional
        ``loss_dnc`` and ``loss_srg``; None: no loss panel.

    Returns
    -------
    Figure
        Two panels, three with ``levels``.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> layers = pd.DataFrame({"epoch": [1, 2] * 2, "run": 0, "layer": [1, 1, 2, 2], "kind": "post",
    ...                        "dnc1": [1.0, 0.1, 1.0, 0.01]})
    >>> curves = pd.DataFrame({"epoch": [0, 1, 2], "run": 0, "loss": [1.0, 0.6, 0.5]})
    >>> sv = {2: np.array([[1.0, 0.5, 0.1]])}
    >>> len(plot_dnc_panels(layers, sv, curves, {"loss_dnc": 0.5, "loss_srg": 0.45}).axes)
    3
    """
    panels = 3 if levels is not None else 2
    fig = Figure(figsize=(5.6 * panels, 3.6))
    axes = fig.subplots(1, panels)
    _dnc1_panel(layers, axes[0])
    _sv_panel(singular_values, axes[1])
    if levels is not None:
        _loss_panel(curves, levels, axes[2])
    fig.tight_layout()
    return fig


def plot_dnc_figures(
    layers: pd.DataFrame,
    singular_values: Mapping[Any, np.ndarray],
    curves: pd.DataFrame,
    levels: Mapping[str, Any] | None,
) -> dict[str, Figure]:
    """The panels of :func:`plot_dnc_panels`, each a figure of its own: ``"dnc1"``, ``"sv"`` and, with
    ``levels``, ``"loss"`` (the paper presets' reports name them so).

    Parameters
    ----------
    layers, singular_values, curves, levels
        As for :func:`plot_dnc_panels`.

    Returns
    -------
    dict of str to Figure
        One figure per panel.

    Examples
    --------
    >>> layers = pd.DataFrame({"epoch": [1, 2], "run": 0, "layer": 1, "kind": "post", "dnc1": [1.0, 0.1]})
    >>> curves = pd.DataFrame({"epoch": [0, 1, 2], "run": 0, "loss": [1.0, 0.6, 0.5]})
    >>> sorted(plot_dnc_figures(layers, {2: np.array([[1.0, 0.5]])}, curves, None))
    ['dnc1', 'sv']
    """
    draw = {"dnc1": lambda ax: _dnc1_panel(layers, ax), "sv": lambda ax: _sv_panel(singular_values, ax)}
    if levels is not None:
        draw["loss"] = lambda ax: _loss_panel(curves, levels, ax)
    figures = {}
    for key, panel in draw.items():
        fig = Figure(figsize=(5.6, 3.6))
        panel(fig.subplots())
        fig.tight_layout()
        figures[key] = fig
    return figures


def _dnc1_panel(layers: pd.DataFrame, ax: Any) -> None:
    plot_layer_metric(layers, "dnc1", x="epoch", kind="post", ax=ax)
    ax.set_ylabel(r"DNC1 = tr$\Sigma_W$ / tr$\Sigma_B$ of $H_l$")
    legend = ax.get_legend()
    if legend is not None:  # "layer l" -> the paper's symbol H_l
        for text in legend.get_texts():
            text.set_text(f"$H_{{{text.get_text().removeprefix('layer ')}}}$")


def _sv_panel(singular_values: Mapping[Any, np.ndarray], ax: Any) -> None:
    plot_singular_values(singular_values, ax=ax, label_fmt=r"$\tilde M_{}$")
    ax.set_xlabel("index i")
    ax.set_ylabel(r"$s_i(\tilde M_l)$ / $s_1(\tilde M_l)$")


def _loss_panel(curves: pd.DataFrame, levels: Mapping[str, Any], ax: Any) -> None:
    df = curves.rename(columns={"epoch": "step"})
    df = df[df["step"] > 0]
    plot_loss_curves(df, levels.get("loss_dnc"), levels.get("loss_srg"), ax=ax, label="network (mean ± std)")
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss (fit + regularisation)")
