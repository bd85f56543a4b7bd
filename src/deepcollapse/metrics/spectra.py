"""Spectra of a matrix: singular values, numerical rank (dtype-aware tolerance), effective and stable rank.

Any 2-D matrix (numpy or torch), computed in float64; "is this singular value zero" uses
:func:`deepcollapse._core.checks.rank_tolerance` for the dtype the matrix came in.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError, check_finite_array
from deepcollapse.metrics._inputs import ArrayLike, as_float64, dtype_of, rank_tol

__all__ = ["effective_rank", "numerical_rank", "singular_values", "stable_rank"]


def singular_values_of(A: np.ndarray) -> np.ndarray:
    return np.linalg.svd(A, compute_uv=False)


def singular_values(matrix: ArrayLike) -> np.ndarray:
    """Singular values of a 2-D matrix in descending order (float64).

    Parameters
    ----------
    matrix : array_like, 2-D
        Any finite matrix (numpy or torch).

    Returns
    -------
    ndarray
        ``min(shape)`` singular values, descending, float64.
    """
    A = as_float64(matrix, "matrix")
    if A.ndim != 2:
        raise ConfigError(f"matrix.shape == {tuple(A.shape)}, must be 2-D.")
    check_finite_array("matrix", A)
    return singular_values_of(A)


def numerical_rank(matrix: ArrayLike, *, rtol: float | None = None, dtype: Any = None) -> int:
    """Number of singular values ``σ_i > tol`` with ``tol = rank_tolerance(σ_1, shape, dtype, rtol)``.

    Default ``tol = max(shape) · eps(dtype) · σ_1`` (numpy ``matrix_rank``), with ``dtype`` the dtype the
    matrix was computed in (default: the matrix's own dtype, so float32 input gets eps = 1.2e-7).  ``rtol``
    gives ``tol = rtol · σ_1`` (e.g. ``rtol=1e-3`` for "numerically low rank" after finite training).  0 for a
    zero matrix.

    Parameters
    ----------
    matrix : array_like, 2-D
        Any finite matrix (numpy or torch).
    rtol : float, optional
        Rank tolerance ``rtol · σ_1`` instead of the dtype default (:func:`~deepcollapse._core.rank_tolerance`
        of the matrix's dtype).
    dtype : dtype, optional
        The dtype the matrix was computed in (default: its own dtype).

    Returns
    -------
    int
        The number of singular values above the tolerance (0 for a zero matrix).
    """
    dtype = dtype_of(matrix) if dtype is None else dtype
    s = singular_values(matrix)
    if s.size == 0 or s[0] == 0.0:
        return 0
    A_shape = tuple(np.shape(matrix))
    return int(np.count_nonzero(s > rank_tol(float(s[0]), A_shape, dtype, rtol)))


def effective_rank_of(s: np.ndarray) -> float:
    total = float(s.sum())
    if total == 0.0:
        return math.nan
    p = s[s > 0] / total
    return float(np.exp(-np.sum(p * np.log(p))))


def stable_rank_of(s: np.ndarray) -> float:
    """``Σ s_i² / s_1²``, computed as ``Σ (s_i/s_1)²`` so that tiny (or huge) singular values do not
    underflow (overflow) when squared."""
    return math.nan if s.size == 0 or s[0] == 0.0 else float(np.sum((s / s[0]) ** 2))


def effective_rank(matrix: ArrayLike) -> float:
    """Effective rank (Roy & Vetterli 2007): ``exp(H(p))``, ``p_i = σ_i / Σ_j σ_j``, ``H = −Σ p_i log p_i``.

    Singular values are normalised by their **sum** (L1, not squares); ``0 log 0 = 0``.  Lies in ``[1,
    rank]``; equals ``r`` for ``r`` equal non-zero singular values.  ``nan`` for the zero matrix.

    Parameters
    ----------
    matrix : array_like, 2-D
        Any finite matrix (numpy or torch).

    Returns
    -------
    float
        In ``[1, rank]`` (``nan`` for the zero matrix).
    """
    return effective_rank_of(singular_values(matrix))


def stable_rank(matrix: ArrayLike) -> float:
    """Stable rank ``‖A‖_F² / ‖A‖_2² = Σ σ_i² / σ_1²`` (``nan`` for the zero matrix).

    Parameters
    ----------
    matrix : array_like, 2-D
        Any finite matrix (numpy or torch).

    Returns
    -------
    float
        In ``[1, rank]`` (``nan`` for the zero matrix).
    """
    return stable_rank_of(singular_values(matrix))
