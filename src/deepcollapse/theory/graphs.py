"""Triangular graphs T_r (Definition 3 of the 2024 paper).

``T_r`` is the line graph of the complete graph ``K_r``: its ``K = C(r, 2)`` vertices are the edges ``{a, b}``
of ``K_r`` (ordered lexicographically, as ``itertools.combinations(range(r), 2)``), two of them adjacent iff
the edges share a vertex.  ``T_r`` is strongly regular with parameters ``(r(r-1)/2, 2(r-2), r-2, 4)`` and
spectrum ``2(r-2)`` (×1), ``r-4`` (×(r-1)), ``-2`` (×r(r-3)/2).  The normalised incidence matrix ``𝒯_r ∈
R^{r×K}`` has ``1/√(r-1)`` where vertex ``i`` belongs to edge ``j``; ``𝒯_r^T 𝒯_r = (2 I + G_r)/(r-1)``, so
``rank 𝒯_r = r``.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np

from deepcollapse._core.checks import check_int

__all__ = [
    "adjacency_matrix",
    "incidence_matrix",
    "largest_r_at_most",
    "r_from_classes",
    "smallest_r_at_least",
    "spectrum",
    "triangular_edges",
    "triangular_spectrum",
]


def triangular_edges(r: int) -> list[tuple[int, int]]:
    """The ``C(r, 2)`` edges of ``K_r`` = the vertices of ``T_r``, in lexicographic order.

    Parameters
    ----------
    r : int
        The vertices of the complete graph ``K_r`` (``r >= 2``; ``T_r`` has ``K = C(r, 2)`` vertices).

    Returns
    -------
    list of tuple of int
        The ``C(r, 2)`` pairs ``(a, b)``, ``a < b``.

    Examples
    --------
    >>> triangular_edges(4)
    [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    """
    r = check_int("r", r, min=2)
    return list(itertools.combinations(range(r), 2))


@lru_cache(maxsize=64)
def _incidence(r: int) -> np.ndarray:
    edges = triangular_edges(r)
    T = np.zeros((r, len(edges)))  # (r, K)
    for j, (a, b) in enumerate(edges):
        T[a, j] = T[b, j] = 1.0 / math.sqrt(r - 1)
    T.setflags(write=False)
    return T


def incidence_matrix(r: int) -> np.ndarray:
    """Normalised incidence matrix ``𝒯_r`` of ``K_r``, shape ``(r, C(r, 2))``, entries ``1/√(r-1)`` or 0.

    Parameters
    ----------
    r : int
        The vertices of the complete graph ``K_r`` (``r >= 2``; ``T_r`` has ``K = C(r, 2)`` vertices).

    Returns
    -------
    ndarray, (r, C(r, 2))
        ``𝒯_r``, float64 (a fresh copy).

    Examples
    --------
    >>> T = incidence_matrix(4)
    >>> T.shape, bool(np.allclose(T.sum(axis=0), 2 / np.sqrt(3)))
    ((4, 6), True)
    """
    r = check_int("r", r, min=2)
    return _incidence(r).copy()


def adjacency_matrix(r: int) -> np.ndarray:
    """Adjacency matrix ``G_r`` of ``T_r`` (``K x K``): 1 iff the two edges of ``K_r`` share exactly one
    vertex.

    Parameters
    ----------
    r : int
        The vertices of the complete graph ``K_r`` (``r >= 2``; ``T_r`` has ``K = C(r, 2)`` vertices).

    Returns
    -------
    ndarray, (K, K)
        The 0/1 adjacency matrix ``G_r``, float64, ``K = C(r, 2)``.

    Examples
    --------
    >>> G = adjacency_matrix(4)  # T_4: 6 vertices of degree 2(r - 2) = 4
    >>> G.shape, G.sum(axis=1).tolist()
    ((6, 6), [4.0, 4.0, 4.0, 4.0, 4.0, 4.0])
    """
    r = check_int("r", r, min=2)
    B = _incidence(r) * math.sqrt(r - 1)  # 0/1 incidence
    G = B.T @ B
    np.fill_diagonal(G, 0.0)
    return G


def triangular_spectrum(r: int) -> dict[float, int]:
    """Closed-form spectrum of ``G_r``: ``{2(r-2): 1, r-4: r-1, -2: r(r-3)/2}`` (multiplicities merged if
    equal).

    Parameters
    ----------
    r : int
        The ``r`` of ``T_r`` (``r >= 4``).

    Returns
    -------
    dict of float to int
        Eigenvalue -> multiplicity.  A plain dict: a multiset of eigenvalues, not a result.

    Examples
    --------
    >>> triangular_spectrum(5)
    {6.0: 1, 1.0: 4, -2.0: 5}
    """
    r = check_int("r", r, min=4)
    out: dict[float, int] = {}
    for value, mult in ((2.0 * (r - 2), 1), (float(r - 4), r - 1), (-2.0, r * (r - 3) // 2)):
        if mult:
            out[value] = out.get(value, 0) + mult
    return out


def spectrum(adjacency: np.ndarray) -> np.ndarray:
    """Eigenvalues (ascending) of a symmetric matrix, e.g. ``adjacency_matrix(r)``.

    Parameters
    ----------
    adjacency : ndarray, (K, K)
        A symmetric matrix.

    Returns
    -------
    ndarray, (K,)
        Its eigenvalues, ascending, float64.

    Examples
    --------
    >>> spectrum(adjacency_matrix(4)).round(6) + 0.0  # r - 4 = 0 three times
    array([-2., -2.,  0.,  0.,  0.,  4.])
    """
    return np.linalg.eigvalsh(np.asarray(adjacency, dtype=np.float64))


def r_from_classes(classes: int) -> int | None:
    """``r`` with ``C(r, 2) == classes`` if it exists, else ``None``.

    Parameters
    ----------
    classes : int
        The number of classes ``K``.

    Returns
    -------
    int or None
        ``r`` with ``C(r, 2) == K``, or None when ``K`` is not a triangular number.

    Examples
    --------
    >>> r_from_classes(10), r_from_classes(11)
    (5, None)
    """
    r = smallest_r_at_least(classes)
    return r if r * (r - 1) // 2 == classes else None


def largest_r_at_most(classes: int) -> int:
    """Largest ``r >= 2`` with ``C(r, 2) <= classes`` (Definition 11.1).

    Parameters
    ----------
    classes : int
        The number of classes ``K``.

    Returns
    -------
    int
        The largest ``r >= 2`` with ``C(r, 2) <= K``.

    Examples
    --------
    >>> largest_r_at_most(10), largest_r_at_most(12)
    (5, 5)
    """
    r = 2
    while (r + 1) * r // 2 <= classes:
        r += 1
    return r


def smallest_r_at_least(classes: int) -> int:
    """Smallest ``r >= 2`` with ``C(r, 2) >= classes`` (Definition 11.2).

    Parameters
    ----------
    classes : int
        The number of classes ``K``.

    Returns
    -------
    int
        The smallest ``r >= 2`` with ``C(r, 2) >= K``.

    Examples
    --------
    >>> smallest_r_at_least(10), smallest_r_at_least(12)
    (5, 6)
    """
    r = 2
    while r * (r - 1) // 2 < classes:
        r += 1
    return r
