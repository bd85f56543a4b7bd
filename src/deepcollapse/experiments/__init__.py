"""deepcollapse.experiments — the papers' figures by name, resumable sweeps, executors (local, Ray).

* :mod:`.registry`: ``get_experiment(name).run(out_dir, smoke=False, executor="local") -> report.html``,
  ``list_experiments()``; DUFM and theory figures of both papers (network ones from :mod:`.net_experiments`).
* :mod:`.sweep`: :class:`SweepSpec` (YAML ``base`` / ``grid`` / ``points`` / ``seeds``), :func:`run_sweep`
  (finished points skipped), :func:`collect_results` (one table, mean ± std over seeds).
* :mod:`.executors`: :func:`run_tasks` with ``executor="local"`` (process pool) or ``"ray"``.
* :mod:`.demo`: :func:`run_demo`, the few-minute tour behind ``deepcollapse demo`` / ``make demo``.
"""

from deepcollapse.experiments.executors import run_tasks
from deepcollapse.experiments.registry import Experiment, get_experiment, list_experiments
from deepcollapse.experiments.sweep import SweepResult, SweepSpec, collect_results, load_sweep, run_sweep

__all__ = [
    "Experiment",
    "SweepResult",
    "SweepSpec",
    "collect_results",
    "get_experiment",
    "list_experiments",
    "load_sweep",
    "run_sweep",
    "run_tasks",
]
