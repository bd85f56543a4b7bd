"""Activations of the L-DUFM: ReLU, the identity (deep *linear* UFM) and the relaxed ReLU σ_ε.

Each is a value with the same methods (numpy-first; torch only inside the ``torch_*`` methods):

    forward(X) = σ(X),  derivative(X) = σ'(X)        (elementwise, at the *pre*-activation X)

plus two in-place hooks used by the numpy kernel (:mod:`deepcollapse.dufm.kernel`), which are the
same formulas written with ``out=`` buffers (and ``scalar``/``scalar_derivative``, one number at a time, for
the compiled kernel): ``forward_(pre, post, zeros, scratch)`` writes σ(pre) into
``post`` and ``backprop_(G, pre, post, scratch)`` multiplies ``G`` by σ'(pre) in place.  ``keeps_pre`` says
whether ``pre`` must survive the forward pass (σ_ε) or may be overwritten by ``post`` (ReLU: σ'(H~) =
1[H > 0] is read from the post-activation; linear: σ' = 1).

σ_ε (2024 paper, Definition 7 and Theorem 8) — this toolkit's choice, with ``c = clip(x, 0, ε)``::

    σ_ε(x) = 0 (x ≤ 0),   x²(2ε − x)/ε² (0 < x < ε),   x (x ≥ ε)     = c²(2ε − c)/ε² + max(x − ε, 0)
    σ_ε'(x) = 0 (x ≤ 0),  x(4ε − 3x)/ε²  (0 < x < ε),   1 (x ≥ ε)     = c(4ε − 3c)/ε²

It satisfies Definition 7: (i) σ_ε = ReLU outside (0, ε); (ii) 0 < σ_ε(x) < x on (0, ε) (since
x(2ε − x) < ε² ⟺ (x − ε)² > 0); (iii) C¹ (both pieces meet with value 0/ε and slope 0/1) with
0 < σ_ε' ≤ 4/3 on (0, ε) (maximum at x = 2ε/3).  ReLU'(0) := 0 as in the trainer's gradient formulas.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deepcollapse._core.docs import fill_doc

__all__ = ["ACTIVATIONS", "Activation", "Linear", "ReLU", "ReLUEps"]

ACTIVATIONS = ("relu", "linear", "relu_eps")


class Activation:
    """Base class: an elementwise activation σ with its derivative (numpy, torch, in-place kernel hooks)."""

    name: str = ""
    keeps_pre: bool = False
    eps: float | None = None
    code: int = -1  # the compiled kernel's switch (:mod:`deepcollapse.dufm.compiled`)

    @staticmethod
    @fill_doc
    def scalar(x: float, eps: float, inv: float) -> float:
        """σ(x) of one number (plain Python, compiled by the numba kernel); ``eps`` and ``inv = 1/ε²`` are
        used by σ_ε only (a multiplication by the precomputed ``inv``: a division per element costs more
        than the rest of the pass).

        Parameters
        ----------
        %(family_scalar)s

        Returns
        -------
        float
            ``σ(x)``.

        Examples
        --------
        >>> ReLU.scalar(-2.0, 0.0, 0.0), ReLU.scalar(3.0, 0.0, 0.0)
        (0.0, 3.0)
        """
        raise NotImplementedError

    @staticmethod
    @fill_doc
    def scalar_derivative(x: float, eps: float, inv: float) -> float:
        """σ'(x) of one number.

        Parameters
        ----------
        %(family_scalar)s

        Returns
        -------
        float
            ``σ'(x)``.

        Examples
        --------
        >>> ReLU.scalar_derivative(-2.0, 0.0, 0.0), ReLU.scalar_derivative(3.0, 0.0, 0.0)
        (0.0, 1.0)
        """
        raise NotImplementedError

    @property
    def label(self) -> str:
        """The name shown in a family's name (``name``, with ``ε`` for σ_ε).

        Returns
        -------
        str
            ``"relu"``, ``"linear"`` or ``"relu_eps(0.1)"``.

        Examples
        --------
        >>> ReLU().label, ReLUEps(0.1).label
        ('relu', 'relu_eps(0.1)')
        """
        return self.name

    @fill_doc
    def forward(self, X: np.ndarray) -> np.ndarray:
        """σ(X) elementwise (numpy).

        Parameters
        ----------
        %(family_X)s

        Returns
        -------
        numpy.ndarray
            ``σ(X)``, ``X``'s shape (a new array).

        Examples
        --------
        >>> ReLU().forward(np.array([-1.0, 2.0]))
        array([0., 2.])
        """
        raise NotImplementedError

    @fill_doc
    def derivative(self, X: np.ndarray) -> np.ndarray:
        """σ'(X) elementwise (numpy), at the pre-activation.

        Parameters
        ----------
        %(family_X)s

        Returns
        -------
        numpy.ndarray
            ``σ'(X)``, ``X``'s shape.

        Examples
        --------
        >>> ReLU().derivative(np.array([-1.0, 2.0]))
        array([0., 1.])
        """
        raise NotImplementedError

    @fill_doc
    def torch_forward(self, X: Any) -> Any:
        """σ(X) elementwise (torch).

        Parameters
        ----------
        %(family_torch_X)s

        Returns
        -------
        torch.Tensor
            ``σ(X)``, ``X``'s shape.

        Examples
        --------
        >>> import torch
        >>> ReLU().torch_forward(torch.tensor([-1.0, 2.0]))
        tensor([0., 2.])
        """
        raise NotImplementedError

    @fill_doc
    def torch_derivative(self, X: Any) -> Any:
        """σ'(X) elementwise (torch), at the pre-activation.

        Parameters
        ----------
        %(family_torch_X)s

        Returns
        -------
        torch.Tensor
            ``σ'(X)``, ``X``'s shape and dtype.

        Examples
        --------
        >>> import torch
        >>> ReLU().torch_derivative(torch.tensor([-1.0, 2.0]))
        tensor([0., 1.])
        """
        raise NotImplementedError

    @fill_doc
    def forward_(self, pre: np.ndarray, post: np.ndarray, zeros: np.ndarray, scratch: np.ndarray) -> None:
        """``post ← σ(pre)``; ``zeros`` is an all-zero array of ``pre``'s shape, ``scratch`` a spare one.

        Parameters
        ----------
        %(family_forward_)s

        Returns
        -------
        None
            ``post`` is written in place.

        Examples
        --------
        >>> pre = np.array([-1.0, 2.0]); post = np.empty(2)
        >>> ReLU().forward_(pre, post, np.zeros(2), np.empty(2)); post
        array([0., 2.])
        """
        np.copyto(post, self.forward(pre))

    @fill_doc
    def backprop_(
        self, G: np.ndarray, pre: np.ndarray, post: np.ndarray, scratch: np.ndarray, mask: np.ndarray
    ) -> None:
        """``G ← G ⊙ σ'(pre)`` in place (``pre`` may be ``post`` when ``keeps_pre`` is False); ``scratch``
        (float) and ``mask`` (bool) are spare arrays of ``G``'s shape.

        Parameters
        ----------
        %(family_backprop_)s

        Returns
        -------
        None
            ``G`` is written in place.

        Examples
        --------
        >>> G = np.array([5.0, 5.0]); post = np.array([0.0, 2.0])
        >>> ReLU().backprop_(G, post, post, np.empty(2), np.empty(2, dtype=bool)); G
        array([0., 5.])
        """
        np.multiply(G, self.derivative(pre), out=G)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ReLU(Activation):
    """``σ(x) = max(x, 0)``, ``σ'(x) = 1[x > 0]``."""

    name = "relu"
    code = 0

    @staticmethod
    @fill_doc
    def scalar(x: float, eps: float, inv: float) -> float:
        """σ of one number (plain Python; the compiled kernel compiles it).  NaN stays NaN.

        Parameters
        ----------
        %(family_scalar)s

        Returns
        -------
        float
            ``max(x, 0)``.

        Examples
        --------
        >>> ReLU.scalar(-2.0, 0.0, 0.0), ReLU.scalar(3.0, 0.0, 0.0)
        (0.0, 3.0)
        """
        return 0.0 if x <= 0 else x

    @staticmethod
    @fill_doc
    def scalar_derivative(x: float, eps: float, inv: float) -> float:
        """σ'(x) = 1[x > 0] of one number (``σ'(0) = 0``).

        Parameters
        ----------
        %(family_scalar)s

        Returns
        -------
        float
            ``1.0`` or ``0.0``.

        Examples
        --------
        >>> ReLU.scalar_derivative(0.0, 0.0, 0.0), ReLU.scalar_derivative(3.0, 0.0, 0.0)
        (0.0, 1.0)
        """
        return 1.0 if x > 0 else 0.0

    @fill_doc
    def forward(self, X: np.ndarray) -> np.ndarray:
        """``max(X, 0)`` elementwise.

        Parameters
        ----------
        %(family_X)s

        Returns
        -------
        numpy.ndarray
            ``max(X, 0)``, a new array.

        Examples
        --------
        >>> ReLU().forward(np.array([-1.0, 2.0]))
        array([0., 2.])
        """
        return np.maximum(X, 0.0)

    @fill_doc
    def derivative(self, X: np.ndarray) -> np.ndarray:
        """``1[X > 0]`` elementwise, in ``X``'s dtype.

        Parameters
        ----------
        %(family_X)s

        Returns
        -------
        numpy.ndarray
            Zeros and ones, ``X``'s shape and dtype.

        Examples
        --------
        >>> ReLU().derivative(np.array([-1.0, 0.0, 2.0]))
        array([0., 0., 1.])
        """
        return (np.asarray(X) > 0).astype(np.asarray(X).dtype)

    @fill_doc
    def torch_forward(self, X: Any) -> Any:
        """``torch.relu(X)``.

        Parameters
        ----------
        %(family_torch_X)s

        Returns
        -------
        torch.Tensor
            ``max(X, 0)``.

        Examples
        --------
        >>> import torch
        >>> ReLU().torch_forward(torch.tensor([-1.0, 2.0]))
        tensor([0., 2.])
        """
        import torch

        return torch.relu(X)

    @fill_doc
    def torch_derivative(self, X: Any) -> Any:
        """``1[X > 0]`` in ``X``'s dtype (torch).

        Parameters
        ----------
        %(family_torch_X)s

        Returns
        -------
        torch.Tensor
            Zeros and ones, ``X``'s shape and dtype.

        Examples
        --------
        >>> import torch
        >>> ReLU().torch_derivative(torch.tensor([-1.0, 2.0]))
        tensor([0., 1.])
        """
        return (X > 0).to(X.dtype)

    @fill_doc
    def forward_(self, pre: np.ndarray, post: np.ndarray, zeros: np.ndarray, scratch: np.ndarray) -> None:
        """``post ← max(pre, 0)`` (``scratch`` unused).

        Parameters
        ----------
        %(family_forward_)s

        Returns
        -------
        None
            ``post`` is written in place.

        Examples
        --------
        >>> pre = np.array([-1.0, 2.0]); post = np.empty(2)
        >>> ReLU().forward_(pre, post, np.zeros(2), np.empty(2)); post
        array([0., 2.])
        """
        # against a zero *array*: numpy's maximum with a scalar operand runs ~5x slower (numpy 2.4)
        np.maximum(pre, zeros, out=post)

    @fill_doc
    def backprop_(
        self, G: np.ndarray, pre: np.ndarray, post: np.ndarray, scratch: np.ndarray, mask: np.ndarray
    ) -> None:
        """``G ← G ⊙ 1[post > 0]`` in place (read from the post-activation; ``mask`` holds the indicator).

        Parameters
        ----------
        %(family_backprop_)s

        Returns
        -------
        None
            ``G`` is written in place.

        Examples
        --------
        >>> G = np.array([5.0, 5.0]); post = np.array([0.0, 2.0])
        >>> ReLU().backprop_(G, post, post, np.empty(2), np.empty(2, dtype=bool)); G
        array([0., 5.])
        """
        # 1[H~ > 0] = 1[H > 0] from the post-activation, as a bool array (np.copyto(where=), putmask and
        # float masks from sign/heaviside were all slower than greater + multiply in numpy 2.4)
        np.greater(post, 0, out=mask)
        np.multiply(G, mask, out=G)


class Linear(Activation):
    """``σ(x) = x`` (the deep linear UFM), ``σ' = 1``."""

    name = "linear"
    code = 1

    @staticmethod
    @fill_doc
    def scalar(x: float, eps: float, inv: float) -> float:
        """The identity of one number.

        Parameters
        ----------
        %(family_scalar)s

        Returns
        -------
        float
            ``x``.

        Examples
        --------
        >>> Linear.scalar(-2.0, 0.0, 0.0)
        -2.0
        """
        return x

    @staticmethod
    @fill_doc
    def scalar_derivative(x: float, eps: float, inv: float) -> float:
        """σ' = 1 of one number.

        Parameters
        ----------
        %(family_scalar)s

        Returns
        -------
        float
            ``1.0``.

        Examples
        --------
        >>> Linear.scalar_derivative(-2.0, 0.0, 0.0)
        1.0
        """
        return 1.0

    @fill_doc
    def forward(self, X: np.ndarray) -> np.ndarray:
        """A copy of ``X`` (σ is the identity).

        Parameters
        ----------
        %(family_X)s

        Returns
        -------
        numpy.ndarray
            ``X``, copied.

        Examples
        --------
        >>> Linear().forward(np.array([-1.0, 2.0]))
        array([-1.,  2.])
        """
        return np.array(X, copy=True)

    @fill_doc
    def derivative(self, X: np.ndarray) -> np.ndarray:
        """Ones of ``X``'s shape and dtype.

        Parameters
        ----------
        %(family_X)s

        Returns
        -------
        numpy.ndarray
            ``np.ones_like(X)``.

        Examples
        --------
        >>> Linear().derivative(np.array([-1.0, 2.0]))
        array([1., 1.])
        """
        return np.ones_like(X)

    @fill_doc
    def torch_forward(self, X: Any) -> Any:
        """``X`` itself (not a copy).

        Parameters
        ----------
        %(family_torch_X)s

        Returns
        -------
        torch.Tensor
            ``X``.

        Examples
        --------
        >>> import torch
        >>> x = torch.tensor([-1.0, 2.0])
        >>> Linear().torch_forward(x) is x
        True
        """
        return X

    @fill_doc
    def torch_derivative(self, X: Any) -> Any:
        """Ones of ``X``'s shape and dtype (torch).

        Parameters
        ----------
        %(family_torch_X)s

        Returns
        -------
        torch.Tensor
            ``torch.ones_like(X)``.

        Examples
        --------
        >>> import torch
        >>> Linear().torch_derivative(torch.tensor([-1.0, 2.0]))
        tensor([1., 1.])
        """
        import torch

        return torch.ones_like(X)

    @fill_doc
    def forward_(self, pre: np.ndarray, post: np.ndarray, zeros: np.ndarray, scratch: np.ndarray) -> None:
        """``post ← pre`` (nothing to do when ``post`` is ``pre``).

        Parameters
        ----------
        %(family_forward_)s

        Returns
        -------
        None
            ``post`` is written in place.

        Examples
        --------
        >>> pre = np.array([-1.0, 2.0]); post = np.empty(2)
        >>> Linear().forward_(pre, post, np.zeros(2), np.empty(2)); post
        array([-1.,  2.])
        """
        if post is not pre:
            np.copyto(post, pre)

    @fill_doc
    def backprop_(
        self, G: np.ndarray, pre: np.ndarray, post: np.ndarray, scratch: np.ndarray, mask: np.ndarray
    ) -> None:
        """Nothing: σ' = 1 leaves ``G`` as it is.

        Parameters
        ----------
        %(family_backprop_)s

        Returns
        -------
        None
            ``G`` is written in place.

        Examples
        --------
        >>> G = np.array([5.0, 5.0])
        >>> Linear().backprop_(G, G, G, np.empty(2), np.empty(2, dtype=bool)); G
        array([5., 5.])
        """
        return None


class ReLUEps(Activation):
    """The relaxed ReLU σ_ε of Definition 7 (formula in the module docstring), ``eps > 0``."""

    name = "relu_eps"
    keeps_pre = True
    code = 2

    @staticmethod
    @fill_doc
    def scalar(x: float, eps: float, inv: float) -> float:
        """σ_ε of one number, piece by piece (the vectorised form below rounds differently, by ~1 ulp).

        Parameters
        ----------
        %(family_scalar)s

        Returns
        -------
        float
            ``σ_ε(x)``.

        Examples
        --------
        >>> ReLUEps.scalar(0.25, 0.5, 4.0), ReLUEps.scalar(2.0, 0.5, 4.0)
        (0.1875, 2.0)
        """
        if x <= 0:
            return 0.0
        if x >= eps:
            return x
        return x * x * (2.0 * eps - x) * inv

    @staticmethod
    @fill_doc
    def scalar_derivative(x: float, eps: float, inv: float) -> float:
        """σ_ε'(x) of one number, piece by piece.

        Parameters
        ----------
        %(family_scalar)s

        Returns
        -------
        float
            ``σ_ε'(x)``.

        Examples
        --------
        >>> ReLUEps.scalar_derivative(0.25, 0.5, 4.0), ReLUEps.scalar_derivative(2.0, 0.5, 4.0)
        (1.25, 1.0)
        """
        if x <= 0:
            return 0.0
        if x >= eps:
            return 1.0
        return x * (4.0 * eps - 3.0 * x) * inv

    def __init__(self, eps: float):
        self.e: float = float(eps)  # ε (typed float; ``eps`` is the shared optional attribute)
        self.eps = self.e

    @property
    def label(self) -> str:
        """``"relu_eps(ε)"`` (``ε`` in ``%g`` format).

        Returns
        -------
        str
            The label.

        Examples
        --------
        >>> ReLUEps(0.1).label
        'relu_eps(0.1)'
        """
        return f"relu_eps({self.e:g})"

    def __repr__(self) -> str:
        return f"ReLUEps(eps={self.e!r})"

    @fill_doc
    def forward(self, X: np.ndarray) -> np.ndarray:
        """σ_ε(X) elementwise, in ``X``'s float dtype.

        Parameters
        ----------
        %(family_X)s

        Returns
        -------
        numpy.ndarray
            ``c²(2ε − c)/ε² + max(X − ε, 0)`` with ``c = clip(X, 0, ε)``.

        Examples
        --------
        >>> ReLUEps(0.5).forward(np.array([-1.0, 0.25, 2.0]))
        array([0.    , 0.1875, 2.    ])
        """
        X = np.asarray(X)
        e = X.dtype.type(self.e) if X.dtype.kind == "f" else self.e
        c = np.clip(X, 0, e)
        return c * c * (2 * e - c) / (e * e) + np.maximum(X - e, 0)

    @fill_doc
    def derivative(self, X: np.ndarray) -> np.ndarray:
        """σ_ε'(X) elementwise.

        Parameters
        ----------
        %(family_X)s

        Returns
        -------
        numpy.ndarray
            ``c(4ε − 3c)/ε²`` with ``c = clip(X, 0, ε)``.

        Examples
        --------
        >>> ReLUEps(0.5).derivative(np.array([-1.0, 0.25, 2.0]))
        array([0.  , 1.25, 1.  ])
        """
        X = np.asarray(X)
        e = X.dtype.type(self.e) if X.dtype.kind == "f" else self.e
        c = np.clip(X, 0, e)
        return c * (4 * e - 3 * c) / (e * e)

    @fill_doc
    def torch_forward(self, X: Any) -> Any:
        """σ_ε(X) elementwise (torch).

        Parameters
        ----------
        %(family_torch_X)s

        Returns
        -------
        torch.Tensor
            ``σ_ε(X)``.

        Examples
        --------
        >>> import torch
        >>> ReLUEps(0.5).torch_forward(torch.tensor([-1.0, 0.25, 2.0]))
        tensor([0.0000, 0.1875, 2.0000])
        """
        import torch

        e = self.e
        c = X.clamp(0.0, e)
        return c * c * (2 * e - c) / (e * e) + torch.relu(X - e)

    @fill_doc
    def torch_derivative(self, X: Any) -> Any:
        """σ_ε'(X) elementwise (torch).

        Parameters
        ----------
        %(family_torch_X)s

        Returns
        -------
        torch.Tensor
            ``σ_ε'(X)``.

        Examples
        --------
        >>> import torch
        >>> ReLUEps(0.5).torch_derivative(torch.tensor([-1.0, 0.25, 2.0]))
        tensor([0.0000, 1.2500, 1.0000])
        """
        e = self.e
        c = X.clamp(0.0, e)
        return c * (4 * e - 3 * c) / (e * e)

    @fill_doc
    def forward_(self, pre: np.ndarray, post: np.ndarray, zeros: np.ndarray, scratch: np.ndarray) -> None:
        """``post ← σ_ε(pre)`` with ``out=`` buffers (``pre`` is kept: ``keeps_pre`` is True).

        Parameters
        ----------
        %(family_forward_)s

        Returns
        -------
        None
            ``post`` is written in place.

        Examples
        --------
        >>> pre = np.array([-1.0, 0.25, 2.0]); post = np.empty(3)
        >>> ReLUEps(0.5).forward_(pre, post, np.zeros(3), np.empty(3)); post
        array([0.    , 0.1875, 2.    ])
        """
        t = pre.dtype.type
        e = t(self.e)
        # post = c²(2ε − c)/ε² with c = clip(pre, 0, ε); then += max(pre − ε, 0)
        np.clip(pre, zeros, e, out=post)  # c
        np.multiply(post, t(-1.0 / (self.e * self.e)), out=scratch)  # −c/ε²
        np.add(scratch, t(2.0 / self.e), out=scratch)  # (2ε − c)/ε²
        np.multiply(scratch, post, out=scratch)
        np.multiply(scratch, post, out=post)  # c²(2ε − c)/ε²
        np.subtract(pre, e, out=scratch)
        np.maximum(scratch, zeros, out=scratch)
        np.add(post, scratch, out=post)

    @fill_doc
    def backprop_(
        self, G: np.ndarray, pre: np.ndarray, post: np.ndarray, scratch: np.ndarray, mask: np.ndarray
    ) -> None:
        """``G ← G ⊙ σ_ε'(pre)`` in place (``mask`` unused).

        Parameters
        ----------
        %(family_backprop_)s

        Returns
        -------
        None
            ``G`` is written in place.

        Examples
        --------
        >>> G = np.ones(3); pre = np.array([-1.0, 0.25, 2.0])
        >>> ReLUEps(0.5).backprop_(G, pre, np.empty(3), np.empty(3), np.empty(3, dtype=bool)); G
        array([0.  , 1.25, 1.  ])
        """
        t = pre.dtype.type
        np.clip(pre, t(0.0), t(self.e), out=scratch)  # c
        np.multiply(G, scratch, out=G)  # G c
        np.multiply(scratch, t(-3.0 / (self.e * self.e)), out=scratch)
        np.add(scratch, t(4.0 / self.e), out=scratch)  # (4ε − 3c)/ε²
        np.multiply(G, scratch, out=G)  # G ⊙ σ_ε'(pre)
