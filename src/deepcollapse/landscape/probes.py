"""First-order tests at a point of eq. (1) with kinks, and the probes that certify a descent.

``kink_masks`` (exact zero pre-activations, or the near-kinks within ``KINK_RTOL · max|H~_l|``),
``clarke_residual`` / ``clarke_direction`` (``min_D ‖∇f_D‖`` over the derivative values at the kinks, and the
minimising chain-rule gradient), ``descent_probe`` (the true eq. (1) along given directions at steps
``10^{-k} ‖θ‖``) and ``_certified_descent`` (the decrease beyond ``DESCENT_RTOL`` that certifies one).
Used by :func:`~deepcollapse.landscape.verdicts.landscape`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deepcollapse._core.docs import fill_doc
from deepcollapse._core.results import Result
from deepcollapse.landscape.piecewise import (
    Problem,
    flatten,
    piece_objective,
    preactivations,
    unflatten,
    value,
    value_and_grad,
    zero_tolerance,
)

__all__ = [
    "CLARKE_ITER",
    "DESCENT_RTOL",
    "KINK_RTOL",
    "DescentProbe",
    "clarke_direction",
    "clarke_residual",
    "descent_probe",
    "kink_masks",
]

# |H~| <= KINK_RTOL · max|H~_l| is a near-kink: a zero that float32 GD and an L-BFGS polish left at ~1e-11
# (the low-rank solutions have many exact zeros among their class-mean pre-activations, e.g. SRG's M~_l)
KINK_RTOL = 1e-6
#: a probe step that lowers f by more than DESCENT_RTOL · max(1, |f|) certifies "not critical"
DESCENT_RTOL = 1e-13
#: L-BFGS-B iterations of the Clarke residual's minimisation over ``D`` in a verdict (the continued descent
#: gives an *undecided* point more: :func:`~deepcollapse.landscape.descent.descend_until_certified`)
CLARKE_ITER = 300


@dataclass(frozen=True, eq=False)
class DescentProbe(Result):
    """The largest decrease of the true eq. (1) found by :func:`descent_probe` (the landscape's
    ``descent_probe`` and ``curvature_probe``).

    Read-only key access (``probe["delta"]``) works as for the dict of earlier releases.

    Attributes
    ----------
    delta : float
        ``f(θ − t v/‖v‖) − f(θ)`` at the best step (``< 0``: ``θ`` is not a local minimum); ``inf`` when no
        direction was probed.
    step : float or None
        Its step ``t`` (``None`` when no direction was probed).
    direction : int or str or None
        The index of its direction in ``directions`` (the landscape's ``curvature_probe`` names it, ``"+v_1"``
        or ``"-v_1"``).
    """

    delta: float = math.inf
    step: float | None = None
    direction: int | str | None = None


@fill_doc
def kink_masks(params: Sequence[np.ndarray], rel_tol: float | None = None) -> list[np.ndarray]:
    """Per hidden layer ``l = 2..L``, the kinks: ``|H~_l| <= zero_tolerance(H~_l)`` (``rel_tol`` None) or the
    *near-kinks* ``|H~_l| <= rel_tol · max|H~_l|`` (booleans, the shapes of ``H~_l``).

    Parameters
    ----------
    %(landscape_params)s
    rel_tol : float, optional
        The relative tolerance of a near-kink (default: exact zeros, :func:`zero_tolerance`).

    Returns
    -------
    list of ndarray of bool
        One mask per hidden layer.

    Examples
    --------
    >>> kink_masks([np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)])
    [array([[False, False],
           [ True, False]])]
    """
    out = []
    for Ht in preactivations(params):
        tol = zero_tolerance(Ht) if rel_tol is None else rel_tol * float(np.max(np.abs(Ht), initial=0.0))
        out.append(np.abs(Ht) <= tol)
    return out


@fill_doc
def clarke_residual(
    params: Sequence[np.ndarray],
    problem: Problem,
    max_iter: int = CLARKE_ITER,
    *,
    masks: Sequence[np.ndarray] | None = None,
) -> float:
    """``min ‖∇f_D‖`` over ``D ∈ [0, 1]`` at the kinks ``masks`` (default: the exact zero pre-activations;
    ``D`` fixed elsewhere); L-BFGS-B with torch gradients of ``‖∇f_D‖²`` in the free ``D`` entries.  Equals
    ``grad_norm`` when there is no kink.  With kinks in several layers ``∇f_D`` is multilinear in ``D``, so
    the minimum found is an upper bound.

    Parameters
    ----------
    %(landscape_params)s
    %(landscape_problem)s
    max_iter : int, default :data:`CLARKE_ITER`
        L-BFGS-B iterations.
    %(landscape_masks)s

    Returns
    -------
    float
        The smallest ``‖∇f_D‖`` found (``0`` certifies Clarke stationarity).

    Examples
    --------
    >>> from deepcollapse.landscape.piecewise import Problem, grad_norm
    >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
    >>> problem = Problem(2, 2, 1, 0.1, 0.1)
    >>> bool(clarke_residual(params, problem) <= grad_norm(params, problem) + 1e-12)
    True
    """
    return clarke_direction(params, problem, max_iter, masks=masks)[0]


@fill_doc
def clarke_direction(
    params: Sequence[np.ndarray],
    problem: Problem,
    max_iter: int = CLARKE_ITER,
    *,
    masks: Sequence[np.ndarray] | None = None,
    bar: Any = None,
) -> tuple[float, np.ndarray]:
    """:func:`clarke_residual` and the minimising ``∇f_D`` itself (flat, the parameters' order); ``bar``
    (a tqdm bar) advances once per L-BFGS iteration.

    Parameters
    ----------
    %(landscape_params)s
    %(landscape_problem)s
    max_iter : int, default :data:`CLARKE_ITER`
        L-BFGS-B iterations.
    %(landscape_masks)s
    bar : tqdm bar, optional
        Advances once per iteration.

    Returns
    -------
    residual : float
        :func:`clarke_residual`.
    gradient : ndarray, (P,)
        The minimising ``∇f_D``, flat.

    Examples
    --------
    >>> from deepcollapse.landscape.piecewise import Problem, grad_norm
    >>> params = [np.eye(2), np.array([[1.0, -1.0], [0.0, 1.0]]), np.eye(2)]  # one kink: H~_2[1, 0] = 0
    >>> problem = Problem(2, 2, 1, 0.1, 0.1)
    >>> residual, gradient = clarke_direction(params, problem)
    >>> gradient.shape, bool(abs(residual - np.linalg.norm(gradient)) < 1e-9)
    ((12,), True)
    """
    import torch
    from scipy.optimize import minimize

    pre = preactivations(params)
    zeros = list(masks) if masks is not None else kink_masks(params)
    count = int(sum(z.sum() for z in zeros))
    if count == 0:
        gvec = flatten(value_and_grad(params, problem)[1])
        return float(np.linalg.norm(gvec)), gvec
    ts = [torch.tensor(np.asarray(p, dtype=np.float64), requires_grad=True) for p in params]
    base = [torch.tensor((Ht > 0) & ~z, dtype=torch.float64) for Ht, z in zip(pre, zeros)]
    where = [torch.tensor(z) for z in zeros]
    Y = torch.tensor(problem.targets())

    last: dict[str, Any] = {}

    def objective(d: np.ndarray) -> tuple[float, np.ndarray]:
        dt = torch.tensor(d, requires_grad=True)
        masks, i = [], 0
        for b, w in zip(base, where):
            m = b.clone()
            k = int(w.sum())
            m[w] = dt[i : i + k]
            masks.append(m)
            i += k
        f = piece_objective(ts, masks, Y, problem)
        g = torch.autograd.grad(f, ts, create_graph=True)
        r = torch.stack([(x**2).sum() for x in g]).sum()
        (gd,) = torch.autograd.grad(r, dt)
        if float(r.detach()) <= last.get("r", math.inf):
            last["r"] = float(r.detach())
            last["xi"] = np.concatenate([x.detach().numpy().ravel() for x in g])
        return float(r.detach()), gd.detach().numpy().astype(np.float64)

    d0 = np.full(count, 0.5)
    res = minimize(
        objective,
        d0,
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, 1.0)] * count,
        options={"maxiter": max_iter, "ftol": 1e-30, "gtol": 1e-30},
        callback=None if bar is None else (lambda _: bar.update()),
    )
    if bar is not None:  # converged before max_iter: the bar ends full
        bar.total = bar.n
        bar.refresh()
    return math.sqrt(max(min(float(res.fun), last["r"]), 0.0)), last["xi"]


def descent_probe(
    params: Sequence[np.ndarray], problem: Problem, directions: Sequence[np.ndarray], *, bar: Any = None
) -> DescentProbe:
    """The true eq. (1) along ``θ − t v/‖v‖`` for each ``v`` of ``directions`` and ``t = 10^{-k} ‖θ‖``,
    ``k = 1..10``: the largest decrease found (``delta``, ``< 0`` is a certificate that ``θ`` is not a local
    minimum), its step and direction index.

    Parameters
    ----------
    params : sequence of ndarray
        The point ``θ = [H_1, W_1, .., W_L]``.
    problem : Problem
        The problem of eq. (1) ``params`` belong to.
    directions : sequence of ndarray
        Flat directions ``v`` (the parameters' order); zero ones are skipped.
    bar : tqdm bar, optional
        Advances once per step.

    Returns
    -------
    DescentProbe
        ``delta, step, direction`` (the keys of the dict of earlier releases); the first of equal decreases
        is kept.

    Examples
    --------
    >>> import numpy as np
    >>> from deepcollapse.landscape.piecewise import Problem
    >>> from deepcollapse.landscape.probes import descent_probe
    >>> problem = Problem.make(2, 1, 0.1, 0.1, 1)
    >>> params = [np.eye(2), np.eye(2)]
    >>> up = np.concatenate([np.eye(2).ravel(), np.eye(2).ravel()])  # θ − t up shrinks θ: less reg
    >>> probe = descent_probe(params, problem, [np.zeros(8), up])
    >>> probe.direction, bool(probe.delta < 0), round(probe["step"], 6)  # t = 10^-1 ‖θ‖, ‖θ‖ = 2
    (1, True, 0.2)
    """
    shapes = [np.shape(p) for p in params]
    x = flatten(params)
    f0 = value(params, problem)
    scale = float(np.linalg.norm(x))
    best: dict[str, Any] = {"delta": math.inf, "step": None, "direction": None}  # the old dict, its order
    for i, v in enumerate(directions):
        nv = float(np.linalg.norm(v))
        if not nv > 0:
            continue
        for k in range(1, 11):
            t = scale * 10.0**-k
            delta = value(unflatten(x - t * np.asarray(v) / nv, shapes), problem) - f0
            if bar is not None:
                bar.update()
            if delta < best["delta"]:
                best = {"delta": delta, "step": t, "direction": i}
    return DescentProbe(**best)


def _certified_descent(
    loss: float,
    probe: Mapping[str, Any] | None,
    probed: Sequence[np.ndarray],
    curvature: Mapping[str, Any] | None,
    v1: np.ndarray,
) -> tuple[dict[str, Any] | None, np.ndarray | None]:
    """``({along, step, delta}, unit direction u)`` of the decrease beyond rounding at ``θ + step · u``: the
    descent probe's (``u = −v/‖v‖`` of its direction ``v``) if it found one, else the curvature probe's
    (``u = ±v_1``); ``(None, None)`` if neither did."""
    threshold = -DESCENT_RTOL * max(1.0, abs(loss))
    if probe is not None and probe["direction"] is not None and probe["delta"] < threshold:
        v = np.asarray(probed[probe["direction"]], dtype=np.float64)
        along = ("−∇f", "−(least-norm chain-rule gradient)")[probe["direction"]]
        return {"along": along, "step": probe["step"], "delta": probe["delta"]}, -v / np.linalg.norm(v)
    if curvature is not None and curvature["direction"] is not None and curvature["delta"] < threshold:
        u = np.asarray(v1, dtype=np.float64) / np.linalg.norm(v1)
        sign = 1.0 if curvature["direction"] == "+v_1" else -1.0
        found = {"along": curvature["direction"], "step": curvature["step"], "delta": curvature["delta"]}
        return found, sign * u
    return None, None
