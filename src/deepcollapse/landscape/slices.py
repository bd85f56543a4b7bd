"""The true eq. (1) (ReLU) along lines and planes through a point: the data of the landscape's slice figures.

* :func:`loss_slices`: along ``θ + t v_1`` and over ``θ + s v_1 + t v_2`` (the two lowest-curvature
  directions off the symmetries), ``|t| <= 0.05 ‖θ‖`` by default;
* :func:`descent_slice`: along ``θ + a u`` for ``|a| <= 3 t*`` around a certified descent step ``t*`` (the
  landscape's ``certified_descent``), so that a decrease found at a step far below the slice radius (``7e-6``
  against ``±0.35`` at the flagship) is visible; the grid holds ``t*`` itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deepcollapse._core.results import Result
from deepcollapse.landscape.piecewise import Problem, flatten, unflatten, value

__all__ = ["DescentSlice", "LossSlices", "descent_slice", "loss_slices"]

_GRIDS = ("t", "f1", "s", "f2", "a", "f")  # the array fields of the two results


class _Grids(Result):
    """Reads the grids of a slice result back as float64 arrays (``to_dict()`` writes them as lists)."""

    @classmethod
    def _read(cls, name: str, value: Any) -> Any:
        return np.asarray(value, dtype=np.float64) if name in _GRIDS and value is not None else value


@dataclass(frozen=True, eq=False)
class LossSlices(_Grids):
    """The true eq. (1) along a line and over a plane through a point: the result of :func:`loss_slices`
    (``landscape_slices.npz`` holds its arrays).

    Read-only key access (``slices["f1"]``) works as for the dict of earlier releases.

    Attributes
    ----------
    t : ndarray, (points,)
        The steps of the 1-D slice, ``linspace(−radius, radius, points)``.
    f1 : ndarray, (points,)
        Eq. (1) at ``θ + t v_1``.
    s : ndarray, (grid,)
        The steps of each axis of the 2-D slice, ``linspace(−radius, radius, grid)``.
    f2 : ndarray, (grid, grid)
        Eq. (1) at ``θ + s[j] v_1 + s[i] v_2`` in row ``i``, column ``j``.
    radius : float
        The half-width of the slices.
    loss : float
        Eq. (1) at ``θ``.
    """

    t: np.ndarray | None = None
    f1: np.ndarray | None = None
    s: np.ndarray | None = None
    f2: np.ndarray | None = None
    radius: float | None = None
    loss: float | None = None


@dataclass(frozen=True, eq=False)
class DescentSlice(_Grids):
    """The true eq. (1) along a certified descent direction: the result of :func:`descent_slice`.

    Read-only key access (``zoom["f"]``) works as for the dict of earlier releases.

    Attributes
    ----------
    a : ndarray, (m,)
        The steps, a linear grid over ``[−span · step, span · step]`` with ``0`` and ``step`` on it (sorted).
    f : ndarray, (m,)
        Eq. (1) at ``θ + a u``.
    step : float
        The certified step ``t*``.
    loss : float
        Eq. (1) at ``θ``.
    """

    a: np.ndarray | None = None
    f: np.ndarray | None = None
    step: float | None = None
    loss: float | None = None


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
) -> LossSlices:
    """True eq. (1) (ReLU) along ``θ + t v_1`` and over ``θ + s v_1 + t v_2`` (unit directions), ``|t| <=
    radius`` (default ``0.05 ‖θ‖``).

    Parameters
    ----------
    params : sequence of ndarray
        The point ``θ = [H_1, W_1, .., W_L]``.
    problem : Problem
        The problem of eq. (1) ``params`` belong to.
    directions : sequence of two ndarray
        Flat directions ``v_1, v_2`` (the parameters' order; normalised here), e.g. the landscape's
        ``directions``.
    radius : float, optional
        Half-width of the slices; default ``0.05 ‖θ‖``.
    points : int
        Points of the 1-D slice.
    grid : int
        Points per axis of the 2-D slice.
    progress : bool
        A tqdm bar (stderr) over the ``points + grid²`` evaluations.

    Returns
    -------
    LossSlices
        ``t, f1, s, f2, radius, loss`` (the keys of the dict of earlier releases).

    Examples
    --------
    >>> import numpy as np
    >>> from deepcollapse.landscape.piecewise import Problem
    >>> from deepcollapse.landscape.slices import loss_slices
    >>> problem = Problem.make(2, 1, 0.1, 0.1, 1)  # K = 2, n = 1, λ = 0.1, L = 1
    >>> params = [np.eye(2), np.eye(2)]
    >>> sl = loss_slices(params, problem, [np.eye(8)[0], np.eye(8)[1]], radius=1.0, points=3, grid=3)
    >>> sl.t, sl.f2.shape, sl["radius"], round(sl.loss, 6)
    (array([-1.,  0.,  1.]), (3, 3), 1.0, 0.2)
    """
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
    return LossSlices(t=t, f1=f1, s=s, f2=f2, radius=r, loss=value(params, problem))


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
) -> DescentSlice:
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
    DescentSlice
        ``a, f, step, loss`` (the keys of the dict of earlier releases): the grid, eq. (1) on it, ``step``
        and ``f(θ)``.

    Examples
    --------
    >>> import numpy as np
    >>> from deepcollapse.landscape.piecewise import Problem
    >>> from deepcollapse.landscape.slices import descent_slice
    >>> problem = Problem.make(2, 1, 0.1, 0.1, 1)
    >>> zoom = descent_slice([np.eye(2), np.eye(2)], problem, np.eye(8)[0], 0.5, span=1.0, points=3)
    >>> zoom.a, zoom["step"]
    (array([-0.5,  0. ,  0.5]), 0.5)
    """
    shapes = [np.shape(p) for p in params]
    x = flatten(params)
    u = np.asarray(direction, dtype=np.float64)
    u = u / np.linalg.norm(u)
    a = np.union1d(np.linspace(-span * step, span * step, points), [0.0, step])
    with _bar(progress, "zoomed slice along the descent direction", a.size) as bar:
        f = np.array([_counted(bar, value(unflatten(x + ai * u, shapes), problem)) for ai in a])
    return DescentSlice(a=a, f=f, step=float(step), loss=value(params, problem))
