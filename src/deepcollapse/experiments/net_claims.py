"""Whether the 2024 paper's network claims hold in a figure experiment's own runs, in words with the numbers.

Each function reads the runs' table (:func:`~deepcollapse.experiments.regime_map.task_rows`: one row per run
with its outcome ``label``, ``bottleneck_rank``, Gram distances, accuracies, loss) and returns
a :class:`ClaimCheck`: ``holds`` ("yes", "in part", "no") and the sentence for the report.

- Fig. 4 bottom (:func:`fig4_claim`): the head ends low-rank -- ranks 5–7 -- with a cosine Gram of
  ``M~_5`` near the SRG's (``K = 10 = C(5, 2)``).
- Fig. 10 (:func:`fig10_claim`): the average rank of the head's class means falls as the weight decay grows.
- Fig. 2 bottom (:func:`fig2_claim`): the training loss (fit + regularisation) ends below ``L_DNC`` of the
  DUFM with the run's own ``K, L, n, λ``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["ClaimCheck", "fig10_claim", "fig2_claim", "fig4_claim"]

#: The ranks of the 2024 paper's Fig. 4 bottom MNIST heads (text: "ranks 5–7").
PAPER_RANKS = (5, 7)


@dataclass(frozen=True)
class ClaimCheck:
    """The verdict on one claim.

    Attributes
    ----------
    holds : str
        ``"yes"`` (every run), ``"in part"`` (some runs, or part of the claim), ``"no"``, or ``"unknown"``
        (no finished run).
    text : str
        The claim, the verdict and the numbers, in words.
    """

    holds: str
    text: str


def _list(values: pd.Series, fmt: str = "{:.3g}") -> str:
    return ", ".join("n/a" if pd.isna(v) else fmt.format(v) for v in values)


def fig4_claim(runs: pd.DataFrame) -> ClaimCheck:
    """Fig. 4 bottom: a low-rank head with ranks 5–7 and an SRG-like cosine Gram of ``M~_5``.

    A run supports the claim in full when its outcome is ``srg_like``, in part when it is ``low_rank`` with a
    bottleneck rank in 5..7.

    Parameters
    ----------
    runs : DataFrame
        One row per run (``label``, ``bottleneck_rank``, ``gram_to_srg``, ``gram_to_dnc``, ``train_acc``).

    Returns
    -------
    ClaimCheck

    Examples
    --------
    >>> rows = pd.DataFrame({"label": ["srg_like", "low_rank"], "bottleneck_rank": [5, 6],
    ...                      "gram_to_srg": [0.1, 0.5], "gram_to_dnc": [0.7, 0.9], "train_acc": [1.0, 1.0]})
    >>> fig4_claim(rows).holds
    'in part'
    """
    claim = "The paper's Fig. 4 claim (the head ends low-rank, ranks 5–7, with an SRG-like Gram of M~_5)"
    if runs.empty:
        return ClaimCheck("unknown", f"{claim} cannot be judged: no run finished.")
    lo, hi = PAPER_RANKS
    full = runs["label"] == "srg_like"
    ranks = pd.to_numeric(runs["bottleneck_rank"], errors="coerce")
    part = (runs["label"] == "low_rank") & ranks.between(lo, hi)
    n = len(runs)
    holds = "yes" if full.all() else ("in part" if (full | part).any() else "no")
    verdict = {"yes": "holds", "in part": "holds in part", "no": "does not hold"}[holds]
    text = (
        f"{claim} {verdict} in these {n} run(s): outcomes {', '.join(runs['label'])}; bottleneck ranks "
        f"{_list(ranks, '{:.0f}')}; relative distance of the cosine Gram of M~_5 to the SRG Gram "
        f"{_list(runs['gram_to_srg'])} and to the DNC Gram {_list(runs['gram_to_dnc'])} (SRG and DNC are "
        f"0.73 apart); training accuracy {_list(runs['train_acc'])}. {int(full.sum())} run(s) SRG-like, "
        f"{int(part.sum())} low-rank with rank {lo}–{hi}."
    )
    return ClaimCheck(holds, text)


def fig10_claim(runs: pd.DataFrame) -> ClaimCheck:
    """Fig. 10: the average rank of ``M~_2 .. M~_L`` falls as the weight decay ``λ`` grows.

    Runs that ended at the zero or a constant output (chance accuracy, every rank low for that reason) or
    did not converge are left out; the claim holds when the mean average rank falls from each λ to the next
    among the λ's left, in part when it is lower at the largest than at the smallest of them.

    Parameters
    ----------
    runs : DataFrame
        One row per run (``lam``, ``label``, ``avg_rank``).

    Returns
    -------
    ClaimCheck

    Examples
    --------
    >>> runs = pd.DataFrame({"lam": [1e-4, 1e-4, 1e-3, 1e-2], "avg_rank": [9.0, 10.0, 6.0, 1.0],
    ...                      "label": ["low_rank", "dnc", "low_rank", "zero"]})
    >>> fig10_claim(runs).holds
    'yes'
    """
    claim = "The paper's Fig. 10 claim (the average rank of the head's class means falls as λ grows)"
    fitted = runs[~runs["label"].isin(["zero", "constant", "not_converged", "diverged"])]
    left_out = len(runs) - len(fitted)
    note = (
        f" ({left_out} run(s) at the zero or a constant output, not converged or diverged left out)"
        if left_out
        else ""
    )
    means = fitted.groupby("lam")["avg_rank"].mean().sort_index()
    if len(means) < 2:
        return ClaimCheck(
            "unknown",
            f"{claim} cannot be judged: fewer than two weight decays have a converged, non-zero run{note}.",
        )
    steps = np.diff(means.to_numpy())
    holds = "yes" if (steps < 0).all() else ("in part" if means.iloc[-1] < means.iloc[0] else "no")
    verdict = {"yes": "holds", "in part": "holds in part", "no": "does not hold"}[holds]
    shown = ", ".join(f"λ {lam:g}: {r:.2f}" for lam, r in means.items())
    return ClaimCheck(holds, f"{claim} {verdict} here: mean average rank {shown}{note}.")


def fig2_claim(final_losses: pd.Series, loss_dnc: float, loss_srg: float | None) -> ClaimCheck:
    """Fig. 2 bottom: the training loss ends below ``L_DNC`` (towards ``L_SRG``).

    Parameters
    ----------
    final_losses : Series
        The last training loss (fit + regularisation) of each run.
    loss_dnc, loss_srg : float
        The DUFM's levels at the runs' ``K, L, n, λ`` (``loss_srg`` ``None`` where SRG is not defined).

    Returns
    -------
    ClaimCheck

    Examples
    --------
    >>> check = fig2_claim(pd.Series([0.2, 0.25]), 0.22, None)
    >>> check.holds, check.text.split(" (")[-1]
    ('in part', '1 of 2 run(s) below L_DNC).')
    """
    claim = "The paper's Fig. 2 claim (the training loss goes below L_DNC)"
    values = pd.to_numeric(final_losses, errors="coerce").dropna()
    if values.empty:
        return ClaimCheck("unknown", f"{claim} cannot be judged: no run finished.")
    below = values < loss_dnc
    holds = "yes" if below.all() else ("in part" if below.any() else "no")
    verdict = {"yes": "holds", "in part": "holds in part", "no": "does not hold"}[holds]
    srg = "" if loss_srg is None or math.isnan(loss_srg) else f", L_SRG = {loss_srg:.4g}"
    return ClaimCheck(
        holds,
        f"{claim} {verdict} here: final losses {_list(values, '{:.4g}')} against L_DNC = {loss_dnc:.4g}{srg} "
        f"({int(below.sum())} of {len(values)} run(s) below L_DNC).",
    )
