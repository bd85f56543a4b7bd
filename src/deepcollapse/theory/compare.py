"""DNC vs SRG vs zero: one setting (:func:`compare`) or a grid over ``K`` and ``L`` (:func:`grid`)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from deepcollapse._core.checks import ConfigError, check_int
from deepcollapse._core.docs import fill_doc
from deepcollapse._core.results import Result
from deepcollapse.theory.constructions import (
    LOSS_ZERO,
    loss_dnc,
    loss_srg,
    theorem5_conditions,
    zero_threshold,
    zero_threshold_equal_lambda,
)
from deepcollapse.theory.constructions.closed_forms import closed_form_problem
from deepcollapse.theory.problem import Problem, problem_of

__all__ = ["Comparison", "compare", "grid", "parse_range", "single_threaded_blas"]


@dataclass(frozen=True, eq=False, kw_only=True)
class Comparison(Result):
    """Optimal DNC, SRG and zero losses at one setting: the result of :func:`compare` (``theory compare``).

    Read-only key access (``c["loss_dnc"]``) works as for the dict of earlier releases; ``to_dict()`` is the
    JSON of ``deepcollapse theory compare --json``.  ``loss_dnc``, ``loss_srg`` and ``loss_zero`` are
    required (keyword-only; ``None`` where there is no closed form, as in
    :func:`~deepcollapse.dufm.classify.theory_of`); ``from_dict`` reads one an older file lacks as ``None``.

    Attributes
    ----------
    classes, layers, n : int
        The problem: ``K`` classes, ``L`` layers, ``n`` samples per class.
    lam_h : float
        ``λ_{H_1}``.
    lam_w : list of float
        ``λ_{W_l}``, one per layer (length ``L``).
    Lambda : float
        ``Λ = nλ_{H_1} Π_l λ_{W_l}``, on which all these losses depend.
    loss_dnc : float
        Optimal loss of DNC (Theorem 3).
    loss_srg : float or None
        Best SRG construction; ``None`` where undefined (``K < 6`` or ``L < 2``).
    srg_construction : {'def9', 'def11.1', 'def11.2'} or None
        Which construction ``loss_srg`` is.
    loss_srg_constructions : dict of str to float
        Every defined construction's loss.
    loss_zero : float
        The all-zero point, 1/2.
    scales_dnc, scales_srg : list of float or None
        ``α_2 .. α_L`` of the optimal construction (all 0 at the zero point).
    scales_srg_dnc_block : list of float or None
        Scales of the DNC block of Definition 11.1.
    rank_dnc, rank_srg : int or None
        Rank of the intermediate class means.
    ranks_srg : list of int or None
        Ranks of ``M~_2 .. M~_L`` of the SRG construction.
    rank_srg_post : int or None
        Rank of ``ReLU(M~_L)``.
    ratio : float or None
        ``L_SRG / L_DNC``.
    srg_beats_dnc : bool or None
        ``L_SRG < L_DNC``.
    dnc_is_zero : bool
        The optimal DNC point is the zero point.
    zero_threshold : float
        ``Λ*`` of the DNC problem.
    zero_threshold_equal_lambda : float
        The common ``λ`` with ``nλ^{L+1} = Λ*``.
    theorem5 : bool
        Theorem 5's conditions on ``K, L`` hold.
    theorem5_strict : bool
        Those and ``L_DNC < 1/2`` (where the strict inequality holds).
    """

    classes: int | None = None
    layers: int | None = None
    n: int | None = None
    lam_h: float | None = None
    lam_w: list[float] | None = None
    Lambda: float | None = None
    loss_dnc: float | None
    loss_srg: float | None
    srg_construction: str | None = None
    loss_srg_constructions: dict[str, float] | None = None
    loss_zero: float | None
    scales_dnc: list[float] | None = None
    scales_srg: list[float] | None = None
    scales_srg_dnc_block: list[float] | None = None
    rank_dnc: int | None = None
    rank_srg: int | None = None
    ranks_srg: list[int] | None = None
    rank_srg_post: int | None = None
    ratio: float | None = None
    srg_beats_dnc: bool | None = None
    dnc_is_zero: bool | None = None
    zero_threshold: float | None = None
    zero_threshold_equal_lambda: float | None = None
    theorem5: bool | None = None
    theorem5_strict: bool | None = None


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Limit BLAS/OpenMP to one thread inside the block (restored afterwards; no-op without
    ``threadpoolctl``).

    The theory engine only factorises matrices of size <= ~100; multi-threaded BLAS makes that 5x slower on a
    shared 2-core machine (measured: ``theory grid`` for K <= 100, L <= 8 took 0.9 s single-threaded vs 5.4
    s).

    Yields
    ------
    None
        The block runs with one BLAS/OpenMP thread.

    Examples
    --------
    >>> with single_threaded_blas():
    ...     loss = compare(6, 3, 1, 0.001, 0.001).loss_dnc
    >>> round(loss, 6)
    0.011982
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        yield
        return
    with threadpool_limits(limits=1):
        yield


def problem_keys(K: int, L: int, n: int, lam_h: float, lams: list[float]) -> dict[str, Any]:
    """The problem as the first keys of a result dict: ``classes, layers, n, lam_h, lam_w`` and
    ``Lambda = nλ_{H_1} Π_l λ_{W_l}`` (shared by :func:`compare` and ``family_compare.compare_family``).
    A plain dict: keys merged into a result's JSON dict (``{**problem_keys(...), ...}``), not a result.

    Parameters
    ----------
    K, L, n : int
        Classes, layers, samples per class.
    lam_h : float
        ``λ_{H_1}``.
    lams : list of float
        ``λ_{W_1} .. λ_{W_L}``.

    Returns
    -------
    dict
        ``classes, layers, n, lam_h, lam_w, Lambda``.

    Examples
    --------
    >>> keys = problem_keys(3, 2, 10, 0.5, [0.5, 0.5])
    >>> list(keys), keys["Lambda"]
    (['classes', 'layers', 'n', 'lam_h', 'lam_w', 'Lambda'], 1.25)
    """
    return {
        "classes": K,
        "layers": L,
        "n": n,
        "lam_h": lam_h,
        "lam_w": lams,
        "Lambda": n * lam_h * math.prod(lams),
    }


@fill_doc
def compare(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | str | None = None,
    *,
    problem: Problem | None = None,
) -> Comparison:
    """Optimal DNC, SRG and zero losses of mse+relu at one setting, as a :class:`Comparison` (``to_dict()``:
    JSON); a problem of another family is refused (:func:`deepcollapse.theory.front_door.compare` answers for
    every family).

    Parameters
    ----------
    %(problem)s
    %(problem_kw)s

    Returns
    -------
    Comparison
        Every field is described in :class:`Comparison`.

    Examples
    --------
    >>> c = compare(6, 3, 1, 0.001, 0.001)
    >>> round(c.loss_dnc, 6), round(c.loss_srg, 6), c.srg_construction, c.srg_beats_dnc
    (0.011982, 0.012653, 'def9', False)
    >>> c.to_dict()["loss_zero"]
    0.5
    """
    pb = problem_of(classes, layers, n, lam_h, lam_w, problem=problem)
    K, L, n, lam_h, lams = closed_form_problem(pb, "compare").regularised().parts()
    per: dict[str, float] = {}
    with single_threaded_blas():
        dnc = loss_dnc(K, L, n, lam_h, lams)
        srg = loss_srg(K, L, n, lam_h, lams)
        if srg is not None and srg.construction in ("def11.1", "def11.2"):
            for name in ("def11.1", "def11.2"):
                cf = loss_srg(K, L, n, lam_h, lams, construction=name)
                if cf is not None:
                    per[name] = cf.loss
        elif srg is not None:
            per[srg.construction] = srg.loss
    return Comparison.from_dict(
        {
            **problem_keys(K, L, n, lam_h, lams),
            "loss_dnc": dnc.loss,
            "loss_srg": None if srg is None else srg.loss,
            "srg_construction": None if srg is None else srg.construction,
            "loss_srg_constructions": per,
            "loss_zero": LOSS_ZERO,
            "scales_dnc": dnc.scales,
            "scales_srg": None if srg is None else srg.scales,
            "scales_srg_dnc_block": None if srg is None else srg.block_scales,
            "rank_dnc": dnc.rank,
            "rank_srg": None if srg is None else srg.rank,
            "ranks_srg": None if srg is None else srg.ranks,
            "rank_srg_post": None if srg is None else srg.rank_post,
            "ratio": None if srg is None else srg.loss / dnc.loss,
            "srg_beats_dnc": None if srg is None else bool(srg.loss < dnc.loss),
            "dnc_is_zero": dnc.is_zero,
            "zero_threshold": zero_threshold(K, L),
            "zero_threshold_equal_lambda": zero_threshold_equal_lambda(K, L, n),
            "theorem5": theorem5_conditions(K, L),
            "theorem5_strict": theorem5_conditions(K, L) and dnc.loss < LOSS_ZERO,
        }
    )


def parse_range(name: str, spec: str | int | Iterable[int], minimum: int) -> list[int]:
    """``'2:100'`` (inclusive), ``'2:100:2'``, ``'6,10,15'``, one integer, or an iterable of integers.

    Parameters
    ----------
    name : str
        The option's name, for the error message.
    spec : str, int or iterable of int
        ``'2:100'`` (inclusive), ``'2:100:2'``, ``'6,10,15'``, one integer, or integers.
    minimum : int
        The smallest allowed value.

    Returns
    -------
    list of int
        The values, in order.

    Examples
    --------
    >>> parse_range("classes", "2:10:4", 2), parse_range("classes", "6,10", 2), parse_range("layers", 3, 1)
    ([2, 6, 10], [6, 10], [3])
    """
    if isinstance(spec, int):
        return [check_int(name, spec, min=minimum)]
    if not isinstance(spec, str):
        return [check_int(name, v, min=minimum) for v in spec]
    s = spec.strip()
    try:
        if ":" in s:
            parts = [int(p) for p in s.split(":")]
            if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] < 1) or parts[1] < parts[0]:
                raise ValueError
            values = list(range(parts[0], parts[1] + 1, parts[2] if len(parts) == 3 else 1))
        else:
            values = [int(p) for p in s.split(",") if p.strip()]
    except ValueError:
        raise ConfigError(
            f"{name} == {spec!r}, must be an integer, a range START:STOP[:STEP] or a comma-separated list."
        ) from None
    if not values:
        raise ConfigError(f"{name} == {spec!r}, must name at least one value.")
    return [check_int(name, v, min=minimum) for v in values]


def grid(
    classes: str | Iterable[int],
    layers: str | Iterable[int],
    n: int,
    lam_h: float,
    lam_w: float,
) -> list[dict[str, Any]]:
    """One row per ``(K, L)``: ``classes, layers, loss_dnc, loss_srg, ratio, srg_construction, rank_srg,
    theorem5, theorem5_strict, srg_beats_dnc`` (the same ``λ_W`` in every layer).

    Parameters
    ----------
    classes : str or iterable of int
        ``K`` values (a range as in :func:`parse_range`, ``K >= 2``).
    layers : str or iterable of int
        ``L`` values (``L >= 1``).
    n : int
        Samples per class.
    lam_h : float
        ``λ_{H_1} > 0``.
    lam_w : float
        ``λ_W > 0`` for every layer.

    Returns
    -------
    list of dict
        One JSON-ready row per ``(K, L)``, ``K`` varying slowest.

    Examples
    --------
    >>> rows = grid("6,10", "2:3", 1, 0.001, 0.001)
    >>> [(r["classes"], r["layers"]) for r in rows]
    [(6, 2), (6, 3), (10, 2), (10, 3)]
    >>> rows[0]["srg_construction"]
    'def9'
    """
    Ks = parse_range("classes", classes, 2)
    Ls = parse_range("layers", layers, 1)
    with single_threaded_blas():
        return [_grid_row(K, L, n, lam_h, lam_w) for K in Ks for L in Ls]


def _grid_row(K: int, L: int, n: int, lam_h: float, lam_w: float) -> dict[str, Any]:
    K, L, n, lam_h, lams = problem_of(K, L, n, lam_h, lam_w).regularised().parts()
    dnc = loss_dnc(K, L, n, lam_h, lams)
    srg = loss_srg(K, L, n, lam_h, lams)
    t5 = theorem5_conditions(K, L)
    return {
        "classes": K,
        "layers": L,
        "loss_dnc": dnc.loss,
        "loss_srg": None if srg is None else srg.loss,
        "ratio": None if srg is None else srg.loss / dnc.loss,
        "srg_construction": None if srg is None else srg.construction,
        "rank_srg": None if srg is None else srg.rank,
        "theorem5": t5,
        "theorem5_strict": t5 and dnc.loss < LOSS_ZERO,
        "srg_beats_dnc": None if srg is None else bool(srg.loss < dnc.loss),
    }
