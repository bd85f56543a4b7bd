"""Figures of the model-family experiments: the (K, L) ratio grid and run curves with bounded bands."""

from __future__ import annotations

import numpy as np
import pandas as pd

from deepcollapse.analysis.theory_plots import plot_ratio_grid, plot_runs_against


def test_ratio_grid_marks_cells_where_dnc_is_not_worse():
    rows = [
        {"classes": K, "layers": L, "ratio": 1.05 if K == 6 and L == 3 else 0.9}
        for K in (6, 7)
        for L in (3, 4)
    ]
    fig, ax = plot_ratio_grid(rows, title="t")
    marks = [line for line in ax.get_lines() if line.get_marker() == "x"]
    assert len(marks) == 1 and list(marks[0].get_xdata()) == [6] and list(marks[0].get_ydata()) == [3]
    assert ax.get_xlabel() and ax.get_ylabel()


def test_run_curves_band_respects_bounds_and_log_band_stays_positive():
    runs = pd.DataFrame({"layers": [2, 2, 3, 3], "rank": [10, 4, 10, 10], "act": ["relu"] * 4})
    fig, ax = plot_runs_against(runs, "layers", "rank", group="act", bounds=(0, 10))
    band = ax.collections[0].get_paths()[0].vertices
    assert band[:, 1].max() <= 10 + 1e-12 and band[:, 1].min() >= 0
    pos = pd.DataFrame({"eps": [0.1, 0.1, 0.2, 0.2], "dnc1": [1e-6, 1e-2, 1e-5, 1e-3]})
    fig, ax = plot_runs_against(pos, "eps", "dnc1", logx=True, logy=True)
    verts = ax.collections[0].get_paths()[0].vertices
    assert np.all(verts[:, 1] > 0) and ax.get_yscale() == "log"


def test_ratio_grid_shows_zero_ties_apart_from_dnc_wins():
    rows = [
        {"classes": K, "layers": L, "ratio": 1.0 if K == 7 else 0.9, "both_zero": K == 7}
        for K in (6, 7)
        for L in (3, 4)
    ]
    fig, ax = plot_ratio_grid(rows)
    assert not [line for line in ax.get_lines() if line.get_marker() == "x"]
    dots = [line for line in ax.get_lines() if line.get_marker() == "."]
    assert len(dots) == 1 and sorted(dots[0].get_ydata()) == [3, 4]
