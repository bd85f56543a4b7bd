"""How far a ``not_converged`` DUFM run is from a verdict: :func:`steps_to_verdict`, :func:`convergence_note`.

The model (:mod:`deepcollapse.dufm.classify`, module docstring, "How far a run is from a verdict"): the loss
approaches its limit geometrically; the rate of decrease per step over the last two intervals between logged
losses gives the factor ``q`` by which it shrinks per step, the gradient norm shrinks by ``√q`` per step.
The thresholds are those of a :class:`~deepcollapse.dufm.criteria.Criteria` (``grad_tol``, ``plateau_tol``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from deepcollapse._core.docs import fill_doc
from deepcollapse._core.format import fmt_num
from deepcollapse.dufm.criteria import Criteria

__all__ = ["convergence_note", "steps_to_verdict"]

_DEFAULT = Criteria()


def _decay_rate(history: list[tuple[int, float | None]] | None) -> tuple[float, float, int, int] | str:
    """``(q, rate at the last step, last step, logging interval)`` of the geometric model of
    :func:`steps_to_verdict`, or why there is none."""
    pts = sorted((int(s), float(v)) for s, v in (history or []) if v is not None and math.isfinite(float(v)))
    pts = [p for i, p in enumerate(pts) if i == 0 or p[0] > pts[i - 1][0]]
    if len(pts) < 3:
        return "fewer than three losses were logged (lower --log-every)"
    (s1, f1), (s2, f2), (s3, f3) = pts[-3:]
    ra, rb = (f1 - f2) / (s2 - s1), (f2 - f3) / (s3 - s2)
    if rb <= 0:
        return "the loss did not fall between the last two records"
    if ra <= 0 or rb >= ra:
        return "its decrease is not slowing down yet"
    ma, mb = (s1 + s2) / 2, (s2 + s3) / 2
    q = (rb / ra) ** (1.0 / (mb - ma))
    gaps = [b[0] - a[0] for a, b in zip(pts, pts[1:])]
    every = max(set(gaps), key=gaps.count)  # the logging interval (the last gap may be shorter)
    return q, rb * q ** (s3 - mb), s3, every


@fill_doc
def steps_to_verdict(
    history: list[tuple[int, float | None]] | None,
    grad_norm: float,
    loss: float,
    criteria: Criteria = _DEFAULT,
) -> tuple[int | None, str]:
    """About how many more GD steps, at the observed rate, until a ``not_converged`` run reaches a verdict:
    its gradient norm at ``criteria.grad_tol`` or its loss flat (``criteria.plateau_tol`` over the last 10 %
    of the steps).

    The model (module docstring): the loss approaches its limit geometrically, the rate of decrease shrinking
    by ``q`` per step (fitted to the last three logged losses) and the gradient norm by ``√q``; the plateau
    rule compares the final loss with the last one logged at or before 90 % of the steps, as
    :func:`classify_run` does with a log every ``log_every`` steps (read off the history).

    Parameters
    ----------
    %(dufm_history)s
    grad_norm : float
        ``‖∇ eq.(1)‖`` at the final step.
    loss : float
        The final loss.
    %(dufm_criteria)s

    Returns
    -------
    steps : int or None
        The estimate (``None`` where the model does not apply).
    why : str
        How it was obtained, or why there is none.

    Examples
    --------
    >>> history = [(s, 1.0 + 0.9 ** (s / 10)) for s in range(0, 101, 10)]
    >>> steps_to_verdict(history, 1e-3, history[-1][1])[0]
    438
    >>> steps_to_verdict(history[:2], 1e-3, history[1][1])
    (None, 'no estimate: fewer than three losses were logged (lower --log-every)')
    """
    grad_tol, plateau_tol = criteria.grad_tol, criteria.plateau_tol
    fit = _decay_rate(history)
    if isinstance(fit, str):
        return None, f"no estimate: {fit}"
    q, rate, T, every = fit
    log_q = math.log(q)
    n_grad = math.inf if grad_norm <= grad_tol else 2.0 * math.log(grad_tol / grad_norm) / log_q

    def flat(N: int) -> bool:  # the loss decrease of the plateau rule after T + N steps, under the model
        end = T + N
        start = (int(0.9 * end) // every) * every
        drop = rate * (q ** (start - T) - q ** (end - T)) / -log_q
        final = loss - rate * (1.0 - q**N) / -log_q  # the loss the rule divides by
        return drop / max(abs(final), 1e-300) <= plateau_tol

    grid = sorted({int(math.ceil(x)) for x in np.geomspace(1, 1e12, 1200)})
    n_flat = next((float(N) for N in grid if flat(N)), math.inf)
    N = min(n_grad, n_flat)
    if not math.isfinite(N):
        return None, "no estimate: the extrapolated decay does not reach a verdict"
    which = f"the gradient norm reaches {grad_tol:g}" if n_grad <= n_flat else "the loss stops falling"
    return int(math.ceil(N)), f"until {which}, extrapolating the decay of the last logged losses"


def _loss_change(plateau: float) -> str:
    """The plateau rule's number in words: the relative loss decrease over the last 10 % of the steps, as a
    percentage of the final loss (what it is divided by), e.g. ``"fell by 5 % of its final value over the
    last 10 % of the steps"``."""
    pct = 100 * abs(plateau)
    shown = f"{pct:,.0f}" if pct >= 100 else fmt_num(pct, 2)  # 500, not 5e2
    verb = "fell" if plateau >= 0 else "rose"
    return f"{verb} by {shown} % of its final value over the last 10 % of the steps"


@fill_doc
def convergence_note(
    rec: dict[str, Any],
    history: list[tuple[int, float | None]] | None,
    loss_dnc: float | None,
    criteria: Criteria = _DEFAULT,
) -> tuple[int | None, str]:
    """``(steps_to_verdict, note)`` of a run labelled ``not_converged`` (its per-run entry ``rec``; module
    docstring).

    Parameters
    ----------
    rec : dict
        The run's per-run entry (``summary.json``): ``grad_norm``, ``loss_decrease_last_10pct``,
        ``final_loss`` and, for a run that stopped moving, ``dnc2_cond``.
    %(dufm_history)s
    loss_dnc : float or None
        ``L_DNC`` of the problem, to say how far above it the run's loss is (None: not said).
    %(dufm_criteria)s

    Returns
    -------
    steps : int or None
        :func:`steps_to_verdict`'s estimate; None for a run that stopped at a full-rank point that is not DNC
        (more steps will not change its label) or where there is no estimate.
    note : str
        The sentence for the report.

    Examples
    --------
    >>> history = [(s, 1.0 + 0.9 ** (s / 10)) for s in range(0, 101, 10)]
    >>> rec = {"grad_norm": 1e-3, "loss_decrease_last_10pct": 0.01, "final_loss": history[-1][1]}
    >>> steps, note = convergence_note(rec, history, None)
    >>> steps, note.split(" and ")[0]
    (438, 'not converged: gradient norm 0.001 (> 0.0001)')
    """
    grad_tol, plateau_tol = criteria.grad_tol, criteria.plateau_tol
    g, plateau = rec["grad_norm"], rec["loss_decrease_last_10pct"]
    moving = g > grad_tol and not (plateau is not None and plateau <= plateau_tol)
    if not moving:  # rule 8: GD stopped at a full-rank point that is not DNC (no known structure)
        flat = "" if plateau is None else f", and the loss {_loss_change(plateau)}"
        cond = rec["dnc2_cond"][-1] if rec.get("dnc2_cond") else None
        why = [f"M_L's σ_1/σ_K is {fmt_num(cond, 4)} (DNC: <= {1 + criteria.dnc2_tol:g})"]
        if loss_dnc:
            gap = rec["final_loss"] / loss_dnc - 1.0
            why.append(f"its loss is {fmt_num(100 * gap, 3)} % {'above' if gap >= 0 else 'below'} L_DNC")
        return None, (
            f"not converged to a known structure: GD stopped (gradient norm {fmt_num(g, 2)}{flat}) at a "
            f"full-rank point that is not DNC: {' and '.join(why)}; more steps will not change this label"
        )
    fell = "" if plateau is None else f" and the loss {_loss_change(plateau)} (> {100 * plateau_tol:g} %)"
    steps, how = steps_to_verdict(history, g, rec["final_loss"], criteria)
    head = f"not converged: gradient norm {fmt_num(g, 2)} (> {grad_tol:g}){fell}"
    if steps is None:
        return None, f"{head}; {how}"
    rounded = round(steps, 2 - len(str(steps))) if steps >= 100 else steps  # two significant digits
    return steps, f"{head}; needs roughly {rounded:,} more steps at this rate ({how})"
