"""The verdicts' names, as data: which of them certify a point, and the class of a verdict text.

One home for the vocabulary that the descent (:mod:`~deepcollapse.landscape.descent`), the best-known registry
(:mod:`~deepcollapse.landscape.best_known`) and the tables' counts share, without importing the analysis
itself (numpy, scipy, torch): ``deepcollapse best-known show`` classifies the rows it lists with it.
"""

from __future__ import annotations

__all__ = [
    "CERTIFIED",
    "SHORT_MEANINGS",
    "VERDICT_CLASSES",
    "is_certified",
    "verdict_class",
    "verdicts_legend",
]

#: the verdicts that end the descent: the point is certified (first-order at a kink, or second-order)
CERTIFIED = ("critical at a kink", "local minimum")
#: the verdicts of :func:`~deepcollapse.landscape.verdicts.landscape`, the certified ones first; a row's
#: verdict text starts with one of them (``"local minimum (of the smooth piece with …)"``)
VERDICT_CLASSES = ("local minimum", "critical at a kink", "saddle", "not critical", "undecided at kinks")
#: each verdict class (and "not judged") in a line, for a newcomer reading a table of them (``best-known
#: show``, its ``--help``); the full paragraphs are :data:`~deepcollapse.landscape.explain.MEANINGS`
SHORT_MEANINGS: dict[str, str] = {
    "local minimum": "zero gradient, no Hessian eigenvalue below 0 off the symmetries: a minimum's "
    "2nd-order condition",
    "critical at a kink": "at ReLU kinks, derivatives in [0, 1] there zero the gradient (0 in the Clarke "
    "subdifferential): the 1st-order condition; minimum or saddle not decided",
    "saddle": "zero gradient, but a negative Hessian eigenvalue: the loss falls along it, not a minimum",
    "not critical": "a step along the (chain-rule) gradient lowered the loss: not a minimum, descent goes on",
    "undecided at kinks": "near ReLU kinks, neither a zero gradient nor a step lowering the loss was found",
    "not judged": "offered without a verdict (e.g. by dufm search --registry DIR); dufm landscape judges it",
}


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


def verdicts_legend(width: int = 110) -> list[str]:
    """The lines of the verdicts' legend (:data:`SHORT_MEANINGS`, which count as certified), each at most
    ``width`` characters.

    Parameters
    ----------
    width : int, default 110
        The longest line.

    Returns
    -------
    list of str

    Examples
    --------
    >>> lines = verdicts_legend()
    >>> lines[0]
    'verdicts (critical at a kink and local minimum count as certified, the others do not):'
    >>> max(map(len, lines)) <= 110
    True
    """
    import textwrap

    lines = [f"verdicts ({' and '.join(CERTIFIED)} count as certified, the others do not):"]
    name = max(map(len, SHORT_MEANINGS)) + 1
    for verdict, text in SHORT_MEANINGS.items():
        lines += textwrap.wrap(
            text,
            width,
            initial_indent=f"  {verdict + ':':<{name}} ",
            subsequent_indent=" " * (name + 3),
            break_on_hyphens=False,
        )
    return [*lines, "  (`deepcollapse dufm landscape --help` explains each in full)"]
