"""deepcollapse.dufm: gradient descent on the batched L-DUFM (2024 paper eq. (1)) and what it found.

- :mod:`.config` -- :class:`DUFMConfig`, the training job (problem, schedule, seeds, engine), validated once.
- :mod:`.model` -- the torch engine: ``init_params`` (one generator per run), ``forward``, ``objective``,
  analytic and autograd gradients, batched over R runs.
- :mod:`.kernel` -- the numpy CPU kernel (``advance``, ``advance_limited``, ``numpy_gradients``);
  :mod:`.compiled` -- the same step loop compiled with numba (optional, used when installed).
- :mod:`.fit` -- ``fit_dufm(config, callbacks) -> DUFMFit``: the GD loop, in memory, nothing written;
  :mod:`.engine` -- the protocol ``Engine`` of the engines it steps, :mod:`.numpy_engine` and
  :mod:`.torch_engine`.
- :mod:`.trainer` -- ``train_dufm`` / ``resume_dufm``: that loop plus the run folder (checkpoints,
  ``metrics.jsonl`` with per-layer metrics) as callbacks.
- :mod:`.classify` -- ``classify(params, problem, criteria) -> DUFMSummary``: runs in memory classified
  (``dnc``, ``srg_like``, ``low_rank``, ...) against the theory, with the polish step (``classify_run``: one
  run); :mod:`.criteria` -- its thresholds (``Criteria``); :mod:`.convergence` -- how far a run is from a
  verdict; :mod:`.results` -- ``DUFMRun``, ``DUFMSummary`` and the typed results of the steps;
  :mod:`.summary` -- ``analyze_dufm``: a run folder read and classified, ``summary.json``.
- :mod:`.points` -- ``as_runs``: a ``DUFMFit`` or a run folder as :class:`~.points.TrainedRuns`, what
  ``classify``, ``landscape``, ``polish`` and ``collapse_metrics`` take; ``as_point``: one run of it.

Extension point: a new engine implements :class:`.engine.Engine` and is chosen in :mod:`.fit` (by
``backend``); a new model family is added in :mod:`deepcollapse.family`, not here.
"""

from deepcollapse._core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "DUFMConfig": "config",
        "DEFAULT_H1_SCALE": "config",
        "INITS": "config",
        "LR_SCHEDULES": "config",
        "DTYPES": "config",
        "DEVICES": "config",
        "GRADS": "config",
        "BACKENDS": "config",
        "DUFMParams": "model",
        "init_params": "model",
        "forward": "model",
        "objective": "model",
        "analytic_gradients": "model",
        "autograd_gradients": "model",
        "targets": "model",
        "labels": "model",
        "init_run": "model",
        "fit_dufm": "fit",
        "DUFMFit": "fit",
        "FitCallback": "fit",
        "FitState": "fit",
        "ProgressBar": "fit",
        # (not "classify": the name of the submodule dufm.classify; its function is deepcollapse.classify)
        "Criteria": "criteria",
        "train_dufm": "trainer",
        "resume_dufm": "trainer",
        "observe_run": "trainer",
        "RUN_FILES": "trainer",
        "analyze_dufm": "summary",
        "TrainedRuns": "points",
        "as_runs": "points",
        "DUFMSummary": "results",
        "DUFMRun": "results",
        "PolishResult": "results",
        "RunObservation": "results",
        "CLASSIFICATIONS": "classify",
        "advance": "kernel",
        "numpy_gradients": "kernel",
    },
)
