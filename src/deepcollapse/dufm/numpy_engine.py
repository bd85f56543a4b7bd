"""The CPU engine of the DUFM loop: parameters as numpy arrays, stepped by the numpy / compiled kernel.

:class:`NumpyEngine` is what :func:`deepcollapse.dufm.fit.fit_loop` steps for ``resolved_backend == "numpy"``
(the torch one is :class:`deepcollapse.dufm.torch_engine.TorchEngine`; both implement the protocol
:class:`deepcollapse.dufm.engine.Engine`, documented there).  :func:`loss_parts` is eq. (1) of one run in
float64, the number the loop's loss history and the progress bar's ``best=`` hold.
"""

from __future__ import annotations

import logging
import math
import signal
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from deepcollapse._core.docs import fill_doc
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.engine import Engine
from deepcollapse.dufm.kernel import advance_limited, one_blas_thread, resolve_kernel
from deepcollapse.theory.objective import evaluate

__all__ = ["NumpyEngine", "loss_parts"]

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------------------------
# losses
# ------------------------------------------------------------------------------------------------------------
@fill_doc
def loss_parts(
    H1: np.ndarray, weights: Sequence[np.ndarray], config: DUFMConfig
) -> tuple[float, float, float]:
    """``(loss, fit, reg)`` of the config's objective (eq. (1), or its family) for one run, in float64:
    :func:`deepcollapse.theory.objective.evaluate` of ``config.problem``.

    Parameters
    ----------
    H1 : numpy.ndarray, (d_1, N)
        The run's features.
    weights : sequence of numpy.ndarray
        Its ``W_1 .. W_L``.
    %(dufm_config)s

    Returns
    -------
    loss, fit, reg : float
        The objective, its fit term and its regularisation term (``loss = fit + reg``).

    Examples
    --------
    >>> from deepcollapse.dufm.config import DUFMConfig
    >>> from deepcollapse.dufm.fit import initial_params
    >>> config = DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
    >>> P = initial_params(config)
    >>> loss, fit, reg = loss_parts(P[0][0], [W[0] for W in P[1:]], config)
    >>> bool(abs(loss - (fit + reg)) < 1e-12)
    True
    """
    parts = evaluate(H1, weights, config.problem)
    return parts.total, parts.fit, parts.reg


def _best_loss(params: Sequence[np.ndarray], alive: np.ndarray, config: DUFMConfig) -> float:
    """The lowest finite float64 loss among the ``alive`` runs (NaN if none): the progress bar's best=."""
    vals = [loss_parts(params[0][r], [W[r] for W in params[1:]], config)[0] for r in np.flatnonzero(alive)]
    vals = [v for v in vals if math.isfinite(v)]
    return min(vals) if vals else math.nan


# ------------------------------------------------------------------------------------------------------------
# the numpy engine (the torch one is deepcollapse.dufm.torch_engine.TorchEngine)
# ------------------------------------------------------------------------------------------------------------
def _ignore_sigint() -> None:  # worker initialiser: Ctrl-C is handled by the parent only
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class NumpyEngine(Engine):
    """The CPU engine: parameters as numpy arrays, stepped by :func:`deepcollapse.dufm.kernel.advance`
    in-process or in worker processes (the loop picks it for ``resolved_backend == "numpy"``)."""

    timed_chunks = False  # chunks of a fixed number of run-steps per process

    def __init__(self, params: list[np.ndarray], config: DUFMConfig):
        self.params = params
        self.config = config
        self._problem = config.problem  # built (and validated) once, not at every chunk
        self._logged = False
        self.alive = np.ones(params[0].shape[0], dtype=bool)
        self._pool: ProcessPoolExecutor | None = None
        if config.workers > 1 and config.runs > 1:
            import multiprocessing as mp

            # fork (Linux): workers only run the numpy kernel; scripts need no ``if __name__ == "__main__"``
            method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
            self._pool = ProcessPoolExecutor(
                max_workers=min(config.workers, config.runs),
                mp_context=mp.get_context(method),
                initializer=_ignore_sigint,
            )

    def advance(self, start: int, lrs: np.ndarray) -> dict[int, int]:
        # by kernel.advance_limited, in-process or split over the worker processes
        c = self.config
        if not self._logged:  # (here, not in __init__: importing numba must not delay the signal handlers)
            # compiled (numba) or numpy: the same GD to float rounding; float32 trajectories of cross-entropy
            # and σ_ε may drift apart between the two over many steps, so the log names the one that ran
            log.info("DUFM kernel: %s, model %s", resolve_kernel(), c.family.name)
            self._logged = True
        idx = np.flatnonzero(self.alive)
        if idx.size == 0:
            return {}
        problem, sub = self._problem, c.sub_batch
        if self._pool is None:
            groups = [idx]
            results = [advance_limited([p[idx] for p in self.params], lrs, start, problem, sub_batch=sub)]
        else:
            groups = [g for g in np.array_split(idx, min(c.workers, idx.size)) if g.size]
            futs = [
                self._pool.submit(
                    advance_limited, [p[g] for p in self.params], lrs, start, problem, sub_batch=sub
                )
                for g in groups
            ]
            results = [f.result() for f in futs]
        diverged: dict[int, int] = {}
        for g, (new, div) in zip(groups, results):
            for p, q in zip(self.params, new):
                p[g] = q
            for j, s in div.items():
                diverged[int(g[j])] = s
                self.alive[g[j]] = False
        return diverged

    def freeze(self, runs: Iterable[int]) -> None:
        self.alive[list(runs)] = False

    def best_loss(self) -> float:
        """:meth:`Engine.best_loss` in float64 (:func:`loss_parts`)."""
        with one_blas_thread():
            return _best_loss(self.params, self.alive, self.config)

    def numpy_params(self) -> list[np.ndarray]:
        """:meth:`Engine.numpy_params`: the arrays trained, not copies."""
        return self.params

    def close(self) -> None:
        # the worker processes, if any
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
