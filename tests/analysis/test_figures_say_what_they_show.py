"""Figures that cannot mislead (issue 32, point 9): Fig. 1 states the n and λ its numbers are for (the demo's
at the flagship's n = 50, as its section 1), DNC1 bands that respect the log axis, smoke figures marked as
such, titles on the rank sweep and the basin map, ``theory plot srg`` with n, λ and every axis labelled."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deepcollapse.analysis import figures as F
from deepcollapse.theory import compare


class _Report:
    def __init__(self):
        self.text = []

    def section(self, title, text=""):
        self.text.append(title)


class _Context:
    """What fig1 uses of an experiment's Context: its configs, report sections, figures and tables."""

    def __init__(self):
        self.configs, self.report, self.figures, self.tables = {}, _Report(), {}, {}

    def figure(self, fig, name, caption):
        self.figures[name] = (fig, caption)

    def table(self, df, name, caption, columns=None):
        self.tables[name] = (df, caption)


def test_fig1_at_the_flagship_n_reports_the_flagship_losses():
    from deepcollapse.experiments.paper2024 import fig1

    ctx = _Context()
    fig1(ctx, n=50)
    theory, caption = ctx.tables["fig1_theory"]
    c = compare(10, 4, 50, 0.004, 0.004)  # the demo's section 1: 0.1748 / 0.2146
    assert theory["loss_srg"].iloc[0] == pytest.approx(c.loss_srg, rel=1e-12)
    assert theory["loss_dnc"].iloc[0] == pytest.approx(c.loss_dnc, rel=1e-12)
    setting = "K = 10, L = 4, n = 50, λ_H1 = λ_W = 0.004"
    assert setting in caption and setting in ctx.figures["fig1_srg_dnc"][1] and setting in ctx.report.text[0]
    title = ctx.figures["fig1_srg_dnc"][0]._suptitle.get_text()
    assert "$n = 50$" in title and f"{c.loss_srg:.6g}" in title
    assert ctx.configs["theory"]["n"] == 50


def test_the_demo_draws_fig1_at_the_flagship_n():
    import inspect

    from deepcollapse.experiments import demo

    assert 'fig1(ctx, n=FLAGSHIP["n"])' in inspect.getsource(demo._demo_body)


def test_plot_srg_states_n_and_lambda_and_labels_every_axis():
    from deepcollapse.analysis.theory_plots import plot_srg, srg_figure_data

    fig, axes = plot_srg(srg_figure_data(10, 4, 50, 0.004, 0.003))
    title = fig._suptitle.get_text()
    assert "$n = 50$" in title and r"$\lambda_{H_1} = 0.004$" in title and r"$\lambda_W = 0.003$" in title
    c = compare(10, 4, 50, 0.004, 0.003)
    assert f"{c.loss_srg:.6g}" in title and f"{c.loss_dnc:.6g}" in title
    assert all(a.get_ylabel() and a.get_xlabel() for a in axes)
    assert "unit of layer 3" in axes[0].get_ylabel()  # the M_3 panel


def test_dnc1_band_is_the_interquartile_range_of_the_runs():
    """Runs whose DNC1 differ by decades: the band at each step is [25 %, 75 %] of the runs' values,
    computed here with numpy, and the line their median."""
    rng = np.random.default_rng(3)
    rows = []
    for run in range(8):
        depth = rng.uniform(-9, -1)
        for step in (0, 100, 200):
            rows.append(
                {"step": step, "run": run, "layer": 1, "kind": "post", "dnc1": 10.0 ** (depth - step / 100)}
            )
    frame = pd.DataFrame(rows)
    _, ax = F.plot_layer_metric(frame)
    (line,) = ax.get_lines()
    verts = ax.collections[0].get_paths()[0].vertices
    for step in (0, 100, 200):
        values = frame.loc[frame["step"] == step, "dnc1"].to_numpy()
        at = verts[np.isclose(verts[:, 0], step), 1]
        assert at.min() == pytest.approx(np.quantile(values, 0.25), rel=1e-12)
        assert at.max() == pytest.approx(np.quantile(values, 0.75), rel=1e-12)
        assert line.get_ydata()[[0, 100, 200].index(step)] == pytest.approx(np.median(values), rel=1e-12)


def test_smoke_figures_carry_a_visible_mark(tmp_path, monkeypatch):
    """Every figure of a smoke run is marked on its face (also outside the report); full runs are not."""
    from deepcollapse.experiments.framework import Experiment

    saved = []
    real = F.save_figure
    monkeypatch.setattr(F, "save_figure", lambda fig, *a, **k: saved.append(fig) or real(fig, *a, **k))

    def body(ctx):
        fig, ax = F.new_axes()
        ax.plot([0, 1], [1, 0])
        ctx.figure(fig, "line", "A line.")

    exp = Experiment("tiny", "2024", "Fig. 0", "d", "s", "1 s", "theory", body)
    exp.run(tmp_path / "smoke", smoke=True)
    exp.run(tmp_path / "full")
    marks = [[t.get_text() for t in fig.texts] for fig in saved]
    assert marks == [[F.SMOKE_MARK], []]


def test_the_smoke_mark_keeps_the_content_and_adds_a_strip():
    fig, ax = F.new_axes(figsize=(4.0, 3.0))
    ax.set_title("a title")
    F.mark_smoke(fig)
    assert tuple(fig.get_size_inches()) == pytest.approx((4.0, 3.32))
    fig.draw_without_rendering()  # the layout, as savefig does it
    mark = next(t for t in fig.texts if t.get_text() == F.SMOKE_MARK)
    box = mark.get_window_extent()
    assert box.y1 <= ax.get_tightbbox().y0 + 1  # below everything the axes draw ...
    assert box.x0 >= 0 and box.x1 <= fig.bbox.x1  # ... and within the figure, even a narrow one


def test_rank_sweep_and_basin_map_have_titles():
    from deepcollapse.analysis.basin_plots import plot_class_map
    from deepcollapse.analysis.net_real_plots import plot_rank_sweep

    summary = pd.DataFrame(
        {
            "reg": ["standard"] * 2,
            "lam": [1e-4, 1e-3],
            "avg_rank_mean": [9.0, 6.0],
            "avg_rank_std": [0.5, 1.0],
            "train_acc_mean": [1.0, 0.9],
            "train_acc_std": [0.0, 0.1],
        }
    )
    fig = plot_rank_sweep(summary, "lam", title="Average rank against weight decay: resnet8, MNIST")
    assert fig._suptitle.get_text().startswith("Average rank against weight decay")
    table = pd.DataFrame(
        {"width": [6, 12], "lr": [0.5, 0.5], "n_runs": [4, 4]}
        | {f"p_reaches_dnc{s}": [0.25, 0.5] for s in ("", "_lo", "_hi")}
    )
    _, ax = plot_class_map(table, "width", "lr")
    assert ax.get_title().startswith("P(DNC or heading to DNC) over ") and "4 runs per cell" in ax.get_title()


def test_the_mnist5k_rank_figure_is_given_a_title():
    import inspect

    from deepcollapse.experiments import net_reports

    assert "plot_rank_sweep(summary, x, title=title)" in inspect.getsource(net_reports.rank_body)
