"""deepcollapse.analysis — tables, figures and HTML reports from run folders (the only matplotlib user).

* :mod:`.tables`: run folders -> pandas (one row per run; ``aggregate_runs``: mean ± std per point).
* :mod:`.figures`: ``plot_*(data, ax=None) -> (fig, ax)`` for the papers' panels; ``save_figure`` writes PNG
  and PDF.  Agg canvas, never ``plt.show()``.
* :mod:`.theory_plots`: 2024 Fig. 1 (SRG vs DNC matrices) and Fig. 3 left (L_SRG / L_DNC against r).
* :mod:`.report`: ``Report``, a self-contained HTML file (base64 figures, tables, config, versions, git hash).
* :mod:`.fields`: the one table of field names (axis label, caption text, meaning of every column).
* :mod:`.stats`: ``wilson_interval`` (binomial proportions), ``geometric_grid_base`` (log axes for sweeps).
* :mod:`.sweep_plots`: the figures of a sweep report (``sweep_panels``, ``add_sweep_figures``).

Submodules are imported on demand (``from deepcollapse.analysis.figures import plot_band``) so that importing
the package does not load matplotlib.
"""
