"""The contract between :func:`deepcollapse.dufm.fit.fit_loop` and the engines that step its runs.

:class:`Engine` is documented here once; the engines implement it and inherit its docstrings:

- :class:`~deepcollapse.dufm.numpy_engine.NumpyEngine` (``resolved_backend == "numpy"``): numpy arrays on the
  host, stepped by :func:`~deepcollapse.dufm.kernel.advance_limited` -- the compiled step loop of
  :mod:`deepcollapse.dufm.compiled` when numba is installed, else the numpy one of
  :mod:`deepcollapse.dufm.kernel` -- in-process or in ``workers`` single-threaded processes;
- :class:`~deepcollapse.dufm.torch_engine.TorchEngine` (``resolved_backend == "torch"``): torch tensors on
  ``config.device``, stepped by the loop of ``config.step_loop``.

An engine is made as ``Engine(params, config)`` from ``[H1, W_1 .. W_L]`` with the run axis (``R`` runs)
and a :class:`~deepcollapse.dufm.config.DUFMConfig`; the loop then calls ``freeze`` once (the runs already
diverged), ``advance`` once per chunk of steps, ``numpy_params`` / ``best_loss`` when a callback reads the
state, and ``close`` at the end (also after an exception).  A new engine is a class with these members,
tested against the numpy engine to float rounding (``tests/dufm/``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Protocol

import numpy as np

__all__ = ["Engine"]


class Engine(Protocol):
    """What :func:`~deepcollapse.dufm.fit.fit_loop` needs of an engine: ``R`` runs of plain GD on eq. (1)
    (2024 paper), each run frozen at the first step at which it is not finite (*diverged*: its output sum in
    the numpy engine, its step ``lr_t ∇`` in the torch one), the others going on.  How a trajectory is cut
    into calls of :meth:`advance` does not change it (a resumed run is bit-identical).

    Examples
    --------
    Both engines hold to the contract (here: the same runs, on the CPU, agree to float rounding):

    >>> import numpy as np
    >>> from deepcollapse.dufm.config import DUFMConfig
    >>> from deepcollapse.dufm.fit import initial_params
    >>> from deepcollapse.dufm.numpy_engine import NumpyEngine
    >>> from deepcollapse.dufm.torch_engine import TorchEngine
    >>> config = DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, dtype="float64")
    >>> engines = [NumpyEngine(initial_params(config), config), TorchEngine(initial_params(config), config)]
    >>> [engine.advance(0, np.full(5, 0.1)) for engine in engines]
    [{}, {}]
    >>> a, b = (engine.numpy_params() for engine in engines)
    >>> all(np.allclose(p, q, rtol=1e-12, atol=1e-12) for p, q in zip(a, b))
    True
    >>> for engine in engines:
    ...     engine.close()
    """

    timed_chunks: ClassVar[bool]
    """How the loop sizes the chunks of steps it passes to :meth:`advance`.  ``True``: from the rate
    measured on the previous chunk, to about 1.5 s each (:meth:`advance` returns when the work is done, as
    the torch engine's one host synchronisation per call makes sure); ``False``: a fixed number of run-steps
    per process (the numpy engine, whose cost per run-step is steady)."""

    def advance(self, start: int, lrs: np.ndarray) -> dict[int, int]:
        """Advance every alive run by ``len(lrs)`` steps: step ``start + i`` with learning rate ``lrs[i]``.

        Parameters
        ----------
        start : int
            The step number of ``lrs[0]`` (a diverged run reports the step it diverged at).
        lrs : numpy.ndarray
            One learning rate per step.

        Returns
        -------
        dict of int to int
            ``{run: step}`` of the runs that diverged in these steps (frozen there, not stepped again).

        Examples
        --------
        A learning rate far too large at step 5 blows the parameters up: both runs diverge at step 6 (the
        first step that is not finite), in either engine, and are not reported again:

        >>> import numpy as np
        >>> from deepcollapse.dufm.config import DUFMConfig
        >>> from deepcollapse.dufm.fit import initial_params
        >>> from deepcollapse.dufm.numpy_engine import NumpyEngine
        >>> from deepcollapse.dufm.torch_engine import TorchEngine
        >>> config = DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> for make in (NumpyEngine, TorchEngine):
        ...     engine = make(initial_params(config), config)
        ...     lrs = [np.full(5, 0.1), np.full(5, 1e30), np.full(5, 0.1)]
        ...     print([engine.advance(start, lr) for start, lr in zip((0, 5, 10), lrs)], engine.best_loss())
        [{}, {0: 6, 1: 6}, {}] nan
        [{}, {0: 6, 1: 6}, {}] nan
        """
        ...

    def freeze(self, runs: Iterable[int]) -> None:
        """Stop stepping ``runs`` (diverged before this engine was made, e.g. read from a checkpoint).

        Parameters
        ----------
        runs : iterable of int
            The runs' indices.

        Returns
        -------
        None
            The runs are not stepped again; :meth:`best_loss` leaves them out.

        Examples
        --------
        >>> import numpy as np
        >>> from deepcollapse.dufm.config import DUFMConfig
        >>> from deepcollapse.dufm.fit import initial_params
        >>> from deepcollapse.dufm.torch_engine import TorchEngine
        >>> config = DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
        >>> engine = TorchEngine(initial_params(config), config)
        >>> before = engine.numpy_params()
        >>> engine.freeze([1])
        >>> engine.advance(0, np.full(5, 0.1))
        {}
        >>> after = engine.numpy_params()
        >>> bool((after[0][1] == before[0][1]).all()), bool((after[0][0] == before[0][0]).all())
        (True, False)
        """
        ...

    def best_loss(self) -> float:
        """The lowest finite loss of eq. (1) among the alive runs at the current parameters; NaN if none.

        Returns
        -------
        float
            The lowest loss (what the progress bar shows as ``best=`` between logged steps).
        """
        ...

    def numpy_params(self) -> list[np.ndarray]:
        """The current parameters as numpy arrays on the host (read only: they may be the arrays trained).

        Returns
        -------
        list of numpy.ndarray
            ``[H1, W_1 .. W_L]`` with the run axis.
        """
        ...

    def close(self) -> None:
        """Release the engine's resources (processes, captured graphs); it is not stepped again.

        Returns
        -------
        None
        """
        ...
