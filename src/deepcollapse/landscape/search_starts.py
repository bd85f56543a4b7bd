"""The starts of one search round (:mod:`deepcollapse.landscape.search`, step 1).

The round plan (``_plan``: how many starts of each kind), the DNC and SRG constructions re-optimised for the
model family (``family_construction``, ``_constructions``: reduced points ``[M_1, W_1..W_L]``) and the
random, perturbed and redrawn starts drawn from them (``_starts``), all deterministic in the generator a
round is given.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError
from deepcollapse.landscape.piecewise import Problem, collapse
from deepcollapse.landscape.search_config import SearchConfig

__all__ = ["family_construction"]

log = logging.getLogger(__name__)


def family_construction(
    problem: Problem, name: str, construction: str = "best", width: int | None = None
) -> Any:
    """The DNC (``name = "dnc"``) or SRG (``"srg"``, variant ``construction``) construction re-optimised for
    ``problem``'s family, as explicit matrices: the closed forms under MSE (:mod:`~deepcollapse.theory.
    constructions`), the cross-entropy re-optimisation under CE (:mod:`~deepcollapse.theory.cross_entropy`,
    what ``theory compare --loss ce`` reports); with σ_ε or the linear activation the same matrices (the
    ReLU optimum of the construction, which the polish then re-optimises for the family).

    Parameters
    ----------
    problem : Problem
        The instance of eq. (1) (``λ > 0``).
    name : {"dnc", "srg"}
        The structure.
    construction : str
        The SRG variant (``best``, ``def9``, ``def11.1``, ``def11.2``).
    width : int, optional
        Rows of ``H_1`` and of the hidden weights.

    Returns
    -------
    Solution
        ``H1`` (``(d_1, K n)``) and ``weights``; ``ConfigError`` where the construction does not exist
        (SRG with the linear activation, which cannot zero the negative entries SRG relies on, or below
        ``K = 6``, ``L = 2``).

    Examples
    --------
    >>> s = family_construction(Problem(3, 2, 1, 0.01, 0.01, loss="ce"), "dnc")
    >>> s.construction, round(s.loss, 6)
    ('ce-dnc', 0.128171)
    """
    from deepcollapse.theory.constructions import dnc_solution, srg_solution
    from deepcollapse.theory.cross_entropy import ce_dnc_solution, ce_srg_solution

    K, L, n, lam_h, lams = problem.regularised().parts()
    ce = problem.loss == "ce"
    if name == "dnc":
        return (ce_dnc_solution if ce else dnc_solution)(K, L, n, lam_h, lams, width=width)
    if problem.activation == "linear":
        raise ConfigError(
            "--construction == 'srg' with --activation linear, must be dnc: SRG needs a ReLU-like activation "
            "(its last layer relies on σ zeroing negative entries)."
        )
    return (ce_srg_solution if ce else srg_solution)(
        K, L, n, lam_h, lams, construction=construction, width=width
    )


def _constructions(config: SearchConfig) -> list[tuple[str, list[np.ndarray]]]:
    """The DNC and every defined SRG construction, re-optimised for the family
    (:func:`family_construction`), as reduced points ``[M_1, W_1..W_L]``."""
    from deepcollapse.theory.constructions import SRG_CONSTRUCTIONS, srg_defined

    K, L = config.classes, config.layers
    problem = config.problem
    out = []
    sols: list[tuple[str, Callable[[], Any]]] = [
        ("dnc", partial(family_construction, problem, "dnc", width=config.width))
    ]
    for c in SRG_CONSTRUCTIONS if config.activation != "linear" else ():
        if srg_defined(K, L, c):
            sols.append((f"srg-{c}", partial(family_construction, problem, "srg", c, width=config.width)))
    for name, make in sols:
        try:
            sol = make()
        except ConfigError as exc:  # e.g. the width is too small for this construction
            log.info("construction %s skipped: %s", name, exc)
            continue
        if sol.H1.shape[0] != config.width or any(W.shape[0] not in (config.width, K) for W in sol.weights):
            continue
        out.append((name, [collapse(sol.H1, K), *[np.asarray(W, dtype=np.float64) for W in sol.weights]]))
    return out


def _random_point(config: SearchConfig, rng: np.random.Generator, scale: float) -> list[np.ndarray]:
    d, K = config.width, config.classes
    shapes = [(d, K)] + [(d, d)] * (config.layers - 1) + [(K, d)]
    stds = [1.0] + [1.0 / math.sqrt(d)] * config.layers
    return [scale * s * rng.standard_normal(sh) for sh, s in zip(shapes, stds)]


def _perturb(point: Sequence[np.ndarray], rng: np.random.Generator, sigma: float) -> list[np.ndarray]:
    out = []
    for A in point:
        rms = math.sqrt(float(np.mean(A**2))) or 1.0
        out.append(
            A * (1 + sigma * rng.standard_normal(A.shape)) + 0.3 * sigma * rms * rng.standard_normal(A.shape)
        )
    return out


def _redraw(
    point: Sequence[np.ndarray], rng: np.random.Generator, layers: int, scale: float
) -> list[np.ndarray]:
    """``point`` with its last ``layers`` weight matrices replaced by Gaussian ones of std ``scale/√d_in``."""
    out = [np.asarray(A, dtype=np.float64).copy() for A in point]
    for j in range(len(out) - layers, len(out)):
        out[j] = scale * rng.standard_normal(out[j].shape) / math.sqrt(out[j].shape[1])
    return out


def _plan(R: int, first: bool) -> dict[str, int]:
    """How many starts of each kind one round draws (module docstring, step 1)."""
    if first:
        n_random = R // 4
        n_cons = R // 4
        return {"random": n_random, "construction": n_cons, "best": 0, "redraw": R - n_random - n_cons}
    n_best = R // 4
    n_cons = R // 8
    n_redraw = (R * 3) // 8
    return {
        "random": R - n_best - n_cons - n_redraw,
        "construction": n_cons,
        "best": n_best,
        "redraw": n_redraw,
    }


def _starts(
    config: SearchConfig,
    rng: np.random.Generator,
    first: bool,
    constructions: list[tuple[str, list[np.ndarray]]],
    pool: list[dict[str, Any]],
) -> tuple[list[list[np.ndarray]], list[str]]:
    R = config.runs
    starts: list[list[np.ndarray]] = []
    labels: list[str] = []
    plan = _plan(R, first or not pool)
    for i in range(plan["random"]):
        scale = (0.3, 1.0, 2.0)[i % 3]
        starts.append(_random_point(config, rng, scale))
        labels.append(f"random(scale {scale})")
    for i in range(plan["construction"]):
        name, point = constructions[i % len(constructions)]
        sigma = (0.02, 0.1, 0.3)[(i // len(constructions)) % 3]
        starts.append(_perturb(point, rng, sigma))
        labels.append(f"{name}+noise {sigma}")
    for i in range(plan["best"]):
        entry = pool[i % min(len(pool), config.keep)]
        sigma = (0.01, 0.05, 0.2)[(i // max(1, min(len(pool), config.keep))) % 3]
        starts.append(_perturb(entry["params"], rng, sigma))
        labels.append(f"best#{entry['id']}+noise {sigma}")
    # the lower layers of a construction (or of a good point) kept, the last one or two layers drawn afresh:
    # the 2024 paper's K = 6 and K = 15 solutions below L_SRG differ from SRG only in M~_L (its App. B.1)
    bases = [c for c in constructions if c[0] != "dnc"] or list(constructions)
    if pool and not first:
        bases = [(f"best#{e['id']}", e["params"]) for e in pool[: config.keep]] + bases
    for i in range(plan["redraw"]):
        name, point = bases[i % len(bases)]
        k = min(config.layers, 1 + (i // len(bases)) % 2)
        scale = (0.5, 1.0, 2.0)[(i // (2 * len(bases))) % 3]
        starts.append(_redraw(point, rng, k, scale))
        labels.append(f"{name}, last {k} layer(s) redrawn (scale {scale})")
    return starts, labels
