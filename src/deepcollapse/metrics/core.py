"""The one functional core: every label-only metric from the sufficient statistics (:class:`Moments`).

:func:`collapse_metrics` and the streaming ``CollapseStatistics`` both call :func:`_core`, so they give the
same numbers up to rounding.  NC1 (``nc1_trace_ratio``, ``nc1_pinv``, ``cdnv``) is computed only here; its
public functions are thin wrappers.  Conventions in :mod:`deepcollapse.metrics.functional`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from deepcollapse._core.docs import fill_doc
from deepcollapse.metrics._inputs import ArrayLike, prepare, rank_tol
from deepcollapse.metrics.geometry import equiangularity_of, equinorm_of, frame_error
from deepcollapse.metrics.means import Moments, global_mean_of, moments_of
from deepcollapse.metrics.spectra import effective_rank_of, singular_values_of, stable_rank_of

__all__ = ["cdnv", "metrics_from_moments", "nc1_pinv", "nc1_trace_ratio"]


class _Out:
    """Collects values and, for non-finite ones, the reason."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.reasons: dict[str, str] = {}

    def set(self, key: str, value: float, reason: str | None = None) -> None:
        self.values[key] = float(value)
        if not math.isfinite(value) and reason:
            self.reasons[key] = reason


def _core(
    m: Moments,
    *,
    weighted: bool = True,
    rtol: float | None = None,
    dtype: Any = None,
) -> _Out:
    """All label-only metrics from the sufficient statistics (the one functional core)."""
    out = _Out()
    dtype = m.dtype if dtype is None else dtype
    n, mu = m.counts, m.means  # (K,), (K, D)
    K, D = mu.shape
    N = float(n.sum())
    s = singular_values_of(mu)  # singular values of M = mu.T (D, K), descending, min(K, D) of them
    tol_means = rank_tol(float(s[0]), (D, K), dtype, rtol)  # "is this (difference of) mean(s) zero"
    mu_G = global_mean_of(n, mu, weighted)
    Mc = mu - mu_G  # (K, D) centred means
    tr_W = float(m.within_ss.sum()) / N
    tr_B = float(np.einsum("kd,kd->", Mc, Mc)) / K
    _, sB, Vt = np.linalg.svd(Mc, full_matrices=False)  # Σ_B = Vt^T diag(sB²/K) Vt
    # tr(Σ_B) underflows to exactly 0 for means ~1e-160 (a run collapsing to zero) while sB[0] > 0
    identical = bool(sB[0] <= tol_means) or tr_B == 0.0
    why_identical = "class means are identical (tr(Σ_B) = 0 within tolerance)"
    # Rank cut-offs from the *centred* means' scale: a common offset (features around 1e4 in float32) inflates
    # σ_1(M) and with it the dtype tolerance, which would otherwise drop real between-class directions.
    tol_centred = tol_means if identical else rank_tol(float(sB[0]), (D, K), dtype, rtol)

    # NC1 ---------------------------------------------------------------------------------------------------
    out.set("nc1_trace_ratio", math.inf if identical else tr_W / tr_B, why_identical)
    if m.scatter is None:
        out.values["nc1_pinv"] = None
    elif identical:
        out.set("nc1_pinv", math.inf, why_identical)
    else:
        r = int(min(K - 1, np.count_nonzero(sB > tol_centred)))
        if r < K - 1:
            out.reasons["nc1_pinv:rank"] = (
                f"Σ_B has rank {r} < K-1 = {K - 1}; Σ_B^+ uses its {r} non-zero eigenpairs"
            )
        lam = sB[:r] ** 2 / K  # eigenvalues of Σ_B
        V = Vt[:r]  # (r, D) eigenvectors
        quad = np.einsum("rd,de,re->r", V, m.scatter / N, V)  # v_i^T Σ_W v_i
        out.set("nc1_pinv", float(np.sum(quad / lam)) / K)
    # CDNV (Galanti et al. 2022): mean over c < c' of (Var_c + Var_c') / (2 ‖μ_c − μ_c'‖²), Var_c = E_c ‖h −
    # μ_c‖²
    var = m.within_ss / n
    iu = np.triu_indices(K, k=1)
    diff = mu[iu[0]] - mu[iu[1]]
    dist2 = np.einsum("pd,pd->p", diff, diff)  # exact pairwise ‖μ_c − μ_c'‖² (no cancellation)
    tol_pair = max(tol_means, np.finfo(float).tiny) ** 2
    close = dist2 <= tol_pair
    if close.any():
        i, j = iu[0][close][0], iu[1][close][0]
        out.set(
            "cdnv", math.inf, f"classes {i} and {j} have identical means (‖μ_c − μ_c'‖ = 0 within tolerance)"
        )
    else:
        out.set("cdnv", float(np.mean((var[iu[0]] + var[iu[1]]) / (2.0 * dist2))))

    # NC2 ---------------------------------------------------------------------------------------------------
    s_full = np.concatenate([s, np.zeros(max(0, K - s.size))])  # σ_1..σ_K (zeros if D < K)
    tol = min(tol_means, tol_centred) if rtol is None else tol_means  # an explicit rtol is relative to σ_1(M)
    rank = int(np.count_nonzero(s > tol))
    out.values["singular_values"] = s_full
    out.values["rank"] = rank
    out.values["rank_tolerance"] = tol
    if rank < K:
        why = (
            f"class-mean matrix M (D x K = {D} x {K}) has numerical rank {rank} < K"
            + (" (D < K)" if D < K else "")
            + "; condition number σ_1/σ_K is infinite"
        )
        out.set("nc2_cond", math.inf, why)
    else:
        out.set("nc2_cond", float(s_full[0] / s_full[-1]))
    out.set("nc2_orth_error", frame_error(mu, centred=False), "all class means are zero")
    out.set("nc2_etf_error", math.nan if identical else frame_error(Mc, centred=True), why_identical)
    out.set("equinorm", math.nan if identical else equinorm_of(Mc), why_identical)
    out.set("equinorm_uncentered", equinorm_of(mu), "all class means are zero")
    out.set("equiangularity", math.nan if identical else equiangularity_of(Mc, tol_means), why_identical)
    out.set("effective_rank", effective_rank_of(s), "all class means are zero")
    out.set("stable_rank", stable_rank_of(s), "all class means are zero")
    if m.negatives is not None and m.entries:
        out.values["negative_fraction"] = m.negatives / m.entries
    return out


@fill_doc
def metrics_from_moments(
    m: Moments,
    *,
    weighted: bool = True,
    rtol: float | None = None,
    dtype: Any = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Fast path: every label-only metric from precomputed :class:`Moments`.

    Returns ``(values, reasons)``: ``values`` maps metric names to floats (``inf``/``nan`` when undefined;
    ``singular_values`` an ndarray), ``reasons`` maps the names of non-finite metrics to why.

    Parameters
    ----------
    m : Moments
        Sufficient statistics (:func:`moments` or ``CollapseStatistics``).
    weighted : bool, default True
        Global mean sample-weighted (True) or unweighted.
    %(metrics_rtol)s
    dtype : dtype, optional
        The dtype the features were computed in (default rank tolerance); default ``m.dtype``.

    Returns
    -------
    values : dict
        Metric name -> float (``inf``/``nan`` when undefined; ``singular_values`` an ndarray).
    reasons : dict
        Metric name -> why it is not finite.

    Examples
    --------
    >>> from deepcollapse.metrics.means import moments
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> values, reasons = metrics_from_moments(moments(H, y)); values['nc1_trace_ratio'], reasons
    (0.5, {})
    """
    out = _core(m, weighted=weighted, rtol=rtol, dtype=dtype)
    return out.values, out.reasons


def _nc1_value(features, labels, num_classes, key, *, weighted=True, drop_empty=False, rtol=None) -> float:
    d = prepare(features, labels, num_classes, drop_empty)
    m = moments_of(d, scatter=(key == "nc1_pinv"))
    return float(_core(m, weighted=weighted, rtol=rtol).values[key])


@fill_doc
def nc1_trace_ratio(
    features: ArrayLike,
    labels: ArrayLike,
    num_classes: int | None = None,
    *,
    weighted: bool = True,
    drop_empty: bool = False,
) -> float:
    """DNC1 of the 2024 paper (§6): ``tr(Σ_W) / tr(Σ_B)``; ``inf`` if all class means coincide.

    Parameters
    ----------
    %(metrics_features)s
    %(metrics_weighted)s
    %(metrics_drop_empty)s

    Returns
    -------
    float
        ``tr(Σ_W) / tr(Σ_B)`` (``inf`` if all class means coincide).

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> nc1_trace_ratio(H, y)
    0.5
    """
    return _nc1_value(
        features, labels, num_classes, "nc1_trace_ratio", weighted=weighted, drop_empty=drop_empty
    )


@fill_doc
def nc1_pinv(
    features: ArrayLike,
    labels: ArrayLike,
    num_classes: int | None = None,
    *,
    weighted: bool = True,
    drop_empty: bool = False,
    rtol: float | None = None,
) -> float:
    """NC1 of Papyan, Han & Donoho (2020): ``tr(Σ_W Σ_B^+) / K``.

    ``Σ_B^+`` is built from the top ``K−1`` eigenpairs of the symmetric ``Σ_B`` (its rank is at most ``K−1``),
    obtained from the SVD of the centred means ``M_c = U S V^T`` (``Σ_B = V (S²/K) V^T``: same eigenpairs,
    no squaring of the condition number).  Eigenvalues whose singular value is below the rank tolerance of the
    class-mean matrix are dropped as in ``pinv`` (so ``Σ_B`` of rank ``r < K−1`` uses ``r`` pairs);
    ``inf`` if all class means coincide.

    Parameters
    ----------
    %(metrics_features)s
    %(metrics_weighted)s
    %(metrics_drop_empty)s
    %(metrics_rtol)s

    Returns
    -------
    float
        ``tr(Σ_W Σ_B^+) / K`` (``inf`` if all class means coincide).

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> nc1_pinv(H, y)
    0.125
    """
    return _nc1_value(
        features, labels, num_classes, "nc1_pinv", weighted=weighted, drop_empty=drop_empty, rtol=rtol
    )


@fill_doc
def cdnv(
    features: ArrayLike,
    labels: ArrayLike,
    num_classes: int | None = None,
    *,
    drop_empty: bool = False,
) -> float:
    """Class-distance normalised variance (Galanti, György & Hutter 2022), averaged over pairs ``c < c'``.

    ``CDNV = mean_{c<c'} (Var_c + Var_c') / (2 ‖μ_c − μ_c'‖²)`` with ``Var_c = (1/n_c) Σ_{i∈c} ‖h_ci −
    μ_c‖²``; ``inf`` if two classes have the same mean.

    Parameters
    ----------
    %(metrics_features)s
    %(metrics_drop_empty)s

    Returns
    -------
    float
        The mean CDNV over class pairs (``inf`` if two classes have the same mean).

    Examples
    --------
    >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
    >>> cdnv(H, y)
    0.125
    """
    return _nc1_value(features, labels, num_classes, "cdnv", drop_empty=drop_empty)
