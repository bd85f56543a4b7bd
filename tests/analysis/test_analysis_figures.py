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
    np.testing.assert_allclose(line.get_ydata(), [1.0 / (s + 1) + 0.01 for s in range(0, 100, 10)])
    assert len(ax.collections) == 1  # the ± std band
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
    np.testing.assert_allclose(ax.get_lines()[0].get_xdata(), [-9, -8])
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
    assert [ln.get_label() for ln in ax.get_lines()] == ["loss", "fit", "reg"]


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
