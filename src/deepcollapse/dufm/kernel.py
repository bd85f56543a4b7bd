"""The fast CPU kernel of the L-DUFM trainer: plain full-batch GD with hand-written gradients.

Two implementations of one algorithm, for every model family (:mod:`deepcollapse.family`: the loss residual,
σ and σ' are the family's): :class:`NumpyDUFM` (numpy ``out=`` buffers; no torch import) and the compiled
step loop of :mod:`deepcollapse.dufm.compiled` (numba; selected automatically when installed, see
:func:`resolve_kernel`).  Both call one BLAS GEMM per run and layer, and every elementwise operation acts on
each run's own entries, so **a run's trajectory does not depend on which runs it is batched with** (nor on
``sub_batch`` or the number of worker processes): bit for bit.  The two paths agree to float rounding.

One GD step on a sub-batch of runs (``ε`` scaled by ``lr/N``, so every back-propagated quantity is already
the learning-rate-scaled gradient; for ReLU ``D_l = 1[H_l > 0] = 1[H~_l > 0]`` since ``H_l = ReLU(H~_l)``)::

    forward   H~_{l+1} = W_l H_l,  H_{l+1} = σ(H~_{l+1});  out = W_L H_L
    check     runs whose Σ out is not finite (an entry inf/NaN, or the sum overflowing) are *diverged at this
              step*: removed, frozen at these parameters
    backward  E = (lr/N) residual(out, Y);  G = E          (MSE: out − Y;  CE: softmax(out) − Y)
              for l = L .. 1:  ΔW_l = G H_l^T;  G ← W_l^T G;  G ← G ⊙ σ'(H~_l)  (l > 1)   [ΔH_1 = W_1^T G_2]
    update    W_l ← (1 − lr λ_{W_l}) W_l − ΔW_l,   H_1 ← (1 − lr λ_{H_1}) H_1 − ΔH_1

which is exactly ``θ ← θ − lr ∇ objective`` (see :mod:`deepcollapse.dufm.model` for the gradient formulas).
Working-set blocking: :func:`advance` moves ``sub_batch`` runs at a time through all the steps of a chunk,
so the buffers of a sub-batch stay in cache (default 4; the result does not depend on it).  Throughput per
size and family: ``benchmarks/dufm_throughput.py``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from deepcollapse.family import Family, get_family, targets
from deepcollapse.theory.problem import Problem

__all__ = [
    "NumpyDUFM",
    "advance",
    "advance_limited",
    "estimate_runs_steps_per_s",
    "flops_per_step",
    "flush_denormal_is_on",
    "numpy_gradients",
    "one_blas_thread",
    "resolve_kernel",
]


class NumpyDUFM:
    """Preallocated buffers and the in-place GD step for one sub-batch of runs (owns copies of the params).

    ``family`` (:mod:`deepcollapse.family`, default MSE + ReLU) supplies the three elementwise pieces through
    its in-place hooks: ``activation.forward_`` (σ), ``activation.backprop_`` (``⊙ σ'``) and
    ``loss.residual_`` (``E ← residual(out, Y)``); everything else (the GEMMs, scaling, updates) is common.
    """

    def __init__(
        self,
        params: Sequence[np.ndarray],
        classes: int,
        n: int,
        lam_h: float,
        lam_w: Sequence[float],
        family: Family | None = None,
    ):
        self.params = [np.array(p, copy=True, order="C") for p in params]  # [H1, W_1..W_L], leading dim R
        self.K, self.n = int(classes), int(n)
        self.N = self.K * self.n
        self.L = len(self.params) - 1
        self.lam_h = float(lam_h)
        self.lam_w = [float(x) for x in lam_w]
        self.family = get_family() if family is None else family
        self.act, self.loss = self.family.activation, self.family.loss
        self._alloc()

    def _alloc(self) -> None:
        H1, Ws = self.params[0], self.params[1:]
        R, dt, N = H1.shape[0], H1.dtype, self.N
        self.dtype = dt
        self.Y = targets(self.K, self.n, dt)  # (K, N)
        # H[l] for l = 1..L (index l), H[1] is the parameter itself.  P[l] holds the pre-activation H~_l:
        # its own buffer when the activation's derivative needs it (σ_ε), else P[l] is H[l] and σ is applied
        # in place (ReLU: σ'(H~_l) = 1[H_l > 0]; linear: σ' = 1).  W_l is (R, d_{l+1}, d_l).
        self.H: list[Any] = [None, H1] + [np.empty((R, W.shape[1], N), dt) for W in Ws[:-1]]
        if self.act.keeps_pre:
            self.P: list[Any] = [None, None] + [np.empty((R, W.shape[1], N), dt) for W in Ws[:-1]]
        else:
            self.P = list(self.H)
        self.E = np.empty((R, self.K, N), dt)  # (R, K, N)
        # gradients w.r.t. H_l, l = L..1, alternate between two flat buffers (G_{l+1} is dead once G_l is
        # computed): a smaller working set keeps a sub-batch in L2 cache
        widths = [W.shape[2] for W in Ws]  # d_1 .. d_L
        size = R * max(widths + [self.K]) * N
        flat = [np.empty(size, dt), np.empty(size, dt)]
        self.dH: list[Any] = [None]
        self.dH += [flat[l % 2][: R * d * N].reshape(R, d, N) for l, d in enumerate(widths, 1)]
        # per-layer views of three spare buffers for the elementwise hooks: zeros (the operand of ReLU's
        # maximum: against an array it runs several times faster than against a scalar 0), float scratch, mask
        zeros, scratch, mask = np.zeros(size, dt), np.empty(size, dt), np.empty(size, bool)
        shapes = [(R, d, N) for d in widths]
        self.Z: list[Any] = [None] + [zeros[: R * d * N].reshape(sh) for d, sh in zip(widths, shapes)]
        self.S: list[Any] = [None] + [scratch[: R * d * N].reshape(sh) for d, sh in zip(widths, shapes)]
        self.M: list[Any] = [None] + [mask[: R * d * N].reshape(sh) for d, sh in zip(widths, shapes)]
        self.SE = scratch[: self.E.size].reshape(self.E.shape)
        self.dW = [np.empty_like(W) for W in Ws]

    @property
    def runs(self) -> int:
        """The number of runs ``R`` in the sub-batch (shrinks when :meth:`keep` drops diverged runs).

        Returns
        -------
        int
            The leading dimension of the parameters.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> params = [rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 3, 3)), rng.normal(size=(2, 2, 3))]
        >>> k = NumpyDUFM(params, 2, 1, 0.1, [0.1, 0.1])
        >>> k.runs
        2
        """
        return self.params[0].shape[0]

    def keep(self, idx: np.ndarray) -> None:
        """Drop every run but ``idx`` (after a divergence); buffers are reallocated for the smaller batch.

        Parameters
        ----------
        idx : numpy.ndarray of int
            The indices (into the current runs) of the runs kept, in order.

        Returns
        -------
        None
            ``params`` and the buffers are replaced in place.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> params = [rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 3, 3)), rng.normal(size=(2, 2, 3))]
        >>> k = NumpyDUFM(params, 2, 1, 0.1, [0.1, 0.1])
        >>> k.keep(np.array([1]))
        >>> k.runs, np.array_equal(k.params[0][0], params[0][1])
        (1, True)
        """
        self.params = [np.ascontiguousarray(p[idx]) for p in self.params]
        self._alloc()

    def _forward(self) -> np.ndarray:
        W, H, P, L = self.params[1:], self.H, self.P, self.L
        for l in range(1, L):
            np.matmul(W[l - 1], H[l], out=P[l + 1])  # H~_{l+1}
            self.act.forward_(P[l + 1], H[l + 1], self.Z[l + 1], self.S[l + 1])  # H_{l+1} = σ(H~_{l+1})
        np.matmul(W[L - 1], H[L], out=self.E)  # output W_L H_L
        # per-run Σ of the output: not finite <=> some entry is inf/NaN *or* the sum overflows (the run's
        # fit would overflow too); only used to detect diverged runs
        return self.E.sum(axis=(1, 2))  # (R,)

    def _backward(self, scale: float) -> None:
        W, H, P, dH, L = self.params[1:], self.H, self.P, self.dH, self.L
        self.loss.residual_(self.E, self.Y, self.SE)  # E = residual(out, Y)
        np.multiply(self.E, self.dtype.type(scale / self.N), out=self.E)
        G = self.E
        for l in range(L, 0, -1):
            np.matmul(G, H[l].transpose(0, 2, 1), out=self.dW[l - 1])
            np.matmul(W[l - 1].transpose(0, 2, 1), G, out=dH[l])
            if l > 1:  # G_l = σ'(H~_l) ⊙ (W_l^T G_{l+1})
                self.act.backprop_(dH[l], P[l], H[l], self.S[l], self.M[l])
            G = dH[l]

    def step(self, lr: float) -> np.ndarray | None:
        """One GD step with rate ``lr``; returns ``None`` or (nothing updated) the boolean mask: runs
        whose forward pass was not finite.

        Parameters
        ----------
        lr : float
            The learning rate of the step.

        Returns
        -------
        numpy.ndarray of bool or None
            None when every run was finite (``params`` are updated in place); else the mask ``(R,)`` of the
            runs whose forward pass was finite, and nothing was updated.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> params = [rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 3, 3)), rng.normal(size=(2, 2, 3))]
        >>> k = NumpyDUFM(params, 2, 1, 0.1, [0.1, 0.1])
        >>> before = k.params[1].copy()
        >>> k.step(0.1) is None, np.array_equal(k.params[1], before)
        (True, False)
        """
        s = self._forward()
        finite = np.isfinite(s)
        if not finite.all():
            return finite
        self._backward(lr)
        for W, dW, lam in zip(self.params[1:], self.dW, self.lam_w):
            np.multiply(W, self.dtype.type(1.0 - lr * lam), out=W)
            np.subtract(W, dW, out=W)
        H1 = self.params[0]
        np.multiply(H1, self.dtype.type(1.0 - lr * self.lam_h), out=H1)
        np.subtract(H1, self.dH[1], out=H1)
        return None

    def gradients(self) -> list[np.ndarray]:
        """``[∂H1, ∂W_1, ..., ∂W_L]`` of the objective at the current parameters (for tests; no update).

        Returns
        -------
        list of numpy.ndarray
            The gradients, shaped as ``params`` (new arrays: the buffers are reused).

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> params = [rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 3, 3)), rng.normal(size=(2, 2, 3))]
        >>> k = NumpyDUFM(params, 2, 1, 0.1, [0.1, 0.1])
        >>> [g.shape for g in k.gradients()] == [p.shape for p in params]
        True
        """
        self._forward()
        self._backward(1.0)
        gW = [dW + lam * W for dW, W, lam in zip(self.dW, self.params[1:], self.lam_w)]
        return [self.dH[1] + self.lam_h * self.params[0], *gW]  # (copies: the buffers are reused)


def _kernel_args(
    params: Sequence[np.ndarray],
    classes: int | Problem | None,
    n: int | None,
    lam_h: float | None,
    lam_w: Sequence[float] | None,
    family: Family | None,
    problem: Problem | None,
) -> tuple[int, int, float, Sequence[float], Family]:
    """``(classes, n, lam_h, lam_w, family)`` of the kernel's arguments: a :class:`Problem` (``classes``
    or ``problem=``; its ``layers`` must match ``params``) or the four loose values (+ ``family``), not
    both."""
    from deepcollapse._core.checks import ConfigError

    if isinstance(classes, Problem):
        classes, problem = None, classes
    if problem is None:
        if classes is None or n is None or lam_h is None or lam_w is None:
            raise ConfigError("the kernel needs a Problem, or classes, n, lam_h and lam_w.")
        return int(classes), int(n), float(lam_h), lam_w, get_family() if family is None else family
    loose = [
        k for k, v in (("classes", classes), ("n", n), ("lam_h", lam_h), ("lam_w", lam_w)) if v is not None
    ]
    if loose or family is not None:
        raise ConfigError(
            f"give the kernel a Problem or {', '.join(loose or ['family'])}, not both "
            "(the Problem holds them)."
        )
    if len(params) != problem.layers + 1:
        raise ConfigError(
            f"params: {len(params)} arrays, must be {problem.layers + 1} ([H1, W_1 .. W_L] of the "
            f"problem's L = {problem.layers})."
        )
    return problem.classes, problem.n, problem.lam_h, list(problem.lam_w), problem.family


def numpy_gradients(
    params: Sequence[np.ndarray],
    classes: int | Problem | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: Sequence[float] | None = None,
    family: Family | None = None,
    *,
    problem: Problem | None = None,
) -> list[np.ndarray]:
    """Analytic gradients of the objective for batched ``params = [H1, W_1..W_L]`` (the kernel's backward).

    Parameters
    ----------
    params : sequence of ndarray
        ``[H1, W_1 .. W_L]``, each with a leading run dimension ``R``.
    classes : int or Problem
        The problem (then ``n``, ``lam_h``, ``lam_w``, ``family`` stay ``None``), or ``K`` of the loose form.
    n, lam_h, lam_w, family
        The loose form: samples per class, ``λ_{H_1}``, ``λ_{W_l}`` (one per layer), model family (default
        MSE + ReLU).
    problem : Problem, optional
        The problem by keyword.

    Returns
    -------
    list of ndarray
        ``∇_{H_1}, ∇_{W_1} .. ∇_{W_L}`` of eq. (1) (or the family's objective) per run, shaped as ``params``.

    Examples
    --------
    >>> import numpy as np
    >>> from deepcollapse.theory.problem import Problem
    >>> p = Problem(2, 2, 1, 0.1, (0.1, 0.1))
    >>> rng = np.random.default_rng(0)
    >>> params = [rng.normal(size=(1, 3, 2)), rng.normal(size=(1, 3, 3)), rng.normal(size=(1, 2, 3))]
    >>> a = numpy_gradients(params, p)
    >>> b = numpy_gradients(params, 2, 1, 0.1, [0.1, 0.1])
    >>> all(np.array_equal(x, y) for x, y in zip(a, b)), [g.shape for g in a] == [q.shape for q in params]
    (True, True)
    """
    K, n_, lh, lw, fam = _kernel_args(params, classes, n, lam_h, lam_w, family, problem)
    return NumpyDUFM(params, K, n_, lh, lw, fam).gradients()


def advance(
    params: Sequence[np.ndarray],
    lrs: np.ndarray,
    start_step: int,
    classes: int | Problem | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: Sequence[float] | None = None,
    sub_batch: int = 4,
    *,
    family: Family | None = None,
    kernel: str | None = None,
    problem: Problem | None = None,
) -> tuple[list[np.ndarray], dict[int, int]]:
    """Run ``len(lrs)`` GD steps (step ``start_step + i`` uses ``lrs[i]``) on all runs of ``params``.

    Parameters
    ----------
    params : sequence of ndarray
        ``[H1, W_1 .. W_L]``, each with a leading run dimension ``R`` (not modified).
    lrs : ndarray
        One learning rate per step.
    start_step : int
        The step number of ``lrs[0]`` (a diverged run reports the step it diverged at).
    classes : int or Problem
        The problem (then ``n``, ``lam_h``, ``lam_w``, ``family`` stay ``None``), or ``K`` of the loose form.
    n, lam_h, lam_w
        The loose form: samples per class, ``λ_{H_1}``, ``λ_{W_l}`` (one per layer).
    sub_batch : int
        Runs moved together through a chunk (working-set blocking; the result does not depend on it).
    family : Family, optional
        The loose form's model family (default MSE + ReLU).
    kernel : {'auto', 'compiled', 'numpy'}, optional
        ``"compiled"`` (numba, :mod:`~deepcollapse.dufm.compiled`), ``"numpy"`` (:class:`NumpyDUFM`) or
        ``None``/``"auto"``: the environment variable ``DEEPCOLLAPSE_KERNEL`` if set, else compiled when
        numba is installed, else numpy (:func:`resolve_kernel`).
    problem : Problem, optional
        The problem by keyword.

    Returns
    -------
    params : list of ndarray
        The new ``[H1, W_1..W_L]`` (same shapes).
    diverged : dict of int to int
        ``{run index: step}`` of the runs that diverged (their parameters are frozen at the first step whose
        output sum was not finite; they are not advanced further).

    Examples
    --------
    >>> import numpy as np
    >>> from deepcollapse.theory.problem import Problem
    >>> p = Problem(2, 2, 1, 0.1, (0.1, 0.1))
    >>> rng = np.random.default_rng(0)
    >>> params = [rng.normal(size=(3, 3, 2)), rng.normal(size=(3, 3, 3)), rng.normal(size=(3, 2, 3))]
    >>> new, diverged = advance(params, np.full(5, 0.1), 0, p, kernel="numpy")
    >>> old, _ = advance(params, np.full(5, 0.1), 0, 2, 1, 0.1, [0.1, 0.1], kernel="numpy")
    >>> all(np.array_equal(a, b) for a, b in zip(new, old)), diverged
    (True, {})
    """
    K, n_, lh, lw, fam = _kernel_args(params, classes, n, lam_h, lam_w, family, problem)
    with np.errstate(
        over="ignore", invalid="ignore"
    ):  # divergence is detected and reported, not warned about
        if resolve_kernel(kernel) == "compiled":
            from deepcollapse.dufm.compiled import advance_compiled

            return advance_compiled(params, lrs, start_step, K, n_, lh, lw, sub_batch, fam)
        return _advance(params, lrs, start_step, K, n_, lh, lw, sub_batch, fam)


KERNELS = ("auto", "compiled", "numpy")


def resolve_kernel(kernel: str | None = None) -> str:
    """``"compiled"`` or ``"numpy"``: ``kernel``, else ``$DEEPCOLLAPSE_KERNEL``, else compiled iff numba
    imports (``ConfigError`` for an unknown name, or for ``compiled`` without numba).

    Parameters
    ----------
    kernel : {'auto', 'compiled', 'numpy'}, optional
        The kernel asked for; None (or ``""``): ``$DEEPCOLLAPSE_KERNEL``, else ``"auto"``.

    Returns
    -------
    str
        ``"compiled"`` or ``"numpy"``: the kernel :func:`advance` runs.

    Examples
    --------
    >>> resolve_kernel("numpy")
    'numpy'
    >>> resolve_kernel("auto") in ("compiled", "numpy")
    True
    """
    from deepcollapse._core.checks import ConfigError, check_choice

    name = kernel or os.environ.get("DEEPCOLLAPSE_KERNEL") or "auto"
    check_choice("kernel" if kernel else "DEEPCOLLAPSE_KERNEL", name, KERNELS)
    if name == "numpy":
        return "numpy"
    from deepcollapse.dufm.compiled import AVAILABLE

    if name == "compiled" and not AVAILABLE:
        raise ConfigError(
            "kernel == 'compiled', must be 'numpy' or 'auto' when numba is not installed "
            "(pip install numba, or unset DEEPCOLLAPSE_KERNEL)."
        )
    return "compiled" if AVAILABLE else "numpy"


def _advance(
    params: Sequence[np.ndarray],
    lrs: np.ndarray,
    start_step: int,
    classes: int,
    n: int,
    lam_h: float,
    lam_w: Sequence[float],
    sub_batch: int,
    family: Family | None,
) -> tuple[list[np.ndarray], dict[int, int]]:
    R = params[0].shape[0]
    out = [np.empty_like(p) for p in params]
    diverged: dict[int, int] = {}
    rates = [float(x) for x in lrs]
    for a in range(0, R, sub_batch):
        ids = np.arange(a, min(a + sub_batch, R))
        k = NumpyDUFM([p[ids] for p in params], classes, n, lam_h, lam_w, family)
        alive = ids.copy()
        for i, lr in enumerate(rates):
            bad = k.step(lr)
            while bad is not None:
                for j in np.flatnonzero(~bad):  # freeze: copy out the parameters at which it diverged
                    diverged[int(alive[j])] = start_step + i
                    for o, p in zip(out, k.params):
                        o[alive[j]] = p[j]
                alive = alive[bad]
                if alive.size == 0:
                    break
                k.keep(np.flatnonzero(bad))
                bad = k.step(lr)
            if alive.size == 0:
                break
        for o, p in zip(out, k.params):
            if alive.size:
                o[alive] = p
    return out, diverged


def advance_limited(*args: Any, **kwargs: Any) -> tuple[list[np.ndarray], dict[int, int]]:
    """:func:`advance` (same arguments, a :class:`Problem` or the loose form) with BLAS limited to one thread
    and denormals flushed to zero.

    One thread: the flagship GEMMs are too small to gain from threads (used in-process and in each worker
    process).  Flush-to-zero: in long runs at large weight decay, weights feeding dead ReLUs decay
    geometrically into the float32 denormal range (|x| < 1.2e-38), where x86 arithmetic is ~10x slower
    (measured 540 vs 6 100 run-steps/s at K = 15, λ = 2^-7.5 after 45k steps).  The flag
    (``torch.set_flush_denormal``, the CPU's FTZ/DAZ bits, which numpy's kernels in this thread obey too) is
    set for the call only and restored to its previous state afterwards (torch has no getter: the state is
    read from the arithmetic, a float32 denormal times one being zero); it changes values only below the
    smallest normal number, and identically on every run, so resumes stay bit-identical.

    Parameters
    ----------
    *args, **kwargs
        Those of :func:`advance`.

    Returns
    -------
    params : list of ndarray
        The new ``[H1, W_1..W_L]``, as :func:`advance`.
    diverged : dict of int to int
        ``{run index: step}`` of the runs that diverged, as :func:`advance`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> params = [rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 3, 3)), rng.normal(size=(2, 2, 3))]
    >>> args = (params, np.full(5, 0.1), 0, 2, 1, 0.1, [0.1, 0.1])
    >>> new, diverged = advance_limited(*args, kernel="numpy")
    >>> old, _ = advance(*args, kernel="numpy")
    >>> all(np.array_equal(a, b) for a, b in zip(new, old)), diverged
    (True, {})
    """
    import torch

    if resolve_kernel(kwargs.get("kernel")) == "compiled":  # load numba's BLAS before limiting threads
        import deepcollapse.dufm.compiled  # noqa: F401
    previous = flush_denormal_is_on()
    flushed = torch.set_flush_denormal(True)
    try:
        with one_blas_thread():
            return advance(*args, **kwargs)
    finally:
        if flushed:
            torch.set_flush_denormal(previous)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS (numpy's and scipy's OpenBLAS, MKL) on one thread inside the block (threadpoolctl).

    For the kernel's small GEMMs and for the trainer's per-run analysis (``observe_run``, the
    classification): their matrices are at most width x N, and with a process per core already busy (task
    processes, other jobs) threaded BLAS ran 20x slower (``observe_run`` at K = 10, n = 50, width 128: 0.63 s
    with two BLAS threads on a loaded 2-core machine, 0.031 s with one).

    Yields
    ------
    None
        Inside the block BLAS runs on one thread; the previous limits are restored on exit.

    Examples
    --------
    >>> import numpy as np
    >>> with one_blas_thread():
    ...     x = np.ones((2, 2)) @ np.ones((2, 2))
    >>> x.tolist()
    [[2.0, 2.0], [2.0, 2.0]]
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn depends on it
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def flush_denormal_is_on() -> bool:
    """Whether this thread flushes float32 denormals to zero (FTZ/DAZ): ``1e-39 · 1 == 0``.

    Returns
    -------
    bool
        True when the CPU's flush-to-zero flags are set in this thread (e.g. inside
        :func:`advance_limited`).

    Examples
    --------
    >>> flush_denormal_is_on() in (True, False)
    True
    """
    tiny = np.array([1e-39], dtype=np.float32)  # a float32 denormal
    return bool((tiny * np.float32(1.0))[0] == 0)


def flops_per_step(shapes: Sequence[tuple[int, int]]) -> float:
    """Multiply-add FLOPs (2 per MAC) of one GD step of one run: 3 GEMMs per layer (forward, ∂W, ∂H) except
    that ``∂H_1`` is needed too, so ``3`` for every layer: ``Σ_l 3 · 2 · d_{l+1} d_l N``.

    Parameters
    ----------
    shapes : sequence of tuple of int
        ``[(d_1, N), (d_2, d_1), ..., (K, d_L)]`` (:attr:`DUFMConfig.shapes
        <deepcollapse.dufm.config.DUFMConfig.shapes>`).

    Returns
    -------
    float
        The FLOPs of one step of one run.

    Examples
    --------
    >>> flops_per_step([(4, 2), (4, 4), (2, 4)])  # 6 * (4*4 + 2*4) * N=2
    288.0
    """
    N = shapes[0][1]
    return float(sum(3 * 2 * a * b * N for a, b in shapes[1:]))


def estimate_runs_steps_per_s(
    shapes: Sequence[tuple[int, int]], rows: Sequence[dict[str, Any]], workers: int = 1
) -> float:
    """Estimated runs·steps/s of a problem with ``shapes`` (``DUFMConfig.shapes``) from benchmark rows.

    ``rows``: the ``sizes`` rows of ``benchmarks/dufm_throughput.py`` (each with ``flops_per_step`` and
    ``runs_steps_per_s``, one process).  The achieved GFLOP/s is interpolated linearly in ``log FLOPs per
    step`` between the measured sizes (held constant beyond them) and divided by this problem's FLOPs per
    step (:func:`flops_per_step`); ``workers`` processes multiply it (one per core scales about linearly on
    CPU).  Runtime of ``steps`` steps of ``R`` runs ≈ ``R · steps / estimate``.

    Parameters
    ----------
    shapes : sequence of tuple of int
        ``[(d_1, N), (d_2, d_1), ..., (K, d_L)]`` of the problem.
    rows : sequence of dict
        The benchmark rows (``flops_per_step``, ``runs_steps_per_s``; rows without a rate are skipped).
    workers : int, default 1
        Worker processes.

    Returns
    -------
    float
        The estimated runs·steps per second (``ValueError`` when no row has a rate).

    Examples
    --------
    >>> rows = [{"flops_per_step": 288, "runs_steps_per_s": 1000.0}]
    >>> estimate_runs_steps_per_s([(4, 2), (4, 4), (2, 4)], rows, workers=2)
    2000.0
    """
    pts = sorted(
        (math.log(float(r["flops_per_step"])), float(r["runs_steps_per_s"]) * float(r["flops_per_step"]))
        for r in rows
        if r.get("runs_steps_per_s")
    )
    if not pts:
        raise ValueError("rows must hold at least one benchmark row with runs_steps_per_s")
    f = flops_per_step(shapes)
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    flops_per_s = float(np.interp(math.log(f), xs, ys))
    return workers * flops_per_s / f
