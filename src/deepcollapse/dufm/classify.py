"""Classify trained L-DUFM runs against the theory: ``classify(params, problem, criteria) -> DUFMSummary``.

:func:`classify` takes parameters held in memory (a :class:`~deepcollapse.dufm.fit.DUFMFit` of
:func:`~deepcollapse.dufm.fit.fit_dufm`, or ``[H1, W_1 .. W_L]``); a run folder is read and classified the
same way by :func:`deepcollapse.dufm.summary.analyze_dufm`.  The thresholds below (``ZERO_TOL`` ...) are the
fields of one frozen :class:`~deepcollapse.dufm.criteria.Criteria` (``zero_tol`` ...); the module constants
keep their old names and hold ``Criteria()``'s defaults.  :func:`classify_run` is the per-run step
(``summary.json``'s entry, a :class:`~deepcollapse.dufm.results.DUFMRun`), also used by the search.

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
were logged, no number is given and the note says why.  A run labelled ``not_converged`` by rule 8 has not
converged to a known structure, but GD has stopped there (the note says so, with its gradient norm): more
steps will not change its label.

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

import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.io import finite_or_none
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.convergence import convergence_note, steps_to_verdict
from deepcollapse.dufm.criteria import Criteria
from deepcollapse.dufm.kernel import numpy_gradients
from deepcollapse.dufm.points import as_runs, check_problem
from deepcollapse.dufm.results import DUFMRun, DUFMSummary, PolishResult
from deepcollapse.family import Family
from deepcollapse.metrics.functional import nc1_trace_ratio, nc2_cond, numerical_rank
from deepcollapse.theory.compare import Comparison
from deepcollapse.theory.constructions.gram import cosine_gram, gram_match, srg_gram
from deepcollapse.theory.objective import evaluate, forward
from deepcollapse.theory.problem import Problem

if TYPE_CHECKING:
    from deepcollapse.dufm.fit import DUFMFit

__all__ = [
    "CLASSIFICATIONS",
    "Criteria",
    "DUFMSummary",
    "classify",
    "convergence_note",
    "DNC2_TOL",
    "DNC_CONVERGING_COND",
    "DNC_CONVERGING_GAP",
    "GRAD_TOL",
    "GRAM_TOL",
    "PLATEAU_TOL",
    "ZERO_TOL",
    "DUFMRun",
    "PolishResult",
    "classify_run",
    "gram_match",
    "polish",
    "steps_to_verdict",
    "theory_of",
]

log = logging.getLogger(__name__)

_DEFAULT = Criteria()
# the thresholds by their names of earlier releases: Criteria()'s defaults (pass a Criteria to change them)
ZERO_TOL = _DEFAULT.zero_tol
GRAD_TOL = _DEFAULT.grad_tol
PLATEAU_TOL = _DEFAULT.plateau_tol
GRAM_TOL = _DEFAULT.gram_tol
DNC2_TOL = _DEFAULT.dnc2_tol
DNC_CONVERGING_COND = _DEFAULT.dnc_converging_cond
DNC_CONVERGING_GAP = _DEFAULT.dnc_converging_gap
#: Every label :func:`~deepcollapse.dufm.summary.analyze_dufm` gives a run, in the order the rules are tried
#: (module docstring).
CLASSIFICATIONS = ("diverged", "zero", "srg_like", "dnc", "dnc_converging", "not_converged", "low_rank")


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

    Parameters
    ----------
    H1 : numpy.ndarray, (d_1, K n)
        One run's features, samples ordered by class.
    weights : list of numpy.ndarray
        ``W_1 (d_2, d_1), ..., W_L (K, d_L)`` (``W_L`` is not used).
    K : int
        The number of classes.

    Returns
    -------
    list of numpy.ndarray
        ``M~_2 .. M~_L``, each ``(d_l, K)`` (empty for ``L = 1``).

    Examples
    --------
    >>> import numpy as np
    >>> H1 = np.array([[1.0, 1.0, -1.0, -1.0], [0.0, 0.0, 2.0, 2.0]])
    >>> [M.tolist() for M in collapsed_pre_means(H1, [np.eye(2), np.eye(2)], 2)]
    [[[1.0, -1.0], [0.0, 2.0]]]
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
) -> PolishResult | None:
    """Re-optimise weights and scales for the class-mean structure ``M~_2 .. M~_L`` (module docstring).

    Candidates: the learned pre-ReLU class means ``pre_means`` and (if given) the ``collapsed`` ones of
    :func:`collapsed_pre_means`.  For each, Nelder–Mead over ``log c_l`` minimises the explicit eq. (1)
    value of :func:`~deepcollapse.theory.layers.solution_from_class_means` of ``(c_2 M~_2, .., c_L M~_L)``;
    the lowest wins.

    Parameters
    ----------
    pre_means : list of ndarray
        The pre-ReLU class means ``M~_2 .. M~_L``, each ``(d_l, K)``.
    config : DUFMConfig
        The run's config (``n``, ``lam_h``, ``lam_w``, ``width[0]`` enter the explicit loss).
    collapsed : list of ndarray, optional
        The class means of the collapsed network (:func:`collapsed_pre_means`), a second candidate.

    Returns
    -------
    PolishResult or None
        The lowest value with its scales and source (``'learned'``, ``'collapsed'``; ``'zero'`` for all-zero
        class means, value ``0.5``); ``None`` for ``L < 2`` layers, or no or non-finite class means.

    Examples
    --------
    An orthogonal frame (the DNC structure) polishes to the optimal DNC loss:

    >>> import numpy as np
    >>> from deepcollapse.dufm import DUFMConfig
    >>> config = DUFMConfig(classes=3, n=2, layers=2, width=3, lam_h=0.01, lam_w=0.01)
    >>> result = polish([np.eye(3)], config)
    >>> result.source, round(result.polished_loss, 6), round(result.scales[0], 3)
    ('learned', 0.055973, 0.868)
    """
    from scipy.optimize import minimize

    from deepcollapse.theory.layers import solution_from_class_means

    if config.layers < 2 or not pre_means or not all(np.isfinite(M).all() for M in pre_means):
        return None
    if max(float(np.abs(M).max()) for M in pre_means) == 0.0:
        return PolishResult(polished_loss=0.5, scales=[0.0] * len(pre_means), source="zero")
    d1 = config.width[0]
    args = (config.n, config.lam_h, config.lam_w)

    def explicit(means: list[np.ndarray], logc: np.ndarray) -> float:
        try:
            sol = solution_from_class_means([M * math.exp(c) for M, c in zip(means, logc)], *args, d1=d1)
        except (ConfigError, np.linalg.LinAlgError):
            return math.inf
        return float(sol.loss)

    best: PolishResult | None = None
    best_value = math.inf
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
            if math.isfinite(v) and v < best_value:
                best, best_value = (
                    PolishResult(polished_loss=v, scales=[float(math.exp(c)) for c in x], source=name),
                    v,
                )
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
    theory: Mapping[str, Any],
    G_srg: np.ndarray | None,
    history: list[tuple[int, float | None]] | None = None,
    criteria: Criteria = _DEFAULT,
) -> DUFMRun:
    """The per-run entry of ``summary.json`` for one run ``(H1, weights)`` of ``config``: loss parts,
    gradient norm, ranks, DNC metrics, SRG Gram distance, the classification (module docstring) and the
    polish against ``theory`` (:func:`theory_of`).  Also used by the search for its solutions.

    The step under :func:`classify` (which takes every run of a fit or of a point at once and returns a
    :class:`~deepcollapse.dufm.results.DUFMSummary`, whose ``runs`` are these entries with ``run`` and
    ``seed`` in front).

    Parameters
    ----------
    H1 : ndarray, (d_1, N)
        The run's features, ``n`` samples per class in class order.
    weights : list of ndarray
        ``[W_1 (d_2, d_1), ..., W_L (K, d_L)]``.
    config : DUFMConfig
        The run's config (problem, family, ``rank_rtol``, ``polish``).
    diverged_step : int or None
        The step at which the trainer marked the run diverged (``None``: it did not).
    theory : Comparison or mapping
        :func:`theory_of` ``(config)``.
    G_srg : ndarray or None
        The SRG's cosine Gram matrix (:func:`~deepcollapse.theory.constructions.srg_gram`) where it is
        compared with, else ``None``.
    history : list of (int, float or None), optional
        ``(step, loss)`` of the run's log (the plateau test and :func:`steps_to_verdict`).
    criteria : Criteria, optional
        The thresholds (default ``Criteria()``).

    Returns
    -------
    DUFMRun
        The entry without ``run`` and ``seed`` (absent from its ``to_dict()``, which is the dict of earlier
        releases key for key): a diverged run holds the short set of keys (:class:`DUFMRun`), a run labelled
        ``not_converged`` also ``steps_to_verdict`` and ``convergence_note``.

    Examples
    --------
    The all-zero network is the ``zero`` solution (fit 1/2, no regularisation), and no polish beats it:

    >>> import numpy as np
    >>> from deepcollapse.dufm import DUFMConfig
    >>> config = DUFMConfig(classes=3, n=2, layers=2, width=3, lam_h=0.01, lam_w=0.01)
    >>> H1, weights = np.zeros((3, 6)), [np.zeros((3, 3)), np.zeros((3, 3))]
    >>> run = classify_run(H1, weights, config, None, theory_of(config), None)
    >>> run.classification, run.final_loss, run.reg, run.ranks, run.polish_source
    ('zero', 0.5, 0.0, [0, 0], 'run')
    """
    K, L = config.classes, config.layers
    c = criteria
    rtol = c.rank_tolerance(config.rank_rtol)
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
        return DUFMRun.from_dict(rec)
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
    ranks = [int(numerical_rank(M, rtol=rtol)) if np.abs(M).max() > 0 else 0 for M in posts]
    ranks_pre = [int(numerical_rank(M, rtol=rtol)) if np.abs(M).max() > 0 else 0 for M in pres]
    dnc1 = [_num(nc1_trace_ratio(X.T, y, K)) for X in feats]
    dnc2 = [_num(nc2_cond(M.T)) if np.abs(M).max() > 0 else None for M in posts]
    srg_dist = None
    if G_srg is not None and np.abs(posts[-1]).max() > 0:
        m = gram_match(_cosine_gram(posts[-1]), G_srg)
        srg_dist = m["distance"] if m["lower"] <= c.gram_tol else m["lower"]
    if fit >= theory["loss_zero"] - c.zero_tol and reg <= c.zero_tol:
        cls = "zero"
    elif srg_dist is not None and srg_dist <= c.gram_tol and L >= 3 and min(ranks[1:-1]) < K:
        cls = "srg_like"
    elif all(r == K for r in ranks[1:]) and dnc2[-1] is not None and dnc2[-1] <= 1.0 + c.dnc2_tol:
        cls = "dnc"
    elif (
        all(r == K for r in ranks[1:])
        and dnc2[-1] is not None
        and dnc2[-1] <= 1.0 + c.dnc_converging_cond
        and theory.get("loss_dnc") is not None
        and 0.0 <= loss / theory["loss_dnc"] - 1.0 <= c.dnc_converging_gap
    ):
        cls = "dnc_converging"
    elif grad_norm > c.grad_tol and not (plateau is not None and plateau <= c.plateau_tol):
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
    refit = None if pol is None else pol.polished_loss
    if refit is not None and loss <= refit:  # no collapsed re-fit beats the run's own point
        pol = PolishResult(polished_loss=loss, scales=None, source="run")
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
            "polished_loss": None if pol is None else pol.polished_loss,
            "polish_scales": None if pol is None else pol.scales,
            "polish_source": None if pol is None else pol.source,
            "polish_refit_loss": refit,
            "below_dnc": bool(theory["loss_dnc"] is not None and loss < theory["loss_dnc"]),
        }
    )
    if cls == "not_converged":
        rec["steps_to_verdict"], rec["convergence_note"] = convergence_note(
            rec, history, theory.get("loss_dnc"), c
        )
    return DUFMRun.from_dict(rec)  # the keys it holds, in order, are those of rec


def theory_of(config: DUFMConfig) -> Comparison:
    """The closed-form theory of the config's model, or ``loss_dnc = loss_srg = None`` with a note saying
    there is none (every family but MSE + ReLU with all λ > 0): never a silent comparison with MSE + ReLU.

    Parameters
    ----------
    config : DUFMConfig
        The trained model (its family, ``classes``, ``layers``, ``n`` and λ's).

    Returns
    -------
    Comparison
        :func:`~deepcollapse.theory.compare.compare` of the problem plus the keys ``closed_form`` (``True``)
        where a closed form exists; else only ``closed_form`` (``False``), ``note``, ``family``,
        ``loss_dnc = loss_srg = None`` and ``loss_zero``.  ``loss_zero`` (the fit of the all-zero network:
        1/2 for MSE, log K for cross-entropy) is always given.  ``to_dict()`` is ``summary.json``'s
        ``theory``.

    Examples
    --------
    >>> from deepcollapse.dufm.config import DUFMConfig
    >>> t = theory_of(DUFMConfig(classes=4, layers=3, n=5, lam_h=0.004, lam_w=[0.004] * 3))
    >>> t["closed_form"], t.loss_srg is None, round(t.loss_zero, 3)
    (True, True, 0.5)
    >>> theory_of(DUFMConfig(classes=4, layers=3, loss="ce"))["closed_form"]
    False
    """
    fam = config.family
    Y = fam.targets(config.classes, config.n)
    loss_zero = float(fam.loss.value(np.zeros_like(Y), Y))
    if fam.has_closed_form and config.lam_h > 0 and min(config.lam_w) > 0:
        from deepcollapse.theory.compare import compare

        c = compare(config.classes, config.layers, config.n, config.lam_h, config.lam_w)
        return Comparison.from_dict({**c.to_dict(), "closed_form": True})
    why = f"model {fam.name}" if not fam.has_closed_form else "lam = 0 (unregularised)"
    return Comparison.from_dict(
        {
            "closed_form": False,
            "note": f"no closed form for {why}: L_DNC, L_SRG and the polish are not computed",
            "family": fam.name,
            "loss_dnc": None,
            "loss_srg": None,
            "loss_zero": loss_zero,
        }
    )


# ------------------------------------------------------------------------------------------------------------
# every run at once: parameters in memory -> DUFMSummary
# ------------------------------------------------------------------------------------------------------------
def _config_for(problem: Problem, params: Sequence[np.ndarray], step: int) -> DUFMConfig:
    """The :class:`DUFMConfig` of ``problem`` with the widths of ``params`` (``runs`` of them, ``steps =
    step``): what the classification reads (the family, ``K``, ``n``, the λs, ``rank_rtol``, ``polish``)."""
    d = [int(params[0].shape[1])] + [int(W.shape[1]) for W in params[1:-1]]  # d_1 (H1), d_2 .. d_L (rows)
    return DUFMConfig(
        classes=problem.classes,
        n=problem.n,
        layers=problem.layers,
        width=d,
        lam_h=problem.lam_h,
        lam_w=list(problem.lam_w),
        loss=problem.loss,
        activation=problem.activation,
        eps=problem.eps,
        runs=int(params[0].shape[0]),
        steps=step,
        log_every=max(step, 1),
        checkpoint_every=max(step, 1),
    )


def classify(
    params: DUFMFit | str | Path | Sequence[Any],
    problem: Problem | DUFMConfig | None = None,
    criteria: Criteria = _DEFAULT,
    *,
    diverged: Mapping[int, int] | None = None,
    history: Mapping[int, Sequence[tuple[int, float | None]]] | None = None,
    step: int | None = None,
) -> DUFMSummary:
    """Classify every run of a fit held in memory (``dnc``, ``srg_like``, ``low_rank``, ...; module
    docstring) and compare it with the theory.

    Parameters
    ----------
    params : DUFMFit, str, Path or sequence of array
        A :class:`~deepcollapse.dufm.fit.DUFMFit` or a DUFM run folder (read alike by
        :func:`~deepcollapse.dufm.points.as_runs`: its config, divergence steps, loss history and step are
        used), or ``[H1, W_1 .. W_L]`` with a leading run axis (``H1`` of shape ``(R, d_1, K n)``) or of
        one run (``H1`` of shape ``(d_1, K n)``); numpy arrays or CPU tensors, computed in float64.
    problem : Problem or DUFMConfig, optional
        The instance of eq. (1) the parameters solve.  Default: the fit's config (required for arrays).
        With a :class:`~deepcollapse.theory.problem.Problem`, the widths are read off the arrays and the
        config's other fields (``rank_rtol``, ``polish``, seeds) take their defaults; a config of another
        number of runs than the arrays hold is used with theirs (seeds ``seed + r``).
    criteria : Criteria
        The thresholds of the rules (default ``Criteria()``, those of ``summary.json`` files).
    diverged : mapping of int to int, optional
        ``{run: step}`` of runs the trainer marked diverged (default: the fit's, else none).
    history : mapping of int to list of (step, loss), optional
        Each run's logged losses, for the plateau rule and ``steps_to_verdict`` (default: the fit's; without
        one the plateau rule is not applied).
    step : int, optional
        The step the parameters are at (default: the fit's; else the last step of ``history``, else 0).

    Returns
    -------
    DUFMSummary
        As :func:`~deepcollapse.dufm.summary.analyze_dufm` returns for a run folder of the same runs (and
        writes to ``summary.json``): ``loss_dnc``, ``loss_srg``, ``classifications``, ``runs`` (one
        :class:`~deepcollapse.dufm.results.DUFMRun` each), ``criteria``, ``theory``, ``config``.

    Raises
    ------
    ConfigError
        ``params`` do not have the shapes of ``problem``, or no problem is given for arrays.

    Examples
    --------
    >>> import deepcollapse as dc
    >>> config = dc.DUFMConfig(classes=3, n=2, layers=2, width=6, lam_h=0.02, lam_w=0.02, steps=2000, runs=4)
    >>> summary = dc.classify(dc.fit_dufm(config))
    >>> [run.classification for run in summary.runs]
    ['dnc', 'low_rank', 'not_converged', 'not_converged']
    >>> [run.ranks for run in summary.runs]  # of the class means M_1, M_2
    [[3, 3], [2, 2], [3, 3], [3, 3]]
    >>> cond = summary.runs[2].dnc2_cond[-1]  # M_2's σ_1/σ_K: a full-rank point, not an orthogonal frame
    >>> bool(1 + dc.Criteria().dnc2_tol < cond < 1.5)
    True
    >>> lenient = dc.classify(dc.fit_dufm(config), criteria=dc.Criteria(dnc2_tol=0.5))  # DNC: σ_1/σ_K <= 1.5
    >>> [run.classification for run in lenient.runs]
    ['dnc', 'low_rank', 'dnc', 'dnc']
    """
    config: DUFMConfig | None = None
    runs = as_runs(params)
    if runs is not None:
        config = problem if isinstance(problem, DUFMConfig) else runs.config
        check_problem(problem if isinstance(problem, Problem) else None, runs)
        arrays: list[Any] = list(runs.params)
        diverged = runs.diverged if diverged is None else diverged
        history = runs.histories if history is None else history
        step = runs.step if step is None else step
    elif problem is None:
        raise ConfigError(
            "problem: required with arrays (a Problem, or the DUFMConfig they were trained with)."
        )
    else:
        arrays = list(params)  # type: ignore[arg-type]  # (not a DUFMFit: a sequence of arrays)
    try:
        P = [np.asarray(p, dtype=np.float64) for p in arrays]
    except (TypeError, ValueError, RuntimeError) as e:
        raise ConfigError(f"params: must be a DUFMFit or arrays [H1, W_1 .. W_L] ({e}).") from None
    if P and P[0].ndim == 2:  # one run
        P = [p[None] for p in P]
    if step is None:
        step = max((int(s) for h in (history or {}).values() for s, _ in h), default=0)
    if config is None and isinstance(problem, DUFMConfig):
        config = problem
        if P and config.runs != len(P[0]):  # e.g. one run of the config's: its seeds are not known
            config = DUFMConfig.from_dict({**config.to_dict(), "runs": len(P[0]), "seeds": None})
    elif config is None:
        config = _config_for(problem, P, step)  # type: ignore[arg-type]
    shapes = [(config.runs, *s) for s in config.shapes]
    if [p.shape for p in P] != shapes:
        raise ConfigError(
            f"params: shapes {[p.shape for p in P]}, must be {shapes} (H1, W_1 .. W_L of "
            f"{config.runs} runs of the problem)."
        )
    return _summary(config, P, dict(diverged or {}), dict(history or {}), int(step), criteria)


def _summary(
    config: DUFMConfig,
    params: list[np.ndarray],
    diverged: dict[int, int],
    histories: dict[int, Sequence[tuple[int, float | None]]],
    step: int,
    criteria: Criteria,
) -> DUFMSummary:
    theory = theory_of(config)
    G_srg = srg_gram(config.classes) if config.classes >= 6 and theory.get("loss_srg") is not None else None
    runs = []
    for r, seed in enumerate(config.run_seeds):
        h = histories.get(r)
        entry = classify_run(
            params[0][r],
            [W[r] for W in params[1:]],
            config,
            diverged.get(r),
            theory,
            G_srg,
            None if h is None else list(h),
            criteria,
        )
        runs.append({"run": r, "seed": seed, **entry})
    losses = [r["final_loss"] for r in runs if r["final_loss"] is not None]
    counts: dict[str, int] = {}
    for run in runs:
        counts[run["classification"]] = counts.get(run["classification"], 0) + 1
    summary: dict[str, Any] = {
        "loss_dnc": theory["loss_dnc"],
        "loss_srg": theory["loss_srg"],
        "loss_zero": theory["loss_zero"],
        "step": step,
        "finished": step == config.steps,
        "best_loss": min(losses) if losses else None,
        "n_below_dnc": sum(bool(r["below_dnc"]) for r in runs),
        "classifications": counts,
        "criteria": criteria.to_dict(config.rank_rtol),
        "theory": theory.to_dict(),
        "config": config.to_dict(),
        "runs": runs,
    }
    summary = json.loads(json.dumps(summary, default=_json_default))  # numpy scalars -> JSON numbers
    return DUFMSummary.from_dict(finite_or_none(summary))


def _json_default(x: Any) -> Any:
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")
