"""When a network run has converged: the criterion of ``until: converged`` (:class:`Convergence`).

A pure function of the run's per-epoch history (mean training loss, running training accuracy and learning
rate of every epoch), so the loop, the summary and a resumed run all decide the same way.  With ``e`` epochs
done, the window is the last ``w = max(MIN_WINDOW, ceil(converge_window · e))`` epochs, split into two halves
``a`` (older) and ``b`` (newer).  The run has converged when

- every epoch of the window ran at the schedule's last learning rate (``lr_at(config, epochs)``: from the
  start for ``constant``, after the last milestone for ``multistep``; a decay inside the window moves the
  loss by itself),
- the relative change of the mean training loss ``|ℓ_a − ℓ_b| / |ℓ_a| <= converge_rtol`` and
- the change of the mean training accuracy ``|acc_a − acc_b| <= converge_acc_tol``.

Halves, not single epochs: an epoch's mean minibatch loss carries SGD noise, the mean over half a window far
less.  The accuracy is the running accuracy of the training minibatches (train mode, before each step; no
extra pass).  A converged run may still fit its training set badly (a stationary point at 0.6 accuracy, or
the constant output of heavy weight decay): convergence says training has stopped moving, the outcome
(:mod:`deepcollapse.nets.outcome`) says where.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deepcollapse._core.results import Result

__all__ = ["MIN_WINDOW", "Convergence", "check_convergence"]

#: The fewest epochs the criterion compares (two halves of 5).
MIN_WINDOW = 10


@dataclass(frozen=True, eq=False)
class Convergence(Result):
    """Whether the run has converged after ``epoch`` epochs, with the numbers that decided.

    Attributes
    ----------
    converged : bool
        The criterion of the module docstring holds.
    epoch : int
        Epochs done.
    window : int
        Epochs compared (``w``).
    loss_change : float or None
        ``|ℓ_a − ℓ_b| / |ℓ_a|`` (``None`` with fewer than ``w`` epochs, or a missing value).
    acc_change : float or None
        ``|acc_a − acc_b|`` (``None`` likewise).
    rtol, acc_tol : float
        The tolerances (``converge_rtol``, ``converge_acc_tol``).
    why : str
        The criterion's numbers in words (whether they meet it is ``converged``).
    """

    converged: bool
    epoch: int
    window: int
    loss_change: float | None
    acc_change: float | None
    rtol: float
    acc_tol: float
    why: str


def _mean(values: Sequence[Any]) -> float | None:
    if not values or any(v is None or not math.isfinite(v) for v in values):
        return None
    return float(sum(values)) / len(values)


def check_convergence(config: Any, history: Sequence[Mapping[str, Any]]) -> Convergence:
    """The convergence criterion (module docstring) of a run with this per-epoch ``history``.

    Parameters
    ----------
    config : NetConfig
        ``converge_rtol``, ``converge_acc_tol``, ``converge_window`` and the schedule (``lr_at``).
    history : sequence of dict
        One ``{"train_loss", "train_acc", "lr"}`` per epoch done, in order (the run state's ``history``).

    Returns
    -------
    Convergence

    Examples
    --------
    A flat loss and accuracy over 20 epochs at a constant learning rate:

    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(until="converged", max_epochs=50, lr_schedule="constant", lr=0.1)
    >>> flat = [{"train_loss": 0.2, "train_acc": 1.0, "lr": 0.1}] * 20
    >>> check_convergence(config, flat).converged
    True
    >>> falling = [{"train_loss": 1.0 / (e + 1), "train_acc": 1.0, "lr": 0.1} for e in range(20)]
    >>> c = check_convergence(config, falling)
    >>> c.converged, round(c.loss_change, 3)
    (False, 0.282)
    """
    from deepcollapse.nets.step import lr_at

    e = len(history)
    w = max(MIN_WINDOW, math.ceil(config.converge_window * e))
    rtol, acc_tol = float(config.converge_rtol), float(config.converge_acc_tol)

    def result(converged: bool, loss: float | None, acc: float | None, why: str) -> Convergence:
        return Convergence(converged, e, w, loss, acc, rtol, acc_tol, why)

    if e < w:
        return result(False, None, None, f"{e} epoch(s) done, the criterion compares the last {w}")
    window = history[e - w :]
    h = w // 2
    older, newer = window[: w - h], window[w - h :]
    loss_a = _mean([r.get("train_loss") for r in older])
    loss_b = _mean([r.get("train_loss") for r in newer])
    acc_a = _mean([r.get("train_acc") for r in older])
    acc_b = _mean([r.get("train_acc") for r in newer])
    d_loss = None if loss_a is None or loss_b is None or loss_a == 0 else abs(loss_a - loss_b) / abs(loss_a)
    d_acc = None if acc_a is None or acc_b is None else abs(acc_a - acc_b)
    last_lr = lr_at(config, config.epochs)
    if any(not math.isclose(float(r.get("lr", math.nan)), last_lr, rel_tol=1e-12) for r in window):
        why = f"the learning rate has not been at its last value {last_lr:.4g} for {w} epochs"
        return result(False, d_loss, d_acc, why)
    numbers = (
        f"over the last {w} epochs the training loss changed by "
        f"{'?' if d_loss is None else f'{100 * d_loss:.3g} %'} (tolerance {100 * rtol:g} %) and the training "
        f"accuracy by {'?' if d_acc is None else f'{d_acc:.3g}'} (tolerance {acc_tol:g})"
    )
    ok = d_loss is not None and d_acc is not None and d_loss <= rtol and d_acc <= acc_tol
    return result(ok, d_loss, d_acc, numbers)
