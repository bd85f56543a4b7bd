"""Spectra of a matrix: singular values, numerical rank (dtype-aware tolerance), effective and stable rank.

Any 2-D matrix (numpy or torch), computed in float64; "is this singular value zero" uses
:func:`deepcollapse._core.checks.rank_tolerance` for the dtype the matrix came in.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError, check_finite_array
from deepcollapse._core.docs import fill_doc
from deepcollapse.metrics._inputs import ArrayLike, as_float64, dtype_of, rank_tol

__all__ = ["effective_rank", "numerical_rank", "singular_values", "stable_rank"]


def singular_values_of(A: np.ndarray) -> np.ndarray:
    """Singular values of a float64 matrix, descending (no checks: :func:`singular_values` checks).

    Parameters
    ----------
    A : numpy.ndarray, 2-D
        A finite float64 matrix.

    Returns
    -------
    numpy.ndarray
        ``min(shape)`` singular values, descending.

    Examples
    --------
    >>> singular_values_of(np.diag([3.0, 4.0]))
    array([4., 3.])
    """
    return np.linalg.svd(A, compute_uv=False)


@fill_doc
def singular_values(matrix: ArrayLike) -> np.ndarray:
    """Singular values of a 2-D matrix in descending order (float64).

    Parameters
    ----------
    %(metrics_matrix)s

    Returns
    -------
    ndarray
        ``min(shape)`` singular values, descending, float64.

    Examples
    --------
    >>> singular_values(np.diag([3.0, 4.0]))
    array([4., 3.])
    """
    A = as_float64(matrix, "matrix")
    if A.ndim != 2:
        raise ConfigError(f"matrix.shape == {tuple(A.shape)}, must be 2-D.")
    check_finite_array("matrix", A)
    return singular_values_of(A)


@fill_doc
def numerical_rank(matrix: ArrayLike, *, rtol: float | None = None, dtype: Any = None) -> int:
    """Number of singular values ``σ_i > tol`` with ``tol = rank_tolerance(σ_1, shape, dtype, rtol)``.

    Default ``tol = max(shape) · eps(dtype) · σ_1`` (numpy ``matrix_rank``), with ``dtype`` the dtype the
    matrix was computed in (default: the matrix's own dtype, so float32 input gets eps = 1.2e-7).  ``rtol``
    gives ``tol = rtol · σ_1`` (e.g. ``rtol=1e-3`` for "numerically low rank" after finite training).  0 for a
    zero matrix.

    Parameters
    ----------
    %(metrics_matrix)s
    rtol : float, optional
        Rank tolerance ``rtol · σ_1`` instead of the dtype default (:func:`~deepcollapse._core.rank_tolerance`
        of the matrix's dtype).
    dtype : dtype, optional
        The dtype the matrix was computed in (default: its own dtype).

    Returns
    -------
    int
        The number of singular values above the tolerance (0 for a zero matrix).

    Examples
    --------
    >>> numerical_rank(np.diag([1.0, 1e-20])), numerical_rank(np.diag([1.0, 1e-2]), rtol=0.1)
    (1, 1)
    """
    dtype = dtype_of(matrix) if dtype is None else dtype
    s = singular_values(matrix)
    if s.size == 0 or s[0] == 0.0:
        return 0
    A_shape = tuple(np.shape(matrix))
    return int(np.count_nonzero(s > rank_tol(float(s[0]), A_shape, dtype, rtol)))


def effective_rank_of(s: np.ndarray) -> float:
    """The effective rank of given singular values (:func:`effective_rank`'s formula).

    Parameters
    ----------
    s : numpy.ndarray
        Non-negative singular values.

    Returns
    -------
    float
        ``exp(H(p))`` with ``p = s / Σ s`` (``nan`` when all are zero).

    Examples
    --------
    >>> effective_rank_of(np.array([1.0, 1.0]))
    2.0
    """
    total = float(s.sum())
    if total == 0.0:
        return math.nan
    p = s[s > 0] / total
    return float(np.exp(-np.sum(p * np.log(p))))


def stable_rank_of(s: np.ndarray) -> float:
    """``Σ s_i² / s_1²``, computed as ``Σ (s_i/s_1)²`` so that tiny (or huge) singular values do not
    underflow (overflow) when squared.

    Parameters
    ----------
    s : numpy.ndarray
        Singular values, descending.

    Returns
    -------
    float
        The stable rank (``nan`` when ``s`` is empty or ``s_1 = 0``).

    Examples
    --------
    >>> stable_rank_of(np.array([2.0, 1.0]))
    1.25
    """
    return math.nan if s.size == 0 or s[0] == 0.0 else float(np.sum((s / s[0]) ** 2))


@fill_doc
def effective_rank(matrix: ArrayLike) -> float:
    """Effective rank (Roy & Vetterli 2007): ``exp(H(p))``, ``p_i = σ_i / Σ_j σ_j``, ``H = −Σ p_i log p_i``.

    Singular values are normalised by their **sum** (L1, not squares); ``0 log 0 = 0``.  Lies in ``[1,
    rank]``; equals ``r`` for ``r`` equal non-zero singular values.  ``nan`` for the zero matrix.

    Parameters
    ----------
    %(metrics_matrix)s

    Returns
    -------
    float
        In ``[1, rank]`` (``nan`` for the zero matrix).

    Examples
    --------
    >>> round(effective_rank(np.eye(3)), 12)
    3.0
    """
    return effective_rank_of(singular_values(matrix))


@fill_doc
def stable_rank(matrix: ArrayLike) -> float:
    """Stable rank ``‖A‖_F² / ‖A‖_2² = Σ σ_i² / σ_1²`` (``nan`` for the zero matrix).

    Parameters
    ----------
    %(metrics_matrix)s

    Returns
    -------
    float
        In ``[1, rank]`` (``nan`` for the zero matrix).

    Examples
    --------
    >>> stable_rank(np.diag([2.0, 1.0]))
    1.25
    """
    return stable_rank_of(singular_values(matrix))
