"""A network run folder on disk: its files, its checkpoint, how a run stops and how it continues.

Owns :data:`RUN_FILES` (``config.yaml``, ``metrics.jsonl``, ``checkpoint.pt``, ``summary.json``; see
docs/architecture.md), :func:`load_run_checkpoint` (a damaged or foreign ``checkpoint.pt`` is a one-line
``ConfigError``), :func:`same_schedule` (``resume --epochs`` with the learning rate of every epoch kept), and
the errors of a run that stops early, each naming the checkpoint kept on disk and the command that resumes:
:class:`DeviceMemoryError` / :func:`oom_error` (out of device memory, naming the batch size) and
:func:`stopped_error` (SIGINT / SIGTERM, see :mod:`deepcollapse._core.interrupt`).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import torch

from deepcollapse._core.checks import ConfigError, Interrupted
from deepcollapse._core.interrupt import StopFlag
from deepcollapse._core.io import load_checkpoint_or_previous
from deepcollapse.nets.config import NetConfig

__all__ = [
    "OOM_ERRORS",
    "RUN_FILES",
    "DeviceMemoryError",
    "load_run_checkpoint",
    "oom_error",
    "same_schedule",
    "stopped_error",
]

RUN_FILES = ("config.yaml", "metrics.jsonl", "checkpoint.pt", "summary.json")


class DeviceMemoryError(ConfigError):
    """The device ran out of memory; the message names the batch size and the checkpoint that was kept."""


#: The exceptions torch raises when a device runs out of memory.
OOM_ERRORS: tuple[type[BaseException], ...] = tuple(
    {getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError), torch.cuda.OutOfMemoryError}
)


def oom_error(config: NetConfig, out: Path, device: torch.device, epoch: int, what: str) -> DeviceMemoryError:
    """The error of a run out of device memory: one line naming the batch size, the checkpoint kept on disk
    and the command that resumes.

    Parameters
    ----------
    config
        The run's configuration.
    out
        The run folder.
    device
        The device that ran out of memory.
    epoch
        The epoch that failed (the checkpoint on disk is epoch ``epoch - 1``'s).
    what
        ``"training"`` (names ``batch_size``) or ``"evaluation"`` (names ``eval_batch_size``).

    Returns
    -------
    DeviceMemoryError
        The error to raise.
    """
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


def stopped_error(flag: StopFlag, out: Path, epoch: int, written: bool) -> Interrupted:
    """The exception of a run stopped by a signal, naming the checkpoint that is on disk (if any).

    Parameters
    ----------
    flag
        The stop flag of :func:`deepcollapse._core.interrupt.stop_on_signals` that was set.
    out
        The run folder.
    epoch
        The epoch that was running (or had just ended).
    written
        Whether the checkpoint of ``epoch`` was written before stopping.

    Returns
    -------
    Interrupted
        The exception to raise, with the command that resumes.
    """
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


def load_run_checkpoint(path: Path, device: Any) -> dict[str, Any]:
    """A run's ``checkpoint.pt`` (its previous one, ``checkpoint.prev.pt``, with a warning, when it is
    damaged: :func:`~deepcollapse._core.io.load_checkpoint_or_previous`), or a one-line ``ConfigError``
    naming it when it is damaged or foreign and no good previous one is there.

    Parameters
    ----------
    path
        The ``checkpoint.pt`` file.
    device
        Where to load its tensors (``map_location``).

    Returns
    -------
    dict
        The checkpoint: ``model``, ``optimizer``, ``state`` (and ``scaler``, ``config``).
    """
    hint = f"delete it to start the run again from config.yaml (deepcollapse net resume {path.parent})"
    return load_checkpoint_or_previous(  # a damaged checkpoint.pt: the previous one (checkpoint.prev.pt)
        path,
        keys=("model", "optimizer", "state"),
        map_location=device,
        hint=hint,
        describe=lambda c: f"epoch {c['state'].get('epoch') if isinstance(c['state'], dict) else '?'}",
    )


def same_schedule(config: NetConfig, epochs: int, out: Path) -> NetConfig:
    """``config`` with ``epochs`` and the learning rate of every epoch unchanged.

    ``constant`` as is; ``multistep`` keeps its milestones at the same epochs (the fractions are rescaled to
    the new length); ``cosine`` spans the whole run, so a different length is a ``ConfigError`` (see
    :func:`deepcollapse.nets.train.resume_net`).

    Parameters
    ----------
    config
        The run's configuration.
    epochs
        The new number of epochs.
    out
        The run folder (named in the error).

    Returns
    -------
    NetConfig
        The configuration to continue with.
    """
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
