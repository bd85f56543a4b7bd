"""The DUFM a DUFM-like network run trains, and the theory's levels for it (2024 §6.3, Fig. 2 bottom).

A run with ``reg = dufm`` and the MSE loss minimises eq. (1) of the 2024 paper over the head, with the
backbone's output features as ``H_1`` (constrained by the backbone instead of free): ``K`` classes, ``L`` =
the head's layers, ``n = N / K`` samples per class, ``λ_W = lam`` and ``λ_H1 = lam_h / N``
(``lam_h_scale = batch_mean``, the default: ``lam_h`` multiplies the *mean* of ``‖h_1‖²``) or ``lam_h``
(``dataset``).  Its loss can approach, never beat, that DUFM's optimum, at most ``min(L_DNC, L_SRG)``
(:func:`deepcollapse.theory.compare`).  An unbalanced training set (``N`` not a multiple of ``K``) is
evaluated at ``n = 1`` with ``λ_H1`` replaced by ``(N / K) λ_H1``: L_DNC and L_SRG depend on ``n`` and
``λ_H1`` only through ``n λ_H1`` (docs/formulas.md).  ``mse_reduction: mean`` (torch's ``MSELoss``, ``2/K``
times eq. (1)'s fit) has no DUFM here: ``None``.

Here (in ``nets``, which may import ``theory``) so that ``net train`` prints the comparison and the
experiments draw it from one definition.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deepcollapse.theory import Problem, compare
from deepcollapse.theory.compare import Comparison

__all__ = ["dufm_problem", "theory_levels"]


def _get(config: Any, key: str, default: Any = None) -> Any:
    return config.get(key, default) if isinstance(config, Mapping) else getattr(config, key, default)


def dufm_problem(config: Any, n_train: int) -> Problem | None:
    """The L-DUFM that a DUFM-like MSE network run of ``config`` with ``n_train`` training samples
    minimises over its head (module docstring); ``None`` for other runs.

    Parameters
    ----------
    config : NetConfig or mapping
        The run's configuration (``config.yaml`` read as a dict works too).
    n_train : int
        The number of training samples ``N``.

    Returns
    -------
    Problem or None
        ``K``, ``L``, ``n``, ``λ_H1``, ``λ_W`` of that DUFM.

    Examples
    --------
    >>> config = {"reg": "dufm", "classes": [0, 1, 2], "layers": 2, "lam_h": 0.1, "lam": 0.01}
    >>> p = dufm_problem(config, 30)  # batch_mean: λ_H1 = lam_h / N
    >>> p.classes, p.layers, p.n, round(p.lam_h, 6), p.lam_w
    (3, 2, 10, 0.003333, (0.01, 0.01))
    >>> dufm_problem({"reg": "standard"}, 30) is None
    True
    """
    if (
        _get(config, "reg") != "dufm"
        or _get(config, "loss", "mse") != "mse"
        or _get(config, "mse_reduction", "sum") != "sum"
    ):
        return None
    classes = _get(config, "classes")
    K = int(_get(config, "num_classes") or (len(classes) if classes else 10))
    lam_h = float(_get(config, "lam_h"))
    if _get(config, "lam_h_scale", "batch_mean") == "batch_mean":
        lam_h /= n_train
    n = n_train // K
    if n * K != n_train:
        n, lam_h = 1, lam_h * n_train / K
    L = int(_get(config, "layers"))
    return Problem(K, L, n, lam_h, (float(_get(config, "lam")),) * L)


def theory_levels(config: Any, n_train: int) -> Comparison | None:
    """``theory.compare`` at :func:`dufm_problem` (``loss_dnc``, ``loss_srg``, ...); ``None`` for runs
    that are not DUFM-like with the MSE loss.

    Parameters
    ----------
    config : NetConfig or mapping
        The run's configuration.
    n_train : int
        The number of training samples.

    Returns
    -------
    Comparison or None
        The theory's levels for that DUFM.

    Examples
    --------
    >>> config = {"reg": "dufm", "classes": [0, 1, 2], "layers": 2, "lam_h": 0.1, "lam": 0.01}
    >>> levels = theory_levels(config, 30)
    >>> type(levels).__name__, levels.classes, levels.loss_dnc > 0
    ('Comparison', 3, True)
    """
    problem = dufm_problem(config, n_train)
    if problem is None:
        return None
    return compare(problem.classes, problem.layers, problem.n, problem.lam_h, list(problem.lam_w))
