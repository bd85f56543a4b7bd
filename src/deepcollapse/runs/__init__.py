"""deepcollapse.runs: how work is executed -- task kinds, executors (local processes, Ray), sweeps.

- :mod:`.kinds` -- the task-kind table: ``TASK_KINDS`` (``dufm``, ``net``, ``search``), one :class:`TaskKind`
  each (config class, runner, resume, done and resume markers), ``get_kind(name)``.
- :mod:`.executors` -- ``run_tasks(tasks, executor="local"|"ray", workers=, ray_address=)``; a task whose done
  marker exists is skipped, one with a checkpoint is resumed.
- :mod:`.sweep` -- :class:`SweepSpec` (YAML ``base`` / ``grid`` / ``points`` / ``seeds``), ``run_sweep``,
  ``collect_results``.
- :mod:`.search_point` -- the ``search`` task kind (one best-known point: search, then the verdict).

Extension point: a new task kind (a new trainer) is one entry of the task-kind table, read by the sweeps and
the executors alike.
"""

from deepcollapse._core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "TaskKind": "kinds",
        "TASK_KINDS": "kinds",
        "get_kind": "kinds",
        "Task": "executors",
        "TaskError": "executors",
        "TaskOutcome": "executors",
        "run_tasks": "executors",
        "EXECUTORS": "executors",
        "SweepSpec": "sweep",
        "SweepResult": "sweep",
        "load_sweep": "sweep",
        "run_sweep": "sweep",
        "collect_results": "sweep",
        "run_search_point": "search_point",
    },
)
