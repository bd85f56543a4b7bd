"""Gram matrices of the SRG solution (cosine-normalised, scale-free), for classifying trained runs."""

from __future__ import annotations

import numpy as np
from scipy.linalg import block_diag

from deepcollapse._core.checks import check_choice, check_int
from deepcollapse.theory.constructions.geometry import SRG_CONSTRUCTIONS, srg_geometry
from deepcollapse.theory.graphs import r_from_classes

__all__ = ["srg_gram", "srg_intermediate_gram"]


def _cosine(G: np.ndarray) -> np.ndarray:
    d = np.sqrt(np.clip(np.diag(G), 1e-300, None))
    return G / np.outer(d, d)


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
    """
    K = check_int("classes", classes, min=2)
    srg, dnc = srg_geometry(K, _default_construction(K, construction))
    R = np.maximum(srg.X_last, 0.0)
    blocks = [_cosine(R.T @ R)] + ([np.eye(dnc.classes)] if dnc is not None else [])
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
    """
    K = check_int("classes", classes, min=2)
    srg, dnc = srg_geometry(K, _default_construction(K, construction))
    blocks = [_cosine(srg.X_mid.T @ srg.X_mid)] + ([np.eye(dnc.classes)] if dnc is not None else [])
    return block_diag(*blocks)
