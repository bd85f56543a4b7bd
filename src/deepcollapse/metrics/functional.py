"""Neural-collapse metrics as pure functions of ``features (N, D)`` and ``labels (N,)``.

Conventions (one notation, see ``docs/formulas.md``):

* ``features`` holds one sample per **row** (``(N, D)``); ``labels`` are integers in ``0..K-1``.  The DUFM
  stores ``H`` as ``(d, N)`` (columns = samples): pass ``H.T``.  numpy arrays and torch tensors are accepted;
  everything is computed in **float64** numpy and returned as plain Python floats / numpy arrays.
* Class means are returned as rows, ``means (K, D)``; the paper's class-mean matrix is its transpose
  ``M = means.T (D, K)`` (same singular values).  ``μ_G`` is the global mean: sample-weighted
  ``(1/N) Σ_i h_i = Σ_c (n_c/N) μ_c`` by default, or the unweighted ``(1/K) Σ_c μ_c`` (``weighted=False``).
* ``Σ_W = (1/N) Σ_c Σ_{i∈c} (h_ci − μ_c)(h_ci − μ_c)^T`` (no Bessel correction) and
  ``Σ_B = (1/K) Σ_c (μ_c − μ_G)(μ_c − μ_G)^T`` (the 2024 paper, §6).
* Functions whose name starts with ``nc2_``, ``equi``, ``class_mean_gram``, ``nc3_`` and ``self_duality`` take
  ``(features, labels)`` **or** a class-mean matrix ``means (K, D)`` alone (``labels=None``): the fast path
  for callers that already hold the class means (e.g. the DUFM trainer, whose samples are ordered by class).
  With means alone the global mean is the unweighted average of the means.
* Spectral functions (``singular_values``, ``numerical_rank``, ``effective_rank``, ``stable_rank``) take any
  matrix.
* A metric that is mathematically undefined/infinite returns ``inf`` or ``nan`` here; :func:`collapse_metrics`
  turns such values into ``None`` with a human-readable reason in ``warnings``.

Bad input (shape mismatch, labels outside ``0..K-1``, empty classes, NaN/inf features, fewer than two classes)
raises :class:`~deepcollapse._checks.ConfigError`.  Empty classes are an error unless ``drop_empty=True``,
which drops them and renumbers the remaining classes ``0..K'-1`` in increasing order of their original label
(the kept original labels are reported as ``classes`` by :func:`collapse_metrics`).

The same functional core (:func:`metrics_from_moments`) is used by :func:`collapse_metrics` and by the
streaming :class:`~deepcollapse.metrics.streaming.CollapseStatistics`, so both give the same numbers up to
rounding.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from deepcollapse._checks import ConfigError, check_choice, check_finite_array, check_int, rank_tolerance

__all__ = [
    "METRIC_KEYS",
    "Moments",
    "between_class_cov",
    "cdnv",
    "class_mean_gram",
    "class_means",
    "collapse_metrics",
    "effective_rank",
    "equiangularity",
    "equinorm",
    "finalize",
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
    "singular_values",
    "stable_rank",
    "wh_etf_error",
    "within_class_cov",
]

log = logging.getLogger(__name__)

ArrayLike = Any  # numpy array or torch tensor


# ------------------------------------------------------------------------------------------------------------
# Input handling
# ------------------------------------------------------------------------------------------------------------


def _dtype_of(x: Any) -> Any:
    """The dtype a numpy array / torch tensor came in (used for dtype-aware rank tolerances)."""
    return getattr(x, "dtype", np.float64)


def _dtype_name(dtype: Any) -> str:
    """``"float32"`` for ``np.float32``, ``np.dtype("float32")``, ``torch.float32`` or ``"float32"``.

    ``_checks.rank_tolerance`` maps dtypes by name; a numpy scalar *type* (``np.float32``) has no usable
    ``str``, so normalise here.
    """
    if dtype is None:
        return "float64"
    try:
        return np.dtype(dtype).name
    except TypeError:  # torch dtypes and the like
        return str(dtype).replace("torch.", "")


def _tolerance(s_max: float, shape: tuple[int, int], dtype: Any, rtol: float | None) -> float:
    return rank_tolerance(s_max, shape, _dtype_name(dtype), rtol)


def _as_float64(x: ArrayLike, name: str) -> np.ndarray:
    """A numpy array, torch tensor or nested sequence as a float64 numpy array (copied only if needed)."""
    if hasattr(x, "detach"):  # torch tensor (bfloat16 has no numpy equivalent: convert in torch first)
        import torch

        x = x.detach()
        if not torch.is_floating_point(x):
            x = x.to(torch.float64)
        return x.to(device="cpu", dtype=torch.float64).numpy()
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(
            f"{name} == {type(x).__name__} object, must be a numeric array or tensor."
        ) from None
    return a


def _as_labels(y: ArrayLike, n: int, features_shape: tuple[int, ...]) -> np.ndarray:
    """Integer labels of shape ``(n,)``; float labels are accepted only if integer-valued."""
    if hasattr(y, "detach"):
        y = y.detach().cpu().numpy()
    a = np.asarray(y)
    if a.ndim != 1 or a.shape[0] != n:
        raise ConfigError(
            f"labels.shape == {tuple(a.shape)}, must be ({n},) to match "
            f"features.shape == {tuple(features_shape)}."
        )
    if a.dtype.kind in "iu":
        return a.astype(np.int64, copy=False)
    if a.dtype.kind == "b":
        return a.astype(np.int64)
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)):
            bad = np.unique(a[~(np.isfinite(a) & (a == np.round(a)))])[:5]
            raise ConfigError(f"labels contains {bad.tolist()}, must be integers in 0..K-1.")
        return a.astype(np.int64)
    raise ConfigError(f"labels.dtype == {a.dtype}, must be an integer dtype.")


@dataclass(frozen=True)
class _Data:
    H: np.ndarray  # (N, D) float64
    y: np.ndarray  # (N,) int64 in 0..K-1
    K: int
    classes: np.ndarray  # (K,) original label of each kept class
    dtype: Any  # dtype the features came in
    K_orig: int  # number of classes before dropping empty ones


def _first_missing(present: np.ndarray, K: int, limit: int = 10) -> list[int]:
    """The first ``limit`` integers of ``0..K-1`` not in the sorted array ``present``."""
    out: list[int] = []
    j = 0
    for c in range(K):
        while j < present.size and present[j] < c:
            j += 1
        if j >= present.size or present[j] != c:
            out.append(c)
            if len(out) == limit:
                break
    return out


def _check_num_classes_and_labels(
    y: np.ndarray, num_classes: int | None, drop_empty: bool
) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """Validate labels against ``num_classes``; return ``(y, K, classes, counts)`` after optional dropping."""
    if y.size == 0:
        raise ConfigError("labels has 0 entries, must hold at least one sample per class.")
    lo, hi = int(y.min()), int(y.max())
    if num_classes is None:
        if lo < 0:
            raise ConfigError(f"labels contains {lo}, must be in 0..K-1 (non-negative integers).")
        K = hi + 1
    else:
        K = check_int("num_classes", num_classes, min=2)
        if lo < 0 or hi >= K:
            bad = np.unique(y[(y < 0) | (y >= K)])[:5].tolist()
            raise ConfigError(f"labels contains {bad}, must be in 0..{K - 1} (num_classes == {K}).")
    if K <= 4 * y.size + 1024:
        counts = np.bincount(y, minlength=K)
        present = np.flatnonzero(counts)
    else:  # far more classes than samples (e.g. a stray huge label): never allocate O(K)
        present, counts = np.unique(y, return_counts=True)
    n_empty = K - present.size
    classes = present
    if n_empty:
        empty = _first_missing(present, K)
        if not drop_empty:
            raise ConfigError(
                f"labels has no sample of class(es) {empty} (K == {K}, {n_empty} empty), must have at "
                "least one sample per class; pass drop_empty=True (CLI: --drop-empty-classes) to drop "
                "empty classes."
            )
        counts = counts[present] if counts.size == K else counts
        y = np.searchsorted(present, y)  # renumber kept classes 0..K'-1 in label order
        log.info("dropped %d empty classes, e.g. %s", n_empty, empty)
        K = int(classes.size)
    if K < 2:
        raise ConfigError(f"number of classes with samples == {K}, must be >= 2.")
    return y, K, classes, counts


def _prepare(
    features: ArrayLike, labels: ArrayLike, num_classes: int | None = None, drop_empty: bool = False
) -> _Data:
    dtype = _dtype_of(features)
    H = _as_float64(features, "features")
    if H.ndim != 2:
        raise ConfigError(f"features.shape == {tuple(H.shape)}, must be (N, D) (rows = samples).")
    if H.shape[1] == 0:
        raise ConfigError(f"features.shape == {tuple(H.shape)}, must have D >= 1 columns.")
    y = _as_labels(labels, H.shape[0], H.shape)
    check_finite_array("features", H)
    K_orig = int(y.max()) + 1 if num_classes is None else int(num_classes)
    y, K, classes, _ = _check_num_classes_and_labels(y, num_classes, drop_empty)
    return _Data(H=H, y=y, K=K, classes=classes, dtype=dtype, K_orig=K_orig)


# ------------------------------------------------------------------------------------------------------------
# Sufficient statistics ("moments") and the shared core
# ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Moments:
    """Sufficient statistics of (features, labels) from which every label-only metric follows.

    Attributes:
        counts: ``(K,)`` samples per class ``n_c`` (all > 0).
        means: ``(K, D)`` class means ``μ_c`` (rows).
        within_ss: ``(K,)`` within-class sums of squares ``Σ_{i∈c} ‖h_ci − μ_c‖²``
            (so ``tr Σ_W = Σ_c within_ss_c / N``).
        scatter: ``(D, D)`` within-class scatter ``N Σ_W = Σ_c Σ_{i∈c} (h_ci − μ_c)(h_ci − μ_c)^T`` or
        ``None`` (then ``nc1_pinv`` is not available).
        negatives: number of feature entries ``< 0`` (or ``None``).
        entries: number of feature entries ``N·D`` (or ``None``).
        dtype: the dtype the features came in (decides the default rank tolerance).
    """

    counts: np.ndarray
    means: np.ndarray
    within_ss: np.ndarray
    scatter: np.ndarray | None = None
    negatives: int | None = None
    entries: int | None = None
    dtype: Any = np.float64


def _class_sums(H: np.ndarray, y: np.ndarray, K: int) -> np.ndarray:
    """``(K, D)`` per-class sums, by a one-hot product (dense for small problems, sparse otherwise)."""
    N = H.shape[0]
    if N * K <= 4_000_000:
        onehot = np.zeros((K, N))
        onehot[y, np.arange(N)] = 1.0
        return onehot @ H
    from scipy import sparse

    onehot = sparse.csr_matrix((np.ones(N), (y, np.arange(N))), shape=(K, N))
    return np.asarray(onehot @ H)


def _moments(d: _Data, scatter: bool = True) -> Moments:
    counts = np.bincount(d.y, minlength=d.K).astype(np.float64)
    means = _class_sums(d.H, d.y, d.K) / counts[:, None]  # (K, D)
    R = d.H - means[d.y]  # (N, D) residuals h_i − μ_{y_i}
    within_ss = np.bincount(d.y, weights=np.einsum("nd,nd->n", R, R), minlength=d.K)
    S = R.T @ R if scatter else None  # (D, D)
    return Moments(
        counts=counts,
        means=means,
        within_ss=within_ss,
        scatter=S,
        negatives=int(np.count_nonzero(d.H < 0)),
        entries=int(d.H.size),
        dtype=d.dtype,
    )


def moments(
    features: ArrayLike,
    labels: ArrayLike,
    num_classes: int | None = None,
    *,
    drop_empty: bool = False,
    scatter: bool = True,
) -> Moments:
    """The :class:`Moments` of ``(features (N, D), labels (N,))``, exactly (two-pass, centred residuals)."""
    return _moments(_prepare(features, labels, num_classes, drop_empty), scatter=scatter)


def _global_mean(counts: np.ndarray | None, means: np.ndarray, weighted: bool) -> np.ndarray:
    if weighted and counts is not None:
        return (counts / counts.sum()) @ means
    return means.mean(axis=0)


def _sv(A: np.ndarray) -> np.ndarray:
    return np.linalg.svd(A, compute_uv=False)


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
    s = _sv(mu)  # singular values of M = mu.T (D, K), descending, min(K, D) of them
    tol_means = _tolerance(float(s[0]), (D, K), dtype, rtol)  # "is this (difference of) mean(s) zero"
    mu_G = _global_mean(n, mu, weighted)
    Mc = mu - mu_G  # (K, D) centred means
    tr_W = float(m.within_ss.sum()) / N
    tr_B = float(np.einsum("kd,kd->", Mc, Mc)) / K
    _, sB, Vt = np.linalg.svd(Mc, full_matrices=False)  # Σ_B = Vt^T diag(sB²/K) Vt
    # tr(Σ_B) underflows to exactly 0 for means ~1e-160 (a run collapsing to zero) while sB[0] > 0
    identical = bool(sB[0] <= tol_means) or tr_B == 0.0
    why_identical = "class means are identical (tr(Σ_B) = 0 within tolerance)"
    # Rank cut-offs from the *centred* means' scale: a common offset (features around 1e4 in float32) inflates
    # σ_1(M) and with it the dtype tolerance, which would otherwise drop real between-class directions.
    tol_centred = tol_means if identical else _tolerance(float(sB[0]), (D, K), dtype, rtol)

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
    out.set("nc2_orth_error", _frame_error(mu, centred=False), "all class means are zero")
    out.set("nc2_etf_error", math.nan if identical else _frame_error(Mc, centred=True), why_identical)
    out.set("equinorm", math.nan if identical else _equinorm(Mc), why_identical)
    out.set("equinorm_uncentered", _equinorm(mu), "all class means are zero")
    out.set("equiangularity", math.nan if identical else _equiangularity(Mc, tol_means), why_identical)
    out.set("effective_rank", _effective_rank(s), "all class means are zero")
    out.set("stable_rank", _stable_rank(s), "all class means are zero")
    if m.negatives is not None and m.entries:
        out.values["negative_fraction"] = m.negatives / m.entries
    return out


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
    """
    out = _core(m, weighted=weighted, rtol=rtol, dtype=dtype)
    return out.values, out.reasons


# ------------------------------------------------------------------------------------------------------------
# Means, covariances
# ------------------------------------------------------------------------------------------------------------


def class_means(
    features: ArrayLike, labels: ArrayLike, num_classes: int | None = None, *, drop_empty: bool = False
) -> np.ndarray:
    """Class means ``μ_c = (1/n_c) Σ_{i: y_i = c} h_i`` as rows, ``(K, D)`` float64 (``M =
    class_means(...).T``)."""
    d = _prepare(features, labels, num_classes, drop_empty)
    counts = np.bincount(d.y, minlength=d.K).astype(np.float64)
    return _class_sums(d.H, d.y, d.K) / counts[:, None]


def global_mean(
    features: ArrayLike,
    labels: ArrayLike,
    num_classes: int | None = None,
    *,
    weighted: bool = True,
    drop_empty: bool = False,
) -> np.ndarray:
    """Global mean ``μ_G (D,)``: ``(1/N) Σ_i h_i`` (``weighted=True``) or ``(1/K) Σ_c μ_c``
    (``weighted=False``).

    The two agree for balanced classes; the sample-weighted one makes ``Σ_c n_c (μ_c − μ_G) = 0``.
    """
    m = moments(features, labels, num_classes, drop_empty=drop_empty, scatter=False)
    return _global_mean(m.counts, m.means, weighted)


def within_class_cov(
    features: ArrayLike, labels: ArrayLike, num_classes: int | None = None, *, drop_empty: bool = False
) -> np.ndarray:
    """``Σ_W = (1/N) Σ_c Σ_{i∈c} (h_ci − μ_c)(h_ci − μ_c)^T``, ``(D, D)`` (population normalisation 1/N)."""
    m = moments(features, labels, num_classes, drop_empty=drop_empty)
    assert m.scatter is not None  # internal invariant: scatter=True above
    return m.scatter / m.counts.sum()


def between_class_cov(
    features: ArrayLike,
    labels: ArrayLike,
    num_classes: int | None = None,
    *,
    weighted: bool = True,
    drop_empty: bool = False,
) -> np.ndarray:
    """``Σ_B = (1/K) Σ_c (μ_c − μ_G)(μ_c − μ_G)^T``, ``(D, D)``; ``μ_G`` as in :func:`global_mean`."""
    m = moments(features, labels, num_classes, drop_empty=drop_empty, scatter=False)
    Mc = m.means - _global_mean(m.counts, m.means, weighted)
    return Mc.T @ Mc / Mc.shape[0]


# ------------------------------------------------------------------------------------------------------------
# NC1
# ------------------------------------------------------------------------------------------------------------


def _nc1_value(features, labels, num_classes, key, *, weighted=True, drop_empty=False, rtol=None) -> float:
    d = _prepare(features, labels, num_classes, drop_empty)
    m = _moments(d, scatter=(key == "nc1_pinv"))
    return float(_core(m, weighted=weighted, rtol=rtol).values[key])


def nc1_trace_ratio(
    features: ArrayLike,
    labels: ArrayLike,
    num_classes: int | None = None,
    *,
    weighted: bool = True,
    drop_empty: bool = False,
) -> float:
    """DNC1 of the 2024 paper (§6): ``tr(Σ_W) / tr(Σ_B)``; ``inf`` if all class means coincide."""
    return _nc1_value(
        features, labels, num_classes, "nc1_trace_ratio", weighted=weighted, drop_empty=drop_empty
    )


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
    """
    return _nc1_value(
        features, labels, num_classes, "nc1_pinv", weighted=weighted, drop_empty=drop_empty, rtol=rtol
    )


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
    """
    return _nc1_value(features, labels, num_classes, "cdnv", drop_empty=drop_empty)


# ------------------------------------------------------------------------------------------------------------
# NC2 and spectra
# ------------------------------------------------------------------------------------------------------------


def _means_of(
    features: ArrayLike,
    labels: ArrayLike | None,
    num_classes: int | None,
    drop_empty: bool,
) -> tuple[np.ndarray, np.ndarray | None, Any]:
    """``(means (K, D), counts or None, dtype)`` from (features, labels) or from a means matrix alone."""
    dtype = _dtype_of(features)
    if labels is None:
        mu = _as_float64(features, "means")
        if mu.ndim != 2:
            raise ConfigError(f"means.shape == {tuple(mu.shape)}, must be (K, D) (one class mean per row).")
        if mu.shape[0] < 2:
            raise ConfigError(f"means.shape == {tuple(mu.shape)}, must have K >= 2 rows.")
        check_finite_array("means", mu)
        return mu, None, dtype
    m = moments(features, labels, num_classes, drop_empty=drop_empty, scatter=False)
    return m.means, m.counts, dtype


def _frame_error(A: np.ndarray, centred: bool) -> float:
    """``‖G/‖G‖_F − T/‖T‖_F‖_F`` with ``G = A A^T`` and ``T = I_K`` or ``I_K − 11^T/K`` (``centred``)."""
    K = A.shape[0]
    G = A @ A.T
    nG = np.linalg.norm(G)
    if nG == 0.0:
        return math.nan
    T = np.eye(K) - (np.full((K, K), 1.0 / K) if centred else 0.0)
    return float(np.linalg.norm(G / nG - T / np.linalg.norm(T)))


def nc2_cond(
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    rtol: float | None = None,
    drop_empty: bool = False,
) -> float:
    """Bias-free DNC2 metric (2024 paper §6): condition number ``σ_1 / σ_K`` of the uncentred ``M (D, K)``.

    1 exactly for an orthogonal frame with equal norms (``M^T M ∝ I_K``).  ``inf`` if ``M`` has numerical rank
    below ``K`` (tolerance :func:`deepcollapse._checks.rank_tolerance` for the features' dtype, or ``rtol``),
    in particular whenever ``D < K``.  ``labels=None``: ``features`` is the means matrix ``(K, D)`` itself.
    """
    mu, counts, dtype = _means_of(features, labels, num_classes, drop_empty)
    s = _sv(mu)
    K = mu.shape[0]
    tol = _tolerance(float(s[0]), mu.shape[::-1], dtype, rtol)
    if rtol is None and s.size >= K:  # the dtype tolerance on the centred means' scale (see _core)
        sB = _sv(mu - _global_mean(counts, mu, True))
        if sB[0] > tol:
            tol = min(tol, _tolerance(float(sB[0]), mu.shape[::-1], dtype, None))
    if s.size < K or s[-1] <= tol:
        return math.inf
    return float(s[0] / s[-1])


def nc2_orth_error(
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    drop_empty: bool = False,
) -> float:
    """Distance of the normalised uncentred Gram matrix to the orthogonal frame: ``‖G/‖G‖_F − I_K/√K‖_F``.

    ``G = M^T M`` (uncentred class means; the bias-free DNC2 target ``M^T M ∝ I_K``).  In ``[0, 2]``; 0 iff
    the means are orthogonal with equal norms.  ``nan`` if all means are zero.
    """
    mu, _, _ = _means_of(features, labels, num_classes, drop_empty)
    return _frame_error(mu, centred=False)


def nc2_etf_error(
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    weighted: bool = True,
    drop_empty: bool = False,
) -> float:
    """Distance to the simplex ETF (Papyan et al. 2020, NC2 with biases): ``‖G_c/‖G_c‖_F − (I −
    11^T/K)/√(K−1)‖_F``.

    ``G_c = M_c^T M_c`` with the centred means ``μ_c − μ_G``.  0 iff the centred means form a simplex ETF.
    ``nan`` if all means coincide.
    """
    mu, counts, _ = _means_of(features, labels, num_classes, drop_empty)
    Mc = mu - _global_mean(counts, mu, weighted)
    return _frame_error(Mc, centred=True)


def _equinorm(A: np.ndarray) -> float:
    norms = np.linalg.norm(A, axis=1)
    mean = norms.mean()
    return math.nan if mean == 0.0 else float(norms.std() / mean)


def _equiangularity(A: np.ndarray, tol: float = 0.0) -> float:
    norms = np.linalg.norm(A, axis=1)
    if np.any(norms <= tol):
        return math.nan
    U = A / norms[:, None]
    C = U @ U.T
    iu = np.triu_indices(A.shape[0], k=1)
    return float(C[iu].std())


def equinorm(
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    centered: bool = True,
    weighted: bool = True,
    drop_empty: bool = False,
) -> float:
    """Equinorm (Papyan et al. 2020): ``std_c ‖a_c‖ / mean_c ‖a_c‖`` (population std).

    ``a_c = μ_c − μ_G`` (``centered=True``, the ETF convention) or ``a_c = μ_c`` (bias-free orthogonal frame).
    """
    mu, counts, _ = _means_of(features, labels, num_classes, drop_empty)
    A = mu - _global_mean(counts, mu, weighted) if centered else mu
    return _equinorm(A)


def equiangularity(
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    centered: bool = True,
    weighted: bool = True,
    drop_empty: bool = False,
) -> float:
    """Equiangularity (Papyan et al. 2020): population std over pairs ``c < c'`` of ``cos∠(a_c, a_c')``.

    ``a_c`` as in :func:`equinorm`.  0 for a simplex ETF (centred) or an orthogonal frame (uncentred);
    ``nan`` if some ``a_c`` is zero.
    """
    mu, counts, _ = _means_of(features, labels, num_classes, drop_empty)
    A = mu - _global_mean(counts, mu, weighted) if centered else mu
    return _equiangularity(A)


def class_mean_gram(
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    normalize: str = "max",
    centered: bool = False,
    weighted: bool = True,
    drop_empty: bool = False,
) -> np.ndarray:
    """Gram matrix ``G = M^T M`` of the class means, ``(K, K)`` (``G_cc' = ⟨μ_c, μ_c'⟩``).

    ``normalize``: ``"none"``; ``"max"`` divides by ``max |G|`` (default; the way the papers plot Gram
    matrices); ``"fro"`` by ``‖G‖_F``; ``"cosine"`` gives ``cos∠(μ_c, μ_c')``.
    ``centered=True`` uses ``μ_c − μ_G``.
    """
    check_choice("normalize", normalize, ("none", "max", "fro", "cosine"))
    mu, counts, _ = _means_of(features, labels, num_classes, drop_empty)
    A = mu - _global_mean(counts, mu, weighted) if centered else mu
    G = A @ A.T
    if normalize == "none":
        return G
    if normalize == "cosine":
        d = np.sqrt(np.diag(G))
        with np.errstate(divide="ignore", invalid="ignore"):
            return G / np.outer(d, d)
    scale = np.abs(G).max() if normalize == "max" else np.linalg.norm(G)
    return G / scale if scale > 0 else np.full_like(G, np.nan)


def singular_values(matrix: ArrayLike) -> np.ndarray:
    """Singular values of a 2-D matrix in descending order (float64)."""
    A = _as_float64(matrix, "matrix")
    if A.ndim != 2:
        raise ConfigError(f"matrix.shape == {tuple(A.shape)}, must be 2-D.")
    check_finite_array("matrix", A)
    return _sv(A)


def numerical_rank(matrix: ArrayLike, *, rtol: float | None = None, dtype: Any = None) -> int:
    """Number of singular values ``σ_i > tol`` with ``tol = rank_tolerance(σ_1, shape, dtype, rtol)``.

    Default ``tol = max(shape) · eps(dtype) · σ_1`` (numpy ``matrix_rank``), with ``dtype`` the dtype the
    matrix was computed in (default: the matrix's own dtype, so float32 input gets eps = 1.2e-7).  ``rtol``
    gives ``tol = rtol · σ_1`` (e.g. ``rtol=1e-3`` for "numerically low rank" after finite training).  0 for a
    zero matrix.
    """
    dtype = _dtype_of(matrix) if dtype is None else dtype
    s = singular_values(matrix)
    if s.size == 0 or s[0] == 0.0:
        return 0
    A_shape = tuple(np.shape(matrix))
    return int(np.count_nonzero(s > _tolerance(float(s[0]), A_shape, dtype, rtol)))


def _effective_rank(s: np.ndarray) -> float:
    total = float(s.sum())
    if total == 0.0:
        return math.nan
    p = s[s > 0] / total
    return float(np.exp(-np.sum(p * np.log(p))))


def _stable_rank(s: np.ndarray) -> float:
    return math.nan if s.size == 0 or s[0] == 0.0 else float(np.sum(s**2) / s[0] ** 2)


def effective_rank(matrix: ArrayLike) -> float:
    """Effective rank (Roy & Vetterli 2007): ``exp(H(p))``, ``p_i = σ_i / Σ_j σ_j``, ``H = −Σ p_i log p_i``.

    Singular values are normalised by their **sum** (L1, not squares); ``0 log 0 = 0``.  Lies in ``[1,
    rank]``; equals ``r`` for ``r`` equal non-zero singular values.  ``nan`` for the zero matrix.
    """
    return _effective_rank(singular_values(matrix))


def stable_rank(matrix: ArrayLike) -> float:
    """Stable rank ``‖A‖_F² / ‖A‖_2² = Σ σ_i² / σ_1²`` (``nan`` for the zero matrix)."""
    return _stable_rank(singular_values(matrix))


def negative_fraction(features: ArrayLike) -> float:
    """Fraction of entries ``< 0`` (for pre-activations: the share a following ReLU sets to zero)."""
    H = _as_float64(features, "features")
    if H.size == 0:
        raise ConfigError(f"features.shape == {tuple(H.shape)}, must be non-empty.")
    check_finite_array("features", H)
    return float(np.count_nonzero(H < 0) / H.size)


# ------------------------------------------------------------------------------------------------------------
# NC3 (weights vs means) and NC4 (nearest class centre)
# ------------------------------------------------------------------------------------------------------------


def _as_weights(weights: ArrayLike, D: int) -> np.ndarray:
    W = _as_float64(weights, "weights")
    if W.ndim != 2 or W.shape[1] != D:
        raise ConfigError(
            f"weights.shape == {tuple(W.shape)}, must be (P, {D}) to match features with D == {D}."
        )
    check_finite_array("weights", W)
    return W


def _nc3_alignment(W: np.ndarray, mu: np.ndarray) -> float:
    wn = np.linalg.norm(W, axis=1)
    keep = wn > 0
    mn = np.linalg.norm(mu, axis=1)
    if not keep.any() or not np.any(mn > 0):
        return math.nan
    U = mu[mn > 0] / mn[mn > 0, None]
    cos = (W[keep] / wn[keep, None]) @ U.T  # (P', K')
    sin2 = 1.0 - np.max(cos**2, axis=1)
    w2 = wn[keep] ** 2
    return float(np.clip(np.sum(w2 * sin2) / np.sum(w2), 0.0, 1.0))


def nc3_alignment(
    weights: ArrayLike,
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    drop_empty: bool = False,
) -> float:
    """DNC3 of the 2024 paper (Def. "DNC3"): rows of ``W (P, D)`` are 0 or collinear with a column of ``M``.

    Score ``Σ_j ‖w_j‖² sin²θ_j / Σ_j ‖w_j‖²`` with ``θ_j`` the smallest angle between row ``w_j`` and the
    lines spanned by the class means (``cos²θ_j = max_c ⟨w_j, μ_c⟩² / (‖w_j‖² ‖μ_c‖²)``; sign ignored, zero
    rows and zero means skipped).  In ``[0, 1]``; 0 iff DNC3 holds.  ``W`` is the weight matrix *applied to*
    these features (``W_l`` for features ``H_l``; the classifier ``W_L (K, D)`` for the last layer).
    """
    mu, _, _ = _means_of(features, labels, num_classes, drop_empty)
    return _nc3_alignment(_as_weights(weights, mu.shape[1]), mu)


def _self_duality(W: np.ndarray, A: np.ndarray) -> float:
    nW, nA = np.linalg.norm(W), np.linalg.norm(A)
    if nW == 0.0 or nA == 0.0:
        return math.nan
    return float(np.linalg.norm(W / nW - A / nA) ** 2)


def self_duality(
    weights: ArrayLike,
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    centered: bool = True,
    weighted: bool = True,
    drop_empty: bool = False,
) -> float:
    """NC3 self-duality (Papyan et al. 2020): ``‖W/‖W‖_F − A/‖A‖_F‖_F²`` for the classifier ``W (K, D)``.

    ``A`` holds the centred means ``μ_c − μ_G`` as rows (``centered=True``) or the uncentred ``μ_c``
    (bias-free). In ``[0, 4]``; 0 iff the classifier rows are the (centred) class means up to one global
    scale.
    """
    mu, counts, _ = _means_of(features, labels, num_classes, drop_empty)
    W = _as_weights(weights, mu.shape[1])
    if W.shape[0] != mu.shape[0]:
        raise ConfigError(
            f"weights.shape == {tuple(W.shape)}, must be (K, D) == {mu.shape} for self-duality."
        )
    A = mu - _global_mean(counts, mu, weighted) if centered else mu
    return _self_duality(W, A)


def _wh_etf_error(W: np.ndarray, A: np.ndarray) -> float:
    K = A.shape[0]
    G = W @ A.T  # (K, K): classifier rows against centred class means
    nG = np.linalg.norm(G)
    if nG == 0.0:
        return math.nan
    T = (np.eye(K) - np.full((K, K), 1.0 / K)) / math.sqrt(K - 1)  # simplex ETF Gram, ‖T‖_F = 1
    return float(np.linalg.norm(G / nG - T))


def wh_etf_error(
    weights: ArrayLike,
    features: ArrayLike,
    labels: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    weighted: bool = True,
    drop_empty: bool = False,
) -> float:
    """Zhu et al. (2021)'s W–H relation: ``‖W M̄ᵀ/‖W M̄ᵀ‖_F − (I_K − 11ᵀ/K)/√(K−1)‖_F``.

    ``W (K, D)`` the classifier, ``M̄ (K, D)`` the centred class means as rows.  0 iff ``W M̄ᵀ`` is a multiple
    of the simplex-ETF Gram matrix.  Not Papyan's self-duality (:func:`self_duality` compares ``W`` with
    ``M̄`` entrywise); some libraries call this one "self-duality" too (conventions table in docs/formulas.md).
    """
    mu, counts, _ = _means_of(features, labels, num_classes, drop_empty)
    W = _as_weights(weights, mu.shape[1])
    if W.shape[0] != mu.shape[0]:
        raise ConfigError(
            f"weights.shape == {tuple(W.shape)}, must be (K, D) == {mu.shape} for the W–H relation."
        )
    return _wh_etf_error(W, mu - _global_mean(counts, mu, weighted))


def ncc_predict(features: ArrayLike, means: ArrayLike) -> np.ndarray:
    """Nearest-class-centre predictions ``argmin_c ‖h_i − μ_c‖`` (ties → smallest index), ``(N,)`` int."""
    H = _as_float64(features, "features")
    mu = _as_float64(means, "means")
    if H.ndim != 2 or mu.ndim != 2 or H.shape[1] != mu.shape[1]:
        raise ConfigError(
            f"means.shape == {tuple(mu.shape)}, must be (K, D) with D matching "
            f"features.shape == {tuple(H.shape)}."
        )
    return _ncc_predict(H, mu)


def _ncc_predict(H: np.ndarray, mu: np.ndarray) -> np.ndarray:
    # ‖h − μ_c‖² = ‖h‖² − 2⟨h, μ_c⟩ + ‖μ_c‖²; the first term does not depend on c
    d = np.einsum("kd,kd->k", mu, mu)[None, :] - 2.0 * (H @ mu.T)  # (N, K)
    return np.argmin(d, axis=1)


def _classifier_predict(H: np.ndarray, W: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    z = H @ W.T  # (N, K)
    if bias is not None:
        z = z + bias
    return np.argmax(z, axis=1)


def ncc_accuracy(
    features: ArrayLike, labels: ArrayLike, num_classes: int | None = None, *, drop_empty: bool = False
) -> float:
    """Accuracy of the nearest-class-centre classifier built from the same data's class means (NC4)."""
    d = _prepare(features, labels, num_classes, drop_empty)
    mu = _class_sums(d.H, d.y, d.K) / np.bincount(d.y, minlength=d.K)[:, None]
    return float(np.mean(_ncc_predict(d.H, mu) == d.y))


def _as_bias(bias: ArrayLike | None, K: int) -> np.ndarray | None:
    if bias is None:
        return None
    b = _as_float64(bias, "bias").reshape(-1)
    if b.shape != (K,):
        raise ConfigError(f"bias.shape == {tuple(np.shape(bias))}, must be ({K},).")
    return b


def nc4_agreement(
    features: ArrayLike,
    labels: ArrayLike,
    weights: ArrayLike,
    bias: ArrayLike | None = None,
    num_classes: int | None = None,
    *,
    drop_empty: bool = False,
) -> float:
    """NC4 (Papyan et al. 2020): fraction of samples where the classifier ``argmax_c (W h + b)_c`` equals the
    NCC prediction ``argmin_c ‖h − μ_c‖`` (means from ``(features, labels)``).
    ``weights (K, D)``, ``bias (K,)``."""
    d = _prepare(features, labels, num_classes, drop_empty)
    W = _as_weights(weights, d.H.shape[1])
    if W.shape[0] != d.K:
        raise ConfigError(f"weights.shape == {tuple(W.shape)}, must be (K, D) with K == {d.K} for NC4.")
    mu = _class_sums(d.H, d.y, d.K) / np.bincount(d.y, minlength=d.K)[:, None]
    return float(np.mean(_ncc_predict(d.H, mu) == _classifier_predict(d.H, W, _as_bias(bias, d.K))))


# ------------------------------------------------------------------------------------------------------------
# Everything at once
# ------------------------------------------------------------------------------------------------------------

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


def _weight_metrics(
    W: np.ndarray | None, m: Moments, weighted: bool, values: dict[str, Any], reasons: dict[str, str]
) -> None:
    values["nc3_alignment"] = values["self_duality"] = values["wh_etf_error"] = None
    if W is None:
        return
    mu = m.means
    v = _nc3_alignment(W, mu)
    values["nc3_alignment"] = v
    if not math.isfinite(v):
        reasons["nc3_alignment"] = "weights or class means are all zero"
    if W.shape[0] == mu.shape[0]:
        A = mu - _global_mean(m.counts, mu, weighted)
        v = _self_duality(W, A)
        values["self_duality"] = v
        if not math.isfinite(v):
            reasons["self_duality"] = "weights are zero or class means are identical"
        v = _wh_etf_error(W, A)
        values["wh_etf_error"] = v
        if not math.isfinite(v):
            reasons["wh_etf_error"] = "W M^T is zero (weights zero or class means identical)"
    else:
        reasons["self_duality"] = f"weights have {W.shape[0]} rows, not K = {mu.shape[0]} (not a classifier)"
        reasons["nc4_agreement"] = reasons["self_duality"]


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
    """
    d = _prepare(features, labels, num_classes, drop_empty)
    m = _moments(d, scatter=pinv)
    out = _core(m, weighted=weighted, rtol=rtol, dtype=dtype)
    values, reasons = out.values, out.reasons
    W = None if weights is None else _as_weights(weights, d.H.shape[1])
    dropped = d.K != d.K_orig
    if W is not None and dropped and W.shape[0] == d.K_orig:
        W = W[d.classes]  # a classifier over the original classes: keep the rows of the kept classes
    if bias is not None and dropped and np.size(bias) == d.K_orig:
        bias = _as_float64(bias, "bias").reshape(-1)[d.classes]
    _weight_metrics(W, m, weighted, values, reasons)
    pred = _ncc_predict(d.H, m.means)
    values["ncc_accuracy"] = float(np.mean(pred == d.y))
    values["nc4_agreement"] = None
    if W is not None and W.shape[0] == d.K:
        values["nc4_agreement"] = float(np.mean(pred == _classifier_predict(d.H, W, _as_bias(bias, d.K))))
    return finalize(values, reasons, counts=m.counts, dim=d.H.shape[1], classes=d.classes)
