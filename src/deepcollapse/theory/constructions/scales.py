"""The loss of a construction as a function of its scales ``α_2 .. α_L``, and its minimisation.

:func:`chain_loss` is ``L(α)`` of the package docstring (:mod:`deepcollapse.theory.constructions`);
:func:`optimise_scales` minimises it by the AM–GM one-scalar reduction (:func:`half_terms_coefficient`,
:func:`scales_from_last`), with the zero point as candidate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import optimize

from deepcollapse._core.docs import fill_doc
from deepcollapse.theory.constructions.geometry import Geometry

__all__ = ["chain_loss", "half_terms_coefficient", "optimise_scales", "scales_from_last"]


@fill_doc
def chain_loss(
    geom: Geometry,
    layers: int,
    n: int,
    lam_h: float,
    lam_w: Sequence[float],
    scales: Sequence[float],
    classes: int | None = None,
) -> float:
    """``L(α)`` of the package docstring for one block at ``scales = [α_2 .. α_L]`` (``[α_1]`` for ``L = 1``,
    where the H_1 term is ``(nλ_{H_1}/2) ‖X_1‖_F² α_1``).  ``classes`` is the ridge constant's ``K`` (default
    the block's).  All scales 0 gives the zero point's share ``K_b / (2K)``.

    Parameters
    ----------
    %(theory_chain)s
    scales : sequence of float
        ``[α_2 .. α_L]`` (``[α_1]`` for ``L = 1``), ``>= 0``.
    classes : int, optional
        The ``K`` of the ridge constant (default the block's).

    Returns
    -------
    float
        The block's share of eq. (1) at these scales.

    Examples
    --------
    >>> from deepcollapse.theory.constructions import dnc_geometry
    >>> chain_loss(dnc_geometry(3), 2, 1, 0.01, [0.01, 0.01], [0.0])  # the zero point
    0.5
    """
    L = layers
    K = geom.classes if classes is None else classes
    lams = list(lam_w)
    a = np.asarray(scales, dtype=np.float64)
    lamL = lams[-1]
    ridge = float(np.sum(lamL / (2.0 * (geom.e * a[-1] + K * lamL))))
    if np.all(a == 0):
        return ridge
    P, q = geom.coefficients(L)
    if L == 1:
        return 0.5 * n * lam_h * P * a[0] + ridge
    value = math.sqrt(lams[0] * n * lam_h) * P * math.sqrt(a[0])
    for i in range(L - 2):
        value += 0.5 * lams[i + 1] * q[i] * a[i + 1] / a[i]
    return value + ridge


def _grouped(e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge (numerically) equal eigenvalues: ``(values, multiplicities)``, values averaged within a group."""
    scale = float(e.max()) if e.size and e.max() > 0 else 1.0
    keys = np.round(e / scale, 11)
    uniq, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    values = np.bincount(inverse, weights=e) / counts
    return values, counts.astype(np.float64)


@fill_doc
def optimise_scales(
    geom: Geometry, layers: int, n: int, lam_h: float, lam_w: Sequence[float], classes: int | None = None
) -> tuple[float, list[float]]:
    """Minimise :func:`chain_loss` over ``α > 0`` (AM–GM one-scalar reduction) with the zero point as
    candidate.

    Returns ``(value, scales)``; scales are all 0 if the zero point is optimal (ties go to the zero point).

    Parameters
    ----------
    %(theory_chain)s
    classes : int, optional
        The ``K`` of the ridge constant (default the block's).

    Returns
    -------
    value : float
        The minimum of :func:`chain_loss`.
    scales : list of float
        The minimising ``[α_2 .. α_L]`` (all 0 at the zero point).

    Examples
    --------
    >>> from deepcollapse.theory.constructions import dnc_geometry
    >>> value, scales = optimise_scales(dnc_geometry(3), 2, 1, 0.01, [0.01, 0.01])
    >>> round(value, 6), [round(a, 6) for a in scales]
    (0.044545, [0.959793, 0.959793])
    """
    L = layers
    K = geom.classes if classes is None else classes
    lams = list(lam_w)
    lamL = lams[-1]
    P, q = geom.coefficients(L)
    e, counts = _grouped(geom.e)
    zero_value = geom.e.size / (2.0 * K)
    GB = half_terms_coefficient(geom, L, n, lam_h, lams)
    g = GB ** (1.0 / L)

    def phi(x: np.ndarray) -> np.ndarray:
        ex = np.exp(x)
        return L * g * np.exp(x / L) + np.sum(
            counts * lamL / (2.0 * (np.multiply.outer(ex, e) + K * lamL)), axis=-1
        )

    def dphi(x: float) -> float:
        ex = math.exp(x)
        return g * math.exp(x / L) - float(np.sum(counts * lamL * e * ex / (2.0 * (e * ex + K * lamL) ** 2)))

    emax = float(e.max())
    x_lo = math.log(K * lamL / emax) - 30.0
    x_hi = L * math.log(max(zero_value / (L * g), 1e-300))  # beyond: first term alone exceeds the zero value
    if x_hi <= x_lo:
        return zero_value, [0.0] * max(L - 1, 1)
    xs = np.linspace(x_lo, x_hi, 2001)
    vals = phi(xs)
    i = int(np.argmin(vals))
    if not vals[i] < zero_value:
        return zero_value, [0.0] * max(L - 1, 1)
    lo, hi = xs[max(i - 1, 0)], xs[min(i + 1, xs.size - 1)]
    if dphi(lo) < 0 < dphi(hi):
        x_star = optimize.brentq(dphi, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
    else:
        x_star = optimize.minimize_scalar(
            lambda x: float(phi(np.array(x))), bounds=(lo, hi), method="bounded", options={"xatol": 1e-13}
        ).x
    value = float(phi(np.array(x_star)))
    if not value < zero_value:
        return zero_value, [0.0] * max(L - 1, 1)
    return value, scales_from_last(geom, L, n, lam_h, lams, math.exp(x_star))


@fill_doc
def half_terms_coefficient(
    geom: Geometry, layers: int, n: int, lam_h: float, lam_w: Sequence[float]
) -> float:
    """``G B`` of the AM–GM reduction: for fixed ``α_L`` the minimum over ``α_2 .. α_{L-1}`` of the ``L`` half
    terms (``H_1``, ``W_1 .. W_{L-1}``) of :func:`chain_loss` is ``L (G B α_L)^{1/L}`` (``L >= 2``; for ``L =
    1`` the single term is ``G B α_1`` with ``G B = nλ_{H_1} ‖X_1‖_F² / 2``).  ``G = (P/2)² Π_l (q_l/2)``,
    ``B = nλ_{H_1} Π_{l<L} λ_{W_l}``.  Independent of the fit loss (the cross-entropy candidates reuse it).

    Parameters
    ----------
    %(theory_chain)s

    Returns
    -------
    float
        ``G B``.

    Examples
    --------
    >>> from deepcollapse.theory.constructions import dnc_geometry
    >>> round(half_terms_coefficient(dnc_geometry(3), 2, 1, 0.01, [0.01, 0.01]), 12)
    0.000225
    """
    L = layers
    lams = list(lam_w)
    P, q = geom.coefficients(L)
    if L == 1:
        return 0.5 * P * n * lam_h
    return (P / 2.0) ** 2 * float(np.prod([qi / 2.0 for qi in q])) * n * lam_h * float(np.prod(lams[:-1]))


@fill_doc
def scales_from_last(
    geom: Geometry, layers: int, n: int, lam_h: float, lam_w: Sequence[float], aL: float
) -> list[float]:
    """``[α_2 .. α_L]`` minimising the half terms of :func:`chain_loss` at fixed ``α_L = aL`` (all ``L`` half
    terms equal ``τ = (G B α_L)^{1/L}``): ``α_2 = (2τ / (c P))²``, ``α_{l+1} = α_l 2τ / (λ_{W_l} q_l)``; for
    ``L = 1`` just ``[α_1]``.

    Parameters
    ----------
    %(theory_chain)s
    aL : float
        ``α_L > 0``.

    Returns
    -------
    list of float
        ``[α_2 .. α_L]`` (``[α_1]`` for ``L = 1``), ending with ``aL``.

    Examples
    --------
    >>> from deepcollapse.theory.constructions import dnc_geometry
    >>> value, scales = optimise_scales(dnc_geometry(3), 2, 1, 0.01, [0.01, 0.01])
    >>> scales_from_last(dnc_geometry(3), 2, 1, 0.01, [0.01, 0.01], scales[-1]) == scales
    True
    """
    L = layers
    lams = list(lam_w)
    if L == 1:
        return [aL]
    if aL == 0:
        return [0.0] * (L - 1)
    P, q = geom.coefficients(L)
    tau = (half_terms_coefficient(geom, L, n, lam_h, lams) * aL) ** (1.0 / L)
    c = math.sqrt(lams[0] * n * lam_h)
    scales = [(2.0 * tau / (c * P)) ** 2]
    for i in range(L - 3):
        scales.append(scales[-1] * 2.0 * tau / (lams[i + 1] * q[i]))
    scales.append(aL)
    return scales
