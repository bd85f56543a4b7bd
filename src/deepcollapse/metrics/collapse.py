"""Every collapse metric at once: :func:`collapse_metrics` (one :class:`CollapseMetrics`, keys
:data:`METRIC_KEYS`) and :func:`finalize`, shared with the streaming ``CollapseStatistics`` (non-finite
values → ``None`` + a warning).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.docs import fill_doc
from deepcollapse._core.results import Result
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

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["METRIC_KEYS", "CollapseMetrics", "collapse_metrics", "finalize"]


#: Keys of the :class:`CollapseMetrics` returned by :func:`collapse_metrics` (and
#: ``CollapseStatistics.compute``), in order: its fields, and the keys of its ``to_dict()``.
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


class CollapseInputs(Protocol):
    """What :func:`collapse_metrics` reads from a fit: ``collapse_inputs()`` -> features, labels, weights."""

    def collapse_inputs(self) -> tuple[Any, Any, Any]: ...


@dataclass(frozen=True, eq=False)
class CollapseMetrics(Result):
    """Every collapse metric of one set of features: the result of :func:`collapse_metrics`,
    :meth:`CollapseStatistics.compute <deepcollapse.metrics.streaming.CollapseStatistics.compute>` and
    :func:`~deepcollapse.metrics.streaming.two_pass_metrics`.

    Its keys are :data:`METRIC_KEYS`, in that order; ``to_dict()`` is the JSON-ready dict these functions
    returned before results were typed, and read-only key access (``m["nc1_trace_ratio"]``) keeps working.
    A metric that is undefined (or not finite) is ``None`` with an entry in ``warnings`` saying why.  The
    second pass alone, :meth:`NCCStatistics.compute <deepcollapse.metrics.streaming.NCCStatistics.compute>`,
    holds only the keys ``ncc_accuracy`` and ``nc4_agreement`` (the other fields are ``None`` and absent from
    ``to_dict()``).  Notation as in ``docs/formulas.md``: ``K`` classes kept, class means ``μ_c`` (rows of
    ``means (K, D)``, the paper's ``M = means.T (D, K)``), global mean ``μ_G``, ``Σ_W`` and ``Σ_B`` (1/N and
    1/K, no Bessel correction), centred means ``μ_c − μ_G``.

    Attributes
    ----------
    num_samples : int
        ``N``, samples of the kept classes.
    num_classes : int
        ``K``, classes kept (with ``drop_empty=True``, those with samples).
    dim : int
        ``D``, the feature dimension.
    classes : list of int, (K,)
        The original label of each kept class, increasing.
    nc1_trace_ratio : float or None
        DNC1 (2024 paper §6): ``tr(Σ_W) / tr(Σ_B)``; dimensionless, 0 when collapsed.
    nc1_pinv : float or None
        NC1 of Papyan et al.: ``tr(Σ_W Σ_B^+) / K``; ``None`` when the ``D × D`` scatter was not kept
        (``pinv=False``, ``outer=False``).
    cdnv : float or None
        Class-distance normalised variance, ``mean_{c<c'} (Var_c + Var_c') / (2 ‖μ_c − μ_c'‖²)``.
    nc2_cond : float or None
        DNC2 (bias-free): condition number ``σ_1 / σ_K`` of the uncentred ``M``; ``None`` when rank ``< K``.
    nc2_orth_error : float or None
        ``‖G/‖G‖_F − I_K/√K‖_F`` with ``G = M^T M``: distance to an orthogonal frame, in ``[0, √2]``.
    nc2_etf_error : float or None
        The same distance of the centred means' Gram matrix to the simplex ETF ``(I_K − 11^T/K)``
        (normalised).
    equinorm : float or None
        ``std_c ‖μ_c − μ_G‖ / mean_c ‖μ_c − μ_G‖`` (population std), 0 when the centred means have equal
        norms.
    equinorm_uncentered : float or None
        The same of the uncentred means ``‖μ_c‖``.
    equiangularity : float or None
        Population std over pairs ``c < c'`` of the cosines between centred means.
    nc3_alignment : float or None
        DNC3: weighted mean over the rows ``w_p`` of ``W`` of ``sin²`` of the angle to the nearest class mean
        (weights ``‖w_p‖²``), in ``[0, 1]``; ``None`` without ``weights``.
    self_duality : float or None
        NC3 of Papyan et al.: ``‖W/‖W‖_F − A/‖A‖_F‖_F²`` with ``A`` the centred means; needs ``W (K, D)``.
    wh_etf_error : float or None
        ``‖W A^T/‖W A^T‖_F − (I_K − 11^T/K)/√(K−1)‖_F`` (Zhu et al. 2021); needs ``W (K, D)``.
    nc4_agreement : float or None
        NC4: fraction of samples where the classifier ``argmax_c (W h + b)_c`` equals the nearest class
        centre; needs ``W (K, D)`` (and, streaming, the second pass).
    ncc_accuracy : float or None
        Accuracy of the nearest-class-centre classifier ``argmin_c ‖h − μ_c‖`` (streaming: second pass).
    rank : int or None
        Numerical rank of ``M``: singular values above ``rank_tolerance``.
    rank_tolerance : float or None
        The cut-off used for ``rank`` (same units as the features).
    effective_rank : float or None
        ``exp(−Σ p_i log p_i)``, ``p_i = σ_i / Σ_j σ_j`` (Roy & Vetterli), of ``M``.
    stable_rank : float or None
        ``Σ σ_i² / σ_1²`` of ``M``.
    singular_values : list of float or None, (K,)
        ``σ_1 ≥ … ≥ σ_K`` of ``M`` (zero-padded if ``D < K``; same units as the features).
    negative_fraction : float or None
        Fraction of feature entries below 0 (pre-activations a ReLU would zero).
    warnings : list of str or None
        One sentence per ``None`` metric saying why, plus informational notes (e.g. the rank of ``Σ_B``).
    """

    num_samples: int | None = None
    num_classes: int | None = None
    dim: int | None = None
    classes: list[int] | None = None
    nc1_trace_ratio: float | None = None
    nc1_pinv: float | None = None
    cdnv: float | None = None
    nc2_cond: float | None = None
    nc2_orth_error: float | None = None
    nc2_etf_error: float | None = None
    equinorm: float | None = None
    equinorm_uncentered: float | None = None
    equiangularity: float | None = None
    nc3_alignment: float | None = None
    self_duality: float | None = None
    wh_etf_error: float | None = None
    nc4_agreement: float | None = None
    ncc_accuracy: float | None = None
    rank: int | None = None
    rank_tolerance: float | None = None
    effective_rank: float | None = None
    stable_rank: float | None = None
    singular_values: list[float] | None = None
    negative_fraction: float | None = None
    warnings: list[str] | None = None

    def to_frame(self) -> pd.DataFrame:
        """One row, one column per key held (``to_dict()``; list values such as ``singular_values`` in their
        cell), as in the per-layer frame of :func:`~deepcollapse.metrics.capture.layer_metrics`.

        Returns
        -------
        pandas.DataFrame
            Shape ``(1, len(self))``.

        Examples
        --------
        >>> import numpy as np
        >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
        >>> collapse_metrics(H, y).to_frame()[['nc1_trace_ratio', 'ncc_accuracy']]
           nc1_trace_ratio  ncc_accuracy
        0              0.5           1.0
        """
        import pandas as pd

        return pd.DataFrame([self.to_dict()], columns=list(self))


@fill_doc
def weight_metrics(W: np.ndarray | None, m: Moments, weighted: bool, out: _Out) -> None:
    """NC3 of the weights ``W (P, D)`` applied to the features (``None``: all three are ``None``).

    Parameters
    ----------
    W : numpy.ndarray or None, (P, D)
        The weights (``P == K``: a classifier, which also gives ``self_duality`` and ``wh_etf_error``).
    m : Moments
        The statistics of the features (:func:`~deepcollapse.metrics.means.moments`).
    %(metrics_weighted)s
    out : _Out
        The values and reasons being collected, updated in place.

    Returns
    -------
    None
        ``out`` is updated in place.

    Examples
    --------
    >>> from deepcollapse.metrics.core import _Out
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> out = _Out(); weight_metrics(np.eye(2), moments_of(prepare(H, y, None, False)), True, out)
    >>> out.values['nc3_alignment']
    0.0
    """
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
) -> CollapseMetrics:
    """Assemble the public result: JSON-friendly types, non-finite values → ``None`` + a warning.

    Parameters
    ----------
    values : dict
        Metric name → value (float, int, array or ``None``) for the metric keys of :data:`METRIC_KEYS`
        (``nc1_trace_ratio`` … ``negative_fraction``); missing keys read as ``None``.
    reasons : dict
        Metric name → why it is undefined (used for the warning of a ``None`` or non-finite value); keys
        ``"name:topic"`` are informational notes, always listed.
    counts : ndarray, (K,)
        Samples per kept class.
    dim : int
        ``D``, the feature dimension.
    classes : ndarray of int, (K,)
        The original label of each kept class.

    Returns
    -------
    CollapseMetrics
        Every key of :data:`METRIC_KEYS`: floats, ints, lists, or ``None`` with a ``warnings`` entry.

    Examples
    --------
    >>> import numpy as np
    >>> m = finalize({"nc1_trace_ratio": float("inf"), "rank": 2}, {"nc1_trace_ratio": "means coincide"},
    ...              counts=np.array([3, 2]), dim=4, classes=np.array([0, 1]))
    >>> m.num_samples, m.rank, m.nc1_trace_ratio, m["cdnv"]
    (5, 2, None, None)
    >>> m.warnings
    ['nc1_trace_ratio is null (inf): means coincide.']
    """
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
    return CollapseMetrics(**out)


@fill_doc
def collapse_metrics(
    features: ArrayLike | CollapseInputs,
    labels: ArrayLike | None = None,
    weights: ArrayLike | None = None,
    *,
    bias: ArrayLike | None = None,
    num_classes: int | None = None,
    drop_empty: bool = False,
    weighted: bool = True,
    rtol: float | None = None,
    dtype: Any = None,
    pinv: bool = True,
) -> CollapseMetrics:
    """All collapse metrics of ``(features (N, D), labels (N,))`` (and weights): one :class:`CollapseMetrics`.

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

    ``features`` may also be a :class:`~deepcollapse.dufm.fit.DUFMFit` or a DUFM run folder read by
    :func:`~deepcollapse.dufm.points.as_runs` (anything with a ``collapse_inputs()`` method): its lowest-loss
    run's last layer ``H_L^T`` with its labels and ``W_L`` as the classifier.

    Parameters
    ----------
    features : array_like, (N, D), or DUFMFit or TrainedRuns
        One sample per row (numpy array or torch tensor; computed in float64), or a fit.
    labels : array_like of int, (N,)
        Class labels in ``0..K-1`` (required with arrays; a fit brings its own).
    weights : array_like, (P, D), optional
        A matrix applied to these features; ``P == K`` means a classifier.
    bias : array_like, (K,), optional
        The classifier's bias (for ``nc4_agreement``).
    num_classes : int, optional
        ``K``; default ``max(labels) + 1``.
    %(metrics_drop_empty)s
    %(metrics_weighted)s
    %(metrics_rtol)s
    dtype : dtype, optional
        The dtype the features were computed in (default rank tolerance); default their own.
    pinv : bool, default True
        Compute ``nc1_pinv`` (False skips the ``D × D`` within-class scatter).

    Returns
    -------
    CollapseMetrics
        The keys of :data:`METRIC_KEYS`: floats, ints, lists, or None with a ``warnings`` entry saying why
        (``to_dict()``: the JSON-ready dict; read-only key access ``m["nc1_trace_ratio"]`` also works).

    Examples
    --------
    >>> import numpy as np
    >>> H = np.array([[1.0, 0.0], [1.2, 0.0], [0.0, 1.0], [0.0, 0.8]])  # two classes, two samples each
    >>> m = collapse_metrics(H, [0, 0, 1, 1], weights=np.eye(2))
    >>> round(m.nc1_trace_ratio, 4), m.rank, m.ncc_accuracy, m["nc4_agreement"]
    (0.0198, 2, 1.0, 1.0)
    >>> m.to_dict()["classes"], m.warnings
    ([0, 1], [])
    """
    if hasattr(features, "collapse_inputs"):  # a DUFMFit or TrainedRuns (deepcollapse.dufm.points)
        if labels is not None or weights is not None:
            raise ConfigError("labels, weights: a fit brings its own; pass the fit alone.")
        features, labels, weights = features.collapse_inputs()
    elif isinstance(features, (str, os.PathLike)):
        raise ConfigError(
            f"features == {str(features)!r}, must be arrays or a fit; read a DUFM run folder with "
            "deepcollapse.dufm.points.as_runs(folder) and pass that."
        )
    elif labels is None:
        raise ConfigError("labels: required with features (N, D), one class label per row.")
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
