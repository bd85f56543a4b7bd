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

from deepcollapse._core.checks import ConfigError, check_float, check_int, check_per_layer
from deepcollapse.family import Family, get_family

__all__ = [
    "ObjectiveParts",
    "dufm_objective",
    "forward",
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
        return {"total": self.total, "fit": self.fit, "reg": self.reg}


def default_labels(N: int, K: int) -> np.ndarray:
    """Labels of samples ordered by class, ``Y = I_K ⊗ 1_n^T``: ``arange(K).repeat(N // K)``."""
    if N % K:
        raise ConfigError(f"H1 has N == {N} columns, must be a multiple of K == {K} when labels is None.")
    return np.repeat(np.arange(K), N // K)


def per_layer_lam_w(
    lam_w: float | Sequence[float] | str, layers: int, name: str = "lam_w", *, allow_zero: bool = False
) -> list[float]:
    """Expand ``lam_w`` (one value, a list of ``layers`` values, or a comma-separated string) to a list
    (every value ``> 0``, or ``>= 0`` with ``allow_zero``)."""
    if allow_zero:
        vals = check_per_layer(name, lam_w, layers, gt=None)
        for v in vals:
            check_float(name, v, ge=0.0)
        return vals
    return check_per_layer(name, lam_w, layers, gt=0.0)


def _check_problem(
    classes: int,
    layers: int,
    n: int,
    lam_h: float,
    lam_w: float | Sequence[float] | str,
    *,
    allow_zero: bool = False,
) -> tuple[int, int, int, float, list[float]]:
    """The validated problem of eq. (1): ``(K >= 2, L >= 1, n >= 1, λ_{H_1}, [λ_{W_1} .. λ_{W_L}])``, every
    ``λ > 0`` (``>= 0`` with ``allow_zero``); shared by the closed forms, cross-entropy and linear modules."""
    K = check_int("classes", classes, min=2)
    L = check_int("layers", layers, min=1)
    n = check_int("n", n, min=1)
    lam_h = check_float("lam_h", lam_h, ge=0.0) if allow_zero else check_float("lam_h", lam_h, gt=0.0)
    return K, L, n, lam_h, per_layer_lam_w(lam_w, L, allow_zero=allow_zero)


def loss_zero_point(classes: int, loss: str = "mse") -> float:
    """Objective at the all-zero point (every output 0): ``1/2`` for MSE, ``log K`` for cross-entropy."""
    return 0.5 if loss == "mse" else math.log(classes)


def one_hot(labels: np.ndarray, classes: int) -> np.ndarray:
    """``Y`` of shape ``(K, N)`` with ``Y[labels[i], i] = 1``."""
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

    Args:
        H1: ``(d_1, N)`` unconstrained features, columns = samples.
        weights: ``[W_1 (d_2, d_1), ..., W_L (K, d_L)]``; ``L = len(weights) >= 1``.
        lam_h: ``λ_{H_1} >= 0``.
        lam_w: ``λ_W >= 0`` for all layers, or a list of ``L`` values ``λ_{W_1} .. λ_{W_L}``.
        labels: ``(N,)`` integer labels in ``0 .. K-1``; default ``arange(K).repeat(N // K)`` (needs ``K |
            N``).
        loss: ``"mse"`` (``fit = ‖W_L H_L − Y‖²/(2N)``) or ``"ce"`` (mean softmax cross-entropy).
        activation: ``"relu"``, ``"linear"`` or ``"relu_eps"`` (then ``eps > 0``).
        eps: the ε of σ_ε (Definition 7), only with ``activation="relu_eps"``.

    Returns:
        :class:`ObjectiveParts` with the fit term and ``reg`` the regularisation terms.
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
    fit = float(family.loss.value(out, one_hot(labels, K)))
    reg = 0.5 * lam_h * float(np.sum(H1**2))
    for lam, W in zip(lams, weights):
        reg += 0.5 * lam * float(np.sum(np.asarray(W, dtype=np.float64) ** 2))
    return ObjectiveParts(total=fit + reg, fit=fit, reg=reg)
