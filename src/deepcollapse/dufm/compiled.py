"""The compiled step loop of the L-DUFM kernel (numba), used by :mod:`dufm_kernel` when numba is installed.

The same algorithm and the same family definitions as the numpy path (:class:`dufm_kernel.NumpyDUFM`), with
the whole chunk of steps in one compiled call: per run, per step ::

    forward   P_{l+1} = W_l H_l (GEMM),  H_{l+1} = σ(P_{l+1})                 (σ: family ``scalar``)
    output    E = W_L H_L (GEMM);  s = Σ E  (in the parameters' dtype: a sum that overflows counts)
    check     s not finite: the run diverged at this step; it is frozen (not updated, not advanced again)
    residual  E[:, j] ← (lr/N) residual(E[:, j], Y[:, j])                   (family ``column_residual_``)
    backward  ∂W_l = G H_l^T,  G ← W_l^T G  (GEMMs),  G ← G ⊙ σ'(P_l)        (σ': ``scalar_derivative``)
    update    W_l ← (1 − lr λ_{W_l}) W_l − ∂W_l,   H_1 ← (1 − lr λ_{H_1}) H_1 − ∂H_1

The GEMMs are ``np.dot`` with ``out=`` buffers, which numba lowers to BLAS ``?gemm`` through scipy's
public ``scipy.linalg.cython_blas`` (no private numpy symbol), or, per layer and product where
:func:`deepcollapse.dufm.microkernels.micro_layers` picks them (OpenBLAS's AVX2 kernels, small shapes), the
register-blocked numba kernels of that module (with ReLU, those fuse σ into the forward GEMM and ``⊙ σ'``
into ``W_lᵀ G``); the elementwise passes are fused loops (one pass per layer instead of numpy's two to
four).  A run's computation does not depend on the other runs, on
``sub_batch`` (the number of runs stepped together, for cache locality) or on the worker count, so
trajectories are bit-identical whatever the batching, as in the numpy path; numpy and compiled paths agree to
float rounding (σ_ε and exp are evaluated by different code).

Compilation: once per (dtype, activation, loss) signature, cached on disk by numba (``cache=True``), a few
seconds the first time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deepcollapse.dufm.microkernels import micro_layers
from deepcollapse.family import Family
from deepcollapse.family.activations import Linear, ReLU, ReLUEps
from deepcollapse.family.losses import CrossEntropy, SquaredError, targets

__all__ = ["AVAILABLE", "advance_compiled"]

try:  # optional dependency: the numpy path is used without it
    import numba
    import scipy.linalg.cython_blas  # noqa: F401 - the BLAS numba's np.dot calls: loaded (and limitable) now

    from deepcollapse.dufm.microkernels import mm_nn, mm_nn_relu, mm_nt, mm_tn, mm_tn_relu_d

    AVAILABLE = True
except ImportError:  # pragma: no cover - exercised by the numpy-path tests with the kernel forced
    numba = None  # type: ignore[assignment]
    AVAILABLE = False


if AVAILABLE:
    _jit = numba.njit(cache=True, nogil=True)
    _relu, _relu_d = _jit(ReLU.scalar), _jit(ReLU.scalar_derivative)
    _linear, _linear_d = _jit(Linear.scalar), _jit(Linear.scalar_derivative)
    _reps, _reps_d = _jit(ReLUEps.scalar), _jit(ReLUEps.scalar_derivative)
    _mse_res, _ce_res = _jit(SquaredError.loop_residual_), _jit(CrossEntropy.loop_residual_)
    _CODES = (ReLU.code, Linear.code, ReLUEps.code, SquaredError.code, CrossEntropy.code)
    if _CODES != (0, 1, 2, 0, 1):  # pragma: no cover - the switch below is written for these codes
        raise RuntimeError(f"family codes changed: {_CODES}")

    @_jit
    def _sigma_(P: Any, Q: Any, act: int, eps: Any, inv: Any) -> None:  # Q ← σ(P) (Q may be P)
        d0, d1 = P.shape
        t = Q.dtype.type  # results rounded to the dtype (the scalar forms compute with float64 literals)
        if act == 0:  # one loop per activation: the branch stays outside the vectorised loop
            for a in range(d0):
                for b in range(d1):
                    Q[a, b] = t(_relu(P[a, b], eps, inv))
        elif act == 1:
            if Q is not P:
                Q[:, :] = P
        else:
            for a in range(d0):
                for b in range(d1):
                    Q[a, b] = t(_reps(P[a, b], eps, inv))

    @_jit
    def _backprop_(D: Any, P: Any, act: int, eps: Any, inv: Any) -> None:  # D ← D ⊙ σ'(P)
        d0, d1 = D.shape
        t = D.dtype.type  # σ' rounded to the dtype first: the product is then exactly the numpy path's
        if act == 0:
            for a in range(d0):
                for b in range(d1):
                    D[a, b] = D[a, b] * t(_relu_d(P[a, b], eps, inv))
        elif act == 2:
            for a in range(d0):
                for b in range(d1):
                    D[a, b] = D[a, b] * t(_reps_d(P[a, b], eps, inv))

    @_jit
    def _decay_sub_(W: Any, factor: Any, G: Any) -> None:  # W ← factor W − G
        d0, d1 = W.shape
        for a in range(d0):
            for b in range(d1):
                W[a, b] = W[a, b] * factor - G[a, b]

    @_jit
    def _block(  # the kernel's full state, passed explicitly
        H1: Any,  # (R, d_1, N)
        Ws: Any,  # typed list of (R, d_{l+1}, d_l)
        runs: Any,  # (B,) int64: the runs of this block
        lrs: Any,  # (T,) float64
        lam_h: float,
        lam_w: Any,  # (L,) float64
        Y: Any,  # (K, N)
        act: int,
        eps: float,
        loss: int,
        pre: Any,  # typed list of (d_l, N) for l = 2..L (P_l; the same arrays as post unless σ_ε)
        post: Any,  # typed list of (d_l, N) for l = 2..L
        dH: Any,  # typed list of (d_l, N) for l = 1..L
        dW: Any,  # typed list of (d_{l+1}, d_l)
        E: Any,  # (K, N)
        cast: Any,  # (8,) of the dtype: scalars are rounded to it by storing them here
        m: Any,  # (N,) spare vectors of the loss
        sv: Any,
        alive: Any,  # (R,) bool
        div: Any,  # (R,) int64, step index of divergence (-1)
        micro: Any,  # (L, 3) bool: W_l H_l, ∂W_l, W_lᵀ G by the micro-kernels, else BLAS (micro_layers)
    ) -> None:
        L = len(Ws)
        K, N = E.shape
        cast[6] = eps  # ε and 1/ε² in the parameters' dtype: σ_ε is evaluated in that dtype
        cast[7] = 1.0 / (eps * eps) if eps > 0 else 0.0
        e, inv = cast[6], cast[7]
        for i in range(lrs.shape[0]):
            lr = lrs[i]
            cast[0] = lr / N
            scale = cast[0]
            cast[1] = 1.0 - lr * lam_h
            fh = cast[1]
            for r in runs:
                if not alive[r]:
                    continue
                H = H1[r]
                for l in range(L - 1):  # forward
                    if micro[l, 0] and act == 0:  # σ fused (ReLU: pre is post)
                        mm_nn_relu(Ws[l][r], H, post[l])
                    elif micro[l, 0]:
                        mm_nn(Ws[l][r], H, pre[l])
                        _sigma_(pre[l], post[l], act, e, inv)
                    else:
                        np.dot(Ws[l][r], H, pre[l])
                        _sigma_(pre[l], post[l], act, e, inv)
                    H = post[l]
                if micro[L - 1, 0]:
                    mm_nn(Ws[L - 1][r], H, E)
                else:
                    np.dot(Ws[L - 1][r], H, E)
                acc = cast[2:]  # Σ E in the dtype, 4 partial sums (overflow as the dtype overflows)
                for q in range(4):
                    acc[q] = 0.0
                for k in range(K):
                    for j in range(N):
                        acc[j & 3] += E[k, j]
                s = (acc[0] + acc[1]) + (acc[2] + acc[3])
                if not np.isfinite(s):
                    alive[r] = False
                    div[r] = i
                    continue
                if loss == 0:  # E ← (lr/N) residual(out, Y)
                    _mse_res(E, Y, scale, m, sv)
                else:
                    _ce_res(E, Y, scale, m, sv)
                G = E
                for l in range(L - 1, -1, -1):  # backward
                    Hl = H1[r] if l == 0 else post[l - 1]
                    if micro[l, 1]:
                        mm_nt(G, Hl, dW[l])
                    else:
                        np.dot(G, Hl.T, dW[l])
                    if micro[l, 2] and l > 0 and act == 0:  # ⊙ σ' fused
                        mm_tn_relu_d(Ws[l][r], G, dH[l], pre[l - 1])
                    else:
                        if micro[l, 2]:
                            mm_tn(Ws[l][r], G, dH[l])
                        else:
                            np.dot(Ws[l][r].T, G, dH[l])
                        if l > 0 and act != 1:
                            _backprop_(dH[l], pre[l - 1], act, e, inv)
                    G = dH[l]
                for l in range(L):  # update
                    cast[1] = 1.0 - lr * lam_w[l]
                    _decay_sub_(Ws[l][r], cast[1], dW[l])
                cast[1] = fh
                _decay_sub_(H1[r], cast[1], dH[0])


def advance_compiled(
    params: Sequence[np.ndarray],
    lrs: np.ndarray,
    start_step: int,
    classes: int,
    n: int,
    lam_h: float,
    lam_w: Sequence[float],
    sub_batch: int,
    family: Family,
) -> tuple[list[np.ndarray], dict[int, int]]:
    """:func:`dufm_kernel.advance` by the compiled loop (same arguments and result).

    Parameters
    ----------
    params : sequence of ndarray
        ``[H1, W_1 .. W_L]``, each with a leading run dimension ``R`` (not modified).
    lrs : ndarray
        One learning rate per step.
    start_step : int
        The step number of ``lrs[0]`` (a diverged run reports the step it diverged at).
    classes, n, lam_h, lam_w
        ``K``, samples per class, ``λ_{H_1}``, ``λ_{W_l}`` (one per layer).
    sub_batch : int
        Runs stepped together (for cache locality; the result does not depend on it).
    family : Family
        The loss and activation (:func:`~deepcollapse.family.get_family`).

    Returns
    -------
    params : list of ndarray
        The new ``[H1, W_1..W_L]`` (same shapes).
    diverged : dict of int to int
        ``{run index: step}`` of the runs that diverged (frozen at the step whose output sum was not finite).

    Examples
    --------
    >>> from deepcollapse.family import get_family
    >>> from deepcollapse.dufm.kernel import advance
    >>> rng = np.random.default_rng(0)
    >>> params = [rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 3, 3)), rng.normal(size=(2, 2, 3))]
    >>> args = (params, np.full(5, 0.1), 0, 2, 1, 0.1, [0.1, 0.1])
    >>> new, diverged = advance_compiled(*args, 4, get_family())
    >>> ref, _ = advance(*args, kernel="numpy")
    >>> all(np.allclose(a, b) for a, b in zip(new, ref)), diverged
    (True, {})
    """
    if not AVAILABLE:  # pragma: no cover
        raise RuntimeError("numba is not installed; use the numpy kernel")
    from numba.typed import List

    out = [np.array(p, copy=True, order="C") for p in params]
    H1, Ws = out[0], out[1:]
    R, dt, N = H1.shape[0], H1.dtype, H1.shape[2]
    act, eps = family.activation.code, float(family.eps or 0.0)
    mat = numba.typeof(np.empty((1, 1), dt))  # 2-D C-contiguous arrays of the dtype (lists may be empty)
    pre, post = List.empty_list(mat), List.empty_list(mat)
    for W in Ws[:-1]:
        q = np.empty((W.shape[1], N), dt)
        post.append(q)
        pre.append(np.empty_like(q) if family.activation.keeps_pre else q)
    dH, dW, Wl = List(), List(), List()
    for W in Ws:
        dH.append(np.empty((W.shape[2], N), dt))
        dW.append(np.empty(W.shape[1:], dt))
        Wl.append(W)
    E = np.empty((classes, N), dt)
    Y = targets(classes, n, dt)
    alive = np.ones(R, dtype=bool)
    div = np.full(R, -1, dtype=np.int64)
    rates = np.ascontiguousarray(lrs, dtype=np.float64)
    lam = np.asarray(lam_w, dtype=np.float64)
    cast = np.zeros(8, dt)
    micro = np.array(micro_layers([H1.shape[1]] + [W.shape[1] for W in Ws]), dtype=np.bool_)  # (L, 3)
    for a in range(0, R, max(1, int(sub_batch))):
        runs = np.arange(a, min(a + sub_batch, R), dtype=np.int64)
        _block(H1, Wl, runs, rates, float(lam_h), lam, Y, act, eps, family.loss.code, pre, post, dH, dW, E,
               cast, np.empty(N, dt), np.empty(N, dt), alive, div, micro)  # fmt: skip
    diverged = {int(r): int(start_step + div[r]) for r in np.flatnonzero(~alive)}
    return out, diverged
