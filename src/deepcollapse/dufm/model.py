"""The batched L-DUFM (deep unconstrained features model, 2024 paper eq. (1)) and its configuration.

One problem, ``R`` independent runs stacked along a leading *run* dimension:

    H1 (R, d_1, N)    W_l (R, d_{l+1}, d_l)  for l = 1 .. L-1    W_L (R, K, d_L)

    H~_{l+1} = W_l H_l,   H_{l+1} = ReLU(H~_{l+1}),   output W_L H_L  (K, N),   Y = I_K ⊗ 1_n^T

    loss = 1/(2N) ‖W_L H_L − Y‖_F²  +  Σ_l (λ_{W_l}/2) ‖W_l‖_F²  +  (λ_{H_1}/2) ‖H_1‖_F²          (eq. (1))

The loss and the activation are options (``DUFMConfig.loss/activation/eps``, :mod:`deepcollapse.family`):
``ce`` replaces the fit term by the mean softmax cross-entropy, ``linear``/``relu_eps`` replace ReLU; every
function below takes ``family=None`` (= MSE + ReLU, eq. (1)).

Samples are ordered by class (``labels = arange(K).repeat(n)``), ``N = K n``.  Run ``r`` is initialised from
its own ``torch.Generator`` seeded with ``seeds[r]`` (``seed + r`` by default), drawing ``H1, W_1, ...,
W_L`` in that order, so a run is the same whatever the number of runs it is batched with.

Gradients (``ε = (W_L H_L − Y)/N``, ``D_l = 1[H~_l > 0]``, ``⊙`` elementwise; ReLU'(0) := 0; any family:
``ε = residual(W_L H_L, Y)/N`` and ``D_l = σ'(H~_l)``):

    G_L = ε,   ∂W_L = G_L H_L^T + λ_{W_L} W_L
    G_l = D_l ⊙ (W_l^T G_{l+1})                       (l = L .. 2; G_{l+1} is the gradient w.r.t. H~_{l+1})
    ∂W_l = G_{l+1} H_l^T + λ_{W_l} W_l,   ∂H_1 = W_1^T G_2 + λ_{H_1} H_1

:func:`analytic_gradients` implements them with batched matmuls (``torch.bmm``/``baddbmm``),
:func:`autograd_gradients` differentiates :func:`objective` with autograd; the fast CPU kernel is
:mod:`deepcollapse.dufm.kernel`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from deepcollapse._core.docs import fill_doc
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.family import Family, get_family
from deepcollapse.theory import objective_torch as torch_eq1

__all__ = [
    "DUFMParams",
    "analytic_gradients",
    "autograd_gradients",
    "forward",
    "init_params",
    "init_run",
    "labels",
    "objective",
    "targets",
]


@dataclass
class DUFMParams:
    """Batched parameters: ``H1 (R, d_1, N)``, ``weights = [W_1 (R, d_2, d_1), ..., W_L (R, K, d_L)]``."""

    H1: torch.Tensor
    weights: list[torch.Tensor]

    def tensors(self) -> list[torch.Tensor]:
        """``[H1, W_1, ..., W_L]``.

        Returns
        -------
        list of torch.Tensor
            The parameters, not copied.

        Examples
        --------
        >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
        >>> [tuple(t.shape) for t in init_params(c).tensors()]
        [(2, 3, 2), (2, 3, 3), (2, 2, 3)]
        """
        return [self.H1, *self.weights]


def labels(classes: int, n: int) -> torch.Tensor:
    """``arange(K).repeat_interleave(n)``: samples ordered by class.

    Parameters
    ----------
    classes : int
        ``K``.
    n : int
        Samples per class.

    Returns
    -------
    torch.Tensor, (K n,)
        The labels, int64.

    Examples
    --------
    >>> labels(2, 2)
    tensor([0, 0, 1, 1])
    """
    return torch.arange(classes).repeat_interleave(n)


def targets(classes: int, n: int, dtype: torch.dtype = torch.float64, device: Any = "cpu") -> torch.Tensor:
    """``Y = I_K ⊗ 1_n^T`` of shape ``(K, N)``.

    Parameters
    ----------
    classes : int
        ``K``.
    n : int
        Samples per class.
    dtype : torch.dtype, default torch.float64
        The dtype of the result.
    device : str or torch.device, default "cpu"
        Where the result lives.

    Returns
    -------
    torch.Tensor, (K, K n)
        One-hot targets.

    Examples
    --------
    >>> targets(2, 1)
    tensor([[1., 0.],
            [0., 1.]], dtype=torch.float64)
    """
    return torch.kron(
        torch.eye(classes, dtype=dtype, device=device), torch.ones(1, n, dtype=dtype, device=device)
    )


@fill_doc
def init_run(config: DUFMConfig, seed: int) -> list[torch.Tensor]:
    """``[H1, W_1, ..., W_L]`` of one run from ``torch.Generator().manual_seed(seed)`` (CPU, drawn in
    this order with ``config.init`` and stds ``config.init_scale``), in ``config.dtype`` on the CPU.

    Parameters
    ----------
    %(dufm_config)s
    seed : int
        The run's seed.

    Returns
    -------
    list of torch.Tensor
        ``L + 1`` tensors of the shapes ``config.shapes``.

    Examples
    --------
    >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
    >>> [tuple(t.shape) for t in init_run(c, 0)]
    [(3, 2), (3, 3), (2, 3)]
    """
    g = torch.Generator().manual_seed(int(seed))
    out = []
    for shape, std in zip(config.shapes, config.init_scale):
        if config.init == "normal":
            t = torch.randn(shape, generator=g, dtype=config.torch_dtype) * std
        else:  # uniform on [-√3 std, √3 std]
            t = (torch.rand(shape, generator=g, dtype=config.torch_dtype) * 2.0 - 1.0) * (
                math.sqrt(3.0) * std
            )
        out.append(t)
    return out


@fill_doc
def init_params(config: DUFMConfig) -> DUFMParams:
    """Stack :func:`init_run` of every seed in ``config.run_seeds`` along a leading run dimension (CPU).

    Parameters
    ----------
    %(dufm_config)s

    Returns
    -------
    DUFMParams
        ``H1 (R, d_1, N)`` and the weights, ``R = len(config.run_seeds)``.

    Examples
    --------
    >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
    >>> tuple(init_params(c).H1.shape)
    (2, 3, 2)
    """
    per_run = [init_run(config, s) for s in config.run_seeds]
    stacked = [torch.stack([p[i] for p in per_run]) for i in range(config.layers + 1)]
    return DUFMParams(H1=stacked[0], weights=stacked[1:])


def _fam(family: Family | None) -> Family:
    return get_family() if family is None else family


@fill_doc
def forward(
    H1: torch.Tensor, weights: Sequence[torch.Tensor], family: Family | None = None
) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
    """Batched forward pass: ``(pre, post, out)`` with ``pre = [H~_2..H~_L]``, ``post = [H_1..H_L]`` (each
    ``(R, d_l, N)``, ``H_l = σ(H~_l)`` with the family's activation, ReLU by default) and ``out = W_L H_L``
    ``(R, K, N)``: the torch eq. (1)'s :func:`deepcollapse.theory.objective_torch.forward`.

    Parameters
    ----------
    H1 : torch.Tensor, (R, d_1, N)
        The features of the ``R`` runs.
    weights : sequence of torch.Tensor
        ``W_1 (R, d_2, d_1), ..., W_L (R, K, d_L)``.
    %(dufm_family)s

    Returns
    -------
    pre : list of torch.Tensor
        ``H~_2 .. H~_L``.
    post : list of torch.Tensor
        ``H_1 .. H_L``.
    out : torch.Tensor, (R, K, N)
        ``W_L H_L``.

    Examples
    --------
    >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
    >>> p = init_params(c); pre, post, out = forward(p.H1, p.weights)
    >>> len(pre), len(post), tuple(out.shape)
    (1, 2, (2, 2, 2))
    """
    return torch_eq1.forward(H1, weights, family)


@fill_doc
def objective(
    H1: torch.Tensor,
    weights: Sequence[torch.Tensor],
    Y: torch.Tensor,
    lam_h: float,
    lam_w: Sequence[float],
    family: Family | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Eq. (1) per run: ``(total, fit, reg)``, each ``(R,)``; ``Y (K, N)``.  ``fit`` is the family's loss
    (``1/(2N) ‖W_L H_L − Y‖_F²`` by default, mean softmax cross-entropy for ``ce``): the one torch eq. (1),
    :func:`deepcollapse.theory.objective_torch.objective`.

    Parameters
    ----------
    %(dufm_eq1)s
    %(dufm_family)s

    Returns
    -------
    total, fit, reg : torch.Tensor, (R,)
        The loss of each run, its fit term and its regularisation (``total = fit + reg``).

    Examples
    --------
    >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
    >>> p = init_params(c); total, fit, reg = objective(p.H1, p.weights, targets(2, 1), 1e-3, [1e-3, 1e-3])
    >>> tuple(total.shape), bool(torch.allclose(total, fit + reg))
    ((2,), True)
    """
    total, fit, reg = torch_eq1.objective(H1, weights, Y, lam_h, lam_w, family)
    return total, fit, reg


@fill_doc
def autograd_gradients(
    H1: torch.Tensor,
    weights: Sequence[torch.Tensor],
    Y: torch.Tensor,
    lam_h: float,
    lam_w: Sequence[float],
    family: Family | None = None,
) -> list[torch.Tensor]:
    """``[∂H1, ∂W_1 .. ∂W_L]`` of ``Σ_r loss_r`` (runs independent), torch autograd of :func:`objective`.

    Parameters
    ----------
    %(dufm_eq1)s
    %(dufm_family)s

    Returns
    -------
    list of torch.Tensor
        ``L + 1`` gradients, the parameters' shapes.

    Examples
    --------
    >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
    >>> p = init_params(c); g = autograd_gradients(p.H1, p.weights, targets(2, 1), 1e-3, [1e-3, 1e-3])
    >>> [tuple(t.shape) for t in g]
    [(2, 3, 2), (2, 3, 3), (2, 2, 3)]
    """
    params = [t.detach().requires_grad_(True) for t in (H1, *weights)]
    total, _, _ = objective(params[0], params[1:], Y, lam_h, lam_w, family)
    return list(torch.autograd.grad(total.sum(), params))


@fill_doc
def analytic_gradients(
    H1: torch.Tensor,
    weights: Sequence[torch.Tensor],
    Y: torch.Tensor,
    lam_h: float,
    lam_w: Sequence[float],
    scale: float | torch.Tensor = 1.0,
    family: Family | None = None,
) -> list[torch.Tensor]:
    """``[∂H1, ∂W_1, ..., ∂W_L]`` of eq. (1) by the hand-written backward in the module docstring (batched
    ``bmm``/``baddbmm``), for any family: ``G_L = residual(out, Y)/N``, ``D_l = σ'(H~_l)``.  ``scale``
    multiplies the whole gradient (the trainer passes ``lr``): a number, or a one-element tensor on the
    device (read there, without a host synchronisation: the graph-safe step of
    :mod:`deepcollapse.dufm.torch_engine`; the regularisation terms are then added outside the GEMM).

    Parameters
    ----------
    %(dufm_eq1)s
    scale : float or torch.Tensor, default 1.0
        Multiplies the whole gradient (a number or a one-element tensor).
    %(dufm_family)s

    Returns
    -------
    list of torch.Tensor
        ``L + 1`` gradients, the parameters' shapes (equal to :func:`autograd_gradients` up to rounding).

    Examples
    --------
    >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
    >>> p = init_params(c); Y = targets(2, 1)
    >>> a = analytic_gradients(p.H1, p.weights, Y, 1e-3, [1e-3, 1e-3])
    >>> b = autograd_gradients(p.H1, p.weights, Y, 1e-3, [1e-3, 1e-3])
    >>> all(torch.allclose(x, y) for x, y in zip(a, b))
    True
    """
    fam = _fam(family)
    N = H1.shape[-1]
    pre, post, out = forward(H1, weights, fam)
    G = fam.loss.torch_residual(out, Y) * (scale / N)  # (R, K, N)
    L = len(weights)
    grads: list[torch.Tensor] = [torch.empty(0)] * (L + 1)
    for l in range(L, 0, -1):  # weight W_l (index l-1) maps H_l (post[l-1]) to the next layer
        W = weights[l - 1]
        if isinstance(scale, torch.Tensor):
            grads[l] = torch.baddbmm(W * (scale * lam_w[l - 1]), G, post[l - 1].transpose(1, 2))
        else:
            grads[l] = torch.baddbmm(W, G, post[l - 1].transpose(1, 2), beta=scale * lam_w[l - 1])
        dH = torch.bmm(W.transpose(1, 2), G)  # (R, d_l, N)
        if l > 1:
            G = dH * fam.activation.torch_derivative(pre[l - 2])  # D_l ⊙ (W_l^T G_{l+1})
        elif isinstance(scale, torch.Tensor):
            grads[0] = dH.addcmul_(H1, scale * lam_h)
        else:
            grads[0] = dH.add_(H1, alpha=scale * lam_h)
    return grads
