"""deepcollapse.metrics: neural-collapse metrics, exact, streaming and per layer.

``functional`` holds pure functions of ``(features (N, D), labels (N,))`` (numpy or torch, computed in
float64) and :func:`collapse_metrics`, every metric in one call (a :class:`CollapseMetrics`).
``streaming.CollapseStatistics`` accumulates sum-reducible statistics over batches and calls the same
functional core.
``capture.layer_metrics`` (imports torch and pandas; import it from :mod:`deepcollapse.metrics.capture`)
measures any ``torch.nn.Module`` layer by layer.
"""

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

__all__ = [
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
