"""The theory of a problem for its model family: :func:`loss_dnc`, :func:`loss_srg`, :func:`compare` (what
``deepcollapse.loss_dnc`` / ``loss_srg`` / ``compare`` and ``deepcollapse.theory`` give).

For mse+relu these are the closed forms (:mod:`.constructions`, :func:`.compare.compare`), unchanged; for
another family (a :class:`~deepcollapse.theory.problem.Problem` with ``loss`` / ``activation``) they answer
with that family's candidates of :func:`~deepcollapse.theory.family_compare.compare_family`, the values of
``deepcollapse theory compare --loss ... --activation ...``, each with the status of its value.  Where the
family has no such construction (SRG for a linear activation) they refuse with a one-line ``ConfigError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

from deepcollapse._core.checks import ConfigError, check_choice
from deepcollapse._core.docs import fill_doc
from deepcollapse.theory.compare import Comparison
from deepcollapse.theory.compare import compare as _compare_closed
from deepcollapse.theory.constructions import SRG_CONSTRUCTIONS, ClosedForm
from deepcollapse.theory.constructions.closed_forms import loss_dnc as _loss_dnc_closed
from deepcollapse.theory.constructions.closed_forms import loss_srg as _loss_srg_closed
from deepcollapse.theory.family_compare import UNAVAILABLE, Candidate, FamilyComparison, compare_family
from deepcollapse.theory.problem import Problem, problem_of

__all__ = ["compare", "loss_dnc", "loss_srg"]


def _candidate(problem: Problem, name: str, construction: str = "best") -> Candidate | None:
    """The ``dnc`` / ``srg`` candidate of :func:`compare_family` (``None`` where unavailable), after the
    refusals of a family that has no such construction."""
    fam = problem.family
    if name == "srg":
        check_choice("construction", construction, ("best", *SRG_CONSTRUCTIONS))
        if fam.activation.name == "linear":
            raise ConfigError(
                "loss_srg: the SRG construction is defined for ReLU heads; activation 'linear' has none "
                f"(family {fam.name}); use loss_dnc, or compare for its linear candidate."
            )
        if construction != "best":
            raise ConfigError(
                f"construction == {construction!r}, must be 'best' for family {fam.name} (one construction "
                "at a time is a closed form of mse+relu only; 'best' gives this family's SRG candidate)."
            )
    candidate = compare_family(problem=problem)["candidates"][name]
    return None if candidate.status == UNAVAILABLE else candidate


@overload
def loss_dnc(
    classes: int,
    layers: int,
    n: int,
    lam_h: float,
    lam_w: float | Sequence[float],
    *,
    problem: None = None,
) -> ClosedForm: ...


@overload
def loss_dnc(
    classes: Problem | None = None,
    layers: None = None,
    n: None = None,
    lam_h: None = None,
    lam_w: None = None,
    *,
    problem: Problem | None = None,
) -> ClosedForm | Candidate: ...


@fill_doc
def loss_dnc(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    *,
    problem: Problem | None = None,
) -> ClosedForm | Candidate:
    """Optimal DNC loss of the problem's family: the closed form for mse+relu
    (:func:`~deepcollapse.theory.constructions.loss_dnc`), else the family's DNC candidate.

    Parameters
    ----------
    %(problem)s
    %(problem_kw)s

    Returns
    -------
    ClosedForm or Candidate
        mse+relu: the optimal loss, scales and structure; another family: its
        :class:`~deepcollapse.theory.family_compare.Candidate` (``loss``, ``status``, ``rank``, ``scales``).

    Examples
    --------
    >>> round(loss_dnc(3, 2, 1, 0.01, 0.01).loss, 6)
    0.044545
    >>> ce = loss_dnc(Problem(3, 2, 1, 0.01, 0.01, loss="ce"))
    >>> round(ce.loss, 6), ce.status
    (0.128171, 'numerical re-optimisation')
    """
    pb = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).regularised()
    if pb.family.has_closed_form:
        return _loss_dnc_closed(pb)
    candidate = _candidate(pb, "dnc")
    assert candidate is not None  # every family has its DNC candidate
    return candidate


@overload
def loss_srg(
    classes: int,
    layers: int,
    n: int,
    lam_h: float,
    lam_w: float | Sequence[float],
    construction: str = "best",
    *,
    problem: None = None,
) -> ClosedForm | None: ...


@overload
def loss_srg(
    classes: Problem | None = None,
    layers: None = None,
    n: None = None,
    lam_h: None = None,
    lam_w: None = None,
    construction: str = "best",
    *,
    problem: Problem | None = None,
) -> ClosedForm | Candidate | None: ...


@fill_doc
def loss_srg(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    construction: str = "best",
    *,
    problem: Problem | None = None,
) -> ClosedForm | Candidate | None:
    """Optimal SRG loss of the problem's family: the closed form for mse+relu
    (:func:`~deepcollapse.theory.constructions.loss_srg`), else the family's SRG candidate (the best
    construction); ``None`` where undefined (``K < 6`` or ``L < 2``).

    Parameters
    ----------
    %(problem)s
    %(theory_construction)s
    %(problem_kw)s

    Returns
    -------
    ClosedForm, Candidate or None
        mse+relu: the optimal loss of that construction; another family: its
        :class:`~deepcollapse.theory.family_compare.Candidate`; ``None`` where undefined.

    Raises
    ------
    ConfigError
        A linear activation (it has no SRG construction), or ``construction`` other than ``'best'`` outside
        mse+relu.

    Examples
    --------
    >>> loss_srg(6, 3, 1, 0.001, 0.001).construction
    'def9'
    >>> round(loss_srg(Problem(6, 3, 1, 0.001, 0.001, loss="ce")).loss, 6)
    0.03586
    >>> loss_srg(Problem(6, 3, 1, 0.001, 0.001, activation="linear"))
    Traceback (most recent call last):
        ...
    deepcollapse._core.checks.ConfigError: loss_srg: the SRG construction is defined for ReLU heads; ...
    """
    pb = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).regularised()
    if pb.family.has_closed_form:
        return _loss_srg_closed(pb, construction=construction)
    return _candidate(pb, "srg", construction)


@overload
def compare(
    classes: int,
    layers: int,
    n: int,
    lam_h: float,
    lam_w: float | Sequence[float] | str,
    *,
    problem: None = None,
) -> Comparison: ...


@overload
def compare(
    classes: Problem | None = None,
    layers: None = None,
    n: None = None,
    lam_h: None = None,
    lam_w: None = None,
    *,
    problem: Problem | None = None,
) -> Comparison | FamilyComparison: ...


@fill_doc
def compare(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | str | None = None,
    *,
    problem: Problem | None = None,
) -> Comparison | FamilyComparison:
    """DNC, SRG and zero losses of the problem's family at one setting, as ``theory compare`` reports them:
    :func:`~deepcollapse.theory.compare.compare` for mse+relu, else
    :func:`~deepcollapse.theory.family_compare.compare_family`.

    Parameters
    ----------
    %(problem)s
    %(problem_kw)s

    Returns
    -------
    Comparison or FamilyComparison
        ``to_dict()`` is the JSON of ``deepcollapse theory compare [--loss ... --activation ...] --json``.

    Examples
    --------
    >>> round(compare(6, 3, 1, 0.001, 0.001).loss_srg, 6)
    0.012653
    >>> ce = compare(Problem(6, 3, 1, 0.001, 0.001, loss="ce"))
    >>> ce.family, round(ce.loss_dnc, 6), ce["candidates"]["srg"]["construction"]
    ('ce+relu', 0.034067, 'def9')
    """
    pb = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).regularised()
    if pb.family.has_closed_form:
        return _compare_closed(pb)
    return compare_family(problem=pb)
