"""The settings of ``reproduce best-known``: which cells (K, L) are searched and how, read from YAML with
``reproduce best-known --config FILE`` (:class:`BestKnownSettings`; default: the shipped
:data:`~deepcollapse.experiments.search_experiments.BEST_KNOWN_FULL`).

A file may name a part of the table, e.g. only ``layers: [4, 5]``: its points go to the same
``points/K.._L..`` folders as the full table's, so the full table run into the same ``--out`` later reuses
them; the best-known registry keeps the lowest point of every cell whichever run found it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from deepcollapse._core.checks import ConfigError, check_float, check_int
from deepcollapse._core.config import ConfigMixin
from deepcollapse.landscape.best_known_types import CellKey

__all__ = ["BestKnownSettings"]


def _int_list(name: str, values: Any, low: int) -> list[int]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
        raise ConfigError(f"{name} == {values!r}, must be a non-empty list of integers >= {low}.")
    return sorted({check_int(f"{name}[{i}]", v, min=low) for i, v in enumerate(values)})


@dataclass(frozen=True)
class BestKnownSettings(ConfigMixin):
    """What ``reproduce best-known`` searches: every ``(K, L)`` of ``classes`` x ``layers`` at one ``n``,
    λ and width, each point a ``dufm search`` of ``rounds`` rounds (or ``budget`` minutes) followed by the
    verdict, the kink refinement and the continued descent.  Validated at construction (``ConfigError``
    naming the field).  ``from_yaml`` reads these names as keys, every key optional, unknown keys refused.

    Attributes
    ----------
    classes : list of int
        The K's (>= 2).
    layers : list of int
        The L's (>= 2: the search's problems).
    n : int
        Samples per class.
    lam : float
        λ of ``H_1`` and every ``W_l`` (> 0).
    width : int
        Every hidden width ``d_l``.
    budget : float or None
        Minutes of search per point (wall clock; ``None``: by ``rounds`` only, the same table on any
        machine).
    runs : int
        GD starts per search round.
    steps : int
        GD steps per start.
    rounds : int or None
        Search rounds per point (a count); at least one of ``rounds`` and ``budget`` is set.

    Examples
    --------
    >>> s = BestKnownSettings(layers=[5, 4])
    >>> s.layers, s.classes[:3], s.rounds
    ([4, 5], [3, 4, 5], 12)
    >>> BestKnownSettings(layers=[1])
    Traceback (most recent call last):
    ...
    deepcollapse._core.checks.ConfigError: layers[0] == 1, must be >= 2.
    """

    classes: list[int] = field(default_factory=lambda: list(range(3, 17)))
    layers: list[int] = field(default_factory=lambda: [3, 4, 5])
    n: int = 50
    lam: float = 0.004
    width: int = 30
    budget: float | None = None
    runs: int = 32
    steps: int = 10_000
    rounds: int | None = 12

    def __post_init__(self) -> None:
        object.__setattr__(self, "classes", _int_list("classes", self.classes, 2))
        object.__setattr__(self, "layers", _int_list("layers", self.layers, 2))
        object.__setattr__(self, "n", check_int("n", self.n, min=1))
        object.__setattr__(self, "lam", check_float("lam", self.lam, gt=0.0))
        object.__setattr__(self, "width", check_int("width", self.width, min=1))
        object.__setattr__(self, "runs", check_int("runs", self.runs, min=1))
        object.__setattr__(self, "steps", check_int("steps", self.steps, min=1))
        if self.budget is not None:
            object.__setattr__(self, "budget", check_float("budget", self.budget, gt=0.0))
        if self.rounds is not None:
            object.__setattr__(self, "rounds", check_int("rounds", self.rounds, min=1))
        if self.rounds is None and self.budget is None:
            raise ConfigError("rounds == None and budget == None: set rounds (a count) or budget (minutes).")

    def cells(self, family: str) -> list[CellKey]:
        """The registry keys of the table's cells: every ``(K, L)`` of ``classes`` x ``layers``, each hidden
        width ``width`` and every λ ``lam``, as the table's points are offered.

        Parameters
        ----------
        family : str
            The model family's name (:attr:`deepcollapse.family.Family.name`, e.g. ``"ce+relu"``).

        Returns
        -------
        list of CellKey
            Ordered by ``L``, then ``K``.

        Examples
        --------
        >>> keys = BestKnownSettings().cells("mse+relu")
        >>> len(keys), keys[0].classes, keys[0].layers, keys[0].widths, keys[0].lam_w
        (42, 3, 3, (30, 30, 30), (0.004, 0.004, 0.004))
        """
        return [
            CellKey(family, k, depth, self.n, (self.width,) * depth, self.lam, (self.lam,) * depth)
            for depth in self.layers
            for k in self.classes
        ]
