"""The thresholds of the DUFM run classification, as one value: :class:`Criteria`.

The rules they enter are in :mod:`deepcollapse.dufm.classify` (module docstring, rules 2-8); each field says
which rule reads it.  ``summary.json`` records them under ``criteria``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from deepcollapse._core.checks import ConfigError, check_float
from deepcollapse._core.config import KeywordChecked

__all__ = ["Criteria"]


@dataclass(frozen=True)
class Criteria(KeywordChecked):
    """The tolerances that turn a trained run's numbers into a label (``dnc``, ``srg_like``, ...).

    Parameters
    ----------
    zero_tol : float
        Rule 2, ``zero``: ``fit >= loss_zero − zero_tol`` and ``reg <= zero_tol``.
    grad_tol : float
        Rule 6, ``not_converged``: ``‖∇ eq.(1)‖_F > grad_tol`` (and the loss still falling).
    plateau_tol : float
        Rule 6: the loss fell by more than ``plateau_tol`` (relative) over the last 10 % of the steps.
    gram_tol : float
        Rule 3, ``srg_like``: the cosine Gram matrix of ``M_L`` is within ``gram_tol`` (max entry, up to a
        permutation) of the SRG's.
    dnc2_tol : float
        Rule 4, ``dnc``: ``σ_1/σ_K(M_L) <= 1 + dnc2_tol``.
    dnc_converging_cond : float
        Rule 5, ``dnc_converging``: ``σ_1/σ_K(M_L) <= 1 + dnc_converging_cond`` ...
    dnc_converging_gap : float
        ... and the loss at most ``dnc_converging_gap`` (relative) above ``L_DNC``.
    rank_rtol : float or None
        Numerical ranks count singular values above ``rank_rtol · σ_1`` (rules 3, 4, 5, 7); ``None``
        (default): the config's ``rank_rtol``.

    Raises
    ------
    ConfigError
        A tolerance is negative or not a number (``rank_rtol`` must lie in ``(0, 1)``).

    Examples
    --------
    >>> from deepcollapse.dufm.criteria import Criteria
    >>> Criteria().dnc2_tol
    0.05
    >>> strict = Criteria(dnc2_tol=0.01)      # a run counts as DNC only if M_L's σ_1/σ_K <= 1.01
    >>> strict.dnc2_tol, strict.grad_tol
    (0.01, 0.0001)
    >>> Criteria(grad_tol=-1.0)
    Traceback (most recent call last):
    ...
    deepcollapse._core.checks.ConfigError: grad_tol == -1.0, must be >= 0.0.
    """

    zero_tol: float = 1e-4
    grad_tol: float = 1e-4
    plateau_tol: float = 1e-3
    gram_tol: float = 0.05
    dnc2_tol: float = 0.05
    dnc_converging_cond: float = 0.25
    dnc_converging_gap: float = 5e-3
    rank_rtol: float | None = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "rank_rtol":
                if value is not None:
                    value = check_float("rank_rtol", value, gt=0.0, lt=1.0)
            else:
                value = check_float(f.name, value, ge=0.0)
            object.__setattr__(self, f.name, value)  # frozen: normalised to float once, here

    def rank_tolerance(self, config_rtol: float) -> float:
        """``rank_rtol``, or ``config_rtol`` where it is ``None``.

        Parameters
        ----------
        config_rtol : float
            The config's ``rank_rtol``.

        Returns
        -------
        float
            The relative rank tolerance to use.

        Examples
        --------
        >>> Criteria().rank_tolerance(1e-3)
        0.001
        """
        return config_rtol if self.rank_rtol is None else self.rank_rtol

    def to_dict(self, config_rtol: float) -> dict[str, Any]:
        """The ``criteria`` entry of ``summary.json`` (``rank_rtol`` resolved against the config's).

        Returns
        -------
        dict
            The JSON form written to ``summary.json`` (a dict by design: it is that file's entry).

        Parameters
        ----------
        config_rtol : float
            The config's ``rank_rtol`` (used where ``rank_rtol`` is ``None``).

        Examples
        --------
        >>> Criteria().to_dict(1e-3)['rank_rtol']
        0.001
        """
        d = dataclasses.asdict(self)
        d["rank_rtol"] = self.rank_tolerance(config_rtol)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Criteria:
        """The criteria of a ``summary.json``'s ``criteria`` entry (unknown keys refused).

        Parameters
        ----------
        data : dict
            The entry (a subset of the fields; missing ones take their defaults).

        Returns
        -------
        Criteria
            Validated.

        Examples
        --------
        >>> Criteria.from_dict({}) == Criteria()
        True
        """
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ConfigError(f"criteria: unknown {', '.join(unknown)}; known: {', '.join(sorted(names))}.")
        return cls(**data)
