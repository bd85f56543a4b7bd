"""The L-DUFM objective (eq. (1) of the 2024 paper, Definition 2) on explicit matrices.

Notation (paper): ``H1`` is ``(d_1, N)`` with one column per sample, samples ordered by class
(``labels = arange(K).repeat(n)``, i.e. ``Y = I_K ⊗ 1_n^T``); ``H~_{l+1} = W_l H_l``, ``H_{l+1} =
σ(H~_{l+1})`` for ``l = 1 .. L-1``; the output is ``W_L H_L`` (``K x N``).  Bias-free.  The objective is

    fit(W_L H_L, Y)  +  Σ_{l=1..L} (λ_{W_l}/2) ‖W_l‖_F²  +  (λ_{H_1}/2) ‖H_1‖_F²

(fit = first term, reg = the rest).  The model family (issue 9, :mod:`deepcollapse.family`) chooses

* ``loss="mse"`` (eq. (1)): ``fit = 1/(2N) ‖W_L H_L − Y‖_F²``; the all-zero point has loss exactly 1/2;
* ``loss="ce"``: ``fit = (1/N) Σ_i [log Σ_k exp(o_ki) − o_{y_i i}]`` with ``o = W_L H_L`` (mean softmax
  cross-entropy, stable log-sum-exp); the all-zero point has loss exactly ``log K``;
* ``activation``: σ = ``relu`` (eq. (1)), ``linear`` (deep linear UFM) or ``relu_eps`` (σ_ε of Definition 7,
  with ``eps > 0``).

``λ = 0`` is allowed here (unregularised models).  Everything is float64 numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from deepcollapse._core.checks import ConfigError, check_float, check_per_layer
from deepcollapse.family import Family, Loss, get_family
from deepcollapse.theory.problem import Problem

__all__ = [
    "ObjectiveParts",
    "dufm_objective",
    "evaluate",
    "forward",
    "objective_from_output",
    "loss_zero_point",
    "one_hot",
    "per_layer_lam_w",
]


@dataclass(frozen=True)
class ObjectiveParts:
    """Value of eq. (1): ``total = fit + reg``."""

    total: float
    fit: float
    reg: float

    def to_dict(self) -> dict[str, float]:
        """``{"total", "fit", "reg"}``.  A plain dict: the JSON form of the three numbers.

        Returns
        -------
        dict of str to float
            ``total``, ``fit``, ``reg``.

        Examples
        --------
        >>> ObjectiveParts(total=0.75, fit=0.5, reg=0.25).to_dict()
        {'total': 0.75, 'fit': 0.5, 'reg': 0.25}
        """
        return {"total": self.total, "fit": self.fit, "reg": self.reg}


def default_labels(N: int, K: int) -> np.ndarray:
    """Labels of samples ordered by class, ``Y = I_K ⊗ 1_n^T``: ``arange(K).repeat(N // K)``.

    Parameters
    ----------
    N : int
        The number of samples, a multiple of ``K``.
    K : int
        The number of classes.

    Returns
    -------
    ndarray of int, (N,)
        ``n = N // K`` samples of each class, in class order.

    Examples
    --------
    >>> default_labels(6, 3)
    array([0, 0, 1, 1, 2, 2])
    """
    if N % K:
        raise ConfigError(f"H1 has N == {N} columns, must be a multiple of K == {K} when labels is None.")
    return np.repeat(np.arange(K), N // K)


def per_layer_lam_w(
    lam_w: float | Sequence[float] | str, layers: int, name: str = "lam_w", *, allow_zero: bool = False
) -> list[float]:
    """Expand ``lam_w`` (one value, a list of ``layers`` values, or a comma-separated string) to a list
    (every value ``> 0``, or ``>= 0`` with ``allow_zero``).

    Parameters
    ----------
    lam_w : float, sequence of float or str
        One value (every layer), ``layers`` values, or a comma-separated string.
    layers : int
        ``L``, the number of weight matrices.
    name : str, default "lam_w"
        The option's name, for the error message.
    allow_zero : bool, default False
        Accept ``λ = 0``.

    Returns
    -------
    list of float
        ``L`` values ``λ_{W_1} .. λ_{W_L}``.

    Examples
    --------
    >>> per_layer_lam_w(0.1, 3), per_layer_lam_w("0.1,0.2", 2)
    ([0.1, 0.1, 0.1], [0.1, 0.2])
    """
    if allow_zero:
        vals = check_per_layer(name, lam_w, layers, gt=None)
        for v in vals:
            check_float(name, v, ge=0.0)
        return vals
    return check_per_layer(name, lam_w, layers, gt=0.0)


def loss_zero_point(classes: int, loss: str = "mse") -> float:
    """Objective at the all-zero point (every output 0): ``1/2`` for MSE, ``log K`` for cross-entropy.

    Parameters
    ----------
    classes : int
        ``K``, the number of classes.
    loss : {"mse", "ce"}, default "mse"
        The fit term.

    Returns
    -------
    float
        ``0.5`` or ``log K``.

    Examples
    --------
    >>> loss_zero_point(4), round(loss_zero_point(4, "ce"), 6)
    (0.5, 1.386294)
    """
    return 0.5 if loss == "mse" else math.log(classes)


def one_hot(labels: np.ndarray, classes: int) -> np.ndarray:
    """``Y`` of shape ``(K, N)`` with ``Y[labels[i], i] = 1``.

    Parameters
    ----------
    labels : ndarray of int, (N,)
        Labels in ``0..K-1``.
    classes : int
        ``K``, the number of classes.

    Returns
    -------
    ndarray, (K, N)
        ``Y``, float64.

    Examples
    --------
    >>> one_hot(np.array([0, 2, 1]), 3)
    array([[1., 0., 0.],
           [0., 0., 1.],
           [0., 1., 0.]])
    """
    labels = np.asarray(labels)
    Y = np.zeros((classes, labels.shape[0]))  # (K, N)
    Y[labels, np.arange(labels.shape[0])] = 1.0
    return Y


def forward(
    H1: np.ndarray, weights: Sequence[np.ndarray], family: Family | None = None
) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """Forward pass of the L-DUFM with the activation σ of ``family`` (default ReLU).

    Returns ``(pre, post, out)``: ``pre = [H~_2, ..., H~_L]`` (before σ), ``post = [H_1, H_2, ..., H_L]``
    (``H_1`` itself first, then after σ) and ``out = W_L H_L`` of shape ``(K, N)``.

    Parameters
    ----------
    H1 : ndarray, (d_1, N)
        Features, columns = samples.
    weights : sequence of ndarray
        ``[W_1 (d_2, d_1), ..., W_L (K, d_L)]``.
    family : Family, optional
        The model family (:func:`deepcollapse.family.get_family`); default MSE + ReLU.

    Returns
    -------
    pre : list of ndarray
        ``[H~_2, ..., H~_L]``.
    post : list of ndarray
        ``[H_1, H_2, ..., H_L]``.
    out : ndarray, (K, N)
        ``W_L H_L``.

    Examples
    --------
    >>> pre, post, out = forward(np.array([[1.0, -1.0]]), [np.array([[1.0], [-1.0]]), np.ones((1, 2))])
    >>> pre[0].tolist(), post[1].tolist(), out.tolist()
    ([[1.0, -1.0], [-1.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0]])
    """
    sigma = (family or get_family()).activation.forward
    H = np.asarray(H1, dtype=np.float64)
    pre: list[np.ndarray] = []
    post: list[np.ndarray] = [H]
    for W in weights[:-1]:
        Ht = np.asarray(W, dtype=np.float64) @ H  # (d_{l+1}, N)
        pre.append(Ht)
        H = sigma(Ht)
        post.append(H)
    out = np.asarray(weights[-1], dtype=np.float64) @ H  # (K, N)
    return pre, post, out


def objective_from_output(
    out: np.ndarray,
    Y: np.ndarray,
    H1: np.ndarray,
    weights: Sequence[np.ndarray],
    lam_h: float,
    lam_w: Sequence[float],
    loss: Loss,
) -> ObjectiveParts:
    """Eq. (1) in float64 from the output ``W_L H_L``: the one place its value is added up.

    ``fit = loss.value(out, Y)``; ``reg = (λ_{H_1}/2)‖H_1‖² + Σ_l (λ_{W_l}/2)‖W_l‖²`` summed in that order;
    ``total = fit + reg``.  Every float64 evaluation of eq. (1) in the package ends here (:func:`evaluate`,
    :func:`dufm_objective`, the trainer's observation, the classifier, the landscape's piecewise calculus,
    the search, ``theory check``); overflow in the fit of a diverged point gives ``inf``/``nan`` silently.

    Parameters
    ----------
    out : ndarray, shape (K, N)
        ``W_L H_L`` (float64).
    Y : ndarray, shape (K, N)
        One-hot targets.
    H1 : ndarray, shape (d_1, N)
        The features (any float dtype; squared in float64).
    weights : sequence of ndarray
        ``W_1 .. W_L`` (any float dtype; squared in float64).
    lam_h : float
        ``λ_{H_1}``.
    lam_w : sequence of float
        ``λ_{W_1} .. λ_{W_L}``.
    loss : Loss
        The fit term (:attr:`deepcollapse.family.Family.loss`).

    Returns
    -------
    ObjectiveParts
        ``total``, ``fit``, ``reg``.

    Examples
    --------
    >>> from deepcollapse.family import get_family
    >>> H1, W = np.ones((2, 2)), [np.eye(2)]
    >>> parts = objective_from_output(W[0] @ H1, np.eye(2), H1, W, 0.1, [0.1], get_family().loss)
    >>> parts.fit, round(parts.reg, 12)  # reg = 0.05 (4 + 2)
    (0.5, 0.3)
    """
    with np.errstate(over="ignore", invalid="ignore"):
        fit = float(loss.value(out, Y))
    reg = 0.5 * lam_h * float(np.sum(np.asarray(H1, dtype=np.float64) ** 2))
    for lam, W in zip(lam_w, weights):
        reg += 0.5 * lam * float(np.sum(np.asarray(W, dtype=np.float64) ** 2))
    return ObjectiveParts(total=fit + reg, fit=fit, reg=reg)


def evaluate(H1: np.ndarray, weights: Sequence[np.ndarray], problem: Problem) -> ObjectiveParts:
    """Eq. (1) of ``problem`` (its model family, ``λ``s, ``Y = I_K ⊗ 1_n^T``) at ``(H1, weights)``, float64.

    No shape checks (the hot path of the trainer's observation; :func:`dufm_objective` checks them).

    Parameters
    ----------
    H1 : ndarray, shape (d_1, K n)
        Features, columns = samples ordered by class.
    weights : sequence of ndarray
        ``[W_1 (d_2, d_1), ..., W_L (K, d_L)]``.
    problem : Problem
        The instance of eq. (1).

    Returns
    -------
    ObjectiveParts
        ``total``, ``fit``, ``reg`` (:func:`objective_from_output` on :func:`forward`).

    Examples
    --------
    >>> p = Problem(2, 1, 1, 0.1, 0.1)
    >>> evaluate(np.eye(2), [np.eye(2)], p).total  # exact fit, reg = 0.05 (2 + 2)
    0.2
    """
    family = problem.family
    _, _, out = forward(H1, weights, family)
    return objective_from_output(
        out, problem.targets(), H1, weights, problem.lam_h, problem.lam_w, family.loss
    )


def dufm_objective(
    H1: np.ndarray,
    weights: Sequence[np.ndarray],
    lam_h: float,
    lam_w: float | Sequence[float],
    labels: np.ndarray | None = None,
    *,
    loss: str = "mse",
    activation: str = "relu",
    eps: float | None = None,
) -> ObjectiveParts:
    """Evaluate eq. (1) (or its family variant, module docstring) on explicit matrices.

    Parameters
    ----------
    H1 : ndarray, (d_1, N)
        Unconstrained features, columns = samples.
    weights : sequence of ndarray
        ``[W_1 (d_2, d_1), ..., W_L (K, d_L)]``; ``L = len(weights) >= 1``.
    lam_h : float
        ``λ_{H_1} >= 0``.
    lam_w : float or sequence of float
        ``λ_W >= 0`` for all layers, or a list of ``L`` values ``λ_{W_1} .. λ_{W_L}``.
    labels : ndarray of int, (N,), optional
        Integer labels in ``0 .. K-1``; default ``arange(K).repeat(N // K)`` (needs ``K | N``).
    loss : {"mse", "ce"}, default "mse"
        ``"mse"`` (``fit = ‖W_L H_L − Y‖²/(2N)``) or ``"ce"`` (mean softmax cross-entropy).
    activation : {"relu", "linear", "relu_eps"}, default "relu"
        σ (with ``"relu_eps"``, ``eps > 0``).
    eps : float, optional
        The ε of σ_ε (Definition 7), only with ``activation="relu_eps"``.

    Returns
    -------
    ObjectiveParts
        ``total``, ``fit`` (the fit term) and ``reg`` (the regularisation terms), float64.

    Examples
    --------
    >>> dufm_objective(np.ones((2, 4)), [np.eye(2), np.ones((2, 2))], 0.1, 0.1)
    ObjectiveParts(total=3.2, fit=2.5, reg=0.7)
    """
    family = get_family(loss, activation, eps)
    if len(weights) < 1:
        raise ConfigError("weights has 0 matrices, must have at least 1 (L >= 1).")
    H1 = np.asarray(H1, dtype=np.float64)
    if H1.ndim != 2:
        raise ConfigError(f"H1.ndim == {H1.ndim}, must be 2 (shape (d1, N)).")
    L = len(weights)
    lam_h = check_float("lam_h", lam_h, ge=0.0)
    lams = per_layer_lam_w(lam_w, L, allow_zero=True)
    d_prev = H1.shape[0]
    for i, W in enumerate(weights):
        if np.ndim(W) != 2 or np.shape(W)[1] != d_prev:
            raise ConfigError(
                f"weights[{i}].shape == {np.shape(W)}, must be (d, {d_prev}) to match the previous layer."
            )
        d_prev = np.shape(W)[0]
    K = int(np.shape(weights[-1])[0])
    N = H1.shape[1]
    labels = default_labels(N, K) if labels is None else np.asarray(labels)
    if labels.shape != (N,):
        raise ConfigError(f"labels.shape == {labels.shape}, must be ({N},).")
    _, _, out = forward(H1, weights, family)
    return objective_from_output(out, one_hot(labels, K), H1, weights, lam_h, lams, family.loss)
