"""The deep *linear* UFM (activation ``linear``): global optimum under MSE, a symmetric candidate under CE.

Model (2024 paper eq. (1) with σ = identity): the output is ``Z = W_L ⋯ W_1 H_1`` (``K x N``), a product of
``L + 1`` factors ``A_0 = H_1, A_l = W_l`` with weights ``μ_0 = λ_{H_1}``, ``μ_l = λ_{W_l}``.

**Derivation (MSE).**  (i) *Balanced factors.*  For a fixed product ``Z`` the regularisation satisfies

    min_{Π A_i = Z} Σ_i (μ_i/2) ‖A_i‖_F²  =  ((L+1)/2) (Π_i μ_i)^{1/(L+1)} Σ_j σ_j(Z)^{2/(L+1)}

(AM–GM over the ``L + 1`` terms, then the variational form of the Schatten-``2/(L+1)`` quasi-norm of a
product; attained by ``A_i = c_i U_{i+1} Σ^{1/(L+1)} U_i^T`` with ``μ_i c_i² `` equal for all ``i``).  (ii)
*Same singular vectors as Y.*  The fit ``1/(2N) ‖Z − Y‖²`` is, for fixed singular values of ``Z``, smallest
when ``Z`` shares the singular vectors of ``Y`` (von Neumann's trace inequality), so the problem separates
over the singular values.  (iii) *One 1-D problem.*  ``Y = I_K ⊗ 1_n^T`` has ``K`` equal singular values
``√n``; writing ``σ_j(Z) = √n t_j`` and ``Λ = nλ_{H_1} Π_l λ_{W_l}`` each ``t_j`` solves the same problem

    g(t) = (t − 1)²/(2K) + ((L+1)/2) Λ^{1/(L+1)} t^{2/(L+1)},   t >= 0,

whose minimum is at ``t = 0`` (value ``1/(2K)``) or at the largest root of ``g'(t) = 0`` in ``(0, 1)``.
Hence the optimum has rank ``min(K, d)`` (``d`` the smallest width) or is the all-zero point:

    L_lin = min(K, d) · min(g(t*), 1/(2K)) + (K − min(K, d)) / (2K).

At ``λ = 0`` the optimum is any exact fit (loss 0).  The matrices of the optimum have orthogonal class
means ``M_l = c_l I_K ⊗ 1_n^T`` (non-negative), so for ``d >= K`` ``L_lin`` equals the ReLU model's ``L_DNC``
(:func:`~deepcollapse.theory.constructions.loss_dnc`) — an independent check the tests use.

**Cross-entropy.**  Step (i) still holds; step (ii) does not (the CE fit is not unitarily invariant), so the
global optimum has **no closed form** here.  The *symmetric candidate* is the simplex ETF: class-mean logits
``t (I_K − 11^T/K)`` (rank ``K − 1``, equal singular values ``√n t``), built from balanced factors, with

    L_ETF = min_t log(1 + (K − 1) e^{−t}) + ((L+1)/2) (K − 1) Λ^{1/(L+1)} t^{2/(L+1)}

(1-D; ``t = 0`` is the zero point, ``log K``).  For ``L = 1`` (the UFM: a convex nuclear-norm regulariser) the
symmetric point is the known optimum; for deeper models the Schatten quasi-norm rewards low rank and GD finds
lower-rank points below ``L_ETF`` (a test shows it at ``K = 10, L = 4``; Garrod & Keating 2025), so the ETF
is only a candidate; the experiments ``linear-dufm`` and ``ce-depth-rank`` measure what GD reaches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize

from deepcollapse._core.checks import ConfigError, check_choice, check_int
from deepcollapse._core.docs import fill_doc
from deepcollapse.theory.layers import Solution, evaluated_solution
from deepcollapse.theory.problem import Problem, problem_of

__all__ = ["LinearOptimum", "linear_optimum", "linear_solution"]


@dataclass
class LinearOptimum:
    """``loss`` of the deep linear UFM candidate, ``t`` the singular value of the class-mean output per
    ``√n`` (0 at the zero point), ``rank`` of every layer's class means, ``kind`` ``'optimum'`` (MSE: the
    global optimum, closed form up to a 1-D root) or ``'etf'`` (CE: symmetric candidate, numerical 1-D)."""

    loss: float
    t: float
    rank: int
    kind: str
    loss_name: str
    Lambda: float
    status: str

    def to_dict(self) -> dict[str, Any]:
        """The optimum in JSON types.  A plain dict: the JSON form kept in a solution's ``info``
        (``info["linear"]``).

        Returns
        -------
        dict
            ``loss, t, rank, kind, Lambda, status``.

        Examples
        --------
        >>> sorted(linear_optimum(3, 2, 5, 0.01, 0.01).to_dict())
        ['Lambda', 'kind', 'loss', 'rank', 'status', 't']
        """
        return {
            "loss": self.loss,
            "t": self.t,
            "rank": self.rank,
            "kind": self.kind,
            "Lambda": self.Lambda,
            "status": self.status,
        }


def _minimise_1d(f: Any, df: Any, hi: float) -> float:
    """Global minimiser of a smooth ``f`` on ``(0, hi]``: log-grid scan, then a root of ``df``."""
    ts = np.exp(np.linspace(math.log(hi) - 40.0, math.log(hi), 4001))
    vals = np.array([f(t) for t in ts])
    i = int(np.argmin(vals))
    lo, up = ts[max(i - 1, 0)], ts[min(i + 1, ts.size - 1)]
    if df(lo) < 0 < df(up):
        return float(optimize.brentq(df, lo, up, xtol=1e-16, rtol=4 * np.finfo(float).eps, maxiter=200))
    return float(ts[i])


@fill_doc
def linear_optimum(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    loss: str = "mse",
    width: int | None = None,
    *,
    problem: Problem | None = None,
) -> LinearOptimum:
    """The deep linear UFM's optimum (MSE) or simplex-ETF candidate (CE), module docstring.

    ``width`` is the smallest hidden width ``d`` (default: no limit, ``d >= K``); under MSE only ``min(K,
    d)`` singular values can be non-zero; the CE candidate needs ``d >= K − 1``.

    Parameters
    ----------
    %(problem)s
    loss : {"mse", "ce"}, default "mse"
        The fit term.
    width : int, optional
        The smallest hidden width ``d`` (default: no limit).
    %(problem_kw)s

    Returns
    -------
    LinearOptimum
        The optimum (MSE) or the simplex-ETF candidate (CE).

    Examples
    --------
    >>> o = linear_optimum(3, 2, 5, 0.01, 0.01)
    >>> round(o.loss, 6), o.rank, o.kind
    (0.07561, 3, 'optimum')
    >>> linear_optimum(3, 2, 5, 0.01, 0.01, loss="ce").kind
    'etf'
    """
    K, L, n, lam_h, lams = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).parts()
    check_choice("loss", loss, ("mse", "ce"))
    d = K if width is None else check_int("width", width, min=1)
    Lam = n * lam_h * math.prod(lams)
    c = Lam ** (1.0 / (L + 1))
    p = 2.0 / (L + 1)
    if loss == "mse":
        k = min(K, d)
        if Lam == 0:
            return LinearOptimum(
                (K - k) / (2.0 * K), 1.0, k, "optimum", loss, Lam, "closed form (λ = 0: exact fit)"
            )

        def g(t: float) -> float:
            return (t - 1.0) ** 2 / (2.0 * K) + 0.5 * (L + 1) * c * t**p

        def dg(t: float) -> float:
            return (t - 1.0) / K + c * t ** (p - 1.0)

        t = _minimise_1d(g, dg, 1.0)
        zero = 1.0 / (2.0 * K)
        if not g(t) < zero:
            return LinearOptimum(0.5, 0.0, 0, "optimum", loss, Lam, "closed form (1-D root)")
        return LinearOptimum(k * g(t) + (K - k) * zero, t, k, "optimum", loss, Lam, "closed form (1-D root)")
    if d < K - 1:
        raise ConfigError(f"width == {d}, must be >= classes - 1 == {K - 1} for the simplex-ETF candidate.")
    status = "numerical (1-D, symmetric candidate; global optimum: no closed form)"
    if Lam == 0:
        return LinearOptimum(
            0.0, math.inf, K - 1, "etf", loss, Lam, status + "; λ = 0: infimum 0 not attained"
        )

    def f(t: float) -> float:
        return float(np.logaddexp(0.0, math.log(K - 1) - t)) + 0.5 * (L + 1) * (K - 1) * c * t**p

    def df(t: float) -> float:
        return -(K - 1) / (math.exp(t) + K - 1) + (K - 1) * c * t ** (p - 1.0)

    t = _minimise_1d(f, df, 1e3)
    if not f(t) < math.log(K):
        return LinearOptimum(math.log(K), 0.0, 0, "etf", loss, Lam, status)
    return LinearOptimum(f(t), t, K - 1, "etf", loss, Lam, status)


@fill_doc
def linear_solution(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    loss: str = "mse",
    width: int | None = None,
    *,
    problem: Problem | None = None,
) -> Solution:
    """Explicit balanced matrices of :func:`linear_optimum` (needs every ``λ > 0``): with the class-mean
    pattern ``Q = I_K`` (MSE) or ``Q = I_K − 11^T/K`` (CE, a projector) and ``Z_class = t Q``,
    ``M_1 = c_0 Q``, ``W_l = c_l Q`` padded to ``width`` (default ``K``),
    ``μ_i c_i² = (Π μ)^{1/(L+1)} t^{2/(L+1)}`` where ``μ_0 = nλ_{H_1}``; ``H_1 = M_1 ⊗ 1_n^T``.
    ``loss`` is the objective evaluated on them (activation linear).

    Parameters
    ----------
    %(problem)s
    loss : {"mse", "ce"}, default "mse"
        The fit term.
    width : int, optional
        The width of every layer (default ``K``, at least ``K``).
    %(problem_kw)s

    Returns
    -------
    Solution
        The explicit balanced matrices and their loss.

    Examples
    --------
    >>> s = linear_solution(3, 2, 5, 0.01, 0.01)
    >>> bool(abs(s.loss - linear_optimum(3, 2, 5, 0.01, 0.01).loss) < 1e-12)
    True
    """
    K, L, n, lam_h, lams = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).parts()
    opt = linear_optimum(K, L, n, lam_h, lams, loss, width)
    d = K if width is None else width
    if d < K:
        raise ConfigError(f"width == {d}, must be >= classes == {K} for the explicit matrices.")
    if opt.Lambda == 0:
        raise ConfigError("lam_h, lam_w == 0, must be > 0 to build the balanced optimum (it is not unique).")
    mus = [n * lam_h, *lams]
    Q = np.eye(K) if loss == "mse" else np.eye(K) - 1.0 / K  # (K, K)
    tau = math.prod(mus) ** (1.0 / (L + 1)) * opt.t ** (2.0 / (L + 1))
    cs = [math.sqrt(tau / mu) for mu in mus]
    pad = np.zeros((d, K))
    pad[:K] = np.eye(K)  # (d, K) isometry
    M1 = cs[0] * pad @ Q  # (d, K)
    weights = [cs[l] * pad @ Q @ pad.T for l in range(1, L)] + [cs[L] * Q @ pad.T]
    H1 = np.repeat(M1, n, axis=1)  # (d, K n)
    return evaluated_solution(
        H1,
        weights,
        n,
        lam_h,
        lams,
        loss=loss,
        activation="linear",
        construction=f"linear-{opt.kind}",
        info={"linear": opt.to_dict()},
    )
