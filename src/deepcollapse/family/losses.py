"""Losses of the L-DUFM's fit term, as values with one signature (``out (..., K, N)``, ``Y (K, N)``).

    value(out, Y)     per-run fit term, shape ``(...)``
    residual(out, Y)  ``N · ∂ value / ∂ out`` (the back-propagated error before the 1/N scaling)

* ``mse`` (2024 paper eq. (1)):  ``1/(2N) ‖out − Y‖_F²``, residual ``out − Y``.
* ``ce`` (mean softmax cross-entropy over the N samples, the same regularisation as eq. (1)):
  ``(1/N) Σ_i [log Σ_k exp(out_ki) − ⟨y_i, out_i⟩]``, residual ``softmax(out) − Y`` (softmax over the K
  classes of each column).  Both are computed stably: ``log Σ exp`` and ``softmax`` subtract the column
  maximum first, so finite logits never overflow.

``residual_(E, Y)`` is the kernel's in-place hook: ``E`` holds ``out`` on entry and the residual on exit.
Y is one-hot for both losses (:func:`targets`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["LOSSES", "CrossEntropy", "Loss", "SquaredError", "targets"]

LOSSES = ("mse", "ce")


def targets(classes: int, n: int, dtype: Any = np.float64) -> np.ndarray:
    """``Y = I_K ⊗ 1_n^T`` of shape ``(K, N)``: one-hot labels, samples ordered by class."""
    return np.kron(np.eye(int(classes)), np.ones((1, int(n)))).astype(dtype)


class Loss:
    """Base class of a fit term (numpy value/residual, torch value/residual, in-place kernel hook)."""

    name: str = ""
    code: int = -1  # the compiled kernel's switch (:mod:`deepcollapse.dufm.compiled`)

    @staticmethod
    def loop_residual_(E: np.ndarray, Y: np.ndarray, scale: Any, m: np.ndarray, s: np.ndarray) -> None:
        """``E ← scale · residual(E, Y)`` for one run ``E (K, N)``, as plain loops along the rows (compiled by
        the numba kernel); ``scale`` has ``E``'s dtype, ``m``/``s`` are spare ``(N,)`` arrays."""
        raise NotImplementedError

    def value(self, out: np.ndarray, Y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def residual(self, out: np.ndarray, Y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def torch_value(self, out: Any, Y: Any) -> Any:
        raise NotImplementedError

    def torch_residual(self, out: Any, Y: Any) -> Any:
        raise NotImplementedError

    def residual_(self, E: np.ndarray, Y: np.ndarray, scratch: np.ndarray) -> None:
        """``E ← residual(E, Y)`` in place; ``scratch`` is a spare array of ``E``'s shape."""
        np.copyto(E, self.residual(E, Y))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SquaredError(Loss):
    """``1/(2N) ‖out − Y‖_F²`` per run (eq. (1)); residual ``out − Y``."""

    name = "mse"
    code = 0

    @staticmethod
    def loop_residual_(E: np.ndarray, Y: np.ndarray, scale: Any, m: np.ndarray, s: np.ndarray) -> None:
        K, N = E.shape
        for k in range(K):
            for j in range(N):
                E[k, j] = (E[k, j] - Y[k, j]) * scale

    def value(self, out: np.ndarray, Y: np.ndarray) -> np.ndarray:
        N = out.shape[-1]
        return np.sum((out - Y) ** 2, axis=(-2, -1)) / (2.0 * N)

    def residual(self, out: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return out - Y

    def torch_value(self, out: Any, Y: Any) -> Any:
        N = out.shape[-1]
        return ((out - Y) ** 2).sum(dim=(-2, -1)) / (2.0 * N)

    def torch_residual(self, out: Any, Y: Any) -> Any:
        return out - Y

    def residual_(self, E: np.ndarray, Y: np.ndarray, scratch: np.ndarray) -> None:
        np.subtract(E, Y, out=E)


class CrossEntropy(Loss):
    """Mean softmax cross-entropy ``(1/N) Σ_i CE(softmax(out_i), y_i)`` per run; residual ``softmax − Y``."""

    name = "ce"
    code = 1

    @staticmethod
    def loop_residual_(E: np.ndarray, Y: np.ndarray, scale: Any, m: np.ndarray, s: np.ndarray) -> None:
        K, N = E.shape
        for j in range(N):  # column maxima (the stable softmax)
            m[j] = E[0, j]
        for k in range(1, K):
            for j in range(N):
                if E[k, j] > m[j]:
                    m[j] = E[k, j]
        for k in range(K):
            for j in range(N):
                E[k, j] = np.exp(E[k, j] - m[j])
        for j in range(N):
            s[j] = E[0, j]
        for k in range(1, K):
            for j in range(N):
                s[j] += E[k, j]
        for k in range(K):
            for j in range(N):
                E[k, j] = (E[k, j] / s[j] - Y[k, j]) * scale

    def value(self, out: np.ndarray, Y: np.ndarray) -> np.ndarray:
        N = out.shape[-1]
        m = np.max(out, axis=-2, keepdims=True)  # (..., 1, N)
        lse = m[..., 0, :] + np.log(np.sum(np.exp(out - m), axis=-2))  # (..., N)
        return (np.sum(lse, axis=-1) - np.sum(out * Y, axis=(-2, -1))) / N

    def residual(self, out: np.ndarray, Y: np.ndarray) -> np.ndarray:
        m = np.max(out, axis=-2, keepdims=True)
        e = np.exp(out - m)
        return e / np.sum(e, axis=-2, keepdims=True) - Y

    def torch_value(self, out: Any, Y: Any) -> Any:
        import torch

        N = out.shape[-1]
        return (torch.logsumexp(out, dim=-2).sum(-1) - (out * Y).sum(dim=(-2, -1))) / N

    def torch_residual(self, out: Any, Y: Any) -> Any:
        import torch

        return torch.softmax(out, dim=-2) - Y

    def residual_(self, E: np.ndarray, Y: np.ndarray, scratch: np.ndarray) -> None:
        m = scratch[..., :1, :]  # (..., 1, N) column maxima
        np.max(E, axis=-2, keepdims=True, out=m)
        np.subtract(E, m, out=E)
        np.exp(E, out=E)
        np.sum(E, axis=-2, keepdims=True, out=m)
        np.divide(E, m, out=E)
        np.subtract(E, Y, out=E)
