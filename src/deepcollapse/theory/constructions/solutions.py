"""Explicit solutions: the DNC, SRG and all-zero points as matrices ``H_1, W_1 .. W_L`` at the optimal scales,
with their loss evaluated on the matrices."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.linalg import block_diag

from deepcollapse._core.checks import ConfigError, check_int
from deepcollapse._core.docs import fill_doc
from deepcollapse.theory.constructions.closed_forms import ClosedForm, loss_dnc, loss_srg
from deepcollapse.theory.constructions.geometry import Geometry, dnc_geometry, srg_geometry
from deepcollapse.theory.layers import (
    Solution,
    evaluated_solution,
    ridge_last_layer,
    solution_from_class_means,
)
from deepcollapse.theory.problem import Problem, problem_of

__all__ = ["dnc_solution", "srg_solution", "zero_solution"]


def _spread(d: int, m: int) -> np.ndarray:
    """``(d, m)`` non-negative matrix with orthonormal columns, row ``i`` a multiple of ``e_{i mod m}``."""
    A = np.zeros((d, m))
    counts = np.bincount(np.arange(d) % m, minlength=m)
    A[np.arange(d), np.arange(d) % m] = 1.0 / np.sqrt(counts[np.arange(d) % m])
    return A


def _means_from(
    geoms: Sequence[Geometry | None], scales_list: Sequence[Sequence[float]], L: int, width: int | None
) -> list[np.ndarray]:
    per_layer: list[list[np.ndarray]] = [[] for _ in range(max(L - 1, 1))]
    for geom, scales in zip(geoms, scales_list):
        if geom is None:
            continue
        for i, X in enumerate(geom.unit_means(L)):
            per_layer[i].append(math.sqrt(scales[i]) * X)
    means = [block_diag(*blocks) for blocks in per_layer]
    if width is not None:
        out = []
        for M in means:
            if width < M.shape[0]:
                raise ConfigError(f"width == {width}, must be >= {M.shape[0]} for this construction.")
            out.append(_spread(width, M.shape[0]) @ M)
        means = out
    return means


def _solution(
    geoms: Sequence[Geometry | None],
    cf: ClosedForm,
    K: int,
    L: int,
    n: int,
    lam_h: float,
    lams: list[float],
    width: int | None,
) -> Solution:
    scales_list = [cf.scales, cf.block_scales or []]
    means = _means_from(geoms, scales_list, L, width)
    if L == 1:
        M1 = means[0]
        W1, _ = ridge_last_layer(M1, lams[0], K)
        H1 = np.repeat(M1, n, axis=1)
        sol = evaluated_solution(H1, [W1], n, lam_h, lams)
    else:
        sol = solution_from_class_means(means, n, lam_h, lams, d1=width)
    sol.scales = list(cf.scales)
    sol.construction = cf.construction
    sol.info = {"closed_form": cf.to_dict()}
    return sol


@fill_doc
def dnc_solution(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    width: int | None = None,
    *,
    problem: Problem | None = None,
) -> Solution:
    """Explicit DNC solution (Definition 10) at the optimal scales: ``M~_l = √α_l I_K`` (rows spread over
    ``width`` if given), conditionally optimal weights, ``H1 = M_1 ⊗ 1_n^T``; ``loss`` evaluated on the
    matrices.

    Parameters
    ----------
    %(problem)s
    %(theory_width)s
    %(problem_kw)s

    Returns
    -------
    Solution
        The explicit matrices and their loss.

    Examples
    --------
    >>> s = dnc_solution(3, 2, 1, 0.01, 0.01, width=5)
    >>> s.H1.shape, bool(abs(s.loss - loss_dnc(3, 2, 1, 0.01, 0.01).loss) < 1e-12)
    ((5, 3), True)
    """
    K, L, n, lam_h, lams = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).regularised().parts()
    cf = loss_dnc(K, L, n, lam_h, lams)
    return _solution([dnc_geometry(K)], cf, K, L, n, lam_h, lams, width)


@fill_doc
def srg_solution(
    classes: int | Problem | None = None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | None = None,
    construction: str = "best",
    width: int | None = None,
    *,
    problem: Problem | None = None,
) -> Solution:
    """Explicit SRG solution (Definition 9, or 11.1 / 11.2) at its optimal scales; ``ConfigError`` where
    undefined.

    Parameters
    ----------
    %(problem)s
    %(theory_construction)s
    %(theory_width)s
    %(problem_kw)s

    Returns
    -------
    Solution
        The explicit matrices and their loss.

    Examples
    --------
    >>> s = srg_solution(6, 3, 1, 0.001, 0.001)
    >>> s.construction, round(s.loss, 6)
    ('def9', 0.012653)
    """
    K, L, n, lam_h, lams = problem_of(classes, layers, n, lam_h, lam_w, problem=problem).regularised().parts()
    if L < 2:
        raise ConfigError(f"layers == {L}, must be >= 2 for an SRG solution.")
    cf = loss_srg(K, L, n, lam_h, lams, construction)
    if cf is None:
        srg_geometry(K, construction if construction != "best" else "def11.1")  # raises the right error
        raise ConfigError(f"classes == {K}, must allow an SRG solution.")  # pragma: no cover
    return _solution(list(srg_geometry(K, cf.construction)), cf, K, L, n, lam_h, lams, width)


def zero_solution(classes: int, layers: int, n: int, width: int | None = None) -> Solution:
    """The all-zero point (loss exactly 1/2 for any λ): ``H1`` and every ``W_l`` zero.

    Parameters
    ----------
    classes : int
        ``K``, the number of classes.
    layers : int
        ``L``, the number of weight matrices.
    n : int
        Samples per class.
    width : int, optional
        Every ``d_l`` (default ``K``).

    Returns
    -------
    Solution
        The zero point, its loss (``1/2``) and parts.

    Examples
    --------
    >>> s = zero_solution(3, 2, 4)
    >>> s.loss, s.H1.shape
    (0.5, (3, 12))
    """
    K = check_int("classes", classes, min=2)
    L = check_int("layers", layers, min=1)
    n = check_int("n", n, min=1)
    d = K if width is None else check_int("width", width, min=1)
    weights = [np.zeros((d, d)) for _ in range(L - 1)] + [np.zeros((K, d))]
    H1 = np.zeros((d, K * n))
    return evaluated_solution(H1, weights, n, 1.0, 1.0, construction="zero")
