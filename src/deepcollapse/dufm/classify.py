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

How far a run is from a verdict (``steps_to_verdict``, ``convergence_note``; :func:`steps_to_verdict`).  A run
labelled ``not_converged`` by rule 6 leaves it when its gradient norm falls to ``GRAD_TOL`` or its loss
stops falling (``PLATEAU_TOL`` over the last 10 % of the steps), whichever comes first.  Both are
extrapolated from the observed decay, assuming the loss approaches its limit geometrically (GD in a basin
converges linearly): the rate of decrease per step over the last two intervals between logged losses,
``r_a`` and ``r_b`` at their midpoints, gives the factor ``q = (r_b / r_a)^(1 / (m_b − m_a))`` by which the
rate shrinks per step; for GD the decrease per step is ``≈ lr ‖∇‖²``, so the gradient norm shrinks by
``√q`` per step and reaches ``GRAD_TOL`` after ``2 ln(GRAD_TOL / ‖∇‖) / ln q`` more steps; the loss drop over
the last 10 % of ``T + N`` steps is the integral of the extrapolated rate, and the smallest ``N`` that brings
it below ``PLATEAU_TOL`` is found by bisection.  The estimate is "at this rate": a run that leaves a plateau
or changes basin will differ; where the decrease is not slowing (``r_b >= r_a``), or fewer than three losses
were logged, no number is given and the note says why.  A run labelled ``not_converged`` by rule 8 has
converged (the note says so, with its gradient norm): more steps will not change its label.

Polish: keep the class-mean structure ``M~_2 .. M~_L`` and re-optimise the layers with the conditionally
optimal ones (:func:`~deepcollapse.theory.layers.solution_from_class_means`: balanced first layer, min-norm
middle layers, ridge last layer) and the scales (each ``M~_l`` times ``c_l > 0``, Nelder–Mead on ``log c``
of the explicit eq. (1) value; ReLU is positively homogeneous, so the structure is kept).  Two sources of
``M~``: the learned pre-ReLU class means, and those of the *collapsed* network (:func:`collapsed_pre_means`:
``H_1`` replaced by its class means and pushed through the learned weights), which the middle layers can
always interpolate.  Every re-fit is a *collapsed* point (``H_1`` = its class means), so a run that has not
collapsed can sit lower than all of them (a non-collapsed critical point: ``dufm train --classes 4 --layers
3 --width 8 --n 5 --steps 200000 --runs 2`` ends run 0 at 0.052384 with DNC1 of ``H_1`` 0.33, while its best
collapsed re-fit is 0.052900).  The run's own point is therefore a candidate too: ``polished_loss`` is the
lowest of the run's loss and the re-fits (never above ``final_loss``), ``polish_source`` says which
(``"run"``: no re-fit is lower, the run's point is kept), and ``polish_refit_loss`` is the best re-fit's
loss.  ``polished_loss`` is an upper bound on the best loss with this structure; ``polished_loss <
final_loss`` means GD had not finished optimising within the structure.

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
from deepcollapse._core.format import fmt_num
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
    "steps_to_verdict",
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
    polish_source : {'learned', 'collapsed', 'zero', 'run'} or None
        Which class means the polish started from; ``'run'``: no re-fit is lower than the run's own point,
        which is kept (``polished_loss == final_loss``).
    polish_refit_loss : float or None
        The lowest loss of the collapsed re-fits (may be above ``final_loss`` for a run that has not
        collapsed).
    below_dnc : bool
        ``final_loss < loss_dnc``.
    steps_to_verdict : int or None
        For a run labelled ``not_converged`` that is still moving: about how many more steps at the observed
        rate until the gradient norm reaches ``GRAD_TOL`` or the loss stops falling
        (:func:`steps_to_verdict`).
    convergence_note : str or None
        In words: how far the run is from a verdict and why (``not_converged`` runs only).
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
    polish_refit_loss: float | None = None
    below_dnc: bool | None = None
    steps_to_verdict: int | None = None
    convergence_note: str | None = None


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


def _decay_rate(history: list[tuple[int, float | None]] | None) -> tuple[float, float, int, int] | str:
    """``(q, rate at the last step, last step, logging interval)`` of the geometric model of
    :func:`steps_to_verdict`, or why there is none."""
    pts = sorted((int(s), float(v)) for s, v in (history or []) if v is not None and math.isfinite(float(v)))
    pts = [p for i, p in enumerate(pts) if i == 0 or p[0] > pts[i - 1][0]]
    if len(pts) < 3:
        return "fewer than three losses were logged (lower --log-every)"
    (s1, f1), (s2, f2), (s3, f3) = pts[-3:]
    ra, rb = (f1 - f2) / (s2 - s1), (f2 - f3) / (s3 - s2)
    if rb <= 0:
        return "the loss did not fall between the last two records"
    if ra <= 0 or rb >= ra:
        return "its decrease is not slowing down yet"
    ma, mb = (s1 + s2) / 2, (s2 + s3) / 2
    q = (rb / ra) ** (1.0 / (mb - ma))
    gaps = [b[0] - a[0] for a, b in zip(pts, pts[1:])]
    every = max(set(gaps), key=gaps.count)  # the logging interval (the last gap may be shorter)
    return q, rb * q ** (s3 - mb), s3, every


def steps_to_verdict(
    history: list[tuple[int, float | None]] | None, grad_norm: float, loss: float
) -> tuple[int | None, str]:
    """About how many more GD steps, at the observed rate, until a ``not_converged`` run reaches a verdict:
    its gradient norm at ``GRAD_TOL`` or its loss flat (``PLATEAU_TOL`` over the last 10 % of the steps).

    The model (module docstring): the loss approaches its limit geometrically, the rate of decrease shrinking
    by ``q`` per step (fitted to the last three logged losses) and the gradient norm by ``√q``; the plateau
    rule compares the final loss with the last one logged at or before 90 % of the steps, as
    :func:`classify_run` does with a log every ``log_every`` steps (read off the history).

    Parameters
    ----------
    history : list of (step, loss)
        The run's logged losses (``metrics.jsonl``), the last at the final step.
    grad_norm : float
        ``‖∇ eq.(1)‖`` at the final step.
    loss : float
        The final loss.

    Returns
    -------
    steps : int or None
        The estimate (``None`` where the model does not apply).
    why : str
        How it was obtained, or why there is none.
    """
    fit = _decay_rate(history)
    if isinstance(fit, str):
        return None, f"no estimate: {fit}"
    q, rate, T, every = fit
    log_q = math.log(q)
    n_grad = math.inf if grad_norm <= GRAD_TOL else 2.0 * math.log(GRAD_TOL / grad_norm) / log_q

    def flat(N: int) -> bool:  # the loss decrease of the plateau rule after T + N steps, under the model
        end = T + N
        start = (int(0.9 * end) // every) * every
        drop = rate * (q ** (start - T) - q ** (end - T)) / -log_q
        final = loss - rate * (1.0 - q**N) / -log_q  # the loss the rule divides by
        return drop / max(abs(final), 1e-300) <= PLATEAU_TOL

    grid = sorted({int(math.ceil(x)) for x in np.geomspace(1, 1e12, 1200)})
    n_flat = next((float(N) for N in grid if flat(N)), math.inf)
    N = min(n_grad, n_flat)
    if not math.isfinite(N):
        return None, "no estimate: the extrapolated decay does not reach a verdict"
    which = f"the gradient norm reaches {GRAD_TOL:g}" if n_grad <= n_flat else "the loss stops falling"
    return int(math.ceil(N)), f"until {which}, extrapolating the decay of the last logged losses"


def convergence_note(
    rec: dict[str, Any], history: list[tuple[int, float | None]] | None, loss_dnc: float | None
) -> tuple[int | None, str]:
    """``(steps_to_verdict, note)`` of a run labelled ``not_converged`` (module docstring)."""
    g, plateau = rec["grad_norm"], rec["loss_decrease_last_10pct"]
    moving = g > GRAD_TOL and not (plateau is not None and plateau <= PLATEAU_TOL)
    if not moving:  # rule 8: converged to a full-rank point that is not DNC
        flat = "" if plateau is None else f", loss decrease over the last 10 % {fmt_num(plateau, 2)}"
        cond = rec["dnc2_cond"][-1] if rec.get("dnc2_cond") else None
        why = [f"M_L's σ_1/σ_K is {fmt_num(cond, 4)} (DNC: <= {1 + DNC2_TOL:g})"]
        if loss_dnc:
            gap = rec["final_loss"] / loss_dnc - 1.0
            why.append(f"its loss is {fmt_num(100 * gap, 3)} % {'above' if gap >= 0 else 'below'} L_DNC")
        return None, (
            f"converged (gradient norm {fmt_num(g, 2)}{flat}) to a full-rank point that is not DNC: "
            f"{' and '.join(why)}; more steps will not change this label"
        )
    fell = (
        "" if plateau is None else f" and the loss fell {fmt_num(plateau, 2)} (relative) over the last 10 %"
    )
    steps, how = steps_to_verdict(history, g, rec["final_loss"])
    head = f"not converged: gradient norm {fmt_num(g, 2)} (> {GRAD_TOL:g}){fell}"
    if steps is None:
        return None, f"{head}; {how}"
    rounded = round(steps, 2 - len(str(steps))) if steps >= 100 else steps  # two significant digits
    return steps, f"{head}; needs roughly {rounded:,} more steps at this rate ({how})"


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
    refit = None if pol is None else pol["polished_loss"]
    if pol is not None and loss <= pol["polished_loss"]:  # no collapsed re-fit beats the run's own point
        pol = {"polished_loss": loss, "scales": None, "source": "run"}
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
            "polish_refit_loss": refit,
            "below_dnc": bool(theory["loss_dnc"] is not None and loss < theory["loss_dnc"]),
        }
    )
    if cls == "not_converged":
        rec["steps_to_verdict"], rec["convergence_note"] = convergence_note(
            rec, history, theory.get("loss_dnc")
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
