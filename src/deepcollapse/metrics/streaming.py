"""Streaming collapse statistics: sum-reducible state, exact results.

:class:`CollapseStatistics` accumulates, in float64,

* ``counts (K,)``: samples per class ``n_c``,
* ``sums (K, D)``: ``T_c = Σ_{i∈c} (h_i − s_c)``,
* ``sqsums (K,)``: ``q_c = Σ_{i∈c} ‖h_i − s_c‖²``,
* ``outer (D, D)``: ``S = Σ_i (h_i − s_{y_i})(h_i − s_{y_i})^T`` (one total matrix, not one per class),
* ``negatives``, ``entries``: entries ``< 0`` and total entries (fraction of negative pre-activations),

where ``s_c`` is a per-class **shift**.  From these, ``μ_c = s_c + T_c/n_c``,
``N Σ_W = S − Σ_c n_c d_c d_c^T`` and ``Σ_{i∈c} ‖h_i − μ_c‖² = q_c − n_c ‖d_c‖²`` with ``d_c = T_c/n_c``;
then the *same* functional core as :func:`deepcollapse.metrics.functional.collapse_metrics` turns them into
metrics.

Why a shift: a collapsed layer has within-class scatter many orders of magnitude below ``Σ_i h_i h_i^T``, so
the raw "sum of outer products minus outer product of sums" formula cancels catastrophically (NC1 of 1e-12
would come out as rounding noise).  With ``s_c`` close to ``μ_c`` nothing large cancels.  ``shift="first"``
(default) uses the class mean of the first batch that contains the class; ``shift=None`` uses ``s_c = 0``
(plain raw sums); an explicit ``(K, D)`` array fixes it.  States with the same shift combine by plain addition
of every field (e.g. ``torch.distributed.all_reduce`` of each array); :meth:`CollapseStatistics.merge` also
combines states with different shifts, exactly, by re-centring the other state's sums
(``h − a = (h − b) + (b − a)``).

NC4 / NCC accuracy need the class means *before* the samples are classified, i.e. a second pass:
:meth:`CollapseStatistics.ncc_statistics` returns an :class:`NCCStatistics` (running counts of correct NCC
predictions and of NCC/classifier agreement, also sum-reducible) to feed the data again, and
:func:`two_pass_metrics` does both passes over a re-iterable loader.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError, check_int
from deepcollapse._core.docs import fill_doc
from deepcollapse.metrics._inputs import (
    ArrayLike,
    _dtype_name,
    as_bias,
    as_float64,
    as_weights,
    dtype_of,
    restrict_to_kept,
)
from deepcollapse.metrics.classifier import classifier_predict, ncc_predict_of
from deepcollapse.metrics.collapse import CollapseMetrics, finalize, weight_metrics
from deepcollapse.metrics.core import _core
from deepcollapse.metrics.means import Moments, class_sums

__all__ = ["CollapseStatistics", "NCCStatistics", "two_pass_metrics"]

log = logging.getLogger(__name__)


def _batch(features: ArrayLike, labels: ArrayLike, K: int, D: int) -> tuple[np.ndarray, np.ndarray, str]:
    """Validate one batch: ``(H (B, D) float64, y (B,) int64 in 0..K-1, dtype name)``."""
    dtype = _dtype_name(dtype_of(features))
    H = as_float64(features, "features")
    if H.ndim != 2 or H.shape[1] != D:
        raise ConfigError(f"features.shape == {tuple(H.shape)}, must be (B, {D}) (dim == {D}).")
    if hasattr(labels, "detach"):
        labels = labels.detach().cpu().numpy()
    y = np.asarray(labels)
    if y.ndim != 1 or y.shape[0] != H.shape[0]:
        raise ConfigError(
            f"labels.shape == {tuple(y.shape)}, must be ({H.shape[0]},) to match features.shape == {H.shape}."
        )
    if y.size and y.dtype.kind not in "iu":
        if y.dtype.kind == "f" and np.all(y == np.round(y)):
            y = y.astype(np.int64)
        else:
            raise ConfigError(f"labels.dtype == {y.dtype}, must be an integer dtype.")
    y = y.astype(np.int64, copy=False)
    if y.size and (y.min() < 0 or y.max() >= K):
        bad = np.unique(y[(y < 0) | (y >= K)])[:5].tolist()
        raise ConfigError(f"labels contains {bad}, must be in 0..{K - 1} (num_classes == {K}).")
    if not np.all(np.isfinite(H)):
        raise ConfigError(
            f"features has {int(np.count_nonzero(~np.isfinite(H)))} non-finite entries (NaN or inf), "
            "must be all finite."
        )
    return H, y, dtype


def _coarser(a: str | None, b: str) -> str:
    """The dtype name with the larger machine epsilon (decides the default rank tolerance)."""
    if a is None:
        return b

    def eps(name: str) -> float:
        try:
            return float(np.finfo(np.dtype(name)).eps)
        except TypeError:
            return float(np.finfo(np.float16).eps) if "16" in name else float(np.finfo(np.float64).eps)

    return a if eps(a) >= eps(b) else b


class CollapseStatistics:
    """Sum-reducible statistics of ``(features, labels)`` batches; ``compute()`` = ``collapse_metrics``.

    Args:
        num_classes: ``K``.
        dim: feature dimension ``D``.
        shift: ``"first"`` (default), ``None`` (zero shift, raw sums) or a ``(K, D)`` array (module docs).
        outer: keep the ``D × D`` sum of outer products (needed only for ``nc1_pinv``; ``D²`` floats of memory
            and an ``O(B D²)`` product per batch).  ``False`` keeps ``O(K D)`` state.

    Example::

        stats = CollapseStatistics(num_classes=10, dim=512)
        for x, y in loader:
            stats.update(features(x), y)
        metrics = stats.compute()                      # everything except NCC accuracy / NC4
        ncc = stats.ncc_statistics(weights=W)
        for x, y in loader:
            ncc.update(features(x), y)
        metrics = stats.compute(ncc=ncc, weights=W)    # == collapse_metrics(all features, all labels, W)
    """

    def __init__(self, num_classes: int, dim: int, *, shift: Any = "first", outer: bool = True) -> None:
        self.num_classes = K = check_int("num_classes", num_classes, min=2)
        self.dim = D = check_int("dim", dim, min=1)
        self.counts = np.zeros(K, dtype=np.int64)
        self.sums = np.zeros((K, D))
        self.sqsums = np.zeros(K)
        self.outer: np.ndarray | None = np.zeros((D, D)) if outer else None
        self.negatives = 0
        self.entries = 0
        self.dtype: str | None = None
        if isinstance(shift, str):
            if shift != "first":
                raise ConfigError(f"shift == {shift!r}, must be 'first', None or a ({K}, {D}) array.")
            self.shift = np.zeros((K, D))
            self.shift_set = np.zeros(K, dtype=bool)
        elif shift is None:
            self.shift = np.zeros((K, D))
            self.shift_set = np.ones(K, dtype=bool)
        else:
            s = as_float64(shift, "shift")
            if s.shape != (K, D) or not np.all(np.isfinite(s)):
                raise ConfigError(f"shift.shape == {s.shape}, must be a finite ({K}, {D}) array.")
            self.shift = s.copy()
            self.shift_set = np.ones(K, dtype=bool)

    # -- accumulation
    # ---------------------------------------------------------------------------------------------

    def update(self, features: ArrayLike, labels: ArrayLike) -> CollapseStatistics:
        """Add a batch ``features (B, D)``, ``labels (B,)`` (numpy or torch, any device; made float64).

        Parameters
        ----------
        features : array_like, (B, D)
            The batch's features, one sample per row.
        labels : array_like of int, (B,)
            Their labels in ``0..K-1``.

        Returns
        -------
        CollapseStatistics
            ``self`` (so that calls chain).

        Examples
        --------
        >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
        >>> CollapseStatistics(2, 2).update(H, y).counts
        array([2, 2])
        """
        K, D = self.num_classes, self.dim
        H, y, dtype = _batch(features, labels, K, D)
        if H.shape[0] == 0:
            return self
        self.dtype = _coarser(self.dtype, dtype)
        n = np.bincount(y, minlength=K)
        new = (n > 0) & ~self.shift_set
        if new.any():  # shift="first": centre each class on its mean in the first batch that contains it
            self.shift[new] = (class_sums(H, y, K) / np.maximum(n, 1)[:, None])[new]
            self.shift_set[new] = True
        Hs = H - self.shift[y]  # (B, D) shifted features
        self.counts += n
        self.sums += class_sums(Hs, y, K)
        self.sqsums += np.bincount(y, weights=np.einsum("bd,bd->b", Hs, Hs), minlength=K)
        if self.outer is not None:
            self.outer += Hs.T @ Hs
        self.negatives += int(np.count_nonzero(H < 0))
        self.entries += int(H.size)
        return self

    def merge(self, other: CollapseStatistics) -> CollapseStatistics:
        """Add ``other``'s data to ``self`` (in place; returns ``self``).  Exact for any two shifts.

        Parameters
        ----------
        other : CollapseStatistics
            Statistics of other data, same ``num_classes`` and ``dim`` (not changed).

        Returns
        -------
        CollapseStatistics
            ``self``.

        Examples
        --------
        >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
        >>> a = CollapseStatistics(2, 2).update(H[:2], y[:2])
        >>> a.merge(CollapseStatistics(2, 2).update(H[2:], y[2:])).compute().nc1_trace_ratio
        0.5
        """
        if not isinstance(other, CollapseStatistics):
            raise ConfigError(f"other == {type(other).__name__}, must be a CollapseStatistics.")
        if (other.num_classes, other.dim) != (self.num_classes, self.dim):
            raise ConfigError(
                f"other has (num_classes, dim) == {(other.num_classes, other.dim)}, must be "
                f"{(self.num_classes, self.dim)} to merge."
            )
        if (self.outer is None) != (other.outer is None):
            raise ConfigError(
                "other.outer is kept by one state only, must be kept by both (outer=True) or neither"
            )
        n = other.counts.astype(np.float64)
        has = other.counts > 0
        adopt = has & ~self.shift_set  # classes self has not seen: take other's shift as is
        self.shift[adopt] = other.shift[adopt]
        self.shift_set |= adopt
        T, q = other.sums.copy(), other.sqsums.copy()
        S = None if other.outer is None else other.outer.copy()
        delta = np.where(has[:, None], other.shift - self.shift, 0.0)  # (K, D): re-centre h − a = (h − b) + δ
        if np.any(delta != 0.0):
            q += 2.0 * np.einsum("kd,kd->k", delta, T) + n * np.einsum("kd,kd->k", delta, delta)
            if S is not None:
                S += T.T @ delta + delta.T @ T + delta.T @ (n[:, None] * delta)
            T += n[:, None] * delta
        self.counts += other.counts
        self.sums += T
        self.sqsums += q
        if self.outer is not None and S is not None:
            self.outer += S
        self.negatives += other.negatives
        self.entries += other.entries
        if other.dtype is not None:
            self.dtype = _coarser(self.dtype, other.dtype)
        return self

    #: State fields that combine across workers by plain addition (when the shifts agree).
    SUM_FIELDS = ("counts", "sums", "sqsums", "outer", "negatives", "entries")

    def state_dict(self) -> dict[str, Any]:
        """The state as plain arrays/ints (copies): ``SUM_FIELDS`` plus ``shift``, ``shift_set``, ``dtype``.

        For an all-reduce across workers/devices, give every worker the same explicit ``shift`` (or
        ``shift=None``), sum each of ``SUM_FIELDS`` and :meth:`load_state_dict` the result.

        Returns
        -------
        dict
            ``{field: array or int or str}``: ``SUM_FIELDS``, ``shift``, ``shift_set`` and ``dtype``.

        Examples
        --------
        >>> sorted(CollapseStatistics(2, 2).state_dict())
        ['counts', 'dtype', 'entries', 'negatives', 'outer', 'shift', 'shift_set', 'sqsums', 'sums']
        """
        state: dict[str, Any] = {k: getattr(self, k) for k in self.SUM_FIELDS}
        state.update(shift=self.shift, shift_set=self.shift_set, dtype=self.dtype)
        return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in state.items()}

    def load_state_dict(self, state: dict[str, Any]) -> CollapseStatistics:
        """Replace the state by ``state`` (from :meth:`state_dict`, possibly summed over workers).

        Parameters
        ----------
        state : dict
            As :meth:`state_dict` returns it (the shapes are checked).

        Returns
        -------
        CollapseStatistics
            ``self``.

        Examples
        --------
        >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
        >>> state = CollapseStatistics(2, 2).update(H, y).state_dict()
        >>> CollapseStatistics(2, 2).load_state_dict(state).counts
        array([2, 2])
        """
        K, D = self.num_classes, self.dim
        shapes = {"counts": (K,), "sums": (K, D), "sqsums": (K,), "shift": (K, D), "shift_set": (K,)}
        if self.outer is not None:
            shapes["outer"] = (D, D)
        for key, shape in shapes.items():
            if key not in state or np.shape(state[key]) != shape:
                got = None if key not in state else np.shape(state[key])
                raise ConfigError(f"state[{key!r}].shape == {got}, must be {shape}.")
        self.counts = np.asarray(state["counts"], dtype=np.int64).copy()
        self.sums = np.asarray(state["sums"], dtype=np.float64).copy()
        self.sqsums = np.asarray(state["sqsums"], dtype=np.float64).copy()
        if self.outer is not None:
            self.outer = np.asarray(state["outer"], dtype=np.float64).copy()
        self.shift = np.asarray(state["shift"], dtype=np.float64).copy()
        self.shift_set = np.asarray(state["shift_set"], dtype=bool).copy()
        self.negatives, self.entries = int(state["negatives"]), int(state["entries"])
        self.dtype = state.get("dtype")
        return self

    def reset(self) -> None:
        """Forget all data (keeps a fixed ``shift`` array; ``"first"`` shifts are chosen again).

        Returns
        -------
        None
            ``self`` is emptied in place.

        Examples
        --------
        >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
        >>> stats = CollapseStatistics(2, 2).update(H, y); stats.reset(); stats.counts
        array([0, 0])
        """
        fresh = CollapseStatistics(self.num_classes, self.dim, outer=self.outer is not None)
        keep_shift, keep_set = self.shift, self.shift_set
        self.__dict__.update(fresh.__dict__)
        if keep_set.all():
            self.shift, self.shift_set = keep_shift, keep_set

    # -- results
    # --------------------------------------------------------------------------------------------------

    def _kept(self, drop_empty: bool) -> np.ndarray:
        empty = np.flatnonzero(self.counts == 0)
        if empty.size and not drop_empty:
            raise ConfigError(
                f"labels has no sample of class(es) {empty[:10].tolist()} (K == {self.num_classes}), "
                "must have at least one sample per class; pass drop_empty=True (CLI: --drop-empty-classes) "
                "to drop empty classes."
            )
        kept = np.flatnonzero(self.counts > 0)
        if kept.size < 2:
            raise ConfigError(f"number of classes with samples == {kept.size}, must be >= 2.")
        return kept

    @fill_doc
    def moments(self, *, drop_empty: bool = False) -> Moments:
        """Sufficient statistics (class means, within-class sums of squares, scatter) of all data seen.

        Parameters
        ----------
        %(metrics_drop_empty)s

        Returns
        -------
        Moments
            Of the classes kept (all, or those with samples when ``drop_empty``).

        Examples
        --------
        >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
        >>> CollapseStatistics(2, 2).update(H, y).moments().within_ss
        array([2., 2.])
        """
        kept = self._kept(drop_empty)
        n = self.counts[kept].astype(np.float64)
        T = self.sums[kept]
        d = T / n[:, None]  # (K', D) μ_c − s_c
        within_ss = np.maximum(self.sqsums[kept] - n * np.einsum("kd,kd->k", d, d), 0.0)
        scatter = None if self.outer is None else self.outer - T.T @ d
        return Moments(
            counts=n,
            means=self.shift[kept] + d,
            within_ss=within_ss,
            scatter=scatter,
            negatives=self.negatives,
            entries=self.entries,
            dtype=self.dtype or "float64",
        )

    @property
    def class_means(self) -> np.ndarray:
        """``(K, D)`` class means so far (rows of empty classes are NaN).

        Returns
        -------
        numpy.ndarray, (K, D)
            ``μ_c`` as rows, float64.

        Examples
        --------
        >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
        >>> CollapseStatistics(2, 2).update(H, y).class_means
        array([[2., 0.],
               [0., 2.]])
        """
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.shift + self.sums / self.counts[:, None]

    @fill_doc
    def ncc_statistics(
        self, weights: ArrayLike | None = None, bias: ArrayLike | None = None, *, drop_empty: bool = False
    ) -> NCCStatistics:
        """Second-pass accumulator using the class means seen so far (call after the first pass).

        Parameters
        ----------
        weights : array_like, (K, D), optional
            A classifier whose predictions are compared with the NCC's (``nc4_agreement``).
        bias : array_like, (K,), optional
            Its bias.
        %(metrics_drop_empty)s

        Returns
        -------
        NCCStatistics
            Empty counts, with the class means (of the kept classes) seen so far.

        Examples
        --------
        >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
        >>> stats = CollapseStatistics(2, 2).update(H, y)
        >>> stats.ncc_statistics().update(H, y).compute().ncc_accuracy
        1.0
        """
        kept = self._kept(drop_empty)
        W = None if weights is None else as_weights(weights, self.dim)
        W, bias = restrict_to_kept(W, bias, kept, self.num_classes)
        return NCCStatistics(self.moments(drop_empty=drop_empty).means, W, bias, classes=kept)

    def compute(
        self,
        ncc: NCCStatistics | None = None,
        weights: ArrayLike | None = None,
        *,
        weighted: bool = True,
        rtol: float | None = None,
        dtype: Any = None,
        drop_empty: bool = False,
    ) -> CollapseMetrics:
        """The :func:`~deepcollapse.metrics.functional.collapse_metrics` result of all data seen.

        Parameters
        ----------
        ncc : NCCStatistics, optional
            The second pass (gives ``ncc_accuracy`` and, if it holds a classifier, ``nc4_agreement``; without
            it both are ``None`` with a warning).
        weights : array_like, (P, D), optional
            For ``nc3_alignment``, ``self_duality`` and ``wh_etf_error``, as in ``collapse_metrics``.
        weighted : bool, default True
            Global mean sample-weighted (default) or the unweighted mean of the class means.
        rtol : float, optional
            Rank tolerance ``rtol · σ_1`` instead of the default of the features' dtype.
        dtype : dtype, optional
            The dtype the features were computed in (default rank tolerance); default the coarsest seen.
        drop_empty : bool, default False
            Drop classes without samples instead of raising ``ConfigError``.

        Returns
        -------
        CollapseMetrics
            The keys of :data:`~deepcollapse.metrics.collapse.METRIC_KEYS`, as ``collapse_metrics`` of all
            features seen gives them (equal up to rounding).

        Examples
        --------
        >>> import numpy as np
        >>> H = np.array([[1.0, 0.0], [1.2, 0.0], [0.0, 1.0], [0.0, 0.8]])
        >>> y = np.array([0, 0, 1, 1])
        >>> stats = CollapseStatistics(num_classes=2, dim=2).update(H[:3], y[:3]).update(H[3:], y[3:])
        >>> m = stats.compute()
        >>> round(m.nc1_trace_ratio, 4), m.rank, m.ncc_accuracy
        (0.0198, 2, None)
        >>> m = stats.compute(stats.ncc_statistics().update(H, y))
        >>> m.ncc_accuracy, m["num_samples"]
        (1.0, 4)
        """
        kept = self._kept(drop_empty)
        m = self.moments(drop_empty=drop_empty)
        out = _core(m, weighted=weighted, rtol=rtol, dtype=dtype)
        values, reasons = out.values, out.reasons
        W = None if weights is None else as_weights(weights, self.dim)
        W, _ = restrict_to_kept(W, None, kept, self.num_classes)
        weight_metrics(W, m, weighted, out)
        values["ncc_accuracy"] = values["nc4_agreement"] = None
        if ncc is None:
            reasons["ncc_accuracy"] = "needs a second pass over the data (ncc_statistics(), two_pass_metrics)"
        else:
            if not np.allclose(ncc.means, m.means, rtol=1e-12, atol=0.0):
                log.warning("NCC statistics were built from different class means than these statistics")
            r = ncc.compute()
            values["ncc_accuracy"] = r.ncc_accuracy
            values["nc4_agreement"] = r.nc4_agreement
        return finalize(values, reasons, counts=m.counts, dim=self.dim, classes=kept)


class NCCStatistics:
    """Second-pass running counts for NC4: NCC correct predictions and NCC/classifier agreements.

    ``means (K', D)``: class means from the first pass; ``classes (K',)``: the label of each row (default
    ``0..K'-1``); ``weights (K', D)`` and ``bias (K',)``: an optional bias-free / biased linear classifier
    whose ``argmax_c (W h + b)_c`` is compared with the NCC prediction ``argmin_c ‖h − μ_c‖`` (ties → lowest
    index).
    """

    def __init__(
        self,
        means: ArrayLike,
        weights: ArrayLike | None = None,
        bias: ArrayLike | None = None,
        *,
        classes: ArrayLike | None = None,
    ) -> None:
        self.means = as_float64(means, "means")
        if self.means.ndim != 2 or self.means.shape[0] < 2:
            raise ConfigError(f"means.shape == {self.means.shape}, must be (K, D) with K >= 2.")
        K = self.means.shape[0]
        self.classes = np.arange(K) if classes is None else np.asarray(classes, dtype=np.int64)
        self.weights = None if weights is None else as_weights(weights, self.means.shape[1])
        if self.weights is not None and self.weights.shape[0] != K:
            raise ConfigError(f"weights.shape == {self.weights.shape}, must be ({K}, D) for NC4.")
        self.bias = as_bias(bias, K)
        self.correct = 0
        self.agree = 0
        self.total = 0

    def update(self, features: ArrayLike, labels: ArrayLike) -> NCCStatistics:
        """Add a batch: count its correct NCC predictions (and agreements with the classifier).

        Parameters
        ----------
        features : array_like, (B, D)
            The batch's features, one sample per row.
        labels : array_like of int, (B,)
            Their labels.

        Returns
        -------
        NCCStatistics
            ``self`` (so that calls chain).

        Examples
        --------
        >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
        >>> NCCStatistics(np.array([[2.0, 0.0], [0.0, 2.0]])).update(H, y).correct
        4
        """
        H, y, _ = _batch(features, labels, int(self.classes.max()) + 1, self.means.shape[1])
        pred = ncc_predict_of(H, self.means)  # (B,) index into rows of means
        self.correct += int(np.count_nonzero(self.classes[pred] == y))
        if self.weights is not None:
            self.agree += int(np.count_nonzero(pred == classifier_predict(H, self.weights, self.bias)))
        self.total += int(H.shape[0])
        return self

    def merge(self, other: NCCStatistics) -> NCCStatistics:
        """Add ``other``'s counts to ``self`` (in place); both must use the same first-pass class means.

        Parameters
        ----------
        other : NCCStatistics
            Counts of other data (not changed).

        Returns
        -------
        NCCStatistics
            ``self``.

        Examples
        --------
        >>> H = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = np.array([0, 0, 1, 1])
        >>> mu = np.array([[2.0, 0.0], [0.0, 2.0]])
        >>> NCCStatistics(mu).update(H, y).merge(NCCStatistics(mu).update(H, y)).total
        8
        """
        if not np.array_equal(other.means, self.means):
            raise ConfigError("other.means differ from self.means, must be the same first-pass class means.")
        self.correct += other.correct
        self.agree += other.agree
        self.total += other.total
        return self

    def compute(self) -> CollapseMetrics:
        """NCC accuracy and NC4 agreement of the samples seen.

        Returns
        -------
        CollapseMetrics
            Holding only the keys ``ncc_accuracy`` (fraction of samples whose nearest class mean is their
            class) and ``nc4_agreement`` (fraction where the classifier agrees with it; ``None`` without
            ``weights``); ``to_dict()`` has these two keys.

        Examples
        --------
        >>> import numpy as np
        >>> ncc = NCCStatistics(np.array([[1.0, 0.0], [0.0, 1.0]]), weights=np.eye(2))
        >>> r = ncc.update(np.array([[0.9, 0.1], [0.2, 0.7], [0.6, 0.5]]), np.array([0, 1, 1])).compute()
        >>> round(r.ncc_accuracy, 4), r.nc4_agreement, r.to_dict() == dict(r)
        (0.6667, 1.0, True)
        """
        if self.total == 0:
            raise ConfigError("NCCStatistics.total == 0, must have seen at least one sample.")
        return CollapseMetrics.from_dict(
            {
                "ncc_accuracy": self.correct / self.total,
                "nc4_agreement": None if self.weights is None else self.agree / self.total,
            }
        )


@fill_doc
def two_pass_metrics(
    loader: Iterable[Any],
    num_classes: int,
    *,
    weights: ArrayLike | None = None,
    bias: ArrayLike | None = None,
    transform: Callable[[Any], ArrayLike] | None = None,
    drop_empty: bool = False,
    **compute_kwargs: Any,
) -> CollapseMetrics:
    """``collapse_metrics`` over a re-iterable loader of ``(features, labels)`` batches, in two passes.

    Pass 1 accumulates :class:`CollapseStatistics`; pass 2 feeds the data again to the :class:`NCCStatistics`
    built from the pass-1 class means (NCC accuracy and NC4 need the final means).  ``transform(x)`` maps a
    batch's first element to features (e.g. a frozen network); ``dim`` is taken from the first batch.

    Parameters
    ----------
    loader : iterable
        Re-iterable over ``(x, labels)`` batches (``x``: the features ``(B, D)``, or the input of
        ``transform``).
    num_classes : int
        ``K``.
    weights : array_like, (P, D), optional
        As in :func:`collapse_metrics`.
    bias : array_like, (K,), optional
        As in :func:`collapse_metrics`.
    transform : callable, optional
        Maps a batch's first element to features ``(B, D)``.
    %(metrics_drop_empty)s
    **compute_kwargs
        Passed to :meth:`CollapseStatistics.compute` (``weighted``, ``rtol``, ...).

    Returns
    -------
    CollapseMetrics
        The keys of :func:`collapse_metrics`; ``ncc_accuracy`` and ``nc4_agreement`` from the second pass.

    Examples
    --------
    >>> import numpy as np
    >>> H = np.array([[1.0, 0.0], [1.2, 0.0], [0.0, 1.0], [0.0, 0.8]])
    >>> loader = [(H[:2], np.array([0, 0])), (H[2:], np.array([1, 1]))]  # re-iterable: a list of batches
    >>> m = two_pass_metrics(loader, num_classes=2, weights=np.eye(2))
    >>> round(m.nc1_trace_ratio, 4), m.ncc_accuracy, m.nc4_agreement
    (0.0198, 1.0, 1.0)
    """
    stats: CollapseStatistics | None = None
    for x, y in loader:
        h = transform(x) if transform is not None else x
        if stats is None:
            if np.ndim(h) != 2:
                raise ConfigError(f"features.shape == {tuple(np.shape(h))}, must be (B, D) (rows = samples).")
            stats = CollapseStatistics(num_classes, int(np.shape(h)[1]))
        stats.update(h, y)
    if stats is None:
        raise ConfigError("loader yielded 0 batches, must yield at least one (features, labels) batch.")
    ncc = stats.ncc_statistics(weights, bias, drop_empty=drop_empty)
    for x, y in loader:
        ncc.update(transform(x) if transform is not None else x, y)
    return stats.compute(ncc, weights, drop_empty=drop_empty, **compute_kwargs)
