"""Full-batch GD on the batched L-DUFM, in memory: ``fit_dufm(config, callbacks=()) -> DUFMFit``.

``fit_dufm`` advances ``config.runs`` independent runs (seeds ``seed + r``) for ``config.steps`` steps of
plain GD ``θ ← θ − lr_t ∇ eq.(1)`` (2024 paper) -- no momentum, no clipping -- and returns the final
parameters, the float64 loss history and the divergence steps.  Nothing is written: the run folder of
:func:`~deepcollapse.dufm.trainer.train_dufm` (``config.yaml``, ``metrics.jsonl``, checkpoints, ``params.pt``,
``summary.json``) is this same loop plus the callbacks of :mod:`deepcollapse.dufm.trainer`, so a fit and a run
folder of one config hold the same numbers bit for bit.

Callbacks (Keras / Lightning style): objects with the hooks of :class:`FitCallback`, called with the
:class:`FitState` at the start, after every chunk of steps and at the end.  The loop stops at every multiple
of ``config.log_every`` (the *logged* steps, where the loss history is taken, also step 0 and the last step)
and of ``config.checkpoint_every``, and at most every ``_CHUNK`` steps (about 1.5 s) in between.

Engines.  ``backend='numpy'`` (default on CPU): :mod:`deepcollapse.dufm.kernel`, hand-written gradients on
OpenBLAS (the compiled step loop of :mod:`deepcollapse.dufm.compiled` when numba is installed, else numpy
with ``out=`` buffers), one BLAS thread, ``sub_batch`` runs at a time; ``workers > 1`` splits the runs over
that many single-threaded processes (one per core is the fastest layout on CPU).  ``backend='torch'``:
:mod:`deepcollapse.dufm.torch_engine`, batched ``bmm``/``baddbmm`` analytic gradients or autograd
(``grad='autograd'``), on ``cpu`` or ``cuda``, stepped by ``step_loop`` (graph-safe chunks with one host
synchronisation each, on cuda replayed as CUDA graphs); its chunks last about 1.5 s.  Both implement
:class:`~deepcollapse.dufm.engine.Engine`, the loop's one contract with them (no branch on the engine).

Divergence: a run whose output sum (numpy) or gradient (torch) is not finite at step ``t`` is marked
diverged at ``t`` and frozen there; the other runs go on.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.docs import fill_doc
from deepcollapse._core.progress import progress_bar
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.engine import Engine
from deepcollapse.dufm.kernel import one_blas_thread
from deepcollapse.dufm.model import init_params
from deepcollapse.dufm.numpy_engine import NumpyEngine, loss_parts
from deepcollapse.dufm.points import as_runs
from deepcollapse.dufm.torch_engine import TorchEngine

if TYPE_CHECKING:
    from deepcollapse._core.interrupt import StopFlag

__all__ = [
    "DUFMFit",
    "ENGINES",
    "FitCallback",
    "FitState",
    "ProgressBar",
    "fit_dufm",
    "fit_loop",
    "initial_params",
]

log = logging.getLogger(__name__)

_CHUNK = 1000  # at most this many steps between callbacks / interrupt checks ...
_CHUNK_RUN_STEPS = 16_000  # ... and about this many run-steps per process (~1.5 s): Ctrl-C is honoured fast
_CHUNK_SECONDS = 1.5  # the torch engine's chunks: about this long (measured as it goes), 10 .. _CHUNK steps


# ------------------------------------------------------------------------------------------------------------
# the result, the state a callback sees, the callback protocol
# ------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class DUFMFit:
    """The outcome of :func:`fit_dufm`: ``R = config.runs`` runs of GD on eq. (1), held in memory.

    The arrays are read-only; ``H1[r]`` and ``weights[l][r]`` are run ``r`` (seed ``config.run_seeds[r]``).

    Attributes
    ----------
    config : DUFMConfig
        The training job.
    H1 : ndarray, shape (R, d_1, N)
        The final features, in ``config.dtype``.
    weights : tuple of ndarray
        ``W_1 .. W_L``, shapes ``(R, d_{l+1}, d_l)`` (``d_{L+1} = K``).
    step : int
        The step reached (``config.steps`` unless the loop was stopped early).
    diverged : dict of int to int
        ``{run: step}`` of the runs marked diverged (frozen since).
    logged_steps : ndarray of int, shape (T,)
        The steps of the loss history: multiples of ``config.log_every``, the first and the last step.
    loss_history, fit_history, reg_history : ndarray, shape (T, R)
        Eq. (1) and its two terms at those steps, float64 (:func:`~.numpy_engine.loss_parts`); NaN for a run
        marked diverged.  ``train_dufm`` writes the same numbers to ``metrics.jsonl`` (non-finite as
        ``null``).

    Examples
    --------
    >>> import deepcollapse as dc
    >>> fit = dc.fit_dufm(dc.DUFMConfig(classes=3, n=2, layers=2, width=4, steps=50, log_every=25, runs=2))
    >>> fit.H1.shape, [W.shape for W in fit.weights], fit.step
    ((2, 4, 6), [(2, 4, 4), (2, 3, 4)], 50)
    >>> fit.logged_steps.tolist(), fit.loss_history.shape
    ([0, 25, 50], (3, 2))
    >>> bool((fit.loss_history[-1] < fit.loss_history[0]).all())
    True
    """

    config: DUFMConfig
    H1: np.ndarray
    weights: tuple[np.ndarray, ...]
    step: int
    diverged: dict[int, int]
    logged_steps: np.ndarray
    loss_history: np.ndarray
    fit_history: np.ndarray
    reg_history: np.ndarray

    @property
    def params(self) -> list[np.ndarray]:
        """``[H1, W_1, .., W_L]``, each with the leading run axis.

        Returns
        -------
        list of ndarray
            The final parameters (read-only, not copied).

        Examples
        --------
        >>> import deepcollapse as dc
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> fit = dc.fit_dufm(config)
        >>> [p.shape for p in fit.params]
        [(2, 4, 4), (2, 4, 4), (2, 2, 4)]
        """
        return [self.H1, *self.weights]

    @property
    def finished(self) -> bool:
        """``step == config.steps``.

        Returns
        -------
        bool
            The fit reached the last step of its schedule (False when stopped early).

        Examples
        --------
        >>> import deepcollapse as dc
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> fit = dc.fit_dufm(config)
        >>> fit.finished
        True
        """
        return self.step == self.config.steps

    def run(self, r: int) -> tuple[np.ndarray, list[np.ndarray]]:
        """``(H1, [W_1 .. W_L])`` of run ``r``.

        Parameters
        ----------
        r : int
            The run's index, ``0 <= r < config.runs``.

        Returns
        -------
        H1 : ndarray, (d_1, N)
            Its features.
        weights : list of ndarray
            Its ``W_1 .. W_L`` (views, read-only).

        Examples
        --------
        >>> import deepcollapse as dc
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> fit = dc.fit_dufm(config)
        >>> H1, weights = fit.run(1)
        >>> H1.shape, [W.shape for W in weights]
        ((4, 4), [(4, 4), (2, 4)])
        """
        return self.H1[r], [W[r] for W in self.weights]

    def collapse_inputs(self, run: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(features, labels, weights)`` of one run's last layer: what ``collapse_metrics(fit)`` reads.

        Parameters
        ----------
        run : int, optional
            The run (default: the lowest float64 loss).

        Returns
        -------
        features : ndarray, (N, d_L)
            ``H_L^T`` in float64.
        labels : ndarray of int, (N,)
            The class of each column.
        weights : ndarray, (K, d_L)
            ``W_L``, the classifier.

        Examples
        --------
        >>> import deepcollapse as dc
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> features, labels, W = dc.fit_dufm(config).collapse_inputs(run=0)
        >>> features.shape, labels.tolist(), W.shape
        ((4, 4), [0, 0, 1, 1], (2, 4))
        """
        runs = as_runs(self)
        assert runs is not None  # a fit
        return runs.collapse_inputs(run)

    def history(self, r: int) -> list[tuple[int, float | None]]:
        """Run ``r``'s loss history as ``[(step, loss or None)]`` (``None``: not finite or diverged), as read
        from ``metrics.jsonl``.

        Parameters
        ----------
        r : int
            The run's index, ``0 <= r < config.runs``.

        Returns
        -------
        list of (int, float or None)
            ``(step, loss)`` at the logged steps.

        Examples
        --------
        >>> import deepcollapse as dc
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> fit = dc.fit_dufm(config)
        >>> [s for s, _ in fit.history(0)]
        [0, 10, 20]
        """
        return [
            (int(s), float(v) if math.isfinite(v) else None)
            for s, v in zip(self.logged_steps, self.loss_history[:, r])
        ]


@dataclass(eq=False)
class FitState:
    """What the loop shows its callbacks (:class:`FitCallback`): a live view, valid during the call only.

    Attributes
    ----------
    config : DUFMConfig
        The training job.
    step : int
        The step the parameters are at.
    start_step : int
        The step this loop started from (0, or a checkpoint's step on resume).
    stop_at : int
        The step the loop runs to (``config.steps``, or less when stopped early on purpose).
    diverged : dict of int to int
        ``{run: step}`` of every run marked diverged so far.
    new_diverged : dict of int to int
        Those marked in the last chunk.
    logged : bool
        ``step`` is a logged step (step 0 of a fresh fit, a multiple of ``log_every``, the last step):
        ``loss``, ``fit`` and ``reg`` hold the float64 loss parts of every run (NaN where diverged).
    loss, fit, reg : ndarray of shape (R,) or None
        As above (``None`` at other steps).
    stopping : bool
        A stop was requested (SIGINT / SIGTERM in :func:`~deepcollapse.dufm.trainer.train_dufm`): the loop
        ends after this chunk.
    """

    config: DUFMConfig
    step: int
    start_step: int
    stop_at: int
    diverged: dict[int, int]
    new_diverged: dict[int, int] = field(default_factory=dict)
    logged: bool = False
    loss: np.ndarray | None = None
    fit: np.ndarray | None = None
    reg: np.ndarray | None = None
    stopping: bool = False
    _engine: Any = None
    _params: list[np.ndarray] | None = None

    def params(self) -> list[np.ndarray]:
        """``[H1, W_1 .. W_L]`` at ``step`` as numpy arrays (a host copy, made once per step; read only:
        with the numpy engine these are the arrays being trained).

        Returns
        -------
        list of ndarray
            The parameters with the run axis.

        Examples
        --------
        >>> import deepcollapse as dc
        >>> class Show(FitCallback):
        ...     def on_end(self, state):
        ...         print([p.shape for p in state.params()])
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> _ = dc.fit_dufm(config, [Show()])
        [(2, 4, 4), (2, 4, 4), (2, 2, 4)]
        """
        if self._params is None:
            self._params = self._engine.numpy_params()
        return self._params

    def best_loss(self) -> float:
        """The lowest finite loss among the runs not diverged (NaN if none): from ``loss`` at a logged step,
        else computed by the engine.

        Returns
        -------
        float
            The lowest loss at ``step``.

        Examples
        --------
        >>> import deepcollapse as dc
        >>> class Show(FitCallback):
        ...     def on_end(self, state):
        ...         print(state.best_loss() == min(state.loss))
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> _ = dc.fit_dufm(config, [Show()])
        True
        """
        if self.logged and self.loss is not None:
            alive = [v for r, v in enumerate(self.loss) if r not in self.diverged and math.isfinite(v)]
            return float(min(alive)) if alive else math.nan
        return float(self._engine.best_loss())

    def _moved(self, step: int, new: dict[int, int], stopping: bool) -> None:
        self.step, self.new_diverged, self.stopping = step, new, stopping
        self.logged, self.loss, self.fit, self.reg, self._params = False, None, None, None, None


class FitCallback:
    """Hooks of :func:`fit_dufm`'s loop (all optional: subclass and override what you need).

    Order: ``on_start`` once (after the loss at the starting step is logged), ``on_chunk`` after every chunk
    of steps (``state.step`` advanced), ``on_end`` once when the loop has reached ``state.stop_at`` or was
    asked to stop, ``close`` always, also after an exception (release files, bars).  The callbacks of one fit
    are called in the order given.  A callback reads the state and must not change the parameters.

    Examples
    --------
    >>> import deepcollapse as dc
    >>> from deepcollapse.dufm.fit import FitCallback
    >>> class Steps(FitCallback):
    ...     def __init__(self):
    ...         self.seen = []
    ...     def on_chunk(self, state):
    ...         if state.logged:
    ...             self.seen.append(state.step)
    >>> cb = Steps()
    >>> _ = dc.fit_dufm(dc.DUFMConfig(classes=3, n=2, layers=2, width=4, steps=30, log_every=10), [cb])
    >>> cb.seen
    [10, 20, 30]
    """

    @fill_doc
    def on_start(self, state: FitState) -> None:
        """Before the first step (``state.step == state.start_step``).

        Parameters
        ----------
        %(dufm_state)s

        Returns
        -------
        None
            The base class does nothing.

        Examples
        --------
        >>> import deepcollapse as dc
        >>> class Show(FitCallback):
        ...     def on_start(self, state):
        ...         print(state.step, state.stop_at)
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> _ = dc.fit_dufm(config, [Show()])
        0 20
        """

    @fill_doc
    def on_chunk(self, state: FitState) -> None:
        """After a chunk of steps.

        Parameters
        ----------
        %(dufm_state)s

        Returns
        -------
        None
            The base class does nothing.

        Examples
        --------
        >>> import deepcollapse as dc
        >>> class Show(FitCallback):
        ...     def on_chunk(self, state):
        ...         print(state.step, state.logged)
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> _ = dc.fit_dufm(config, [Show()])
        10 True
        20 True
        """

    @fill_doc
    def on_end(self, state: FitState) -> None:
        """After the last chunk (``state.step == state.stop_at``, or earlier with ``state.stopping``).

        Parameters
        ----------
        %(dufm_state)s

        Returns
        -------
        None
            The base class does nothing.

        Examples
        --------
        >>> import deepcollapse as dc
        >>> class Show(FitCallback):
        ...     def on_end(self, state):
        ...         print(state.step, state.stopping)
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> _ = dc.fit_dufm(config, [Show()])
        20 False
        """

    def close(self) -> None:
        """Always, last (also when the loop raised).

        Returns
        -------
        None
            The base class does nothing.

        Examples
        --------
        >>> import deepcollapse as dc
        >>> class Show(FitCallback):
        ...     def close(self):
        ...         print('closed')
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> _ = dc.fit_dufm(config, [Show()])
        closed
        """


class ProgressBar(FitCallback):
    """A ``tqdm`` bar of the steps (or reports to a sweep's driver in a pool worker:
    :func:`deepcollapse._core.progress.progress_bar`) with ``best=``, the lowest loss seen so far, and the
    number of diverged runs."""

    def __init__(self, disable: bool = False) -> None:
        self.disable = disable
        self._bar: Any = None
        self._best = math.inf
        self._step = 0

    @fill_doc
    def on_start(self, state: FitState) -> None:
        """Open the bar at ``state.step``.

        Parameters
        ----------
        %(dufm_state)s

        Returns
        -------
        None
            The bar is opened (``disable=True``: a bar that shows nothing).

        Examples
        --------
        >>> import deepcollapse as dc
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> _ = dc.fit_dufm(config, [ProgressBar(disable=True)])
        """
        self._bar = progress_bar(
            total=state.config.steps,
            initial=state.step,
            disable=self.disable,
            desc="dufm",
            unit="step",
            dynamic_ncols=True,
        )
        self._step = state.step
        if state.logged:
            self._best = state.best_loss()
            self._bar.set_postfix(best=f"{self._best:.6g}")

    @fill_doc
    def on_chunk(self, state: FitState) -> None:
        """Advance the bar; ``best=`` is a running minimum of the loss.

        Parameters
        ----------
        %(dufm_state)s

        Returns
        -------
        None
            The bar is updated in place.

        Examples
        --------
        >>> import deepcollapse as dc
        >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> fit = dc.fit_dufm(config, [ProgressBar(disable=True)])
        >>> fit.step
        20
        """
        if self.disable:  # (no bar: spare the engine's best-loss evaluation)
            return
        self._bar.update(state.step - self._step)
        self._step = state.step
        best = state.best_loss()
        self._best = best if not math.isfinite(self._best) else min(self._best, best)  # a running minimum
        self._bar.set_postfix(best=f"{self._best:.6g}", diverged=len(state.diverged))

    def close(self) -> None:
        """Close the bar.

        Returns
        -------
        None
            The bar (if opened) is closed.

        Examples
        --------
        >>> bar = ProgressBar(disable=True)
        >>> bar.close()  # nothing opened: nothing to close
        """
        if self._bar is not None:
            self._bar.close()


# ------------------------------------------------------------------------------------------------------------
# the loop
# ------------------------------------------------------------------------------------------------------------
#: the engine of each ``config.resolved_backend`` (the contract: :class:`~deepcollapse.dufm.engine.Engine`)
ENGINES: dict[str, Callable[[list[np.ndarray], DUFMConfig], Engine]] = {
    "numpy": NumpyEngine,
    "torch": TorchEngine,
}


def _log_losses(state: FitState, rows: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """Take the float64 loss parts of every run at ``state.step`` into ``state`` and the history ``rows``."""
    P = state.params()
    R = state.config.runs
    parts = np.full((3, R), np.nan)
    with one_blas_thread():
        for r in range(R):
            if r not in state.diverged:
                parts[:, r] = loss_parts(P[0][r], [W[r] for W in P[1:]], state.config)
    state.logged, state.loss, state.fit, state.reg = True, parts[0], parts[1], parts[2]
    rows.append((state.step, parts[0], parts[1], parts[2]))


def fit_loop(
    config: DUFMConfig,
    params: list[np.ndarray],
    step: int,
    diverged: dict[int, int],
    callbacks: Sequence[FitCallback],
    *,
    stop_at: int,
    log_start: bool,
    stop: StopFlag | None = None,
) -> DUFMFit:
    """The GD loop of :func:`fit_dufm` from ``params`` at ``step`` to ``stop_at`` (module docstring): what
    ``train_dufm`` and ``resume_dufm`` run with their callbacks.

    Parameters
    ----------
    config : DUFMConfig
        The training job.
    params : list of ndarray
        ``[H1, W_1 .. W_L]`` at ``step`` with the run axis (the numpy engine steps them in place).
    step : int
        Their step.
    diverged : dict of int to int
        Runs already marked diverged (``{run: step}``; updated in place).
    callbacks : sequence of FitCallback
        As for :func:`fit_dufm`.
    stop_at : int
        The step to stop at (``<= config.steps``).
    log_start : bool
        Take the loss history at ``step`` too (a fresh start; a resumed run logged it before).
    stop : StopFlag, optional
        End after the chunk in which it is set (the callbacks see ``state.stopping``).

    Returns
    -------
    DUFMFit
        At the step reached; its history holds the steps logged by this call.

    Examples
    --------
    >>> import deepcollapse as dc
    >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
    >>> fit = fit_loop(config, initial_params(config), 0, {}, [], stop_at=10, log_start=True)
    >>> fit.step, fit.finished, fit.logged_steps.tolist()
    (10, False, [0, 10])
    """
    engine = ENGINES[config.resolved_backend](params, config)
    engine.freeze(list(diverged))
    state = FitState(config, step, step, stop_at, diverged, _engine=engine)
    rows: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []
    t0, step0 = time.perf_counter(), step
    if engine.timed_chunks:
        chunk = 10  # then about _CHUNK_SECONDS long, from the rate measured on the previous chunk
    else:
        chunk = max(10, min(_CHUNK, _CHUNK_RUN_STEPS // math.ceil(config.runs / config.workers)))
    try:
        if log_start:
            _log_losses(state, rows)
        for cb in callbacks:
            cb.on_start(state)
        while step < stop_at:
            nxt = min(
                stop_at,
                step + chunk,
                (step // config.log_every + 1) * config.log_every,
                (step // config.checkpoint_every + 1) * config.checkpoint_every,
            )
            lrs = np.array([config.learning_rate(t) for t in range(step, nxt)])
            t_chunk = time.perf_counter()
            new = engine.advance(step, lrs)
            for r, s in new.items():
                diverged[r] = s
                log.warning("run %d (seed %d) diverged at step %d", r, config.run_seeds[r], s)
            if engine.timed_chunks:  # (advance returned when the work was done)
                rate = (nxt - step) / max(time.perf_counter() - t_chunk, 1e-9)
                chunk = int(min(_CHUNK, max(10, rate * _CHUNK_SECONDS)))
            step = nxt
            state._moved(step, new, stopping=stop is not None and stop.signum is not None)
            if step % config.log_every == 0 or step == config.steps:
                _log_losses(state, rows)
            for cb in callbacks:
                cb.on_chunk(state)
            if state.stopping:
                break
        for cb in callbacks:
            cb.on_end(state)
        P = state.params()
    finally:
        engine.close()
        for cb in callbacks:
            cb.close()
    elapsed = time.perf_counter() - t0
    log.info(
        "%d steps x %d runs in %.1f s (%.0f runs*steps/s)",
        step - step0,
        config.runs,
        elapsed,
        (step - step0) * config.runs / max(elapsed, 1e-9),
    )
    for p in P:
        p.flags.writeable = False
    history = [np.array([row[i] for row in rows]).reshape(len(rows), config.runs) for i in (1, 2, 3)]
    for h in history:
        h.flags.writeable = False
    steps = np.array([row[0] for row in rows], dtype=np.int64)
    steps.flags.writeable = False
    return DUFMFit(config, P[0], tuple(P[1:]), step, dict(diverged), steps, *history)


def fit_dufm(config: DUFMConfig, callbacks: Sequence[FitCallback] = ()) -> DUFMFit:
    """Train ``config.runs`` runs of the batched L-DUFM by full-batch GD, in memory (module docstring).

    Nothing is written (:func:`~deepcollapse.dufm.trainer.train_dufm` is this fit plus a run folder).

    Parameters
    ----------
    config : DUFMConfig
        The problem (eq. (1)), the schedule, the seeds and the engine.
    callbacks : sequence of FitCallback
        Called at the start, after every chunk of steps and at the end (:class:`FitCallback`), e.g.
        :class:`ProgressBar`.

    Returns
    -------
    DUFMFit
        The final parameters of every run, the float64 loss history at the logged steps (multiples of
        ``config.log_every``) and the divergence steps.

    Raises
    ------
    ConfigError
        ``config`` is not a :class:`DUFMConfig` or describes no valid problem.

    See Also
    --------
    deepcollapse.dufm.classify.classify : label the runs of a fit (DNC, SRG-like, low rank, ...).

    Examples
    --------
    >>> import deepcollapse as dc
    >>> config = dc.DUFMConfig(classes=3, n=2, layers=2, width=4, lr=0.5, steps=200, log_every=100, runs=2)
    >>> fit = dc.fit_dufm(config)
    >>> fit.finished, fit.diverged, fit.logged_steps.tolist()
    (True, {}, [0, 100, 200])
    >>> bool((fit.loss_history[-1] < fit.loss_history[0]).all())  # GD lowered every run's loss
    True
    """
    if not isinstance(config, DUFMConfig):
        raise ConfigError(f"config == {type(config).__name__}, must be a DUFMConfig.")
    config.problem  # noqa: B018 - validates the problem of eq. (1) (e.g. K >= 2) before any work
    bad = [type(cb).__name__ for cb in callbacks if not isinstance(cb, FitCallback)]
    if bad:
        raise ConfigError(f"callbacks == [{', '.join(bad)}], must be FitCallback instances.")
    return fit_loop(
        config, initial_params(config), 0, {}, list(callbacks), stop_at=config.steps, log_start=True
    )


@fill_doc
def initial_params(config: DUFMConfig) -> list[np.ndarray]:
    """``[H1, W_1 .. W_L]`` of every run at step 0 (:func:`deepcollapse.dufm.model.init_params`, one
    generator per seed), as writable numpy arrays of ``config.dtype``.

    Parameters
    ----------
    %(dufm_config)s

    Returns
    -------
    list of ndarray
        ``H1 (R, d_1, N)``, ``W_l (R, d_{l+1}, d_l)``.

    Examples
    --------
    >>> import deepcollapse as dc
    >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
    >>> [p.shape for p in initial_params(config)]
    [(2, 4, 4), (2, 4, 4), (2, 2, 4)]
    """
    return [t.numpy().copy() for t in init_params(config).tensors()]
