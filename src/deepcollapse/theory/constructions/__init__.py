"""DNC and SRG solutions of the L-DUFM as explicit matrices, their optimal scales and losses.

A *construction* fixes the class-mean geometry up to the scales ``α_2 .. α_L``: the pre-ReLU class means are
``M~_l = √α_l X_l`` with fixed unit matrices ``X_l`` (non-negative for ``l < L``, so ``M_l = M~_l``), and
every weight matrix is conditionally optimal (:mod:`deepcollapse.theory.layers`).  The loss is then (``n = 1``
reduction, ``c = √(λ_{W_1} nλ_{H_1})``)

    L(α) = c P √α_2  +  Σ_{l=2}^{L-1} (λ_{W_l}/2) q_l α_{l+1}/α_l  +  Σ_i λ_{W_L} / (2 (e_i α_L + K λ_{W_L}))

with ``P = ‖X_2‖_*``, ``q_l = ‖X_{l+1} X_l^+‖_F²`` and ``e_i`` the eigenvalues of ``ReLU(X_L)^T ReLU(X_L)``:

* DNC (Definitions 1/10): ``X_l = I_K``; ``P = q_l = K``, ``e_i = 1``.
* SRG (Definitions 4/9, ``K = C(r, 2)``, ``r >= 4``): ``X_l = 𝒯_r`` for ``2 <= l <= L-1``,
  ``X_L = normalise_rows(A^{(1)} 𝒯_r)`` (``A^{(1)}``: one row per pair ``{a, b}``, −1 at ``a, b``, +1
  elsewhere). For ``L >= 3``: ``P = p_0 = √2 + √((r-1)(r-2))``, ``q_l = r`` (Lemma 13), ``q_{L-1} = Q = K r
  (r-1) / (4 s²)`` (Lemma 14), ``s² = C(r-2, 2) + 1``, ``e ∈ {C(r-2,2)² ×1, (r-3)² ×(r-1), 1 ×r(r-3)/2} / s²``
  (Lemma 16).
* Definition 11.1 (any ``K >= 6``): block-diagonal SRG(``C(r,2)``, largest ``<= K``) ⊕ DNC(``K − C(r,2)``);
  the two blocks' losses add up (with the full-``K`` ridge constant ``K λ_{W_L}`` in both) and are optimised
  separately.
* Definition 11.2 (any ``K >= 6``): SRG(``C(r,2)``, smallest ``>= K``) with ``C(r,2) − K`` class columns
  removed (all columns tie in individual fit; see :func:`def11_2_kept_classes` for which) and the
  matching rows of ``W_L`` dropped; here the remaining layers are re-fitted conditionally optimally and the
  scales re-optimised.

Scales: by AM–GM the ``L`` "half terms" (H_1, W_1 .. W_{L-1}) are equal at the optimum, which reduces the
problem to one scalar ``α_L``: ``L(α_L) = L (G B α_L)^{1/L} + ridge(α_L)`` with ``B = nλ_{H_1} Π_{l<L}
λ_{W_l}`` and ``G = (P/2)² Π_l (q_l/2)``; the 1-D problem is solved on a log grid then by a root of the
derivative.  The all-zero point (loss 1/2) is always a candidate: where it is at least as good, the reported
optimum is the zero point with all scales 0.

Modules (each later one imports only from the earlier ones):

* :mod:`.geometry`: the unit class-mean matrices and their coefficients (:class:`Geometry`,
  :func:`dnc_geometry`, :func:`srg_geometry`, :func:`srg_defined`, ``SRG_CONSTRUCTIONS``).
* :mod:`.scales`: ``L(α)`` (:func:`chain_loss`) and its minimisation over the scales
  (:func:`optimise_scales`).
* :mod:`.closed_forms`: the optimal losses (:class:`ClosedForm`, :func:`loss_dnc`, :func:`loss_srg`), Theorem
  5's conditions, the zero threshold, ``LOSS_ZERO``.
* :mod:`.solutions`: explicit matrices at the optimal scales (:func:`dnc_solution`, :func:`srg_solution`,
  :func:`zero_solution`).
* :mod:`.gram`: cosine Gram matrices of the SRG class means (:func:`srg_gram`, :func:`srg_pre_gram`,
  :func:`srg_intermediate_gram`), :func:`cosine_gram`, and :func:`gram_match` (a Gram matrix against a
  reference, up to a permutation of the classes).
"""

from deepcollapse.theory.constructions.closed_forms import (
    LOSS_ZERO,
    ClosedForm,
    best_srg_candidate,
    loss_dnc,
    loss_srg,
    loss_zero,
    srg_optimum,
    theorem5_conditions,
    zero_threshold,
    zero_threshold_equal_lambda,
)
from deepcollapse.theory.constructions.geometry import (
    SRG_CONSTRUCTIONS,
    Geometry,
    SRGCoefficients,
    def11_2_kept_classes,
    dnc_geometry,
    srg_analytic,
    srg_defined,
    srg_geometry,
    srg_last_unit,
)
from deepcollapse.theory.constructions.geometry import _numeric as _numeric  # used by the tests
from deepcollapse.theory.constructions.gram import (
    GramMatch,
    cosine_gram,
    gram_match,
    srg_gram,
    srg_intermediate_gram,
    srg_pre_gram,
)
from deepcollapse.theory.constructions.scales import (
    chain_loss,
    half_terms_coefficient,
    optimise_scales,
    scales_from_last,
)
from deepcollapse.theory.constructions.solutions import _means_from as _means_from  # used by cross_entropy
from deepcollapse.theory.constructions.solutions import dnc_solution, srg_solution, zero_solution

__all__ = [
    "LOSS_ZERO",
    "SRG_CONSTRUCTIONS",
    "ClosedForm",
    "Geometry",
    "GramMatch",
    "SRGCoefficients",
    "best_srg_candidate",
    "chain_loss",
    "cosine_gram",
    "def11_2_kept_classes",
    "dnc_geometry",
    "dnc_solution",
    "gram_match",
    "half_terms_coefficient",
    "loss_dnc",
    "loss_srg",
    "loss_zero",
    "optimise_scales",
    "scales_from_last",
    "srg_analytic",
    "srg_defined",
    "srg_geometry",
    "srg_gram",
    "srg_intermediate_gram",
    "srg_last_unit",
    "srg_optimum",
    "srg_pre_gram",
    "srg_solution",
    "theorem5_conditions",
    "zero_solution",
    "zero_threshold",
    "zero_threshold_equal_lambda",
]
