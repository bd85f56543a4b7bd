"""DNC vs SRG vs zero (and the deep linear optimum) for every model family: loss × activation (issue 9).

Every candidate carries a ``status`` saying how its loss was obtained, never silently falling back to the MSE
+ ReLU formulas:

* ``closed form`` — the papers' closed forms (MSE + ReLU: :mod:`.constructions`), or the deep linear UFM's
  optimum (MSE + linear: :mod:`.linear`, a closed form up to one 1-D root), or the zero point;
* ``numerical re-optimisation`` — the structure kept, scales and last layer re-optimised numerically
  (cross-entropy: :mod:`.cross_entropy`; CE + linear: the simplex-ETF candidate of :mod:`.linear`);
* ``explicit evaluation (no closed form)`` — relaxed ReLU σ_ε (Definition 7): the ReLU family's optimal
  point of the construction, evaluated as explicit matrices under σ_ε.  When every positive pre-activation
  class-mean entry of that point is ``>= ε``, σ_ε acts on it exactly as ReLU and the value is the ReLU one
  (the status then says so); otherwise the value is only an upper bound of the relaxed construction's
  optimum and no closed form is claimed;
* ``unavailable`` — the construction does not exist for this family (SRG needs ``K >= 6``, ``L >= 2``, and
  a ReLU-like activation: its last layer relies on σ zeroing the negative entries, so not ``linear``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deepcollapse._core.checks import check_int
from deepcollapse._core.results import Result
from deepcollapse.theory.compare import Comparison, compare, parse_range, problem_keys, single_threaded_blas
from deepcollapse.theory.constructions import dnc_solution, srg_defined, srg_solution
from deepcollapse.theory.cross_entropy import ce_dnc, ce_dnc_solution, ce_srg, ce_srg_solution
from deepcollapse.theory.layers import Solution
from deepcollapse.theory.linear import linear_optimum
from deepcollapse.theory.objective import dufm_objective, loss_zero_point
from deepcollapse.theory.problem import Problem, problem_of

__all__ = [
    "CLOSED",
    "EXPLICIT",
    "NUMERIC",
    "UNAVAILABLE",
    "Candidate",
    "FamilyComparison",
    "compare_family",
    "grid_family",
]

CLOSED = "closed form"
NUMERIC = "numerical re-optimisation"
EXPLICIT = "explicit evaluation (no closed form)"
UNAVAILABLE = "unavailable"


@dataclass(frozen=True, eq=False)
class Candidate(Result):
    """One candidate of :func:`compare_family` (``dnc``, ``srg``, ``linear``, ``zero``).

    Attributes
    ----------
    loss : float or None
        Its loss (``None`` where ``status`` is :data:`UNAVAILABLE`).
    status : str
        How the loss was obtained: :data:`CLOSED`, :data:`NUMERIC`, :data:`EXPLICIT` or :data:`UNAVAILABLE`
        (module docstring).
    rank : int or None
        Rank of the intermediate class means.
    scales : list of float or None
        ``α_2 .. α_L`` of the construction.
    construction : str or None
        ``dnc``, ``def9``, ``def11.1``, ``def11.2``, ``linear-optimum``, ``linear-etf``, ``zero`` or ``None``.
    note : str
        Why it is unavailable, or what the value is.
    """

    loss: float | None = None
    status: str | None = None
    rank: int | None = None
    scales: list[float] | None = None
    construction: str | None = None
    note: str | None = None


@dataclass(frozen=True, eq=False)
class FamilyComparison(Result):
    """The candidates of one setting for one model family: the result of :func:`compare_family`.

    ``to_dict()`` is the JSON of ``deepcollapse theory compare --loss ... --activation ... --json``;
    read-only key access (``r["candidates"]["dnc"]["loss"]``) works as for the dict of earlier releases.

    Attributes
    ----------
    classes, layers, n, lam_h, lam_w, Lambda
        The problem, as in :class:`~deepcollapse.theory.compare.Comparison`.
    family : str
        e.g. ``'ce+relu'``.
    loss : {'mse', 'ce'}
        The loss of the family.
    activation : str
        Its activation (``relu``, ``relu_eps``, ``linear``).
    eps : float or None
        ``ε`` of ``relu_eps``.
    candidates : dict of str to Candidate
        ``dnc``, ``srg``, ``zero`` and, for ``activation='linear'``, ``linear``.
    loss_dnc, loss_srg : float or None
        The DNC and SRG candidates' losses.
    ratio : float or None
        ``L_SRG / L_DNC`` (``None`` where SRG is unavailable).
    srg_beats_dnc : bool or None
        ``L_SRG < L_DNC``.
    mse_relu : Comparison or None
        For ``loss="mse"`` only (absent otherwise): the MSE + ReLU
        :func:`~deepcollapse.theory.compare.compare`.
    """

    _nested = {"mse_relu": Comparison}
    _nested_values = {"candidates": Candidate}

    classes: int | None = None
    layers: int | None = None
    n: int | None = None
    lam_h: float | None = None
    lam_w: list[float] | None = None
    Lambda: float | None = None
    family: str | None = None
    loss: str | None = None
    activation: str | None = None
    eps: float | None = None
    candidates: dict[str, Candidate] | None = None
    loss_dnc: float | None = None
    loss_srg: float | None = None
    ratio: float | None = None
    srg_beats_dnc: bool | None = None
    mse_relu: Comparison | None = None


def _cand(
    loss: float | None,
    status: str,
    rank: int | None = None,
    scales: Sequence[float] | None = None,
    construction: str | None = None,
    note: str = "",
) -> dict[str, Any]:
    return {
        "loss": loss,
        "status": status,
        "rank": rank,
        "scales": None if scales is None else [float(s) for s in scales],
        "construction": construction,
        "note": note,
    }


def _min_active_entry(sol: Solution) -> float:
    """Smallest positive pre-activation class-mean entry over layers ``2 .. L`` (``inf`` if none)."""
    out = math.inf
    for M in sol.class_means:
        pos = M[M > 1e-12 * max(float(np.abs(M).max()), 1e-300)]
        if pos.size:
            out = min(out, float(pos.min()))
    return out


def _relaxed(
    build: Any,
    value: float,
    eps: float,
    loss: str,
    lam_h: float,
    lams: list[float],
    rank: int | None,
    scales: Sequence[float] | None,
    construction: str | None,
) -> dict[str, Any]:
    """Evaluate the ReLU-family point ``build()`` under σ_ε (module docstring)."""
    sol = build()
    parts = dufm_objective(sol.H1, sol.weights, lam_h, lams, loss=loss, activation="relu_eps", eps=eps)
    m = _min_active_entry(sol)
    if m >= eps:
        note = f"every active pre-activation >= eps (min {m:.4g}): σ_ε acts as ReLU, value of the ReLU family"
        status = CLOSED if loss == "mse" else NUMERIC
    else:
        note = f"active pre-activations below eps (min {m:.4g}): upper bound of the relaxed construction"
        status = EXPLICIT
    return _cand(parts.total, status, rank, scales, construction, note + f" (ReLU value {value:.10g})")


def compare_family(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | str | None = None,
    *,
    loss: str | None = None,
    activation: str | None = None,
    eps: float | None = None,
    relaxed: bool = True,
    problem: Problem | None = None,
) -> FamilyComparison:
    """Candidates of one setting for one family (``dnc``, ``srg``, ``zero``, and ``linear`` for a linear
    activation), each with the status of its value.

    Parameters
    ----------
    classes, layers, n, lam_h, lam_w
        The problem, as in :func:`~deepcollapse.theory.compare.compare` (or ``classes`` the whole
        :class:`~deepcollapse.theory.problem.Problem`, with its family; the others left out).
    loss : {'mse', 'ce'}
        The loss (default ``'mse'``).
    activation : str
        The activation (:mod:`deepcollapse.family`; default ``'relu'``).
    eps : float, optional
        ``ε`` of ``relu_eps``.
    relaxed : bool
        ``False`` skips the explicit σ_ε evaluations (which build ``K n``-column matrices) and reports them
        unavailable.
    problem : Problem, optional
        The problem and its family by keyword.

    Returns
    -------
    FamilyComparison
        Every field is described in :class:`FamilyComparison`; MSE families carry the whole
        :func:`~deepcollapse.theory.compare.compare` result under ``mse_relu``.

    Examples
    --------
    >>> r = compare_family(6, 3, 1, 0.001, 0.001, loss="ce")
    >>> r.family, r["candidates"]["dnc"]["status"], r.srg_beats_dnc
    ('ce+relu', 'numerical re-optimisation', False)
    >>> sorted(compare_family(3, 2, 1, 0.01, 0.01, activation="linear")["candidates"])
    ['dnc', 'linear', 'srg', 'zero']
    """
    pb = problem_of(
        classes, layers, n, lam_h, lam_w, problem=problem, loss=loss, activation=activation, eps=eps
    ).regularised()
    K, L, n, lam_h, lams = pb.parts()
    fam, loss = pb.family, pb.loss
    act = fam.activation.name
    cands: dict[str, dict[str, Any]] = {}
    extra: dict[str, Any] = {}
    srg_ok = srg_defined(K, L) and act != "linear"
    with single_threaded_blas():
        if loss == "mse":
            base = compare(K, L, n, lam_h, lams)
            extra["mse_relu"] = base
            dnc = _cand(base["loss_dnc"], CLOSED, base["rank_dnc"], base["scales_dnc"], "dnc")
            srg = (
                _cand(
                    base["loss_srg"], CLOSED, base["rank_srg"], base["scales_srg"], base["srg_construction"]
                )
                if base["loss_srg"] is not None
                else None
            )
            if act == "relu_eps" and fam.eps is not None:
                e = fam.eps
                if not relaxed:
                    dnc = _cand(None, UNAVAILABLE, note="relaxed evaluation skipped")
                elif not base["dnc_is_zero"]:
                    dnc = _relaxed(
                        lambda: dnc_solution(K, L, n, lam_h, lams),
                        base["loss_dnc"],
                        e,
                        loss,
                        lam_h,
                        lams,
                        base["rank_dnc"],
                        base["scales_dnc"],
                        "dnc",
                    )
                if srg is not None and srg_ok:
                    srg = (
                        _relaxed(
                            lambda: srg_solution(K, L, n, lam_h, lams),
                            base["loss_srg"],
                            e,
                            loss,
                            lam_h,
                            lams,
                            base["rank_srg"],
                            base["scales_srg"],
                            base["srg_construction"],
                        )
                        if relaxed and base["loss_srg"] < 0.5
                        else srg
                    )
            cands["dnc"] = dnc
        else:
            cd = ce_dnc(K, L, n, lam_h, lams)
            cands["dnc"] = _cand(cd.loss, NUMERIC, cd.rank, cd.scales, "dnc")
            cs = ce_srg(K, L, n, lam_h, lams) if srg_ok else None
            srg = None if cs is None else _cand(cs.loss, NUMERIC, cs.rank, cs.scales, cs.construction)
            if act == "relu_eps" and fam.eps is not None and relaxed:
                e = fam.eps
                if not cd.is_zero:
                    cands["dnc"] = _relaxed(
                        lambda: ce_dnc_solution(K, L, n, lam_h, lams),
                        cd.loss,
                        e,
                        loss,
                        lam_h,
                        lams,
                        cd.rank,
                        cd.scales,
                        "dnc",
                    )
                if cs is not None and not cs.is_zero:
                    srg = _relaxed(
                        lambda: ce_srg_solution(K, L, n, lam_h, lams, cs.construction),
                        cs.loss,
                        e,
                        loss,
                        lam_h,
                        lams,
                        cs.rank,
                        cs.scales,
                        cs.construction,
                    )
        if srg is None or not srg_ok:
            why = (
                "SRG needs a ReLU-like activation (its last layer zeroes negative entries)"
                if act == "linear"
                else "SRG needs K >= 6 and L >= 2 (Definition 11)"
            )
            srg = _cand(None, UNAVAILABLE, note=why)
        cands["srg"] = srg
        if act == "linear":
            lin = linear_optimum(K, L, n, lam_h, lams, loss)
            note = (
                "global optimum (balanced factors, one 1-D problem per singular value of Y)"
                if loss == "mse"
                else "simplex-ETF candidate; the global optimum has no closed form"
            )
            cands["linear"] = _cand(
                lin.loss,
                CLOSED if loss == "mse" else NUMERIC,
                lin.rank,
                None,
                "linear-optimum" if loss == "mse" else "linear-etf",
                note,
            )
        cands["zero"] = _cand(loss_zero_point(K, loss), CLOSED, 0, None, "zero", "all-zero point")
    l_dnc, l_srg = cands["dnc"]["loss"], cands["srg"]["loss"]
    return FamilyComparison.from_dict(
        {
            **problem_keys(K, L, n, lam_h, lams),
            "family": fam.name,
            "loss": loss,
            "activation": act,
            "eps": fam.eps,
            "candidates": cands,
            "loss_dnc": l_dnc,
            "loss_srg": l_srg,
            "ratio": None if l_srg is None or l_dnc is None else l_srg / l_dnc,
            "srg_beats_dnc": None if l_srg is None or l_dnc is None else bool(l_srg < l_dnc),
            **extra,
        }
    )


def grid_family(
    classes: str | Iterable[int],
    layers: str | Iterable[int],
    n: int,
    lam_h: float,
    lam_w: float,
    *,
    loss: str = "mse",
    activation: str = "relu",
    eps: float | None = None,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """One row per ``(K, L)``: ``classes, layers, family, loss_dnc, status_dnc, loss_srg, status_srg,
    srg_construction, rank_srg, ratio, srg_beats_dnc, loss_linear, status_linear`` (same ``λ_W`` in every
    layer).  ``progress`` shows a tqdm bar.

    Parameters
    ----------
    classes : str or iterable of int
        ``K`` values (a range as in :func:`~deepcollapse.theory.compare.parse_range`).
    layers : str or iterable of int
        ``L`` values.
    n : int
        Samples per class.
    lam_h : float
        ``λ_{H_1} >= 0``.
    lam_w : float
        ``λ_W >= 0`` for every layer.
    loss, activation, eps
        The model family (:func:`deepcollapse.family.get_family`).
    progress : bool, default False
        Show a progress bar.

    Returns
    -------
    list of dict
        One JSON-ready row per ``(K, L)``.

    Examples
    --------
    >>> rows = grid_family("3,6", "2", 1, 0.001, 0.001)
    >>> [(row["classes"], row["status_srg"]) for row in rows]
    [(3, 'unavailable'), (6, 'closed form')]
    """
    Ks = parse_range("classes", classes, 2)
    Ls = parse_range("layers", layers, 1)
    check_int("n", n, min=1)
    points: Iterable[tuple[int, int]] = [(K, L) for K in Ks for L in Ls]
    if progress:
        from tqdm import tqdm

        points = tqdm(points, desc=f"theory grid {loss}+{activation}")
    rows = []
    for K, L in points:
        r = compare_family(K, L, n, lam_h, lam_w, loss=loss, activation=activation, eps=eps)
        c = r["candidates"]
        rows.append(
            {
                "classes": K,
                "layers": L,
                "family": r["family"],
                "loss_dnc": c["dnc"]["loss"],
                "status_dnc": c["dnc"]["status"],
                "loss_srg": c["srg"]["loss"],
                "status_srg": c["srg"]["status"],
                "srg_construction": c["srg"]["construction"],
                "rank_srg": c["srg"]["rank"],
                "ratio": r["ratio"],
                "srg_beats_dnc": r["srg_beats_dnc"],
                "loss_linear": c.get("linear", {}).get("loss"),
                "status_linear": c.get("linear", {}).get("status"),
                "loss_zero": c["zero"]["loss"],
            }
        )
    return rows
