"""One instance of the L-DUFM problem (2024 paper, eq. (1)) as a validated, immutable value.

``Problem(classes, layers, n, lam_h, lam_w, widths, loss, activation, eps)``: K classes, L weight matrices,
n samples per class (N = K n, samples ordered by class), λ_{H_1}, λ_{W_1} .. λ_{W_L}, the widths d_1 .. d_L
(``None``: not fixed) and the model family (:func:`deepcollapse.family.get_family`).  Validated once, at
construction (one-line ``ConfigError`` naming the field); ``λ = 0`` is allowed (unregularised models), the
closed forms ask for ``λ > 0`` with :meth:`Problem.regularised`.

``reduced()`` is the ``n = 1`` problem with ``λ_{H_1}`` replaced by ``n λ_{H_1}``: for features collapsed to
their class means (``H_1 = M_1 ⊗ 1_n^T``) the fit term per class is unchanged and ``‖H_1‖² = n ‖M_1‖²``, so
eq. (1) at ``n`` equals eq. (1) of the reduced problem at ``M_1``; and the minimum of eq. (1) equals the
minimum of the reduced problem (given the weights, eq. (1) separates over the columns of ``H_1``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deepcollapse._core import flagship as _flagship
from deepcollapse._core.checks import ConfigError, check_float, check_int, check_per_layer
from deepcollapse._core.config import KeywordChecked
from deepcollapse._core.problem_fields import PROBLEM_HELP, check_problem_fields
from deepcollapse.family import Family, get_family, targets

__all__ = ["FLAGSHIP", "Problem", "problem_of"]


@dataclass(frozen=True)
class Problem(KeywordChecked):
    """An instance of eq. (1) (module docstring), validated at construction.

    Parameters
    ----------
    classes : int
        ``K >= 2``.
    layers : int
        ``L >= 1``, the number of weight matrices.
    n : int
        Samples per class, ``>= 1``.
    lam_h : float
        ``λ_{H_1} >= 0``.
    lam_w : float, sequence of L floats, or str
        ``λ_{W_1} .. λ_{W_L} >= 0``; one value is used for every layer, a string may list them with commas.
        Stored as a tuple of ``L`` floats.
    widths : int, sequence of L ints, or None
        ``d_1 .. d_L >= 1`` (one int: every layer); ``None`` (default) leaves them unfixed.
    loss, activation, eps
        The model family (:func:`deepcollapse.family.get_family`): ``"mse"`` / ``"ce"``, ``"relu"`` /
        ``"linear"`` / ``"relu_eps"``, and ε of σ_ε (only with ``"relu_eps"``).
    """

    classes: int = field(metadata={"help": PROBLEM_HELP["classes"]})
    layers: int = field(metadata={"help": PROBLEM_HELP["layers"]})
    n: int = field(metadata={"help": PROBLEM_HELP["n"]})
    lam_h: float = field(metadata={"help": PROBLEM_HELP["lam_h"]})
    lam_w: tuple[float, ...] = field(metadata={"help": PROBLEM_HELP["lam_w"]})
    widths: tuple[int, ...] | None = field(default=None, metadata={"help": PROBLEM_HELP["widths"]})
    loss: str = "mse"
    activation: str = "relu"
    eps: float | None = None

    def __post_init__(self) -> None:
        K, L, n, lam_h, lam_w = check_problem_fields(
            self.classes, self.layers, self.n, self.lam_h, self.lam_w
        )
        widths: Any = self.widths
        if widths is not None:
            if isinstance(widths, (int, np.integer)) and not isinstance(widths, bool):
                widths = [widths] * L
            if not isinstance(widths, (Sequence, np.ndarray)) or isinstance(widths, str) or len(widths) != L:
                raise ConfigError(
                    f"widths == {widths!r}, must be None, one int or a list of layers = {L} ints."
                )
            widths = tuple(check_int(f"widths[{i}]", d, min=1) for i, d in enumerate(widths))
        fam = get_family(self.loss, self.activation, self.eps)  # ConfigError naming loss / activation / eps
        for name, value in (
            ("classes", K),
            ("layers", L),
            ("n", n),
            ("lam_h", lam_h),
            ("lam_w", tuple(lam_w)),
            ("widths", widths),
            ("eps", fam.eps),
        ):
            object.__setattr__(self, name, value)  # frozen: the fields are normalised once, here

    @classmethod
    def make(cls, classes: int, n: int, lam_h: float, lam_w: float | Sequence[float], layers: int) -> Problem:
        """The former ``landscape.piecewise.Problem.make`` (its argument order): an MSE + ReLU problem with
        ``λ > 0``.

        Parameters
        ----------
        classes : int
            ``K >= 2``.
        n : int
            Samples per class.
        lam_h : float
            ``λ_{H_1} > 0``.
        lam_w : float or sequence of float
            ``λ_{W_1} .. λ_{W_L} > 0`` (one value: every layer).
        layers : int
            ``L >= 1``.

        Returns
        -------
        Problem
            ``Problem(classes, layers, n, lam_h, lam_w).regularised()``.

        Examples
        --------
        >>> Problem.make(3, 10, 0.5, 0.1, layers=2) == Problem(3, 2, 10, 0.5, 0.1)
        True
        """
        return cls(classes, layers, n, lam_h, lam_w).regularised()  # type: ignore[arg-type]

    # --- derived values ----------------------------------------------------------------------------------
    @property
    def N(self) -> int:
        """``K n``, the number of samples.

        Returns
        -------
        int
            ``N = K n``.

        Examples
        --------
        >>> Problem(3, 2, 5, 0.1, 0.1).N
        15
        """
        return self.classes * self.n

    @functools.cached_property
    def family(self) -> Family:
        """The model family (:func:`deepcollapse.family.get_family`), built once per problem (the polish
        reads it at every evaluation of eq. (1)).

        Returns
        -------
        Family
            The loss and activation of this problem.

        Examples
        --------
        >>> Problem(3, 2, 5, 0.1, 0.1).family.loss.name
        'mse'
        """
        return get_family(self.loss, self.activation, self.eps)

    @property
    def Lambda(self) -> float:
        """``Λ = n λ_{H_1} Π_l λ_{W_l}``, on which every DNC / SRG closed-form loss depends.

        Returns
        -------
        float
            ``Λ``.

        Examples
        --------
        >>> Problem(3, 2, 10, 0.5, [0.2, 0.5]).Lambda
        0.5
        """
        return float(self.n * self.lam_h * np.prod(self.lam_w))

    def targets(self) -> np.ndarray:
        """``Y = I_K ⊗ 1_n^T`` of shape ``(K, N)`` (float64, read-only: built once per problem, since the
        polish and the search evaluate eq. (1) thousands of times).

        Returns
        -------
        ndarray, (K, N)
            The one-hot targets, samples ordered by class (read-only).

        Examples
        --------
        >>> Problem(2, 1, 2, 0.1, 0.1).targets()
        array([[1., 1., 0., 0.],
               [0., 0., 1., 1.]])
        """
        return self._targets

    @functools.cached_property
    def _targets(self) -> np.ndarray:
        Y = targets(self.classes, self.n)
        Y.flags.writeable = False
        return Y

    def reduced(self) -> Problem:
        """The ``n = 1`` problem with ``λ_{H_1}`` replaced by ``n λ_{H_1}`` (module docstring).

        Returns
        -------
        Problem
            The same problem with ``n = 1`` and ``lam_h = n · lam_h`` (widths and family kept).

        Examples
        --------
        >>> p = Problem(3, 2, 10, 0.5, 0.1).reduced()
        >>> p.n, p.lam_h
        (1, 5.0)
        """
        return dataclasses.replace(self, n=1, lam_h=self.n * self.lam_h)

    def parts(self) -> tuple[int, int, int, float, list[float]]:
        """``(K, L, n, λ_{H_1}, [λ_{W_1} .. λ_{W_L}])``, the arguments of the keyword form.

        Returns
        -------
        tuple
            ``(classes, layers, n, lam_h, lam_w)``, ``lam_w`` a list of ``L`` floats.

        Examples
        --------
        >>> Problem(3, 2, 10, 0.5, 0.1).parts()
        (3, 2, 10, 0.5, [0.1, 0.1])
        """
        return self.classes, self.layers, self.n, self.lam_h, list(self.lam_w)

    def regularised(self) -> Problem:
        """``self`` if every ``λ > 0`` (what the closed forms need), else a one-line ``ConfigError``.

        Returns
        -------
        Problem
            ``self``.

        Examples
        --------
        >>> Problem(3, 2, 10, 0.5, 0.1).regularised().lam_h
        0.5
        """
        check_float("lam_h", self.lam_h, gt=0.0)
        check_per_layer("lam_w", list(self.lam_w) if len(set(self.lam_w)) > 1 else self.lam_w[0], self.layers)
        return self

    def with_family(self, loss: str = "mse", activation: str = "relu", eps: float | None = None) -> Problem:
        """The same problem with another model family.

        Parameters
        ----------
        loss : {'mse', 'ce'}
            The loss.
        activation : {'relu', 'linear', 'relu_eps'}
            The activation.
        eps : float, optional
            ε of σ_ε (only with ``"relu_eps"``).

        Returns
        -------
        Problem
            A copy of ``self`` with the new family (validated).

        Examples
        --------
        >>> Problem(3, 2, 10, 0.5, 0.1).with_family("ce", "linear").loss
        'ce'
        """
        return dataclasses.replace(self, loss=loss, activation=activation, eps=eps)

    # --- serialisation -------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON/YAML types: ``lam_w`` and ``widths`` as lists.  A plain dict: the JSON/YAML form,
        read back by :meth:`from_dict`.

        Returns
        -------
        dict
            ``classes, layers, n, lam_h, lam_w, widths, loss, activation, eps``.

        Examples
        --------
        >>> Problem(3, 2, 10, 0.5, 0.1).to_dict()["lam_w"]
        [0.1, 0.1]
        """
        return {
            "classes": self.classes,
            "layers": self.layers,
            "n": self.n,
            "lam_h": self.lam_h,
            "lam_w": list(self.lam_w),
            "widths": None if self.widths is None else list(self.widths),
            "loss": self.loss,
            "activation": self.activation,
            "eps": self.eps,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Problem:
        """Inverse of :meth:`to_dict`; missing family keys take the defaults, unknown keys are refused.

        Parameters
        ----------
        data : mapping
            ``classes, layers, n, lam_h, lam_w`` (``layers`` may be left out when ``lam_w`` is a list) and
            optionally ``widths, loss, activation, eps``.

        Returns
        -------
        Problem
            The validated problem.

        Examples
        --------
        >>> p = Problem(3, 2, 10, 0.5, [0.1, 0.2])
        >>> Problem.from_dict(p.to_dict()) == p
        True
        """
        allowed = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise ConfigError(f"problem key {unknown[0]!r} is unknown, must be one of {', '.join(allowed)}.")
        if "layers" not in data and "lam_w" in data and isinstance(data["lam_w"], (list, tuple)):
            data = {**data, "layers": len(data["lam_w"])}
        missing = [k for k in ("classes", "layers", "n", "lam_h", "lam_w") if k not in data]
        if missing:
            raise ConfigError(
                f"problem key {missing[0]!r} is missing, must give classes, layers, n, lam_h, lam_w."
            )
        return cls(**data)


def problem_of(
    classes: int | Problem | None,
    layers: int | None = None,
    n: int | None = None,
    lam_h: float | None = None,
    lam_w: float | Sequence[float] | str | None = None,
    *,
    problem: Problem | None = None,
    **family: Any,
) -> Problem:
    """The :class:`Problem` of a theory function's arguments: either a ``Problem`` (first argument or
    ``problem=``) or the keyword form ``classes, layers, n, lam_h, lam_w`` (+ ``loss``, ``activation``,
    ``eps``), not both.

    Parameters
    ----------
    classes, layers, n, lam_h, lam_w
        The keyword form (all five), or ``classes`` a ``Problem`` and the others ``None``.
    problem : Problem, optional
        The problem by keyword.
    **family
        ``loss``, ``activation``, ``eps`` of the keyword form.

    Returns
    -------
    Problem
        The validated problem.

    Examples
    --------
    >>> problem_of(3, 2, 10, 0.5, 0.1).lam_w
    (0.1, 0.1)
    >>> p = Problem(3, 2, 10, 0.5, 0.1)
    >>> problem_of(p) is problem_of(None, problem=p) is p
    True
    """
    if isinstance(classes, Problem):
        classes, problem = None, classes
    if problem is not None:
        if not isinstance(problem, Problem):
            raise ConfigError(f"problem == {type(problem).__name__}, must be a Problem.")
        given = [
            k
            for k, v in (
                ("classes", classes),
                ("layers", layers),
                ("n", n),
                ("lam_h", lam_h),
                ("lam_w", lam_w),
            )
            if v is not None
        ]
        given += [k for k, v in family.items() if v is not None]
        if given:
            raise ConfigError(f"{given[0]} is given with a Problem, must be left out (the Problem holds it).")
        return problem
    missing = [
        k
        for k, v in (("classes", classes), ("layers", layers), ("n", n), ("lam_h", lam_h), ("lam_w", lam_w))
        if v is None
    ]
    if missing:
        raise ConfigError(f"{missing[0]} is missing, must be given (or pass a Problem).")
    fam = {k: v for k, v in family.items() if v is not None}
    return Problem(classes, layers, n, lam_h, lam_w, **fam)  # type: ignore[arg-type]


#: The flagship instance of eq. (1) (the 2024 paper's 4-DUFM of §6.1 / Fig. 2 top: K = 10, L = 4, n = 50,
#: λ = 0.004 for H_1 and every W_l, width 30), from the one place its values live,
#: :mod:`deepcollapse._core.flagship`.
FLAGSHIP = Problem(
    classes=_flagship.CLASSES,
    layers=_flagship.LAYERS,
    n=_flagship.N,
    lam_h=_flagship.LAM,
    lam_w=(_flagship.LAM,) * _flagship.LAYERS,
    widths=(_flagship.WIDTH,) * _flagship.LAYERS,
)
