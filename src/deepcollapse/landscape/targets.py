"""What ``dufm landscape`` analyses: a *target* read as ``(params, problem, description)``.

``load_point`` reads a DUFM run folder, a search folder, a solution ``.npz`` or builds a construction;
``TARGET_HELP`` says what a target may be (the CLI's help and the error messages).  Both are re-exported by
:mod:`deepcollapse.landscape.verdicts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from deepcollapse.theory.problem import Problem

__all__ = ["TARGET_HELP", "load_point"]


TARGET_HELP = (
    "a DUFM run folder (config.yaml + params.pt or checkpoint.pt), a search folder (search.json + "
    "solutions/), a solution .npz (arrays H1, W_1 .. W_L, n, lam_h, lam_w), or --construction dnc|srg"
)


def load_point(
    target: str | None = None,
    *,
    construction: str | None = None,
    classes: int = 10,
    layers: int = 4,
    n: int = 50,
    lam_h: float = 0.004,
    lam_w: float | Sequence[float] = 0.004,
    width: int | None = 30,
    run: int | None = None,
    loss: str | None = None,
    activation: str | None = None,
    eps: float | None = None,
) -> tuple[list[np.ndarray], Problem, str]:
    """``(params [H_1, W_1..W_L], problem, description)`` of a landscape target (:data:`TARGET_HELP`).

    A run folder gives run ``run`` (default: the run with the lowest float64 loss); a search folder its
    best solution (``solutions/rank01.npz``); a construction is built by the theory engine at the given
    problem (``width`` rows, default 30), re-optimised for the family ``loss, activation, eps``
    (:func:`~deepcollapse.landscape.search_starts.family_construction`; not given: MSE + ReLU).  A file or a
    run folder brings its own family (MSE + ReLU for one written before families were recorded): family
    options that contradict it are refused.  Anything else raises a one-line ``ConfigError``.

    Parameters
    ----------
    target : str, optional
        A run folder, a search folder or a solution ``.npz`` (:data:`TARGET_HELP`); ``None`` with
        ``construction``.
    construction : {"dnc", "srg"}, optional
        Build that construction instead of reading a target.
    classes, layers, n, lam_h, lam_w
        The problem of a construction (defaults: the flagship, ``K = 10, L = 4, n = 50, λ = 0.004``).
    width : int or None, default 30
        The rows of a construction's ``H_1`` and hidden weights.
    run : int, optional
        The run of a run folder (default the lowest loss).
    loss, activation, eps
        The model family (a construction's; checked against a file's or a run's).

    Returns
    -------
    params : list of ndarray
        ``[H_1, W_1, ..., W_L]``.
    problem : Problem
        Its instance of eq. (1).
    description : str
        The point in words.

    Examples
    --------
    >>> params, problem, description = load_point(
    ...     construction="dnc", classes=3, layers=2, n=2, lam_h=0.01, lam_w=0.01, width=4
    ... )
    >>> [p.shape for p in params], description
    ([(4, 6), (4, 4), (3, 4)], 'dnc construction, K = 3, L = 2, n = 2')
    """
    # imported here: the command line's --help reads TARGET_HELP without loading the theory
    from pathlib import Path

    from deepcollapse._core.checks import ConfigError, check_choice
    from deepcollapse.landscape.piecewise import Problem
    from deepcollapse.landscape.solution_file import check_family_matches, load_solution

    given: dict[str, Any] = {"loss": loss, "activation": activation, "eps": eps}
    if construction is not None:
        from deepcollapse.landscape.search_starts import family_construction

        check_choice("--construction", construction, ("dnc", "srg"))
        problem = Problem.make(classes, n, lam_h, lam_w, layers).with_family(
            loss or "mse", activation or "relu", eps
        )
        sol = family_construction(problem, construction, width=width)
        name = construction if construction == "dnc" else f"srg ({sol.construction})"
        fam = "" if problem.family.is_default else f", {problem.family.name}"
        return (
            [sol.H1, *sol.weights],
            problem,
            f"{name} construction, K = {classes}, L = {layers}, n = {n}{fam}",
        )
    if target is None:
        raise ConfigError(f"TARGET is missing, must be {TARGET_HELP}.")
    path = Path(target)
    if path.is_dir() and (path / "search.json").is_file():
        path = path / "solutions" / "rank01.npz"
    if path.is_file() and path.suffix == ".npz":
        data = load_solution(path)
        assert data.family is not None and data.classes and data.n and data.lam_h  # set by load_solution
        recorded = check_family_matches(data.family, f"TARGET == {str(path)!r}", **given)
        problem = Problem(data.classes, data.layers, data.n, data.lam_h, tuple(data.lam_w or ())).with_family(
            recorded.loss.name, recorded.activation.name, recorded.eps
        )
        return data.params, problem, f"solution file {path}"
    if path.is_dir() and (path / "config.yaml").is_file():
        from deepcollapse.dufm.config import DUFMConfig
        from deepcollapse.dufm.points import as_runs

        config = DUFMConfig.from_yaml(path / "config.yaml")
        if not (path / "params.pt").is_file() and not (path / "checkpoint.pt").is_file():
            raise ConfigError(
                f"TARGET == {str(path)!r} has no params.pt or checkpoint.pt, must be {TARGET_HELP}."
            )
        check_family_matches(config.family, f"TARGET == {str(path)!r}", **given)
        runs = as_runs(path)
        assert runs is not None  # a folder
        R = len(runs.params[0])
        run = runs.best_run() if run is None else run
        if not 0 <= run < R:
            raise ConfigError(f"--run == {run}, must be in 0 .. {R - 1}.")
        return runs.point(run), runs.problem, f"run {run} of {path}"
    raise ConfigError(f"TARGET == {str(target)!r}, must be {TARGET_HELP}.")
