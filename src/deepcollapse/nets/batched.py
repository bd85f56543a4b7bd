"""Several network runs trained as one batched network, each in its own run folder (issue 28).

``train_nets(configs, out_dirs)`` trains S runs (the seeds of a sweep point, and the points of the same
architecture, :mod:`deepcollapse.nets.seed_groups`): runs that may share a batch are stepped together by a
:class:`~deepcollapse.nets.seed_batch.SeedBatch` (at most ``batch_seeds`` of them), a run alone goes through
the single-run loop of :mod:`deepcollapse.nets.train`.  ``resume_nets(out_dirs)`` continues such folders (or
any net run folders) the same way; ``deepcollapse net resume DIR [DIR ...]`` calls it.

Every seed is trained as if alone:

- its network is built by :func:`~deepcollapse.nets.build.build_network` from its own config (the
  initialisation of :func:`~deepcollapse.nets.train.train_net`), its data loaded from its own config (its
  subsample and normalisation; seeds with identical data share one copy on the device), its epoch order is
  :func:`~deepcollapse.nets.step.epoch_order` of its seed, its learning rate
  :func:`~deepcollapse.nets.step.lr_at` of its config, its optimizer
  :func:`~deepcollapse.nets.build.make_optimizer` of its config;
- its folder (:class:`~deepcollapse.nets.checkpoint.RunFolder`) holds exactly the files of a single run:
  ``config.yaml``, ``metrics.jsonl`` from :func:`~deepcollapse.nets.evaluate.evaluate` of its own network,
  ``checkpoint.pt`` (its parameters, buffers and optimizer state sliced out of the batch, in the single run's
  format) after every epoch, ``summary.json`` at the end; ``deepcollapse net resume DIR`` continues one
  seed's folder alone, and a batch of folders resumes as a batch;
- a seed whose training loss becomes non-finite stops as a single run does (its folder finished with
  ``diverged``; the others go on).

A seed trained in a batch equals the same seed trained alone to float32 rounding (the batched convolutions
and reductions sum in another order), not bit for bit; a batch resumed from its checkpoints reproduces the
uninterrupted batch bit for bit on the CPU.  Folders stopped at different epochs (a kill between two seeds'
checkpoints) are brought to the same epoch first, the ones behind trained together up to the others.

Faults: SIGINT / SIGTERM stop the batch after the current step (mid-epoch: every folder keeps its previous
epoch's checkpoint) or after the epoch's checkpoints, and :class:`~deepcollapse._core.checks.Interrupted`
names ``deepcollapse net resume`` with every folder; running out of device memory raises
:class:`~deepcollapse.nets.checkpoint.DeviceMemoryError` naming the batch size, the number of seeds in the
batch and a smaller setting, with every finished epoch's checkpoint on disk.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.interrupt import StopFlag, stop_on_signals
from deepcollapse._core.io import prepare_run_folder, read_jsonl
from deepcollapse._core.progress import progress_bar
from deepcollapse.nets.build import (
    load_net_data,
    select_device,
)
from deepcollapse.nets.checkpoint import (
    OOM_ERRORS,
    RUN_FILES,
    RunFolder,
    batch_oom_error,
    batch_stopped_error,
    budget_of,
    load_run_checkpoint,
    same_schedule,
)
from deepcollapse.nets.config import NetConfig, check_batch_seeds
from deepcollapse.nets.data.datasets import DataSplits, ImageData
from deepcollapse.nets.evaluate import evaluate
from deepcollapse.nets.seed_batch import build_seed_batch
from deepcollapse.nets.seed_groups import group_runs
from deepcollapse.nets.step import epoch_order, lr_at
from deepcollapse.nets.summary import NetSummary

__all__ = ["BatchCallback", "resume_nets", "run_nets", "stacked_batch", "train_nets"]

log = logging.getLogger(__name__)

#: ``callback(s, epoch, record)``: seed ``s`` of the call (its index in ``configs`` / ``out_dirs``) ended
#: ``epoch``, its checkpoint on disk; ``record`` is its evaluation (or ``{"epoch", "train_loss_epoch"}``).
BatchCallback = Callable[[int, int, dict[str, Any]], None]


def _step() -> Callable[..., torch.Tensor]:
    """The batched step, looked up at call time (tests wrap ``seed_batch.batched_train_step``)."""
    from deepcollapse.nets import seed_batch

    return seed_batch.batched_train_step


def _shared_data(configs: Sequence[NetConfig], device: torch.device) -> list[DataSplits]:
    """Each run's data on ``device``; runs whose data are identical share one copy."""
    loaded: list[DataSplits] = []
    out: list[DataSplits] = []
    on_device: list[DataSplits] = []
    for c in configs:
        d = load_net_data(c)
        for j, prev in enumerate(loaded):
            if _same(d.train, prev.train) and _same(d.test, prev.test):
                out.append(on_device[j])
                break
        else:
            loaded.append(d)
            on_device.append(DataSplits(d.name, d.train.to(device), d.test.to(device), d.classes))
            out.append(on_device[-1])
    return out


def _same(a: ImageData, b: ImageData) -> bool:
    return (
        a.scale == b.scale
        and torch.equal(a.labels, b.labels)
        and torch.equal(a.mean, b.mean)
        and torch.equal(a.std, b.std)
        and torch.equal(a.images, b.images)
    )


def stacked_batch(datas: Sequence[ImageData], idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Seed ``s``'s batch ``datas[s].batch(idx[s])`` for every seed, stacked: ``((S, B, C, H, W), (S, B))``.

    Seeds sharing one dataset are gathered in one indexing operation (the same elementwise normalisation, so
    the same numbers as :meth:`~deepcollapse.nets.data.datasets.ImageData.batch`).

    Parameters
    ----------
    datas : sequence of ImageData
        One training set per seed (the same object where seeds share it).
    idx : torch.Tensor, (S, B)
        Row ``s``: the sample indices of seed ``s``'s batch.

    Returns
    -------
    tuple of (torch.Tensor, torch.Tensor)
        The normalised float32 images ``(S, B, C, H, W)`` and the labels ``(S, B)``.

    Examples
    --------
    >>> import torch
    >>> from deepcollapse.nets.data.datasets import ImageData
    >>> data = ImageData(torch.zeros(4, 1, 2, 2, dtype=torch.uint8), torch.arange(4), 1.0, torch.zeros(1),
    ...                  torch.ones(1))
    >>> x, y = stacked_batch([data, data], torch.tensor([[0, 1], [2, 3]]))
    >>> tuple(x.shape), y.tolist()
    ((2, 2, 1, 2, 2), [[0, 1], [2, 3]])
    """
    first = datas[0]
    if all(d is first for d in datas):
        x = first.images[idx].to(torch.float32) * first.scale  # (S, B, C, H, W)
        x = (x - first.mean.view(1, 1, -1, 1, 1)) / first.std.view(1, 1, -1, 1, 1)
        return x, first.labels[idx]
    xs, ys = zip(*(d.batch(i) for d, i in zip(datas, idx)))
    return torch.stack(xs), torch.stack(ys)


def _batched_loop(
    configs: Sequence[NetConfig],
    outs: Sequence[Path],
    flag: StopFlag,
    *,
    progress: bool,
    callback: BatchCallback | None,
    until: int | None = None,
) -> list[NetSummary | None]:
    """Train the runs of one batch from their folders' checkpoints (all at the same epoch) to their last
    epoch (or to epoch ``until``, then return ``None``s without summaries)."""
    S = len(configs)
    config = configs[0]
    device = select_device(config.device)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # fixed input shapes: let cuDNN pick the fastest kernels
    datas = _shared_data(configs, device)
    shape = tuple(datas[0].train.images.shape[1:])
    N = len(datas[0].train)
    batch, models, optimizers, scalers = build_seed_batch(configs, shape, device, N)
    runs = [RunFolder(o, c) for o, c in zip(outs, configs)]
    for run, m, opt, sc in zip(runs, models, optimizers, scalers):
        run.restore(device, m, opt, sc)
    epochs = {r.state["epoch"] for r in runs}
    if len(epochs) != 1 or any(r.state["diverged"] for r in runs):
        raise ValueError("the runs of a batch must start at the same epoch, none diverged")
    n_params = sum(p.numel() for p in models[0].parameters())

    def record(s: int, epoch: int, extra: dict[str, Any]) -> dict[str, Any]:
        try:
            rec = {"epoch": epoch, **extra, **evaluate(configs[s], models[s], datas[s]).to_dict()}
        except OOM_ERRORS:
            raise batch_oom_error(config, outs, device, max(epoch, 1), "evaluation") from None
        runs[s].append_record(rec)
        return rec

    for s, run in enumerate(runs):
        if run.needs_initial_record:
            record(s, 0, {"lr": lr_at(configs[s], 1), "train_loss_epoch": None, "epoch_time": 0.0})

    start_epoch = runs[0].state["epoch"]
    last = min(config.epochs, until) if until is not None else config.epochs
    bar = progress_bar(  # a tqdm bar, or reports to the driver inside a pool task (_core.progress)
        total=config.epochs, initial=start_epoch, disable=not progress, desc=f"net x{S}", unit="epoch"
    )
    active = list(range(S))  # seeds still training (a diverged one leaves)
    batch.train()  # the stacked pass (evaluate switches each seed's own network to eval mode and back)
    step = _step()
    epoch = start_epoch
    while epoch < last and active:
        epoch += 1
        lrs = [lr_at(c, epoch) for c in configs]
        for opt, lr in zip(optimizers, lrs):
            for g in opt.param_groups:
                g["lr"] = lr
        t0 = time.perf_counter()
        order = torch.stack([epoch_order(c, epoch, N) for c in configs]).to(device)  # (S, N)
        total = torch.zeros(S, dtype=torch.float64, device=device)  # on the device: no sync per step
        seen = 0
        try:
            for start in range(0, N, config.batch_size):
                idx = order[:, start : start + config.batch_size]  # (S, B)
                if idx.shape[1] < 2:
                    continue
                x, y = stacked_batch([d.train for d in datas], idx)
                losses = step(batch, optimizers, scalers, x, y)  # (S,)
                total += losses.double() * idx.shape[1]
                seen += idx.shape[1]
                if flag.stopped:  # the epoch is dropped: every folder keeps the previous epoch's checkpoint
                    bar.close()
                    raise batch_stopped_error(flag, outs, epoch, written=False)
        except OOM_ERRORS:
            bar.close()
            raise batch_oom_error(config, outs, device, epoch, "training") from None
        train_losses = (total / max(seen, 1)).tolist()
        epoch_time = time.perf_counter() - t0
        for s in list(active):
            run, loss = runs[s], train_losses[s]
            if not math.isfinite(loss):  # as a single run: stop this seed, its last checkpoint stays
                run.state["diverged"] = True
                log.warning(
                    "%s: training loss became %s in epoch %d: stopping (diverged)", run.out, loss, epoch
                )
                active.remove(s)
                run.write_summary(device, n_params, N)
                continue
            run.end_epoch(epoch, loss, epoch_time, lrs[s])
            rec = None
            if run.due(epoch):
                rec = record(s, epoch, {"lr": lrs[s], "train_loss_epoch": loss, "epoch_time": epoch_time})
            run.save(batch.state_dict(s), optimizers[s], scalers[s])
            if callback is not None:
                callback(s, epoch, rec or {"epoch": epoch, "train_loss_epoch": loss})
        bar.update(1)
        bar.set_postfix(loss=f"{min(train_losses):.4g}")
        if flag.stopped and epoch < config.epochs:
            bar.close()
            raise batch_stopped_error(flag, [outs[s] for s in active], epoch, written=True)
    bar.close()
    if until is not None and epoch < config.epochs:
        return [None] * S
    return [run.write_summary(device, n_params, N) if not run.state["diverged"] else None for run in runs]


def _folder_epoch(out: Path) -> tuple[int, bool]:
    """``(epochs done, finished or diverged)`` of a folder from its checkpoint (``(0, False)`` without)."""
    path = out / "checkpoint.pt"
    if not path.is_file():
        return 0, False
    state = load_run_checkpoint(path, "cpu")["state"]
    cfg = NetConfig.from_yaml(out / "config.yaml")
    return int(state["epoch"]), bool(state["diverged"]) or int(state["epoch"]) >= cfg.epochs


def _run_group(
    configs: Sequence[NetConfig],
    outs: Sequence[Path],
    flag: StopFlag,
    *,
    progress: bool,
    callback: BatchCallback | None,
) -> list[NetSummary]:
    """One batch: folders behind the others first trained up to them, then all together."""
    from deepcollapse.nets import train as single

    def alone(i: int) -> NetSummary:
        cb = None if callback is None else (lambda e, r: callback(i, e, r))  # type: ignore[misc]
        return single._loop(configs[i], outs[i], flag, progress=progress, callback=cb)

    result: dict[int, NetSummary] = {}
    while len(result) < len(outs):
        status = {i: _folder_epoch(outs[i]) for i in range(len(outs)) if i not in result}
        for i, (_, finished) in status.items():
            if finished:  # or diverged (also during a catch-up): its summary, as a single resume writes it
                result[i] = alone(i)
        todo = [i for i, (_, finished) in status.items() if not finished]
        if not todo:
            break
        epochs = sorted({status[i][0] for i in todo})
        behind = [i for i in todo if status[i][0] == epochs[0]]
        until = epochs[1] if len(epochs) > 1 else None
        if len(behind) == 1 and until is None:
            result[behind[0]] = alone(behind[0])
            continue
        cb = None if callback is None else (lambda s, e, r, b=behind: callback(b[s], e, r))  # type: ignore[misc]
        done = _batched_loop(
            [configs[i] for i in behind],
            [outs[i] for i in behind],
            flag,
            progress=progress,
            callback=cb,
            until=until,
        )
        if until is None:  # the last phase: every folder of it finished (or diverged, its summary on disk)
            for i, summary in zip(behind, done):
                result[i] = summary if summary is not None else _read_summary(outs[i])
    return [result[i] for i in range(len(outs))]


def _read_summary(out: Path) -> NetSummary:
    from deepcollapse._core.io import read_json

    return NetSummary.from_dict(read_json(out / "summary.json"))


def _train_all(
    configs: Sequence[NetConfig], outs: Sequence[Path], *, progress: bool, callback: BatchCallback | None
) -> list[NetSummary]:
    """Every run, batched as :func:`~deepcollapse.nets.seed_groups.group_runs` says, with each batch's
    ``threads`` (restored afterwards) and SIGINT / SIGTERM stopping it (see the module docstring)."""
    results: dict[int, NetSummary] = {}
    threads = torch.get_num_threads()
    with stop_on_signals() as flag:
        for group in group_runs(configs):
            config = configs[group[0]]
            if config.threads is not None:
                torch.set_num_threads(config.threads)
            try:
                cb = None if callback is None else (lambda s, e, r, g=group: callback(g[s], e, r))
                done = _run_group(
                    [configs[i] for i in group],
                    [outs[i] for i in group],
                    flag,
                    progress=progress,
                    callback=cb,
                )
            finally:
                torch.set_num_threads(threads)
            results.update(zip(group, done))
    return [results[i] for i in range(len(configs))]


def train_nets(
    configs: Sequence[NetConfig],
    out_dirs: Sequence[str | Path],
    *,
    force: bool = False,
    progress: bool = True,
    callback: BatchCallback | None = None,
) -> list[NetSummary]:
    """Train the runs ``configs`` into the folders ``out_dirs``, batched where their ``batch_seeds`` says
    (see the module docstring); return their summaries, in order.

    Parameters
    ----------
    configs : sequence of NetConfig
        One per run.
    out_dirs : sequence of str or Path
        One new (or empty) run folder per run; every folder is checked before anything is written
        (``force``: replace the runs they hold).
    force : bool
        Overwrite existing runs in ``out_dirs``.
    progress : bool
        A progress bar per batch.
    callback : callable, optional
        :data:`BatchCallback`, after each seed's checkpoint is on disk.

    Returns
    -------
    list of NetSummary
        ``summary.json`` of every run.

    Examples
    --------
    >>> from deepcollapse.nets import NetConfig
    >>> from deepcollapse.nets.batched import train_nets
    >>> base = dict(dataset="digits", backbone="mlp", n=10, batch_size=20, epochs=1, device="cpu",
    ...             threads=1, batch_seeds="on")
    >>> import tempfile, pathlib; root = pathlib.Path(tempfile.mkdtemp())
    >>> out = train_nets([NetConfig(**base, seed=s) for s in (0, 1)], [root / "s0", root / "s1"],
    ...                  progress=False)
    >>> [s.epochs_done for s in out]
    [1, 1]
    """
    configs = list(configs)
    if len(configs) != len(out_dirs) or not configs:
        raise ConfigError(f"out_dirs has {len(out_dirs)} folders, must have one per config ({len(configs)}).")
    for c in configs:
        if not isinstance(c, NetConfig):
            raise ConfigError(f"config == {type(c).__name__}, must be a NetConfig.")
    if len({str(Path(o).resolve()) for o in out_dirs}) != len(out_dirs):
        raise ConfigError("out_dirs repeats a folder, must name one folder per run.")
    if any(c.dataset == "mnist_5k" for c in configs):
        from deepcollapse.nets.data.mnist5k import read_mnist5k

        read_mnist5k()
    for device in {c.device for c in configs}:  # --device cuda without one: one line, nothing written
        select_device(device)
    for o in out_dirs:  # every folder checked before any is written
        out = Path(o)
        if out.is_dir() and any(out.iterdir()) and not force:
            prepare_run_folder(out, RUN_FILES, False, "`deepcollapse net resume`")
    outs = [prepare_run_folder(o, RUN_FILES, force, "`deepcollapse net resume`") for o in out_dirs]
    for c, out in zip(configs, outs):
        c.to_yaml(out / "config.yaml")
    return _train_all(configs, outs, progress=progress, callback=callback)


def resume_nets(
    out_dirs: Sequence[str | Path],
    *,
    epochs: int | None = None,
    batch_size: int | None = None,
    batch_seeds: str | int | None = None,
    progress: bool = True,
    callback: BatchCallback | None = None,
    max_epochs: int | None = None,
) -> list[NetSummary]:
    """Continue the net run folders ``out_dirs`` from their checkpoints, batched where their configs allow
    (the folders of one batched run resume as one batch again); return their summaries.

    ``epochs``, ``batch_size`` as in :func:`~deepcollapse.nets.train.resume_net`; ``batch_seeds`` changes how
    many runs share a batch (e.g. fewer after running out of GPU memory).  Every folder is checked (its
    ``config.yaml``, checkpoint and log) before anything is written.

    Parameters
    ----------
    out_dirs : sequence of str or Path
        The run folders (each holding ``config.yaml``; without ``checkpoint.pt`` a run starts from epoch 0).
    epochs : int, optional
        A new last epoch (the schedule is checked to be the same up to the checkpoint).
    batch_size : int, optional
        A new batch size.
    batch_seeds : str or int, optional
        How many runs share a batch from now on (``config.batch_seeds``).
    progress : bool
        A progress bar per batch.
    max_epochs : int, optional
        A new budget for runs of ``until: converged`` (``epochs`` is refused for them, ``max_epochs`` for the
        others: :func:`~deepcollapse.nets.checkpoint.budget_of`; they train alone, each stopping on its own).
    callback : callable, optional
        :data:`BatchCallback`, after each seed's checkpoint is on disk.

    Returns
    -------
    list of NetSummary
        ``summary.json`` of every run, in the order of ``out_dirs``.

    Examples
    --------
    >>> from deepcollapse.nets import NetConfig
    >>> from deepcollapse.nets.batched import train_nets
    >>> base = dict(dataset="digits", backbone="mlp", n=10, batch_size=20, epochs=1, device="cpu",
    ...             threads=1, batch_seeds="on")
    >>> import tempfile, pathlib; root = pathlib.Path(tempfile.mkdtemp())
    >>> outs = [root / "s0", root / "s1"]
    >>> _ = train_nets([NetConfig(**base, seed=s) for s in (0, 1)], outs, progress=False)
    >>> [s.epochs_done for s in resume_nets(outs, epochs=2, progress=False)]
    [2, 2]
    """
    outs = [Path(o) for o in out_dirs]
    if not outs:
        raise ConfigError("out_dirs == [], must name at least one net run folder.")
    if batch_seeds is not None:
        batch_seeds = check_batch_seeds(batch_seeds, "--batch-seeds")
    configs, changed = [], []
    for out in outs:
        if not (out / "config.yaml").is_file():
            raise ConfigError(f"out_dir == {str(out)!r}, must be a net run folder holding config.yaml.")
        config, change = NetConfig.from_yaml(out / "config.yaml"), False
        length = budget_of(config, epochs, max_epochs, str(out))
        if length is not None and length != config.epochs:
            config, change = same_schedule(config, int(length), out), True
        if batch_size is not None and batch_size != config.batch_size:
            config, change = config.replace(batch_size=batch_size), True
        if batch_seeds is not None and batch_seeds != config.batch_seeds:
            config, change = config.replace(batch_seeds=batch_seeds), True
        if (out / "checkpoint.pt").is_file():
            load_run_checkpoint(out / "checkpoint.pt", "cpu")
            read_jsonl(out / "metrics.jsonl", strict=True)
        configs.append(config)
        changed.append(change)
    for device in {c.device for c in configs}:
        select_device(device)
    for out, config, change in zip(outs, configs, changed):
        if change:
            config.to_yaml(out / "config.yaml")
        if not (out / "checkpoint.pt").is_file():
            log.warning("%s holds no checkpoint.pt: starting from epoch 0 with its config.yaml", out)
    return _train_all(configs, outs, progress=progress, callback=callback)


def run_nets(
    configs: Sequence[NetConfig], out_dirs: Sequence[str | Path], *, progress: bool = False
) -> list[NetSummary]:
    """Train or continue the runs of a sweep's tasks (the ``net`` task kind's batched runner): a folder with a
    checkpoint continues from it with the config it holds, any other is (re)started with its config.

    Parameters
    ----------
    configs : sequence of NetConfig
        The tasks' configs.
    out_dirs : sequence of str or Path
        Their run folders.
    progress : bool
        Progress bars.

    Returns
    -------
    list of NetSummary
        Every run's summary, in order.

    Examples
    --------
    >>> from deepcollapse.nets import NetConfig
    >>> base = dict(dataset="digits", backbone="mlp", n=10, batch_size=20, epochs=1, device="cpu",
    ...             threads=1, batch_seeds="on")
    >>> import tempfile, pathlib; root = pathlib.Path(tempfile.mkdtemp())
    >>> out = run_nets([NetConfig(**base, seed=s) for s in (0, 1)], [root / "r0", root / "r1"])
    >>> [s.epochs_done for s in out]
    [1, 1]
    """
    outs = [Path(o) for o in out_dirs]
    run_configs, rewrite = [], []
    for config, out in zip(configs, outs):
        if (out / "checkpoint.pt").is_file():
            load_run_checkpoint(out / "checkpoint.pt", "cpu")  # damaged: one line, before anything runs
            read_jsonl(out / "metrics.jsonl", strict=True)
            held = NetConfig.from_yaml(out / "config.yaml")
            # how many seeds share a batch is the task's to say (fewer after running out of memory)
            rewrite.append(held.batch_seeds != config.batch_seeds)
            run_configs.append(held.replace(batch_seeds=config.batch_seeds))
        else:
            rewrite.append(False)
            run_configs.append(config)
    for device in {c.device for c in run_configs}:
        select_device(device)
    for config, out, again in zip(run_configs, outs, rewrite):
        if not (out / "checkpoint.pt").is_file():
            prepare_run_folder(out, RUN_FILES, True, "`deepcollapse net resume`")
            config.to_yaml(out / "config.yaml")
        elif again:
            config.to_yaml(out / "config.yaml")
    return _train_all(run_configs, outs, progress=progress, callback=None)
