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

__all__ = ["ACTIVATIONS", "Activation", "Linear", "ReLU", "ReLUEps"]

ACTIVATIONS = ("relu", "linear", "relu_eps")


class Activation:
    """Base class: an elementwise activation σ with its derivative (numpy, torch, in-place kernel hooks)."""

    name: str = ""
    keeps_pre: bool = False
    eps: float | None = None
    code: int = -1  # the compiled kernel's switch (:mod:`deepcollapse.dufm.compiled`)

    @staticmethod
    def scalar(x: float, eps: float, inv: float) -> float:
        """σ(x) of one number (plain Python, compiled by the numba kernel); ``eps`` and ``inv = 1/ε²`` are
        used by σ_ε only (a multiplication by the precomputed ``inv``: a division per element costs more
        than the rest of the pass)."""
        raise NotImplementedError

    @staticmethod
    def scalar_derivative(x: float, eps: float, inv: float) -> float:
        """σ'(x) of one number."""
        raise NotImplementedError

    @property
    def label(self) -> str:
        return self.name

    def forward(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def derivative(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def torch_forward(self, X: Any) -> Any:
        raise NotImplementedError

    def torch_derivative(self, X: Any) -> Any:
        raise NotImplementedError

    def forward_(self, pre: np.ndarray, post: np.ndarray, zeros: np.ndarray, scratch: np.ndarray) -> None:
        """``post ← σ(pre)``; ``zeros`` is an all-zero array of ``pre``'s shape, ``scratch`` a spare one."""
        np.copyto(post, self.forward(pre))

    def backprop_(
        self, G: np.ndarray, pre: np.ndarray, post: np.ndarray, scratch: np.ndarray, mask: np.ndarray
    ) -> None:
        """``G ← G ⊙ σ'(pre)`` in place (``pre`` may be ``post`` when ``keeps_pre`` is False); ``scratch``
        (float) and ``mask`` (bool) are spare arrays of ``G``'s shape."""
        np.multiply(G, self.derivative(pre), out=G)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ReLU(Activation):
    """``σ(x) = max(x, 0)``, ``σ'(x) = 1[x > 0]``."""

    name = "relu"
    code = 0

    @staticmethod
    def scalar(x: float, eps: float, inv: float) -> float:
        """σ of one number (plain Python; the compiled kernel compiles it).  NaN stays NaN."""
        return 0.0 if x <= 0 else x

    @staticmethod
    def scalar_derivative(x: float, eps: float, inv: float) -> float:
        return 1.0 if x > 0 else 0.0

    def forward(self, X: np.ndarray) -> np.ndarray:
        return np.maximum(X, 0.0)

    def derivative(self, X: np.ndarray) -> np.ndarray:
        return (np.asarray(X) > 0).astype(np.asarray(X).dtype)

    def torch_forward(self, X: Any) -> Any:
        import torch

        return torch.relu(X)

    def torch_derivative(self, X: Any) -> Any:
        return (X > 0).to(X.dtype)

    def forward_(self, pre: np.ndarray, post: np.ndarray, zeros: np.ndarray, scratch: np.ndarray) -> None:
        # against a zero *array*: numpy's maximum with a scalar operand runs ~5x slower (numpy 2.4)
        np.maximum(pre, zeros, out=post)

    def backprop_(
        self, G: np.ndarray, pre: np.ndarray, post: np.ndarray, scratch: np.ndarray, mask: np.ndarray
    ) -> None:
        # 1[H~ > 0] = 1[H > 0] from the post-activation, as a bool array (np.copyto(where=), putmask and
        # float masks from sign/heaviside were all slower than greater + multiply in numpy 2.4)
        np.greater(post, 0, out=mask)
        np.multiply(G, mask, out=G)


class Linear(Activation):
    """``σ(x) = x`` (the deep linear UFM), ``σ' = 1``."""

    name = "linear"
    code = 1

    @staticmethod
    def scalar(x: float, eps: float, inv: float) -> float:
        return x

    @staticmethod
    def scalar_derivative(x: float, eps: float, inv: float) -> float:
        return 1.0

    def forward(self, X: np.ndarray) -> np.ndarray:
        return np.array(X, copy=True)

    def derivative(self, X: np.ndarray) -> np.ndarray:
        return np.ones_like(X)

    def torch_forward(self, X: Any) -> Any:
        return X

    def torch_derivative(self, X: Any) -> Any:
        import torch

        return torch.ones_like(X)

    def forward_(self, pre: np.ndarray, post: np.ndarray, zeros: np.ndarray, scratch: np.ndarray) -> None:
        if post is not pre:
            np.copyto(post, pre)

    def backprop_(
        self, G: np.ndarray, pre: np.ndarray, post: np.ndarray, scratch: np.ndarray, mask: np.ndarray
    ) -> None:
        return None


class ReLUEps(Activation):
    """The relaxed ReLU σ_ε of Definition 7 (formula in the module docstring), ``eps > 0``."""

    name = "relu_eps"
    keeps_pre = True
    code = 2

    @staticmethod
    def scalar(x: float, eps: float, inv: float) -> float:
        """σ_ε of one number, piece by piece (the vectorised form below rounds differently, by ~1 ulp)."""
        if x <= 0:
            return 0.0
        if x >= eps:
            return x
        return x * x * (2.0 * eps - x) * inv

    @staticmethod
    def scalar_derivative(x: float, eps: float, inv: float) -> float:
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
        return f"relu_eps({self.e:g})"

    def __repr__(self) -> str:
        return f"ReLUEps(eps={self.e!r})"

    def forward(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X)
        e = X.dtype.type(self.e) if X.dtype.kind == "f" else self.e
        c = np.clip(X, 0, e)
        return c * c * (2 * e - c) / (e * e) + np.maximum(X - e, 0)

    def derivative(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X)
        e = X.dtype.type(self.e) if X.dtype.kind == "f" else self.e
        c = np.clip(X, 0, e)
        return c * (4 * e - 3 * c) / (e * e)

    def torch_forward(self, X: Any) -> Any:
        import torch

        e = self.e
        c = X.clamp(0.0, e)
        return c * c * (2 * e - c) / (e * e) + torch.relu(X - e)

    def torch_derivative(self, X: Any) -> Any:
        e = self.e
        c = X.clamp(0.0, e)
        return c * (4 * e - 3 * c) / (e * e)

    def forward_(self, pre: np.ndarray, post: np.ndarray, zeros: np.ndarray, scratch: np.ndarray) -> None:
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

    def backprop_(
        self, G: np.ndarray, pre: np.ndarray, post: np.ndarray, scratch: np.ndarray, mask: np.ndarray
    ) -> None:
        t = pre.dtype.type
        np.clip(pre, t(0.0), t(self.e), out=scratch)  # c
        np.multiply(G, scratch, out=G)  # G c
        np.multiply(scratch, t(-3.0 / (self.e * self.e)), out=scratch)
        np.add(scratch, t(4.0 / self.e), out=scratch)  # (4ε − 3c)/ε²
        np.multiply(G, scratch, out=G)  # G ⊙ σ_ε'(pre)
