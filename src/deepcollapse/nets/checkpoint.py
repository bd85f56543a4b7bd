"""A network run folder on disk: its files, its checkpoint, how a run stops and how it continues.

Owns :data:`RUN_FILES` (``config.yaml``, ``metrics.jsonl``, ``checkpoint.pt``, ``summary.json``; see
docs/architecture.md), :func:`load_run_checkpoint` (a damaged or foreign ``checkpoint.pt`` is a one-line
``ConfigError``), :func:`same_schedule` (``resume --epochs`` with the learning rate of every epoch kept), and
the errors of a run that stops early, each naming the checkpoint kept on disk and the command that resumes:
:class:`DeviceMemoryError` / :func:`oom_error` (out of device memory, naming the batch size) and
:func:`stopped_error` (SIGINT / SIGTERM, see :mod:`deepcollapse._core.interrupt`); their counterparts for S
seeds trained as one batch, :func:`batch_oom_error` and :func:`batch_stopped_error`.

:class:`RunFolder` is the one definition of what the loop keeps in a folder (the state restored from and
saved into ``checkpoint.pt``, the records of ``metrics.jsonl``, ``summary.json``), used by the single run
(:mod:`deepcollapse.nets.train`) and by every seed of a batched run (:mod:`deepcollapse.nets.batched`), so
that a batched seed's folder is a single run's folder.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from deepcollapse._core.checks import ConfigError, Interrupted
from deepcollapse._core.docs import fill_doc
from deepcollapse._core.interrupt import StopFlag
from deepcollapse._core.io import (
    append_jsonl,
    atomic_torch_save,
    atomic_write_json,
    finite_or_none,
    load_checkpoint_or_previous,
    truncate_jsonl,
)
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.summary import NetSummary, run_summary

__all__ = [
    "OOM_ERRORS",
    "RUN_FILES",
    "DeviceMemoryError",
    "MemoryRun",
    "RunFolder",
    "batch_oom_error",
    "batch_stopped_error",
    "budget_of",
    "load_run_checkpoint",
    "oom_error",
    "resume_command",
    "same_schedule",
    "stopped_error",
]

log = logging.getLogger(__name__)

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

    Examples
    --------
    >>> import torch
    >>> from pathlib import Path
    >>> from deepcollapse.nets.config import NetConfig
    >>> err = oom_error(NetConfig(batch_size=128), Path("run"), torch.device("cpu"), 2, "training")
    >>> str(err).split(":")[0]
    'batch_size == 128, must be smaller'
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

    Examples
    --------
    >>> import signal, tempfile
    >>> from pathlib import Path
    >>> from deepcollapse._core.interrupt import StopFlag
    >>> flag = StopFlag()
    >>> flag.signum = signal.SIGTERM
    >>> err = stopped_error(flag, Path(tempfile.mkdtemp()), 3, written=True)
    >>> type(err).__name__, str(err).split(";")[0]
    ('Interrupted', 'stopped by SIGTERM after epoch 3')
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
    naming it when it is damaged or foreign and no good previous one is there.  A plain dict: the object
    ``torch.save`` wrote (state dicts of the model, optimizer and scheduler beside the run state), in
    torch's own checkpoint convention.

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

    Examples
    --------
    >>> import tempfile, torch
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "checkpoint.pt"
    >>> torch.save({"model": {}, "optimizer": {}, "state": {"epoch": 3}}, path)
    >>> load_run_checkpoint(path, "cpu")["state"]
    {'epoch': 3}
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

    Examples
    --------
    The milestones of a 10-epoch run (epochs 5 and 8) stay at epochs 5 and 8 over 20 epochs:

    >>> from pathlib import Path
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(epochs=10, lr_schedule="multistep", lr_milestones=[0.5, 0.8])
    >>> same_schedule(config, 20, Path("run")).lr_milestones
    [0.25, 0.4]
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
        return config.replace(epochs=epochs, lr_milestones=kept, **_budget(config, epochs))
    return config.replace(epochs=epochs, **_budget(config, epochs))


def budget_of(config: NetConfig, epochs: int | None, max_epochs: int | None, out: str) -> int | None:
    """The new length asked of a resumed run: ``--epochs`` for ``until: epochs``, ``--max-epochs`` for
    ``until: converged``; the other one is refused (``ConfigError`` naming the folder).

    Parameters
    ----------
    config : NetConfig
        The run's config.
    epochs, max_epochs : int or None
        What the command asked for.
    out : str
        The run folder, for the message.

    Returns
    -------
    int or None
        The new length (``None``: unchanged).

    Examples
    --------
    >>> budget_of(NetConfig(until="converged", max_epochs=10), None, 20, "run")
    20
    >>> budget_of(NetConfig(epochs=10), 20, None, "run")
    20
    """
    if config.until == "converged":
        if epochs is not None:
            raise ConfigError(
                f"--epochs == {epochs}, must be --max-epochs for {out!r}: it trains until converged (its "
                f"budget is --max-epochs {config.max_epochs})."
            )
        return max_epochs
    if max_epochs is not None:
        raise ConfigError(
            f"--max-epochs == {max_epochs}, must be --epochs for {out!r}: it trains for a fixed number of "
            f"epochs ({config.epochs})."
        )
    return epochs


def _budget(config: NetConfig, epochs: int) -> dict[str, int]:
    """``until: converged`` keeps its budget in ``max_epochs`` (which sets ``epochs``)."""
    return {"max_epochs": epochs} if config.until == "converged" else {}


class RunFolder:
    """One run folder and the loop state its checkpoint keeps (see the module docstring).

    Parameters
    ----------
    out : Path
        The run folder (holding ``config.yaml``).
    config : NetConfig
        The run's configuration.

    Attributes
    ----------
    state : dict
        ``epoch`` (epochs done), ``history`` (one ``{"epoch", "train_loss", "train_acc", "epoch_time",
        "lr"}`` per epoch),
        ``elapsed`` (training seconds), ``diverged``, ``last`` (the last evaluation record).
    """

    def __init__(self, out: Path, config: NetConfig) -> None:
        self.out, self.config = Path(out), config
        self.ckpt_path, self.metrics_path = self.out / "checkpoint.pt", self.out / "metrics.jsonl"
        self.state: dict[str, Any] = {
            "epoch": 0,
            "history": [],
            "elapsed": 0.0,
            "diverged": False,
            "last": None,
        }

    def restore(
        self,
        device: Any,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        scaler: torch.amp.GradScaler,
    ) -> None:
        """Load the checkpoint (if any) into ``model``, ``optimizer``, ``scaler`` and :attr:`state`; drop the
        ``metrics.jsonl`` records after its epoch (they belong to an epoch that was not saved).

        Parameters
        ----------
        device : torch.device or str
            Where to load the checkpoint's tensors.
        model : torch.nn.Module
            The network, its state loaded in place.
        optimizer : torch.optim.Optimizer
            Its optimizer, loaded in place.
        scaler : torch.amp.GradScaler
            The loss scaler, loaded in place (when the checkpoint holds one).

        Returns
        -------
        None
            The objects and :attr:`state` are updated in place.

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> from deepcollapse.nets.config import NetConfig
        >>> run = RunFolder(Path(tempfile.mkdtemp()), NetConfig(epochs=2, eval_every=1))
        >>> import torch
        >>> model = torch.nn.Linear(2, 1)
        >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
        >>> scaler = torch.amp.GradScaler("cpu", enabled=False)
        >>> run.end_epoch(1, train_loss=0.5, epoch_time=0.1, lr=0.1)
        >>> run.save(model.state_dict(), opt, scaler)
        >>> again = RunFolder(run.out, run.config)
        >>> again.restore("cpu", model, opt, scaler)
        >>> again.state["epoch"]
        1
        """
        if self.ckpt_path.is_file():
            ckpt = load_run_checkpoint(self.ckpt_path, device)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            if ckpt.get("scaler"):
                scaler.load_state_dict(ckpt["scaler"])
            self.state = ckpt["state"]
            log.info("resuming %s from epoch %d", self.out, self.state["epoch"])
        truncate_jsonl(self.metrics_path, "epoch", self.state["epoch"])

    @property
    def needs_initial_record(self) -> bool:
        """Whether the evaluation of the initialisation (epoch 0) is still to be written.

        Returns
        -------
        bool
            True at epoch 0 with no ``metrics.jsonl`` yet and ``eval_every > 0``.

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> from deepcollapse.nets.config import NetConfig
        >>> run = RunFolder(Path(tempfile.mkdtemp()), NetConfig(epochs=2, eval_every=1))
        >>> run.needs_initial_record
        True
        """
        return self.state["epoch"] == 0 and not self.metrics_path.is_file() and self.config.eval_every > 0

    def due(self, epoch: int) -> bool:
        """Whether epoch ``epoch`` ends with an evaluation (every ``eval_every`` epochs and the last).

        Parameters
        ----------
        epoch : int
            The epoch just done (1-based).

        Returns
        -------
        bool
            True if an evaluation record is due.

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> from deepcollapse.nets.config import NetConfig
        >>> run = RunFolder(Path(tempfile.mkdtemp()), NetConfig(epochs=4, eval_every=3))
        >>> [run.due(e) for e in (1, 2, 3, 4)]
        [False, False, True, True]
        """
        every = self.config.eval_every
        return (every > 0 and epoch % every == 0) or epoch == self.config.epochs

    def append_record(self, record: dict[str, Any]) -> None:
        """Append an evaluation record to ``metrics.jsonl`` (non-finite numbers as ``null``) and keep it as
        the last one.

        Parameters
        ----------
        record : dict
            The record (``epoch``, the loop's bookkeeping and the evaluation).

        Returns
        -------
        None
            The record is on disk and in ``state["last"]``.

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> from deepcollapse.nets.config import NetConfig
        >>> run = RunFolder(Path(tempfile.mkdtemp()), NetConfig(epochs=2, eval_every=1))
        >>> run.append_record({"epoch": 0, "train_acc": float("nan")})
        >>> (run.out / "metrics.jsonl").read_text().strip(), run.needs_initial_record
        ('{"epoch": 0, "train_acc": null}', False)
        """
        append_jsonl(self.metrics_path, [finite_or_none(record)])
        self.state["last"] = record

    def end_epoch(
        self, epoch: int, train_loss: float, epoch_time: float, lr: float, train_acc: float | None = None
    ) -> None:
        """Count epoch ``epoch`` as done (its loss, running accuracy and time in the history).

        Parameters
        ----------
        epoch : int
            The epoch just done.
        train_loss : float
            Its mean training loss.
        epoch_time : float
            Its training time, seconds.
        lr : float
            Its learning rate.
        train_acc : float, optional
            Its running training accuracy (the minibatches before each step; ``until: converged``).

        Returns
        -------
        None
            :attr:`state` is updated.

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> from deepcollapse.nets.config import NetConfig
        >>> run = RunFolder(Path(tempfile.mkdtemp()), NetConfig(epochs=2, eval_every=1))
        >>> run.end_epoch(1, train_loss=0.5, epoch_time=2.0, lr=0.1)
        >>> run.state["epoch"], run.state["elapsed"], run.state["history"][-1]["train_loss"]
        (1, 2.0, 0.5)
        """
        self.state["epoch"] = epoch
        self.state["elapsed"] += epoch_time
        self.state["history"].append(
            {
                "epoch": epoch,
                "train_loss": train_loss,
                "train_acc": train_acc,
                "epoch_time": epoch_time,
                "lr": lr,
            }
        )

    def save(
        self,
        model_state: dict[str, torch.Tensor],
        optimizer: torch.optim.Optimizer,
        scaler: torch.amp.GradScaler,
    ) -> None:
        """Write ``checkpoint.pt`` atomically: ``model``, ``optimizer``, ``scaler`` (``None`` when disabled),
        ``state``, ``config``.

        Parameters
        ----------
        model_state : dict of str to torch.Tensor
            The network's state dict.
        optimizer : torch.optim.Optimizer
            Its optimizer.
        scaler : torch.amp.GradScaler
            The loss scaler.

        Returns
        -------
        None
            ``checkpoint.pt`` is written (the one it replaces kept as ``checkpoint.prev.pt``).

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> from deepcollapse.nets.config import NetConfig
        >>> run = RunFolder(Path(tempfile.mkdtemp()), NetConfig(epochs=2, eval_every=1))
        >>> import torch
        >>> model = torch.nn.Linear(2, 1)
        >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
        >>> run.save(model.state_dict(), opt, torch.amp.GradScaler("cpu", enabled=False))
        >>> sorted(load_run_checkpoint(run.ckpt_path, "cpu"))
        ['config', 'model', 'optimizer', 'scaler', 'state']
        """
        atomic_torch_save(
            {
                "model": model_state,
                "optimizer": optimizer.state_dict(),
                "scaler": scaler.state_dict() if scaler.is_enabled() else None,
                "state": self.state,
                "config": self.config.to_dict(),
            },
            self.ckpt_path,
            keep_previous=True,  # checkpoint.prev.pt: where resume starts if this one is found damaged
        )

    @fill_doc
    def write_summary(self, device: torch.device, n_params: int, n_train: int) -> NetSummary:
        """Write ``summary.json`` from :attr:`state` and return it.

        Parameters
        ----------
        %(net_summary_args)s

        Returns
        -------
        NetSummary
            The summary (:func:`~deepcollapse.nets.summary.run_summary`).

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> from deepcollapse.nets.config import NetConfig
        >>> run = RunFolder(Path(tempfile.mkdtemp()), NetConfig(epochs=2, eval_every=1))
        >>> import torch
        >>> run.end_epoch(1, train_loss=0.5, epoch_time=2.0, lr=0.1)
        >>> summary = run.write_summary(torch.device("cpu"), n_params=10, n_train=4)
        >>> summary.epochs_done, (run.out / "summary.json").is_file()
        (1, True)
        """
        summary = self.summary(device, n_params, n_train)
        atomic_write_json(self.out / "summary.json", finite_or_none(summary.to_dict()))
        return summary

    @fill_doc
    def summary(self, device: torch.device, n_params: int, n_train: int) -> NetSummary:
        """The summary of the run from :attr:`state` (nothing written).

        Parameters
        ----------
        %(net_summary_args)s

        Returns
        -------
        NetSummary
            :func:`~deepcollapse.nets.summary.run_summary` of the run's state and last record.

        Examples
        --------
        >>> import tempfile
        >>> import torch
        >>> from pathlib import Path
        >>> from deepcollapse.nets.config import NetConfig
        >>> run = RunFolder(Path(tempfile.mkdtemp()), NetConfig(epochs=2, eval_every=1))
        >>> run.end_epoch(1, train_loss=0.5, epoch_time=2.0, lr=0.1)
        >>> run.summary(torch.device("cpu"), n_params=10, n_train=4).epochs_done
        1
        """
        return run_summary(self.config, self.state, self.state["last"], device, n_params, n_train)


class MemoryRun(RunFolder):
    """The loop state of a network trained in memory (:func:`~deepcollapse.nets.train.fit_net`):
    :class:`RunFolder`'s bookkeeping (epochs, history, evaluation schedule, summary) without its files --
    nothing is restored, saved or written; the evaluation records are kept in :attr:`records`.

    Parameters
    ----------
    config : NetConfig
        The run's configuration.

    Attributes
    ----------
    state : dict
        As :class:`RunFolder`'s.
    records : list of dict
        The evaluation records, as ``metrics.jsonl`` would hold them (non-finite numbers as ``None``).

    Examples
    --------
    >>> from deepcollapse.nets.config import NetConfig
    >>> run = MemoryRun(NetConfig(epochs=2, eval_every=1))
    >>> run.append_record({"epoch": 0, "loss": float("nan")})
    >>> run.records, run.needs_initial_record
    ([{'epoch': 0, 'loss': None}], False)
    """

    def __init__(self, config: NetConfig) -> None:
        super().__init__(Path("<memory>"), config)
        self.records: list[dict[str, Any]] = []
        self.model: Any = None  # the network, given to restore by the loop

    def restore(self, device: Any, model: Any, optimizer: Any, scaler: Any) -> None:
        """Nothing to restore: a fit in memory starts at epoch 0; the model is kept (:attr:`model`, what
        :func:`~deepcollapse.nets.train.fit_net` returns).

        Parameters
        ----------
        device, optimizer, scaler
            As :meth:`RunFolder.restore` (unused).
        model : torch.nn.Module
            The network the loop trains.

        Returns
        -------
        None

        Examples
        --------
        >>> from deepcollapse.nets.config import NetConfig
        >>> run = MemoryRun(NetConfig())
        >>> run.restore("cpu", "the model", None, None); run.state["epoch"], run.model
        (0, 'the model')
        """
        self.model = model

    @property
    def needs_initial_record(self) -> bool:
        """Whether the record of epoch 0 is still to be made (evaluation on, none made yet).

        Returns
        -------
        bool

        Examples
        --------
        >>> from deepcollapse.nets.config import NetConfig
        >>> MemoryRun(NetConfig(eval_every=1)).needs_initial_record
        True
        """
        return self.state["epoch"] == 0 and not self.records and self.config.eval_every > 0

    def append_record(self, record: dict[str, Any]) -> None:
        """Keep an evaluation record (in :attr:`records`, non-finite numbers as ``None``) as the last one.

        Parameters
        ----------
        record : dict
            The record.

        Returns
        -------
        None

        Examples
        --------
        >>> from deepcollapse.nets.config import NetConfig
        >>> run = MemoryRun(NetConfig())
        >>> run.append_record({"epoch": 1}); run.state["last"]
        {'epoch': 1}
        """
        self.records.append(finite_or_none(record))
        self.state["last"] = record

    def save(self, model_state: dict[str, Any], optimizer: Any, scaler: Any) -> None:
        """Nothing is saved: the model stays in memory.

        Parameters
        ----------
        model_state, optimizer, scaler
            As :meth:`RunFolder.save` (unused).

        Returns
        -------
        None

        Examples
        --------
        >>> from deepcollapse.nets.config import NetConfig
        >>> MemoryRun(NetConfig()).save({}, None, None)
        """

    @fill_doc
    def write_summary(self, device: torch.device, n_params: int, n_train: int) -> NetSummary:
        """The summary of the fit (nothing written).

        Parameters
        ----------
        %(net_summary_args)s

        Returns
        -------
        NetSummary

        Examples
        --------
        >>> import torch
        >>> from deepcollapse.nets.config import NetConfig
        >>> run = MemoryRun(NetConfig(epochs=2, eval_every=1))
        >>> run.end_epoch(1, train_loss=0.5, epoch_time=2.0, lr=0.1)
        >>> run.write_summary(torch.device("cpu"), n_params=10, n_train=4).epochs_done
        1
        """
        return self.summary(device, n_params, n_train)


def resume_command(outs: Sequence[Path]) -> str:
    """The command that continues the run folders ``outs`` (several folders: resumed as one batch).

    Parameters
    ----------
    outs : sequence of Path
        The run folders.

    Returns
    -------
    str
        ``deepcollapse net resume`` with the folders, shell-quoted.

    Examples
    --------
    >>> from pathlib import Path
    >>> resume_command([Path("runs/s0"), Path("my runs/s1")])
    "deepcollapse net resume runs/s0 'my runs/s1'"
    """
    return "deepcollapse net resume " + " ".join(shlex.quote(str(o)) for o in outs)


def batch_oom_error(
    config: NetConfig, outs: Sequence[Path], device: torch.device, epoch: int, what: str
) -> DeviceMemoryError:
    """The error of S seeds batched together running out of device memory: one line naming the batch size,
    the number of seeds in the batch, a smaller setting (half the seeds per batch; with one seed, half the
    batch size) and the command that resumes.

    Parameters
    ----------
    config
        The first seed's configuration (the batch shares ``batch_size`` and ``eval_batch_size``).
    outs
        The seeds' run folders.
    device
        The device that ran out of memory.
    epoch
        The epoch that failed (the checkpoints on disk are epoch ``epoch - 1``'s).
    what
        ``"training"`` or ``"evaluation"``.

    Returns
    -------
    DeviceMemoryError
        The error to raise.

    Examples
    --------
    >>> import torch
    >>> from pathlib import Path
    >>> from deepcollapse.nets.config import NetConfig
    >>> err = batch_oom_error(NetConfig(), [Path("s0"), Path("s1")], torch.device("cpu"), 2, "training")
    >>> str(err).endswith("--batch-seeds 1` (or keep the seeds together with --batch-size 64).")
    True
    """
    S = len(outs)
    if S == 1:
        return oom_error(config, outs[0], device, epoch, what)
    kept = (
        f"the checkpoints of epoch {epoch - 1} are kept in the {S} run folders"
        if epoch > 1
        else f"no checkpoint was written yet (the {S} run folders start again from epoch 0)"
    )
    name, size = (
        ("batch_size", config.batch_size)
        if what == "training"
        else ("eval_batch_size", config.eval_batch_size)
    )
    fewer = max(1, S // 2)
    return DeviceMemoryError(
        f"{name} == {size} with batch_seeds == {S} seeds batched together, must be smaller: {device} ran "
        f"out of memory in {what} at epoch {epoch}; {kept}; a smaller setting: {fewer} "
        f"seed{'s' * (fewer > 1)} per batch (half the memory of a step), resume with "
        f"`{resume_command(outs)} --batch-seeds {fewer}`"
        f" (or keep the seeds together with --batch-size {max(2, config.batch_size // 2)})."
    )


def batch_stopped_error(flag: StopFlag, outs: Sequence[Path], epoch: int, written: bool) -> Interrupted:
    """The exception of S batched seeds stopped by a signal: every folder is left as a single run stopped
    at the same point would leave it (:func:`stopped_error`), and the command resumes them all.

    Parameters
    ----------
    flag
        The stop flag that was set.
    outs
        The seeds' run folders.
    epoch
        The epoch that was running (or had just ended).
    written
        Whether every seed's checkpoint of ``epoch`` was written before stopping.

    Returns
    -------
    Interrupted
        The exception to raise, with the command that resumes all the folders.

    Examples
    --------
    >>> import signal, tempfile
    >>> from pathlib import Path
    >>> from deepcollapse._core.interrupt import StopFlag
    >>> flag = StopFlag()
    >>> flag.signum = signal.SIGINT
    >>> root = Path(tempfile.mkdtemp())
    >>> err = batch_stopped_error(flag, [root / "s0", root / "s1"], 2, written=True)
    >>> str(err).split(";")[0]
    '2 seeds batched together stopped by SIGINT after epoch 2'
    """
    if len(outs) == 1:
        return stopped_error(flag, outs[0], epoch, written)
    resume = resume_command(outs)
    S = len(outs)
    if written:
        what = f"after epoch {epoch}; the checkpoints of epoch {epoch} are written to the {S} run folders"
    elif all((o / "checkpoint.pt").is_file() for o in outs):
        what = (
            f"during epoch {epoch}; the checkpoints of epoch {epoch - 1} in the {S} run folders are kept and "
            f"`{resume}` redoes epoch {epoch} from them"
        )
    else:
        what = (
            f"during epoch {epoch}; no checkpoint was written yet (the first is written at the end of epoch "
            "1); "
            f"`{resume}` starts the {S} runs again from epoch 0 with their config.yaml"
        )
    return flag.interrupted(
        f"{S} seeds batched together stopped by {flag.name} {what} (each folder also resumes alone with "
        "`deepcollapse net resume DIR`)",
        resume,
    )
