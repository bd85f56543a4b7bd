"""Every collapse metric at once: :func:`collapse_metrics` (one JSON-ready dict, keys :data:`METRIC_KEYS`)
and :func:`finalize`, shared with the streaming ``CollapseStatistics`` (non-finite values → ``None`` + a
warning).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from deepcollapse.metrics._inputs import ArrayLike, as_bias, as_weights, prepare, restrict_to_kept
from deepcollapse.metrics.classifier import (
    _nc3_alignment,
    _self_duality,
    _wh_etf_error,
    classifier_predict,
    ncc_predict_of,
)
from deepcollapse.metrics.core import _core, _Out
from deepcollapse.metrics.means import Moments, global_mean_of, moments_of

__all__ = ["METRIC_KEYS", "collapse_metrics", "finalize"]


#: Keys of the dict returned by :func:`collapse_metrics` (and ``CollapseStatistics.compute``), in order.
METRIC_KEYS = (
    "num_samples",
    "num_classes",
    "dim",
    "classes",
    "nc1_trace_ratio",
    "nc1_pinv",
    "cdnv",
    "nc2_cond",
    "nc2_orth_error",
    "nc2_etf_error",
    "equinorm",
    "equinorm_uncentered",
    "equiangularity",
    "nc3_alignment",
    "self_duality",
    "wh_etf_error",
    "nc4_agreement",
    "ncc_accuracy",
    "rank",
    "rank_tolerance",
    "effective_rank",
    "stable_rank",
    "singular_values",
    "negative_fraction",
    "warnings",
)


def weight_metrics(W: np.ndarray | None, m: Moments, weighted: bool, out: _Out) -> None:
    """NC3 of the weights ``W (P, D)`` applied to the features (``None``: all three are ``None``)."""
    out.values["nc3_alignment"] = out.values["self_duality"] = out.values["wh_etf_error"] = None
    if W is None:
        return
    mu = m.means
    out.set("nc3_alignment", _nc3_alignment(W, mu), "weights or class means are all zero")
    if W.shape[0] == mu.shape[0]:
        A = mu - global_mean_of(m.counts, mu, weighted)
        out.set("self_duality", _self_duality(W, A), "weights are zero or class means are identical")
        out.set("wh_etf_error", _wh_etf_error(W, A), "W M^T is zero (weights zero or class means identical)")
    else:
        why = f"weights have {W.shape[0]} rows, not K = {mu.shape[0]} (not a classifier)"
        out.reasons["self_duality"] = out.reasons["nc4_agreement"] = why


def finalize(
    values: dict[str, Any],
    reasons: dict[str, str],
    *,
    counts: np.ndarray,
    dim: int,
    classes: np.ndarray,
) -> dict[str, Any]:
    """Assemble the public result dict: JSON-friendly types, non-finite values → ``None`` + a warning."""
    out: dict[str, Any] = {
        "num_samples": int(counts.sum()),
        "num_classes": int(counts.size),
        "dim": int(dim),
        "classes": [int(c) for c in classes],
    }
    warnings: list[str] = []
    for key in METRIC_KEYS[4:-1]:
        v = values.get(key)
        if key == "singular_values":
            out[key] = None if v is None else [float(x) for x in v]
            continue
        if key == "rank":
            out[key] = None if v is None else int(v)
            continue
        if v is None:
            out[key] = None
            if key in reasons:
                warnings.append(f"{key} is null: {reasons[key]}.")
            continue
        v = float(v)
        if math.isfinite(v):
            out[key] = v
        else:
            out[key] = None
            warnings.append(f"{key} is null ({v}): {reasons.get(key, 'not finite')}.")
    for key, why in reasons.items():
        if ":" in key:  # informational notes (e.g. nc1_pinv:rank)
            warnings.append(f"{key.split(':')[0]}: {why}.")
    out["warnings"] = warnings
    return out


def collapse_metrics(
    features: ArrayLike,
    labels: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    bias: ArrayLike | None = None,
    num_classes: int | None = None,
    drop_empty: bool = False,
    weighted: bool = True,
    rtol: float | None = None,
    dtype: Any = None,
    pinv: bool = True,
) -> dict[str, Any]:
    """All collapse metrics of ``(features (N, D), labels (N,))`` (and weights), as one JSON-ready dict.

    Keys (:data:`METRIC_KEYS`): ``num_samples, num_classes, dim, classes`` (original labels of the kept
    classes), ``nc1_trace_ratio`` (:func:`nc1_trace_ratio`), ``nc1_pinv`` (:func:`nc1_pinv`; ``None`` if
    ``pinv=False``, which skips the ``D × D`` within-class scatter), ``cdnv``, ``nc2_cond``,
    ``nc2_orth_error``, ``nc2_etf_error``, ``equinorm`` (centred), ``equinorm_uncentered``, ``equiangularity``
    (centred), ``nc3_alignment`` and ``self_duality`` (centred; ``weights`` given), ``nc4_agreement``
    (``weights (K, D)`` and optional ``bias`` given), ``ncc_accuracy``, ``rank`` / ``rank_tolerance`` /
    ``effective_rank`` / ``stable_rank`` / ``singular_values`` (all of the uncentred ``M (D, K)``;
    ``singular_values`` has ``K`` entries, zero-padded if ``D < K``), ``negative_fraction`` (entries of
    ``features`` below 0) and ``warnings`` (one string per ``None`` value saying why, plus notes).

    ``weights``: ``(P, D)`` matrix applied to these features; ``P == K`` means a classifier (enables
    ``self_duality`` and ``nc4_agreement``).  ``weighted``: sample-weighted global mean (default) or
    unweighted. ``rtol``/``dtype``: rank tolerance (default from the features' own dtype, see
    :func:`numerical_rank`).

    Parameters
    ----------
    features : array_like, (N, D)
        One sample per row (numpy array or torch tensor; computed in float64).
    labels : array_like of int, (N,)
        Class labels in ``0..K-1``.
    weights : array_like, (P, D), optional
        A matrix applied to these features; ``P == K`` means a classifier.
    bias : array_like, (K,), optional
        The classifier's bias (for ``nc4_agreement``).
    num_classes : int, optional
        ``K``; default ``max(labels) + 1``.
    drop_empty : bool, default False
        Drop classes without samples (the rest renumbered ``0..K'-1``) instead of raising ``ConfigError``.
    weighted : bool, default True
        Global mean sample-weighted, ``(1/N) Σ_i h_i``; False: unweighted, ``(1/K) Σ_c μ_c``.
    rtol : float, optional
        Rank tolerance ``rtol · σ_1`` instead of the dtype default (:func:`~deepcollapse._core.rank_tolerance`
        of the features' dtype).
    dtype : dtype, optional
        The dtype the features were computed in (default rank tolerance); default their own.
    pinv : bool, default True
        Compute ``nc1_pinv`` (False skips the ``D × D`` within-class scatter).

    Returns
    -------
    dict
        The keys of :data:`METRIC_KEYS`: floats, ints, lists, or None with a ``warnings`` entry saying why.
    """
    d = prepare(features, labels, num_classes, drop_empty)
    m = moments_of(d, scatter=pinv)
    out = _core(m, weighted=weighted, rtol=rtol, dtype=dtype)
    values, reasons = out.values, out.reasons
    W = None if weights is None else as_weights(weights, d.H.shape[1])
    W, bias = restrict_to_kept(W, bias, d.classes, d.K_orig)
    weight_metrics(W, m, weighted, out)
    pred = ncc_predict_of(d.H, m.means)
    values["ncc_accuracy"] = float(np.mean(pred == d.y))
    values["nc4_agreement"] = None
    if W is not None and W.shape[0] == d.K:
        values["nc4_agreement"] = float(np.mean(pred == classifier_predict(d.H, W, as_bias(bias, d.K))))
    return finalize(values, reasons, counts=m.counts, dim=d.H.shape[1], classes=d.classes)
