"""A fit held in memory or a run folder, read alike: ``as_runs(source) -> TrainedRuns``.

:func:`~deepcollapse.dufm.classify.classify`, :func:`~deepcollapse.landscape.verdicts.landscape`,
:func:`~deepcollapse.landscape.piecewise.polish` and :func:`~deepcollapse.metrics.collapse.collapse_metrics`
take a :class:`~deepcollapse.dufm.fit.DUFMFit` or a DUFM run folder (``config.yaml`` with ``params.pt`` or
``checkpoint.pt``) where they take arrays; this module turns either into :class:`TrainedRuns` (every run in
float64), and :func:`as_point` into the one point a single-point analysis needs.  Numpy only, except reading
a folder's ``.pt`` file (torch, on first use).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.io import load_checkpoint, read_jsonl
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.theory.objective import evaluate, forward

if TYPE_CHECKING:
    from deepcollapse.theory.problem import Problem

__all__ = ["TrainedRuns", "as_point", "as_runs", "read_run_params"]


@dataclass(frozen=True, eq=False)
class TrainedRuns:
    """The runs of a fit or of a run folder, in float64.

    Attributes
    ----------
    config : DUFMConfig
        The training job.
    params : list of ndarray
        ``[H1, W_1 .. W_L]``, each with the leading run axis (``config.runs``).
    diverged : dict of int to int
        ``{run: step}`` of the runs marked diverged.
    histories : dict of int to list of (int, float or None)
        Each run's logged ``(step, loss)``.
    step : int
        The step the parameters are at.
    """

    config: DUFMConfig
    params: list[np.ndarray]
    diverged: dict[int, int]
    histories: dict[int, list[tuple[int, float | None]]]
    step: int

    @property
    def problem(self) -> Problem:
        """The instance of eq. (1) the runs solve (``config.problem``, widths included)."""
        return self.config.problem

    def best_run(self) -> int:
        """The run with the lowest finite float64 loss (run 0 when none is finite).

        Returns
        -------
        int
            Its index.
        """
        losses = [evaluate(*self.point_parts(r), self.problem).total for r in range(len(self.params[0]))]
        finite = np.where(np.isfinite(losses), losses, np.inf)
        return int(np.argmin(finite))

    def point_parts(self, r: int) -> tuple[np.ndarray, list[np.ndarray]]:
        """``(H1, [W_1 .. W_L])`` of run ``r``."""
        return self.params[0][r], [W[r] for W in self.params[1:]]

    def point(self, run: int | None = None) -> list[np.ndarray]:
        """``[H1, W_1 .. W_L]`` of one run.

        Parameters
        ----------
        run : int, optional
            The run (default :meth:`best_run`).

        Returns
        -------
        list of ndarray
            Its parameters, float64.
        """
        R = len(self.params[0])
        if run is None:
            run = self.best_run()
        if not 0 <= run < R:
            raise ConfigError(f"run == {run}, must be in 0 .. {R - 1}.")
        return [p[run] for p in self.params]

    def collapse_inputs(self, run: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(features, labels, weights)`` of the last layer of one run, for ``collapse_metrics``.

        Parameters
        ----------
        run : int, optional
            The run (default :meth:`best_run`).

        Returns
        -------
        features : ndarray, (N, d_L)
            ``H_L^T`` (rows = samples).
        labels : ndarray of int, (N,)
            ``n`` samples per class, in class order.
        weights : ndarray, (K, d_L)
            ``W_L``, the classifier.
        """
        H1, *weights = self.point(run)
        _, post, _ = forward(H1, weights, self.problem.family)
        labels = np.repeat(np.arange(self.config.classes), self.config.n)
        return post[-1].T, labels, weights[-1]


def _is_fit(x: Any) -> bool:
    # duck-typed rather than isinstance(x, DUFMFit): importing dufm.fit would load torch
    return all(hasattr(x, a) for a in ("config", "H1", "weights", "diverged", "logged_steps", "history"))


def as_runs(source: Any) -> TrainedRuns | None:
    """The runs of a ``DUFMFit`` or a run folder; ``None`` for anything else (arrays).

    Parameters
    ----------
    source : DUFMFit, TrainedRuns, str, Path or other
        A fit, a DUFM run folder (``config.yaml`` and ``params.pt`` or ``checkpoint.pt``), or arrays.

    Returns
    -------
    TrainedRuns or None
        The runs in float64, or ``None`` when ``source`` is neither a fit nor a folder.

    Examples
    --------
    >>> import deepcollapse as dc
    >>> fit = dc.fit_dufm(dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10))
    >>> runs = as_runs(fit)
    >>> runs.step, [p.shape for p in runs.point(1)], as_runs([fit.H1, *fit.weights])
    (20, [(4, 4), (4, 4), (2, 4)], None)
    """
    if isinstance(source, TrainedRuns):
        return source
    if isinstance(source, (str, Path)):
        return _read_folder(Path(source))
    if not _is_fit(source):
        return None
    return TrainedRuns(
        config=source.config,
        params=[np.asarray(p, dtype=np.float64) for p in source.params],
        diverged=dict(source.diverged),
        histories={r: source.history(r) for r in range(len(source.H1))},
        step=int(source.step),
    )


def _same_problem(given: Problem, own: Problem) -> bool:
    """``given`` is ``own``, or ``own`` without its widths (a Problem built without them)."""
    return given == own or (given.widths is None and given == dataclasses.replace(own, widths=None))


def check_problem(given: Problem | None, runs: TrainedRuns) -> Problem:
    """The runs' problem, after checking that ``given`` (if any) is the same instance of eq. (1)."""
    own = runs.problem
    if given is not None and not _same_problem(given, own):
        raise ConfigError(
            f"problem == {given!r} differs from the runs' {own!r}; pass the fit or folder alone."
        )
    return own


def as_point(
    source: Any, problem: Problem | None = None, *, run: int | None = None
) -> tuple[list[np.ndarray], Problem]:
    """``(params, problem)`` of one point: arrays with their problem, or one run of a fit or a run folder.

    Parameters
    ----------
    source : sequence of ndarray, DUFMFit, str or Path
        ``[H1, W_1 .. W_L]`` of one point, a fit, or a DUFM run folder.
    problem : Problem, optional
        The instance of eq. (1); required with arrays; with a fit or a folder it must be theirs.
    run : int, optional
        The run of a fit or a folder (default: the lowest float64 loss).

    Returns
    -------
    params : list of ndarray
        ``[H1, W_1 .. W_L]``.
    problem : Problem
        Its instance of eq. (1).

    Examples
    --------
    >>> import deepcollapse as dc
    >>> fit = dc.fit_dufm(dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10))
    >>> params, problem = as_point(fit, run=0)
    >>> [p.shape for p in params], problem == fit.config.problem
    ([(4, 4), (4, 4), (2, 4)], True)
    """
    runs = as_runs(source)
    if runs is not None:
        own = check_problem(problem, runs)
        return runs.point(run), own
    if problem is None:
        raise ConfigError(
            "problem: required with arrays [H1, W_1 .. W_L] (or pass a DUFMFit or a run folder)."
        )
    if run is not None:
        raise ConfigError(f"run == {run}: only for a DUFMFit or a run folder, not for arrays of one point.")
    return list(source), problem


def _read_folder(out: Path) -> TrainedRuns:
    """The runs of the DUFM run folder ``out`` (parameters, divergences, ``metrics.jsonl``)."""
    if not (out / "config.yaml").is_file():
        raise ConfigError(f"out_dir == {str(out)!r}, must be a DUFM run folder (no config.yaml).")
    config = DUFMConfig.from_yaml(out / "config.yaml")
    data, params = read_run_params(out, config)
    histories: dict[int, list[tuple[int, float | None]]] = {}
    for rec in read_jsonl(out / "metrics.jsonl", strict=True):  # a torn last line of a killed writer skipped
        if isinstance(rec.get("run"), int) and isinstance(rec.get("step"), int):
            histories.setdefault(rec["run"], []).append((rec["step"], rec.get("loss")))
    return TrainedRuns(
        config=config,
        params=params,
        diverged={int(k): int(v) for k, v in data.get("diverged", {}).items()},
        histories=histories,
        step=int(data.get("step", -1)),
    )


def read_run_params(out_dir: str | Path, config: DUFMConfig) -> tuple[dict[str, Any], list[np.ndarray]]:
    """The saved point of a DUFM run folder: ``params.pt`` (a finished run), else ``checkpoint.pt``.

    Parameters
    ----------
    out_dir : str or Path
        The run folder.
    config : DUFMConfig
        Its config (the shapes the arrays must have).

    Returns
    -------
    tuple of (dict, list of numpy.ndarray)
        The loaded file (``step``, ``diverged``, ...) and ``[H1, W_1 .. W_L]`` in float64, each with a leading
        run axis of length ``config.runs``.  A missing, damaged or foreign file is a one-line ``ConfigError``
        naming it.

    Examples
    --------
    >>> import os, tempfile
    >>> import deepcollapse as dc
    >>> out = os.path.join(tempfile.mkdtemp(), "run")
    >>> from deepcollapse.dufm.trainer import train_dufm
    >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
    >>> _ = train_dufm(config, out, progress=False, max_steps=10)  # checkpoint.pt only
    >>> data, params = read_run_params(out, config)
    >>> data["step"], [p.shape for p in params], params[0].dtype
    (10, [(2, 4, 4), (2, 4, 4), (2, 2, 4)], dtype('float64'))
    """
    import torch

    out = Path(out_dir)
    if (out / "params.pt").is_file():
        src = out / "params.pt"
        hint = f"delete it and run deepcollapse dufm resume {out} to write it again from checkpoint.pt"
    else:
        src = out / "checkpoint.pt"
        hint = f"delete it to start the run again from config.yaml (deepcollapse dufm resume {out})"
        if not src.is_file():
            raise ConfigError(f"out_dir == {str(out)!r}, must hold params.pt or checkpoint.pt.")
    data = load_checkpoint(src, hint=hint)
    tensors = data["params"] if "params" in data else [data.get("H1"), *(data.get("weights") or [])]
    if not isinstance(tensors, (list, tuple)):
        tensors = [tensors]
    shapes = [tuple(t.shape) if isinstance(t, torch.Tensor) else None for t in tensors]
    if len(tensors) != config.layers + 1 or any(
        s is None or len(s) != 3 or s[0] != config.runs for s in shapes
    ):
        raise ConfigError(
            f"{src}: holds no L-DUFM point of this run ({config.runs} runs of H1, W_1 .. W_{config.layers} "
            f"expected; found {shapes}); {hint}."
        )
    return data, [t.double().numpy() for t in tensors]
