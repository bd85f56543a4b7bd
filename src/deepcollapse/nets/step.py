"""The training objective and one optimisation step of a network run.

Owns the pure functions of an epoch: :func:`lr_at` (the learning rate of epoch ``e``, a pure function of
``e``), :func:`epoch_order` (the data order of epoch ``e``: ``randperm(N)`` from a generator seeded with
``seed · 1_000_003 + e``, so it does not depend on how many epochs ran in this process), :func:`fit_loss` (MSE
to one-hot, summed or averaged over the outputs, or cross-entropy), :func:`regularisation` (``dufm``,
``standard`` or ``none``, coupled or decoupled weight decay; see :mod:`deepcollapse.nets.config`) and
:func:`train_step`, the one optimisation step that the loop of :mod:`deepcollapse.nets.train`, the benchmark
and the GPU parity test all call (``amp`` autocast and loss scaling, channels-last batches as
:func:`~deepcollapse.nets.build.channels_last_on` says).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.nn import functional as F

from deepcollapse.nets.build import channels_last_on, decayed_parameters
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.head import HeadNetwork
from deepcollapse.theory.objective_torch import penalty

__all__ = [
    "epoch_order",
    "feature_penalty",
    "fit_loss",
    "lr_at",
    "regularisation",
    "train_step",
    "weight_penalty",
]


def lr_at(config: NetConfig, epoch: int) -> float:
    """Learning rate of epoch ``epoch`` (1-based).

    ``constant``: ``lr``; ``multistep``: ``lr · lr_decay^m`` with ``m`` the number of milestones ``f`` with
    ``epoch > round(f · epochs)``; ``cosine``: ``lr · (1 + cos(π (epoch − 1) / epochs)) / 2``.

    Parameters
    ----------
    config : NetConfig
        ``lr``, ``lr_schedule``, ``lr_milestones``, ``lr_decay``, ``epochs``.
    epoch : int
        The epoch, 1-based.

    Returns
    -------
    float
        The learning rate.

    Examples
    --------
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(epochs=4, lr=0.1, lr_schedule="cosine")
    >>> [round(lr_at(config, e), 4) for e in range(1, 5)]
    [0.1, 0.0854, 0.05, 0.0146]
    """
    if config.lr_schedule == "constant":
        return config.lr
    if config.lr_schedule == "multistep":
        m = sum(epoch > round(f * config.epochs) for f in config.lr_milestones)
        return config.lr * config.lr_decay**m
    return config.lr * 0.5 * (1.0 + math.cos(math.pi * (epoch - 1) / config.epochs))


def fit_loss(config: NetConfig, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``mse``: ``(1/(2B)) Σ_i ‖out_i − e_{y_i}‖²`` (``mse_reduction: sum``) or ``(1/(BK)) Σ_{i,k} (out_ik −
    e_{y_i,k})²`` (``mean``: ``torch.nn.MSELoss``); ``ce``: mean cross-entropy.

    Parameters
    ----------
    config : NetConfig
        ``loss``, ``mse_reduction``.
    out : torch.Tensor
        The outputs ``(B, K)``.
    y : torch.Tensor
        The labels ``(B,)``, int64.

    Returns
    -------
    torch.Tensor
        The 0-d loss.

    Examples
    --------
    >>> import torch
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(dataset="digits", classes=[0, 1])
    >>> y = torch.tensor([0, 1])
    >>> float(fit_loss(config, torch.zeros(2, 2), y)), round(float(fit_loss(config.replace(loss="ce"),
    ...                                                                       torch.zeros(2, 2), y)), 4)
    (0.5, 0.6931)
    """
    if config.loss == "mse":
        target = F.one_hot(y, out.shape[1]).to(out.dtype)  # (B, K)
        if config.mse_reduction == "mean":
            return F.mse_loss(out, target)
        return 0.5 * (out - target).pow(2).sum(dim=1).mean()
    return F.cross_entropy(out, y)


def regularisation(
    config: NetConfig, model: HeadNetwork, h1: torch.Tensor, n_train: int = 1, *, objective: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(reg_h1, reg_w)`` of the scheme in ``config.reg`` (see :mod:`deepcollapse.nets.config`).

    ``dufm``: ``reg_h1 = c · (lam_h/2) · mean_i ‖h1_i‖²`` with ``c = 1`` (``lam_h_scale="batch_mean"``) or
    ``c = n_train`` (``"dataset"``), and ``reg_w = Σ_l (lam/2) ‖W_l‖_F²``;
    ``standard``: ``reg_h1 = 0``, ``reg_w = (lam/2) Σ_θ ‖θ‖²`` over every parameter (``wd_scope: all``) or
    over those with >= 2 dimensions (``weights``); ``none``: both 0.  The decayed parameters are
    :func:`~deepcollapse.nets.build.decayed_parameters`'.

    With ``wd_mode: decoupled`` the optimiser applies the weight decay itself, so the loss to differentiate
    has ``reg_w = 0``; ``objective=True`` gives the objective's ``reg_w`` all the same (what
    :func:`~deepcollapse.nets.evaluate.evaluate` reports).

    Parameters
    ----------
    config : NetConfig
        ``reg``, ``lam_h``, ``lam_h_scale``, ``lam``, ``wd_scope``, ``wd_mode``.
    model : HeadNetwork
        The network.
    h1 : torch.Tensor
        The batch's features ``H1`` ``(B, d1)``.
    n_train : int, default 1
        Training samples (for ``lam_h_scale="dataset"``).
    objective : bool, default False
        Return the objective's ``reg_w`` under decoupled decay too.

    Returns
    -------
    tuple of (torch.Tensor, torch.Tensor)
        ``(reg_h1, reg_w)``, 0-d.

    Examples
    --------
    >>> import torch
    >>> from deepcollapse.nets.build import build_network
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
    ...                    backbone_width=8, lam_h=0.1)
    >>> model = build_network(config, 1, (1, 8, 8))
    >>> reg_h1, reg_w = regularisation(config, model, torch.ones(5, 8))  # mean ‖h1‖² = 8
    >>> round(float(reg_h1), 6), float(reg_w.detach()) > 0
    (0.4, True)
    """
    zero = h1.new_zeros(())
    reg_h1 = zero
    if config.reg == "dufm":
        reg_h1 = feature_penalty(config, h1.pow(2).sum(dim=1).mean(), n_train)
    if config.reg == "none" or (config.wd_mode == "decoupled" and not objective):
        return reg_h1, zero
    return reg_h1, weight_penalty(config, model, zero)


def feature_penalty(config: NetConfig, mean_sq: Any, n_train: int = 1) -> Any:
    """The DUFM-like feature term ``c · (lam_h/2) · mean_sq`` (``mean_sq``: the mean of ``‖h1_i‖²`` over a
    batch, or over the training set), ``c = n_train`` with ``lam_h_scale="dataset"`` else 1: the one formula
    of the training step (:func:`regularisation`) and the evaluation
    (:func:`~deepcollapse.nets.evaluate.evaluate`).  In eq. (1)'s terms it is ``(λ_{H_1}/2)‖H_1‖_F²`` with
    ``λ_{H_1} = c · lam_h / B`` for the ``B`` columns averaged (:mod:`deepcollapse.nets.theory_levels`).

    Parameters
    ----------
    config : NetConfig
        ``lam_h``, ``lam_h_scale``.
    mean_sq : float or torch.Tensor
        The mean squared norm of the features.
    n_train : int, default 1
        Training samples (for ``lam_h_scale="dataset"``).

    Returns
    -------
    float or torch.Tensor
        The term, of ``mean_sq``'s type.

    Examples
    --------
    >>> from deepcollapse.nets.config import NetConfig
    >>> feature_penalty(NetConfig(dataset="digits", lam_h=0.1), 4.0)
    0.2
    """
    c = float(n_train) if config.lam_h_scale == "dataset" else 1.0
    return 0.5 * c * config.lam_h * mean_sq


def weight_penalty(config: NetConfig, model: HeadNetwork, zero: torch.Tensor | None = None) -> torch.Tensor:
    """The coupled weight-decay term ``(lam/2) Σ_θ ‖θ‖²`` over the decayed parameters
    (:func:`~deepcollapse.nets.build.decayed_parameters`): eq. (1)'s weight term
    (:func:`deepcollapse.theory.objective_torch.penalty`) with one ``λ`` for all of them.

    Parameters
    ----------
    config : NetConfig
        ``reg``, ``lam``, ``wd_scope``.
    model : HeadNetwork
        The network.
    zero : torch.Tensor, optional
        The 0-d value returned when nothing is decayed (default a float32 zero on the model's device).

    Returns
    -------
    torch.Tensor
        The 0-d term (whatever ``wd_mode``: the objective's value).

    Examples
    --------
    >>> import torch
    >>> from deepcollapse.nets.build import build_network
    >>> from deepcollapse.nets.config import NetConfig
    >>> cfg = NetConfig(dataset="digits", layers=2, width=12, lam=0.01)
    >>> model = build_network(cfg, 1)
    >>> by_hand = 0.5 * 0.01 * sum(float((W.detach() ** 2).sum()) for W in model.head_weights())
    >>> abs(float(weight_penalty(cfg, model).detach()) - by_hand) < 1e-6 * by_hand
    True
    """
    lam, params = decayed_parameters(config, model)
    if not params:
        return zero if zero is not None else torch.zeros((), device=next(model.parameters()).device)
    return penalty(lam, params)


def epoch_order(config: NetConfig, epoch: int, n: int) -> torch.Tensor:
    """The data order of epoch ``epoch`` (1-based).

    Parameters
    ----------
    config
        The run's configuration (its ``seed``).
    epoch
        The epoch.
    n
        The number of training samples.

    Returns
    -------
    torch.Tensor
        ``randperm(n)`` (CPU, int64) from a generator seeded with ``seed · 1_000_003 + epoch``.

    Examples
    --------
    >>> from deepcollapse.nets.config import NetConfig
    >>> order = epoch_order(NetConfig(seed=0), 1, 5)
    >>> sorted(order.tolist()), order.equal(epoch_order(NetConfig(seed=0), 1, 5))
    ([0, 1, 2, 3, 4], True)
    """
    gen = torch.Generator().manual_seed(config.seed * 1_000_003 + epoch)
    return torch.randperm(n, generator=gen)


def train_step(
    config: NetConfig,
    model: HeadNetwork,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    x: torch.Tensor,
    y: torch.Tensor,
    n_train: int,
    correct: torch.Tensor | None = None,
) -> torch.Tensor:
    """One optimisation step on the batch ``(x (B, C, H, W), y (B,))``; returns the detached batch loss
    ``fit + reg_h1 + reg_w`` (a device tensor: no synchronisation).

    With ``config.amp`` the forward pass runs under ``torch.autocast`` (float16 on CUDA, bfloat16 elsewhere);
    the loss terms are computed in float32 from the autocast outputs, and on CUDA the backward pass goes
    through the :func:`make_grad_scaler` scaler (``scaler.step`` skips a step whose gradients overflowed).

    Parameters
    ----------
    config : NetConfig
        The run's configuration (loss, regularisation, ``amp``, memory format).
    model : HeadNetwork
        The network, on the batch's device.
    optimizer : torch.optim.Optimizer
        Its optimizer (:func:`~deepcollapse.nets.build.make_optimizer`).
    scaler : torch.amp.GradScaler
        The loss scaler (:func:`~deepcollapse.nets.build.make_grad_scaler`).
    x : torch.Tensor
        The images ``(B, C, H, W)``.
    y : torch.Tensor
        The labels ``(B,)``.
    n_train : int
        Training samples (for ``lam_h_scale="dataset"``).
    correct : torch.Tensor, optional
        A 0-d int64 device tensor: the batch's correctly classified samples (before the step) are added to
        it in place (no synchronisation); the loop's running training accuracy.

    Returns
    -------
    torch.Tensor
        The 0-d loss before the step, detached.

    Examples
    --------
    >>> import torch
    >>> from deepcollapse.nets.build import build_network, make_grad_scaler, make_optimizer
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
    ...                    backbone_width=8, device="cpu")
    >>> model = build_network(config, 1, (1, 8, 8))
    >>> opt, scaler = make_optimizer(config, model), make_grad_scaler(config, torch.device("cpu"))
    >>> x, y = torch.randn(6, 1, 8, 8), torch.tensor([0, 0, 1, 1, 2, 2])
    >>> loss = train_step(config, model, opt, scaler, x, y, n_train=6)
    >>> loss.ndim, loss.requires_grad
    (0, False)
    """
    if x.ndim == 4 and channels_last_on(config, x.device):
        x = x.contiguous(memory_format=torch.channels_last)
    amp_dtype = torch.float16 if x.device.type == "cuda" else torch.bfloat16
    with torch.autocast(x.device.type, dtype=amp_dtype, enabled=config.amp):
        out, feats = model(x)  # (B, K), features
    fit = fit_loss(config, out.float(), y)
    reg_h1, reg_w = regularisation(config, model, feats["H1"].float(), n_train)
    loss = fit + reg_h1 + reg_w
    if correct is not None:
        correct += (out.detach().argmax(dim=1) == y).sum()
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()
