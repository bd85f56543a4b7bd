"""The typed result of the collapse metrics, :class:`CollapseMetrics`: its ``to_dict()`` is the dict the
functions returned before results were typed (checked against metrics written out with numpy on explicit
matrices), read-only key access keeps working, and the Examples of the changed modules run."""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import json
import math

import numpy as np
import pandas as pd
import pytest

from deepcollapse.metrics import (
    METRIC_KEYS,
    CollapseMetrics,
    CollapseStatistics,
    NCCStatistics,
    collapse_metrics,
    two_pass_metrics,
)
from deepcollapse.metrics.collapse import finalize

K, D, N = 3, 5, 24


def problem(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Features ``(N, D)`` around three separated class centres, labels, a classifier ``(K, D)`` and bias."""
    rng = np.random.default_rng(seed)
    y = np.arange(N) % K
    centres = 2.0 * rng.normal(size=(K, D))
    H = centres[y] + 0.3 * rng.normal(size=(N, D))
    W = centres + 0.5 * rng.normal(size=(K, D))
    b = 0.1 * rng.normal(size=K)
    return H, y, W, b


def reference(H: np.ndarray, y: np.ndarray, W: np.ndarray, b: np.ndarray) -> dict:
    """The dict of earlier releases, every metric written out from its definition (docs/formulas.md)."""
    mu = np.stack([H[y == c].mean(axis=0) for c in range(K)])  # (K, D) class means (rows)
    mu_G = H.mean(axis=0)  # sample-weighted global mean
    A = mu - mu_G  # centred means
    dev = H - mu[y]
    S_W = dev.T @ dev / N
    S_B = A.T @ A / K
    var = np.array([np.mean(np.sum(dev[y == c] ** 2, axis=1)) for c in range(K)])
    pairs = [(c, e) for c in range(K) for e in range(c + 1, K)]
    s = np.linalg.svd(mu.T, compute_uv=False)  # singular values of M (D, K), K of them (D >= K)
    s_centred = np.linalg.svd(A.T, compute_uv=False)
    G, Gc = mu @ mu.T, A @ A.T
    T = np.eye(K) - np.ones((K, K)) / K  # simplex ETF Gram
    norms, cnorms = np.linalg.norm(mu, axis=1), np.linalg.norm(A, axis=1)
    U = A / cnorms[:, None]
    cos = (U @ U.T)[np.triu_indices(K, 1)]
    wn = np.linalg.norm(W, axis=1)
    cos_w = (W / wn[:, None]) @ (mu / norms[:, None]).T  # (K rows of W, K class means)
    sin2 = 1.0 - np.max(cos_w**2, axis=1)
    ncc = np.argmin(((H[:, None, :] - mu[None]) ** 2).sum(axis=2), axis=1)
    clf = np.argmax(H @ W.T + b, axis=1)
    WA = W @ A.T
    p = s / s.sum()
    return {
        "num_samples": N,
        "num_classes": K,
        "dim": D,
        "classes": list(range(K)),
        "nc1_trace_ratio": float(np.trace(S_W) / np.trace(S_B)),
        "nc1_pinv": float(np.trace(S_W @ np.linalg.pinv(S_B)) / K),
        "cdnv": float(np.mean([(var[c] + var[e]) / (2 * np.sum((mu[c] - mu[e]) ** 2)) for c, e in pairs])),
        "nc2_cond": float(s[0] / s[-1]),
        "nc2_orth_error": float(np.linalg.norm(G / np.linalg.norm(G) - np.eye(K) / np.sqrt(K))),
        "nc2_etf_error": float(np.linalg.norm(Gc / np.linalg.norm(Gc) - T / np.linalg.norm(T))),
        "equinorm": float(np.std(cnorms) / np.mean(cnorms)),
        "equinorm_uncentered": float(np.std(norms) / np.mean(norms)),
        "equiangularity": float(np.std(cos)),
        "nc3_alignment": float(np.sum(wn**2 * sin2) / np.sum(wn**2)),
        "self_duality": float(np.linalg.norm(W / np.linalg.norm(W) - A / np.linalg.norm(A)) ** 2),
        "wh_etf_error": float(np.linalg.norm(WA / np.linalg.norm(WA) - T / np.sqrt(K - 1))),
        "nc4_agreement": float(np.mean(ncc == clf)),
        "ncc_accuracy": float(np.mean(ncc == y)),
        "rank": K,
        "rank_tolerance": float(max(D, K) * np.finfo(np.float64).eps * min(s[0], s_centred[0])),
        "effective_rank": float(np.exp(-np.sum(p * np.log(p)))),
        "stable_rank": float(np.sum(s**2) / s[0] ** 2),
        "singular_values": [float(v) for v in s],
        "negative_fraction": float(np.mean(H < 0)),
        "warnings": [],
    }


def assert_same_dict(got: dict, ref: dict) -> None:
    """Same keys in the same order, same JSON types (int / float / list / None), values equal to rounding."""
    assert list(got) == list(ref)
    for key, want in ref.items():
        have = got[key]
        assert type(have) is type(want), key
        if isinstance(want, float):
            assert have == pytest.approx(want, rel=1e-9, abs=1e-12), key
        elif isinstance(want, list) and want and isinstance(want[0], float):
            assert all(type(v) is float for v in have), key
            assert have == pytest.approx(want, rel=1e-9, abs=1e-12), key
        else:
            assert have == want, key


def test_the_fields_are_the_metric_keys_in_order():
    assert tuple(f.name for f in dataclasses.fields(CollapseMetrics)) == METRIC_KEYS
    assert CollapseMetrics.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_collapse_metrics_to_dict_is_the_reference_dict():
    H, y, W, b = problem()
    m = collapse_metrics(H, y, W, bias=b)
    assert isinstance(m, CollapseMetrics)
    ref = reference(H, y, W, b)
    assert_same_dict(m.to_dict(), ref)
    json.dumps(m.to_dict(), allow_nan=False)  # what the CLI writes
    # attributes and read-only key access answer the same
    assert m.nc1_trace_ratio == m["nc1_trace_ratio"] and m.rank == m["rank"] == K
    assert list(m) == list(m.keys()) == list(METRIC_KEYS) and len(m) == len(METRIC_KEYS)
    assert "cdnv" in m and "nope" not in m and m.get("nope") is None
    assert dict(m) == {**m} == m.to_dict() and m == m.to_dict()
    with pytest.raises(KeyError):
        m["nope"]
    with pytest.raises(TypeError):
        m["rank"] = 1  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.rank = 1  # type: ignore[misc]
    back = CollapseMetrics.from_dict(m.to_dict())
    assert back == m and list(back.to_dict()) == list(METRIC_KEYS)
    assert json.dumps(back.to_dict()) == json.dumps(m.to_dict())


def test_streaming_and_two_pass_give_the_reference_dict():
    H, y, W, b = problem(1)
    ref = reference(H, y, W, b)
    stats = CollapseStatistics(K, D)
    for part in np.array_split(np.arange(N), 4):
        stats.update(H[part], y[part])
    m = stats.compute(stats.ncc_statistics(W, b).update(H, y), W)
    assert isinstance(m, CollapseMetrics)
    assert_same_dict(m.to_dict(), ref)
    assert CollapseMetrics.from_dict(m.to_dict()) == m
    loader = [(H[i : i + 5], y[i : i + 5]) for i in range(0, N, 5)]
    t = two_pass_metrics(loader, K, weights=W, bias=b)
    assert isinstance(t, CollapseMetrics)
    assert_same_dict(t.to_dict(), ref)
    assert t["ncc_accuracy"] == t.ncc_accuracy == ref["ncc_accuracy"]
    assert CollapseMetrics.from_dict(t.to_dict()) == t
    # without the second pass: both NCC keys None, with a warning saying why
    first = stats.compute(weights=W)
    assert first.ncc_accuracy is None and first.nc4_agreement is None
    assert any(w.startswith("ncc_accuracy is null") for w in first.warnings or [])
    assert_same_dict(
        {k: v for k, v in first.to_dict().items() if k not in ("ncc_accuracy", "nc4_agreement", "warnings")},
        {k: v for k, v in ref.items() if k not in ("ncc_accuracy", "nc4_agreement", "warnings")},
    )


def test_ncc_statistics_compute_holds_its_two_keys():
    means = np.array([[1.0, 0.0], [0.0, 1.0]])
    H = np.array([[0.9, 0.1], [0.2, 0.7], [0.6, 0.5], [0.1, 0.3]])
    y = np.array([0, 1, 1, 0])
    # nearest mean: 0, 1, 0, 1 -> 2 of 4 correct; W = diag(1, 2) predicts 0, 1, 1, 1 -> agrees on 3 of 4
    r = NCCStatistics(means, weights=np.diag([1.0, 2.0])).update(H, y).compute()
    assert isinstance(r, CollapseMetrics)
    assert r.to_dict() == {"ncc_accuracy": 0.5, "nc4_agreement": 0.75}
    assert list(r) == ["ncc_accuracy", "nc4_agreement"] and r["ncc_accuracy"] == r.ncc_accuracy == 0.5
    assert r.rank is None and "rank" not in r
    assert CollapseMetrics.from_dict(r.to_dict()) == r
    plain = NCCStatistics(means).update(H, y).compute()
    assert plain.to_dict() == {"ncc_accuracy": 0.5, "nc4_agreement": None}


def test_undefined_metrics_are_none_with_warnings_as_before():
    """D < K: the condition number is infinite: None and one warning; pinv=False: nc1_pinv None, silently."""
    H = np.array([[1.0, 0.0], [1.1, 0.1], [0.0, 1.0], [0.1, 1.1], [-1.0, -1.0], [-1.1, -0.9]])
    y = np.array([0, 0, 1, 1, 2, 2])
    m = collapse_metrics(H, y, pinv=False)
    d = m.to_dict()
    assert list(d) == list(METRIC_KEYS)
    assert d["nc1_pinv"] is None and d["nc2_cond"] is None and d["rank"] == 2
    assert d["warnings"] == [
        "nc2_cond is null (inf): class-mean matrix M (D x K = 2 x 3) has numerical rank 2 < K (D < K); "
        "condition number σ_1/σ_K is infinite."
    ]
    assert d["singular_values"][2] == 0.0 and len(d["singular_values"]) == 3  # zero-padded to K
    assert CollapseMetrics.from_dict(d) == m


def test_finalize_returns_the_typed_result():
    r = finalize(
        {"cdnv": math.nan, "rank": np.int64(1), "singular_values": np.array([2.0, 0.0])},
        {"cdnv": "two means coincide", "nc1_pinv:rank": "Σ_B has rank 0"},
        counts=np.array([2, 1]),
        dim=3,
        classes=np.array([4, 7]),
    )
    assert isinstance(r, CollapseMetrics)
    d = r.to_dict()
    assert list(d) == list(METRIC_KEYS)
    assert (d["num_samples"], d["num_classes"], d["dim"], d["classes"]) == (3, 2, 3, [4, 7])
    assert type(d["rank"]) is int and d["singular_values"] == [2.0, 0.0] and d["cdnv"] is None
    assert d["warnings"] == ["cdnv is null (nan): two means coincide.", "nc1_pinv: Σ_B has rank 0."]


def test_to_frame_is_one_row_of_the_dict():
    H, y, W, b = problem(2)
    m = collapse_metrics(H, y, W, bias=b)
    df = m.to_frame()
    assert isinstance(df, pd.DataFrame) and df.shape == (1, len(METRIC_KEYS))
    assert list(df.columns) == list(METRIC_KEYS)
    row = df.iloc[0]
    assert row["nc1_trace_ratio"] == m.nc1_trace_ratio and row["rank"] == K
    assert row["singular_values"] == m.singular_values and row["classes"] == [0, 1, 2]
    assert list(NCCStatistics(np.eye(2)).update(np.eye(2), [0, 1]).compute().to_frame().columns) == [
        "ncc_accuracy",
        "nc4_agreement",
    ]


@pytest.mark.parametrize("module", ["deepcollapse.metrics.collapse", "deepcollapse.metrics.streaming"])
def test_docstring_examples_run(module):
    result = doctest.testmod(
        importlib.import_module(module), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 0 and result.failed == 0, result
