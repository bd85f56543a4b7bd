"""Classify one trained L-DUFM run against the theory engine: ``classify_run(H1, weights, ...) -> dict``.

For one run ``(H1, weights)`` (all in float64): ``final_loss, fit, reg, grad_norm, ranks`` (numerical rank of
the post-ReLU class means ``M_1 .. M_L``, ``M_1`` = class means of ``H_1``; tolerance ``rank_rtol · σ_1``),
``ranks_pre`` (``M~_2 .. M~_L``), ``dnc1`` (``tr Σ_W / tr Σ_B`` of ``H_1 .. H_L``), ``dnc2_cond`` (``σ_1/σ_K``
of ``M_1 .. M_L``), ``srg_gram_distance``, ``classification``, ``diverged``, ``diverged_step``,
``polished_loss``, ``below_dnc``; the theory it is compared with (``loss_dnc``, ``loss_srg``, ``loss_zero``)
is :func:`theory_of`.  A whole run folder is analysed, and ``summary.json`` written, by
:func:`deepcollapse.dufm.summary.analyze_dufm`.

Classification (first rule that applies):

1. ``diverged`` -- the trainer marked the run diverged (NaN/inf), or its final parameters are not finite.
2. ``zero`` -- the all-zero solution: ``fit >= 1/2 − ZERO_TOL`` and ``reg <= ZERO_TOL`` (loss ≈ 1/2,
   no output).
3. ``srg_like`` -- ``K >= 6``, ``L >= 3``, some intermediate post-ReLU class-mean matrix ``M_2 .. M_{L-1}``
   has rank ``< K`` (the SRG's low-rank middle layers), and the cosine-normalised Gram matrix of the post-ReLU
   last-layer class means ``M_L^T M_L`` equals :func:`~deepcollapse.theory.constructions.srg_gram` up to a
   permutation of the classes and scale: ``min_P max_ij |G − P G_SRG P^T| <= GRAM_TOL``.  (The rank condition
   matters for ``K = 6``: there the SRG's ``M_L^T M_L`` is diagonal, like DNC's.)  The permutation is searched
   by quadratic assignment (``scipy.optimize.quadratic_assignment``: FAQ from up to 32 starts, each refined by
   2-opt; an upper bound of the minimum), after a permutation-invariant lower bound (sorted entries and
   sorted eigenvalues) has not already ruled it out.  This is a statement about structure and is checked
   before convergence: the SRG construction is *not* a stationary point of eq. (1) (its gradient norm is
   ~1e-2 at the flagship setting), so GD near it keeps moving.
4. ``dnc`` -- every post-ReLU class-mean matrix ``M_2 .. M_L`` has rank ``K`` and ``M_L`` is an orthogonal
   frame up to ``DNC2_TOL`` (``σ_1/σ_K <= 1 + DNC2_TOL``): DNC2 in the bias-free sense (Definition 1).  Also
   structural, so checked before convergence: GD approaches DNC slowly along flat directions.
5. ``dnc_converging`` -- heading to DNC: every ``M_2 .. M_L`` has rank ``K``, ``M_L`` is an orthogonal frame
   up to ``DNC_CONVERGING_COND`` (``σ_1/σ_K <= 1 + DNC_CONVERGING_COND``) and the loss is at most
   ``DNC_CONVERGING_GAP`` (relative) above ``L_DNC`` and not below it.  GD approaches DNC along flat
   directions, so after a finite budget such runs sit a few 1e-4 above ``L_DNC`` with condition numbers
   1.04-1.10 and ``‖∇‖ ~ 1e-3`` (2024 Fig. 3 right at width >= 64); counting them as not converged would make
   P(DNC) a function of the step budget.  ``reaches_dnc`` in the tables is ``dnc`` or ``dnc_converging``.
6. ``not_converged`` -- ``‖∇ eq.(1)‖_F > GRAD_TOL`` (float64 gradient at the final parameters) *and* the loss
   still fell by more than ``PLATEAU_TOL`` (relative) over the last 10 % of the steps (``metrics.jsonl``; the
   last record at a step ``<= 0.9 T``).  Both are needed: at lr 0.5 GD typically ends in a small oscillation
   (edge of stability) with ``‖∇‖ ~ 1e-2`` while the loss has stopped decreasing.
7. ``low_rank`` -- some intermediate ``M_l`` (``2 <= l <= L``) has rank ``< K``.
8. otherwise ``not_converged`` (full rank yet no orthogonal frame: not a known stationary structure).

Polish: keep the class-mean structure ``M~_2 .. M~_L`` and re-optimise the layers with the conditionally
optimal ones (:func:`~deepcollapse.theory.layers.solution_from_class_means`: balanced first layer, min-norm
middle layers, ridge last layer) and the scales (each ``M~_l`` times ``c_l > 0``, Nelder–Mead on ``log c``
of the explicit eq. (1) value; ReLU is positively homogeneous, so the structure is kept).  Two sources of
``M~``: the learned pre-ReLU class means, and those of the *collapsed* network (:func:`collapsed_pre_means`:
``H_1`` replaced by its class means and pushed through the learned weights), which the middle layers can
always interpolate.  ``polished_loss`` is the lowest explicit loss found: an upper bound on the best loss
with this structure; ``polished_loss < final_loss`` means GD had not finished optimising within the
structure.

Other model families (``config.loss``/``activation``, :mod:`deepcollapse.family`): the closed forms
(``loss_dnc``, ``loss_srg``, the SRG Gram match, the polish) exist for MSE + ReLU with every λ > 0 only;
otherwise they are ``None`` and ``theory["note"]`` says "no closed form".  Ranks, ``dnc1``, ``dnc2_cond``
(scale-free) and the per-run parameter ``norms`` (which grow without bound at λ = 0) are reported for all.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.results import Result
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.kernel import numpy_gradients
from deepcollapse.family import Family
from deepcollapse.metrics.functional import nc1_trace_ratio, nc2_cond, numerical_rank
from deepcollapse.theory.constructions.gram import cosine_gram, gram_match
from deepcollapse.theory.objective import evaluate, forward

__all__ = [
    "CLASSIFICATIONS",
    "DNC2_TOL",
    "DNC_CONVERGING_COND",
    "DNC_CONVERGING_GAP",
    "GRAD_TOL",
    "GRAM_TOL",
    "PLATEAU_TOL",
    "ZERO_TOL",
    "DUFMRun",
    "classify_run",
    "gram_match",
    "polish",
    "theory_of",
]

log = logging.getLogger(__name__)

ZERO_TOL = 1e-4
GRAD_TOL = 1e-4
PLATEAU_TOL = 1e-3
GRAM_TOL = 0.05
DNC2_TOL = 0.05
DNC_CONVERGING_COND = 0.25
DNC_CONVERGING_GAP = 5e-3
#: Every label :func:`~deepcollapse.dufm.summary.analyze_dufm` gives a run, in the order the rules are tried
#: (module docstring).
CLASSIFICATIONS = ("diverged", "zero", "srg_like", "dnc", "dnc_converging", "not_converged", "low_rank")


@dataclass(frozen=True, eq=False)
class DUFMRun(Result):
    """One run of a DUFM run folder, analysed in float64 from ``params.pt`` (an entry of
    :attr:`~deepcollapse.dufm.summary.DUFMSummary.runs`; the classification rules are in the module
    docstring).

    A diverged run holds only ``run, seed, diverged, diverged_step, final_loss, fit, reg, classification,
    ranks, ranks_pre, dnc1, dnc2_cond, polished_loss, grad_norm, srg_gram_distance, below_dnc`` (all but the
    first four ``None`` / ``False``); ``norms``, ``loss_decrease_last_10pct`` and ``polish_*`` are absent.

    Attributes
    ----------
    run : int
        Index of the run in the folder (``0 .. runs − 1``).
    seed : int
        Its seed (``config.seed + run``).
    diverged : bool
        Marked diverged by the trainer, or its final parameters are not finite.
    diverged_step : int or None
        The step at which the trainer marked it diverged.
    final_loss, fit, reg : float or None
        Eq. (1) (or the family's objective) and its two terms at the final parameters.
    norms : dict
        ``{"H1": ‖H_1‖_F, "W": [‖W_l‖_F ...]}`` (they grow without bound at λ = 0).
    grad_norm : float or None
        ``‖∇ eq.(1)‖_F`` at the final parameters (float64).
    loss_decrease_last_10pct : float or None
        Relative loss decrease over the last 10 % of the steps (``metrics.jsonl``).
    ranks : list of int or None
        Numerical ranks of the post-activation class means ``M_1 .. M_L`` (tolerance ``rank_rtol · σ_1``).
    ranks_pre : list of int or None
        Those of the pre-activation class means ``M~_2 .. M~_L``.
    dnc1 : list of float or None
        ``tr Σ_W / tr Σ_B`` of ``H_1 .. H_L``.
    dnc2_cond : list of float or None
        ``σ_1 / σ_K`` of ``M_1 .. M_L``.
    srg_gram_distance : float or None
        Distance of the cosine Gram matrix of ``M_L`` to the SRG's, up to a permutation (``K >= 6``).
    classification : str
        One of :data:`CLASSIFICATIONS`.
    polished_loss : float or None
        The lowest explicit loss with the run's class-mean structure (:func:`polish`); ``None`` without a
        closed form, or with ``config.polish`` false.
    polish_scales : list of float or None
        The scales ``c_l`` of the polished structure.
    polish_source : {'learned', 'collapsed', 'zero'} or None
        Which class means the polish started from.
    below_dnc : bool
        ``final_loss < loss_dnc``.
    """

    run: int | None = None
    seed: int | None = None
    diverged: bool | None = None
    diverged_step: int | None = None
    final_loss: float | None = None
    fit: float | None = None
    reg: float | None = None
    norms: dict[str, Any] | None = None
    grad_norm: float | None = None
    loss_decrease_last_10pct: float | None = None
    ranks: list[int] | None = None
    ranks_pre: list[int] | None = None
    dnc1: list[float | None] | None = None
    dnc2_cond: list[float | None] | None = None
    srg_gram_distance: float | None = None
    classification: str | None = None
    polished_loss: float | None = None
    polish_scales: list[float] | None = None
    polish_source: str | None = None
    below_dnc: bool | None = None


def _cosine_gram(M: np.ndarray) -> np.ndarray:
    return cosine_gram(M.T @ M)


def _pre_means(
    H1: np.ndarray, weights: list[np.ndarray], K: int, family: Family | None = None
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """``(post class means M_1..M_L, pre class means M~_2..M~_L, features H_1..H_L)``, means ``(d, K)``."""
    n = H1.shape[1] // K
    pre, feats, _ = forward(H1, weights, family)  # the theory's float64 forward pass

    def means(H: np.ndarray) -> np.ndarray:
        return H.reshape(H.shape[0], K, n).mean(axis=2)  # (d, K)

    return [means(H) for H in feats], [means(Ht) for Ht in pre], feats


def collapsed_pre_means(H1: np.ndarray, weights: list[np.ndarray], K: int) -> list[np.ndarray]:
    """``M~_2 .. M~_L`` of the *collapsed* network: the class means ``M_1`` of ``H_1`` pushed through the
    learned weights, ``M~_{l+1} = W_l ReLU(M~_l)`` (``M~_2 = W_1 M_1``).

    They equal the learned pre-ReLU class means when DNC1 holds, and always satisfy
    ``M~_{l+1} = W_l ReLU(M~_l)`` exactly, so the conditionally optimal middle layers interpolate them with
    ``‖W_l‖ <=`` the learned norm (no pseudo-inverse blow-up on noise directions).
    """
    n = H1.shape[1] // K
    M = H1.reshape(H1.shape[0], K, n).mean(axis=2)  # (d1, K)
    out = []
    for W in weights[:-1]:
        Mt = W @ M
        out.append(Mt)
        M = np.maximum(Mt, 0.0)
    return out


def polish(
    pre_means: list[np.ndarray], config: DUFMConfig, collapsed: list[np.ndarray] | None = None
) -> dict[str, Any] | None:
    """Re-optimise weights and scales for the class-mean structure ``M~_2 .. M~_L`` (module docstring).

    Candidates: the learned pre-ReLU class means ``pre_means`` and (if given) the ``collapsed`` ones of
    :func:`collapsed_pre_means`.  For each, Nelder–Mead over ``log c_l`` minimises the explicit eq. (1)
    value of :func:`~deepcollapse.theory.layers.solution_from_class_means` of ``(c_2 M~_2, .., c_L M~_L)``;
    the lowest wins.
    """
    from scipy.optimize import minimize

    from deepcollapse.theory.layers import solution_from_class_means

    if config.layers < 2 or not pre_means or not all(np.isfinite(M).all() for M in pre_means):
        return None
    if max(float(np.abs(M).max()) for M in pre_means) == 0.0:
        return {"polished_loss": 0.5, "scales": [0.0] * len(pre_means), "source": "zero"}
    d1 = config.width[0]
    args = (config.n, config.lam_h, config.lam_w)

    def explicit(means: list[np.ndarray], logc: np.ndarray) -> float:
        try:
            sol = solution_from_class_means([M * math.exp(c) for M, c in zip(means, logc)], *args, d1=d1)
        except (ConfigError, np.linalg.LinAlgError):
            return math.inf
        return float(sol.loss)

    best: dict[str, Any] | None = None
    sources = [("learned", pre_means)] + ([("collapsed", collapsed)] if collapsed is not None else [])
    for name, means in sources:
        x0 = np.zeros(len(means))
        f0 = explicit(means, x0)
        res = minimize(
            lambda x, m=means: min(explicit(m, x), 1e300),
            x0,
            method="Nelder-Mead",
            options={"xatol": 1e-6, "fatol": 1e-12, "maxiter": 300 * len(means)},
        )
        for x, v in ((x0, f0), (res.x, float(res.fun))):
            if math.isfinite(v) and (best is None or v < best["polished_loss"]):
                best = {"polished_loss": v, "scales": [float(math.exp(c)) for c in x], "source": name}
    return best


def _loss_parts(H1: np.ndarray, weights: list[np.ndarray], config: DUFMConfig) -> tuple[float, float, float]:
    """``(loss, fit, reg)`` of eq. (1) (or of the config's model family) for one run, in float64: the
    theory's :func:`~deepcollapse.theory.objective.evaluate`, as the trainer's ``loss_parts``."""
    parts = evaluate(H1, weights, config.problem)
    return parts.total, parts.fit, parts.reg


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(float(x)) else None


def classify_run(
    H1: np.ndarray,
    weights: list[np.ndarray],
    config: DUFMConfig,
    diverged_step: int | None,
    theory: dict[str, Any],
    G_srg: np.ndarray | None,
    history: list[tuple[int, float | None]] | None = None,
) -> dict[str, Any]:
    """The per-run entry of ``summary.json`` for one run ``(H1, weights)`` of ``config``: loss parts,
    gradient norm, ranks, DNC metrics, SRG Gram distance, the classification (module docstring) and the
    polish against ``theory`` (:func:`theory_of`).  Also used by the search for its solutions."""
    K, L = config.classes, config.layers
    rec: dict[str, Any] = {"diverged": diverged_step is not None, "diverged_step": diverged_step}
    finite = np.isfinite(H1).all() and all(np.isfinite(W).all() for W in weights)
    if diverged_step is not None or not finite:
        rec.update(
            {
                "diverged": True,
                "final_loss": None,
                "fit": None,
                "reg": None,
                "classification": "diverged",
                "ranks": None,
                "ranks_pre": None,
                "dnc1": None,
                "dnc2_cond": None,
                "polished_loss": None,
                "grad_norm": None,
                "srg_gram_distance": None,
                "below_dnc": False,
            }
        )
        return rec
    loss, fit, reg = _loss_parts(H1, weights, config)
    plateau = None  # relative loss decrease over the last 10 % of the steps
    if history:
        T = max(s for s, _ in history)
        earlier = [(s, v) for s, v in history if s <= 0.9 * T and v is not None]
        if earlier and T > 0:
            plateau = (max(earlier)[1] - loss) / max(abs(loss), 1e-300)
    fam = config.family
    grads = numpy_gradients(
        [H1[None], *[W[None] for W in weights]], K, config.n, config.lam_h, config.lam_w, fam
    )
    grad_norm = math.sqrt(sum(float(np.sum(g**2)) for g in grads))
    posts, pres, feats = _pre_means(H1, weights, K, fam)
    y = np.repeat(np.arange(K), config.n)
    ranks = [int(numerical_rank(M, rtol=config.rank_rtol)) if np.abs(M).max() > 0 else 0 for M in posts]
    ranks_pre = [int(numerical_rank(M, rtol=config.rank_rtol)) if np.abs(M).max() > 0 else 0 for M in pres]
    dnc1 = [_num(nc1_trace_ratio(X.T, y, K)) for X in feats]
    dnc2 = [_num(nc2_cond(M.T)) if np.abs(M).max() > 0 else None for M in posts]
    srg_dist = None
    if G_srg is not None and np.abs(posts[-1]).max() > 0:
        m = gram_match(_cosine_gram(posts[-1]), G_srg)
        srg_dist = m["distance"] if m["lower"] <= GRAM_TOL else m["lower"]
    if fit >= theory["loss_zero"] - ZERO_TOL and reg <= ZERO_TOL:
        cls = "zero"
    elif srg_dist is not None and srg_dist <= GRAM_TOL and L >= 3 and min(ranks[1:-1]) < K:
        cls = "srg_like"
    elif all(r == K for r in ranks[1:]) and dnc2[-1] is not None and dnc2[-1] <= 1.0 + DNC2_TOL:
        cls = "dnc"
    elif (
        all(r == K for r in ranks[1:])
        and dnc2[-1] is not None
        and dnc2[-1] <= 1.0 + DNC_CONVERGING_COND
        and theory.get("loss_dnc") is not None
        and 0.0 <= loss / theory["loss_dnc"] - 1.0 <= DNC_CONVERGING_GAP
    ):
        cls = "dnc_converging"
    elif grad_norm > GRAD_TOL and not (plateau is not None and plateau <= PLATEAU_TOL):
        cls = "not_converged"
    elif L >= 2 and min(ranks[1:]) < K:
        cls = "low_rank"
    else:
        cls = "not_converged"
    # the polish re-optimises with the MSE + ReLU closed forms: only for that family (else "no closed form"),
    # and only where the config asks for it (it does not enter the classification)
    pol = (
        polish(pres, config, collapsed_pre_means(H1, weights, K))
        if theory["closed_form"] and config.polish
        else None
    )
    rec.update(
        {
            "final_loss": loss,
            "fit": fit,
            "reg": reg,
            # parameter norms: at λ = 0 they grow without bound, so compare runs by the scale-free metrics
            # (dnc1 = tr Σ_W / tr Σ_B, dnc2_cond, ranks at the relative tolerance rank_rtol)
            "norms": {
                "H1": float(np.linalg.norm(H1)),
                "W": [float(np.linalg.norm(W)) for W in weights],
            },
            "grad_norm": grad_norm,
            "loss_decrease_last_10pct": plateau,
            "ranks": ranks,
            "ranks_pre": ranks_pre,
            "dnc1": dnc1,
            "dnc2_cond": dnc2,
            "srg_gram_distance": srg_dist,
            "classification": cls,
            "polished_loss": None if pol is None else pol["polished_loss"],
            "polish_scales": None if pol is None else pol["scales"],
            "polish_source": None if pol is None else pol["source"],
            "below_dnc": bool(theory["loss_dnc"] is not None and loss < theory["loss_dnc"]),
        }
    )
    return rec


def theory_of(config: DUFMConfig) -> dict[str, Any]:
    """The closed-form theory of the config's model, or ``loss_dnc = loss_srg = None`` with a note saying
    there is none (every family but MSE + ReLU with all λ > 0): never a silent comparison with MSE + ReLU.
    ``loss_zero`` (the fit of the all-zero network: 1/2 for MSE, log K for cross-entropy) is always given."""
    fam = config.family
    Y = fam.targets(config.classes, config.n)
    loss_zero = float(fam.loss.value(np.zeros_like(Y), Y))
    if fam.has_closed_form and config.lam_h > 0 and min(config.lam_w) > 0:
        from deepcollapse.theory.compare import compare

        c = compare(config.classes, config.layers, config.n, config.lam_h, config.lam_w)
        return {**c.to_dict(), "closed_form": True}
    why = f"model {fam.name}" if not fam.has_closed_form else "lam = 0 (unregularised)"
    return {
        "closed_form": False,
        "note": f"no closed form for {why}: L_DNC, L_SRG and the polish are not computed",
        "family": fam.name,
        "loss_dnc": None,
        "loss_srg": None,
        "loss_zero": loss_zero,
    }
