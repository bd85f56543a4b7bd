"""Eq. (1) on torch tensors: the one torch form, beside the numpy float64 form of :mod:`.objective`.

The same objective as :func:`deepcollapse.theory.objective.objective_from_output` (module docstring there:
the model families' fit terms and activations), written once for torch so that autograd can differentiate
it: the DUFM trainer's torch engine (:func:`deepcollapse.dufm.model.objective`, its autograd gradients and
its best loss), the landscape's Hessian-vector products (:func:`deepcollapse.landscape.piecewise.
piece_objective`) and the networks' weight-decay term (:func:`deepcollapse.nets.step.regularisation`) all
end here.  Tensors may carry leading batch dimensions (the trainer's run dimension ``R``): every norm is
taken over the last two dimensions, so an unbatched point gives 0-d tensors and a batch one value per run.

    H~_{l+1} = W_l H_l,   H_{l+1} = σ(H~_{l+1})     (or D_l ⊙ H~_{l+1} for a fixed activation pattern D)
    total = fit(W_L H_L, Y) + [(λ_{H_1}/2) ‖H_1‖_F² + Σ_l (λ_{W_l}/2) ‖W_l‖_F²]      (fit + reg)

This module never imports torch (the theory package stays torch-free, and ``import deepcollapse`` loads no
torch): it only calls the tensors' own methods, and the fit term is the family's
:meth:`~deepcollapse.family.losses.Loss.torch_value`.  Its values equal the numpy form to float64 rounding
(``tests/theory/test_objective_torch.py``: 1e-12 over every family on explicit matrices).

Example
-------
>>> import numpy as np, torch
>>> from deepcollapse.family import get_family
>>> from deepcollapse.theory.objective import dufm_objective
>>> from deepcollapse.theory.objective_torch import objective
>>> rng = np.random.default_rng(0)
>>> H1, W1, W2 = rng.standard_normal((3, 4)), rng.standard_normal((3, 3)), rng.standard_normal((2, 3))
>>> Y = torch.tensor([[1.0, 1, 0, 0], [0, 0, 1, 1]], dtype=torch.float64)
>>> parts = objective(torch.tensor(H1), [torch.tensor(W1), torch.tensor(W2)], Y, 0.1, [0.2, 0.3])
>>> bool(abs(float(parts.total) - dufm_objective(H1, [W1, W2], 0.1, [0.2, 0.3]).total) < 1e-12)
True
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from deepcollapse.family import Family, Loss, get_family

__all__ = ["TorchObjective", "forward", "objective", "objective_from_output", "penalty"]

Tensor = Any  # a torch.Tensor (not imported here: the theory package never imports torch)


class TorchObjective(NamedTuple):
    """Eq. (1) as tensors: ``total = fit + reg`` (0-d, or one value per run of a batch)."""

    total: Tensor
    fit: Tensor
    reg: Tensor


def penalty(lam: float, tensors: Iterable[Tensor], dim: tuple[int, ...] | None = None) -> Tensor:
    """``(λ/2) Σ_T ‖T‖_F²``: one regularisation term of eq. (1) (``tensors`` sharing one ``λ``).

    Parameters
    ----------
    lam : float
        ``λ``.
    tensors : iterable of torch.Tensor
        At least one tensor.
    dim : tuple of int, optional
        The dimensions of each norm (e.g. ``(-2, -1)``: one norm per leading index); default all.

    Returns
    -------
    torch.Tensor
        ``0.5 · λ · (‖T_1‖² + ‖T_2‖² + ...)``, the squares summed left to right.

    Examples
    --------
    >>> import torch
    >>> float(penalty(0.5, [torch.ones(2, 2), torch.ones(3)]))
    1.75
    """
    total: Tensor = None
    for T in tensors:
        sq = (T**2).sum() if dim is None else (T**2).sum(dim=dim)
        total = sq if total is None else total + sq
    if total is None:
        raise ValueError("penalty needs at least one tensor (tensors is empty).")
    return 0.5 * lam * total


def forward(
    H1: Tensor,
    weights: Sequence[Tensor],
    family: Family | None = None,
    masks: Sequence[Tensor] | None = None,
) -> tuple[list[Tensor], list[Tensor], Tensor]:
    """Forward pass: ``(pre, post, out)``: ``pre = [H~_2..H~_L]``, ``post = [H_1..H_L]``, ``out = W_L H_L``.

    Parameters
    ----------
    H1 : torch.Tensor, shape (..., d_1, N)
        Features, columns = samples (leading dimensions: a batch of runs).
    weights : sequence of torch.Tensor
        ``[W_1 (..., d_2, d_1), ..., W_L (..., K, d_L)]``.
    family : Family, optional
        Its activation's :meth:`torch_forward` is σ (default MSE + ReLU).
    masks : sequence of torch.Tensor, optional
        ``D_2 .. D_L`` (0/1, or relaxed in [0, 1]): ``H_{l+1} = D_l ⊙ H~_{l+1}`` instead of σ (the smooth
        piece of a fixed activation pattern, :mod:`deepcollapse.landscape.piecewise`).

    Returns
    -------
    pre : list of torch.Tensor
        ``[H~_2, ..., H~_L]``.
    post : list of torch.Tensor
        ``[H_1, H_2, ..., H_L]``.
    out : torch.Tensor, shape (..., K, N)
        ``W_L H_L``.

    Examples
    --------
    >>> import torch
    >>> _, post, out = forward(torch.ones(2, 3), [-torch.eye(2), torch.ones(1, 2)])
    >>> float(post[1].abs().sum()), float(out.sum())
    (0.0, 0.0)
    """
    sigma = (family or get_family()).activation.torch_forward
    H = H1
    pre: list[Tensor] = []
    post = [H]
    for l, W in enumerate(weights[:-1]):
        Ht = W @ H  # (..., d_{l+1}, N)
        pre.append(Ht)
        H = sigma(Ht) if masks is None else Ht * masks[l]
        post.append(H)
    return pre, post, weights[-1] @ H


def objective_from_output(
    out: Tensor,
    Y: Tensor,
    H1: Tensor,
    weights: Sequence[Tensor],
    lam_h: float,
    lam_w: Sequence[float],
    loss: Loss,
) -> TorchObjective:
    """Eq. (1) from the output ``W_L H_L``: the one place its torch value is added up.

    ``fit = loss.torch_value(out, Y)``; ``reg = (λ_{H_1}/2)‖H_1‖² + Σ_l (λ_{W_l}/2)‖W_l‖²`` summed in that
    order (norms over the last two dimensions); ``total = fit + reg``.  The torch twin of
    :func:`deepcollapse.theory.objective.objective_from_output`.

    Parameters
    ----------
    out : torch.Tensor, shape (..., K, N)
        ``W_L H_L``.
    Y : torch.Tensor, shape (K, N)
        One-hot targets.
    H1 : torch.Tensor, shape (..., d_1, N)
        The features.
    weights : sequence of torch.Tensor
        ``W_1 .. W_L``.
    lam_h : float
        ``λ_{H_1}``.
    lam_w : sequence of float
        ``λ_{W_1} .. λ_{W_L}``.
    loss : Loss
        The fit term (:attr:`deepcollapse.family.Family.loss`).

    Returns
    -------
    TorchObjective
        ``total``, ``fit``, ``reg`` (0-d, or shape ``(...)`` for a batch).

    Examples
    --------
    >>> import torch
    >>> from deepcollapse.family import get_family
    >>> Y = torch.eye(2, dtype=torch.float64)
    >>> zero = torch.zeros(2, 2, dtype=torch.float64)
    >>> float(objective_from_output(zero, Y, zero, [zero], 1.0, [1.0], get_family().loss).total)
    0.5
    """
    fit = loss.torch_value(out, Y)
    reg = penalty(lam_h, [H1], dim=(-2, -1))
    for lam, W in zip(lam_w, weights):
        reg = reg + penalty(lam, [W], dim=(-2, -1))
    return TorchObjective(fit + reg, fit, reg)


def objective(
    H1: Tensor,
    weights: Sequence[Tensor],
    Y: Tensor,
    lam_h: float,
    lam_w: Sequence[float],
    family: Family | None = None,
    masks: Sequence[Tensor] | None = None,
) -> TorchObjective:
    """Eq. (1) of the family at ``(H1, weights)``: :func:`objective_from_output` of :func:`forward`.

    Parameters
    ----------
    H1 : torch.Tensor, shape (..., d_1, N)
        Features, columns = samples ordered as ``Y``'s.
    weights : sequence of torch.Tensor
        ``[W_1, ..., W_L]``.
    Y : torch.Tensor, shape (K, N)
        One-hot targets.
    lam_h : float
        ``λ_{H_1}``.
    lam_w : sequence of float
        ``λ_{W_1} .. λ_{W_L}``.
    family : Family, optional
        Loss and activation (default MSE + ReLU, eq. (1)).
    masks : sequence of torch.Tensor, optional
        A fixed activation pattern (:func:`forward`): the smooth piece ``f_D`` instead of ``f``.

    Returns
    -------
    TorchObjective
        ``total``, ``fit``, ``reg``.

    Examples
    --------
    >>> import torch
    >>> Y = torch.eye(2, dtype=torch.float64)
    >>> zero = torch.zeros(2, 2, dtype=torch.float64)
    >>> float(objective(zero, [zero, zero], Y, 0.1, [0.1, 0.1]).total)
    0.5
    """
    fam = family or get_family()
    _, _, out = forward(H1, weights, fam, masks)
    return objective_from_output(out, Y, H1, weights, lam_h, lam_w, fam.loss)
