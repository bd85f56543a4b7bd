"""deepcollapse.experiments: the catalogue -- the papers' figures by name (``deepcollapse reproduce NAME``).

- :mod:`.framework` -- ``Experiment`` (keyword-only), ``register``, ``Context`` (the experiment's executor,
  output folder and report); imports no figure module.
- :mod:`.registry` -- ``get_experiment(name)``, ``list_experiments()``: imports every figure module
  (``EXPERIMENT_MODULES``), each of which registers its experiments on import.
- Figure modules: :mod:`.paper2023`, :mod:`.paper2024`, :mod:`.family_experiments`,
  :mod:`.search_experiments`,
  :mod:`.net_reports` (networks: the table of network figures in :mod:`.net_figures`, presets
  among them, served by :mod:`.net_presets`), :mod:`.demo`.
- Shared helpers: :mod:`.dufm_helpers` (flagship and smoke settings), :mod:`.outputs` (class means of a run).

Imports: figure modules import matplotlib (through :mod:`deepcollapse.analysis`) and the trainers (torch)
inside the figure functions, on purpose: ``reproduce --list`` and ``--help`` import every figure module and
load neither (a test in tests/cli keeps the parsers torch-free).

Execution (executors, sweeps, task kinds) lives in :mod:`deepcollapse.runs` (``run_tasks``, ``run_sweep``,
``SweepSpec``, ...).

Extension point: a new figure is one function decorated with ``register`` in a figure module (a new module is
one line in ``registry.EXPERIMENT_MODULES``), with a ``smoke`` variant that the check tier runs.
"""

import importlib
from typing import Any

__all__ = ["Experiment", "get_experiment", "list_experiments"]

_HERE = {"Experiment": "framework", "get_experiment": "registry", "list_experiments": "registry"}


def __getattr__(name: str) -> Any:
    if name in _HERE:
        return getattr(importlib.import_module(f"{__name__}.{_HERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(_HERE)
