"""DNC and SRG candidates of the L-DUFM under the cross-entropy loss (issue 9; the 2024 paper's conjecture).

The 2024 paper (conclusion) expects the SRG construction to beat DNC under cross-entropy too, but proves it
only for MSE.  Here the *same explicit class-mean structures* as Definitions 1/10 (DNC) and 4/9/11 (SRG) are
kept, and everything the fit loss touches is re-optimised under the mean softmax cross-entropy
``(1/N) Σ_i CE(W_L h_{L,i}, y_i)`` (same regularisation as eq. (1)).

What is fixed, what is optimised (``n = 1`` reduction of a DNC1-collapsed point, ``fit = (1/K) Σ_c
CE(z_c, c)`` over the class-mean logits ``Z = W_L M_L``, ``K x K``):

* fixed: the unit class-mean geometry of each block ``b`` (DNC: ``X_l = I``; SRG: ``𝒯_r`` and the Kneser
  last layer, :mod:`.constructions`), so ``M~_l = √α_{l,b} X_{l,b}`` per block;
* conditionally optimal, loss-independent (:mod:`.layers`): ``H_1, W_1`` (balanced factors of ``M~_2``) and
  the middle layers (min-norm interpolation).  For a fixed last scale ``α_L`` the best middle scales follow
  from AM–GM, costing ``L (G_b B α_L)^{1/L}`` per block (:func:`~.constructions.half_terms_coefficient`);
* optimised numerically: the last-layer scale ``α_{L,b}`` of each block (one scalar for DNC and Definition
  9 / 11.2, two for the block construction 11.1) **and the whole last layer** ``W_L`` (a convex problem for
  fixed scales).

Write ``R = ReLU(X_L)`` (block-diagonal over blocks) ``= Ũ diag(s) U^T`` (thin SVD, rank ``k``).  The minimal
``‖W_L‖`` giving logits ``Z`` is reached by ``W_L = V Ũ^T`` with ``Z = √α_L V diag(s) U^T``,
``V ∈ R^{K x k}``.
With ``B = √α_L V`` the regularisation ``(λ_{W_L}/2)‖B_b‖²/α_{L,b}`` plus the half terms ``L g_b
α_{L,b}^{1/L}`` (``g_b = (G_b B)^{1/L}``) is minimised over ``α_{L,b}`` in closed form (``L + 1`` equal
terms, AM–GM again), ``α_{L,b} = (λ_{W_L} ‖B_b‖² / (2 g_b))^{L/(L+1)}``, leaving one smooth problem in ``B``::

    J(B) = (1/K) Σ_c [log Σ_k exp(Z_kc) − Z_cc] + Σ_b C_b ‖B_b‖_F^{2/(L+1)},   Z = B diag(s) U^T,
    C_b = (L + 1) (g_b^L λ_{W_L} / 2)^{1/(L+1)}

(``B_b``: the columns of ``B`` belonging to block ``b``).  ``J`` is minimised by L-BFGS (scipy) from two
starts, each first scanned along its ray ``t B_0``: the simplex-ETF logits ``I − 11^T/K`` and the logits of
the MSE-optimal point of the same structure; the better local minimum is polished by BFGS (L-BFGS above 400
variables) to ``‖∇J‖ ~ 1e-12`` (reported as ``grad_norm``).  The all-zero point (loss ``log K``) stays a
candidate.  The result is a *numerical re-optimisation*, not a closed
form: it is the best point of the structure that the optimiser found (the problem is smooth and low-
dimensional, but not convex in the scales).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.docs import fill_doc
from deepcollapse.theory.constructions import (
    Geometry,
    _means_from,
    dnc_geometry,
    half_terms_coefficient,
    optimise_scales,
    scales_from_last,
    srg_geometry,
    srg_optimum,
)
from deepcollapse.theory.layers import Solution, evaluated_solution, solution_from_class_means
from deepcollapse.theory.problem import Problem, problem_of

__all__ = [
    "CEFit",
    "ce_dnc",
    "ce_dnc_solution",
    "ce_srg",
    "ce_srg_solution",
    "ce_symmetric_last_layer",
]


@dataclass
class CEFit:
    """A construction re-optimised under cross-entropy (module docstring).

    ``loss`` is ``J`` at the optimum (equal to the objective of the explicit matrices, see
    :func:`ce_dnc_solution`), ``fit`` its cross-entropy part; ``scales`` are ``α_2 .. α_L`` of the first
    (SRG or DNC) block, ``block_scales`` those of the DNC block of Definition 11.1; ``logits`` the class-mean
    logits ``Z = W_L M_L`` (``K x K``, column ``c`` = class ``c``); ``last_norm2 = ‖W_L‖_F²``;
    ``grad_norm`` the final ``‖∇J‖`` (stationarity in the optimised variables); ``is_zero`` when the all-zero
    point (loss ``log K``) wins."""

    loss: float
    fit: float
    scales: list[float]
    construction: str
    logits: np.ndarray
    last_norm2: float
    rank: int
    ranks: list[int] = field(default_factory=list)
    block_scales: list[float] | None = None
    is_zero: bool = False
    grad_norm: float = 0.0
    status: str = "numerical re-optimisation"

    def to_dict(self) -> dict[str, Any]:
        """The fit in JSON types.  A plain dict: the JSON form kept in a solution's ``info``
        (``info["ce_fit"]``).

        Returns
        -------
        dict
            ``loss, fit, scales, block_scales, construction, rank, ranks, is_zero, grad_norm, status``.

        Examples
        --------
        >>> ce_dnc(3, 2, 1, 0.01, 0.01).to_dict()["construction"]
        'dnc'
        """
        return {
            "loss": self.loss,
            "fit": self.fit,
            "scales": list(self.scales),
            "block_scales": None if self.block_scales is None else list(self.block_scales),
            "construction": self.construction,
            "rank": self.rank,
            "ranks": list(self.ranks),
            "is_zero": self.is_zero,
            "grad_norm": self.grad_norm,
            "status": self.status,
        }


def _ce_value_grad(Z: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``(1/K) Σ_c [lse(Z[:, c]) − Z[c, c]]``, its gradient ``(softmax(Z) − I)/K`` and ``softmax(Z)``."""
    K = Z.shape[1]
    m = Z.max(axis=0, keepdims=True)  # (1, K)
    E = np.exp(Z - m)  # (K, K)
    S = E.sum(axis=0, keepdims=True)  # (1, K)
    P = E / S  # (K, K) softmax per column
    value = float(np.sum(m[0] + np.log(S[0]) - np.diag(Z))) / K
    G = P.copy()
    G[np.diag_indices(K)] -= 1.0
    return value, G / K, P


class _Problem:
    """``J(B)`` of the module docstring for the blocks of one construction."""

    def __init__(
        self, geoms: Sequence[Geometry], K: int, L: int, n: int, lam_h: float, lams: list[float]
    ) -> None:
        self.geoms = list(geoms)
        self.K, self.L, self.lamL = K, L, lams[-1]
        self.p = 2.0 / (L + 1)
        blocks_A, self.cols, self.U_t, self.g = [], [], [], []
        col = row = 0
        for geom in self.geoms:
            R = np.maximum(geom.X_last, 0.0)  # (d_b, K_b)
            Ut, s, Vt = np.linalg.svd(R, full_matrices=False)
            k = int(np.sum(s > 1e-12 * s[0]))
            A = np.zeros((k, K))
            A[:, row : row + geom.classes] = s[:k, None] * Vt[:k]  # (k, K)
            blocks_A.append(A)
            self.U_t.append(Ut[:, :k])
            self.cols.append(slice(col, col + k))
            col += k
            row += geom.classes
            self.g.append(half_terms_coefficient(geom, L, n, lam_h, lams) ** (1.0 / L))
        if row != K:
            raise ConfigError(f"blocks cover {row} classes, must cover classes == {K}.")
        self.A = np.vstack(blocks_A)  # (k, K): Z = B A
        self.C = [(L + 1) * (g**L * self.lamL / 2.0) ** (1.0 / (L + 1)) for g in self.g]

    @property
    def size(self) -> int:
        return self.A.shape[0]

    def value_grad(self, b: np.ndarray) -> tuple[float, np.ndarray]:
        B = b.reshape(self.K, self.size)
        value, G, _ = _ce_value_grad(B @ self.A)
        grad = G @ self.A.T  # (K, k)
        for C, cols in zip(self.C, self.cols):
            nb2 = float(np.sum(B[:, cols] ** 2))
            if nb2 > 0:
                value += C * nb2 ** (self.p / 2)
                grad[:, cols] += C * self.p * nb2 ** (self.p / 2 - 1) * B[:, cols]
        return value, grad.ravel()

    def last_scales(self, B: np.ndarray) -> list[float]:
        """``α_{L,b} = (λ_{W_L} ‖B_b‖² / (2 g_b))^{L/(L+1)}`` (0 for an all-zero block)."""
        out = []
        for g, cols in zip(self.g, self.cols):
            nb2 = float(np.sum(B[:, cols] ** 2))
            out.append((self.lamL * nb2 / (2.0 * g)) ** (self.L / (self.L + 1)) if nb2 > 0 else 0.0)
        return out


def _etf_logits(K: int) -> np.ndarray:
    return np.eye(K) - 1.0 / K


def _minimise(problem: _Problem, starts: Sequence[np.ndarray]) -> tuple[float, np.ndarray, float]:
    """Best local minimum of ``J`` over the starts (each scanned along its ray first, then L-BFGS)."""
    best: tuple[float, np.ndarray, float] | None = None
    for B0 in starts:
        ts = np.exp(np.linspace(-4.0, 4.0, 33))
        vals = [problem.value_grad((t * B0).ravel())[0] for t in ts]
        x0 = (ts[int(np.argmin(vals))] * B0).ravel()
        res = optimize.minimize(
            problem.value_grad,
            x0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 20000, "maxcor": 30, "ftol": 0.0, "gtol": 1e-13},
        )
        gnorm = float(np.linalg.norm(problem.value_grad(res.x)[1]))
        if best is None or res.fun < best[0]:
            best = (float(res.fun), res.x.reshape(problem.K, problem.size), gnorm)
    assert best is not None
    return best


def _polish(problem: _Problem, B: np.ndarray) -> tuple[float, np.ndarray, float]:
    """BFGS (L-BFGS for many variables) on ``J`` from ``B``; keeps ``B`` if that does not improve ``J``."""
    f0, g0 = problem.value_grad(B.ravel())
    res = optimize.minimize(
        problem.value_grad,
        B.ravel(),
        jac=True,
        method="BFGS" if B.size <= 400 else "L-BFGS-B",
        options={"gtol": 1e-14, "maxiter": 2000}
        if B.size <= 400
        else {"maxiter": 20000, "maxcor": 50, "ftol": 0.0, "gtol": 1e-14},
    )
    f1, g1 = problem.value_grad(res.x)
    if f1 <= f0:
        return float(f1), res.x.reshape(B.shape), float(np.linalg.norm(g1))
    return float(f0), B, float(np.linalg.norm(g0))


def _starts(problem: _Problem, K: int, L: int, n: int, lam_h: float, lams: list[float]) -> list[np.ndarray]:
    """Two starting directions for ``B``: simplex-ETF logits and the MSE-optimal point's logits."""
    A_pinv = np.linalg.pinv(problem.A)  # (K, k)
    starts = [_etf_logits(K) @ A_pinv]
    Z = np.zeros((K, K))
    row = 0
    for geom in problem.geoms:
        _, scales = optimise_scales(geom, L, n, lam_h, lams, classes=K)
        a = scales[-1] if scales[-1] > 0 else 1.0
        R = math.sqrt(a) * np.maximum(geom.X_last, 0.0)  # (d_b, K_b)
        W = np.linalg.solve(R.T @ R + K * lams[-1] * np.eye(geom.classes), R.T)  # ridge (K_b, d_b)
        Z[row : row + geom.classes, row : row + geom.classes] = W @ R
        row += geom.classes
    starts.append(Z @ A_pinv)
    return starts


def _fit(
    geoms: Sequence[Geometry | None], name: str, K: int, L: int, n: int, lam_h: float, lams: list[float]
) -> CEFit:
    blocks = [g for g in geoms if g is not None]
    problem = _Problem(blocks, K, L, n, lam_h, lams)
    value, B, gnorm = _minimise(problem, _starts(problem, K, L, n, lam_h, lams))
    value, B, gnorm = _polish(problem, B)
    zero = math.log(K)
    if not value < zero:
        return CEFit(
            loss=zero,
            fit=zero,
            scales=[0.0] * max(L - 1, 1),
            construction=name,
            logits=np.zeros((K, K)),
            last_norm2=0.0,
            rank=0,
            ranks=[0] * max(L - 1, 1),
            block_scales=[0.0] * max(L - 1, 1) if len(blocks) > 1 else None,
            is_zero=True,
        )
    aLs = problem.last_scales(B)
    scales = [scales_from_last(g, L, n, lam_h, lams, a) for g, a in zip(blocks, aLs)]
    Z = B @ problem.A  # (K, K)
    last_norm2 = sum(float(np.sum(B[:, c] ** 2)) / a for c, a in zip(problem.cols, aLs) if a > 0)
    ranks = np.zeros(max(L - 1, 1), dtype=int)
    for g, a in zip(blocks, aLs):
        if a > 0:
            ranks += np.asarray(g.ranks(L))
    return CEFit(
        loss=value,
        fit=_ce_value_grad(Z)[0],
        scales=scales[0],
        construction=name,
        logits=Z,
        last_norm2=last_norm2,
        rank=int(ranks[0]) if L >= 3 else int(ranks[-1]),
        ranks=[int(r) for r in ranks],
        block_scales=scales[1] if len(scales) > 1 else None,
        grad_norm=gnorm,
    )


@fill_doc
def ce_dnc(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    *,
    problem: Problem | None = None,
) -> CEFit:
    """The DNC structure (Definitions 1/10: ``M~_l = √α_l I_K``) re-optimised under cross-entropy: scales
    and the whole last layer (module docstring).  ``L >= 1``.

    Parameters
    ----------
    %(problem)s
    %(problem_kw)s

    Returns
    -------
    CEFit
        The re-optimised loss and scales.

    Examples
    --------
    >>> fit = ce_dnc(3, 2, 1, 0.01, 0.01)
    >>> round(fit.loss, 6), fit.is_zero, fit.logits.shape
    (0.128171, False, (3, 3))
    """
    K, L, n, lam_h, lams = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).regularised().parts()
    return _fit([dnc_geometry(K)], "dnc", K, L, n, lam_h, lams)


@fill_doc
def ce_srg(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    construction: str = "best",
    *,
    problem: Problem | None = None,
) -> CEFit | None:
    """The SRG structure (Definition 9 for ``K = C(r, 2)``, 11.1 / 11.2 otherwise) re-optimised under
    cross-entropy (module docstring); ``None`` where undefined (``K < 6`` or ``L < 2``).  ``best`` returns the
    lower of 11.1 and 11.2 (``def9`` when ``K = C(r, 2)``).  In Definition 11.1 the SRG and DNC blocks are
    coupled through the softmax, so their two last-layer scales are optimised jointly.

    Parameters
    ----------
    %(problem)s
    %(theory_construction)s
    %(problem_kw)s

    Returns
    -------
    CEFit or None
        The re-optimised loss and scales; ``None`` where undefined.

    Examples
    --------
    >>> round(ce_srg(6, 2, 1, 0.001, 0.001).loss, 6)
    0.035209
    >>> ce_srg(5, 2, 1, 0.001, 0.001) is None
    True
    """
    K, L, n, lam_h, lams = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).regularised().parts()
    return srg_optimum(K, L, n, lam_h, lams, construction, _fit)


def ce_symmetric_last_layer(classes: int, scale: float, lam: float) -> tuple[float, float]:
    """Cross-entropy last layer of the DNC structure restricted to the symmetric form ``W_L = β (I − 11^T/K)``
    at ``M_L = √α_L I_K``: ``min_β log(1 + (K − 1) e^{−√α_L β}) + (λ/2)(K − 1) β²`` (1-D, convex).
    Returns ``(value, β)``.  By the permutation symmetry of the (strictly convex) last-layer problem this is
    its global minimum; the tests use it as an independent check of the generic optimiser.

    Parameters
    ----------
    classes : int
        ``K``, the number of classes.
    scale : float
        ``α_L``, the scale of ``M_L = √α_L I_K``.
    lam : float
        ``λ_{W_L} > 0``.

    Returns
    -------
    value : float
        The minimum (fit + the last layer's regularisation).
    beta : float
        The minimising ``β``.

    Examples
    --------
    >>> value, beta = ce_symmetric_last_layer(3, 1.0, 0.1)
    >>> round(value, 6), round(beta, 6)
    (0.593892, 1.520755)
    """
    K = classes
    a = math.sqrt(scale)

    def f(beta: float) -> float:
        return float(np.logaddexp(0.0, math.log(K - 1) - a * beta)) + 0.5 * lam * (K - 1) * beta**2

    res = optimize.minimize_scalar(f, bounds=(0.0, 1e3), method="bounded", options={"xatol": 1e-14})
    return float(res.fun), float(res.x)


def _ce_solution(
    fit: CEFit,
    geoms: Sequence[Geometry | None],
    K: int,
    L: int,
    n: int,
    lam_h: float,
    lams: list[float],
    width: int | None,
) -> Solution:
    if fit.is_zero:
        raise ConfigError(
            f"the cross-entropy optimum of {fit.construction} is the all-zero point (loss log K), "
            "must be non-trivial to build matrices; lower lam_h / lam_w."
        )
    scales_list = [fit.scales, fit.block_scales or []]
    means = _means_from(geoms, scales_list, L, width)
    if L == 1:
        M1 = means[0]
        H1 = np.repeat(M1, n, axis=1)  # (d1, K n)
        weights = [fit.logits @ np.linalg.pinv(M1)]  # (K, d1)
    else:
        sol = solution_from_class_means(means, n, lam_h, lams, d1=width)
        H1 = sol.H1
        M_L = np.maximum(means[-1], 0.0)  # (d_L, K)
        weights = sol.weights[:-1] + [fit.logits @ np.linalg.pinv(M_L)]  # W_L: min-norm, W_L M_L = Z
    return evaluated_solution(
        H1,
        weights,
        n,
        lam_h,
        lams,
        loss="ce",
        class_means=means,
        scales=list(fit.scales),
        construction=f"ce-{fit.construction}",
        info={"ce_fit": fit.to_dict()},
    )


@fill_doc
def ce_dnc_solution(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    width: int | None = None,
    *,
    problem: Problem | None = None,
) -> Solution:
    """Explicit matrices of :func:`ce_dnc` (``H1`` repeats the class means ``n`` times; ``W_L = Z M_L^+``),
    with ``loss`` the cross-entropy objective evaluated on them.

    Parameters
    ----------
    %(problem)s
    %(theory_width)s
    %(problem_kw)s

    Returns
    -------
    Solution
        The explicit matrices and their cross-entropy loss.

    Examples
    --------
    >>> s = ce_dnc_solution(3, 2, 1, 0.01, 0.01)
    >>> s.construction, bool(abs(s.loss - ce_dnc(3, 2, 1, 0.01, 0.01).loss) < 1e-9)
    ('ce-dnc', True)
    """
    K, L, n, lam_h, lams = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).regularised().parts()
    fit = ce_dnc(K, L, n, lam_h, lams)
    return _ce_solution(fit, [dnc_geometry(K)], K, L, n, lam_h, lams, width)


@fill_doc
def ce_srg_solution(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    construction: str = "best",
    width: int | None = None,
    *,
    problem: Problem | None = None,
) -> Solution:
    """Explicit matrices of :func:`ce_srg`; ``ConfigError`` where the SRG construction is undefined.

    Parameters
    ----------
    %(problem)s
    %(theory_construction)s
    %(theory_width)s
    %(problem_kw)s

    Returns
    -------
    Solution
        The explicit matrices and their cross-entropy loss.

    Examples
    --------
    >>> s = ce_srg_solution(6, 2, 1, 0.001, 0.001)
    >>> s.construction, round(s.loss, 6)
    ('ce-def9', 0.035209)
    """
    K, L, n, lam_h, lams = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).regularised().parts()
    fit = ce_srg(K, L, n, lam_h, lams, construction)
    if fit is None:
        raise ConfigError(f"classes == {K}, layers == {L}, must be K >= 6 and L >= 2 for an SRG solution.")
    return _ce_solution(fit, list(srg_geometry(K, fit.construction)), K, L, n, lam_h, lams, width)
