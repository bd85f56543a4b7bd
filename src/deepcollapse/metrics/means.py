"""Class means, covariances and the sufficient statistics (:class:`Moments`) every label-only metric uses.

Conventions in :mod:`deepcollapse.metrics.functional`: ``features (N, D)`` (rows = samples), means as rows
``(K, D)``, ``Σ_W`` with population normalisation ``1/N``, ``Σ_B = (1/K) Σ_c (μ_c − μ_G)(μ_c − μ_G)^T``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError, check_finite_array
from deepcollapse._core.docs import fill_doc
from deepcollapse.metrics._inputs import ArrayLike, Data, as_float64, dtype_of, prepare

__all__ = [
    "Moments",
    "between_class_cov",
    "class_means",
    "global_mean",
    "moments",
    "negative_fraction",
    "within_class_cov",
]


@dataclass(frozen=True)
class Moments:
    """Sufficient statistics of (features, labels) from which every label-only metric follows.

    Attributes:
        counts: ``(K,)`` samples per class ``n_c`` (all > 0).
        means: ``(K, D)`` class means ``μ_c`` (rows).
        within_ss: ``(K,)`` within-class sums of squares ``Σ_{i∈c} ‖h_ci − μ_c‖²``
            (so ``tr Σ_W = Σ_c within_ss_c / N``).
        scatter: ``(D, D)`` within-class scatter ``N Σ_W = Σ_c Σ_{i∈c} (h_ci − μ_c)(h_ci − μ_c)^T`` or
        ``None`` (then ``nc1_pinv`` is not available).
        negatives: number of feature entries ``< 0`` (or ``None``).
        entries: number of feature entries ``N·D`` (or ``None``).
        dtype: the dtype the features came in (decides the default rank tolerance).
    """

    counts: np.ndarray
    means: np.ndarray
    within_ss: np.ndarray
    scatter: np.ndarray | None = None
    negatives: int | None = None
    entries: int | None = None
    dtype: Any = np.float64


def class_sums(H: np.ndarray, y: np.ndarray, K: int) -> np.ndarray:
    """``(K, D)`` per-class sums, by a one-hot product (dense for small problems, sparse otherwise).

    Parameters
    ----------
    H : numpy.ndarray, (N, D)
        Features, one sample per row (float64).
    y : numpy.ndarray of int, (N,)
        Class labels in ``0..K-1``.
    K : int
        Number of classes.

    Returns
    -------
    numpy.ndarray, (K, D)
        ``Σ_{i: y_i = c} h_i`` as rows.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> class_sums(H, y, 2)
    array([[4., 0.],
           [0., 4.]])
    """
    N = H.shape[0]
    if N * K <= 4_000_000:
        onehot = np.zeros((K, N))
        onehot[y, np.arange(N)] = 1.0
        return onehot @ H
    from scipy import sparse

    onehot = sparse.csr_matrix((np.ones(N), (y, np.arange(N))), shape=(K, N))
    return np.asarray(onehot @ H)


def counts_and_means(d: Data) -> tuple[np.ndarray, np.ndarray]:
    """``(counts (K,) float64, means (K, D))``: samples per class ``n_c`` and class means ``μ_c`` as rows.

    Parameters
    ----------
    d : Data
        Checked features and labels (``deepcollapse.metrics._inputs.prepare``).

    Returns
    -------
    counts : numpy.ndarray, (K,)
        ``n_c``, float64.
    means : numpy.ndarray, (K, D)
        ``μ_c`` as rows.

    Examples
    --------
    >>> from deepcollapse.metrics._inputs import prepare
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> counts, means = counts_and_means(prepare(H, y, None, False)); counts
    array([2., 2.])
    """
    counts = np.bincount(d.y, minlength=d.K).astype(np.float64)
    return counts, class_sums(d.H, d.y, d.K) / counts[:, None]


def moments_of(d: Data, scatter: bool = True) -> Moments:
    """The :class:`Moments` of checked data (the work of :func:`moments`).

    Parameters
    ----------
    d : Data
        Checked features and labels (``deepcollapse.metrics._inputs.prepare``).
    scatter : bool, default True
        Also accumulate the ``D × D`` within-class scatter (needed by ``nc1_pinv``).

    Returns
    -------
    Moments
        Counts, class means, within-class sums of squares, scatter (or None), sign counts.

    Examples
    --------
    >>> from deepcollapse.metrics._inputs import prepare
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> moments_of(prepare(H, y, None, False)).within_ss
    array([2., 2.])
    """
    counts, means = counts_and_means(d)  # (K,), (K, D)
    R = d.H - means[d.y]  # (N, D) residuals h_i − μ_{y_i}
    within_ss = np.bincount(d.y, weights=np.einsum("nd,nd->n", R, R), minlength=d.K)
    S = R.T @ R if scatter else None  # (D, D)
    return Moments(
        counts=counts,
        means=means,
        within_ss=within_ss,
        scatter=S,
        negatives=int(np.count_nonzero(d.H < 0)),
        entries=int(d.H.size),
        dtype=d.dtype,
    )


@fill_doc
def moments(
    features: ArrayLike,
    labels: ArrayLike,
    num_classes: int | None = None,
    *,
    drop_empty: bool = False,
    scatter: bool = True,
) -> Moments:
    """The :class:`Moments` of ``(features (N, D), labels (N,))``, exactly (two-pass, centred residuals).

    Parameters
    ----------
    %(metrics_features)s
    %(metrics_drop_empty)s
    scatter : bool, default True
        Also accumulate the ``D × D`` within-class scatter (needed by ``nc1_pinv``).

    Returns
    -------
    Moments
        Counts, class means ``(K, D)``, within-class sums of squares, scatter (or None), sign counts.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> m = moments(H, y); m.counts, m.within_ss
    (array([2., 2.]), array([2., 2.]))
    """
    return moments_of(prepare(features, labels, num_classes, drop_empty), scatter=scatter)


def global_mean_of(counts: np.ndarray | None, means: np.ndarray, weighted: bool) -> np.ndarray:
    """The global mean ``μ_G (D,)`` of class means: weighted by ``counts`` or, without counts or with
    ``weighted=False``, their plain average.

    Parameters
    ----------
    counts : numpy.ndarray or None, (K,)
        Samples per class.
    means : numpy.ndarray, (K, D)
        Class means as rows.
    weighted : bool
        Weight the means by ``counts``.

    Returns
    -------
    numpy.ndarray, (D,)
        ``μ_G``.

    Examples
    --------
    >>> global_mean_of(np.array([3.0, 1.0]), np.array([[4.0, 0.0], [0.0, 4.0]]), True)
    array([3., 1.])
    """
    if weighted and counts is not None:
        return (counts / counts.sum()) @ means
    return means.mean(axis=0)


@fill_doc
def class_means(
    features: ArrayLike, labels: ArrayLike, num_classes: int | None = None, *, drop_empty: bool = False
) -> np.ndarray:
    """Class means ``μ_c = (1/n_c) Σ_{i: y_i = c} h_i`` as rows, ``(K, D)`` float64 (``M =
    class_means(...).T``).

    Parameters
    ----------
    %(metrics_features)s
    %(metrics_drop_empty)s

    Returns
    -------
    ndarray, (K, D)
        The class means as rows, float64.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> class_means(H, y)
    array([[2., 0.],
           [0., 2.]])
    """
    return counts_and_means(prepare(features, labels, num_classes, drop_empty))[1]


@fill_doc
def global_mean(
    features: ArrayLike,
    labels: ArrayLike,
    num_classes: int | None = None,
    *,
    weighted: bool = True,
    drop_empty: bool = False,
) -> np.ndarray:
    """Global mean ``μ_G (D,)``: ``(1/N) Σ_i h_i`` (``weighted=True``) or ``(1/K) Σ_c μ_c``
    (``weighted=False``).

    The two agree for balanced classes; the sample-weighted one makes ``Σ_c n_c (μ_c − μ_G) = 0``.

    Parameters
    ----------
    %(metrics_features)s
    %(metrics_weighted)s
    %(metrics_drop_empty)s

    Returns
    -------
    ndarray, (D,)
        ``μ_G``, float64.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> global_mean(H, y)
    array([1., 1.])
    """
    m = moments(features, labels, num_classes, drop_empty=drop_empty, scatter=False)
    return global_mean_of(m.counts, m.means, weighted)


@fill_doc
def within_class_cov(
    features: ArrayLike, labels: ArrayLike, num_classes: int | None = None, *, drop_empty: bool = False
) -> np.ndarray:
    """``Σ_W = (1/N) Σ_c Σ_{i∈c} (h_ci − μ_c)(h_ci − μ_c)^T``, ``(D, D)`` (population normalisation 1/N).

    Parameters
    ----------
    %(metrics_features)s
    %(metrics_drop_empty)s

    Returns
    -------
    ndarray, (D, D)
        ``Σ_W``, float64.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> within_class_cov(H, y)
    array([[0.5, 0. ],
           [0. , 0.5]])
    """
    m = moments(features, labels, num_classes, drop_empty=drop_empty)
    assert m.scatter is not None  # internal invariant: scatter=True above
    return m.scatter / m.counts.sum()


@fill_doc
def between_class_cov(
    features: ArrayLike,
    labels: ArrayLike,
    num_classes: int | None = None,
    *,
    weighted: bool = True,
    drop_empty: bool = False,
) -> np.ndarray:
    """``Σ_B = (1/K) Σ_c (μ_c − μ_G)(μ_c − μ_G)^T``, ``(D, D)``; ``μ_G`` as in :func:`global_mean`.

    Parameters
    ----------
    %(metrics_features)s
    %(metrics_weighted)s
    %(metrics_drop_empty)s

    Returns
    -------
    ndarray, (D, D)
        ``Σ_B``, float64.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> between_class_cov(H, y)
    array([[ 1., -1.],
           [-1.,  1.]])
    """
    m = moments(features, labels, num_classes, drop_empty=drop_empty, scatter=False)
    Mc = m.means - global_mean_of(m.counts, m.means, weighted)
    return Mc.T @ Mc / Mc.shape[0]


@fill_doc
def means_of(
    features: ArrayLike,
    labels: ArrayLike | None,
    num_classes: int | None,
    drop_empty: bool,
) -> tuple[np.ndarray, np.ndarray | None, Any]:
    """``(means (K, D), counts or None, dtype)`` from (features, labels) or from a means matrix alone.

    Parameters
    ----------
    %(metrics_features_or_means)s
    drop_empty : bool
        Drop classes without samples instead of raising ``ConfigError``.

    Returns
    -------
    means : numpy.ndarray, (K, D)
        The class means as rows, float64.
    counts : numpy.ndarray or None, (K,)
        Samples per class (None for a means matrix).
    dtype
        The dtype ``features`` came in.

    Examples
    --------
    >>> means_of(np.array([[1.0, 0.0], [0.0, 1.0]]), None, None, False)[1] is None
    True
    """
    dtype = dtype_of(features)
    if labels is None:
        mu = as_float64(features, "means")
        if mu.ndim != 2:
            raise ConfigError(f"means.shape == {tuple(mu.shape)}, must be (K, D) (one class mean per row).")
        if mu.shape[0] < 2:
            raise ConfigError(f"means.shape == {tuple(mu.shape)}, must have K >= 2 rows.")
        check_finite_array("means", mu)
        return mu, None, dtype
    m = moments(features, labels, num_classes, drop_empty=drop_empty, scatter=False)
    return m.means, m.counts, dtype


@fill_doc
def mean_rows(
    features: ArrayLike,
    labels: ArrayLike | None,
    num_classes: int | None,
    drop_empty: bool,
    *,
    centered: bool,
    weighted: bool = True,
) -> np.ndarray:
    """Class-mean rows ``a_c = μ_c − μ_G`` (``centered``) or ``a_c = μ_c``, ``(K, D)``.

    The means come from (features, labels) or a means matrix alone, as in :func:`means_of`.

    Parameters
    ----------
    %(metrics_features_or_means)s
    drop_empty : bool
        Drop classes without samples instead of raising ``ConfigError``.
    centered : bool
        Subtract the global mean ``μ_G``.
    %(metrics_weighted)s

    Returns
    -------
    numpy.ndarray, (K, D)
        ``a_c`` as rows.

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> mean_rows(H, y, None, False, centered=True)
    array([[ 1., -1.],
           [-1.,  1.]])
    """
    mu, counts, _ = means_of(features, labels, num_classes, drop_empty)
    return mu - global_mean_of(counts, mu, weighted) if centered else mu


def negative_fraction(features: ArrayLike) -> float:
    """Fraction of entries ``< 0`` (for pre-activations: the share a following ReLU sets to zero).

    Parameters
    ----------
    features : array_like
        Any array (numpy or torch).

    Returns
    -------
    float
        The fraction of entries below 0, in ``[0, 1]``.

    Examples
    --------
    >>> negative_fraction(np.array([-1.0, 1.0, 2.0, 3.0]))
    0.25
    """
    H = as_float64(features, "features")
    if H.size == 0:
        raise ConfigError(f"features.shape == {tuple(H.shape)}, must be non-empty.")
    check_finite_array("features", H)
    return float(np.count_nonzero(H < 0) / H.size)
