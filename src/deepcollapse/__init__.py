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

The front door: ``import deepcollapse as dc`` gives the names a notebook starts with, each imported on first
use (PEP 562; ``import deepcollapse`` itself loads no torch):

- the problem and its theory: ``dc.Problem``, ``dc.loss_dnc``, ``dc.loss_srg``, ``dc.compare``, each for
  the Problem's family (``loss`` × ``activation``, as ``deepcollapse theory compare --loss ... --activation
  ...``; SRG of a linear activation is refused);
- the batched L-DUFM: ``dc.DUFMConfig``, ``dc.fit_dufm`` (in memory) -> ``dc.DUFMFit``, ``dc.classify``
  with ``dc.Criteria`` -> ``dc.DUFMSummary``; ``dc.train_dufm`` / ``dc.resume_dufm`` / ``dc.analyze_dufm``
  (run folders);
- metrics and landscapes: ``dc.collapse_metrics``, ``dc.search`` (the global search,
  :func:`deepcollapse.landscape.search.search_dufm`), ``dc.load_solution``.

Examples
--------
>>> import deepcollapse as dc
>>> problem = dc.Problem(classes=4, layers=3, n=5, lam_h=0.004, lam_w=0.004)
>>> dnc, srg = dc.loss_dnc(problem), dc.loss_srg(problem)  # L_DNC; L_SRG is undefined for K < 6
>>> bool(dnc.loss < 0.5), srg  # below the all-zero network's 1/2
(True, None)
>>> ce = dc.compare(problem.with_family(loss="ce"))  # the cross-entropy family's candidates
>>> ce.family, ce.loss_dnc == dc.loss_dnc(problem.with_family(loss="ce")).loss
('ce+relu', True)
>>> config = dc.DUFMConfig(classes=3, n=2, layers=2, width=4, steps=100, log_every=50, runs=2)
>>> summary = dc.classify(dc.fit_dufm(config))
>>> len(summary.runs), summary.step
(2, 100)
"""

from deepcollapse._core.checks import ConfigError, DeepCollapseError
from deepcollapse._core.lazy import lazy_exports as _lazy_exports

__version__ = "0.1.0"

# public name -> the package that exports it (resolved on first use, so no torch at import)
# (the defining modules: a package attribute named like one of its submodules, e.g. dufm.classify, becomes
# that submodule once it is imported)
_FRONT_DOOR = {
    "Problem": "theory.problem",
    "loss_dnc": "theory.front_door",
    "loss_srg": "theory.front_door",
    "compare": "theory.front_door",
    "collapse_metrics": "metrics.collapse",
    "DUFMConfig": "dufm.config",
    "DUFMFit": "dufm.fit",
    "DUFMSummary": "dufm.results",
    "Criteria": "dufm.criteria",
    "fit_dufm": "dufm.fit",
    "classify": "dufm.classify",
    "train_dufm": "dufm.trainer",
    "resume_dufm": "dufm.trainer",
    "analyze_dufm": "dufm.summary",
    "search": "landscape.search:search_dufm",
    "load_solution": "landscape.solution_file",
}
__getattr__, _lazy_dir, _lazy_all = _lazy_exports(__name__, _FRONT_DOOR)
__all__ = ["ConfigError", "DeepCollapseError", "__version__", *_lazy_all]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_lazy_all))
