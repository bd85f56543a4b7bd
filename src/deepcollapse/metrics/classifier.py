"""NC3 (weights against class means: alignment, self-duality, the W–H relation) and NC4 (nearest class
centre: predictions, accuracy, agreement with the classifier).

Conventions in :mod:`deepcollapse.metrics.functional`; ``weights (P, D)`` is the matrix applied to the
features (``P == K`` for a classifier).
"""

from __future__ import annotations

import math

import numpy as np

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.docs import fill_doc
from deepcollapse.metrics._inputs import ArrayLike, as_bias, as_float64, as_weights, prepare
from deepcollapse.metrics.geometry import normalised_distance
from deepcollapse.metrics.means import counts_and_means, mean_rows

__all__ = [
    "nc3_alignment",
    "nc4_agreement",
    "ncc_accuracy",
    "ncc_predict",
    "self_duality",
    "wh_etf_error",
]


def _classifier_for(weights: ArrayLike, A: np.ndarray, metric: str) -> np.ndarray:
    """The classifier ``W (K, D)`` checked against the class-mean rows ``A (K, D)``.

    ``metric`` names the caller in the error message.
    """
    W = as_weights(weights, A.shape[1])
    if W.shape[0] != A.shape[0]:
        raise ConfigError(f"weights.shape == {tuple(W.shape)}, must be (K, D) == {A.shape} for {metric}.")
    return W


def _nc3_alignment(W: np.ndarray, mu: np.ndarray) -> float:
    wn = np.linalg.norm(W, axis=1)
    keep = wn > 0
    mn = np.linalg.norm(mu, axis=1)
    if not keep.any() or not np.any(mn > 0):
        return math.nan
    U = mu[mn > 0] / mn[mn > 0, None]
    cos = (W[keep] / wn[keep, None]) @ U.T  # (P', K')
    sin2 = 1.0 - np.max(cos**2, axis=1)
    w2 = wn[keep] ** 2
    return float(np.clip(np.sum(w2 * sin2) / np.sum(w2), 0.0, 1.0))


@fill_doc
def nc3_alignment(
    weights: ArrayLike,
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    drop_empty: bool = False,
) -> float:
    """DNC3 of the 2024 paper (Def. "DNC3"): rows of ``W (P, D)`` are 0 or collinear with a column of ``M``.

    Score ``Σ_j ‖w_j‖² sin²θ_j / Σ_j ‖w_j‖²`` with ``θ_j`` the smallest angle between row ``w_j`` and the
    lines spanned by the class means (``cos²θ_j = max_c ⟨w_j, μ_c⟩² / (‖w_j‖² ‖μ_c‖²)``; sign ignored, zero
    rows and zero means skipped).  In ``[0, 1]``; 0 iff DNC3 holds.  ``W`` is the weight matrix *applied to*
    these features (``W_l`` for features ``H_l``; the classifier ``W_L (K, D)`` for the last layer).

    Parameters
    ----------
    weights : array_like, (P, D)
        The weight matrix applied to these features (the classifier ``W_L (K, D)`` for the last layer).
    %(metrics_features_or_means)s
    %(metrics_drop_empty)s

    Returns
    -------
    float
        In ``[0, 1]``; 0 iff DNC3 holds.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> nc3_alignment(np.eye(2), H, y)
    0.0
    """
    mu = mean_rows(features, labels, num_classes, drop_empty, centered=False)
    return _nc3_alignment(as_weights(weights, mu.shape[1]), mu)


def _self_duality(W: np.ndarray, A: np.ndarray) -> float:
    nW, nA = np.linalg.norm(W), np.linalg.norm(A)
    if nW == 0.0 or nA == 0.0:
        return math.nan
    return float(np.linalg.norm(W / nW - A / nA) ** 2)


@fill_doc
def self_duality(
    weights: ArrayLike,
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    centered: bool = True,
    weighted: bool = True,
    drop_empty: bool = False,
) -> float:
    """NC3 self-duality (Papyan et al. 2020): ``‖W/‖W‖_F − A/‖A‖_F‖_F²`` for the classifier ``W (K, D)``.

    ``A`` holds the centred means ``μ_c − μ_G`` as rows (``centered=True``) or the uncentred ``μ_c``
    (bias-free). In ``[0, 4]``; 0 iff the classifier rows are the (centred) class means up to one global
    scale.

    Parameters
    ----------
    weights : array_like, (K, D)
        The classifier.
    %(metrics_features_or_means)s
    %(metrics_centered)s
    %(metrics_weighted)s
    %(metrics_drop_empty)s

    Returns
    -------
    float
        In ``[0, 4]``; 0 iff the classifier rows are the (centred) class means up to one global scale.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> round(self_duality(np.eye(2), H, y), 6)
    0.585786
    """
    A = mean_rows(features, labels, num_classes, drop_empty, centered=centered, weighted=weighted)
    return _self_duality(_classifier_for(weights, A, "self-duality"), A)


def _wh_etf_error(W: np.ndarray, A: np.ndarray) -> float:
    K = A.shape[0]
    T = (np.eye(K) - np.full((K, K), 1.0 / K)) / math.sqrt(K - 1)  # simplex ETF Gram, ‖T‖_F = 1
    return normalised_distance(W @ A.T, T)  # W A^T (K, K): classifier rows against centred class means


@fill_doc
def wh_etf_error(
    weights: ArrayLike,
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    weighted: bool = True,
    drop_empty: bool = False,
) -> float:
    """Zhu et al. (2021)'s W–H relation: ``‖W M̄ᵀ/‖W M̄ᵀ‖_F − (I_K − 11ᵀ/K)/√(K−1)‖_F``.

    ``W (K, D)`` the classifier, ``M̄ (K, D)`` the centred class means as rows.  0 iff ``W M̄ᵀ`` is a multiple
    of the simplex-ETF Gram matrix.  Not Papyan's self-duality (:func:`self_duality` compares ``W`` with
    ``M̄`` entrywise); some libraries call this one "self-duality" too (conventions table in docs/formulas.md).

    Parameters
    ----------
    weights : array_like, (K, D)
        The classifier.
    %(metrics_features_or_means)s
    %(metrics_weighted)s
    %(metrics_drop_empty)s

    Returns
    -------
    float
        0 iff ``W M̄ᵀ`` is a multiple of the simplex-ETF Gram matrix.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> wh_etf_error(np.array([[1.0, -1.0], [-1.0, 1.0]]), H, y)
    0.0
    """
    A = mean_rows(features, labels, num_classes, drop_empty, centered=True, weighted=weighted)
    return _wh_etf_error(_classifier_for(weights, A, "the W–H relation"), A)


def ncc_predict(features: ArrayLike, means: ArrayLike) -> np.ndarray:
    """Nearest-class-centre predictions ``argmin_c ‖h_i − μ_c‖`` (ties → smallest index), ``(N,)`` int.

    Parameters
    ----------
    features : array_like, (N, D)
        One sample per row (numpy array or torch tensor; computed in float64).
    means : array_like, (K, D)
        The class centres as rows.

    Returns
    -------
    ndarray of int, (N,)
        The index of the nearest centre of each sample.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> ncc_predict(H, np.array([[2.0, 0.0], [0.0, 2.0]]))
    array([0, 0, 1, 1])
    """
    H = as_float64(features, "features")
    mu = as_float64(means, "means")
    if H.ndim != 2 or mu.ndim != 2 or H.shape[1] != mu.shape[1]:
        raise ConfigError(
            f"means.shape == {tuple(mu.shape)}, must be (K, D) with D matching "
            f"features.shape == {tuple(H.shape)}."
        )
    return ncc_predict_of(H, mu)


def ncc_predict_of(H: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """The nearest-centre predictions ``argmin_c ‖h_i − μ_c‖`` (unchecked float64 arrays; ties: lowest index).

    Parameters
    ----------
    H : numpy.ndarray, (N, D)
        Features, one sample per row.
    mu : numpy.ndarray, (K, D)
        The centres as rows.

    Returns
    -------
    numpy.ndarray of int, (N,)
        The row of ``mu`` nearest to each sample.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> ncc_predict_of(H, np.array([[2.0, 0.0], [0.0, 2.0]]))
    array([0, 0, 1, 1])
    """
    # ‖h − μ_c‖² = ‖h‖² − 2⟨h, μ_c⟩ + ‖μ_c‖²; the first term does not depend on c
    d = np.einsum("kd,kd->k", mu, mu)[None, :] - 2.0 * (H @ mu.T)  # (N, K)
    return np.argmin(d, axis=1)


def classifier_predict(H: np.ndarray, W: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """The linear classifier's predictions ``argmax_c (W h_i + b)_c`` (unchecked float64 arrays).

    Parameters
    ----------
    H : numpy.ndarray, (N, D)
        Features, one sample per row.
    W : numpy.ndarray, (K, D)
        The classifier's weights.
    bias : numpy.ndarray or None, (K,)
        The classifier's bias (None: bias-free).

    Returns
    -------
    numpy.ndarray of int, (N,)
        The predicted class of each sample.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> classifier_predict(H, np.eye(2), None)
    array([0, 0, 1, 1])
    """
    z = H @ W.T  # (N, K)
    if bias is not None:
        z = z + bias
    return np.argmax(z, axis=1)


@fill_doc
def ncc_accuracy(
    features: ArrayLike, labels: ArrayLike, num_classes: int | None = None, *, drop_empty: bool = False
) -> float:
    """Accuracy of the nearest-class-centre classifier built from the same data's class means (NC4).

    Parameters
    ----------
    %(metrics_features)s
    %(metrics_drop_empty)s

    Returns
    -------
    float
        The fraction of samples whose nearest class mean is their own class's, in ``[0, 1]``.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> ncc_accuracy(H, y)
    1.0
    """
    d = prepare(features, labels, num_classes, drop_empty)
    _, mu = counts_and_means(d)
    return float(np.mean(ncc_predict_of(d.H, mu) == d.y))


@fill_doc
def nc4_agreement(
    features: ArrayLike,
    labels: ArrayLike,
    weights: ArrayLike,
    bias: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    drop_empty: bool = False,
) -> float:
    """NC4 (Papyan et al. 2020): fraction of samples where the classifier ``argmax_c (W h + b)_c`` equals the
    NCC prediction ``argmin_c ‖h − μ_c‖`` (means from ``(features, labels)``).
    ``weights (K, D)``, ``bias (K,)``.

    Parameters
    ----------
    features : array_like, (N, D)
        One sample per row (numpy array or torch tensor; computed in float64).
    labels : array_like of int, (N,)
        Class labels in ``0..K-1``.
    weights : array_like, (K, D)
        The classifier.
    bias : array_like, (K,), optional
        The classifier's bias (default none).
    num_classes : int, optional
        ``K``; default ``max(labels) + 1``.
    %(metrics_drop_empty)s

    Returns
    -------
    float
        The fraction of samples on which the classifier and the NCC agree, in ``[0, 1]``.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> nc4_agreement(H, y, np.eye(2))
    1.0
    """
    d = prepare(features, labels, num_classes, drop_empty)
    W = as_weights(weights, d.H.shape[1])
    if W.shape[0] != d.K:
        raise ConfigError(f"weights.shape == {tuple(W.shape)}, must be (K, D) with K == {d.K} for NC4.")
    _, mu = counts_and_means(d)
    return float(np.mean(ncc_predict_of(d.H, mu) == classifier_predict(d.H, W, as_bias(bias, d.K))))
