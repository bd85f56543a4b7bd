"""The lowest Hessian eigenvalues at a point of eq. (1), over all directions and off its symmetries.

``symmetry_basis``: the tangent space of the first-layer rotations ``H_1 → Q H_1``, ``W_1 → W_1 Q^T`` (exact
zero modes at a critical point).  ``hessian_spectrum``: from exact Hessian-vector products, the dense Hessian
diagonalised by ``numpy.linalg.eigh`` up to ``_DENSE_MAX`` parameters (exact and reproducible), Lanczos
(``scipy.sparse.linalg.eigsh``, fixed start vector) above; the symmetry directions deflated by shifting them
above ``λ_max``.  Used by :func:`~deepcollapse.landscape.verdicts.landscape`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["hessian_spectrum", "symmetry_basis"]

# up to this many parameters (every collapsed point of the best-known table, analysed on the n = 1 problem)
# the Hessian is formed from HVPs and diagonalised densely; above it, Lanczos (ARPACK from a random start
# took 0.6 s or 240 s on the same tiny problem, so the dense path is also the reproducible one)
_DENSE_MAX = 5000


def symmetry_basis(params: Sequence[np.ndarray]) -> np.ndarray:
    """Orthonormal basis ``(P, s)`` of the tangent space of ``{(Q H_1, W_1 Q^T, W_2, ..)}`` at ``params``:
    spanned by ``(A H_1, −W_1 A, 0, ..)`` over antisymmetric ``A``; ``s`` is its dimension.

    Parameters
    ----------
    params : sequence of ndarray
        The point ``[H_1, W_1, ..., W_L]``.

    Returns
    -------
    ndarray, (P, s)
        Orthonormal columns, ``s <= d_1 (d_1 − 1) / 2`` (``P`` the number of parameters).

    Examples
    --------
    >>> B = symmetry_basis([np.eye(3), np.eye(3), np.eye(3)])
    >>> B.shape, bool(np.allclose(B.T @ B, np.eye(3)))
    ((27, 3), True)
    """
    H1, W1 = params[0], params[1]
    d1 = H1.shape[0]
    sizes = [int(np.prod(np.shape(p))) for p in params]
    P = sum(sizes)
    cols = []
    for i in range(d1):
        for j in range(i + 1, d1):
            A = np.zeros((d1, d1))
            A[i, j], A[j, i] = 1.0, -1.0
            v = np.zeros(P)
            v[: sizes[0]] = (A @ H1).ravel()
            v[sizes[0] : sizes[0] + sizes[1]] = (-W1 @ A).ravel()
            cols.append(v)
    if not cols:
        return np.zeros((P, 0))
    T = np.stack(cols, axis=1)  # (P, d1(d1-1)/2)
    U, S, _ = np.linalg.svd(T, full_matrices=False)
    tol = max(T.shape) * np.finfo(np.float64).eps * (S[0] if S.size else 0.0)
    return U[:, S > tol]


def hessian_spectrum(
    hvp: Callable[[np.ndarray], np.ndarray],
    size: int,
    B: np.ndarray,
    k: int,
    lanczos_tol: float,
    bar: Callable[[str, int | None, str], Any],
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """The largest and the ``k`` lowest eigenvalues of a Hessian, and the ``k`` lowest off the symmetries.

    Parameters
    ----------
    hvp : callable
        ``v -> H v`` for a flat float64 ``v`` of length ``size`` (exact Hessian-vector products).
    size : int
        Number of parameters; up to ``_DENSE_MAX`` the Hessian is formed (``size`` HVPs) and diagonalised
        densely, above it Lanczos.
    B : ndarray
        ``(size, s)`` orthonormal basis of the symmetry directions (:func:`symmetry_basis`), deflated.
    k : int
        How many of the lowest eigenvalues.
    lanczos_tol : float
        Tolerance of ``eigsh`` (Lanczos path only).
    bar : callable
        ``bar(desc, total, unit)`` -> a tqdm bar advanced once per HVP.

    Returns
    -------
    lam_max : float
        The largest eigenvalue.
    vals_all : ndarray
        The ``k`` lowest eigenvalues.
    vals, vecs : ndarray
        The ``k`` lowest eigenvalues off the symmetry directions and their eigenvectors (columns).

    Examples
    --------
    >>> import contextlib, types
    >>> A = np.diag([3.0, -1.0, 2.0])
    >>> quiet = types.SimpleNamespace(update=lambda: None)
    >>> lam_max, lowest, vals, vecs = hessian_spectrum(
    ...     lambda v: A @ v, 3, np.zeros((3, 0)), 2, 1e-10, lambda *_: contextlib.nullcontext(quiet)
    ... )
    >>> lam_max, lowest.tolist(), vecs.shape
    (3.0, [-1.0, 2.0], (3, 2))
    """
    from scipy.sparse.linalg import LinearOperator, eigsh

    if size <= _DENSE_MAX:  # form the Hessian (size HVPs) and diagonalise it exactly: deterministic
        A = np.empty((size, size))
        e = np.zeros(size)
        with bar(f"Hessian ({size} parameters): Hessian-vector products", size, "HVP") as b:
            for i in range(size):
                e[i] = 1.0
                A[:, i] = hvp(e)
                e[i] = 0.0
                b.update()
        A = 0.5 * (A + A.T)
        w_all = np.linalg.eigvalsh(A)
        lam_max, vals_all = float(w_all[-1]), w_all[:k]
        shift = 2.0 * abs(lam_max) + 1.0
        AB = A @ B  # (P, s)
        Dm = A - B @ AB.T - AB @ B.T + B @ (B.T @ AB) @ B.T + shift * (B @ B.T)  # (I-BB')A(I-BB') + shift BB'
        w, V = np.linalg.eigh(0.5 * (Dm + Dm.T))
        vals, vecs = w[:k], V[:, :k]
    else:
        lanczos = bar(f"Lanczos ({size} parameters): Hessian-vector products", None, "HVP")

        def counted(v: np.ndarray) -> np.ndarray:
            lanczos.update()
            return hvp(v)

        H = LinearOperator((size, size), matvec=counted, dtype=np.float64)
        v0 = np.random.default_rng(0).standard_normal(size)  # a fixed start: reproducible Lanczos
        lam_max = float(eigsh(H, k=1, which="LA", tol=1e-6, v0=v0, return_eigenvectors=False)[0])
        vals_all, _ = _lowest(H, k, lanczos_tol)
        shift = 2.0 * abs(lam_max) + 1.0

        def deflated(v: np.ndarray) -> np.ndarray:
            v = np.asarray(v, dtype=np.float64).ravel()
            c = B.T @ v
            w = v - B @ c  # (P,) component off the symmetries
            Hw = counted(w)
            return Hw - B @ (B.T @ Hw) + shift * (B @ c)

        D = LinearOperator((size, size), matvec=deflated, dtype=np.float64)
        vals, vecs = _lowest(D, k, lanczos_tol)
        lanczos.close()
    return lam_max, vals_all, vals, vecs


def _lowest(op: Any, k: int, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` lowest eigenpairs by Lanczos; if ARPACK stops before convergence, the converged ones."""
    from scipy.sparse.linalg import ArpackNoConvergence, eigsh

    k = min(k, op.shape[0] - 1)
    ncv = min(op.shape[0], max(4 * k + 1, 40))
    v0 = np.random.default_rng(0).standard_normal(op.shape[0])  # fixed start vector: reproducible
    try:
        vals, vecs = eigsh(op, k=k, which="SA", tol=tol, ncv=ncv, maxiter=20_000, v0=v0)
    except ArpackNoConvergence as exc:  # pragma: no cover - keep what converged
        if len(exc.eigenvalues) == 0:
            raise
        vals, vecs = exc.eigenvalues, exc.eigenvectors
    order = np.argsort(vals)
    return vals[order], vecs[:, order]
