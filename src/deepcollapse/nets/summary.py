"""The result of a network run: :class:`NetSummary`, the typed ``summary.json`` of a run folder.

Owns the summary's fields and :func:`run_summary`, which builds it from the loop's state (epochs done, the
per-epoch training losses and times) and the last evaluation record of :mod:`deepcollapse.nets.evaluate`,
whose outcome it decides again with the whole run's losses and its divergence
(:func:`~deepcollapse.nets.outcome.finalise_outcome`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from deepcollapse._core.results import Result
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.convergence import check_convergence
from deepcollapse.nets.outcome import HeadOutcome, finalise_outcome

__all__ = ["NetSummary", "run_summary"]


@dataclass(frozen=True, eq=False)
class NetSummary(Result):
    """The summary of a network run folder (``summary.json``): the result of :func:`train_net` and
    :func:`resume_net`, built by :func:`run_summary`.

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
    until : str
        ``epochs`` or ``converged`` (the config's).
    stop_reason : str
        Why training stopped: ``epochs`` (ran its epochs), ``converged`` (the criterion held,
        :mod:`deepcollapse.nets.convergence`), ``max_epochs`` (the budget ran out first) or ``diverged``.
    convergence : dict or None
        ``until: converged``: the criterion at the last epoch (:class:`~deepcollapse.nets.convergence.
        Convergence`: ``converged``, ``window``, ``loss_change``, ``acc_change``, the tolerances, ``why``).
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
    outcome : HeadOutcome or None
        Where the run landed (:mod:`deepcollapse.nets.outcome`: ``zero``, ``dnc``, ``srg_like``,
        ``low_rank``, ...), with why and the measures; ``None`` in run folders of earlier releases.
    """

    _nested = {"outcome": HeadOutcome}

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
    until: str | None = None
    stop_reason: str | None = None
    convergence: dict[str, Any] | None = None
    epoch: int | None = None
    train_acc: float | None = None
    test_acc: float | None = None
    loss: float | None = None
    fit: float | None = None
    reg: float | None = None
    layers: dict[str, dict[str, Any]] | None = None
    ranks: dict[str, int] | None = None
    dnc1: dict[str, float | None] | None = None
    outcome: HeadOutcome | None = None


def run_summary(
    config: NetConfig,
    state: dict[str, Any],
    last: dict[str, Any] | None,
    device: torch.device,
    n_params: int,
    n_train: int,
) -> NetSummary:
    """The summary of a run: ``summary.json`` is its ``to_dict()``.

    Parameters
    ----------
    config
        The run's configuration.
    state
        The loop's state: ``epoch``, ``diverged``, ``elapsed`` and ``history`` (one dict per epoch with
        ``train_loss`` and ``epoch_time``).
    last
        The last evaluation record (:func:`deepcollapse.nets.evaluate.evaluate` plus ``epoch``), or ``None``.
    device
        The device the run computed on.
    n_params
        The number of parameters of the network.
    n_train
        The number of training samples.

    Returns
    -------
    NetSummary
        The summary; it holds the fields from ``epoch`` on only when ``last`` is given, ``outcome`` when the
        last evaluation stored one or the run diverged; its ``to_dict()`` is the dict of earlier releases.

    Examples
    --------
    Two epochs and no evaluation yet:

    >>> import torch
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(dataset="digits", classes=[0, 1, 2], n=3, n_test=2, batch_size=9, layers=2,
    ...                    width=4, epochs=2, device="cpu")
    >>> history = [{"train_loss": 0.5, "epoch_time": 0.5}, {"train_loss": 0.25, "epoch_time": 1.0}]
    >>> state = {"epoch": 2, "diverged": False, "elapsed": 1.5, "history": history}
    >>> summary = run_summary(config, state, None, torch.device("cpu"), n_params=100, n_train=9)
    >>> summary.num_classes, summary.epoch_time_mean_s, summary.train_loss_per_epoch
    (3, 0.75, [0.5, 0.25])
    >>> list(summary)[-3:], summary.outcome is None
    (['train_loss_per_epoch', 'until', 'stop_reason'], True)
    """
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
        "until": config.until,
    }
    conv = check_convergence(config, state["history"]) if config.until == "converged" else None
    if state["diverged"]:
        out["stop_reason"] = "diverged"
    elif conv is not None:
        out["stop_reason"] = "converged" if conv.converged else "max_epochs"
    else:
        out["stop_reason"] = "epochs"
    if conv is not None:
        out["convergence"] = conv.to_dict()
    if last is not None:
        out.update({k: last[k] for k in ("epoch", "train_acc", "test_acc", "loss", "fit", "reg")})
        out["layers"] = {
            r["name"]: {k: r[k] for k in ("layer", "kind", "dnc1", "dnc2_cond", "rank", "effective_rank")}
            for r in last["layers"]
        }
        out["ranks"] = {r["name"]: r["rank"] for r in last["layers"]}
        out["dnc1"] = {r["name"]: r["dnc1"] for r in last["layers"]}
    outcome = finalise_outcome(
        None if last is None else last.get("outcome"),
        diverged=bool(state["diverged"]),
        train_loss_per_epoch=out["train_loss_per_epoch"],
        classes=config.num_classes,
        layers=config.layers,
        convergence=conv,
    )
    if outcome is not None:
        out["outcome"] = outcome
    return NetSummary.from_dict(out)  # the keys it holds, in order, are those of out
