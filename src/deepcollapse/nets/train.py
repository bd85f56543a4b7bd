"""The one supervised loop for real networks: ResNet20 + bias-free MLP head (2024 §6.2–6.3, 2023 §4.2).

Owns the epoch loop and its entry points. :func:`fit_net` ``(config)`` trains in memory and returns the model,
its evaluation records and summary, writing nothing; ``train_net(config, out_dir)`` is the same loop with the
run folder's bookkeeping (:class:`~deepcollapse.nets.checkpoint.RunFolder` instead of
:class:`~deepcollapse.nets.checkpoint.MemoryRun`: checkpoint, records and summary on disk).  It trains a
:class:`~deepcollapse.nets.head.HeadNetwork` (ResNet20 or the MLP backbone) on ``digits``, ``mnist1d``,
``mnist``, ``fashion_mnist`` or ``cifar10`` with minibatch SGD (momentum) or Adam, the MSE-to-one-hot loss (or
cross-entropy) and the regularisation of :mod:`deepcollapse.nets.config` (``dufm``, ``standard`` or ``none``),
evaluates every ``eval_every`` epochs (:func:`~deepcollapse.nets.evaluate.evaluate`: accuracy, the objective
and the collapse metrics of every head layer, appended to ``metrics.jsonl``), writes the checkpoint after
every epoch and ``summary.json`` at the end; :func:`resume_net` continues a run folder from its checkpoint.
The pieces live beside it and are re-exported here:

- :mod:`deepcollapse.nets.build` -- device, data, network, optimizer, loss scaler;
- :mod:`deepcollapse.nets.step` -- learning rate and data order of an epoch, loss terms, ``train_step``;
- :mod:`deepcollapse.nets.evaluate` -- the evaluation record;
- :mod:`deepcollapse.nets.summary` -- :class:`NetSummary` (``summary.json``);
- :mod:`deepcollapse.nets.checkpoint` -- run files, checkpoint reading, ``resume --epochs``, and the errors of
  a run stopped by a signal or by running out of device memory.

Determinism: the model is initialised from ``seed`` (in a forked RNG, the global one is untouched); the data
order and the learning rate of epoch ``e`` are pure functions of ``e`` (:mod:`deepcollapse.nets.step`).
Together with the checkpoint (model, optimizer state) written atomically after every epoch, an interrupted run
resumed with :func:`resume_net` reproduces the uninterrupted one bit for bit on the CPU.  A final batch of a
single sample is dropped (BatchNorm needs two).

Devices: the datasets are moved to the device once; batches are indexed there (no per-batch host copy).
``amp`` and ``channels_last`` (``amp`` off, ``channels_last`` on for the CPU by default) are described in
:mod:`deepcollapse.nets.config`.  Running out of device memory raises :class:`DeviceMemoryError` naming the
batch size; the last epoch's checkpoint stays on disk.  SIGINT / SIGTERM stop the run after the current batch
(:class:`~deepcollapse._core.checks.Interrupted`).

Run folder (docs/architecture.md): ``config.yaml``, ``metrics.jsonl`` (one JSON object per evaluation, see
:func:`evaluate`), ``checkpoint.pt``, ``summary.json``.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.interrupt import StopFlag, stop_on_signals
from deepcollapse._core.io import prepare_run_folder, read_jsonl
from deepcollapse._core.progress import progress_bar
from deepcollapse.nets.build import (
    build_network,
    channels_last_on,
    load_net_data,
    make_grad_scaler,
    make_optimizer,
    select_device,
)
from deepcollapse.nets.checkpoint import (
    OOM_ERRORS,
    RUN_FILES,
    DeviceMemoryError,
    MemoryRun,
    RunFolder,
    budget_of,
    load_run_checkpoint,
    oom_error,
    same_schedule,
    stopped_error,
)
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.convergence import check_convergence
from deepcollapse.nets.data.datasets import DataSplits
from deepcollapse.nets.evaluate import evaluate
from deepcollapse.nets.step import epoch_order, fit_loss, lr_at, regularisation, train_step
from deepcollapse.nets.summary import NetSummary

__all__ = [
    "NetConfig",
    "NetSummary",
    "DeviceMemoryError",
    "NetFit",
    "build_network",
    "channels_last_on",
    "evaluate",
    "fit_loss",
    "fit_net",
    "load_net_data",
    "lr_at",
    "make_grad_scaler",
    "regularisation",
    "resume_net",
    "select_device",
    "train_net",
    "train_step",
]

log = logging.getLogger(__name__)

EpochCallback = Callable[[int, dict[str, Any]], None]

_same_schedule = same_schedule  # the name of earlier releases (tests/nets/test_net_resume_schedule.py)


def _run(
    config: NetConfig,
    out: Path,
    *,
    progress: bool,
    callback: EpochCallback | None,
    run: RunFolder | None = None,
    data: DataSplits | None = None,
) -> NetSummary:
    """Train (or continue) the run in ``out`` with ``config.threads`` torch threads, restored afterwards;
    SIGINT / SIGTERM stop it after the current batch with :class:`~deepcollapse._core.checks.Interrupted`
    (see :mod:`deepcollapse._core.interrupt`)."""
    threads = torch.get_num_threads()
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    try:
        if isinstance(run, MemoryRun):  # in memory: Ctrl-C interrupts as in any notebook
            return _loop(config, out, StopFlag(), progress=progress, callback=callback, run=run, data=data)
        with stop_on_signals() as flag:
            return _loop(config, out, flag, progress=progress, callback=callback, run=run, data=data)
    finally:
        if config.threads is not None:
            torch.set_num_threads(threads)


def _loop(
    config: NetConfig,
    out: Path,
    flag: StopFlag,
    *,
    progress: bool,
    callback: EpochCallback | None,
    run: RunFolder | None = None,
    data: DataSplits | None = None,
) -> NetSummary:
    device = select_device(config.device)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # fixed input shapes: let cuDNN pick the fastest kernels
    data = load_net_data(config) if data is None else data
    data = DataSplits(data.name, data.train.to(device), data.test.to(device), data.classes)
    model = build_network(config, data.in_channels, tuple(data.train.images.shape[1:]), device).to(device)
    optimizer = make_optimizer(config, model)
    scaler = make_grad_scaler(config, device)
    run = RunFolder(out, config) if run is None else run
    run.restore(device, model, optimizer, scaler)
    state = run.state
    n_params = sum(p.numel() for p in model.parameters())
    N = len(data.train)

    def record(epoch: int, extra: dict[str, Any]) -> dict[str, Any]:
        try:
            rec = {"epoch": epoch, **extra, **evaluate(config, model, data).to_dict()}
        except OOM_ERRORS:
            raise oom_error(config, out, device, max(epoch, 1), "evaluation") from None
        run.append_record(rec)
        return rec

    if run.needs_initial_record:
        record(0, {"lr": lr_at(config, 1), "train_loss_epoch": None, "epoch_time": 0.0})

    converging = config.until == "converged"
    converged = converging and check_convergence(config, state["history"]).converged  # a resumed run
    bar = progress_bar(
        total=config.epochs, initial=state["epoch"], disable=not progress, desc="net", unit="epoch"
    )
    model.train()
    while state["epoch"] < config.epochs and not state["diverged"] and not converged:
        epoch = state["epoch"] + 1
        lr = lr_at(config, epoch)
        for g in optimizer.param_groups:
            g["lr"] = lr
        t0 = time.perf_counter()
        order = epoch_order(config, epoch, N).to(device)
        total = torch.zeros((), dtype=torch.float64, device=device)  # on the device: no sync per step
        correct = torch.zeros((), dtype=torch.int64, device=device)
        seen = 0
        try:
            for start in range(0, N, config.batch_size):
                idx = order[start : start + config.batch_size]
                if idx.numel() < 2:
                    continue
                x, y = data.train.batch(idx)  # indexing device tensors: no host copy
                loss = train_step(config, model, optimizer, scaler, x, y, N, correct)
                total += loss.double() * idx.numel()
                seen += idx.numel()
                if flag.stopped:  # the epoch is dropped: the last checkpoint is the previous epoch's
                    bar.close()
                    raise stopped_error(flag, out, epoch, written=False)
        except OOM_ERRORS:
            bar.close()
            raise oom_error(config, out, device, epoch, "training") from None
        train_loss = float(total) / max(seen, 1)
        epoch_time = time.perf_counter() - t0
        if not math.isfinite(train_loss):
            # checked once per epoch (a per-step check would synchronise GPUs); the checkpoint on disk is
            # the last finite epoch's
            state["diverged"] = True
            log.warning("training loss became %s in epoch %d: stopping (diverged)", train_loss, epoch)
            break
        run.end_epoch(epoch, train_loss, epoch_time, lr, int(correct) / max(seen, 1))
        converged = converging and check_convergence(config, state["history"]).converged
        rec = None
        if run.due(epoch) or converged:  # the last epoch of a converged run is evaluated too
            rec = record(epoch, {"lr": lr, "train_loss_epoch": train_loss, "epoch_time": epoch_time})
            log.info("epoch %d: loss %.5f train acc %.4f", epoch, rec["loss"], rec["train_acc"])
        run.save(model.state_dict(), optimizer, scaler)
        bar.update(1)
        bar.set_postfix(loss=f"{train_loss:.4g}")
        if callback is not None:
            callback(epoch, rec or {"epoch": epoch, "train_loss_epoch": train_loss})
        if flag.stopped and state["epoch"] < config.epochs and not converged:
            bar.close()
            raise stopped_error(flag, out, epoch, written=True)
    bar.close()
    return run.write_summary(device, n_params, N)


@dataclass(frozen=True, eq=False)
class NetFit:
    """A network trained in memory: the result of :func:`fit_net`.

    Attributes
    ----------
    config : NetConfig
        What was trained.
    model : torch.nn.Module
        The trained network (on the config's device, in training mode).
    records : list of dict
        The evaluation records, one per evaluation (epoch 0, every ``eval_every`` epochs and the last), as
        ``metrics.jsonl`` of :func:`train_net` would hold them.
    history : list of dict
        One ``{"epoch", "train_loss", "epoch_time", "lr"}`` per epoch trained.
    summary : NetSummary
        As ``summary.json`` of :func:`train_net` would hold it.
    """

    config: NetConfig
    model: torch.nn.Module
    records: list[dict[str, Any]]
    history: list[dict[str, Any]]
    summary: NetSummary


def fit_net(
    config: NetConfig,
    data: DataSplits | None = None,
    *,
    progress: bool = False,
    callback: EpochCallback | None = None,
) -> NetFit:
    """Train a network in memory and return it with its evaluation records; nothing is written.

    The same loop as :func:`train_net` (same initialisation, data order, steps and evaluations, so the model
    equals the one a run folder's checkpoint holds, bit for bit on the CPU), with the run folder's bookkeeping
    kept in memory (:class:`~deepcollapse.nets.checkpoint.MemoryRun`).  Ctrl-C interrupts it as any Python
    call (nothing is kept: use :func:`train_net` for long runs that must resume).

    Parameters
    ----------
    config : NetConfig
        What to train.
    data : DataSplits, optional
        The data (default: the config's, :func:`~deepcollapse.nets.build.load_net_data`), e.g. splits of
        one's own built in the notebook.
    progress : bool
        Show a progress bar over the epochs.
    callback : callable, optional
        ``callback(epoch, record)`` after every epoch (the evaluation record when one was made).

    Returns
    -------
    NetFit
        The model, the records and the summary.

    Examples
    --------
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(dataset="digits", classes=[0, 1, 2], n=4, n_test=2, batch_size=6, layers=2,
    ...                    width=4, backbone="mlp", backbone_width=8, epochs=1, device="cpu", threads=1)
    >>> fit = fit_net(config)
    >>> [r["epoch"] for r in fit.records], [h["epoch"] for h in fit.history], type(fit.model).__name__
    ([0, 1], [1], 'HeadNetwork')
    """
    if not isinstance(config, NetConfig):
        raise ConfigError(f"config == {type(config).__name__}, must be a NetConfig.")
    run = MemoryRun(config)
    try:
        summary = _run(config, run.out, progress=progress, callback=callback, run=run, data=data)
    except DeviceMemoryError:
        raise DeviceMemoryError(
            f"out of {config.device} memory at batch_size == {config.batch_size}: fit_net keeps nothing "
            "on disk; lower batch_size (or use train_net, which checkpoints every epoch)."
        ) from None
    return NetFit(config, run.model, run.records, list(run.state["history"]), summary)


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

    Parameters
    ----------
    config : NetConfig
        The run.
    out_dir : str or Path
        A new (or empty) run folder.
    force : bool, default False
        Replace a run that ``out_dir`` holds.
    progress : bool, default True
        A progress bar over the epochs.
    callback : callable, optional
        :data:`EpochCallback`, ``callback(epoch, record)`` after each epoch's checkpoint.

    Returns
    -------
    NetSummary
        ``summary.json`` of the run.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(dataset="digits", classes=[0, 1, 2], n=4, n_test=2, batch_size=6, layers=2,
    ...                    width=4, backbone="mlp", backbone_width=8, epochs=1, device="cpu", threads=1)
    >>> out = Path(tempfile.mkdtemp()) / "run"
    >>> summary = train_net(config, out, progress=False)
    >>> summary.epochs_done, sorted(p.name for p in out.iterdir())
    (1, ['checkpoint.pt', 'config.yaml', 'metrics.jsonl', 'summary.json'])
    """
    if not isinstance(config, NetConfig):
        raise ConfigError(f"config == {type(config).__name__}, must be a NetConfig.")
    if config.dataset == "mnist_5k":  # a damaged bundled file fails before the run folder is made (cached)
        from deepcollapse.nets.data.mnist5k import read_mnist5k

        read_mnist5k()
    select_device(config.device)  # --device cuda without one: one line, before the run folder is made
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
    max_epochs: int | None = None,
) -> NetSummary:
    """Continue the run in ``out_dir`` from its last checkpoint; a folder stopped before its first checkpoint
    (``config.yaml`` only) starts from epoch 0 with that config (logged).

    ``epochs`` extends (or shortens) the run with the learning-rate schedule it was started with: ``constant``
    as is; ``multistep`` keeps its milestones at the same epochs (the fractions are rescaled to the new
    length); ``cosine`` is defined over the whole run, so a different length is refused (``ConfigError``).
    ``batch_size`` changes the batch size of the remaining epochs (after running out of GPU memory; the result
    then differs from an uninterrupted run).

    Parameters
    ----------
    out_dir : str or Path
        The run folder (holding ``config.yaml``).
    epochs : int, optional
        A new last epoch.
    progress : bool, default True
        A progress bar over the epochs.
    callback : callable, optional
        :data:`EpochCallback`, ``callback(epoch, record)`` after each epoch's checkpoint.
    batch_size : int, optional
        A new batch size for the remaining epochs.
    max_epochs : int, optional
        A new budget for a run of ``until: converged`` (instead of ``epochs``): a run stopped at its budget
        continues exactly as if it had been started with this one.

    Returns
    -------
    NetSummary
        ``summary.json`` of the run.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(dataset="digits", classes=[0, 1, 2], n=4, n_test=2, batch_size=6, layers=2,
    ...                    width=4, backbone="mlp", backbone_width=8, epochs=1, device="cpu", threads=1)
    >>> out = Path(tempfile.mkdtemp()) / "run"
    >>> _ = train_net(config, out, progress=False)
    >>> resume_net(out, epochs=2, progress=False).epochs_done
    2
    """
    out = Path(out_dir)
    if not (out / "config.yaml").is_file():
        raise ConfigError(f"out_dir == {str(out)!r}, must be a net run folder holding config.yaml.")
    config = NetConfig.from_yaml(out / "config.yaml")
    epochs = budget_of(config, epochs, max_epochs, str(out))
    changed = False
    if epochs is not None and epochs != config.epochs:
        config, changed = same_schedule(config, int(epochs), out), True
    if batch_size is not None and batch_size != config.batch_size:
        config, changed = config.replace(batch_size=batch_size), True
    select_device(config.device)
    if (out / "checkpoint.pt").is_file():  # a damaged checkpoint or log is refused before anything is written
        load_run_checkpoint(out / "checkpoint.pt", "cpu")
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
