"""deepcollapse: deep neural collapse and the low-rank bias of deep networks.

Subpackages (arrows point down only):

- :mod:`deepcollapse.theory` -- numpy/scipy float64 theory engine: the L-DUFM objective, conditionally optimal
  layers, DNC and SRG constructions, closed-form optimal losses.
- :mod:`deepcollapse.metrics` -- collapse metrics (pure functions + streaming statistics + layer capture).
- :mod:`deepcollapse.models` -- the batched L-DUFM, ResNet20 + bias-free MLP head.
- :mod:`deepcollapse.data` -- dataset loaders from standard file formats.
- :mod:`deepcollapse.training` -- full-batch GD on the L-DUFM; the supervised loop for real networks.
- :mod:`deepcollapse.experiments` -- paper experiment registry, sweeps, executors (local, Ray).
- :mod:`deepcollapse.analysis` -- tables, figures, HTML reports.
"""

from deepcollapse._checks import ConfigError, DeepCollapseError

__version__ = "0.1.0"
__all__ = ["ConfigError", "DeepCollapseError", "__version__"]
