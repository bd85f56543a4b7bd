"""The regime map's figures as a reader sees them (issue 45, point 6): the smoke mark never under a legend,
a setting outside the grid neither outlined nor in the legend, and every legend entry of a setting a box that
is drawn."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.patches import Rectangle

from deepcollapse.analysis.figures import SMOKE_MARK, mark_smoke
from deepcollapse.analysis.regime_plots import plot_outcome_map, plot_value_map

CELLS = pd.DataFrame(
    {
        "lam": [0.000625, 0.0025, 0.000625, 0.0025],
        "lr": [0.04, 0.04, 0.16, 0.16],
        "width": 64,
        "outcome": ["dnc", "low_rank", "constant", "not_converged"],
        "agreement": [1.0, 0.5, 1.0, 1.0],
        "seeds": 2,
        "p_dnc": [1.0, 0.5, 0.0, 0.0],
        "p_low_rank": [0.0, 0.5, 0.0, 0.0],
        "p_constant": [0.0, 0.0, 1.0, 0.0],
        "p_not_converged": [0.0, 0.0, 0.0, 1.0],
        "bottleneck_rank": [10.0, 6.0, 1.0, 9.5],
    }
)
INSIDE = ("inside", 0.0025, 0.04)
BETWEEN = ("between cells", 0.00125, 0.08)
OUTSIDE = ("paper Fig. 4 (MNIST)", 0.04, 0.01)  # the smoke grid's λ ends at 0.0025: outside


def _boxes(fig):
    return [p for ax in fig.axes for p in ax.patches if isinstance(p, Rectangle) and p.get_linewidth() >= 2]


def _legend_texts(fig):
    """The legends and every name they (or, for the value maps, the title) give the outlined settings."""
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    names = [t.get_text() for lg in legends for t in lg.get_texts()]
    title = fig._suptitle.get_text().replace("\n", " ") if fig._suptitle is not None else ""
    names += [part.split("box: ", 1)[1].rstrip(")") for part in title.split("; ") if "box: " in part]
    return legends, names


@pytest.mark.parametrize("plot", ["outcome", "value"])
def test_marks_outside_the_grid_are_not_drawn_and_the_smoke_mark_is_clear(plot):
    marks = [INSIDE, BETWEEN, OUTSIDE]
    if plot == "outcome":
        fig = plot_outcome_map(CELLS, marks, title="Where the network lands")
    else:
        fig = plot_value_map(CELLS, "bottleneck_rank", "rank", marks, title="Smallest rank")
    mark_smoke(fig)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    boxes = _boxes(fig)
    assert len(boxes) == 2  # inside and between cells; the setting outside the grid is not outlined
    legends, names = _legend_texts(fig)
    assert "inside" in names and "between cells" in names and OUTSIDE[0] not in names
    # no legend overlaps the smoke mark
    renderer = canvas.get_renderer()
    smoke = [t for t in fig.texts if t.get_text() == SMOKE_MARK]
    smoke = smoke or [fig._supxlabel]
    assert smoke[0].get_text() == SMOKE_MARK
    mark_box = smoke[0].get_window_extent(renderer)
    for lg in legends:
        assert not lg.get_window_extent(renderer).overlaps(mark_box), lg
    # nor the panels
    for ax in fig.axes:
        assert not ax.get_window_extent(renderer).overlaps(mark_box)


def test_a_setting_at_the_grid_edge_is_drawn_on_its_cell():
    fig = plot_outcome_map(CELLS, [("edge", 0.000625, 0.16)])
    (box,) = _boxes(fig)
    assert np.allclose(box.get_xy(), (-0.48, 1 - 0.48))
