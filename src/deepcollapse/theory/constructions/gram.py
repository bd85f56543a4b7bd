"""Gram matrices of the SRG solution (cosine-normalised, scale-free), for classifying trained runs.

:func:`srg_gram` (``M_L``, after the last ReLU), :func:`srg_pre_gram` (``M~_L``, before it) and
:func:`srg_intermediate_gram` (the middle layers); :func:`cosine_gram` normalises a Gram matrix the same way,
and :func:`gram_match` measures how close a learned Gram matrix is to a reference up to a relabelling of the
classes (the DUFM's and the networks' outcome classifiers, :mod:`deepcollapse.dufm.classify` and
:mod:`deepcollapse.nets.outcome`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import block_diag

from deepcollapse._core.checks import check_choice, check_int
from deepcollapse._core.results import Result
from deepcollapse.theory.constructions.geometry import SRG_CONSTRUCTIONS, srg_geometry
from deepcollapse.theory.graphs import r_from_classes

__all__ = [
    "GRAM_METRICS",
    "GramMatch",
    "cosine_gram",
    "gram_match",
    "srg_gram",
    "srg_intermediate_gram",
    "srg_pre_gram",
]

#: How :func:`gram_match` measures the error of a matched Gram matrix.
GRAM_METRICS = ("max", "fro")


def cosine_gram(G: np.ndarray) -> np.ndarray:
    """``G_ij / √(G_ii G_jj)``: a Gram matrix normalised to unit diagonal (scale-free; a zero column's
    diagonal is clipped at 1e-300, so its row and column stay 0).

    Parameters
    ----------
    G : ndarray, (K, K)
        A Gram matrix ``M^T M`` (any positive scaling).

    Returns
    -------
    ndarray, (K, K)
        The cosine Gram matrix, float64.

    Examples
    --------
    >>> cosine_gram(np.array([[4.0, 2.0], [2.0, 1.0]]))
    array([[1., 1.],
           [1., 1.]])
    """
    G = np.asarray(G, dtype=np.float64)
    d = np.sqrt(np.clip(np.diag(G), 1e-300, None))
    return G / np.outer(d, d)


@dataclass(frozen=True, eq=False)
class GramMatch(Result):
    """How close a Gram matrix is to a reference up to a relabelling of the classes: the result of
    :func:`gram_match`.

    Read-only key access (``m["distance"]``) works as for the dict of earlier releases.

    Attributes
    ----------
    lower : float
        A permutation-invariant lower bound of the minimum error (``max``: sorted entries and sorted
        eigenvalues / K; ``fro``: Hoffman–Wielandt, ``‖λ↓(G) − λ↓(G_ref)‖_2 / ‖G_ref‖_F``).
    distance : float
        The error of the best permutation found (an upper bound of the minimum).
    perm : list of int
        ``perm[i]`` is the reference class matched to class ``i``.
    """

    lower: float | None = None
    distance: float | None = None
    perm: list[int] | None = None


def gram_match(
    G: np.ndarray, G_ref: np.ndarray, *, starts: int = 32, seed: int = 0, metric: str = "max"
) -> GramMatch:
    """How close ``G`` is to ``P G_ref P^T`` over permutations ``P`` of the classes (both ``(K, K)``,
    cosine-normalised).

    The permutation is searched by quadratic assignment (``scipy.optimize.quadratic_assignment``, maximising
    ``⟨G, P G_ref P^T⟩``, i.e. minimising the Frobenius error): FAQ from ``starts`` starts (the barycentre,
    then random), each refined by 2-opt swaps; the best permutation found is an upper bound of the minimum.

    Parameters
    ----------
    G, G_ref : ndarray, (K, K)
        The Gram matrix and the reference.
    starts : int, default 32
        FAQ starts (the search stops early at an exact match, error <= 1e-9).
    seed : int, default 0
        Seed of the random starts (the answer is deterministic).
    metric : {"max", "fro"}, default "max"
        ``"max"``: the error is the largest entry of ``|G − P G_ref P^T|`` (the DUFM classifier's); ``"fro"``:
        the relative Frobenius error ``‖G − P G_ref P^T‖_F / ‖G_ref‖_F`` (the networks').

    Returns
    -------
    GramMatch
        ``lower`` (a permutation-invariant lower bound of the minimum error), ``distance`` (the error of the
        best permutation found) and ``perm`` (``perm[i]``: the reference class matched to class ``i``).

    Examples
    --------
    The SRG Gram matrix (``K = 6``) with its classes relabelled is matched exactly:

    >>> G = srg_gram(6)
    >>> perm = [1, 0, 3, 2, 5, 4]
    >>> m = gram_match(G[np.ix_(perm, perm)], G, starts=4)
    >>> m.distance < 1e-9, m.lower < 1e-9
    (True, True)
    """
    from scipy.optimize import quadratic_assignment

    check_choice("metric", metric, GRAM_METRICS)
    G = np.asarray(G, dtype=np.float64)
    G_ref = np.asarray(G_ref, dtype=np.float64)
    K = G.shape[0]
    eig, eig_ref = np.linalg.eigvalsh(G), np.linalg.eigvalsh(G_ref)
    if metric == "max":
        lower = max(
            float(np.max(np.abs(np.sort(G, axis=None) - np.sort(G_ref, axis=None)))),
            float(np.max(np.abs(eig - eig_ref))) / K,
        )
    else:
        scale = float(np.linalg.norm(G_ref))
        lower = float(np.linalg.norm(eig - eig_ref)) / scale

    def error(perm: np.ndarray) -> float:
        diff = G - G_ref[np.ix_(perm, perm)]
        return float(np.max(np.abs(diff))) if metric == "max" else float(np.linalg.norm(diff)) / scale

    best_perm, best = np.arange(K), math.inf
    rng = np.random.default_rng(seed)
    for i in range(starts):
        opts: dict[str, Any] = {"maximize": True, "P0": "barycenter" if i == 0 else "randomized", "rng": rng}
        perm = np.asarray(quadratic_assignment(G, G_ref, method="faq", options=opts).col_ind)
        guess = np.column_stack([np.arange(K), perm])  # refine the FAQ answer by 2-opt swaps
        perm = np.asarray(
            quadratic_assignment(
                G, G_ref, method="2opt", options={"maximize": True, "partial_guess": guess, "rng": rng}
            ).col_ind
        )
        d = error(perm)
        if d < best:
            best, best_perm = d, perm
        if best <= 1e-9:
            break
    return GramMatch(lower=lower, distance=best, perm=[int(p) for p in best_perm])


def _default_construction(K: int, construction: str | None) -> str:
    if construction is None:
        return "def9" if r_from_classes(K) is not None else "def11.1"
    return check_choice("construction", construction, SRG_CONSTRUCTIONS)


def srg_gram(classes: int, construction: str | None = None) -> np.ndarray:
    """Normalised (cosine) Gram matrix ``G_ij / √(G_ii G_jj)`` of the SRG class means after the last ReLU,
    ``G = M_L^T M_L``; scale-free.  For ``K = C(r, 2)`` (Definition 9): 1 on the diagonal,
    ``C(r-3,2)/C(r-2,2)`` for classes (edges) sharing a vertex, ``C(r-4,2)/C(r-2,2)`` for disjoint ones.
    Other ``K >= 6``: ``construction`` ``'def11.1'`` (default; block diagonal with an identity block) or
    ``'def11.2'``.

    Parameters
    ----------
    classes : int
        ``K >= 6``.
    construction : {"def9", "def11.1", "def11.2"}, optional
        The SRG construction for ``K ≠ C(r, 2)`` (default ``def11.1``).

    Returns
    -------
    ndarray, (K, K)
        The cosine-normalised Gram matrix (unit diagonal), float64.

    Examples
    --------
    >>> sorted({float(x) for x in srg_gram(10).round(6).ravel()})  # r = 5: C(2, 2)/C(3, 2) and 0
    [0.0, 0.333333, 1.0]
    """
    K = check_int("classes", classes, min=2)
    srg, dnc = srg_geometry(K, _default_construction(K, construction))
    R = np.maximum(srg.X_last, 0.0)
    blocks = [cosine_gram(R.T @ R)] + ([np.eye(dnc.classes)] if dnc is not None else [])
    return block_diag(*blocks)


def srg_intermediate_gram(classes: int, construction: str | None = None) -> np.ndarray:
    """Normalised (cosine) Gram matrix of the SRG class means in the middle layers ``2 <= l <= L-1`` (defined
    for ``L >= 3``): ``M_l^T M_l ∝ 2I + G_r``, i.e. ``I + G_r/2`` for ``K = C(r, 2)``.

    Parameters
    ----------
    classes : int
        ``K >= 6``.
    construction : {"def9", "def11.1", "def11.2"}, optional
        The SRG construction for ``K ≠ C(r, 2)`` (default ``def11.1``).

    Returns
    -------
    ndarray, (K, K)
        The cosine-normalised Gram matrix (unit diagonal), float64.

    Examples
    --------
    >>> sorted({float(x) for x in srg_intermediate_gram(10).round(6).ravel()})
    [0.0, 0.5, 1.0]
    """
    K = check_int("classes", classes, min=2)
    srg, dnc = srg_geometry(K, _default_construction(K, construction))
    blocks = [cosine_gram(srg.X_mid.T @ srg.X_mid)] + ([np.eye(dnc.classes)] if dnc is not None else [])
    return block_diag(*blocks)


def srg_pre_gram(classes: int, construction: str | None = None) -> np.ndarray:
    """Normalised (cosine) Gram matrix of the SRG class means of the last layer *before* the ReLU, ``M~_L^T
    M~_L`` (the matrix of the 2024 paper's Fig. 1 middle right and Fig. 4 bottom right); scale-free.

    For ``K = C(r, 2)`` (Definition 9) ``M~_L ∝ A^{(2)} normalise_rows(A^{(1)} 𝒯_r)``: column ``e`` (an edge
    of ``K_r``) is ``−1`` in row ``e``, ``+1`` in the ``C(r-2, 2)`` rows of the edges disjoint from ``e``, 0
    elsewhere (up to the row scaling ``A^{(2)}``, whose squared multiples sum to the same ``α_L`` per row of
    ``A^{(1)} 𝒯_r``, so the Gram matrix is ``∝ Z^T Z``).  Its entries: 1 on the diagonal, ``(C(r-4, 2) − 2) /
    (C(r-2, 2) + 1)`` for disjoint edges and ``C(r-3, 2) / (C(r-2, 2) + 1)`` for edges sharing a vertex
    (``K = 10``: −1/2 and 1/4); its rank is ``r`` (3 for ``r = 4``).  Other ``K >= 6``: ``construction``
    ``'def11.1'`` (default; block diagonal with an identity block) or ``'def11.2'``.

    Parameters
    ----------
    classes : int
        ``K >= 6``.
    construction : {"def9", "def11.1", "def11.2"}, optional
        The SRG construction for ``K ≠ C(r, 2)`` (default ``def11.1``).

    Returns
    -------
    ndarray, (K, K)
        The cosine-normalised Gram matrix (unit diagonal), float64.

    Examples
    --------
    >>> G = srg_pre_gram(10)
    >>> sorted({float(x) for x in G.round(6).ravel()}), int(np.linalg.matrix_rank(G))
    ([-0.5, 0.25, 1.0], 5)
    """
    K = check_int("classes", classes, min=2)
    srg, dnc = srg_geometry(K, _default_construction(K, construction))
    blocks = [cosine_gram(srg.X_last.T @ srg.X_last)] + ([np.eye(dnc.classes)] if dnc is not None else [])
    return block_diag(*blocks)
