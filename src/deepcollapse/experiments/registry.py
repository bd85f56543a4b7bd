"""The paper experiments, by name: ``get_experiment(name).run(out_dir, smoke=False, executor="local")``.

The catalogue: imports the figure modules (each registers its experiments with
:func:`deepcollapse.experiments.framework.register` on import) and looks experiments up by name.  The
framework
(:class:`Experiment`, :class:`Context`, :func:`register`) lives in :mod:`deepcollapse.experiments.framework`,
the DUFM helpers in :mod:`deepcollapse.experiments.dufm_helpers`, the figures in ``paper2024``, ``paper2023``
and ``net_experiments``; the names below are re-exported so that ``from deepcollapse.experiments.registry
import Context, Experiment, register, ...`` keeps working.

Papers: "2024" = Súkeník, Lampert, Mondelli, *Neural collapse vs. low-rank bias: is deep neural collapse
really optimal?* (NeurIPS 2024); "2023" = Súkeník, Mondelli, Lampert, *Deep neural collapse is provably
optimal for the deep unconstrained features model* (NeurIPS 2023).

A new experiment module: define its experiments with ``register(Experiment(...))`` and add its name to
``EXPERIMENT_MODULES`` (one line).
"""

from __future__ import annotations

import importlib
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

#: Modules that register experiments on import, in the order they appear in ``reproduce --list``.  Modules
#: whose dependencies are missing (e.g. the supervised trainer) are skipped with a debug message.
EXPERIMENT_MODULES = (
    "deepcollapse.experiments.paper2024",
    "deepcollapse.experiments.paper2023",
    "deepcollapse.experiments.family_experiments",
    "deepcollapse.experiments.net_experiments",
    "deepcollapse.experiments.net_real",
    "deepcollapse.experiments.net_mnist5k",
    "deepcollapse.experiments.net_regime_map",
    "deepcollapse.experiments.search_experiments",
    "deepcollapse.experiments.depth_bound",
    "deepcollapse.experiments.basins",
)


def _load_experiment_modules() -> None:
    for name in EXPERIMENT_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # an optional part (e.g. the network trainer) is not available
            log.debug("experiments of %s unavailable: %s", name, exc)


def list_experiments() -> list[Experiment]:
    """All registered experiments: in the order of ``EXPERIMENT_MODULES``, then each module's own order
    (whichever module happened to be imported first elsewhere).

    Returns
    -------
    list of Experiment
        Every experiment of the modules that import here (a module whose optional part is missing is
        left out).

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
