"""The one supervised loop for real networks: ResNet20 + bias-free MLP head (2024 §6.2–6.3, 2023 §4.2).

``train_net(config, out_dir)`` trains a :class:`~deepcollapse.nets.head.HeadNetwork` (ResNet20 or the MLP
backbone) on ``digits``, ``mnist1d``, ``mnist``, ``fashion_mnist`` or ``cifar10`` with minibatch SGD
(momentum) or Adam, the MSE-to-one-hot loss (or cross-entropy) and the regularisation of
:mod:`deepcollapse.nets.config` (``dufm``, ``standard`` or ``none``), and every ``eval_every`` epochs
measures, per head layer (``H1``, ``H~l``, ``Hl``), the collapse metrics of
:class:`deepcollapse.metrics.streaming.CollapseStatistics` streamed over the **training set in eval mode**
(BatchNorm running statistics, no gradient): DNC1 ``tr Σ_W / tr Σ_B``, DNC2 (condition number of the
class-mean matrix ``M_l``), numerical rank (``rank_rtol``), effective rank, singular values and the
max-normalised Gram matrix ``M_l^T M_l``, plus train/test accuracy and the loss split into fit and
regularisation.

Determinism: the model is initialised from ``seed`` (in a forked RNG, the global one is untouched); the data
order of epoch ``e`` is ``randperm(N)`` from a generator seeded with ``seed · 1_000_003 + e``, so it does not
depend on how many epochs ran in this process; the learning rate of epoch ``e`` is a pure function of ``e``.
Together with the checkpoint (model, optimizer state) written atomically after every epoch, an interrupted run
resumed with :func:`resume_net` reproduces the uninterrupted one bit for bit on the CPU.  A final batch of a
single sample is dropped (BatchNorm needs two).

Devices: the datasets are moved to the device once; batches are indexed there (no per-batch host copy) and the
evaluation gathers features on the device and copies each to the host once per evaluation.  ``amp`` and
``channels_last`` (``amp`` off, ``channels_last`` on for the CPU by default) are described in
:mod:`deepcollapse.nets.config`.  Running out of
device memory raises :class:`DeviceMemoryError` naming the batch size; the last epoch's checkpoint stays on
disk.

Run folder (docs/architecture.md): ``config.yaml``, ``metrics.jsonl`` (one JSON object per evaluation, see
:func:`evaluate`), ``checkpoint.pt``, ``summary.json``.
"""

from __future__ import annotations

import logging
import math
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from deepcollapse._core.checks import ConfigError, Interrupted
from deepcollapse._core.interrupt import StopFlag, stop_on_signals
from deepcollapse._core.io import (
    append_jsonl,
    atomic_torch_save,
    atomic_write_json,
    finite_or_none,
    load_checkpoint,
    prepare_run_folder,
    read_jsonl,
    truncate_jsonl,
)
from deepcollapse._core.results import Result
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.data.datasets import DataSplits, ImageData, load_dataset
from deepcollapse.nets.head import HeadNetwork, MLPHead, feature_layers, load_dufm_head_weights
from deepcollapse.nets.mlp_backbone import MLPBackbone
from deepcollapse.nets.resnet import ResNet20

__all__ = [
    "NetConfig",
    "NetSummary",
    "DeviceMemoryError",
    "build_network",
    "channels_last_on",
    "evaluate",
    "load_net_data",
    "lr_at",
    "regularisation",
    "resume_net",
    "select_device",
    "train_net",
    "train_step",
]

log = logging.getLogger(__name__)

RUN_FILES = ("config.yaml", "metrics.jsonl", "checkpoint.pt", "summary.json")
EpochCallback = Callable[[int, dict[str, Any]], None]


# ------------------------------------------------------------------------------------------------------------
# Pieces
# ------------------------------------------------------------------------------------------------------------


def select_device(name: str) -> torch.device:
    """``"auto"``: CUDA if available, else Apple MPS, else CPU; otherwise the named device (checked)."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device == 'cuda', must be available (no CUDA device found); use auto or cpu.")
    if name == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ConfigError("device == 'mps', must be available (no MPS device found); use auto or cpu.")
    return torch.device(name)


def load_net_data(config: NetConfig) -> DataSplits:
    """The dataset of ``config`` (class subset, balanced subsample, normalisation); batch size checked."""
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
    will run it; the network is returned on the CPU).  The global RNG state is restored afterwards."""
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
    if dufm_weights is not None:
        head.set_weights(dufm_weights)
    if config.freeze_head:
        head.requires_grad_(False)
    return HeadNetwork(backbone, head)


def lr_at(config: NetConfig, epoch: int) -> float:
    """Learning rate of epoch ``epoch`` (1-based).

    ``constant``: ``lr``; ``multistep``: ``lr · lr_decay^m`` with ``m`` the number of milestones ``f`` with
    ``epoch > round(f · epochs)``; ``cosine``: ``lr · (1 + cos(π (epoch − 1) / epochs)) / 2``.
    """
    if config.lr_schedule == "constant":
        return config.lr
    if config.lr_schedule == "multistep":
        m = sum(epoch > round(f * config.epochs) for f in config.lr_milestones)
        return config.lr * config.lr_decay**m
    return config.lr * 0.5 * (1.0 + math.cos(math.pi * (epoch - 1) / config.epochs))


def fit_loss(config: NetConfig, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``mse``: ``(1/(2B)) Σ_i ‖out_i − e_{y_i}‖²``; ``ce``: mean cross-entropy."""
    if config.loss == "mse":
        target = F.one_hot(y, out.shape[1]).to(out.dtype)  # (B, K)
        return 0.5 * (out - target).pow(2).sum(dim=1).mean()
    return F.cross_entropy(out, y)


def regularisation(
    config: NetConfig, model: HeadNetwork, h1: torch.Tensor, n_train: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(reg_h1, reg_w)`` of the scheme in ``config.reg`` (see :mod:`deepcollapse.nets.config`).

    ``dufm``: ``reg_h1 = c · (lam_h/2) · mean_i ‖h1_i‖²`` with ``c = 1`` (``lam_h_scale="batch_mean"``) or
    ``c = n_train`` (``"dataset"``), and ``reg_w = Σ_l (lam/2) ‖W_l‖_F²``;
    ``standard``: ``reg_h1 = 0``, ``reg_w = (lam/2) Σ_θ ‖θ‖²`` over every parameter; ``none``: both 0.
    """
    zero = h1.new_zeros(())
    if config.reg == "dufm":
        c = float(n_train) if config.lam_h_scale == "dataset" else 1.0
        reg_h1 = 0.5 * c * config.lam_h * h1.pow(2).sum(dim=1).mean()
        reg_w = 0.5 * config.lam * sum((W.pow(2).sum() for W in model.head_weights()), zero)
        return reg_h1, reg_w
    if config.reg == "standard":
        return zero, 0.5 * config.lam * sum((p.pow(2).sum() for p in model.parameters()), zero)
    return zero, zero


def _make_optimizer(config: NetConfig, model: HeadNetwork) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    if config.optimizer == "sgd":
        return torch.optim.SGD(params, lr=config.lr, momentum=config.momentum)
    return torch.optim.Adam(params, lr=config.lr)


def _epoch_order(config: NetConfig, epoch: int, n: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(config.seed * 1_000_003 + epoch)
    return torch.randperm(n, generator=gen)


# ------------------------------------------------------------------------------------------------------------
# Evaluation
# ------------------------------------------------------------------------------------------------------------


def _finite(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _layer_record(
    stats: Any, key: str, layer: int, kind: str, name: str, rtol: float | None
) -> dict[str, Any]:
    from deepcollapse.metrics import functional as MF

    m = stats.compute(rtol=rtol)
    means = np.asarray(stats.class_means)  # (K, D)
    K = means.shape[0]
    gram = MF.class_mean_gram(means, np.arange(K), K)
    return {
        "layer": layer,
        "name": name,
        "kind": kind,
        "key": key,
        "dnc1": _finite(m["nc1_trace_ratio"]),
        "nc1_pinv": _finite(m.get("nc1_pinv")),
        "dnc2_cond": _finite(m["nc2_cond"]),
        "rank": m["rank"],
        "effective_rank": _finite(m["effective_rank"]),
        "singular_values": [float(s) for s in m["singular_values"]],
        "gram": np.round(gram, 6).tolist(),
        "negative_fraction": _finite(m.get("negative_fraction")),
        "warnings": list(m.get("warnings") or []),  # why a metric is null (from deepcollapse.metrics)
    }


@torch.no_grad()
def _pass(
    config: NetConfig, model: HeadNetwork, data: ImageData, stats: dict[str, Any] | None
) -> dict[str, float]:
    """One no-grad pass in eval mode: accuracy, fit and the H1 term; features streamed into ``stats``.

    Everything stays on the model's device during the pass (sums in float64 device tensors, features gathered
    in device buffers); the host sees one copy per feature at the end, not one per batch.
    """
    n = len(data)
    device = data.labels.device
    correct = torch.zeros((), dtype=torch.int64, device=device)
    fit_sum = torch.zeros((), dtype=torch.float64, device=device)
    h1_sq = torch.zeros((), dtype=torch.float64, device=device)
    gathered: dict[str, list[torch.Tensor]] = {key: [] for key in (stats or {})}
    bs = config.eval_batch_size
    for start in range(0, n, bs):
        x, y = data.batch(slice(start, min(start + bs, n)))  # on the device already
        if x.ndim == 4 and channels_last_on(config, device):
            x = x.contiguous(memory_format=torch.channels_last)
        out, feats = model(x)
        correct += (out.argmax(dim=1) == y).sum()
        fit_sum += fit_loss(config, out, y).double() * y.shape[0]
        h1_sq += feats["H1"].double().pow(2).sum()
        for key, chunks in gathered.items():
            chunks.append(feats[key].detach())
    if stats is not None:
        labels = data.labels.cpu()
        for key, st in stats.items():
            st.update(torch.cat(gathered[key]).cpu(), labels)  # one host copy; accumulated in float64
    m = max(n, 1)
    return {"acc": int(correct) / m, "fit": float(fit_sum) / m, "h1_sq": float(h1_sq) / m}


def evaluate(config: NetConfig, model: HeadNetwork, data: DataSplits) -> dict[str, Any]:
    """Evaluation record (the ``metrics.jsonl`` object without the epoch bookkeeping).

    Keys: ``train_acc, test_acc, loss, fit, reg, reg_h1, reg_w`` (the full objective on the training set in
    eval mode: ``fit`` its mean, ``reg_h1`` with the mean of ``‖h1‖²`` over the training set), ``test_fit``
    and ``layers``: one dict per head feature (``layer, name, kind, key, dnc1, nc1_pinv, dnc2_cond, rank,
    effective_rank, singular_values, gram, negative_fraction, warnings``), metrics from
    :class:`deepcollapse.metrics.streaming.CollapseStatistics` (float64 accumulation).
    """
    from deepcollapse.metrics.streaming import CollapseStatistics

    was_training = model.training
    model.eval()
    K = data.num_classes
    layers = feature_layers(config.layers)
    dims = {"H1": model.head.in_dim}
    stats = {key: CollapseStatistics(K, dims.get(key, model.head.width)) for key, *_ in layers}
    tr = _pass(config, model, data.train, stats)
    te = (
        _pass(config, model, data.test, None)
        if len(data.test)
        else {"acc": float("nan"), "fit": float("nan")}
    )
    with torch.no_grad():
        h1_dummy = torch.zeros(1, model.head.in_dim, device=next(model.parameters()).device)
        _, reg_w = regularisation(config, model, h1_dummy)
    c = float(len(data.train)) if config.lam_h_scale == "dataset" else 1.0
    reg_h1 = 0.5 * c * config.lam_h * tr["h1_sq"] if config.reg == "dufm" else 0.0
    reg = reg_h1 + float(reg_w)
    model.train(was_training)
    return {
        "train_acc": tr["acc"],
        "test_acc": _finite(te["acc"]),
        "loss": tr["fit"] + reg,
        "fit": tr["fit"],
        "reg": reg,
        "reg_h1": reg_h1,
        "reg_w": float(reg_w),
        "test_fit": _finite(te["fit"]),
        "layers": [
            _layer_record(stats[k], k, l, kind, name, config.rank_rtol) for k, l, kind, name in layers
        ],
    }


# ------------------------------------------------------------------------------------------------------------
# Run folder
# ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class NetSummary(Result):
    """The summary of a network run folder (``summary.json``): the result of :func:`train_net` and
    :func:`resume_net`.

    The fields from ``epoch`` on describe the last evaluation and are absent (``None``) when none ran.
    Read-only key access (``summary["test_acc"]``) works as for the dict of earlier releases.

    Attributes
    ----------
    dataset : str
        The dataset trained on.
    classes : list of int or None
        The original labels kept (``None``: all).
    num_classes : int
        ``K``.
    n_train : int
        Training samples.
    epochs_done, epochs : int
        Epochs completed and planned.
    diverged : bool
        The training loss became non-finite (the run stopped; the checkpoint is the last finite epoch's).
    device : str
        The torch device used.
    num_parameters : int
        Parameters of the network.
    epoch_time_mean_s : float or None
        Mean seconds per epoch (this call's and earlier calls' epochs).
    elapsed_s : float
        Training seconds over every call.
    train_loss_per_epoch : list of float
        Mean training loss of each epoch.
    epoch : int
        The epoch of the last evaluation.
    train_acc, test_acc : float or None
        Accuracies at that evaluation.
    loss, fit, reg : float
        The objective on the training set at that evaluation (``fit + reg``) and its two terms.
    layers : dict
        Per feature layer name (``H1``, ``H~2``, ``H2``, ...): ``{layer, kind, dnc1, dnc2_cond, rank,
        effective_rank}``.
    ranks : dict of str to int
        Numerical rank of each layer's class means.
    dnc1 : dict of str to float
        ``tr Σ_W / tr Σ_B`` of each layer.
    """

    dataset: str | None = None
    classes: list[int] | None = None
    num_classes: int | None = None
    n_train: int | None = None
    epochs_done: int | None = None
    epochs: int | None = None
    diverged: bool | None = None
    device: str | None = None
    num_parameters: int | None = None
    epoch_time_mean_s: float | None = None
    elapsed_s: float | None = None
    train_loss_per_epoch: list[float] | None = None
    epoch: int | None = None
    train_acc: float | None = None
    test_acc: float | None = None
    loss: float | None = None
    fit: float | None = None
    reg: float | None = None
    layers: dict[str, dict[str, Any]] | None = None
    ranks: dict[str, int] | None = None
    dnc1: dict[str, float | None] | None = None


def _summary(
    config: NetConfig,
    state: dict[str, Any],
    last: dict[str, Any] | None,
    device: torch.device,
    n_params: int,
    n_train: int,
) -> dict[str, Any]:
    times = [h["epoch_time"] for h in state["history"]]
    out: dict[str, Any] = {
        "dataset": config.dataset,
        "classes": config.classes,
        "num_classes": config.num_classes,
        "n_train": n_train,
        "epochs_done": state["epoch"],
        "epochs": config.epochs,
        "diverged": state["diverged"],
        "device": str(device),
        "num_parameters": n_params,
        "epoch_time_mean_s": float(np.mean(times)) if times else None,
        "elapsed_s": state["elapsed"],
        "train_loss_per_epoch": [h["train_loss"] for h in state["history"]],
    }
    if last is not None:
        out.update({k: last[k] for k in ("epoch", "train_acc", "test_acc", "loss", "fit", "reg")})
        out["layers"] = {
            r["name"]: {k: r[k] for k in ("layer", "kind", "dnc1", "dnc2_cond", "rank", "effective_rank")}
            for r in last["layers"]
        }
        out["ranks"] = {r["name"]: r["rank"] for r in last["layers"]}
        out["dnc1"] = {r["name"]: r["dnc1"] for r in last["layers"]}
    return out


class DeviceMemoryError(ConfigError):
    """The device ran out of memory; the message names the batch size and the checkpoint that was kept."""


_OOM_ERRORS: tuple[type[BaseException], ...] = tuple(
    {getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError), torch.cuda.OutOfMemoryError}
)


def make_grad_scaler(config: NetConfig, device: torch.device) -> torch.amp.GradScaler:
    """The loss scaler of ``config.amp``: enabled for float16 autocast on CUDA only (a no-op otherwise)."""
    return torch.amp.GradScaler(device.type, enabled=config.amp and device.type == "cuda")


def train_step(
    config: NetConfig,
    model: HeadNetwork,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    x: torch.Tensor,
    y: torch.Tensor,
    n_train: int,
) -> torch.Tensor:
    """One optimisation step on the batch ``(x (B, C, H, W), y (B,))``; returns the detached batch loss
    ``fit + reg_h1 + reg_w`` (a device tensor: no synchronisation).

    With ``config.amp`` the forward pass runs under ``torch.autocast`` (float16 on CUDA, bfloat16 elsewhere);
    the loss terms are computed in float32 from the autocast outputs, and on CUDA the backward pass goes
    through the :func:`make_grad_scaler` scaler (``scaler.step`` skips a step whose gradients overflowed).
    """
    if x.ndim == 4 and channels_last_on(config, x.device):
        x = x.contiguous(memory_format=torch.channels_last)
    amp_dtype = torch.float16 if x.device.type == "cuda" else torch.bfloat16
    with torch.autocast(x.device.type, dtype=amp_dtype, enabled=config.amp):
        out, feats = model(x)  # (B, K), features
    fit = fit_loss(config, out.float(), y)
    reg_h1, reg_w = regularisation(config, model, feats["H1"].float(), n_train)
    loss = fit + reg_h1 + reg_w
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()


def _oom_error(
    config: NetConfig, out: Path, device: torch.device, epoch: int, what: str
) -> DeviceMemoryError:
    """One line naming the batch size, the checkpoint kept on disk and the command that resumes."""
    if what == "training":
        name, size, how = (
            "batch_size",
            config.batch_size,
            f"`deepcollapse net resume {out} --batch-size SMALLER`",
        )
    else:
        name, size = "eval_batch_size", config.eval_batch_size
        how = f"`deepcollapse net resume {out}` after lowering eval_batch_size in its config.yaml"
    return DeviceMemoryError(
        f"{name} == {size}, must be smaller: {device} ran out of memory in {what} at epoch {epoch}; "
        f"the checkpoint of epoch {epoch - 1} is kept in {out}; resume with {how}."
    )


def _run(config: NetConfig, out: Path, *, progress: bool, callback: EpochCallback | None) -> NetSummary:
    """Train (or continue) the run in ``out`` with ``config.threads`` torch threads, restored afterwards;
    SIGINT / SIGTERM stop it after the current batch with :class:`~deepcollapse._core.checks.Interrupted`
    (see :mod:`deepcollapse._core.interrupt`)."""
    threads = torch.get_num_threads()
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    try:
        with stop_on_signals() as flag:
            return _loop(config, out, flag, progress=progress, callback=callback)
    finally:
        if config.threads is not None:
            torch.set_num_threads(threads)


def _stopped(flag: StopFlag, out: Path, epoch: int, written: bool) -> Interrupted:
    """The exception of a run stopped by a signal, naming the checkpoint that is on disk (if any)."""
    resume = f"deepcollapse net resume {shlex.quote(str(out))}"
    if written:
        return flag.interrupted(
            f"stopped by {flag.name} after epoch {epoch}; checkpoint written to {out}", resume
        )
    if (out / "checkpoint.pt").is_file():
        what = (
            f"the checkpoint of epoch {epoch - 1} in {out} is kept; `{resume}` redoes epoch {epoch} from it"
        )
    else:
        what = (
            f"no checkpoint was written yet (the first is written at the end of epoch 1); `{resume}` starts "
            "the run again from epoch 0 with its config.yaml"
        )
    return flag.interrupted(f"stopped by {flag.name} during epoch {epoch}; {what}", resume)


def _loop(
    config: NetConfig, out: Path, flag: StopFlag, *, progress: bool, callback: EpochCallback | None
) -> NetSummary:
    device = select_device(config.device)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # fixed input shapes: let cuDNN pick the fastest kernels
    data = load_net_data(config)
    data = DataSplits(data.name, data.train.to(device), data.test.to(device), data.classes)
    model = build_network(config, data.in_channels, tuple(data.train.images.shape[1:]), device).to(device)
    optimizer = _make_optimizer(config, model)
    scaler = make_grad_scaler(config, device)
    ckpt_path, metrics_path = out / "checkpoint.pt", out / "metrics.jsonl"
    state: dict[str, Any] = {"epoch": 0, "history": [], "elapsed": 0.0, "diverged": False, "last": None}
    if ckpt_path.is_file():
        ckpt = _load_checkpoint(ckpt_path, device)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        if ckpt.get("scaler"):
            scaler.load_state_dict(ckpt["scaler"])
        state = ckpt["state"]
        log.info("resuming %s from epoch %d", out, state["epoch"])
    truncate_jsonl(metrics_path, "epoch", state["epoch"])
    n_params = sum(p.numel() for p in model.parameters())
    N = len(data.train)

    def record(epoch: int, extra: dict[str, Any]) -> dict[str, Any]:
        try:
            rec = {"epoch": epoch, **extra, **evaluate(config, model, data)}
        except _OOM_ERRORS:
            raise _oom_error(config, out, device, max(epoch, 1), "evaluation") from None
        append_jsonl(metrics_path, [finite_or_none(rec)])
        state["last"] = rec
        return rec

    if state["epoch"] == 0 and not metrics_path.is_file() and config.eval_every > 0:
        record(0, {"lr": lr_at(config, 1), "train_loss_epoch": None, "epoch_time": 0.0})

    from tqdm.auto import tqdm

    bar = tqdm(total=config.epochs, initial=state["epoch"], disable=not progress, desc="net", unit="epoch")
    model.train()
    while state["epoch"] < config.epochs and not state["diverged"]:
        epoch = state["epoch"] + 1
        lr = lr_at(config, epoch)
        for g in optimizer.param_groups:
            g["lr"] = lr
        t0 = time.perf_counter()
        order = _epoch_order(config, epoch, N).to(device)
        total = torch.zeros((), dtype=torch.float64, device=device)  # on the device: no sync per step
        seen = 0
        try:
            for start in range(0, N, config.batch_size):
                idx = order[start : start + config.batch_size]
                if idx.numel() < 2:
                    continue
                x, y = data.train.batch(idx)  # indexing device tensors: no host copy
                loss = train_step(config, model, optimizer, scaler, x, y, N)
                total += loss.double() * idx.numel()
                seen += idx.numel()
                if flag.stopped:  # the epoch is dropped: the last checkpoint is the previous epoch's
                    bar.close()
                    raise _stopped(flag, out, epoch, written=False)
        except _OOM_ERRORS:
            bar.close()
            raise _oom_error(config, out, device, epoch, "training") from None
        train_loss = float(total) / max(seen, 1)
        epoch_time = time.perf_counter() - t0
        if not math.isfinite(train_loss):
            # checked once per epoch (a per-step check would synchronise GPUs); the checkpoint on disk is
            # the last finite epoch's
            state["diverged"] = True
            log.warning("training loss became %s in epoch %d: stopping (diverged)", train_loss, epoch)
            break
        state["epoch"] = epoch
        state["elapsed"] += epoch_time
        state["history"].append(
            {"epoch": epoch, "train_loss": train_loss, "epoch_time": epoch_time, "lr": lr}
        )
        rec = None
        due = config.eval_every > 0 and epoch % config.eval_every == 0
        if due or epoch == config.epochs:
            rec = record(epoch, {"lr": lr, "train_loss_epoch": train_loss, "epoch_time": epoch_time})
            log.info("epoch %d: loss %.5f train acc %.4f", epoch, rec["loss"], rec["train_acc"])
        atomic_torch_save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scaler": scaler.state_dict() if scaler.is_enabled() else None,
                "state": state,
                "config": config.to_dict(),
            },
            ckpt_path,
        )
        bar.update(1)
        bar.set_postfix(loss=f"{train_loss:.4g}")
        if callback is not None:
            callback(epoch, rec or {"epoch": epoch, "train_loss_epoch": train_loss})
        if flag.stopped and state["epoch"] < config.epochs:
            bar.close()
            raise _stopped(flag, out, epoch, written=True)
    bar.close()
    summary = _summary(config, state, state["last"], device, n_params, N)
    atomic_write_json(out / "summary.json", finite_or_none(summary))
    return NetSummary.from_dict(summary)


def train_net(
    config: NetConfig,
    out_dir: str | Path,
    *,
    force: bool = False,
    progress: bool = True,
    callback: EpochCallback | None = None,
) -> NetSummary:
    """Train ``config`` into the run folder ``out_dir``; return the :class:`NetSummary` (``summary.json``).

    ``out_dir`` must not hold a run already unless ``force`` (which deletes that run's files only).
    ``callback(epoch, record)`` is called after each epoch's checkpoint is on disk.
    """
    if not isinstance(config, NetConfig):
        raise ConfigError(f"config == {type(config).__name__}, must be a NetConfig.")
    if config.dataset == "mnist_5k":  # a damaged bundled file fails before the run folder is made (cached)
        from deepcollapse.nets.data.mnist5k import read_mnist5k

        read_mnist5k()
    out = prepare_run_folder(out_dir, RUN_FILES, force, "`deepcollapse net resume`")
    config.to_yaml(out / "config.yaml")
    return _run(config, out, progress=progress, callback=callback)


def resume_net(
    out_dir: str | Path,
    *,
    epochs: int | None = None,
    progress: bool = True,
    callback: EpochCallback | None = None,
    batch_size: int | None = None,
) -> NetSummary:
    """Continue the run in ``out_dir`` from its last checkpoint; a folder stopped before its first checkpoint
    (``config.yaml`` only) starts from epoch 0 with that config (logged).

    ``epochs`` extends (or shortens) the run with the learning-rate schedule it was started with: ``constant``
    as is; ``multistep`` keeps its milestones at the same epochs (the fractions are rescaled to the new
    length); ``cosine`` is defined over the whole run, so a different length is refused (``ConfigError``).
    ``batch_size`` changes the batch size of the remaining epochs (after running out of GPU memory; the result
    then differs from an uninterrupted run).
    """
    out = Path(out_dir)
    if not (out / "config.yaml").is_file():
        raise ConfigError(f"out_dir == {str(out)!r}, must be a net run folder holding config.yaml.")
    config = NetConfig.from_yaml(out / "config.yaml")
    changed = False
    if epochs is not None and epochs != config.epochs:
        config, changed = _same_schedule(config, int(epochs), out), True
    if batch_size is not None and batch_size != config.batch_size:
        config, changed = config.replace(batch_size=batch_size), True
    if (out / "checkpoint.pt").is_file():  # a damaged checkpoint or log is refused before anything is written
        _load_checkpoint(out / "checkpoint.pt", "cpu")
        read_jsonl(out / "metrics.jsonl", strict=True)
    if changed:
        config.to_yaml(out / "config.yaml")
    if not (out / "checkpoint.pt").is_file():
        log.warning(
            "%s holds no checkpoint.pt (stopped before its first epoch ended): starting from epoch 0 "
            "with its config.yaml",
            out,
        )
    return _run(config, out, progress=progress, callback=callback)


def _load_checkpoint(path: Path, device: Any) -> dict[str, Any]:
    """A run's ``checkpoint.pt``, or a one-line ``ConfigError`` naming it when it is damaged or foreign."""
    hint = f"delete it to start the run again from config.yaml (deepcollapse net resume {path.parent})"
    return load_checkpoint(path, keys=("model", "optimizer", "state"), map_location=device, hint=hint)


def _same_schedule(config: NetConfig, epochs: int, out: Path) -> NetConfig:
    """``config`` with ``epochs`` and the learning rate of every epoch unchanged (see :func:`resume_net`)."""
    if config.lr_schedule == "cosine":
        raise ConfigError(
            f"--epochs == {epochs}, must be {config.epochs} (the run's length) for lr_schedule 'cosine': the "
            "cosine schedule spans the whole run, so a new length would change the learning rates already "
            f"used; to train longer start a new run, e.g. deepcollapse net train --config {out}/config.yaml "
            f"--epochs {epochs} --out NEW_DIR."
        )
    if config.lr_schedule == "multistep":
        at = [round(f * config.epochs) for f in config.lr_milestones]  # milestone epochs, kept as they are
        kept = [max(e, 0.4) / epochs for e in at if e < epochs]  # max: a milestone at epoch 0 stays at 0
        return config.replace(epochs=epochs, lr_milestones=kept)
    return config.replace(epochs=epochs)
