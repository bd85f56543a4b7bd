"""deepcollapse: deep neural collapse and the low-rank bias of deep networks.

One package per concept (arrows point down only; ``docs/architecture.md`` states each contract):

- :mod:`deepcollapse.theory` -- numpy/scipy float64 theory: the L-DUFM objective (eq. (1)), conditionally
  optimal layers, DNC and SRG constructions, closed-form optimal losses, comparisons.
- :mod:`deepcollapse.family` -- model families (loss × activation), defined once for every engine.
- :mod:`deepcollapse.metrics` -- collapse metrics (pure functions + streaming statistics + layer capture).
- :mod:`deepcollapse.dufm` -- the batched L-DUFM: config, torch engine, numpy/compiled kernels, trainer,
  classification of trained runs.
- :mod:`deepcollapse.landscape` -- single-point float64 analysis: piecewise calculus, polish, global search,
  Hessian verdicts, solution files.
- :mod:`deepcollapse.nets` -- real networks: config, ResNet20 / MLP backbones + bias-free head, data, the
  supervised loop.
- :mod:`deepcollapse.runs` -- task kinds, executors (local processes, Ray), sweeps.
- :mod:`deepcollapse.experiments` -- the catalogue of the papers' figures (``reproduce``).
- :mod:`deepcollapse.analysis` -- tables, figures, HTML reports (the only place that imports matplotlib).
- :mod:`deepcollapse.cli` -- the ``deepcollapse`` command line.
"""

from deepcollapse import _compat
from deepcollapse._core.checks import ConfigError, DeepCollapseError

_compat.install()

__version__ = "0.1.0"
__all__ = ["ConfigError", "DeepCollapseError", "__version__"]
