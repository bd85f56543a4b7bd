"""Small statistics for tables and figures: binomial (Wilson) intervals and geometric-grid detection.

numpy only (no matplotlib, no pandas), so tables, figures and reports share one definition.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from deepcollapse._core.checks import ConfigError

__all__ = ["geometric_grid_base", "wilson_interval"]


def wilson_interval(successes: ArrayLike, n: ArrayLike, z: float = 1.96) -> tuple[Any, Any]:
    """Wilson score interval of a binomial proportion (Wilson 1927; Brown, Cai & DasGupta 2001, eq. (4)).

    With ``p = k / n``::

        centre = (p + z² / (2n)) / (1 + z² / n)
        half   = z / (1 + z² / n) · sqrt(p (1 - p) / n + z² / (4 n²))

    The interval ``[centre - half, centre + half]`` lies in ``[0, 1]`` (clipped against rounding), is never
    empty at ``k = 0`` or ``k = n`` (unlike the Wald interval ``p ± z sqrt(p(1-p)/n)``), and is ``[0, 1]`` for
    ``n = 0`` (no information).

    Parameters
    ----------
    successes : int or array_like of int
        ``k``, the number of successes (0 ≤ k ≤ n).
    n : int or array_like of int
        Number of trials (runs), ≥ 0.
    z : float
        Standard normal quantile; 1.96 gives a 95% interval.

    Returns
    -------
    (lo, hi) : tuple of float, or of arrays (broadcast shape of ``successes`` and ``n``)
        Lower and upper bound.

    Examples
    --------
    >>> lo, hi = wilson_interval(0, 10)  # never empty at k = 0
    >>> lo, round(hi, 4)
    (0.0, 0.2775)
    >>> lo, hi = wilson_interval([5, 10], [10, 10])
    >>> lo.round(4).tolist(), hi.round(4).tolist()
    ([0.2366, 0.7225], [0.7634, 1.0])
    """
    k = np.asarray(successes, dtype=float)
    N = np.asarray(n, dtype=float)
    if np.any(N < 0) or np.any(k < 0) or np.any(k > N) or not (np.isfinite(z) and z > 0):
        raise ConfigError(
            f"wilson_interval(successes={successes!r}, n={n!r}, z={z!r}): "
            "needs 0 <= successes <= n and z > 0."
        )
    safe = np.where(N > 0, N, 1.0)
    p = k / safe
    denom = 1.0 + z * z / safe
    centre = (p + z * z / (2.0 * safe)) / denom
    half = z / denom * np.sqrt(p * (1.0 - p) / safe + z * z / (4.0 * safe * safe))
    lo = np.where(N > 0, np.clip(centre - half, 0.0, 1.0), 0.0)
    hi = np.where(N > 0, np.clip(centre + half, 0.0, 1.0), 1.0)
    if lo.ndim == 0:
        return float(lo), float(hi)
    return lo, hi


def geometric_grid_base(values: ArrayLike) -> int | None:
    """The log base to plot a swept parameter on, or ``None`` for a linear axis.

    A grid is geometric when its distinct values are all positive and either have a constant ratio (three
    values or more; two values need a ratio ≥ 4, where a linear axis would crowd the smaller one) or are all
    powers of two with exponents on a half-integer grid (e.g. λ ∈ {2^-10, 2^-9, 2^-8, 2^-7.5}) without being
    evenly spaced.  Base 2 when every value is such a power of two, else 10.

    Parameters
    ----------
    values : array_like of float
        The swept values (repeats and order do not matter).

    Returns
    -------
    int or None
        2, 10, or ``None`` (fewer than two distinct values, a value ≤ 0, or an arithmetic or irregular grid).

    Examples
    --------
    >>> geometric_grid_base([1e-3, 1e-2, 1e-1]), geometric_grid_base([2**-10, 2**-9, 2**-8])
    (10, 2)
    >>> geometric_grid_base([1, 2, 3]) is None
    True
    """
    v = np.unique(np.asarray(values, dtype=float))
    v = v[np.isfinite(v)]
    if v.size < 2 or np.any(v <= 0):
        return None
    exps = np.log2(v)
    powers_of_two = bool(np.allclose(2 * exps, np.round(2 * exps), rtol=0, atol=1e-9))
    base = 2 if powers_of_two else 10
    ratios = v[1:] / v[:-1]
    if v.size == 2:
        return base if ratios[0] >= 4.0 else None
    diffs = np.diff(v)
    if np.allclose(diffs, diffs[0], rtol=1e-6, atol=0):  # evenly spaced: a linear axis shows it as it is
        return None
    if np.allclose(ratios, ratios[0], rtol=1e-6, atol=0) or powers_of_two:
        return base
    return None
