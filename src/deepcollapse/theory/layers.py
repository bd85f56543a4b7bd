"""Conditionally optimal layers of the L-DUFM given its class-mean matrices (2024 paper, Definitions 9/10).

For DNC1-collapsed points (every sample equals its class mean) the ``n``-sample problem is the ``n = 1``
problem with ``λ_{H_1}`` replaced by ``n λ_{H_1}`` (the fit of each class is the same, ``‖H_1‖² = n ‖M_1‖²``).
With the pre-ReLU class means ``M~_2 .. M~_L`` fixed (``M_l = ReLU(M~_l)``):

* last layer, ridge: ``min_W 1/(2K)‖W M_L − I_K‖² + (λ/2)‖W‖²`` is solved by ``W = (M^T M + Kλ I)^{-1} M^T``
  with value ``Σ_i λ / (2 (s_i² + Kλ))`` over the ``K`` singular values ``s_i`` of ``M_L`` (zeros included);
* middle layers, minimum-norm interpolation: ``W_l = M~_{l+1} M_l^+`` (exact iff the rows of ``M~_{l+1}`` lie
  in the row space of ``M_l``), cost ``(λ_{W_l}/2)‖W_l‖²``;
* first layer: ``min (λ_{W_1}/2)‖W_1‖² + (nλ_{H_1}/2)‖M_1‖²`` s.t. ``W_1 M_1 = M~_2`` has value
  ``√(λ_{W_1} nλ_{H_1}) ‖M~_2‖_*`` (variational form of the nuclear norm, Lemma 8 of the 2023 paper), attained
  by the balanced factors ``W_1 = (b/a)^{1/4} U S^{1/2}``, ``M_1 = (a/b)^{1/4} S^{1/2} V^T`` (``a = λ_{W_1}``,
  ``b = nλ_{H_1}``, ``M~_2 = U S V^T``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError, check_float, check_int, rank_tolerance
from deepcollapse.theory.objective import ObjectiveParts, default_labels, dufm_objective, per_layer_lam_w

__all__ = [
    "Solution",
    "balanced_factorisation",
    "class_means_of",
    "conditional_loss",
    "evaluated_solution",
    "min_norm_interpolation",
    "ridge_last_layer",
    "solution_from_class_means",
]


@dataclass
class Solution:
    """An explicit point ``(H1, W1 .. WL)`` of the L-DUFM and its objective value.

    ``H1`` is ``(d_1, N)`` with ``N = K n`` columns ordered by class; ``weights[l-1] = W_l``.  ``class_means``
    are the pre-ReLU class means ``[M~_2, ..., M~_L]`` the point was built from; ``scales`` the ``α_2 .. α_L``
    of the construction (empty if not applicable); ``loss == parts.total`` is the value of eq. (1) evaluated
    on the explicit matrices.  ``interpolation_residual`` is ``max_l ‖W_l M_l − M~_{l+1}‖_F / ‖M~_{l+1}‖_F``
    over middle layers (0 when every middle layer interpolates exactly).
    """

    H1: np.ndarray
    weights: list[np.ndarray]
    loss: float
    parts: ObjectiveParts
    n: int
    class_means: list[np.ndarray] = field(default_factory=list)
    scales: list[float] = field(default_factory=list)
    construction: str = "class_means"
    interpolation_residual: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def layers(self) -> int:
        """``L``, the number of weight matrices.

        Returns
        -------
        int
            ``len(weights)``.

        Examples
        --------
        >>> solution_from_class_means([np.eye(2)], 1, 0.1, 0.1).layers
        2
        """
        return len(self.weights)

    @property
    def classes(self) -> int:
        """``K``, the number of classes (rows of ``W_L``).

        Returns
        -------
        int
            ``weights[-1].shape[0]``.

        Examples
        --------
        >>> solution_from_class_means([np.eye(2)], 1, 0.1, 0.1).classes
        2
        """
        return int(self.weights[-1].shape[0])


def evaluated_solution(
    H1: np.ndarray,
    weights: list[np.ndarray],
    n: int,
    lam_h: float,
    lam_w: float | Sequence[float],
    *,
    loss: str = "mse",
    activation: str = "relu",
    **fields: Any,
) -> Solution:
    """The :class:`Solution` at the explicit point ``(H1, W1 .. WL)``: eq. (1) (``loss``, ``activation`` as in
    :func:`dufm_objective`) evaluated on the matrices; ``fields`` fill the remaining attributes.

    Parameters
    ----------
    H1 : ndarray, (d_1, K n)
        The features, columns = samples ordered by class.
    weights : list of ndarray
        ``[W_1 (d_2, d_1), ..., W_L (K, d_L)]``.
    n : int
        Samples per class.
    lam_h : float
        ``λ_{H_1} >= 0``.
    lam_w : float or sequence of float
        ``λ_W`` for every layer, or ``L`` values.
    loss : {"mse", "ce"}, default "mse"
        The fit term.
    activation : {"relu", "linear", "relu_eps"}, default "relu"
        σ.
    **fields
        The other :class:`Solution` attributes (``class_means``, ``scales``, ``construction``, ``info``, ...).

    Returns
    -------
    Solution
        The point, ``loss == parts.total``.

    Examples
    --------
    >>> s = evaluated_solution(np.eye(2), [np.eye(2)], 1, 0.1, 0.1, construction="identity")
    >>> s.loss, s.construction  # exact fit, reg = 0.05 (2 + 2)
    (0.2, 'identity')
    """
    parts = dufm_objective(H1, weights, lam_h, lam_w, loss=loss, activation=activation)
    return Solution(H1=H1, weights=weights, loss=parts.total, parts=parts, n=n, **fields)


def ridge_last_layer(M: np.ndarray, lam: float, classes: int | None = None) -> tuple[np.ndarray, float]:
    """Optimal last layer ``W = argmin 1/(2K)‖W M − I_K‖² + (λ/2)‖W‖²`` and its value.

    ``M`` is ``(d, K)``.  ``classes`` is the ``K`` of the normalisation ``1/(2K)`` (default ``M.shape[1]``;
    the block constructions of Definition 11.1 use the full ``K`` in each block).  Value
    ``Σ_i λ / (2 (s_i² + Kλ))`` over the ``M.shape[1]`` singular values of ``M`` (zeros included).

    Parameters
    ----------
    M : ndarray, (d, K)
        The post-ReLU class means of the last layer, ``M_L``.
    lam : float
        ``λ_{W_L}``.
    classes : int, optional
        The ``K`` of the normalisation ``1/(2K)``; default ``M.shape[1]``.

    Returns
    -------
    W : ndarray, (K, d)
        The ridge solution ``(M^T M + Kλ I)^{-1} M^T``.
    value : float
        The minimum value.

    Examples
    --------
    >>> W, value = ridge_last_layer(np.eye(2), 0.5)  # s_i = 1: value 2 · 0.5 / (2 (1 + 1))
    >>> W.tolist(), value
    ([[0.5, 0.0], [0.0, 0.5]], 0.25)
    """
    M = np.asarray(M, dtype=np.float64)
    K = M.shape[1] if classes is None else int(classes)
    gram = M.T @ M  # (Kb, Kb)
    W = np.linalg.solve(gram + K * lam * np.eye(M.shape[1]), M.T)  # (Kb, d)
    s2 = np.clip(np.linalg.eigvalsh(gram), 0.0, None)
    value = float(np.sum(lam / (2.0 * (s2 + K * lam))))
    return W, value


def min_norm_interpolation(M_in: np.ndarray, M_out: np.ndarray) -> np.ndarray:
    """Minimum-Frobenius-norm ``W`` with ``W M_in = M_out`` (least squares if infeasible): ``W = M_out
    M_in^+``.

    Parameters
    ----------
    M_in : ndarray, (d_l, K)
        The post-activation class means ``M_l``.
    M_out : ndarray, (d_{l+1}, K)
        The target pre-activation class means ``M~_{l+1}``.

    Returns
    -------
    ndarray, (d_{l+1}, d_l)
        ``W = M_out M_in^+``, float64.

    Examples
    --------
    >>> min_norm_interpolation(2 * np.eye(2), np.ones((1, 2)))
    array([[0.5, 0.5]])
    """
    return np.asarray(M_out, dtype=np.float64) @ np.linalg.pinv(np.asarray(M_in, dtype=np.float64))


def balanced_factorisation(
    Mt2: np.ndarray, lam_w1: float, lam_h_eff: float, d1: int | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """Balanced factors ``W_1 (d_2, d_1)``, ``M_1 (d_1, K)`` of ``M~_2 = W_1 M_1`` and the value
    ``√(λ_{W_1} λ_H) ‖M~_2‖_*`` of ``min (λ_{W_1}/2)‖W_1‖² + (λ_H/2)‖M_1‖²`` (``λ_H = nλ_{H_1}``).

    ``d1`` defaults to ``min(M~_2.shape)``; larger widths are padded with zeros; a width below the rank of
    ``M~_2`` raises ``ConfigError``.

    Parameters
    ----------
    Mt2 : ndarray, (d_2, K)
        ``M~_2``.
    lam_w1 : float
        ``λ_{W_1} > 0``.
    lam_h_eff : float
        ``λ_H = nλ_{H_1} > 0``.
    d1 : int, optional
        The width ``d_1`` (default ``min(M~_2.shape)``; at least ``rank(M~_2)``).

    Returns
    -------
    W1 : ndarray, (d_2, d_1)
    M1 : ndarray, (d_1, K)
    value : float
        ``√(λ_{W_1} λ_H) ‖M~_2‖_*``.

    Examples
    --------
    >>> W1, M1, value = balanced_factorisation(np.diag([2.0, 1.0]), 0.25, 1.0)
    >>> bool(np.allclose(W1 @ M1, np.diag([2.0, 1.0]))), value  # √(0.25 · 1) · (2 + 1)
    (True, 1.5)
    """
    Mt2 = np.asarray(Mt2, dtype=np.float64)
    U, S, Vt = np.linalg.svd(Mt2, full_matrices=False)
    k = S.shape[0]
    if d1 is None:
        d1 = k
    tol = rank_tolerance(S[0] if k else 0.0, Mt2.shape)
    rank = int(np.sum(S > tol))
    if d1 < rank:
        raise ConfigError(f"width d1 == {d1}, must be >= rank(M~_2) == {rank}.")
    a, b = lam_w1, lam_h_eff
    W1 = (b / a) ** 0.25 * U * np.sqrt(S)  # (d2, k)
    M1 = (a / b) ** 0.25 * np.sqrt(S)[:, None] * Vt  # (k, K)
    if d1 >= k:
        W1 = np.hstack([W1, np.zeros((W1.shape[0], d1 - k))])
        M1 = np.vstack([M1, np.zeros((d1 - k, M1.shape[1]))])
    else:  # drop numerically-zero directions
        W1, M1 = W1[:, :d1], M1[:d1]
    return W1, M1, math.sqrt(a * b) * float(np.sum(S))


def _check_means(mean_matrices: Sequence[np.ndarray]) -> list[np.ndarray]:
    if len(mean_matrices) < 1:
        raise ConfigError("mean_matrices has 0 matrices, must have L - 1 >= 1 (M~_2 .. M~_L).")
    means = [np.asarray(M, dtype=np.float64) for M in mean_matrices]
    K = means[0].shape[1] if means[0].ndim == 2 else -1
    for i, M in enumerate(means):
        if M.ndim != 2 or M.shape[1] != K:
            raise ConfigError(f"mean_matrices[{i}].shape == {M.shape}, must be (d, K) with K == {K}.")
        if not np.all(np.isfinite(M)):
            raise ConfigError(f"mean_matrices[{i}] has non-finite entries, must be all finite.")
    if K < 1:
        raise ConfigError(f"mean_matrices[0].shape == {means[0].shape}, must be (d, K) with K >= 1.")
    return means


def class_means_of(
    H1: np.ndarray, weights: Sequence[np.ndarray], labels: np.ndarray | None = None
) -> list[np.ndarray]:
    """Pre-ReLU class means ``[M~_2, ..., M~_L]`` (each ``(d_l, K)``) of an explicit point ``(H1, W1 .. WL)``.

    ``labels`` default ``arange(K).repeat(N // K)``.  With :func:`solution_from_class_means` this "polishes" a
    trained point: for a DNC1-collapsed point the conditionally optimal layers never increase the loss.

    Parameters
    ----------
    H1 : ndarray, (d_1, N)
        The features, columns = samples.
    weights : sequence of ndarray
        ``[W_1 (d_2, d_1), ..., W_L (K, d_L)]``.
    labels : ndarray of int, (N,), optional
        Class labels; default ``arange(K).repeat(N // K)``.

    Returns
    -------
    list of ndarray
        ``[M~_2, ..., M~_L]``, each ``(d_l, K)``, float64 (ReLU between layers).

    Examples
    --------
    >>> H1 = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])  # K = 2, n = 2
    >>> class_means_of(H1, [2 * np.eye(2), np.eye(2)])[0]
    array([[2., 0.],
           [0., 2.]])
    """
    H1 = np.asarray(H1, dtype=np.float64)
    K = int(np.shape(weights[-1])[0])
    N = H1.shape[1]
    labels = default_labels(N, K) if labels is None else np.asarray(labels)
    counts = np.bincount(labels, minlength=K)
    if labels.shape != (N,) or np.any(counts == 0):
        raise ConfigError(
            f"labels has class counts {counts.tolist()}, must have N == {N} entries, every class > 0."
        )
    onehot = np.zeros((N, K))
    onehot[np.arange(N), labels] = 1.0 / counts[labels]
    means = []
    H = H1
    for W in weights[:-1]:
        Ht = np.asarray(W, dtype=np.float64) @ H  # (d_{l+1}, N)
        means.append(Ht @ onehot)  # (d_{l+1}, K)
        H = np.maximum(Ht, 0.0)
    return means


def conditional_loss(
    mean_matrices: Sequence[np.ndarray],
    n: int,
    lam_h: float,
    lam_w: float | Sequence[float],
    classes: int | None = None,
) -> float:
    """The loss of the conditionally optimal layers by the closed-form values above (no explicit matrices):

        √(λ_{W_1} nλ_{H_1}) ‖M~_2‖_*  +  Σ_{l=2}^{L-1} (λ_{W_l}/2) ‖M~_{l+1} M_l^+‖²
                                     +  Σ_i λ_{W_L} / (2 (s_i² + Kλ_{W_L}))

    Exact when each middle layer can interpolate (rows of ``M~_{l+1}`` in the row space of ``M_l``).

    Parameters
    ----------
    mean_matrices : sequence of ndarray
        The pre-ReLU class means ``[M~_2, ..., M~_L]``, each ``(d_l, K)``, finite.
    n : int
        Samples per class (``>= 1``).
    lam_h : float
        ``λ_{H_1} > 0``.
    lam_w : float or sequence of float
        ``λ_W`` for every layer, or ``L`` values ``λ_{W_1} .. λ_{W_L}``.
    classes : int, optional
        The ``K`` of the last layer's ``1/(2K)`` (default the number of columns).

    Returns
    -------
    float
        The value of eq. (1) at the conditionally optimal layers (an upper bound where a middle layer cannot
        interpolate).

    Examples
    --------
    >>> means = [np.eye(2)]
    >>> explicit = solution_from_class_means(means, 1, 0.1, 0.1).loss
    >>> bool(abs(conditional_loss(means, 1, 0.1, 0.1) - explicit) < 1e-12)
    True
    """
    means = _check_means(mean_matrices)
    L = len(means) + 1
    lams = per_layer_lam_w(lam_w, L)
    n = check_int("n", n, min=1)
    lam_h = check_float("lam_h", lam_h, gt=0.0)
    value = math.sqrt(lams[0] * n * lam_h) * float(np.sum(np.linalg.svd(means[0], compute_uv=False)))
    for l in range(len(means) - 1):
        W = min_norm_interpolation(np.maximum(means[l], 0.0), means[l + 1])
        value += 0.5 * lams[l + 1] * float(np.sum(W**2))
    value += ridge_last_layer(np.maximum(means[-1], 0.0), lams[-1], classes)[1]
    return value


def solution_from_class_means(
    mean_matrices: Sequence[np.ndarray],
    n: int,
    lam_h: float,
    lam_w: float | Sequence[float],
    d1: int | None = None,
) -> Solution:
    """Turn pre-ReLU class means ``(M~_2, ..., M~_L)`` (each ``(d_l, K)``) into the conditionally optimal
    explicit point ``(H1, W1 .. WL)`` and evaluate eq. (1) on it.

    ``W_L`` is the ridge solution on ``M_L = ReLU(M~_L)``, ``W_l = M~_{l+1} M_l^+`` for ``2 <= l <= L-1`` and
    ``(W_1, M_1)`` the balanced factorisation of ``M~_2`` with ``λ_H = nλ_{H_1}``; ``H1 = M_1 ⊗ 1_n^T`` (each
    class column repeated ``n`` times, samples ordered by class).  ``L = len(mean_matrices) + 1 >= 2``.  The
    returned ``loss`` is the explicit evaluation of eq. (1); if a middle layer cannot interpolate exactly,
    ``interpolation_residual > 0`` and the point is the least-squares one (still a valid point, loss still
    exact).

    Parameters
    ----------
    mean_matrices : sequence of ndarray
        The pre-ReLU class means ``[M~_2, ..., M~_L]``, each ``(d_l, K)``, finite.
    n : int
        Samples per class (``>= 1``).
    lam_h : float
        ``λ_{H_1} > 0``.
    lam_w : float or sequence of float
        ``λ_W`` for every layer, or ``L`` values ``λ_{W_1} .. λ_{W_L}``.
    d1 : int, optional
        The first-layer width (default ``min(M~_2.shape)``).

    Returns
    -------
    Solution
        The explicit point, its loss (eq. (1) evaluated on it) and ``interpolation_residual``.

    Examples
    --------
    >>> s = solution_from_class_means([np.eye(2)], 1, 0.1, 0.1)
    >>> s.layers, s.H1.shape, round(s.loss, 6), s.interpolation_residual
    (2, (2, 2), 0.283333, 0.0)
    """
    means = _check_means(mean_matrices)
    L = len(means) + 1
    n = check_int("n", n, min=1)
    lam_h = check_float("lam_h", lam_h, gt=0.0)
    lams = per_layer_lam_w(lam_w, L)
    K = means[0].shape[1]
    W1, M1, _ = balanced_factorisation(means[0], lams[0], n * lam_h, d1)
    weights = [W1]
    residual = 0.0
    for l in range(len(means) - 1):
        M_in = np.maximum(means[l], 0.0)
        W = min_norm_interpolation(M_in, means[l + 1])
        norm = float(np.linalg.norm(means[l + 1]))
        if norm > 0:
            residual = max(residual, float(np.linalg.norm(W @ M_in - means[l + 1])) / norm)
        weights.append(W)
    WL, _ = ridge_last_layer(np.maximum(means[-1], 0.0), lams[-1], K)
    weights.append(WL)
    H1 = np.repeat(M1, n, axis=1)  # (d1, K n)
    return evaluated_solution(H1, weights, n, lam_h, lams, class_means=means, interpolation_residual=residual)
