"""NC2: the geometry of the class means (condition number, orthogonal frame, simplex ETF, equinorm,
equiangularity, Gram matrix).

Every function takes ``(features (N, D), labels (N,))`` or a class-mean matrix ``means (K, D)`` alone
(``labels=None``); conventions in :mod:`deepcollapse.metrics.functional`.
"""

from __future__ import annotations

import math

import numpy as np

from deepcollapse._core.checks import check_choice
from deepcollapse._core.docs import fill_doc
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
    """``‖G/‖G‖_F − T‖_F`` for a target ``T`` of unit Frobenius norm; ``nan`` if ``G = 0``.

    Parameters
    ----------
    G : numpy.ndarray
        A Gram matrix.
    T : numpy.ndarray
        The target, of unit Frobenius norm and ``G``'s shape.

    Returns
    -------
    float
        The distance, in ``[0, 2]`` (``nan`` if ``G = 0``).

    Examples
    --------
    >>> normalised_distance(np.eye(2), np.eye(2) / np.sqrt(2))
    0.0
    """
    nG = np.linalg.norm(G)
    if nG == 0.0:
        return math.nan
    return float(np.linalg.norm(G / nG - T))


def frame_error(A: np.ndarray, centred: bool) -> float:
    """``‖G/‖G‖_F − T/‖T‖_F‖_F`` with ``G = A A^T`` and ``T = I_K`` or ``I_K − 11^T/K`` (``centred``).

    Parameters
    ----------
    A : numpy.ndarray, (K, D)
        Class-mean rows (centred or not).
    centred : bool
        Target the simplex ETF ``I_K − 11^T/K`` instead of the orthogonal frame ``I_K``.

    Returns
    -------
    float
        The distance (``nan`` if ``A = 0``).

    Examples
    --------
    >>> frame_error(np.eye(2), centred=False)
    0.0
    """
    K = A.shape[0]
    T = np.eye(K) - (np.full((K, K), 1.0 / K) if centred else 0.0)
    return normalised_distance(A @ A.T, T / np.linalg.norm(T))


@fill_doc
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
    %(metrics_features_or_means)s
    %(metrics_rtol)s
    %(metrics_drop_empty)s

    Returns
    -------
    float
        ``σ_1 / σ_K`` of ``M (D, K)``; ``inf`` below rank ``K``.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> nc2_cond(H, y)
    1.0
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


@fill_doc
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
    %(metrics_features_or_means)s
    %(metrics_drop_empty)s

    Returns
    -------
    float
        In ``[0, 2]``; 0 iff the means are orthogonal with equal norms (``nan`` if all means are zero).

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> nc2_orth_error(H, y)
    0.0
    """
    return frame_error(mean_rows(features, labels, num_classes, drop_empty, centered=False), centred=False)


@fill_doc
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
    %(metrics_features_or_means)s
    %(metrics_weighted)s
    %(metrics_drop_empty)s

    Returns
    -------
    float
        0 iff the centred means form a simplex ETF (``nan`` if all means coincide).

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> nc2_etf_error(H, y)
    0.0
    """
    Mc = mean_rows(features, labels, num_classes, drop_empty, centered=True, weighted=weighted)
    return frame_error(Mc, centred=True)


def equinorm_of(A: np.ndarray) -> float:
    """Equinorm of given rows: ``std_c ‖a_c‖ / mean_c ‖a_c‖`` (:func:`equinorm`'s formula).

    Parameters
    ----------
    A : numpy.ndarray, (K, D)
        The rows ``a_c``.

    Returns
    -------
    float
        0 for equal norms (``nan`` if all rows are zero).

    Examples
    --------
    >>> equinorm_of(np.array([[1.0, 0.0], [0.0, 3.0]]))
    0.5
    """
    norms = np.linalg.norm(A, axis=1)
    mean = norms.mean()
    return math.nan if mean == 0.0 else float(norms.std() / mean)


def equiangularity_of(A: np.ndarray, tol: float = 0.0) -> float:
    """Equiangularity of given rows: population std of the pairwise cosines (as in :func:`equiangularity`).

    Parameters
    ----------
    A : numpy.ndarray, (K, D)
        The rows ``a_c``.
    tol : float, default 0.0
        Rows of norm ``<= tol`` count as zero.

    Returns
    -------
    float
        0 for equal angles (``nan`` if some row is zero).

    Examples
    --------
    >>> equiangularity_of(np.eye(3))
    0.0
    """
    norms = np.linalg.norm(A, axis=1)
    if np.any(norms <= tol):
        return math.nan
    U = A / norms[:, None]
    C = U @ U.T
    iu = np.triu_indices(A.shape[0], k=1)
    return float(C[iu].std())


@fill_doc
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
    %(metrics_features_or_means)s
    %(metrics_centered)s
    %(metrics_weighted)s
    %(metrics_drop_empty)s

    Returns
    -------
    float
        ``std_c ‖a_c‖ / mean_c ‖a_c‖``; 0 for equal norms.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> equinorm(H, y)
    0.0
    """
    A = mean_rows(features, labels, num_classes, drop_empty, centered=centered, weighted=weighted)
    return equinorm_of(A)


@fill_doc
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
    %(metrics_features_or_means)s
    %(metrics_centered)s
    %(metrics_weighted)s
    %(metrics_drop_empty)s

    Returns
    -------
    float
        The population std of the pairwise cosines (``nan`` if some ``a_c`` is zero).

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> equiangularity(H, y)
    0.0
    """
    A = mean_rows(features, labels, num_classes, drop_empty, centered=centered, weighted=weighted)
    return equiangularity_of(A)


@fill_doc
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
    %(metrics_features_or_means)s
    normalize : {"max", "none", "fro", "cosine"}, default "max"
        How ``G`` is scaled (see above).
    centered : bool, default False
        Use ``μ_c − μ_G`` instead of ``μ_c``.
    %(metrics_weighted)s
    %(metrics_drop_empty)s

    Returns
    -------
    ndarray, (K, K)
        The Gram matrix of the class means, float64.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> class_mean_gram(H, y)
    array([[1., 0.],
           [0., 1.]])
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
