"""Closed forms: the optimal DNC and SRG losses (:func:`loss_dnc`, :func:`loss_srg`), Theorem 5's conditions
and the threshold beyond which the all-zero point is optimal."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np
from scipy import optimize

from deepcollapse._core.checks import ConfigError, check_choice, check_int
from deepcollapse._core.docs import fill_doc
from deepcollapse.theory.constructions.geometry import (
    SRG_CONSTRUCTIONS,
    Geometry,
    dnc_geometry,
    srg_defined,
    srg_geometry,
)
from deepcollapse.theory.constructions.scales import optimise_scales
from deepcollapse.theory.graphs import r_from_classes
from deepcollapse.theory.problem import Problem, problem_of


class _HasLoss(Protocol):
    loss: float


_C = TypeVar("_C", bound=_HasLoss)

__all__ = [
    "LOSS_ZERO",
    "ClosedForm",
    "best_srg_candidate",
    "closed_form_problem",
    "loss_dnc",
    "loss_srg",
    "loss_zero",
    "srg_optimum",
    "theorem5_conditions",
    "zero_threshold",
    "zero_threshold_equal_lambda",
]

LOSS_ZERO = 0.5
#: Loss of the all-zero point: exactly 1/2 (fit ``‖Y‖²/(2N) = 1/2``, no regularisation), for any λ.
loss_zero: float = LOSS_ZERO


@dataclass
class ClosedForm:
    """Optimal loss of a construction: ``loss``, ``scales`` (``α_2 .. α_L``; ``[α_1]`` for ``L = 1``; all 0
    when the zero point wins), ``rank`` (rank of the intermediate pre-ReLU class means ``M~_l``, ``2 <= l <=
    L-1``, or of ``M~_L`` when ``L <= 2``; 0 at the zero point), ``construction`` and details (``ranks`` per
    layer ``M~_2 .. M~_L``, ``rank_post`` of ``M_L = ReLU(M~_L)``, ``is_zero``, ``block_scales`` of the DNC
    block of Def. 11.1)."""

    loss: float
    scales: list[float]
    rank: int
    construction: str
    ranks: list[int] = field(default_factory=list)
    rank_post: int = 0
    is_zero: bool = False
    block_scales: list[float] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The closed form in JSON types.  A plain dict: the JSON form kept in a solution's ``info``
        (``info["closed_form"]``).

        Returns
        -------
        dict
            ``loss, scales, rank, construction, ranks, rank_post, is_zero, block_scales``.

        Examples
        --------
        >>> loss_dnc(3, 2, 1, 0.01, 0.01).to_dict()["construction"]
        'dnc'
        """
        return {
            "loss": self.loss,
            "scales": list(self.scales),
            "rank": self.rank,
            "construction": self.construction,
            "ranks": list(self.ranks),
            "rank_post": self.rank_post,
            "is_zero": self.is_zero,
            "block_scales": None if self.block_scales is None else list(self.block_scales),
        }


def _closed(
    geoms: Sequence[Geometry | None], name: str, K: int, L: int, n: int, lam_h: float, lams: list[float]
) -> ClosedForm:
    total = 0.0
    scales_list: list[list[float]] = []
    ranks = np.zeros(max(L - 1, 1), dtype=int)
    rank_post = 0
    for geom in geoms:
        if geom is None:
            scales_list.append([])
            continue
        value, scales = optimise_scales(geom, L, n, lam_h, lams, classes=K)
        total += value
        scales_list.append(scales)
        if scales[-1] > 0:
            ranks += np.asarray(geom.ranks(L))
            rank_post += geom.rank_last_post
    is_zero = all(not s or s[-1] == 0 for s in scales_list)
    if is_zero:
        total = LOSS_ZERO  # exactly (the blocks' zero shares add up to K/(2K))
    rank = int(ranks[0]) if L >= 3 else int(ranks[-1])
    return ClosedForm(
        loss=total,
        scales=scales_list[0],
        rank=rank,
        construction=name,
        ranks=[int(x) for x in ranks],
        rank_post=rank_post,
        is_zero=is_zero,
        block_scales=scales_list[1] if len(geoms) > 1 and geoms[1] else None,
    )


def closed_form_problem(problem: Problem, name: str) -> Problem:
    """``problem`` if its family has these closed forms (mse+relu), else a one-line ``ConfigError`` naming
    the family and the family-aware function (never the mse+relu value for another family).

    Parameters
    ----------
    problem : Problem
        The problem.
    name : str
        The function asked (``loss_dnc``, ``loss_srg``, ``compare``), for the message.

    Returns
    -------
    Problem
        ``problem``.

    Examples
    --------
    >>> closed_form_problem(Problem(3, 2, 1, 0.01, 0.01), "loss_dnc").family.name
    'mse+relu'
    >>> closed_form_problem(Problem(3, 2, 1, 0.01, 0.01, loss="ce"), "loss_dnc")
    Traceback (most recent call last):
        ...
    deepcollapse._core.checks.ConfigError: family ce+relu has no closed form, ...
    """
    if not problem.family.has_closed_form:
        raise ConfigError(
            f"family {problem.family.name} has no closed form, this {name} is the mse+relu one: use "
            f"deepcollapse.{name} (deepcollapse.theory.{name}), which answers for every family."
        )
    return problem


@fill_doc
def loss_dnc(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    *,
    problem: Problem | None = None,
) -> ClosedForm:
    """Optimal DNC loss (Definitions 1/10) of mse+relu, closed form in the scales (a problem of another
    family is refused: :func:`deepcollapse.theory.front_door.loss_dnc` answers for every family):

        L_DNC(α) = √(λ_{W_1} nλ_{H_1}) K √α_2 + Σ_{l=2}^{L-1} (λ_{W_l}/2) K α_{l+1}/α_l
                   + K λ_{W_L} / (2 (α_L + K λ_{W_L}))

    minimised over ``α`` (or 1/2 at the zero point).  ``L = 1`` is the UFM: ``(nλ_H/2) K α_1 +
    Kλ_W/(2(α_1+Kλ_W))``.

    Parameters
    ----------
    %(problem)s
    %(problem_kw)s

    Returns
    -------
    ClosedForm
        The optimal loss, scales and structure.

    Examples
    --------
    >>> c = loss_dnc(3, 2, 1, 0.01, 0.01)
    >>> round(c.loss, 6), c.rank, c.is_zero
    (0.044545, 3, False)
    """
    pb = problem_of(classes, layers, n, lam_h, lam_w, problem=problem)
    K, L, n, lam_h, lams = closed_form_problem(pb, "loss_dnc").regularised().parts()
    return _closed([dnc_geometry(K)], "dnc", K, L, n, lam_h, lams)


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
) -> ClosedForm | None:
    """Optimal SRG loss of mse+relu (Definitions 4/9 for ``K = C(r, 2)``, 11.1 / 11.2 otherwise), ``None``
    where undefined (``K < 6`` or ``L < 2``); a problem of another family is refused
    (:func:`deepcollapse.theory.front_door.loss_srg` answers for every family).  ``construction='best'``
    returns the lower of ``def11.1`` and ``def11.2`` (``def9`` when ``K = C(r, 2)``, where all three
    coincide).  For ``L >= 3`` and ``K = C(r, 2)`` (``s² = C(r-2,2)+1``):

        L_SRG(α) = √(λ_{W_1} nλ_{H_1}) p_0 √α_2 + Σ_{l=2}^{L-2} (λ_{W_l}/2) r α_{l+1}/α_l
                   + (λ_{W_{L-1}}/2) Q α_L/α_{L-1} + Σ_i λ_{W_L}/(2(σ_i² + Kλ_{W_L}))

    with ``p_0 = √2 + √((r-1)(r-2))``, ``Q = K r (r-1)/(4 s²)``, ``σ_i² = e_i α_L`` (Lemma 16).

    Parameters
    ----------
    %(problem)s
    %(theory_construction)s
    %(problem_kw)s

    Returns
    -------
    ClosedForm or None
        The optimal loss of that construction; ``None`` where undefined.

    Examples
    --------
    >>> c = loss_srg(6, 3, 1, 0.001, 0.001)  # K = C(4, 2)
    >>> round(c.loss, 6), c.construction, c.ranks
    (0.012653, 'def9', [4, 3])
    >>> loss_srg(5, 3, 1, 0.001, 0.001) is None
    True
    """
    pb = problem_of(classes, layers, n, lam_h, lam_w, problem=problem)
    K, L, n, lam_h, lams = closed_form_problem(pb, "loss_srg").regularised().parts()
    return srg_optimum(K, L, n, lam_h, lams, construction, _closed)


@fill_doc
def best_srg_candidate(classes: int, construction: str, evaluate: Callable[[str], _C]) -> _C:
    """``evaluate(name)`` of the SRG construction asked for: Definition 9 when ``K = C(r, 2)``, else the one
    named, or for ``"best"`` the lower-loss of Definitions 11.1 and 11.2 (each candidate has ``.loss``).
    Shared by the MSE closed forms and the cross-entropy re-optimisation.

    Parameters
    ----------
    classes : int
        ``K``, the number of classes.
    %(theory_construction)s
    evaluate : callable
        ``evaluate(name)`` for a construction's name, returning an object with ``.loss``.

    Returns
    -------
    object
        ``evaluate``'s result for the construction chosen.

    Examples
    --------
    >>> best_srg_candidate(7, "best", lambda name: loss_srg(7, 3, 1, 0.001, 0.001, name)).construction
    'def11.2'
    """
    if r_from_classes(classes) is not None:
        return evaluate("def9")
    names = ("def11.1", "def11.2") if construction == "best" else (construction,)
    candidates = [evaluate(name) for name in names]
    return min(candidates, key=lambda c: c.loss)


@fill_doc
def srg_optimum(
    classes: int,
    layers: int,
    n: int,
    lam_h: float,
    lam_w: float | Sequence[float],
    construction: str,
    evaluate: Callable[[Sequence[Geometry | None], str, int, int, int, float, list[float]], _C],
) -> _C | None:
    """``evaluate(geometries, name, K, L, n, lam_h, lams)`` of the SRG construction asked for (validated;
    chosen by :func:`best_srg_candidate`), ``None`` where the SRG solution is undefined (``K < 6`` or
    ``L < 2``).  Shared by :func:`loss_srg` (closed form) and ``cross_entropy.ce_srg`` (re-optimisation).

    Parameters
    ----------
    classes, layers, n, lam_h, lam_w
        The problem (:func:`~deepcollapse.theory.problem.problem_of`'s keyword form, every ``λ > 0``).
    %(theory_construction)s
    evaluate : callable
        ``evaluate(geometries, name, K, L, n, lam_h, lams)`` of one construction.

    Returns
    -------
    object or None
        ``evaluate``'s result for the construction chosen; ``None`` where undefined.

    Examples
    --------
    >>> srg_optimum(6, 3, 1, 0.001, 0.001, "best", lambda geoms, name, *problem: name)
    'def9'
    >>> srg_optimum(6, 1, 1, 0.001, 0.001, "best", lambda geoms, name, *problem: name) is None
    True
    """
    K, L, n, lam_h, lams = problem_of(classes, layers, n, lam_h, lam_w).regularised().parts()
    check_choice("construction", construction, ("best", *SRG_CONSTRUCTIONS))
    if not srg_defined(K, L, construction):
        return None
    return best_srg_candidate(
        K, construction, lambda name: evaluate(list(srg_geometry(K, name)), name, K, L, n, lam_h, lams)
    )


def theorem5_conditions(classes: int, layers: int) -> bool:
    """Theorem 5 (2024): ``L_SRG < L_DNC`` if ``K >= 6, L >= 4`` or ``K >= 10, L = 3`` (widths ``d_l >= K``;
    the strict inequality needs a non-trivial DNC optimum, ``L_DNC < 1/2``).

    Parameters
    ----------
    classes : int
        ``K``, the number of classes.
    layers : int
        ``L``, the number of weight matrices.

    Returns
    -------
    bool
        Whether Theorem 5's conditions on ``(K, L)`` hold.

    Examples
    --------
    >>> theorem5_conditions(6, 4), theorem5_conditions(6, 3), theorem5_conditions(10, 3)
    (True, False, True)
    """
    return (classes >= 6 and layers >= 4) or (classes >= 10 and layers == 3)


def zero_threshold(classes: int, layers: int) -> float:
    """``Λ* = nλ_{H_1} Π_l λ_{W_l}`` at and beyond which the DNC optimum is the all-zero point.

    Derived from ``L_DNC``: with ``t = u^{1/L}``, ``L_DNC = min_t A t + 1/(2(1+t^L))``,
    ``A = (L/2) K^{1+1/L} Λ^{1/L}``; ``L_DNC < 1/2`` iff ``A < max_t t^{L-1}/(2(1+t^L))``.  The maximum is
    found numerically here; the closed form is ``Λ* = (L-1)^{L-1} / (L^{2L} K^{L+1})`` (``1/128`` for ``K = L
    = 2``: the quadratic of the 2023 paper, not its printed ``1/256``).  For ``K = 2`` this is Theorem 3 of
    the 2023
    paper: for ``Λ < Λ*`` DNC is the unique global optimum, for ``Λ > Λ*`` the all-zero point.

    Parameters
    ----------
    classes : int
        ``K >= 2``.
    layers : int
        ``L >= 1``.

    Returns
    -------
    float
        ``Λ*``.

    Examples
    --------
    >>> round(zero_threshold(2, 2), 12) == 1 / 128
    True
    """
    K = check_int("classes", classes, min=2)
    L = check_int("layers", layers, min=1)
    if L == 1:
        A_max = 0.5  # A t + 1/(2(1+t)) is convex; zero optimal iff derivative at 0, A - 1/2, is >= 0
    else:
        res = optimize.minimize_scalar(
            lambda x: -math.exp((L - 1) * x) / (2 * (1 + math.exp(L * x))),
            bounds=(-20.0, 20.0),
            method="bounded",
            options={"xatol": 1e-12},
        )
        A_max = -float(res.fun)
    return (2.0 * A_max / (L * K ** (1.0 + 1.0 / L))) ** L


def zero_threshold_equal_lambda(classes: int, layers: int, n: int) -> float:
    """The common ``λ = λ_{H_1} = λ_{W_1} = ... = λ_{W_L}`` at which the DNC optimum becomes the zero point:
    ``n λ^{L+1} = Λ*`` (:func:`zero_threshold`), i.e. ``λ* = (Λ*/n)^{1/(L+1)} ~ 1/(K L n^{1/(L+1)})`` for
    large ``L``.  For ``K = 2`` this is the threshold of Theorem 3 of the 2023 paper, whose text states the
    order ``L^{-1} n^{1/(L+1)}``: the sign of the ``n`` exponent depends on how ``λ_{H_1}`` is normalised;
    here it is eq. (1) of the 2024 paper (``(λ_{H_1}/2)‖H_1‖²`` next to a ``1/(2N)`` fit).

    Parameters
    ----------
    classes : int
        ``K >= 2``.
    layers : int
        ``L >= 1``.
    n : int
        Samples per class.

    Returns
    -------
    float
        ``λ* = (Λ*/n)^{1/(L+1)}``.

    Examples
    --------
    >>> round(zero_threshold_equal_lambda(2, 2, 1) ** 3, 12) == round(zero_threshold(2, 2), 12)
    True
    """
    n = check_int("n", n, min=1)
    return (zero_threshold(classes, layers) / n) ** (1.0 / (layers + 1))
