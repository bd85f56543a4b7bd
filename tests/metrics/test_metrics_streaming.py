"""Streaming statistics: random batch splits and merges equal the one-shot metrics on all the data."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse.metrics.functional import collapse_metrics
from deepcollapse.metrics.streaming import CollapseStatistics, NCCStatistics, two_pass_metrics

torch.set_num_threads(1)

SCALAR_KEYS = (
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
    "effective_rank",
    "stable_rank",
    "negative_fraction",
)


def problem(seed, K=6, D=9, N=300, offset=3.0, noise=1.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, size=N)
    y[:K] = np.arange(K)  # every class present
    H = offset * rng.normal(size=(K, D))[y] + noise * rng.normal(size=(N, D))
    return H, y


def random_splits(rng, N, parts):
    cuts = np.sort(rng.choice(np.arange(1, N), size=parts - 1, replace=False))
    return np.split(np.arange(N), cuts)


def assert_same(a, b, rel=1e-12, keys=SCALAR_KEYS):
    for key in keys:
        if a[key] is None or b[key] is None:
            assert a[key] is None and b[key] is None, key
        else:
            assert a[key] == pytest.approx(b[key], rel=rel, abs=1e-300), key
    assert a["rank"] == b["rank"]
    np.testing.assert_allclose(a["singular_values"], b["singular_values"], rtol=rel, atol=1e-14)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_batch_splits_equal_one_shot(seed):
    H, y = problem(seed)
    K, D = 6, 9
    W = np.random.default_rng(seed + 10).normal(size=(K, D))
    ref = collapse_metrics(H, y, W)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(H.shape[0])  # streaming order must not matter either
    Hp, yp = H[perm], y[perm]
    splits = random_splits(rng, H.shape[0], parts=int(rng.integers(2, 12)))
    stats = CollapseStatistics(K, D)
    for idx in splits:
        stats.update(Hp[idx], yp[idx])
    ncc = stats.ncc_statistics(W)
    for idx in splits:
        ncc.update(Hp[idx], yp[idx])
    out = stats.compute(ncc, W)
    assert set(out) == set(ref)
    assert_same(out, ref)
    assert out["ncc_accuracy"] == ref["ncc_accuracy"]
    assert out["nc4_agreement"] == ref["nc4_agreement"]
    assert out["warnings"] == ref["warnings"] == []


@pytest.mark.parametrize("shift", ["first", None, "array"])
def test_merge_equals_single_stream(shift):
    H, y = problem(5)
    K, D = 6, 9
    rng = np.random.default_rng(0)
    sh = rng.normal(size=(K, D)) if shift == "array" else shift
    single = CollapseStatistics(K, D, shift=sh)
    workers = [CollapseStatistics(K, D, shift=sh) for _ in range(3)]
    for i, idx in enumerate(random_splits(rng, H.shape[0], parts=9)):
        single.update(H[idx], y[idx])
        workers[i % 3].update(H[idx], y[idx])
    merged = workers[0].merge(workers[1]).merge(workers[2])
    assert_same(merged.compute(), single.compute())
    assert merged.counts.tolist() == single.counts.tolist()
    assert_same(merged.compute(), collapse_metrics(H, y))


def test_merge_with_different_shifts_and_unseen_classes():
    H, y = problem(6)
    K, D = 6, 9
    a = CollapseStatistics(K, D)
    b = CollapseStatistics(K, D, shift=np.full((K, D), 5.0))
    c = CollapseStatistics(K, D)
    first = y < 3  # a sees only classes 0..2, c only 3..5
    a.update(H[first], y[first])
    c.update(H[~first], y[~first])
    b.update(H[:50], y[:50])
    a.merge(b).merge(c)
    ref = collapse_metrics(
        np.vstack([H[first], H[:50], H[~first]]), np.concatenate([y[first], y[:50], y[~first]])
    )
    assert_same(a.compute(), ref)


def test_shift_keeps_precision_for_collapsed_features():
    # within-class std 1e-7 around means of norm ~1e3: NC1 ~ 1e-20, far below raw-moment rounding
    rng = np.random.default_rng(1)
    K, D, n = 4, 5, 50
    mu = 1e3 * rng.normal(size=(K, D))
    y = np.arange(K).repeat(n)
    H = mu[y] + 1e-7 * rng.normal(size=(K * n, D))
    ref = collapse_metrics(H, y)
    stats = CollapseStatistics(K, D)
    for idx in np.array_split(rng.permutation(K * n), 7):
        stats.update(H[idx], y[idx])
    out = stats.compute()
    assert out["nc1_trace_ratio"] == pytest.approx(ref["nc1_trace_ratio"], rel=1e-6)
    assert out["cdnv"] == pytest.approx(ref["cdnv"], rel=1e-6)
    # independent check of the reference itself
    res = H - np.stack([H[y == c].mean(0) for c in range(K)])[y]
    mc = np.stack([H[y == c].mean(0) for c in range(K)]) - H.mean(0)
    expected = (np.sum(res**2) / (K * n)) / (np.sum(mc**2) / K)
    assert ref["nc1_trace_ratio"] == pytest.approx(expected, rel=1e-8)
    # raw sums (shift=None) cannot resolve this: documented reason for the shift
    raw = CollapseStatistics(K, D, shift=None).update(H, y).compute()
    assert raw["nc1_trace_ratio"] is None or abs(raw["nc1_trace_ratio"] / expected - 1) > 1e-3


def test_torch_batches_and_dtype_tolerance():
    H, y = problem(7)
    K, D = 6, 9
    stats = CollapseStatistics(K, D)
    for idx in np.array_split(np.arange(H.shape[0]), 4):
        stats.update(torch.tensor(H[idx], dtype=torch.float32), torch.tensor(y[idx]))
    H32 = torch.tensor(H, dtype=torch.float32)
    ref = collapse_metrics(H32, y)
    assert_same(stats.compute(), ref, rel=1e-11)
    assert stats.compute()["rank_tolerance"] == pytest.approx(ref["rank_tolerance"], rel=1e-12)
    assert ref["rank_tolerance"] > 1e-7 * ref["singular_values"][0]  # float32 eps, not float64


def test_two_pass_metrics_over_loader():
    H, y = problem(8)
    K, D = 6, 9
    W = np.random.default_rng(3).normal(size=(K, D))
    b = np.random.default_rng(4).normal(size=K)
    loader = [(H[i : i + 64], y[i : i + 64]) for i in range(0, H.shape[0], 64)]
    out = two_pass_metrics(loader, K, weights=W, bias=b)
    ref = collapse_metrics(H, y, W, bias=b)
    assert_same(out, ref)
    assert out["ncc_accuracy"] == ref["ncc_accuracy"]
    assert out["nc4_agreement"] == ref["nc4_agreement"]
    # a transform (e.g. a frozen network) is applied to the first element of each batch
    A = np.random.default_rng(5).normal(size=(D, 4))
    out_t = two_pass_metrics(loader, K, transform=lambda x: x @ A)
    assert_same(out_t, collapse_metrics(H @ A, y))


def test_without_second_pass_ncc_is_none_with_warning():
    H, y = problem(9)
    out = CollapseStatistics(6, 9).update(H, y).compute()
    assert out["ncc_accuracy"] is None
    assert any(w.startswith("ncc_accuracy") and "second pass" in w for w in out["warnings"])


def test_empty_class_and_bad_batches():
    H, y = problem(10)
    K, D = 6, 9
    y2 = np.where(y == 4, 0, y)
    stats = CollapseStatistics(K, D).update(H, y2)
    with pytest.raises(ConfigError, match=r"no sample of class\(es\) \[4\].*drop_empty=True"):
        stats.compute()
    out = stats.compute(drop_empty=True)
    ref = collapse_metrics(H, y2, num_classes=K, drop_empty=True)
    assert out["classes"] == ref["classes"] == [0, 1, 2, 3, 5]
    assert_same(out, ref)
    with pytest.raises(ConfigError, match=r"features\.shape == \(5, 8\), must be \(B, 9\)"):
        stats.update(H[:5, :8], y[:5])
    with pytest.raises(ConfigError, match=r"labels\.shape == \(4,\), must be \(5,\).*\(5, 9\)"):
        stats.update(H[:5], y[:4])
    with pytest.raises(ConfigError, match=r"labels contains \[6\], must be in 0\.\.5"):
        stats.update(H[:5], np.full(5, 6))
    Hn = H[:5].copy()
    Hn[0, 0] = np.nan
    with pytest.raises(ConfigError, match=r"features has 1 non-finite"):
        stats.update(Hn, y[:5])
    with pytest.raises(ConfigError, match=r"must be \(6, 9\) to merge"):
        stats.merge(CollapseStatistics(5, 9))
    with pytest.raises(ConfigError, match=r"num_classes == 1, must be >= 2"):
        CollapseStatistics(1, 9)
    with pytest.raises(ConfigError, match=r"number of classes with samples == 1"):
        CollapseStatistics(K, D).update(H[y == 0], y[y == 0]).compute(drop_empty=True)
    with pytest.raises(ConfigError, match="shift"):
        CollapseStatistics(K, D, shift="last")


def test_outer_false_skips_pinv_only():
    H, y = problem(11)
    out = CollapseStatistics(6, 9, outer=False).update(H, y).compute()
    ref = collapse_metrics(H, y)
    assert out["nc1_pinv"] is None
    assert_same(
        out, ref, keys=tuple(k for k in SCALAR_KEYS if k not in ("nc1_pinv", "nc3_alignment", "self_duality"))
    )


def test_ncc_statistics_merge():
    H, y = problem(12)
    stats = CollapseStatistics(6, 9).update(H, y)
    a, b = stats.ncc_statistics(), stats.ncc_statistics()
    a.update(H[:100], y[:100])
    b.update(H[100:], y[100:])
    assert a.merge(b).compute()["ncc_accuracy"] == collapse_metrics(H, y)["ncc_accuracy"]
    with pytest.raises(ConfigError, match="means"):
        a.merge(NCCStatistics(np.zeros((6, 9))))
    assert math.isfinite(a.compute()["ncc_accuracy"])


def test_state_dicts_sum_like_an_all_reduce():
    H, y = problem(13)
    K, D = 6, 9
    shift = np.random.default_rng(2).normal(size=(K, D))
    parts = np.array_split(np.arange(H.shape[0]), 3)
    states = [CollapseStatistics(K, D, shift=shift).update(H[i], y[i]).state_dict() for i in parts]
    total = dict(states[0])
    for key in CollapseStatistics.SUM_FIELDS:
        total[key] = sum(s[key] for s in states)
    out = CollapseStatistics(K, D, shift=shift).load_state_dict(total).compute()
    assert_same(out, collapse_metrics(H, y))
    with pytest.raises(ConfigError, match=r"state\['sums'\]\.shape == \(2, 9\), must be \(6, 9\)"):
        CollapseStatistics(K, D).load_state_dict({**total, "sums": np.zeros((2, 9))})
