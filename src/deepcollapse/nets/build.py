"""What a network run computes with: the device, the data, the network, its optimizer and loss scaler.

Owns the set-up of a run of :func:`deepcollapse.nets.train.train_net` before its first step:
:func:`select_device` (``auto``: CUDA, else MPS, else CPU), :func:`load_net_data` (the dataset of the config,
batch size checked), :func:`channels_last_on` (the memory-format rule: channels-last on the CPU by default,
never for the MLP backbone; see :mod:`deepcollapse.nets.config`), :func:`build_network` (backbone + bias-free
head initialised from ``seed`` in a forked RNG and scaled by ``head_init_scale``, DUFM head loaded and frozen
as configured; the one place a new backbone is added), :func:`decayed_parameters` (which parameters the weight
decay acts on, with which λ: the one definition the loss's decay term and the decoupled optimisers share),
:func:`make_optimizer` (SGD with momentum or Adam; :class:`SGDW` / AdamW with ``wd_mode: decoupled``) and
:func:`make_grad_scaler` (the ``amp`` loss scaler, enabled on CUDA only).  The conventions are described in
:mod:`deepcollapse.nets.config`.
"""

from __future__ import annotations

from typing import Any

import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.devices import check_cuda_device
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.data.datasets import DataSplits, load_dataset
from deepcollapse.nets.head import HeadNetwork, MLPHead, load_dufm_head_weights
from deepcollapse.nets.mlp_backbone import MLPBackbone
from deepcollapse.nets.resnet import ResNet20

__all__ = [
    "SGDW",
    "build_network",
    "decayed_parameters",
    "channels_last_on",
    "load_net_data",
    "make_grad_scaler",
    "make_optimizer",
    "select_device",
]


def select_device(name: str) -> torch.device:
    """``"auto"``: CUDA if available, else Apple MPS, else CPU; otherwise the named device (checked: a CUDA
    device this machine lacks is :func:`~deepcollapse._core.devices.check_cuda_device`'s one line).

    Parameters
    ----------
    name : str
        ``"auto"`` or a torch device name (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``).

    Returns
    -------
    torch.device
        The device to compute on.

    Examples
    --------
    >>> select_device("cpu")
    device(type='cpu')
    """
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    check_cuda_device("device", name)
    if name == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ConfigError("device == 'mps', must be available (no MPS device found); use auto or cpu.")
    return torch.device(name)


def load_net_data(config: NetConfig) -> DataSplits:
    """The dataset of ``config`` (class subset, balanced subsample, normalisation); batch size checked.

    Parameters
    ----------
    config : NetConfig
        The run's configuration (``dataset``, ``data_dir``, ``classes``, ``n``, ``n_test``, ``seed``,
        ``normalize``, ``batch_size``).

    Returns
    -------
    DataSplits
        The training and test sets (on the CPU).

    Examples
    --------
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(dataset="digits", classes=[0, 1, 2], n=3, n_test=2, batch_size=9, device="cpu")
    >>> data = load_net_data(config)
    >>> len(data.train), len(data.test), data.num_classes
    (9, 6, 3)
    """
    data = load_dataset(
        config.dataset,
        config.data_dir,
        classes=config.classes,
        n_per_class=config.n,
        n_test_per_class=config.n_test,
        seed=config.seed,
        normalize=config.normalize,
    )
    if config.batch_size > len(data.train):
        raise ConfigError(
            f"batch_size == {config.batch_size}, must be <= the training set size {len(data.train)}."
        )
    return data


def channels_last_on(config: NetConfig, device: torch.device | str) -> bool:
    """Whether a run of ``config`` on ``device`` uses channels-last memory format.

    Never for the MLP backbone; ``"auto"``: on the CPU only (faster there, bit-reproducible per seed; see
    :mod:`deepcollapse.nets.config`); otherwise ``config.channels_last``.

    Parameters
    ----------
    config
        The run's configuration.
    device
        Where the run computes.

    Returns
    -------
    bool
        True if the backbone and the image batches are to be channels-last.

    Examples
    --------
    >>> from deepcollapse.nets.config import NetConfig
    >>> [channels_last_on(NetConfig(backbone=b), "cpu") for b in ("resnet8", "mlp")]
    [True, False]
    """
    if config.backbone == "mlp":
        return False
    if config.channels_last == "auto":
        return torch.device(device).type == "cpu"
    return bool(config.channels_last)


def build_network(
    config: NetConfig,
    in_channels: int,
    in_shape: tuple[int, ...] | None = None,
    device: torch.device | str = "cpu",
) -> HeadNetwork:
    """The backbone (ResNet20 + optional projection, or the MLP backbone, which needs the sample shape
    ``in_shape = (C, H, W)``) and the MLP head, initialised from ``config.seed``; DUFM head loaded and frozen
    as configured; channels-last memory format if :func:`channels_last_on` for ``device`` (where the caller
    will run it; the network is returned on the CPU).  The global RNG state is restored afterwards.

    Parameters
    ----------
    config : NetConfig
        The run's configuration (backbone, head, ``seed``, ``head_init``, ``head_init_scale``,
        ``freeze_head``).
    in_channels : int
        The images' channels (the ResNet's input).
    in_shape : tuple of int, optional
        The sample shape ``(C, H, W)``; needed for the MLP backbone.
    device : torch.device or str, default "cpu"
        Where the caller will run the network (the memory-format rule).

    Returns
    -------
    HeadNetwork
        The backbone and the head, on the CPU.

    Examples
    --------
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
    ...                    backbone_width=8, device="cpu", threads=1)
    >>> model = build_network(config, 1, (1, 8, 8))
    >>> type(model.backbone).__name__, [tuple(W.shape) for W in model.head_weights()]
    ('MLPBackbone', [(4, 8), (3, 4)])
    """
    K = config.num_classes
    dufm_weights = None
    if config.head_init is not None:
        dufm_weights = load_dufm_head_weights(config.head_init, config.head_init_run)
        if len(dufm_weights) != config.layers:
            raise ConfigError(
                f"layers == {config.layers}, must equal the DUFM head's number of layers "
                f"{len(dufm_weights)} ({config.head_init})."
            )
        d1 = int(dufm_weights[0].shape[1])
        backbone_dim = config.backbone_width if config.backbone == "mlp" else (config.feature_dim or 64)
        if backbone_dim != d1:
            raise ConfigError(
                f"feature_dim == {config.feature_dim} (backbone width {backbone_dim}), "
                "must equal the DUFM head's "
                f"input width d1 = {d1} (set feature_dim = {d1})."
            )
        if int(dufm_weights[-1].shape[0]) != K:
            raise ConfigError(
                f"classes == {config.classes}, must give K = {int(dufm_weights[-1].shape[0])} classes "
                "like the "
                f"DUFM head ({config.head_init}); got K = {K}."
            )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        backbone: ResNet20 | MLPBackbone
        if config.backbone == "mlp":
            if in_shape is None:
                raise ConfigError("in_shape == None, must be the sample shape (C, H, W) for backbone mlp.")
            backbone = MLPBackbone(in_shape, config.backbone_width, config.backbone_depth)
        else:
            backbone = ResNet20(
                in_channels, config.feature_dim, depth=8 if config.backbone == "resnet8" else 20
            )
            if channels_last_on(config, device):
                backbone = backbone.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
        head = MLPHead(backbone.out_features, config.width, config.layers, K)
    if config.head_init_scale != 1.0:
        with torch.no_grad():
            for W in head.parameters():
                W.mul_(config.head_init_scale)
    if dufm_weights is not None:
        head.set_weights(dufm_weights)
    if config.freeze_head:
        head.requires_grad_(False)
    return HeadNetwork(backbone, head)


def decayed_parameters(config: NetConfig, model: HeadNetwork) -> tuple[float, list[torch.Tensor]]:
    """``(λ, parameters)``: the weight decay of ``config`` and the parameters it acts on, in model order.

    ``reg: dufm``: ``lam`` on the head's ``W_1 .. W_L``; ``reg: standard``: ``lam`` on every parameter
    (``wd_scope: all``) or on those with at least 2 dimensions (``weights``: no BatchNorm scales / shifts,
    no biases); ``reg: none``: ``(0.0, [])``.  Coupled decay adds ``(λ/2) Σ ‖θ‖²`` over them to the loss
    (:func:`~deepcollapse.nets.step.regularisation`), decoupled decay shrinks them in the optimiser step
    (:func:`make_optimizer`).

    Parameters
    ----------
    config
        The run's configuration (``reg``, ``lam``, ``wd_scope``).
    model
        The network.

    Returns
    -------
    tuple of (float, list of torch.Tensor)
        The decay and the decayed parameters (frozen ones included: the objective counts them).

    Examples
    --------
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
    ...                    backbone_width=8, device="cpu", threads=1)
    >>> lam, params = decayed_parameters(config, build_network(config, 1, (1, 8, 8)))
    >>> config.reg, lam, [tuple(p.shape) for p in params]
    ('dufm', 0.005, [(4, 8), (3, 4)])
    """
    if config.reg == "dufm":
        return config.lam, model.head_weights()
    if config.reg == "standard":
        params: list[torch.Tensor] = list(model.parameters())
        if config.wd_scope == "weights":
            params = [p for p in params if p.ndim >= 2]
        return config.lam, params
    return 0.0, []


class SGDW(torch.optim.SGD):
    """SGD (with momentum) and decoupled weight decay (Loshchilov & Hutter, "Decoupled weight decay
    regularization", ICLR 2019): each step first shrinks the parameters of a group, ``θ ← θ (1 − lr ·
    decoupled_weight_decay)`` (the group's ``lr``, so the decay follows the schedule, as in torch's
    ``AdamW``), then takes torch's SGD step with the gradient of the loss alone (no decay in the momentum).

    Parameters
    ----------
    params
        Parameters or parameter groups; a group's ``"decoupled_weight_decay"`` (default ``weight_decay``).
    lr, momentum
        As for ``torch.optim.SGD``.
    weight_decay
        The default decoupled decay λ of a group.
    """

    def __init__(self, params: Any, lr: float, momentum: float = 0.0, weight_decay: float = 0.0) -> None:
        super().__init__(params, lr=lr, momentum=momentum)
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", float(weight_decay))

    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        """One step: the decoupled decay of every parameter with a gradient, then the SGD update.

        Parameters
        ----------
        closure : callable, optional
            Re-evaluates the model and returns the loss (as for ``torch.optim.SGD.step``).

        Returns
        -------
        torch.Tensor or None
            The closure's loss, ``None`` without a closure.

        Examples
        --------
        >>> import torch
        >>> p = torch.nn.Parameter(torch.ones(2))
        >>> opt = SGDW([p], lr=0.1, weight_decay=0.5)
        >>> p.grad = torch.zeros(2)
        >>> opt.step()
        >>> p.data.tolist()  # shrunk by 1 - lr * decay, no gradient step
        [0.949999988079071, 0.949999988079071]
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        with torch.no_grad():
            for group in self.param_groups:
                decay = group["lr"] * group["decoupled_weight_decay"]
                if decay:
                    for p in group["params"]:
                        if p.grad is not None:
                            p.mul_(1.0 - decay)
        super().step()
        return loss


def make_optimizer(config: NetConfig, model: HeadNetwork) -> torch.optim.Optimizer:
    """The optimizer of ``config`` over the trainable parameters of ``model``.

    Parameters
    ----------
    config
        The run's configuration (``optimizer``, ``lr``, ``momentum``; ``wd_mode``, with ``reg`` / ``lam`` /
        ``wd_scope`` through :func:`decayed_parameters`).
    model
        The network; frozen parameters (``freeze_head``) are left out.

    Returns
    -------
    torch.optim.Optimizer
        ``SGD`` with momentum or ``Adam`` at the base learning rate ``lr`` (the loop sets each epoch's); with
        ``wd_mode: decoupled`` two groups, the decayed parameters (decay ``lam``) and the others, in
        :class:`SGDW` or ``Adam(decoupled_weight_decay=True)`` (= ``AdamW``).

    Examples
    --------
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
    ...                    backbone_width=8, device="cpu", threads=1)
    >>> model = build_network(config, 1, (1, 8, 8))
    >>> type(make_optimizer(config, model)).__name__
    'SGD'
    >>> type(make_optimizer(config.replace(wd_mode="decoupled"), model)).__name__
    'SGDW'
    """
    params = [p for p in model.parameters() if p.requires_grad]
    lam, decayed = decayed_parameters(config, model)
    if config.wd_mode == "decoupled" and lam > 0.0 and decayed:
        ids = {id(p) for p in decayed}
        groups = [
            {"params": [p for p in params if id(p) in ids], "weight_decay": lam},
            {"params": [p for p in params if id(p) not in ids], "weight_decay": 0.0},
        ]
        groups = [g for g in groups if g["params"]]
        if config.optimizer == "sgd":
            for g in groups:
                g["decoupled_weight_decay"] = g.pop("weight_decay")
            return SGDW(groups, lr=config.lr, momentum=config.momentum)
        return torch.optim.Adam(groups, lr=config.lr, decoupled_weight_decay=True)
    if config.optimizer == "sgd":
        return torch.optim.SGD(params, lr=config.lr, momentum=config.momentum)
    return torch.optim.Adam(params, lr=config.lr)


def make_grad_scaler(config: NetConfig, device: torch.device) -> torch.amp.GradScaler:
    """The loss scaler of ``config.amp``: enabled for float16 autocast on CUDA only (a no-op otherwise).

    Parameters
    ----------
    config : NetConfig
        The run's configuration (``amp``).
    device : torch.device
        Where the run computes.

    Returns
    -------
    torch.amp.GradScaler
        The scaler (disabled off CUDA or without ``amp``).

    Examples
    --------
    >>> import torch
    >>> from deepcollapse.nets.config import NetConfig
    >>> make_grad_scaler(NetConfig(amp=True), torch.device("cpu")).is_enabled()
    False
    """
    return torch.amp.GradScaler(device.type, enabled=config.amp and device.type == "cuda")
