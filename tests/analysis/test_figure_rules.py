"""Figures say what they show (issue 20, part 5): distinct colours and markers, legends outside the data,
Wilson intervals for probabilities, no panel for a constant-zero quantity, log axes for geometric grids,
labels and captions from the one table of field names, mathtext titles, derived columns explained."""

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba
from scipy.stats import binomtest, norm

from deepcollapse._core.checks import ConfigError
from deepcollapse.analysis import figures as F
from deepcollapse.analysis.fields import FIELDS, PROBABILITIES, explanations, field_label, field_text
from deepcollapse.analysis.report import Report
from deepcollapse.analysis.stats import geometric_grid_base, wilson_interval
from deepcollapse.analysis.sweep_plots import SWEEP_METRICS, sweep_panels


def _labelled_lines(ax):
    return [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]


def test_singular_values_twelve_groups_colour_by_rank_marker_by_layer():
    """4 layers x 3 rank groups = 12 curves (issue 32: a legend of 17 entries did not read): the colour is the
    rank (one colour per rank, a colour bar), the marker the layer (a legend of 4 entries)."""
    rng = np.random.default_rng(0)
    values = {}
    for layer in range(1, 5):
        rows = []
        for r in (6, 8, 10):
            s = np.sort(rng.uniform(0.1, 1.0, 10))[::-1]
            s[r:] = 1e-6
            rows.append(s)
        values[layer] = np.array(rows)
    fig, ax = F.plot_singular_values(values)
    lines = ax.get_lines()
    assert len(lines) == 12
    by_rank: dict = {}
    for ln, (layer, rank) in zip(lines, [(layer, r) for layer in range(1, 5) for r in (6, 8, 10)]):
        by_rank.setdefault(rank, set()).add(to_rgba(ln.get_color()))
        assert ln.get_marker() == F.MARKERS[layer - 1]
    assert all(len(c) == 1 for c in by_rank.values()) and len(set().union(*by_rank.values())) == 3
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [f"layer {layer}" for layer in range(1, 5)]
    assert len(fig.axes) == 2 and [int(t) for t in fig.axes[1].get_yticks()] == [6, 8, 10]  # the colour bar


def test_line_styles_distinct_beyond_twenty():
    styles = F.line_styles(25)
    assert len({to_rgba(s["color"]) for s in styles}) == 25


@pytest.mark.parametrize("k,n", [(0, 1), (0, 3), (1, 3), (3, 3), (7, 20), (20, 20), (13, 50)])
def test_wilson_interval_matches_scipy_and_lies_in_unit_interval(k, n):
    z = float(norm.ppf(0.975))
    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = wilson_interval(k, n, z=z)
    assert lo == pytest.approx(ref.low, abs=1e-12) and hi == pytest.approx(ref.high, abs=1e-12)
    assert 0.0 <= lo <= k / n <= hi <= 1.0


def _wilson_ref(k, n, z=1.96):
    """The textbook form (Agresti & Coull 1998): (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    p = k / n
    root = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    lo = (p + z**2 / (2 * n) - root) / (1 + z**2 / n)
    hi = (p + z**2 / (2 * n) + root) / (1 + z**2 / n)
    return np.maximum(lo, 0.0), np.minimum(hi, 1.0)


def test_wilson_interval_closed_form_vectorised_and_checks():
    k, n = np.array([0, 2, 5]), np.array([4, 4, 5])
    lo, hi = wilson_interval(k, n)
    ref_lo, ref_hi = _wilson_ref(k, n)
    np.testing.assert_allclose(lo, ref_lo, atol=1e-12)
    np.testing.assert_allclose(hi, ref_hi, atol=1e-12)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ConfigError, match="successes <= n"):
        wilson_interval(4, 3)


@pytest.mark.parametrize(
    "values,base",
    [
        ([2**-10, 2**-9, 2**-8, 2**-7.5], 2),  # configs/wd_rank.yaml: powers of two, not a constant ratio
        ([16, 32, 64, 128], 2),
        ([0.001, 0.01, 0.1], 10),
        ([1, 2, 3, 4], None),  # arithmetic
        ([0.004, 0.008], None),  # two values, ratio 2: a linear axis shows them fine
        ([0.0, 1.0, 2.0], None),
        ([5.0], None),
    ],
)
def test_geometric_grid_base(values, base):
    assert geometric_grid_base(values) == base


def _summary(lams, p_dnc, runs=3):
    return pd.DataFrame(
        {
            "point": [f"p{i}" for i in range(len(lams))],
            "lam": lams,
            "n_runs": runs,
            "final_loss_mean": np.linspace(0.1, 0.5, len(lams)),
            "final_loss_std": 0.01,
            "is_dnc_mean": p_dnc,
            "is_dnc_std": 0.0,
            "below_dnc_mean": 0.0,
            "below_dnc_std": 0.0,
        }
    )


def test_sweep_panels_wilson_log_axis_zero_note_and_captions():
    lams = [2**-10, 2**-9, 2**-8, 2**-7.5]
    panels = {p.name: p for p in sweep_panels(_summary(lams, [0.0, 1 / 3, 2 / 3, 1.0]), ["lam"])}
    # constant zero: a note, no panel
    zero = panels["below_dnc_vs_lam"]
    assert zero.figure is None and "is 0 at every value" in zero.note and "0 of 3 runs" in zero.note
    # a probability: fractions with Wilson error bars inside [0, 1], on a log2 axis
    p = panels["is_dnc_vs_lam"]
    ax = p.figure.axes[0]
    assert ax.get_xscale() == "log" and ax.xaxis.get_transform().base == 2
    assert "Wilson" in p.caption
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [0, 1 / 3, 2 / 3, 1])
    segments = np.array([np.asarray(seg) for c in ax.collections for seg in c.get_segments()])
    lo, hi = _wilson_ref(np.array([0, 1, 2, 3]), 3)
    np.testing.assert_allclose(np.sort(segments[:, :, 1].min(axis=1)), np.sort(lo), atol=1e-12)
    np.testing.assert_allclose(np.sort(segments[:, :, 1].max(axis=1)), np.sort(hi), atol=1e-12)
    assert segments[:, :, 1].min() >= 0 and segments[:, :, 1].max() <= 1
    # words and symbols, no column names
    assert ax.get_ylabel() == "P(DNC)" and ax.get_xlabel() == field_label("lam")
    assert "final_loss" not in panels["final_loss_vs_lam"].caption
    assert panels["final_loss_vs_lam"].caption.startswith("final loss f(θ) against weight decay λ")


def test_sweep_linear_grid_stays_linear():
    panels = sweep_panels(_summary([0.1, 0.2, 0.3], [0.0, 0.5, 1.0], runs=2), ["lam"])
    ax = next(p for p in panels if p.name == "final_loss_vs_lam").figure.axes[0]
    assert ax.get_xscale() == "linear"


def test_every_caption_field_has_words_and_symbols():
    # what sweep reports caption: every metric they draw and every field the shipped configs sweep
    swept = ("lam", "lam_h", "lam_w", "width", "layers", "classes", "lr", "n", "eps")
    for name in (*SWEEP_METRICS, *swept, *PROBABILITIES):
        assert name in FIELDS, name
        assert field_text(name) != name and "_" not in field_text(name).split(" ")[0], name
        assert field_label(name) != name, name
    assert field_label("rank_3") == "rank of $M_{3}$" and field_text("dnc1_2") == "DNC1 of H_2"


def test_report_explains_derived_columns_under_the_table():
    table = pd.DataFrame({"lam": [0.1], "mean_rank_mean": [3.0], "mean_rank_std": [0.5], "rank_2": [3]})
    html = Report("t").add_table(table, "per point").to_html()
    assert "mean numerical rank of the intermediate" in html and "rank_&lt;l&gt;" in html
    assert "sample standard deviation" in html
    assert [c for c, _ in explanations(["is_dnc_mean", "is_dnc_std"])][0] == "is_dnc"


def test_loss_curve_whole_run_in_inset_when_zoomed():
    steps = np.arange(0, 100, 5)
    curves = pd.DataFrame(
        [
            {"step": s, "run": r, "loss": 50.0 * math.exp(-s / 10) + 0.2 + 0.001 * r}
            for s in steps
            for r in range(2)
        ]
    )
    fig, ax = F.plot_loss_curves(curves, 0.25, 0.18)
    assert ax.get_ylim()[1] < 50  # the main view is zoomed around the levels …
    (inset,) = ax.child_axes  # … and the inset shows the whole mean curve, its first value included
    assert max(inset.get_lines()[0].get_ydata()) == pytest.approx(50.2005, rel=1e-6)


def test_theory_titles_are_mathtext():
    from deepcollapse.analysis.theory_plots import plot_srg, srg_figure_data

    fig, axes = plot_srg(srg_figure_data(10, 4, 50, 0.004, 0.004))
    titles = [a.get_title() for a in axes]
    assert all("$" in t and "~" not in t and "^T" not in t for t in titles)
    assert r"\tilde M_{4}^\top \tilde M_{4}" in titles[2]
