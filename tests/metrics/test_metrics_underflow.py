"""NC1 of features that collapsed to (almost) zero: tr(Σ_B) underflows to 0, the metric must not crash."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deepcollapse.metrics.functional import nc1_trace_ratio, stable_rank


def test_nc1_of_underflowing_class_means_is_inf_not_an_error():
    # a DUFM run collapsing to the zero point under cross-entropy left features ~1e-170: squares underflow
    X = np.random.default_rng(0).normal(size=(20, 5)) * 1e-170  # (N, D)
    y = np.repeat(np.arange(4), 5)
    assert math.isinf(nc1_trace_ratio(X, y, 4))


def test_stable_rank_is_scale_free_down_to_underflow():
    M = np.random.default_rng(1).normal(size=(6, 4))  # (D, K)
    s = np.linalg.svd(M, compute_uv=False)
    reference = float(np.sum(s**2) / s[0] ** 2)  # the definition, at a scale where nothing underflows
    for scale in (1.0, 1e-170, 1e150):
        assert stable_rank(M * scale) == pytest.approx(reference, rel=1e-12)
