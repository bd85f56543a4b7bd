"""Figures of a sweep report: each main metric against each numeric swept field.

:func:`sweep_panels` decides what to draw (and what to say instead of drawing), :func:`add_sweep_figures`
puts it into a :class:`~deepcollapse.analysis.report.Report`.  Rules (issue 20, "Figures"):

* probabilities (:data:`.fields.PROBABILITIES`) are fractions of runs with binomial Wilson 95% intervals;
* a metric that is exactly 0 at every point gets no panel but a note (the runs, the Wilson upper bound);
* a geometrically spaced sweep (λ in powers of two) gets a log axis (:func:`.stats.geometric_grid_base`);
* axis labels and captions come from the one table of field names (:mod:`.fields`), never column names;
* one colour and marker per curve (:func:`.figures.line_styles`), legends outside the data area.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from deepcollapse.analysis.fields import PROBABILITIES, field_label, field_text
from deepcollapse.analysis.figures import (
    legend_outside,
    line_styles,
    new_axes,
    plot_sweep_curve,
    save_figure,
)
from deepcollapse.analysis.stats import geometric_grid_base, wilson_interval

__all__ = ["SWEEP_METRICS", "SweepPanel", "add_sweep_figures", "sweep_panels"]

#: The metrics a sweep report draws against each swept field (those present in the summary).
SWEEP_METRICS = (
    "final_loss",
    "mean_rank",
    "is_dnc",
    "reaches_dnc",
    "below_dnc",
    "train_acc",
    "test_acc",
    "loss",
    "best_loss",
)


@dataclass
class SweepPanel:
    """One panel of a sweep report, or the note that replaces it.

    Attributes
    ----------
    name : str
        File stem, ``<metric>_vs_<field>``.
    caption : str
        Caption in words and symbols (from :mod:`.fields`).
    figure : Figure or None
        The panel; ``None`` when the metric is constant zero and ``note`` says so instead.
    note : str or None
        The sentence shown instead of a panel.
    """

    name: str
    caption: str
    figure: Figure | None = None
    note: str | None = None


def _value_text(v: Any) -> str:
    """A swept value in a legend: powers of two (exponents on a half-integer grid) as ``2^k``."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if x > 0 and not float(x).is_integer():
        e = np.log2(x)
        if abs(2 * e - round(2 * e)) < 1e-9:
            return f"$2^{{{round(2 * e) / 2:g}}}$"
    return f"{x:g}"


def _zero_note(summary: pd.DataFrame, metric: str, key: str) -> str:
    n = summary["n_runs"].astype(int) if "n_runs" in summary else pd.Series([0])
    what = field_text(metric)
    if metric in PROBABILITIES and int(n.min()) > 0:
        hi = float(wilson_interval(0, int(n.min()))[1])
        runs = f"{int(n.min())}" if n.min() == n.max() else f"{int(n.min())}–{int(n.max())}"
        return (
            f"{what} is 0 at every value of {field_text(key)} (0 of {runs} runs per point; Wilson 95% "
            f"upper bound {hi:.2f} per point): no panel."
        )
    return f"{what} is 0 at every value of {field_text(key)}: no panel."


def sweep_panels(
    summary: pd.DataFrame, varying: Sequence[str], metrics: Sequence[str] = SWEEP_METRICS
) -> list[SweepPanel]:
    """The panels of a sweep report: every metric of ``metrics`` against every numeric field of ``varying``
    with at least two values (one curve per combination of the other swept fields).

    Parameters
    ----------
    summary : pandas.DataFrame
        One row per point: the swept fields, ``n_runs``, ``<metric>_mean``, ``<metric>_std``
        (:func:`.tables.aggregate_runs`).
    varying : sequence of str
        The swept fields (the sweep's varying keys).
    metrics : sequence of str
        Metrics to draw, in order; those absent from ``summary`` or all NaN are skipped.

    Returns
    -------
    list of SweepPanel
        Figures (with captions) and, for metrics that are 0 everywhere, notes instead.

    Examples
    --------
    >>> import pandas as pd
    >>> summary = pd.DataFrame({"lam": [1e-3, 1e-2, 1e-1], "n_runs": 4, "final_loss_mean": [0.5, 0.4, 0.6],
    ...                         "final_loss_std": [0.01, 0.02, 0.01], "is_dnc_mean": 0.0, "is_dnc_std": 0.0})
    >>> panels = sweep_panels(summary, ["lam"], metrics=["final_loss", "is_dnc"])
    >>> [(p.name, p.figure is not None) for p in panels]
    [('final_loss_vs_lam', True), ('is_dnc_vs_lam', False)]
    >>> len(panels[0].figure.axes)
    1
    """
    varying = [k for k in varying if k in summary]
    keys = [k for k in varying if pd.api.types.is_numeric_dtype(summary[k])]
    out: list[SweepPanel] = []
    if not keys or len(summary) < 2:
        return out
    for key in keys:
        others = [k for k in varying if k != key]
        groups = list(summary.groupby(others, dropna=False)) if others else [((), summary)]
        if all(len(g) < 2 for _, g in groups):
            continue
        base = geometric_grid_base(summary[key].astype(float))
        axis = "" if base is None else f", log{base} axis"
        for metric in metrics:
            col = f"{metric}_mean"
            if col not in summary or summary[col].isna().all():
                continue
            name = f"{metric}_vs_{key}"
            caption = f"{field_text(metric)} against {field_text(key)}{axis}"
            values = summary[col].dropna().to_numpy(dtype=float)
            if np.all(values == 0.0):
                out.append(SweepPanel(name, caption, note=_zero_note(summary, metric, key)))
                continue
            how = (
                "fraction of runs, Wilson 95% interval"
                if metric in PROBABILITIES
                else "mean ± 1 std over seeds"
            )
            fig, ax = new_axes(figsize=(6.4, 3.6) if others else (4.8, 3.6))
            spread = 0.06 if metric in PROBABILITIES and len(groups) > 1 else 0.0  # error bars side by side
            for i, ((gkey, sub), style) in enumerate(zip(groups, line_styles(len(groups)))):
                gkey = gkey if isinstance(gkey, tuple) else (gkey,)
                label = ", ".join(_value_text(v) for v in gkey) or None
                dodge = spread * (i - (len(groups) - 1) / 2)
                plot_sweep_curve(
                    sub, key, metric, ax=ax, label=label, logx=base is not None, style=style, dodge=dodge
                )
            if others:  # the legend's title names the other swept fields, its entries their values
                legend_outside(ax, title=", ".join(field_label(k) for k in others), title_fontsize=8)
            out.append(SweepPanel(name, f"{caption}; {how}.", figure=fig))
    return out


def add_sweep_figures(report: Any, summary: pd.DataFrame, varying: Sequence[str], figures_dir: Path) -> None:
    """Add the section "Metrics against the swept fields" to ``report``: the panels of :func:`sweep_panels`
    saved under ``figures_dir`` (PNG and PDF), and one note per metric that is 0 everywhere.

    Parameters
    ----------
    report : Report
        The report to add to (:class:`.report.Report`).
    summary : pandas.DataFrame
        Per-point table (see :func:`sweep_panels`).
    varying : sequence of str
        The swept fields.
    figures_dir : Path
        Where the PNG and PDF files go.

    Returns
    -------
    None
        The section is added to ``report`` (nothing when there is no panel).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from deepcollapse.analysis.report import Report
    >>> import pandas as pd
    >>> summary = pd.DataFrame({"lam": [1e-3, 1e-2, 1e-1], "n_runs": 4, "final_loss_mean": [0.5, 0.4, 0.6],
    ...                         "final_loss_std": [0.01, 0.02, 0.01], "is_dnc_mean": 0.0, "is_dnc_std": 0.0})
    >>> report, folder = Report("a sweep"), Path(tempfile.mkdtemp())
    >>> add_sweep_figures(report, summary, ["lam"], folder)
    >>> sorted(f.name for f in folder.iterdir()), len(report.sections[0].notes)
    (['final_loss_vs_lam.pdf', 'final_loss_vs_lam.png'], 1)
    """
    panels = sweep_panels(summary, varying)
    if not panels:
        return
    report.section(
        "Metrics against the swept fields",
        "Probabilities (fractions of runs) with binomial Wilson 95% intervals; other quantities mean ± 1 "
        "standard deviation over seeds.",
    )
    for panel in panels:
        if panel.figure is None:
            report.add_note(panel.note or "")
            continue
        png, _ = save_figure(panel.figure, figures_dir, panel.name)
        report.add_figure(png, panel.caption)
