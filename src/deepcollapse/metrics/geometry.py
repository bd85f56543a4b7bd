"""NC2: the geometry of the class means (condition number, orthogonal frame, simplex ETF, equinorm,
equiangularity, Gram matrix).

Every function takes ``(features (N, D), labels (N,))`` or a class-mean matrix ``means (K, D)`` alone
(``labels=None``); conventions in :mod:`deepcollapse.metrics.functional`.
"""

from __future__ import annotations

import math

import numpy as np

from deepcollapse._core.checks import check_choice
from deepcollapse.metrics._inputs import ArrayLike, rank_tol
from deepcollapse.metrics.means import global_mean_of, mean_rows, means_of
from deepcollapse.metrics.spectra import singular_values_of

__all__ = [
    "class_mean_gram",
    "equiangularity",
    "equinorm",
    "nc2_cond",
    "nc2_etf_error",
    "nc2_orth_error",
]


def normalised_distance(G: np.ndarray, T: np.ndarray) -> float:
    """``‖G/‖G‖_F − T‖_F`` for a target ``T`` of unit Frobenius norm; ``nan`` if ``G = 0``."""
    nG = np.linalg.norm(G)
    if nG == 0.0:
        return math.nan
    return float(np.linalg.norm(G / nG - T))


def frame_error(A: np.ndarray, centred: bool) -> float:
    """``‖G/‖G‖_F − T/‖T‖_F‖_F`` with ``G = A A^T`` and ``T = I_K`` or ``I_K − 11^T/K`` (``centred``)."""
    K = A.shape[0]
    T = np.eye(K) - (np.full((K, K), 1.0 / K) if centred else 0.0)
    return normalised_distance(A @ A.T, T / np.linalg.norm(T))


def nc2_cond(
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    rtol: float | None = None,
    drop_empty: bool = False,
) -> float:
    """Bias-free DNC2 metric (2024 paper §6): condition number ``σ_1 / σ_K`` of the uncentred ``M (D, K)``.

    1 exactly for an orthogonal frame with equal norms (``M^T M ∝ I_K``).  ``inf`` if ``M`` has numerical rank
    below ``K`` (tolerance :func:`deepcollapse._core.rank_tolerance` for the features' dtype, or ``rtol``),
    in particular whenever ``D < K``.  ``labels=None``: ``features`` is the means matrix ``(K, D)`` itself.

    Parameters
    ----------
    features : array_like, (N, D) or (K, D)
        One sample per row (numpy array or torch tensor; computed in float64), or the class means as rows when
        ``labels`` is None.
    labels : array_like of int, (N,), optional
        Class labels in ``0..K-1``; None: ``features`` are the class means.
    num_classes : int, optional
        ``K``; default ``max(labels) + 1``.
    rtol : float, optional
        Rank tolerance ``rtol · σ_1`` instead of the dtype default (:func:`~deepcollapse._core.rank_tolerance`
        of the features' dtype).
    drop_empty : bool, default False
        Drop classes without samples (the rest renumbered ``0..K'-1``) instead of raising ``ConfigError``.

    Returns
    -------
    float
        ``σ_1 / σ_K`` of ``M (D, K)``; ``inf`` below rank ``K``.
    """
    mu, counts, dtype = means_of(features, labels, num_classes, drop_empty)
    s = singular_values_of(mu)
    K = mu.shape[0]
    tol = rank_tol(float(s[0]), mu.shape[::-1], dtype, rtol)
    if rtol is None and s.size >= K:  # the dtype tolerance on the centred means' scale (see _core)
        sB = singular_values_of(mu - global_mean_of(counts, mu, True))
        if sB[0] > tol:
            tol = min(tol, rank_tol(float(sB[0]), mu.shape[::-1], dtype, None))
    if s.size < K or s[-1] <= tol:
        return math.inf
    return float(s[0] / s[-1])


def nc2_orth_error(
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    drop_empty: bool = False,
) -> float:
    """Distance of the normalised uncentred Gram matrix to the orthogonal frame: ``‖G/‖G‖_F − I_K/√K‖_F``.

    ``G = M^T M`` (uncentred class means; the bias-free DNC2 target ``M^T M ∝ I_K``).  In ``[0, 2]``; 0 iff
    the means are orthogonal with equal norms.  ``nan`` if all means are zero.

    Parameters
    ----------
    features : array_like, (N, D) or (K, D)
        One sample per row (numpy array or torch tensor; computed in float64), or the class means as rows when
        ``labels`` is None.
    labels : array_like of int, (N,), optional
        Class labels in ``0..K-1``; None: ``features`` are the class means.
    num_classes : int, optional
        ``K``; default ``max(labels) + 1``.
    drop_empty : bool, default False
        Drop classes without samples (the rest renumbered ``0..K'-1``) instead of raising ``ConfigError``.

    Returns
    -------
    float
        In ``[0, 2]``; 0 iff the means are orthogonal with equal norms (``nan`` if all means are zero).
    """
    return frame_error(mean_rows(features, labels, num_classes, drop_empty, centered=False), centred=False)


def nc2_etf_error(
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    weighted: bool = True,
    drop_empty: bool = False,
) -> float:
    """Distance to the simplex ETF (Papyan et al. 2020, NC2 with biases): ``‖G_c/‖G_c‖_F − (I −
    11^T/K)/√(K−1)‖_F``.

    ``G_c = M_c^T M_c`` with the centred means ``μ_c − μ_G``.  0 iff the centred means form a simplex ETF.
    ``nan`` if all means coincide.

    Parameters
    ----------
    features : array_like, (N, D) or (K, D)
        One sample per row (numpy array or torch tensor; computed in float64), or the class means as rows when
        ``labels`` is None.
    labels : array_like of int, (N,), optional
        Class labels in ``0..K-1``; None: ``features`` are the class means.
    num_classes : int, optional
        ``K``; default ``max(labels) + 1``.
    weighted : bool, default True
        Global mean sample-weighted, ``(1/N) Σ_i h_i``; False: unweighted, ``(1/K) Σ_c μ_c``.
    drop_empty : bool, default False
        Drop classes without samples (the rest renumbered ``0..K'-1``) instead of raising ``ConfigError``.

    Returns
    -------
    float
        0 iff the centred means form a simplex ETF (``nan`` if all means coincide).
    """
    Mc = mean_rows(features, labels, num_classes, drop_empty, centered=True, weighted=weighted)
    return frame_error(Mc, centred=True)


def equinorm_of(A: np.ndarray) -> float:
    norms = np.linalg.norm(A, axis=1)
    mean = norms.mean()
    return math.nan if mean == 0.0 else float(norms.std() / mean)


def equiangularity_of(A: np.ndarray, tol: float = 0.0) -> float:
    norms = np.linalg.norm(A, axis=1)
    if np.any(norms <= tol):
        return math.nan
    U = A / norms[:, None]
    C = U @ U.T
    iu = np.triu_indices(A.shape[0], k=1)
    return float(C[iu].std())


def equinorm(
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    centered: bool = True,
    weighted: bool = True,
    drop_empty: bool = False,
) -> float:
    """Equinorm (Papyan et al. 2020): ``std_c ‖a_c‖ / mean_c ‖a_c‖`` (population std).

    ``a_c = μ_c − μ_G`` (``centered=True``, the ETF convention) or ``a_c = μ_c`` (bias-free orthogonal frame).

    Parameters
    ----------
    features : array_like, (N, D) or (K, D)
        One sample per row (numpy array or torch tensor; computed in float64), or the class means as rows when
        ``labels`` is None.
    labels : array_like of int, (N,), optional
        Class labels in ``0..K-1``; None: ``features`` are the class means.
    num_classes : int, optional
        ``K``; default ``max(labels) + 1``.
    centered : bool, default True
        Use the centred means ``μ_c − μ_G`` (the ETF convention); False: the uncentred ``μ_c`` (bias-free).
    weighted : bool, default True
        Global mean sample-weighted, ``(1/N) Σ_i h_i``; False: unweighted, ``(1/K) Σ_c μ_c``.
    drop_empty : bool, default False
        Drop classes without samples (the rest renumbered ``0..K'-1``) instead of raising ``ConfigError``.

    Returns
    -------
    float
        ``std_c ‖a_c‖ / mean_c ‖a_c‖``; 0 for equal norms.
    """
    A = mean_rows(features, labels, num_classes, drop_empty, centered=centered, weighted=weighted)
    return equinorm_of(A)


def equiangularity(
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    centered: bool = True,
    weighted: bool = True,
    drop_empty: bool = False,
) -> float:
    """Equiangularity (Papyan et al. 2020): population std over pairs ``c < c'`` of ``cos∠(a_c, a_c')``.

    ``a_c`` as in :func:`equinorm`.  0 for a simplex ETF (centred) or an orthogonal frame (uncentred);
    ``nan`` if some ``a_c`` is zero.

    Parameters
    ----------
    features : array_like, (N, D) or (K, D)
        One sample per row (numpy array or torch tensor; computed in float64), or the class means as rows when
        ``labels`` is None.
    labels : array_like of int, (N,), optional
        Class labels in ``0..K-1``; None: ``features`` are the class means.
    num_classes : int, optional
        ``K``; default ``max(labels) + 1``.
    centered : bool, default True
        Use the centred means ``μ_c − μ_G`` (the ETF convention); False: the uncentred ``μ_c`` (bias-free).
    weighted : bool, default True
        Global mean sample-weighted, ``(1/N) Σ_i h_i``; False: unweighted, ``(1/K) Σ_c μ_c``.
    drop_empty : bool, default False
        Drop classes without samples (the rest renumbered ``0..K'-1``) instead of raising ``ConfigError``.

    Returns
    -------
    float
        The population std of the pairwise cosines (``nan`` if some ``a_c`` is zero).
    """
    A = mean_rows(features, labels, num_classes, drop_empty, centered=centered, weighted=weighted)
    return equiangularity_of(A)


def class_mean_gram(
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    normalize: str = "max",
    centered: bool = False,
    weighted: bool = True,
    drop_empty: bool = False,
) -> np.ndarray:
    """Gram matrix ``G = M^T M`` of the class means, ``(K, K)`` (``G_cc' = ⟨μ_c, μ_c'⟩``).

    ``normalize``: ``"none"``; ``"max"`` divides by ``max |G|`` (default; the way the papers plot Gram
    matrices); ``"fro"`` by ``‖G‖_F``; ``"cosine"`` gives ``cos∠(μ_c, μ_c')``.
    ``centered=True`` uses ``μ_c − μ_G``.

    Parameters
    ----------
    features : array_like, (N, D) or (K, D)
        One sample per row (numpy array or torch tensor; computed in float64), or the class means as rows when
        ``labels`` is None.
    labels : array_like of int, (N,), optional
        Class labels in ``0..K-1``; None: ``features`` are the class means.
    num_classes : int, optional
        ``K``; default ``max(labels) + 1``.
    normalize : {"max", "none", "fro", "cosine"}, default "max"
        How ``G`` is scaled (see above).
    centered : bool, default False
        Use ``μ_c − μ_G`` instead of ``μ_c``.
    weighted : bool, default True
        Global mean sample-weighted, ``(1/N) Σ_i h_i``; False: unweighted, ``(1/K) Σ_c μ_c``.
    drop_empty : bool, default False
        Drop classes without samples (the rest renumbered ``0..K'-1``) instead of raising ``ConfigError``.

    Returns
    -------
    ndarray, (K, K)
        The Gram matrix of the class means, float64.
    """
    check_choice("normalize", normalize, ("none", "max", "fro", "cosine"))
    A = mean_rows(features, labels, num_classes, drop_empty, centered=centered, weighted=weighted)
    G = A @ A.T
    if normalize == "none":
        return G
    if normalize == "cosine":
        d = np.sqrt(np.diag(G))
        with np.errstate(divide="ignore", invalid="ignore"):
            return G / np.outer(d, d)
    scale = np.abs(G).max() if normalize == "max" else np.linalg.norm(G)
    return G / scale if scale > 0 else np.full_like(G, np.nan)
