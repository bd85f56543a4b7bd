"""The words for the fields of an instance of eq. (1), written once: the help text of each of
:class:`~deepcollapse.theory.problem.Problem`'s fields, which is its field metadata, the option help of every
config that holds a problem (``DUFMConfig``, ``SearchConfig``) and of the ``theory`` command.

Plain strings and one check in a module that imports only :mod:`deepcollapse._core.checks`, so that the
command line builds its options (and a config validates itself) without loading the theory package.  The
check, :func:`check_problem_fields`, is the one validation of these fields: ``Problem``, ``DUFMConfig`` and
``SearchConfig`` each call it and add only their own stricter rules (the search: ``L >= 2``, ``λ > 0``).  A
text states what the value is and its range; where a command adds something of its own (``λ = 0`` allowed
by the trainer, ``--lam`` as the shared alias) it appends it to these words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from deepcollapse._core.checks import check_float, check_int, check_per_layer

__all__ = ["PROBLEM_HELP", "check_problem_fields"]

#: one help text per field of :class:`~deepcollapse.theory.problem.Problem` (``lam_w`` and ``widths``: one
#: value or comma-separated L values on the command line)
PROBLEM_HELP: dict[str, str] = {
    "classes": "K, number of classes (>= 2)",
    "layers": "L, number of weight matrices W_1..W_L (>= 1; L = 1: the classical UFM)",
    "n": "samples per class (>= 1); N = K n",
    "lam_h": "λ_H1, weight decay of the free features H_1",
    "lam_w": "λ_W: one float or comma-separated L floats, weight decay of W_1..W_L",
    "widths": "d_1..d_L: one int or comma-separated L ints (H1 has d_1 rows, W_L is (K, d_L))",
}


def check_problem_fields(
    classes: Any, layers: Any, n: Any, lam_h: Any, lam_w: Any, *, min_layers: int = 1
) -> tuple[int, int, int, float, list[float]]:
    """The problem's fields validated and normalised: ``K >= 2``, ``L >= min_layers``, ``n >= 1``,
    ``λ_{H_1} >= 0`` and ``L`` values ``λ_{W_l} >= 0`` (one value, a list or a comma-separated string).

    Parameters
    ----------
    classes, layers, n : int
        ``K``, ``L`` and the samples per class.
    lam_h : float
        ``λ_{H_1}``.
    lam_w : float, sequence of float or str
        ``λ_{W_1} .. λ_{W_L}`` (one value: every layer).
    min_layers : int, default 1
        The least ``L`` the caller allows.

    Returns
    -------
    tuple
        ``(classes, layers, n, lam_h, lam_w)`` with ``lam_w`` a list of ``L`` floats.

    Raises
    ------
    ConfigError
        One line naming the field as the user wrote it (``lam_w[1] == -0.2, must be >= 0.0.``).

    Examples
    --------
    >>> check_problem_fields(3, 2, 5, 0.01, "0.01,0.02")
    (3, 2, 5, 0.01, [0.01, 0.02])
    >>> check_problem_fields(1, 2, 5, 0.01, 0.01)
    Traceback (most recent call last):
    ...
    deepcollapse._core.checks.ConfigError: classes == 1, must be >= 2.
    """
    K = check_int("classes", classes, min=2)
    L = check_int("layers", layers, min=min_layers)
    n = check_int("n", n, min=1)
    lam_h = check_float("lam_h", lam_h, ge=0.0)
    lams: Sequence[float] = check_per_layer("lam_w", lam_w, L, gt=None)
    for i, v in enumerate(lams):
        check_float("lam_w" if len(set(lams)) == 1 else f"lam_w[{i}]", v, ge=0.0)
    return K, L, n, lam_h, [float(v) for v in lams]
