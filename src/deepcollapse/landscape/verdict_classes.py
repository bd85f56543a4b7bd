"""The verdicts' names, as data: which of them certify a point, and the class of a verdict text.

One home for the vocabulary that the descent (:mod:`~deepcollapse.landscape.descent`), the best-known registry
(:mod:`~deepcollapse.landscape.best_known`) and the tables' counts share, without importing the analysis
itself (numpy, scipy, torch): ``deepcollapse best-known show`` classifies the rows it lists with it.
"""

from __future__ import annotations

__all__ = ["CERTIFIED", "VERDICT_CLASSES", "is_certified", "verdict_class"]

#: the verdicts that end the descent: the point is certified (first-order at a kink, or second-order)
CERTIFIED = ("critical at a kink", "local minimum")
#: the verdicts of :func:`~deepcollapse.landscape.verdicts.landscape`, the certified ones first; a row's
#: verdict text starts with one of them (``"local minimum (of the smooth piece with …)"``)
VERDICT_CLASSES = ("local minimum", "critical at a kink", "saddle", "not critical", "undecided at kinks")


def verdict_class(verdict: str | None) -> str:
    """The class of a verdict text: the entry of :data:`VERDICT_CLASSES` it starts with, else
    ``"not judged"``.

    Parameters
    ----------
    verdict : str or None
        A verdict as written in ``point.json`` or a registry row.

    Returns
    -------
    str

    Examples
    --------
    >>> verdict_class("local minimum (of the smooth piece with the 120 zero pre-activations off)")
    'local minimum'
    >>> verdict_class(None)
    'not judged'
    """
    text = verdict or ""
    return next((c for c in VERDICT_CLASSES if text.startswith(c)), "not judged")


def is_certified(verdict: str | None) -> bool:
    """The verdict text certifies its point (its class is one of :data:`CERTIFIED`).

    Parameters
    ----------
    verdict : str or None
        A verdict text (``None``: not judged).

    Returns
    -------
    bool

    Examples
    --------
    >>> is_certified("critical at a kink"), is_certified("undecided at kinks (…)"), is_certified(None)
    (True, False, False)
    """
    return verdict_class(verdict) in CERTIFIED
