"""deepcollapse.metrics: neural-collapse metrics, exact, streaming and per layer.

``functional`` holds pure functions of ``(features (N, D), labels (N,))`` (numpy or torch, computed in
float64) and :func:`collapse_metrics`, every metric in one call (a :class:`CollapseMetrics`).
``streaming.CollapseStatistics`` accumulates sum-reducible statistics over batches and calls the same
functional core.
``layer_metrics`` (:mod:`deepcollapse.metrics.capture`, imports torch and pandas on first use:
``from deepcollapse.metrics import layer_metrics``) measures any ``torch.nn.Module`` layer by layer.
"""

from deepcollapse._core.lazy import lazy_exports as _lazy_exports
from deepcollapse.metrics.functional import (
    METRIC_KEYS,
    CollapseMetrics,
    Moments,
    between_class_cov,
    cdnv,
    class_mean_gram,
    class_means,
    collapse_metrics,
    effective_rank,
    equiangularity,
    equinorm,
    global_mean,
    metrics_from_moments,
    moments,
    nc1_pinv,
    nc1_trace_ratio,
    nc2_cond,
    nc2_etf_error,
    nc2_orth_error,
    nc3_alignment,
    nc4_agreement,
    ncc_accuracy,
    ncc_predict,
    negative_fraction,
    numerical_rank,
    self_duality,
    singular_values,
    stable_rank,
    wh_etf_error,
    within_class_cov,
)
from deepcollapse.metrics.streaming import CollapseStatistics, NCCStatistics, two_pass_metrics

# imported on first use (PEP 562): `import deepcollapse.metrics` loads no torch
__getattr__, _lazy_dir, _lazy_all = _lazy_exports(__name__, {"layer_metrics": "capture"})

__all__ = [
    *_lazy_all,
    "METRIC_KEYS",
    "CollapseMetrics",
    "CollapseStatistics",
    "NCCStatistics",
    "two_pass_metrics",
    "Moments",
    "between_class_cov",
    "cdnv",
    "class_mean_gram",
    "class_means",
    "collapse_metrics",
    "effective_rank",
    "equiangularity",
    "equinorm",
    "global_mean",
    "metrics_from_moments",
    "moments",
    "nc1_pinv",
    "nc1_trace_ratio",
    "nc2_cond",
    "nc2_etf_error",
    "nc2_orth_error",
    "nc3_alignment",
    "nc4_agreement",
    "ncc_accuracy",
    "ncc_predict",
    "negative_fraction",
    "numerical_rank",
    "self_duality",
    "wh_etf_error",
    "singular_values",
    "stable_rank",
    "within_class_cov",
]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_lazy_all))
