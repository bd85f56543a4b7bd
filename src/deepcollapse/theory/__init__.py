"""deepcollapse.theory — the exact theory of the L-DUFM (numpy/scipy, float64, never imports torch).

* :mod:`.problem`: :class:`Problem`, one instance of eq. (1) (K, L, n, λs, widths, model family), validated
  once, with ``reduced()`` (the n = 1 problem); the functions below also take one.
* :mod:`.objective`: eq. (1) of the 2024 paper on explicit matrices (:func:`dufm_objective`,
  :func:`evaluate`); its float64 value is added up in one place, :func:`objective_from_output`.
* :mod:`.objective_torch`: the same eq. (1) on torch tensors (autograd; the torch engine, the landscape's
  HVPs and the networks use it), written with tensor methods only: imported by its users, not here.
* :mod:`.layers`: conditionally optimal layers and :func:`solution_from_class_means`.
* :mod:`.graphs`: triangular graphs ``T_r`` (Definition 3).
* :mod:`.constructions`: DNC (Definitions 1/10) and SRG (Definitions 4/9/11) solutions, optimal scales,
  closed-form losses ``loss_dnc`` / ``loss_srg`` (mse+relu), the zero threshold, SRG Gram matrices.
* :mod:`.compare`: ``compare`` (mse+relu) and :func:`grid`.
* :mod:`.cross_entropy`: the DNC / SRG structures re-optimised under cross-entropy (issue 9).
* :mod:`.linear`: the deep linear UFM's optimum (MSE) and simplex-ETF candidate (CE).
* :mod:`.family_compare`: :func:`compare_family` / :func:`grid_family` for every loss × activation, with a
  status per candidate (closed form, numerical re-optimisation, explicit evaluation, unavailable).
* :mod:`.front_door`: :func:`loss_dnc`, :func:`loss_srg`, :func:`compare` of a problem for its family (the
  closed forms for mse+relu, the family's candidates otherwise; the names exported here and by
  ``deepcollapse``).
"""

from deepcollapse.theory.compare import Comparison, grid, parse_range
from deepcollapse.theory.constructions import (
    LOSS_ZERO,
    SRG_CONSTRUCTIONS,
    ClosedForm,
    Geometry,
    chain_loss,
    dnc_geometry,
    dnc_solution,
    loss_zero,
    optimise_scales,
    srg_defined,
    srg_geometry,
    srg_gram,
    srg_intermediate_gram,
    srg_pre_gram,
    srg_solution,
    theorem5_conditions,
    zero_solution,
    zero_threshold,
    zero_threshold_equal_lambda,
)
from deepcollapse.theory.cross_entropy import (
    CEFit,
    ce_dnc,
    ce_dnc_solution,
    ce_srg,
    ce_srg_solution,
    ce_symmetric_last_layer,
)
from deepcollapse.theory.family_compare import Candidate, FamilyComparison, compare_family, grid_family
from deepcollapse.theory.front_door import compare, loss_dnc, loss_srg
from deepcollapse.theory.graphs import (
    adjacency_matrix,
    incidence_matrix,
    r_from_classes,
    spectrum,
    triangular_edges,
    triangular_spectrum,
)
from deepcollapse.theory.layers import (
    Solution,
    balanced_factorisation,
    class_means_of,
    conditional_loss,
    min_norm_interpolation,
    ridge_last_layer,
    solution_from_class_means,
)
from deepcollapse.theory.linear import LinearOptimum, linear_optimum, linear_solution
from deepcollapse.theory.objective import (
    ObjectiveParts,
    dufm_objective,
    evaluate,
    forward,
    loss_zero_point,
    objective_from_output,
    one_hot,
)
from deepcollapse.theory.problem import Problem, problem_of

__all__ = [
    "LOSS_ZERO",
    "CEFit",
    "Candidate",
    "Comparison",
    "FamilyComparison",
    "LinearOptimum",
    "ce_dnc",
    "ce_dnc_solution",
    "ce_srg",
    "ce_srg_solution",
    "ce_symmetric_last_layer",
    "compare_family",
    "grid_family",
    "linear_optimum",
    "linear_solution",
    "loss_zero_point",
    "SRG_CONSTRUCTIONS",
    "ClosedForm",
    "Geometry",
    "ObjectiveParts",
    "Problem",
    "evaluate",
    "objective_from_output",
    "problem_of",
    "Solution",
    "adjacency_matrix",
    "balanced_factorisation",
    "chain_loss",
    "class_means_of",
    "compare",
    "conditional_loss",
    "dnc_geometry",
    "dnc_solution",
    "dufm_objective",
    "forward",
    "grid",
    "incidence_matrix",
    "loss_dnc",
    "loss_srg",
    "loss_zero",
    "min_norm_interpolation",
    "one_hot",
    "optimise_scales",
    "parse_range",
    "r_from_classes",
    "ridge_last_layer",
    "solution_from_class_means",
    "spectrum",
    "srg_defined",
    "srg_geometry",
    "srg_gram",
    "srg_intermediate_gram",
    "srg_pre_gram",
    "srg_solution",
    "theorem5_conditions",
    "triangular_edges",
    "triangular_spectrum",
    "zero_solution",
    "zero_threshold",
    "zero_threshold_equal_lambda",
]
