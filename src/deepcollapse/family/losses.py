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

from deepcollapse._core.docs import fill_doc

__all__ = ["LOSSES", "CrossEntropy", "Loss", "SquaredError", "targets"]

LOSSES = ("mse", "ce")


def targets(classes: int, n: int, dtype: Any = np.float64) -> np.ndarray:
    """``Y = I_K ⊗ 1_n^T`` of shape ``(K, N)``: one-hot labels, samples ordered by class.

    Parameters
    ----------
    classes : int
        ``K``.
    n : int
        Samples per class (``N = K n``).
    dtype : numpy dtype, default float64
        The dtype of the result.

    Returns
    -------
    numpy.ndarray
        ``(K, K n)``, ``Y[k, i] = 1`` when sample ``i`` is of class ``k``.

    Examples
    --------
    >>> targets(2, 2)
    array([[1., 1., 0., 0.],
           [0., 0., 1., 1.]])
    """
    return np.kron(np.eye(int(classes)), np.ones((1, int(n)))).astype(dtype)


class Loss:
    """Base class of a fit term (numpy value/residual, torch value/residual, in-place kernel hook)."""

    name: str = ""
    code: int = -1  # the compiled kernel's switch (:mod:`deepcollapse.dufm.compiled`)

    @staticmethod
    @fill_doc
    def loop_residual_(E: np.ndarray, Y: np.ndarray, scale: Any, m: np.ndarray, s: np.ndarray) -> None:
        """``E ← scale · residual(E, Y)`` for one run ``E (K, N)``, as plain loops along the rows (compiled by
        the numba kernel); ``scale`` has ``E``'s dtype, ``m``/``s`` are spare ``(N,)`` arrays.

        Parameters
        ----------
        %(family_loop_residual_)s

        Returns
        -------
        None
            ``E`` is written in place.

        Examples
        --------
        >>> E = np.array([[1.0, 0.0], [0.0, 1.0]])
        >>> SquaredError.loop_residual_(E, np.eye(2), 0.5, np.empty(2), np.empty(2)); E
        array([[0., 0.],
               [0., 0.]])
        """
        raise NotImplementedError

    @fill_doc
    def value(self, out: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """The fit term of each run (numpy).

        Parameters
        ----------
        %(family_out_Y)s

        Returns
        -------
        numpy.ndarray
            Shape ``(...)`` (a 0-d value for one run).

        Examples
        --------
        >>> float(SquaredError().value(np.eye(2) + 0.5, np.eye(2)))
        0.25
        """
        raise NotImplementedError

    @fill_doc
    def residual(self, out: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """``N · ∂ value / ∂ out`` (numpy).

        Parameters
        ----------
        %(family_out_Y)s

        Returns
        -------
        numpy.ndarray
            ``out``'s shape.

        Examples
        --------
        >>> SquaredError().residual(np.eye(2) + 0.5, np.eye(2))
        array([[0.5, 0.5],
               [0.5, 0.5]])
        """
        raise NotImplementedError

    @fill_doc
    def torch_value(self, out: Any, Y: Any) -> Any:
        """The fit term of each run (torch, differentiable).

        Parameters
        ----------
        %(family_torch_out_Y)s

        Returns
        -------
        torch.Tensor
            Shape ``(...)``.

        Examples
        --------
        >>> import torch
        >>> SquaredError().torch_value(torch.eye(2) + 0.5, torch.eye(2))
        tensor(0.2500)
        """
        raise NotImplementedError

    @fill_doc
    def torch_residual(self, out: Any, Y: Any) -> Any:
        """``N · ∂ value / ∂ out`` (torch).

        Parameters
        ----------
        %(family_torch_out_Y)s

        Returns
        -------
        torch.Tensor
            ``out``'s shape.

        Examples
        --------
        >>> import torch
        >>> SquaredError().torch_residual(torch.eye(2) + 0.5, torch.eye(2))
        tensor([[0.5000, 0.5000],
                [0.5000, 0.5000]])
        """
        raise NotImplementedError

    @fill_doc
    def residual_(self, E: np.ndarray, Y: np.ndarray, scratch: np.ndarray) -> None:
        """``E ← residual(E, Y)`` in place; ``scratch`` is a spare array of ``E``'s shape.

        Parameters
        ----------
        %(family_residual_)s

        Returns
        -------
        None
            ``E`` is written in place.

        Examples
        --------
        >>> E = np.eye(2) + 0.5
        >>> SquaredError().residual_(E, np.eye(2), np.empty((2, 2))); E
        array([[0.5, 0.5],
               [0.5, 0.5]])
        """
        np.copyto(E, self.residual(E, Y))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SquaredError(Loss):
    """``1/(2N) ‖out − Y‖_F²`` per run (eq. (1)); residual ``out − Y``."""

    name = "mse"
    code = 0

    @staticmethod
    @fill_doc
    def loop_residual_(E: np.ndarray, Y: np.ndarray, scale: Any, m: np.ndarray, s: np.ndarray) -> None:
        """``E ← scale · (E − Y)`` as plain loops (``m``, ``s`` unused).

        Parameters
        ----------
        %(family_loop_residual_)s

        Returns
        -------
        None
            ``E`` is written in place.

        Examples
        --------
        >>> E = np.array([[3.0, 0.0], [0.0, 3.0]])
        >>> SquaredError.loop_residual_(E, np.eye(2), 0.5, np.empty(2), np.empty(2)); E
        array([[1., 0.],
               [0., 1.]])
        """
        K, N = E.shape
        for k in range(K):
            for j in range(N):
                E[k, j] = (E[k, j] - Y[k, j]) * scale

    @fill_doc
    def value(self, out: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """``1/(2N) ‖out − Y‖_F²`` of each run.

        Parameters
        ----------
        %(family_out_Y)s

        Returns
        -------
        numpy.ndarray
            Shape ``(...)``.

        Examples
        --------
        >>> float(SquaredError().value(np.eye(2) + 0.5, np.eye(2)))
        0.25
        """
        N = out.shape[-1]
        return np.sum((out - Y) ** 2, axis=(-2, -1)) / (2.0 * N)

    @fill_doc
    def residual(self, out: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """``out − Y``.

        Parameters
        ----------
        %(family_out_Y)s

        Returns
        -------
        numpy.ndarray
            ``out``'s shape.

        Examples
        --------
        >>> SquaredError().residual(np.eye(2) + 0.5, np.eye(2))
        array([[0.5, 0.5],
               [0.5, 0.5]])
        """
        return out - Y

    @fill_doc
    def torch_value(self, out: Any, Y: Any) -> Any:
        """``1/(2N) ‖out − Y‖_F²`` of each run (torch).

        Parameters
        ----------
        %(family_torch_out_Y)s

        Returns
        -------
        torch.Tensor
            Shape ``(...)``.

        Examples
        --------
        >>> import torch
        >>> SquaredError().torch_value(torch.eye(2) + 0.5, torch.eye(2))
        tensor(0.2500)
        """
        N = out.shape[-1]
        return ((out - Y) ** 2).sum(dim=(-2, -1)) / (2.0 * N)

    @fill_doc
    def torch_residual(self, out: Any, Y: Any) -> Any:
        """``out − Y`` (torch).

        Parameters
        ----------
        %(family_torch_out_Y)s

        Returns
        -------
        torch.Tensor
            ``out``'s shape.

        Examples
        --------
        >>> import torch
        >>> SquaredError().torch_residual(torch.eye(2) + 0.5, torch.eye(2))
        tensor([[0.5000, 0.5000],
                [0.5000, 0.5000]])
        """
        return out - Y

    @fill_doc
    def residual_(self, E: np.ndarray, Y: np.ndarray, scratch: np.ndarray) -> None:
        """``E ← E − Y`` in place (``scratch`` unused).

        Parameters
        ----------
        %(family_residual_)s

        Returns
        -------
        None
            ``E`` is written in place.

        Examples
        --------
        >>> E = np.eye(2) + 0.5
        >>> SquaredError().residual_(E, np.eye(2), np.empty((2, 2))); E
        array([[0.5, 0.5],
               [0.5, 0.5]])
        """
        np.subtract(E, Y, out=E)


class CrossEntropy(Loss):
    """Mean softmax cross-entropy ``(1/N) Σ_i CE(softmax(out_i), y_i)`` per run; residual ``softmax − Y``."""

    name = "ce"
    code = 1

    @staticmethod
    @fill_doc
    def loop_residual_(E: np.ndarray, Y: np.ndarray, scale: Any, m: np.ndarray, s: np.ndarray) -> None:
        """``E ← scale · (softmax(E) − Y)`` as plain loops (``m``: column maxima, ``s``: column sums).

        Parameters
        ----------
        %(family_loop_residual_)s

        Returns
        -------
        None
            ``E`` is written in place.

        Examples
        --------
        >>> E = np.zeros((2, 2))
        >>> CrossEntropy.loop_residual_(E, np.eye(2), 1.0, np.empty(2), np.empty(2)); E
        array([[-0.5,  0.5],
               [ 0.5, -0.5]])
        """
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

    @fill_doc
    def value(self, out: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """``(1/N) Σ_i [log Σ_k exp(out_ki) − ⟨y_i, out_i⟩]`` of each run (stable ``log Σ exp``).

        Parameters
        ----------
        %(family_out_Y)s

        Returns
        -------
        numpy.ndarray
            Shape ``(...)``.

        Examples
        --------
        >>> round(float(CrossEntropy().value(np.zeros((2, 2)), np.eye(2))), 6)  # log 2
        0.693147
        """
        N = out.shape[-1]
        m = np.max(out, axis=-2, keepdims=True)  # (..., 1, N)
        lse = m[..., 0, :] + np.log(np.sum(np.exp(out - m), axis=-2))  # (..., N)
        return (np.sum(lse, axis=-1) - np.sum(out * Y, axis=(-2, -1))) / N

    @fill_doc
    def residual(self, out: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """``softmax(out) − Y``, the softmax over the ``K`` classes of each column (stable).

        Parameters
        ----------
        %(family_out_Y)s

        Returns
        -------
        numpy.ndarray
            ``out``'s shape.

        Examples
        --------
        >>> CrossEntropy().residual(np.zeros((2, 2)), np.eye(2))
        array([[-0.5,  0.5],
               [ 0.5, -0.5]])
        """
        m = np.max(out, axis=-2, keepdims=True)
        e = np.exp(out - m)
        return e / np.sum(e, axis=-2, keepdims=True) - Y

    @fill_doc
    def torch_value(self, out: Any, Y: Any) -> Any:
        """The mean softmax cross-entropy of each run (torch, ``logsumexp``).

        Parameters
        ----------
        %(family_torch_out_Y)s

        Returns
        -------
        torch.Tensor
            Shape ``(...)``.

        Examples
        --------
        >>> import torch
        >>> CrossEntropy().torch_value(torch.zeros(2, 2), torch.eye(2))
        tensor(0.6931)
        """
        import torch

        N = out.shape[-1]
        return (torch.logsumexp(out, dim=-2).sum(-1) - (out * Y).sum(dim=(-2, -1))) / N

    @fill_doc
    def torch_residual(self, out: Any, Y: Any) -> Any:
        """``softmax(out) − Y`` (torch, softmax over the classes).

        Parameters
        ----------
        %(family_torch_out_Y)s

        Returns
        -------
        torch.Tensor
            ``out``'s shape.

        Examples
        --------
        >>> import torch
        >>> CrossEntropy().torch_residual(torch.zeros(2, 2), torch.eye(2))
        tensor([[-0.5000,  0.5000],
                [ 0.5000, -0.5000]])
        """
        import torch

        return torch.softmax(out, dim=-2) - Y

    @fill_doc
    def residual_(self, E: np.ndarray, Y: np.ndarray, scratch: np.ndarray) -> None:
        """``E ← softmax(E) − Y`` in place (``scratch``'s first row holds the column maxima, then sums).

        Parameters
        ----------
        %(family_residual_)s

        Returns
        -------
        None
            ``E`` is written in place.

        Examples
        --------
        >>> E = np.zeros((2, 2))
        >>> CrossEntropy().residual_(E, np.eye(2), np.empty((2, 2))); E
        array([[-0.5,  0.5],
               [ 0.5, -0.5]])
        """
        m = scratch[..., :1, :]  # (..., 1, N) column maxima
        np.max(E, axis=-2, keepdims=True, out=m)
        np.subtract(E, m, out=E)
        np.exp(E, out=E)
        np.sum(E, axis=-2, keepdims=True, out=m)
        np.divide(E, m, out=E)
        np.subtract(E, Y, out=E)
