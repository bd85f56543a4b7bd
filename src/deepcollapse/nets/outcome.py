"""The outcome of a network run, read off the class means of its head: ``classify_head(means)``.

The networks' counterpart of the DUFM's :mod:`deepcollapse.dufm.classify`: where did training land -- at DNC,
at a low-rank or SRG-like head, at the all-zero (constant) solution, or nowhere yet?  It reads only the class
means of every head feature (``H1``, ``H~2``, ``H2``, ..., ``H~L``, ``HL``: :func:`~deepcollapse.nets.head.
feature_layers`), the training accuracy and the per-epoch training loss, so it runs in memory on any source of
class means (a notebook, :func:`~deepcollapse.nets.evaluate.evaluate` after every evaluation, the map's
cells).  Numpy and float64 throughout; no torch.

Measures (``M`` is a layer's class-mean matrix ``(d, K)``, columns = classes, as in the papers):

- **σ_2/σ_1** of each layer (``sigma2_ratios``; 0 for a zero or rank-1 layer): how far the class means are
  from one common direction.  A non-negative (post-ReLU) ``M`` of rank 1 is ``u v^T`` with ``u, v >= 0``:
  every class mean is a non-negative multiple of one vector, so is every output class mean ``W_L M_L e_c``,
  and the MSE fit is at least that of the best constant output, ``(K−1)/(2K)`` -- the network form of the
  all-zero solution, whose head no longer depends on the class beyond a scale.
- **output spread** ``‖O − ō 1_K^T‖_F / ‖I_K − J_K/K‖_F = ‖O − ō 1_K^T‖_F / √(K−1)`` of the output's class
  means ``O = W_L M_L`` (``(K, K)``, when given; ``ō = O 1_K / K``): the share of the targets' class-dependent
  part ``I_K − J_K/K`` that the output's class means carry, in the targets' own units (1 for ``O = I``, ``α``
  for ``O = α I``, 0 for a constant or zero output).  It is absolute, so it also sees the DUFM's zero point,
  where every layer shrinks to 0 while its relative structure (``σ_2/σ_1``) can stay ~1e-3.
- **ranks** at two stated tolerances: singular values ``σ_i > rank_tolerance(σ_1, shape, dtype, rtol)``
  (:func:`deepcollapse._core.checks.rank_tolerance`: ``rtol · σ_1``, or ``max(shape) · eps(dtype) · σ_1`` for
  ``rtol = None`` with the features' dtype, float32), ``ranks`` at :attr:`HeadCriteria.rank_rtol` (decides)
  and ``ranks_coarse`` at :attr:`HeadCriteria.rank_rtol_coarse` (reported).
- **bottleneck**: the layer of the smallest rank (ties: the one with the largest gap), its rank ``r`` and the
  **singular-value gap** ``σ_r / σ_{r+1}`` there (how sharp the cut is; ``None`` at full rank).
- **dnc_cond**: ``σ_1 / σ_K`` of ``M_L`` (the post-ReLU features ``W_L`` reads; ``H1`` for ``L = 1``): 1
  exactly for an orthogonal frame with equal norms, the bias-free DNC2 of the 2024 paper (formulas.md).
- **Gram distances** of ``C``, the cosine Gram matrix (unit diagonal) of ``M~_L`` (the pre-ReLU last head
  layer, the matrix of the 2024 paper's Fig. 4 bottom right; ``H1`` for ``L = 1``): ``gram_distance_dnc = ‖C
  − I_K‖_F / ‖I_K‖_F`` and ``gram_distance_srg = min_P ‖C − P C_SRG P^T‖_F / ‖C_SRG‖_F`` over permutations
  ``P`` of the classes (quadratic assignment, :func:`~deepcollapse.theory.constructions.gram.gram_match`; the
  best permutation found, an upper bound of the minimum), ``C_SRG`` the SRG's ``M~_L``
  (:func:`~deepcollapse.theory.constructions.gram.srg_pre_gram`, Definition 9).  Both relative to the
  reference's norm: 0 at the reference; the SRG and DNC Grams are 0.73 apart (``K = 10``).

The SRG construction exists for ``K = C(r, 2)`` with ``r >= 4`` (6, 10, 15, 21, ...) and ``L >= 2``; for any
other ``K`` (or ``L = 1``) ``srg_like`` is not defined: ``gram_distance_srg`` is ``None``, ``srg_note`` says
why, and the other labels are used (no error).

Labels (:data:`OUTCOMES`), the first rule that applies wins:

1. ``diverged`` -- the run stopped on a non-finite loss, or a class mean is not finite.
2. ``zero`` -- the output is the zero solution: the output norm ``‖O‖_F / ‖I_K‖_F = ‖O‖_F / √K`` (the
   output's class means in the targets' units; 1 for ``O = I``) is at most :attr:`HeadCriteria.zero_output`:
   the DUFM's all-zero point, where every layer shrinks to 0, and torch's ``MSELoss`` head under heavy weight
   decay.
3. ``constant`` -- the output no longer depends on the class but is not zero: the output spread is at most
   :attr:`HeadCriteria.zero_output` (an input-independent output ``ō 1^T``; the ``½ Σ_k`` MSE head under
   wd 0.04 on every parameter ends at ``‖ō‖ ≈ 0.2``), or some post-ReLU head layer ``H_2 .. H_L`` (``H1``
   for ``L = 1``) has collapsed to one direction, ``σ_2/σ_1 <=`` :attr:`HeadCriteria.zero_rtol` (one vector
   up to a per-class scale; rank 1 in the later layers).  Either way the fit is no better than the best
   constant output's, ``(K−1)/(2K)`` (for a rank-1 ``O``: Eckart–Young, ``‖O − I_K‖_F² >= K − 1``), and the
   accuracy is chance.  Pre-ReLU layers do not count: a rank-1 ``M~_l = u v^T`` with ``v`` of both signs
   becomes rank 2 after the ReLU.  ``zero`` and ``constant`` come before ``not_converged``: end states whose
   accuracy is chance by construction.  Without the outputs (``outputs=None``) the norm is unknown and a
   collapsed layer reads ``constant``.
4. ``not_converged`` -- training accuracy below :attr:`HeadCriteria.min_train_acc`, or the training loss still
   fell by more than :attr:`HeadCriteria.plateau_tol` (relative) over the last
   :attr:`HeadCriteria.plateau_window` of the epochs.  At the end of a run of ``until: converged`` its
   stated criterion decides instead (:mod:`deepcollapse.nets.convergence`): ``not_converged`` when it did not
   hold before ``max_epochs``; when it held, the structural labels follow whatever the training accuracy
   (stated in ``why`` when below :attr:`HeadCriteria.min_train_acc`).  Before the structural labels: the
   structure of a network that is still moving is not where training ends.
5. ``srg_like`` -- ``gram_distance_srg <=`` :attr:`HeadCriteria.srg_gram_tol`.  Before ``low_rank``: an
   SRG-like head is low-rank (``C_SRG`` has rank ``r``) and the more specific label wins; no separate rank
   test (a match already implies a nearly rank-``r`` ``M~_L``).
6. ``dnc`` -- every layer has rank ``K`` and ``dnc_cond <= 1 +`` :attr:`HeadCriteria.dnc_cond_tol`.
7. ``low_rank`` -- some layer's rank is below ``K`` (the bottleneck; its tolerance and gap are stated).
8. ``full_rank`` -- rank ``K`` everywhere but ``M_L`` is not an orthogonal frame within the tolerance: a
   converged head that is neither DNC nor low-rank (the DUFM folds this case into ``not_converged``).

:func:`classify_head` decides from the means; :func:`finalise_outcome` decides again at the end of a run from
the measures an evaluation stored, adding what only the loop knows (divergence, the per-epoch losses):
``nets.summary`` uses it for ``summary.json["outcome"]``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from deepcollapse._core.checks import ConfigError, check_float, rank_tolerance
from deepcollapse._core.config import ConfigMixin
from deepcollapse._core.results import Result
from deepcollapse.theory.constructions.gram import cosine_gram, gram_match, srg_pre_gram
from deepcollapse.theory.graphs import r_from_classes

__all__ = [
    "OUTCOMES",
    "HeadCriteria",
    "HeadOutcome",
    "classify_head",
    "finalise_outcome",
    "gram_distances",
    "loss_decrease",
]

#: Every label, in the order the rules are tried (module docstring).
OUTCOMES = ("diverged", "zero", "constant", "not_converged", "srg_like", "dnc", "low_rank", "full_rank")

_QAP_STARTS = 16  # quadratic-assignment starts of the SRG match (K = 10: ~30 ms)


@dataclass(frozen=True)
class HeadCriteria(ConfigMixin):
    """The thresholds of :func:`classify_head`, each with its reason (stored with every outcome).

    Attributes
    ----------
    zero_rtol : float, default 1e-3
        ``constant`` when some post-ReLU head layer has ``σ_2 <= zero_rtol · σ_1``: rank 1 at the papers' rank
        threshold.  The constant runs of the issue's Fig. 4 cell (ResNet8, mnist_5k, wd 0.04, lr 0.01) reach
        ``σ_2/σ_1 < 1e-4`` in ``H_4, H_5`` by epoch 35 while their class means still differ in scale by ~2 %
        (so "equal class means" would miss them); fitting heads keep ``σ_2/σ_1 >= 0.1`` (``K = 10``).
    zero_output : float, default 0.01
        ``constant`` when the output's class means carry at most 1 % of the targets' class-dependent part
        (output spread), ``zero`` when their norm is at most 1 % of the targets' (output norm); a fitting MSE
        head carries ``~0.9`` (its weight decay shrinks ``O`` below ``I``).
    min_train_acc : float, default 0.99
        ``not_converged`` below this training accuracy: the papers' networks interpolate their training sets
        (accuracy 1.0); 0.99 leaves room for a few mislabelled-looking MNIST digits.
    plateau_tol : float, default 0.05
        ``not_converged`` when the mean training loss of the last epoch is more than 5 % below that of the
        epoch ``plateau_window`` of the run earlier: still falling.  Minibatch noise moves the epoch means by
        ~1 % at the small final learning rates of a multistep schedule.
    plateau_window : float, default 0.1
        The fraction of the epochs the plateau test looks back (the DUFM's: the last 10 % of the steps).
    srg_gram_tol : float, default 0.2
        ``srg_like`` at a relative Frobenius distance to the SRG Gram of at most this: well inside the 0.73
        between the SRG's and DNC's Grams (``K = 10``; 0.82 for ``K = 6``) and below the ~0.5-0.8 of random
        Gram matrices after the permutation search.
    dnc_cond_tol : float, default 0.1
        ``dnc`` when ``σ_1 / σ_K(M_L) <= 1.1``: twice the DUFM's 0.05 (minibatch noise on the class means).
    rank_rtol : float or None, default 1e-3
        The rank that decides ``low_rank`` / ``dnc``: singular values below ``rank_rtol · σ_1`` count as zero
        (the papers' "numerically low rank"; ``NetConfig.rank_rtol``).  ``None``: the machine-epsilon rule of
        :func:`~deepcollapse._core.checks.rank_tolerance` for ``dtype``.
    rank_rtol_coarse : float or None, default 1e-2
        The second, reported tolerance (``ranks_coarse``): the rank that ignores the SGD-noise tail.
    dtype : str, default "float32"
        The dtype the features were computed in (the machine-epsilon rule's ``eps``).
    """

    zero_rtol: float = 1e-3
    zero_output: float = 1e-2
    min_train_acc: float = 0.99
    plateau_tol: float = 0.05
    plateau_window: float = 0.1
    srg_gram_tol: float = 0.2
    dnc_cond_tol: float = 0.1
    rank_rtol: float | None = 1e-3
    rank_rtol_coarse: float | None = 1e-2
    dtype: str = "float32"

    def __post_init__(self) -> None:
        for name in ("zero_rtol", "zero_output", "plateau_window", "srg_gram_tol"):
            object.__setattr__(self, name, check_float(name, getattr(self, name), gt=0.0, lt=1.0))
        object.__setattr__(
            self, "min_train_acc", check_float("min_train_acc", self.min_train_acc, ge=0.0, le=1.0)
        )
        for name in ("plateau_tol", "dnc_cond_tol"):
            object.__setattr__(self, name, check_float(name, getattr(self, name), gt=0.0))
        for name in ("rank_rtol", "rank_rtol_coarse"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, check_float(name, v, gt=0.0, lt=1.0))
        if self.dtype not in ("float16", "bfloat16", "float32", "float64"):
            raise ConfigError(f"dtype == {self.dtype!r}, must be float16, bfloat16, float32 or float64.")


@dataclass(frozen=True, eq=False)
class HeadOutcome(Result):
    """Where a network run landed (module docstring): the label, why, and the measures it was decided from.

    A ``diverged`` outcome holds only ``label``, ``why``, ``classes``, ``layers`` and ``criteria`` (the other
    fields ``None``): the last finite evaluation's measures describe an earlier network.

    Attributes
    ----------
    label : str
        One of :data:`OUTCOMES`.
    why : str
        The rule that decided, with its numbers.
    classes : int
        ``K``.
    layers : int
        ``L``, the head's weight matrices.
    ranks : dict of str to int
        Rank of each layer's class means (paper names ``H1``, ``H~2``, ``H2``, ...) at ``criteria.rank_rtol``.
    ranks_coarse : dict of str to int
        The same at ``criteria.rank_rtol_coarse``.
    sigma2_ratios : dict of str to float
        ``σ_2 / σ_1`` of each layer's class means (0 for a zero or rank-1 layer).
    output_spread : float or None
        ``‖O − ō 1^T‖_F / √(K−1)`` of the output's class means (``None`` when they were not given).
    output_norm : float or None
        ``‖O‖_F / √K``: the output's class means in the targets' units (``None`` when not given).
    bottleneck : str
        The layer of the smallest rank (ties: the largest gap).
    bottleneck_rank : int
        Its rank ``r`` at ``criteria.rank_rtol``.
    sv_gap : float or None
        ``σ_r / σ_{r+1}`` there (``None`` at full rank or ``r = 0``; ``inf`` for an exact zero).
    dnc_cond : float or None
        ``σ_1 / σ_K`` of ``M_L`` (``None`` when ``σ_K = 0`` or the layer is narrower than ``K``).
    gram_layer : str
        The layer the Gram distances are measured on (``H~L``; ``H1`` for ``L = 1``).
    gram_distance_dnc : float
        ``‖C − I‖_F / ‖I‖_F``.
    gram_distance_srg : float or None
        ``min_P ‖C − P C_SRG P^T‖_F / ‖C_SRG‖_F`` (``None`` where the SRG is not defined).
    srg_r : int or None
        ``r`` with ``K = C(r, 2)`` where the SRG is defined.
    srg_note : str or None
        Why ``srg_like`` is not defined for this head (``None`` where it is).
    train_acc : float or None
        The training accuracy the decision used.
    loss_decrease : float or None
        Relative decrease of the training loss over the last ``plateau_window`` of the epochs
        (:func:`loss_decrease`); ``None`` where not known (mid-run, or fewer epochs than the window needs).
    criteria : dict
        The :class:`HeadCriteria` used.
    """

    label: str | None = None
    why: str | None = None
    classes: int | None = None
    layers: int | None = None
    ranks: dict[str, int] | None = None
    ranks_coarse: dict[str, int] | None = None
    sigma2_ratios: dict[str, float] | None = None
    output_spread: float | None = None
    output_norm: float | None = None
    bottleneck: str | None = None
    bottleneck_rank: int | None = None
    sv_gap: float | None = None
    dnc_cond: float | None = None
    gram_layer: str | None = None
    gram_distance_dnc: float | None = None
    gram_distance_srg: float | None = None
    srg_r: int | None = None
    srg_note: str | None = None
    train_acc: float | None = None
    loss_decrease: float | None = None
    criteria: dict[str, Any] | None = field(default=None)


def _layer_names(L: int) -> list[str]:
    return ["H1"] + [name for l in range(2, L + 1) for name in (f"H~{l}", f"H{l}")]


def _check_means(means: Mapping[str, ArrayLike]) -> tuple[dict[str, np.ndarray], int, int]:
    """The class-mean matrices as ``(d, K)`` float64 (columns = classes), ``K`` and ``L``; layout checked."""
    names = list(means)
    L = (len(names) + 1) // 2
    if not names or names != _layer_names(L):
        raise ConfigError(
            f"means == {names}, must be the head's features in order: H1, H~2, H2, ..., H~L, HL "
            "(deepcollapse.nets.head.feature_layers)."
        )
    out = {name: np.asarray(value, dtype=np.float64) for name, value in means.items()}
    K = out["H1"].shape[0] if out["H1"].ndim == 2 else 0
    for name, A in out.items():
        if A.ndim != 2 or A.shape[0] != K or K < 2:
            raise ConfigError(
                f"means[{name!r}].shape == {A.shape}, must be (K, d) with one row per class, K >= 2 and the "
                "same K in every layer."
            )
    return {name: A.T for name, A in out.items()}, K, L  # (d, K): columns = classes


def _sigma2_ratio(s: np.ndarray) -> float:
    return 0.0 if s.size < 2 or s[0] == 0.0 else float(s[1] / s[0])


def _rank(s: np.ndarray, shape: tuple[int, int], rtol: float | None, dtype: str) -> int:
    if s.size == 0 or s[0] == 0.0:
        return 0
    return int(np.sum(s > rank_tolerance(s[0], shape, dtype, rtol)))


def _num(x: float) -> str:
    return f"{x:.4g}"


def loss_decrease(train_loss_per_epoch: Sequence[float | None], window: float = 0.1) -> float | None:
    """Relative decrease of the training loss over the last ``window`` of the epochs.

    ``(ℓ_{e0} − ℓ_T) / |ℓ_{e0}|`` with ``ℓ_e`` the mean training loss of epoch ``e`` (1-based), ``T`` the last
    epoch and ``e0 = floor((1 − window) · T)``; ``None`` when ``e0 < 1`` or a value is missing or not finite.

    Parameters
    ----------
    train_loss_per_epoch : sequence of float
        ``ℓ_1 .. ℓ_T`` (``summary.json["train_loss_per_epoch"]``).
    window : float, default 0.1
        The fraction of the epochs looked back.

    Returns
    -------
    float or None
        Positive while the loss is still falling.

    Examples
    --------
    >>> round(loss_decrease([1.0, 0.5, 0.4, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.2]), 12)
    0.333333333333
    """
    T = len(train_loss_per_epoch)
    e0 = math.floor((1.0 - window) * T)
    if e0 < 1:
        return None
    a, b = train_loss_per_epoch[e0 - 1], train_loss_per_epoch[T - 1]
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)) or a == 0.0:
        return None
    return (float(a) - float(b)) / abs(float(a))


def gram_distances(gram: ArrayLike, *, srg: bool = True) -> tuple[float, float | None]:
    """The Gram distances of the module docstring, the one definition every report uses: of the cosine Gram
    ``C`` of ``gram`` (``M^T M`` of a layer's class means, any positive scale) to DNC's and to the SRG's
    pre-ReLU Gram, each relative to the reference's norm.

    Parameters
    ----------
    gram : array_like, (K, K)
        The class means' Gram matrix ``M^T M`` (e.g. the max-normalised ``gram`` of ``metrics.jsonl``).
    srg : bool, default True
        Measure the SRG distance (``False``: ``None``, e.g. a head of one layer).

    Returns
    -------
    tuple of (float, float or None)
        ``(‖C − I_K‖_F / ‖I_K‖_F, min_P ‖C − P C_SRG P^T‖_F / ‖C_SRG‖_F)`` over class permutations ``P``
        (the best found by the quadratic-assignment search); the second is ``None`` where the SRG is not
        defined (``K ≠ C(r, 2)`` with ``r >= 4``).

    Examples
    --------
    The SRG's own Gram, scaled and its classes shuffled, is at distance 0 from the SRG's (1.06 from DNC's):

    >>> import numpy as np
    >>> from deepcollapse.theory.constructions.gram import srg_pre_gram
    >>> P = np.eye(10)[np.random.default_rng(0).permutation(10)]
    >>> d_dnc, d_srg = gram_distances(3.0 * P @ srg_pre_gram(10) @ P.T)
    >>> round(d_dnc, 2), round(d_srg, 12)
    (1.06, 0.0)
    """
    G = np.asarray(gram, dtype=np.float64)
    K = G.shape[0]
    C = cosine_gram(G)
    d_dnc = float(np.linalg.norm(C - np.eye(K)) / math.sqrt(K))
    r = r_from_classes(K)
    if not srg or r is None or r < 4:
        return d_dnc, None
    match = gram_match(C, srg_pre_gram(K), starts=_QAP_STARTS, metric="fro")
    if match.distance is None:  # pragma: no cover - the Frobenius match always returns a distance
        raise RuntimeError("gram_match returned no distance")
    return d_dnc, float(match.distance)


def _decide(m: Mapping[str, Any], criteria: HeadCriteria, convergence: Any = None) -> tuple[str, str]:
    """The label and why from the measures ``m`` (the fields of :class:`HeadOutcome`), rules in order; a
    run's :class:`~deepcollapse.nets.convergence.Convergence` (``until: converged``) replaces the accuracy and
    plateau tests of ``not_converged``."""
    spread, norm = m.get("output_spread"), m.get("output_norm")
    if norm is not None and norm <= criteria.zero_output:
        return "zero", (
            f"the output's class means have norm {_num(norm)} <= {criteria.zero_output:g} of the targets' "
            "(‖O‖_F/√K: the zero solution)"
        )
    norm_text = "" if norm is None else f"; output norm ‖O‖_F/√K = {_num(norm)} > 0"
    if spread is not None and spread <= criteria.zero_output:
        return "constant", (
            f"the output's class means carry {_num(spread)} <= {criteria.zero_output:g} of the targets' "
            f"class-dependent part (an input-independent output{norm_text})"
        )
    post = [f"H{l}" for l in range(2, m["layers"] + 1)] or ["H1"]
    dead = [n for n in post if m["ranks"][n] == 0]
    if dead:
        return "zero", f"the class means of {dead[0]} are all zero (so is the bias-free head's output)"
    layer = min(post, key=lambda n: m["sigma2_ratios"][n])
    ratio = m["sigma2_ratios"][layer]
    if ratio <= criteria.zero_rtol:
        return "constant", (
            f"the class means of {layer} collapsed to one direction: σ_2/σ_1 = {_num(ratio)} <= "
            f"{criteria.zero_rtol:g} (the output is one vector up to a per-class scale{norm_text})"
        )
    acc, dec = m.get("train_acc"), m.get("loss_decrease")
    if convergence is not None and not convergence.converged:
        why = f"stopped at max_epochs == {convergence.epoch} before converging: {convergence.why}"
        return "not_converged", why
    if convergence is None and acc is not None and acc < criteria.min_train_acc:
        return "not_converged", f"training accuracy {_num(acc)} < {criteria.min_train_acc:g}"
    if convergence is None and dec is not None and dec > criteria.plateau_tol:
        return "not_converged", (
            f"the training loss still fell by {_num(100 * dec)} % > {100 * criteria.plateau_tol:g} % "
            "over the "
            f"last {100 * criteria.plateau_window:g} % of the epochs"
        )
    label, why = _structure(m, criteria)
    if convergence is not None and acc is not None and acc < criteria.min_train_acc:
        why += (
            f"; converged at training accuracy {_num(acc)} < {criteria.min_train_acc:g}: a stationary "
            "point that does not fit every training sample"
        )
    return label, why


def _structure(m: Mapping[str, Any], criteria: HeadCriteria) -> tuple[str, str]:
    """The structural rules (``srg_like``, ``dnc``, ``low_rank``, ``full_rank``) of a fitted head."""
    K = m["classes"]
    tol = "machine-epsilon rule" if criteria.rank_rtol is None else f"{criteria.rank_rtol:g}·σ_1"
    d_srg = m.get("gram_distance_srg")
    if d_srg is not None and d_srg <= criteria.srg_gram_tol:
        return "srg_like", (
            f"the cosine Gram of {m['gram_layer']} is at relative distance {_num(d_srg)} <= "
            f"{criteria.srg_gram_tol:g} from the SRG's (K = {K} = C({m['srg_r']}, 2), best class "
            "permutation); "
            f"bottleneck rank({m['bottleneck']}) = {m['bottleneck_rank']} at {tol}"
        )
    cond = m.get("dnc_cond")
    full = m["bottleneck_rank"] >= K
    if full and cond is not None and cond <= 1.0 + criteria.dnc_cond_tol:
        return "dnc", (
            f"rank {K} in every layer at {tol} and σ_1/σ_K(H{m['layers']}) = {_num(cond)} <= "
            f"{1.0 + criteria.dnc_cond_tol:g} (orthogonal frame)"
        )
    if not full:
        gap = m.get("sv_gap")
        gap_text = "" if gap is None else f", singular-value gap σ_r/σ_(r+1) = {_num(gap)}"
        return "low_rank", (f"rank({m['bottleneck']}) = {m['bottleneck_rank']} < K = {K} at {tol}{gap_text}")
    return "full_rank", (
        f"rank {K} in every layer at {tol} but σ_1/σ_K(H{m['layers']}) = "
        f"{'inf' if cond is None else _num(cond)} > {1.0 + criteria.dnc_cond_tol:g}: not an orthogonal frame"
    )


def _diverged(K: int, L: int, why: str, criteria: HeadCriteria) -> HeadOutcome:
    return HeadOutcome.from_dict(
        {"label": "diverged", "why": why, "classes": K, "layers": L, "criteria": criteria.to_dict()}
    )


def classify_head(
    means: Mapping[str, ArrayLike],
    *,
    outputs: ArrayLike | None = None,
    train_acc: float | None = None,
    train_loss_per_epoch: Sequence[float | None] | None = None,
    diverged: bool = False,
    criteria: HeadCriteria | None = None,
) -> HeadOutcome:
    """Label a network run from the class means of its head (module docstring: measures, rules, order).

    Parameters
    ----------
    means : mapping of str to array_like
        The class means of every head feature, one row per class ``(K, d)``, keyed by the paper names in the
        order of :func:`~deepcollapse.nets.head.feature_layers`: ``H1, H~2, H2, ..., H~L, HL`` (``H1`` alone
        for ``L = 1``).
    outputs : array_like, (K, K), optional
        The class means of the network's output, one row per class (``M_L^T W_L^T``): the output spread.
    train_acc : float, optional
        Training accuracy (the ``not_converged`` test is skipped without it).
    train_loss_per_epoch : sequence of float, optional
        Mean training loss of each epoch (the plateau test, :func:`loss_decrease`).
    diverged : bool, default False
        The run stopped on a non-finite loss.
    criteria : HeadCriteria, optional
        The thresholds (default :class:`HeadCriteria`).

    Returns
    -------
    HeadOutcome
        The label, why, and the measures.

    Examples
    --------
    An orthogonal frame in every layer of a 2-layer head (``K = 3``) is DNC:

    >>> import numpy as np
    >>> frame = np.eye(3)  # (K, d): row c is the class mean of class c
    >>> out = classify_head({"H1": frame, "H~2": 2 * frame, "H2": 2 * frame}, train_acc=1.0)
    >>> out.label, out.ranks["H2"], round(out.dnc_cond, 6)
    ('dnc', 3, 1.0)
    """
    criteria = HeadCriteria() if criteria is None else criteria
    M, K, L = _check_means(means)
    if diverged:
        return _diverged(K, L, "the training loss became non-finite", criteria)
    O = None if outputs is None else np.asarray(outputs, dtype=np.float64).T  # (K outputs, K classes)
    if O is not None and O.shape != (K, K):
        raise ConfigError(f"outputs.shape == {O.T.shape}, must be (K, K) = ({K}, {K}): one row per class.")
    bad = [name for name, A in M.items() if not np.isfinite(A).all()]
    bad += ["the output"] if O is not None and not np.isfinite(O).all() else []
    if bad:
        return _diverged(K, L, f"the class means of {', '.join(bad)} are not finite", criteria)
    spread = (
        None if O is None else float(np.linalg.norm(O - O.mean(axis=1, keepdims=True)) / math.sqrt(K - 1))
    )
    norm = None if O is None else float(np.linalg.norm(O) / math.sqrt(K))
    ranks: dict[str, int] = {}
    coarse: dict[str, int] = {}
    ratios: dict[str, float] = {}
    gaps: dict[str, float | None] = {}
    for name, A in M.items():
        s = np.linalg.svd(A, compute_uv=False)  # descending, min(d, K) values
        ranks[name] = k = _rank(s, A.shape, criteria.rank_rtol, criteria.dtype)
        coarse[name] = _rank(s, A.shape, criteria.rank_rtol_coarse, criteria.dtype)
        ratios[name] = _sigma2_ratio(s)
        gaps[name] = None if k == 0 or k >= s.size else (float(s[k - 1] / s[k]) if s[k] > 0 else math.inf)

    def sharpness(name: str) -> float:
        gap = gaps[name]
        return 0.0 if gap is None else gap

    # the bottleneck: smallest rank, ties broken by the sharpest cut
    bottleneck = min(M, key=lambda n: (ranks[n], -sharpness(n)))
    last = f"H{L}" if L >= 2 else "H1"
    s_last = np.linalg.svd(M[last], compute_uv=False)
    cond = float(s_last[0] / s_last[K - 1]) if s_last.size >= K and s_last[K - 1] > 0 else None
    gram_layer = f"H~{L}" if L >= 2 else "H1"
    d_dnc, d_srg = gram_distances(M[gram_layer].T @ M[gram_layer], srg=L >= 2)
    r = r_from_classes(K)
    note: str | None = None
    if L < 2:
        note = "srg_like is not defined for a head of L = 1 layer (the SRG needs a ReLU layer, L >= 2)"
        r = None
    elif d_srg is None:
        note = f"srg_like is not defined for K = {K}: the SRG construction needs K = C(r, 2) with r >= 4"
        r = None
    m: dict[str, Any] = {
        "label": None,
        "why": None,
        "classes": K,
        "layers": L,
        "ranks": ranks,
        "ranks_coarse": coarse,
        "sigma2_ratios": ratios,
        "output_spread": spread,
        "output_norm": norm,
        "bottleneck": bottleneck,
        "bottleneck_rank": ranks[bottleneck],
        "sv_gap": gaps[bottleneck],
        "dnc_cond": cond,
        "gram_layer": gram_layer,
        "gram_distance_dnc": d_dnc,
        "gram_distance_srg": d_srg,
        "srg_r": r,
        "srg_note": note,
        "train_acc": None if train_acc is None else float(train_acc),
        "loss_decrease": (
            None
            if train_loss_per_epoch is None
            else loss_decrease(train_loss_per_epoch, criteria.plateau_window)
        ),
        "criteria": criteria.to_dict(),
    }
    m["label"], m["why"] = _decide(m, criteria)
    return HeadOutcome.from_dict(m)


def finalise_outcome(
    outcome: HeadOutcome | Mapping[str, Any] | None,
    *,
    diverged: bool = False,
    train_loss_per_epoch: Sequence[float | None] | None = None,
    classes: int | None = None,
    layers: int | None = None,
    convergence: Any = None,
) -> HeadOutcome | None:
    """The outcome at the end of a run: the last evaluation's outcome decided again with what only the loop
    knows -- a non-finite loss (``diverged``) and the per-epoch training losses (the plateau test).

    Parameters
    ----------
    outcome : HeadOutcome or dict or None
        The last evaluation's outcome (``metrics.jsonl``'s ``outcome``); ``None`` where none was stored (a
        run folder of an earlier release, or no evaluation).
    diverged : bool, default False
        The run stopped on a non-finite training loss.
    train_loss_per_epoch : sequence of float, optional
        The mean training loss of each epoch.
    classes, layers : int, optional
        ``K`` and ``L``, for a diverged run without a stored outcome.
    convergence : Convergence, optional
        The convergence criterion at the end of a run of ``until: converged``
        (:func:`~deepcollapse.nets.convergence.check_convergence`).  It decides ``not_converged`` in place of
        the accuracy and plateau tests: where it did not hold, the run is ``not_converged`` (unless
        ``diverged``, ``zero`` or ``constant``); where it held, the head gets its structural label (a
        training accuracy below :attr:`HeadCriteria.min_train_acc` is stated in ``why``).

    Returns
    -------
    HeadOutcome or None
        ``None`` only where nothing is known (no outcome stored and not diverged).

    Examples
    --------
    A DNC head whose training loss still falls is not converged; one that diverged is ``diverged``:

    >>> import numpy as np
    >>> frame = np.eye(3)
    >>> out = classify_head({"H1": frame, "H~2": 2 * frame, "H2": 2 * frame}, train_acc=1.0)
    >>> finalise_outcome(out, train_loss_per_epoch=[1.0, 0.5, 0.5, 0.5]).label
    'dnc'
    >>> finalise_outcome(out, train_loss_per_epoch=[1.0, 0.8, 0.6, 0.4]).label
    'not_converged'
    >>> finalise_outcome(out, diverged=True).label, finalise_outcome(None)
    ('diverged', None)
    """
    data = None if outcome is None else dict(HeadOutcome.from_dict(outcome).to_dict())
    criteria = HeadCriteria.from_dict(data["criteria"]) if data and data.get("criteria") else HeadCriteria()
    if diverged:
        K = classes if data is None else data.get("classes", classes)
        L = layers if data is None else data.get("layers", layers)
        why = "the training loss became non-finite; training stopped"
        return _diverged(K, L, why, criteria)  # type: ignore[arg-type]
    if data is None or data.get("label") in (None, "diverged"):
        return None if data is None else HeadOutcome.from_dict(data)
    if train_loss_per_epoch is not None:
        data["loss_decrease"] = loss_decrease(train_loss_per_epoch, criteria.plateau_window)
    data["label"], data["why"] = _decide(data, criteria, convergence)
    return HeadOutcome.from_dict(data)
