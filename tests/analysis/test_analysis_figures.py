"""Plot functions: data in, (fig, ax) out, drawing into a given axis, bands at ± std, PNG + PDF written."""

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from deepcollapse.analysis import figures as F


def _curves():
    rows = [
        {"step": s, "run": r, "loss": 1.0 / (s + 1) + 0.01 * r} for s in range(0, 100, 10) for r in range(3)
    ]
    return pd.DataFrame(rows)


def test_loss_curves_band_and_levels():
    fig, ax = F.plot_loss_curves(_curves(), 0.3, 0.2)
    assert isinstance(fig, Figure)
    (line,) = [ln for ln in ax.get_lines() if ln.get_label().startswith("GD")]
    # log axis: the geometric mean over runs, with a geometric (always positive) band
    ref = [np.exp(np.mean([np.log(1.0 / (s + 1) + 0.01 * r) for r in range(3)])) for s in range(0, 100, 10)]
    np.testing.assert_allclose(line.get_ydata(), ref, rtol=1e-12)
    assert len(ax.collections) == 1  # the band
    assert ax.collections[0].get_paths()[0].vertices[:, 1].min() > 0
    levels = sorted(ln.get_ydata()[0] for ln in ax.get_lines() if "L_" in ln.get_label())
    assert levels == [0.2, 0.3]


def test_plot_into_given_axis():
    fig = Figure()
    ax = fig.add_subplot()
    f2, a2 = F.plot_sweep_curve(
        pd.DataFrame({"lam": [2**-9, 2**-8], "r_mean": [7.0, 5.0], "r_std": [1.0, 0.5]}),
        "lam",
        "r",
        ax=ax,
        log2x=True,
    )
    assert f2 is fig and a2 is ax
    np.testing.assert_allclose(ax.get_lines()[0].get_xdata(), [2**-9, 2**-8])  # λ itself, on a log2 axis
    assert ax.get_xscale() == "log" and r"$\lambda$" in ax.get_xlabel()  # words and symbols (mathtext)
    # band from mean - std to mean + std
    verts = ax.collections[0].get_paths()[0].vertices
    assert verts[:, 1].min() == pytest.approx(4.5) and verts[:, 1].max() == pytest.approx(8.0)


def test_layer_metric_singular_values_matrix_and_save(tmp_path):
    layers = pd.DataFrame(
        [
            {"step": s, "run": r, "layer": l, "kind": "post", "dnc1": 10.0**-s}
            for s in range(3)
            for r in range(2)
            for l in (1, 2)
        ]
    )
    _, ax = F.plot_layer_metric(layers)
    assert len(ax.get_lines()) == 2
    _, ax = F.plot_singular_values({1: np.array([[4.0, 2.0, 0.0], [2.0, 1.0, 0.0]])})
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata()[:2], [1.0, 0.5])
    fig, _ = F.plot_matrix(np.array([[1.0, -1.0], [0.0, 2.0]]), symmetric=True, title="M")
    png, pdf = F.save_figure(fig, tmp_path, "m")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    _, ax = F.plot_loss_parts(
        pd.DataFrame({"step": [0, 1], "loss": [1.0, 0.5], "fit": [0.8, 0.3], "reg": [0.2, 0.2]})
    )
    assert [ln.get_label().split()[0] for ln in ax.get_lines()] == ["loss", "fit", "regularisation"]


def test_loss_panel_shows_a_curve_that_has_not_come_down_yet():
    """The smoke Fig. 2 case: 300 steps, losses still far above L_DNC, L_SRG: the curve's end is in view."""
    rows = [
        {"step": s, "run": r, "loss": 3.0 - s / 200 + 0.05 * r} for s in range(0, 301, 50) for r in range(2)
    ]
    _, ax = F.plot_loss_curves(pd.DataFrame(rows), 0.136, 0.111)
    lo, hi = ax.get_ylim()
    last = [ln for ln in ax.get_lines() if ln.get_label().startswith("GD")][0].get_ydata()[-1]
    assert lo < 0.111 and last < hi  # both theory levels and the end of the curve are visible


def test_bands_of_probabilities_stay_in_0_1():
    df = pd.DataFrame({"width": [16, 32, 64], "is_dnc_mean": [0.1, 0.5, 0.9], "is_dnc_std": [0.4, 0.6, 0.4]})
    _, ax = F.plot_sweep_curve(df, "width", "is_dnc")
    verts = ax.collections[0].get_paths()[0].vertices
    assert verts[:, 1].min() >= 0.0 and verts[:, 1].max() <= 1.0
    assert ax.get_ylabel() == "P(DNC)"


def test_singular_values_of_runs_with_different_ranks_are_not_averaged():
    """Two runs of rank 2 and one of rank 3: two curves (coloured by their rank), and the band of the
    normalised values never exceeds 1."""
    sv = np.array([[2.0, 1.0, 1e-9], [4.0, 2.0, 1e-8], [1.0, 0.9, 0.5]])
    fig, ax = F.plot_singular_values({3: sv})
    assert len(ax.get_lines()) == 2 and ax.get_lines()[0].get_color() != ax.get_lines()[1].get_color()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["layer 3"]
    assert [int(t) for t in fig.axes[1].get_yticks()] == [2, 3]  # the colour bar names the ranks
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata(), [1.0, 0.9, 0.5])
    for band in ax.collections:
        assert band.get_paths()[0].vertices[:, 1].max() <= 1.0 + 1e-12


def test_plotting_never_touches_pyplot(tmp_path):
    """No pyplot (hence no GUI backend, no plt.show) anywhere in the figure pipeline: checked in a fresh
    interpreter after drawing and saving every kind of panel."""
    import subprocess
    import sys

    code = f"""
import sys, numpy as np, pandas as pd
from deepcollapse.analysis import figures as F
fig, ax = F.plot_matrix(np.eye(3))
F.plot_singular_values({{1: np.array([[2.0, 1.0]])}}, ax=ax)
F.save_figure(fig, {str(tmp_path)!r}, "x")
assert "matplotlib.pyplot" not in sys.modules, "pyplot imported"
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "x.png").is_file() and (tmp_path / "x.pdf").is_file()
