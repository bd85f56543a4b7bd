"""Input handling shared by every collapse metric (conventions in :mod:`deepcollapse.metrics.functional`).

numpy arrays / torch tensors → float64 numpy, integer labels checked against ``K`` (empty classes dropped on
request), weights and biases checked against the features' shapes, dtype-aware rank tolerances.  Bad input
raises :class:`~deepcollapse._core.checks.ConfigError` in the ``"<field> == <value>, must be ..."`` format.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError, check_finite_array, check_int, rank_tolerance

log = logging.getLogger("deepcollapse.metrics.functional")  # the public module, as before the split

ArrayLike = Any  # numpy array or torch tensor


def dtype_of(x: Any) -> Any:
    """The dtype a numpy array / torch tensor came in (used for dtype-aware rank tolerances)."""
    return getattr(x, "dtype", np.float64)


def _dtype_name(dtype: Any) -> str:
    """``"float32"`` for ``np.float32``, ``np.dtype("float32")``, ``torch.float32`` or ``"float32"``.

    ``_core.checks.rank_tolerance`` maps dtypes by name; a numpy scalar *type* (``np.float32``) has no usable
    ``str``, so normalise here.
    """
    if dtype is None:
        return "float64"
    try:
        return np.dtype(dtype).name
    except TypeError:  # torch dtypes and the like
        return str(dtype).replace("torch.", "")


def rank_tol(s_max: float, shape: tuple[int, int], dtype: Any, rtol: float | None) -> float:
    return rank_tolerance(s_max, shape, _dtype_name(dtype), rtol)


def as_float64(x: ArrayLike, name: str) -> np.ndarray:
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
class Data:
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


def prepare(
    features: ArrayLike, labels: ArrayLike, num_classes: int | None = None, drop_empty: bool = False
) -> Data:
    dtype = dtype_of(features)
    H = as_float64(features, "features")
    if H.ndim != 2:
        raise ConfigError(f"features.shape == {tuple(H.shape)}, must be (N, D) (rows = samples).")
    if H.shape[1] == 0:
        raise ConfigError(f"features.shape == {tuple(H.shape)}, must have D >= 1 columns.")
    y = _as_labels(labels, H.shape[0], H.shape)
    check_finite_array("features", H)
    K_orig = int(y.max()) + 1 if num_classes is None else int(num_classes)
    y, K, classes, _ = _check_num_classes_and_labels(y, num_classes, drop_empty)
    return Data(H=H, y=y, K=K, classes=classes, dtype=dtype, K_orig=K_orig)


def as_weights(weights: ArrayLike, D: int) -> np.ndarray:
    W = as_float64(weights, "weights")
    if W.ndim != 2 or W.shape[1] != D:
        raise ConfigError(
            f"weights.shape == {tuple(W.shape)}, must be (P, {D}) to match features with D == {D}."
        )
    check_finite_array("weights", W)
    return W


def as_bias(bias: ArrayLike | None, K: int) -> np.ndarray | None:
    if bias is None:
        return None
    b = as_float64(bias, "bias").reshape(-1)
    if b.shape != (K,):
        raise ConfigError(f"bias.shape == {tuple(np.shape(bias))}, must be ({K},).")
    return b


def restrict_to_kept(
    W: np.ndarray | None, bias: ArrayLike | None, classes: np.ndarray, K_orig: int
) -> tuple[np.ndarray | None, ArrayLike | None]:
    """A classifier ``W (K_orig, D)`` (and bias ``(K_orig,)``) over the original classes, restricted to the
    rows of the kept ``classes`` when empty classes were dropped; anything else is returned unchanged."""
    if classes.size == K_orig:  # nothing dropped
        return W, bias
    if W is not None and W.shape[0] == K_orig:
        W = W[classes]
    if bias is not None and np.size(bias) == K_orig:
        bias = as_float64(bias, "bias").reshape(-1)[classes]
    return W, bias
