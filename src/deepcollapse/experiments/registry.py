"""The paper experiments, by name: ``get_experiment(name).run(out_dir, smoke=False, executor="local")``.

The catalogue: imports the figure modules (each registers its experiments with
:func:`deepcollapse.experiments.framework.register` on import) and looks experiments up by name.  The
framework
(:class:`Experiment`, :class:`Context`, :func:`register`) lives in :mod:`deepcollapse.experiments.framework`,
the DUFM helpers in :mod:`deepcollapse.experiments.dufm_helpers`, the figures in ``paper2024``, ``paper2023``
and ``net_reports``; the names below are re-exported so that ``from deepcollapse.experiments.registry
import Context, Experiment, register, ...`` keeps working.

Papers: "2024" = Súkeník, Lampert, Mondelli, *Neural collapse vs. low-rank bias: is deep neural collapse
really optimal?* (NeurIPS 2024); "2023" = Súkeník, Mondelli, Lampert, *Deep neural collapse is provably
optimal for the deep unconstrained features model* (NeurIPS 2023).

A new experiment module: define its experiments with ``register(Experiment(...))`` and add its name to
``EXPERIMENT_MODULES`` (one line).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging

import pandas as pd

from deepcollapse._core.checks import ConfigError, one_of_message
from deepcollapse.experiments.dufm_helpers import (  # noqa: F401  (re-exported)
    DNC_CRITERION,
    FLAGSHIP,
    SMOKE,
    best_means,
    dufm_base,
    point_curves,
    point_layer_frame,
    point_singular_values,
    runs_table,
    seeded_spec,
    summary_table,
    zero_threshold_lam,
)
from deepcollapse.experiments.framework import Context, Experiment, register, registered

__all__ = ["Context", "Experiment", "experiment_table", "get_experiment", "list_experiments", "register"]

log = logging.getLogger(__name__)

#: Modules that register experiments on import, in the order they appear in ``reproduce --list``.  A module
#: that fails to import raises (:func:`_load_experiment_modules`); only one whose third-party dependency is
#: not installed is skipped, with a warning naming the module and the package.
EXPERIMENT_MODULES = (
    "deepcollapse.experiments.paper2024",
    "deepcollapse.experiments.paper2023",
    "deepcollapse.experiments.family_experiments",
    "deepcollapse.experiments.net_reports",
    "deepcollapse.experiments.net_regime_map",
    "deepcollapse.experiments.search_experiments",
    "deepcollapse.experiments.depth_bound",
    "deepcollapse.experiments.basins",
)


def _missing_package(exc: ImportError) -> str | None:
    """The top-level third-party package whose absence ``exc`` reports, else ``None`` (a broken import)."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.partition(".")[0]
    if top == "deepcollapse":
        return None
    try:
        installed = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        installed = False
    return None if installed else top


def _load_experiment_modules() -> None:
    """Import every module of :data:`EXPERIMENT_MODULES` (each registers its experiments).

    A module whose third-party dependency is not installed is skipped with a warning naming both; any other
    import failure (a typo, a missing name of this package) raises.

    Raises
    ------
    ImportError
        One line naming the experiment module and the import that failed (the original chained).
    """
    for name in EXPERIMENT_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            package = _missing_package(exc)
            if package is None:
                raise ImportError(
                    f"experiment module {name} does not import: {type(exc).__name__}: {exc}; fix that "
                    "import (a module of this package is broken, not an optional dependency missing).",
                    name=exc.name,
                    path=exc.path,
                ) from exc
            log.warning(
                "experiments of %s are unavailable: it needs the package %r, which is not installed "
                "(install it to list and run them).",
                name,
                package,
            )


def list_experiments() -> list[Experiment]:
    """All registered experiments: in the order of ``EXPERIMENT_MODULES``, then each module's own order
    (whichever module happened to be imported first elsewhere).

    Returns
    -------
    list of Experiment
        Every experiment of :data:`EXPERIMENT_MODULES` (a module whose third-party dependency is not
        installed is left out, with a warning).

    Examples
    --------
    >>> [e.name for e in list_experiments()][:3]
    ['fig1-srg-matrices', 'fig2-top', 'fig3-left']
    """
    _load_experiment_modules()
    rank = {module: i for i, module in enumerate(EXPERIMENT_MODULES)}
    order = list(registered())
    return sorted(order, key=lambda e: (rank.get(e.body.__module__, len(rank)), order.index(e)))


def get_experiment(name: str) -> Experiment:
    """The experiment called ``name``; unknown names raise ``ConfigError`` listing the known ones.

    Parameters
    ----------
    name : str
        A registered name (``deepcollapse reproduce --list``).

    Returns
    -------
    Experiment

    Examples
    --------
    >>> exp = get_experiment("fig2-top")
    >>> exp.paper, exp.figure, exp.kind
    ('2024', 'Fig. 2 top', 'dufm')
    >>> get_experiment("fig2-topp")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    deepcollapse._core.checks.ConfigError: experiment == 'fig2-topp': did you mean 'fig2-top'? ...
    """
    names = [e.name for e in list_experiments()]
    if name not in names:
        message = one_of_message("experiment", name, names, show_value=False)  # the suggestion first
        raise ConfigError(f"experiment == {name!r}" + message[len("experiment") :])
    return next(e for e in registered() if e.name == name)


def experiment_table() -> pd.DataFrame:
    """Name, paper, figure, kind, expected full-size runtime of every registered experiment.

    Returns
    -------
    pandas.DataFrame
        One row per experiment of :func:`list_experiments`, in its order.

    Examples
    --------
    >>> table = experiment_table()
    >>> table.columns.tolist(), table.loc[0, "name"]
    (['name', 'paper', 'figure', 'kind', 'runtime'], 'fig1-srg-matrices')
    """
    return pd.DataFrame(
        [
            {k: getattr(e, k) for k in ("name", "paper", "figure", "kind", "runtime")}
            for e in list_experiments()
        ]
    )


def __getattr__(name: str) -> object:
    """Figure-level names of the paper modules (``fig2_spec``, ``fig1``, ...), kept importable from here."""
    for module in ("deepcollapse.experiments.paper2024", "deepcollapse.experiments.paper2023"):
        mod = importlib.import_module(module)
        if hasattr(mod, name):
            return getattr(mod, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
