"""The true eq. (1) (ReLU) along lines and planes through a point: the data of the landscape's slice figures.

* :func:`loss_slices`: along ``θ + t v_1`` and over ``θ + s v_1 + t v_2`` (the two lowest-curvature
  directions off the symmetries), ``|t| <= 0.05 ‖θ‖`` by default;
* :func:`descent_slice`: along ``θ + a u`` for ``|a| <= 3 t*`` around a certified descent step ``t*`` (the
  landscape's ``certified_descent``), so that a decrease found at a step far below the slice radius (``7e-6``
  against ``±0.35`` at the flagship) is visible; the grid holds ``t*`` itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deepcollapse.landscape.piecewise import Problem, flatten, unflatten, value

__all__ = ["descent_slice", "loss_slices"]


def _bar(progress: bool, desc: str, total: int) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="point", disable=not progress, dynamic_ncols=True)


def loss_slices(
    params: Sequence[np.ndarray],
    problem: Problem,
    directions: Sequence[np.ndarray],
    *,
    radius: float | None = None,
    points: int = 41,
    grid: int = 25,
    progress: bool = False,
) -> dict[str, Any]:
    """True eq. (1) (ReLU) along ``θ + t v_1`` and over ``θ + s v_1 + t v_2`` (unit directions), ``|t| <=
    radius`` (default ``0.05 ‖θ‖``).  Returns ``{"t", "f1", "s", "f2", "radius", "loss"}``.

    ``progress`` shows a tqdm bar (stderr) over the ``points + grid²`` evaluations."""
    shapes = [np.shape(p) for p in params]
    x = flatten(params)
    v1 = np.asarray(directions[0], dtype=np.float64)
    v2 = np.asarray(directions[1], dtype=np.float64)
    v1, v2 = v1 / np.linalg.norm(v1), v2 / np.linalg.norm(v2)
    r = 0.05 * float(np.linalg.norm(x)) if radius is None else float(radius)
    t = np.linspace(-r, r, points)
    s = np.linspace(-r, r, grid)
    with _bar(progress, "loss slices (1-D and 2-D)", points + grid * grid) as bar:
        f1 = np.array([_counted(bar, value(unflatten(x + a * v1, shapes), problem)) for a in t])
        f2 = np.array(
            [[_counted(bar, value(unflatten(x + a * v1 + b * v2, shapes), problem)) for a in s] for b in s]
        )
    return {"t": t, "f1": f1, "s": s, "f2": f2, "radius": r, "loss": value(params, problem)}


def _counted(bar: Any, f: float) -> float:
    bar.update()
    return f


def descent_slice(
    params: Sequence[np.ndarray],
    problem: Problem,
    direction: np.ndarray,
    step: float,
    *,
    span: float = 3.0,
    points: int = 61,
    progress: bool = False,
) -> dict[str, Any]:
    """True eq. (1) along ``θ + a u`` (``u = direction / ‖direction‖``) for ``a`` on a linear grid over
    ``[−span · step, span · step]`` with ``step`` added to it.

    Parameters
    ----------
    params : sequence of ndarray
        The point ``[H_1, W_1, .., W_L]`` (of the analysed problem).
    problem : Problem
        The problem of eq. (1) ``params`` belong to.
    direction : ndarray
        Flat direction, the parameters' order (the landscape's ``descent_direction``).
    step : float
        The certified step ``t* > 0`` (the landscape's ``certified_descent["step"]``).
    span : float
        The grid covers ``|a| <= span · step``.
    points : int
        Points of the linear grid (``step`` is added if not on it).
    progress : bool
        A tqdm bar (stderr) over the evaluations.

    Returns
    -------
    dict
        ``{"a", "f", "step", "loss"}``: the grid, eq. (1) on it, ``step`` and ``f(θ)``.
    """
    shapes = [np.shape(p) for p in params]
    x = flatten(params)
    u = np.asarray(direction, dtype=np.float64)
    u = u / np.linalg.norm(u)
    a = np.union1d(np.linspace(-span * step, span * step, points), [0.0, step])
    with _bar(progress, "zoomed slice along the descent direction", a.size) as bar:
        f = np.array([_counted(bar, value(unflatten(x + ai * u, shapes), problem)) for ai in a])
    return {"a": a, "f": f, "step": float(step), "loss": value(params, problem)}
