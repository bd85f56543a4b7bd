"""Functional collapse metrics against independent numpy computations written from the definitions.

The reference functions below use explicit per-class loops, ``np.linalg.eigh`` of the D x D covariance (the
code
under test uses an SVD of the centred means), ``np.linalg.cond`` / ``matrix_rank`` / matrix norms, and
explicit
pairwise loops -- never the code under test.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse.metrics import functional as F

torch.set_num_threads(1)


# ------------------------------------------------------------------------------------------------------------
# Independent reference implementations (definitions, loops)
# ------------------------------------------------------------------------------------------------------------


def ref_means(H, y, K):
    return np.stack([H[y == c].mean(axis=0) for c in range(K)])


def ref_global_mean(H, y, K, weighted=True):
    return H.mean(axis=0) if weighted else ref_means(H, y, K).mean(axis=0)


def ref_sigma_w(H, y, K):
    mu = ref_means(H, y, K)
    S = np.zeros((H.shape[1], H.shape[1]))
    for i in range(H.shape[0]):
        r = H[i] - mu[y[i]]
        S += np.outer(r, r)
    return S / H.shape[0]


def ref_sigma_b(H, y, K, weighted=True):
    mu, mg = ref_means(H, y, K), ref_global_mean(H, y, K, weighted)
    return sum(np.outer(mu[c] - mg, mu[c] - mg) for c in range(K)) / K


def ref_nc1_pinv(H, y, K):
    SW, SB = ref_sigma_w(H, y, K), ref_sigma_b(H, y, K)
    lam, V = np.linalg.eigh(SB)  # ascending
    lam, V = lam[::-1][: K - 1], V[:, ::-1][:, : K - 1]  # top K-1 eigenpairs
    SB_pinv = V @ np.diag(1.0 / lam) @ V.T
    return np.trace(SW @ SB_pinv) / K


def ref_cdnv(H, y, K):
    mu = ref_means(H, y, K)
    var = [np.mean(np.sum((H[y == c] - mu[c]) ** 2, axis=1)) for c in range(K)]
    vals = [(var[c] + var[d]) / (2 * np.sum((mu[c] - mu[d]) ** 2)) for c in range(K) for d in range(c + 1, K)]
    return np.mean(vals)


def ref_frame_error(A, target):
    G = A @ A.T
    return np.linalg.norm(G / np.linalg.norm(G, "fro") - target / np.linalg.norm(target, "fro"), "fro")


def ref_effective_rank(M):
    s = np.linalg.svd(M, compute_uv=False)
    p = s / s.sum()
    p = p[p > 0]
    return math.exp(-sum(pi * math.log(pi) for pi in p))


def ref_ncc_pred(H, mu):
    return np.array([int(np.argmin([np.linalg.norm(h - m) for m in mu])) for h in H])


def ref_cos_pairs(A):
    K = A.shape[0]
    return [
        A[c] @ A[d] / (np.linalg.norm(A[c]) * np.linalg.norm(A[d])) for c in range(K) for d in range(c + 1, K)
    ]


def random_problem(seed, K=5, n=(7, 3, 9, 4, 6), D=8, spread=2.0):
    rng = np.random.default_rng(seed)
    y = np.concatenate([np.full(nc, c) for c, nc in enumerate(n)])
    rng.shuffle(y)
    centres = spread * rng.normal(size=(K, D))
    H = centres[y] + rng.normal(size=(y.size, D))
    return H, y


# ------------------------------------------------------------------------------------------------------------
# Random inputs: every metric against its reference
# ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_means_and_covariances_match_definitions(seed):
    H, y = random_problem(seed)
    K = 5
    np.testing.assert_allclose(F.class_means(H, y), ref_means(H, y, K), rtol=1e-13, atol=1e-13)
    for weighted in (True, False):
        np.testing.assert_allclose(
            F.global_mean(H, y, weighted=weighted), ref_global_mean(H, y, K, weighted), atol=1e-13
        )
        np.testing.assert_allclose(
            F.between_class_cov(H, y, weighted=weighted), ref_sigma_b(H, y, K, weighted), atol=1e-12
        )
    np.testing.assert_allclose(F.within_class_cov(H, y), ref_sigma_w(H, y, K), atol=1e-12)
    # unbalanced classes: the two global means really differ
    assert np.linalg.norm(ref_global_mean(H, y, K, True) - ref_global_mean(H, y, K, False)) > 1e-3


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nc1_metrics_match_definitions(seed):
    H, y = random_problem(seed)
    K = 5
    SW, SB = ref_sigma_w(H, y, K), ref_sigma_b(H, y, K)
    assert F.nc1_trace_ratio(H, y) == pytest.approx(np.trace(SW) / np.trace(SB), rel=1e-12)
    SBu = ref_sigma_b(H, y, K, weighted=False)
    assert F.nc1_trace_ratio(H, y, weighted=False) == pytest.approx(np.trace(SW) / np.trace(SBu), rel=1e-12)
    assert F.nc1_pinv(H, y) == pytest.approx(ref_nc1_pinv(H, y, K), rel=1e-9)
    assert F.cdnv(H, y) == pytest.approx(ref_cdnv(H, y, K), rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_nc2_spectra_match_definitions(seed):
    H, y = random_problem(seed, D=8)
    K = 5
    mu = ref_means(H, y, K)
    M = mu.T  # (D, K), paper convention
    mc = mu - H.mean(axis=0)
    assert F.nc2_cond(H, y) == pytest.approx(np.linalg.cond(M), rel=1e-10)
    assert F.nc2_orth_error(H, y) == pytest.approx(ref_frame_error(mu, np.eye(K)), rel=1e-12)
    etf = np.eye(K) - np.ones((K, K)) / K
    assert F.nc2_etf_error(H, y) == pytest.approx(ref_frame_error(mc, etf), rel=1e-12)
    norms = [np.linalg.norm(m) for m in mc]
    assert F.equinorm(H, y) == pytest.approx(np.std(norms) / np.mean(norms), rel=1e-12)
    norms_u = [np.linalg.norm(m) for m in mu]
    assert F.equinorm(H, y, centered=False) == pytest.approx(np.std(norms_u) / np.mean(norms_u), rel=1e-12)
    assert F.equiangularity(H, y) == pytest.approx(np.std(ref_cos_pairs(mc)), rel=1e-10)
    assert F.equiangularity(H, y, centered=False) == pytest.approx(np.std(ref_cos_pairs(mu)), rel=1e-10)
    np.testing.assert_allclose(F.singular_values(M), np.linalg.svd(M, compute_uv=False), rtol=1e-12)
    assert F.numerical_rank(M) == np.linalg.matrix_rank(M) == K
    assert F.effective_rank(M) == pytest.approx(ref_effective_rank(M), rel=1e-12)
    sr = np.linalg.norm(M, "fro") ** 2 / np.linalg.norm(M, 2) ** 2
    assert F.stable_rank(M) == pytest.approx(sr, rel=1e-12)
    G = mu @ mu.T
    np.testing.assert_allclose(F.class_mean_gram(H, y, normalize="none"), G, rtol=1e-12)
    np.testing.assert_allclose(F.class_mean_gram(H, y), G / np.abs(G).max(), rtol=1e-12)
    np.testing.assert_allclose(F.class_mean_gram(H, y, normalize="fro"), G / np.linalg.norm(G), rtol=1e-12)
    cos = F.class_mean_gram(H, y, normalize="cosine")
    assert cos[0, 1] == pytest.approx(mu[0] @ mu[1] / np.linalg.norm(mu[0]) / np.linalg.norm(mu[1]))
    # fast path: a means matrix alone gives the same NC2 numbers
    assert F.nc2_cond(mu) == pytest.approx(F.nc2_cond(H, y), rel=1e-14)
    assert F.nc2_orth_error(mu) == pytest.approx(F.nc2_orth_error(H, y), rel=1e-14)


def test_nc3_nc4_match_definitions():
    H, y = random_problem(3)
    K, D = 5, 8
    rng = np.random.default_rng(7)
    mu = ref_means(H, y, K)
    W = mu + 0.5 * rng.normal(size=(K, D))
    b = rng.normal(size=K)
    # NC3 alignment: weighted mean of sin^2 of the angle to the closest class-mean line
    num = den = 0.0
    for w in W:
        cos2 = max((w @ m) ** 2 / (w @ w) / (m @ m) for m in mu)
        num += (w @ w) * (1 - cos2)
        den += w @ w
    assert F.nc3_alignment(W, H, y) == pytest.approx(num / den, rel=1e-12)
    mc = mu - H.mean(axis=0)
    sd = np.linalg.norm(W / np.linalg.norm(W) - mc / np.linalg.norm(mc)) ** 2
    assert F.self_duality(W, H, y) == pytest.approx(sd, rel=1e-12)
    sd_u = np.linalg.norm(W / np.linalg.norm(W) - mu / np.linalg.norm(mu)) ** 2
    assert F.self_duality(W, H, y, centered=False) == pytest.approx(sd_u, rel=1e-12)
    ncc = ref_ncc_pred(H, mu)
    assert F.ncc_accuracy(H, y) == pytest.approx(np.mean(ncc == y))
    clf = np.array([int(np.argmax([W[c] @ h + b[c] for c in range(K)])) for h in H])
    assert F.nc4_agreement(H, y, W, b) == pytest.approx(np.mean(clf == ncc))
    clf0 = np.array([int(np.argmax([W[c] @ h for c in range(K)])) for h in H])
    assert F.nc4_agreement(H, y, W) == pytest.approx(np.mean(clf0 == ncc))
    # a weight matrix with rows collinear (either sign) with class means, plus a zero row, is DNC3-aligned
    W3 = np.stack([2 * mu[1], -0.5 * mu[3], np.zeros(D), mu[0]])
    assert F.nc3_alignment(W3, H, y) == pytest.approx(0.0, abs=1e-14)
    assert F.negative_fraction(H) == pytest.approx(np.mean(H < 0))


def test_collapse_metrics_dict_matches_pure_functions_and_is_json(required_metric_keys):
    H, y = random_problem(4)
    K = 5
    W = np.random.default_rng(1).normal(size=(K, 8))
    out = F.collapse_metrics(H, y, W)
    json.dumps(out.to_dict())  # JSON-serialisable
    for key in required_metric_keys:
        assert key in out
    assert set(out) == set(F.METRIC_KEYS)
    mu = ref_means(H, y, K)
    SW, SB = ref_sigma_w(H, y, K), ref_sigma_b(H, y, K)
    assert out["nc1_trace_ratio"] == pytest.approx(np.trace(SW) / np.trace(SB), rel=1e-12)
    assert out["nc1_pinv"] == pytest.approx(ref_nc1_pinv(H, y, K), rel=1e-9)
    assert out["cdnv"] == pytest.approx(ref_cdnv(H, y, K), rel=1e-12)
    assert out["nc2_cond"] == pytest.approx(np.linalg.cond(mu.T), rel=1e-10)
    assert out["rank"] == np.linalg.matrix_rank(mu.T)
    assert out["effective_rank"] == pytest.approx(ref_effective_rank(mu.T), rel=1e-12)
    np.testing.assert_allclose(out["singular_values"], np.linalg.svd(mu.T, compute_uv=False), rtol=1e-12)
    assert out["ncc_accuracy"] == pytest.approx(np.mean(ref_ncc_pred(H, mu) == y))
    assert out["nc4_agreement"] == pytest.approx(F.nc4_agreement(H, y, W))
    assert out["self_duality"] == pytest.approx(F.self_duality(W, H, y))
    assert out["negative_fraction"] == pytest.approx(np.mean(H < 0))
    assert out["num_samples"] == H.shape[0] and out["num_classes"] == K and out["dim"] == 8
    assert out["warnings"] == []


def test_torch_input_float32_and_float64_agree_with_numpy():
    H, y = random_problem(5)
    out_np = F.collapse_metrics(H, y)
    out_t = F.collapse_metrics(torch.tensor(H), torch.tensor(y))
    assert out_t["nc1_trace_ratio"] == pytest.approx(out_np["nc1_trace_ratio"], rel=1e-14)
    H32 = torch.tensor(H, dtype=torch.float32)
    out32 = F.collapse_metrics(H32, torch.tensor(y))
    ref32 = F.collapse_metrics(H32.double().numpy(), y)  # same values, float64 tolerance
    assert out32["nc1_trace_ratio"] == pytest.approx(ref32["nc1_trace_ratio"], rel=1e-12)
    # the dtype rule max(D, K)·eps·σ_1 on the scale of the centred means when that is the smaller one
    X = H32.double().numpy()
    M = np.stack([X[y == k].mean(0) for k in range(int(y.max()) + 1)])
    sB1 = np.linalg.svd(M - X.mean(0), compute_uv=False)[0]
    s1 = min(out32["singular_values"][0], sB1)
    assert out32["rank_tolerance"] == pytest.approx(8 * np.finfo(np.float32).eps * s1)


def test_pinv_and_nc2_cut_off_from_centred_means_float32_offset():
    """float32 features around a common offset 1e4 (class spread 0.3): the offset inflates σ_1(M) and the
    dtype tolerance with it; Σ_B^+ and nc2_cond must still see all K-1 (K) directions.  Reference: the
    same float32 data shifted back in float64 (shift-invariant metrics), explicit Σ_W, Σ_B, numpy's pinv."""
    rng = np.random.default_rng(0)
    K, D, n = 10, 64, 50
    y = np.arange(K).repeat(n)
    mu = 0.3 * rng.standard_normal((K, D))
    H = (1e4 + mu[y] + 0.3 * rng.standard_normal((K * n, D))).astype(np.float32)
    X = H.astype(np.float64) - 1e4  # exact in float64
    M = np.stack([X[y == k].mean(0) for k in range(K)])
    R = X - M[y]
    S_W = R.T @ R / len(y)
    S_B = (M - X.mean(0)).T @ (M - X.mean(0)) / K
    ref = np.trace(S_W @ np.linalg.pinv(S_B, rcond=1e-10, hermitian=True)) / K
    assert F.nc1_pinv(H, y) == pytest.approx(ref, rel=1e-9)
    assert F.collapse_metrics(H, y)["nc1_pinv"] == pytest.approx(ref, rel=1e-9)
    assert math.isfinite(F.nc2_cond(H, y))
    assert F.collapse_metrics(H, y)["rank"] == K


# ------------------------------------------------------------------------------------------------------------
# Structured inputs
# ------------------------------------------------------------------------------------------------------------


def collapsed(means, n):
    """Every sample equal to its class mean: features (K n, D), labels arange(K).repeat(n)."""
    K = means.shape[0]
    return np.repeat(means, n, axis=0), np.arange(K).repeat(n)


def test_exact_orthogonal_frame():
    K, D, n, a = 4, 6, 3, 2.5
    Q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(D, D)))
    mu = a * Q[:K]  # orthogonal rows, equal norms
    rng = np.random.default_rng(1)
    noise = rng.normal(size=(K * n, D))
    y = np.arange(K).repeat(n)
    noise -= np.stack([noise[y == c].mean(0) for c in range(K)])[y]  # keep the class means exact
    H = mu[y] + 0.1 * noise
    out = F.collapse_metrics(H, y, mu)
    assert out["nc2_cond"] == pytest.approx(1.0, abs=1e-12)
    assert out["nc2_orth_error"] == pytest.approx(0.0, abs=1e-12)
    assert out["equinorm_uncentered"] == pytest.approx(0.0, abs=1e-12)
    assert out["rank"] == K
    assert out["effective_rank"] == pytest.approx(K, rel=1e-12)
    assert out["stable_rank"] == pytest.approx(K, rel=1e-12)
    np.testing.assert_allclose(out["singular_values"], [a] * K, rtol=1e-12)
    assert out["nc3_alignment"] == pytest.approx(0.0, abs=1e-12)
    # centring an equinorm orthogonal frame gives a simplex ETF: Gram a²(I − 11ᵀ/K)
    assert out["nc2_etf_error"] == pytest.approx(0.0, abs=1e-12)
    assert F.nc2_etf_error(mu) == pytest.approx(0.0, abs=1e-12)
    Hc, yc = collapsed(mu, n)
    outc = F.collapse_metrics(Hc, yc)
    assert outc["nc1_trace_ratio"] == pytest.approx(0.0, abs=1e-28)
    assert outc["cdnv"] == pytest.approx(0.0, abs=1e-28)
    assert outc["ncc_accuracy"] == 1.0


def test_exact_simplex_etf():
    K, D, n = 5, 7, 2
    P = np.eye(K) - np.ones((K, K)) / K
    E = np.zeros((K, D))
    E[:, :K] = np.sqrt(K / (K - 1)) * P  # rows: simplex ETF in R^D, centred, unit norms
    shift = np.arange(D, dtype=float)  # a global offset: centring must remove it
    H, y = collapsed(E + shift, n)
    out = F.collapse_metrics(H, y)
    assert out["nc2_etf_error"] == pytest.approx(0.0, abs=1e-12)
    assert out["equinorm"] == pytest.approx(0.0, abs=1e-12)
    assert out["equiangularity"] == pytest.approx(0.0, abs=1e-12)
    cos = F.class_mean_gram(E, normalize="cosine")
    np.testing.assert_allclose(cos[~np.eye(K, dtype=bool)], -1 / (K - 1), atol=1e-12)
    # centred ETF has rank K-1: bias-free DNC2 condition number is infinite -> None + warning
    H0, y0 = collapsed(E, n)
    out0 = F.collapse_metrics(H0, y0)
    assert out0["rank"] == K - 1
    assert out0["nc2_cond"] is None
    assert any("nc2_cond" in w and "rank 4 < K" in w for w in out0["warnings"])
    assert math.isinf(F.nc2_cond(H0, y0))
    assert out0["nc2_orth_error"] == pytest.approx(ref_frame_error(E, np.eye(K)), rel=1e-12)


def test_identical_class_means_give_none_with_warning():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 4))
    K = 3
    H = np.concatenate([X] * K)  # every class holds the same samples -> identical means
    y = np.arange(K).repeat(6)
    out = F.collapse_metrics(H, y)
    json.dumps(out.to_dict())
    for key in ("nc1_trace_ratio", "nc1_pinv", "cdnv", "nc2_etf_error", "equinorm", "equiangularity"):
        assert out[key] is None, key
        assert any(w.startswith(key) and "identical" in w for w in out["warnings"]), key
    assert out["nc2_cond"] is None  # rank 1 < K
    assert out["rank"] == 1
    assert math.isinf(F.nc1_trace_ratio(H, y))
    assert math.isinf(F.cdnv(H, y))


def test_rank_deficient_means():
    rng = np.random.default_rng(3)
    K, D, r, n = 6, 10, 3, 4
    mu = rng.normal(size=(K, r)) @ rng.normal(size=(r, D))  # rank 3
    H, y = collapsed(mu, n)
    H = H + 0.01 * rng.normal(size=H.shape)
    mu_hat = ref_means(H, y, K)
    out = F.collapse_metrics(H, y)
    assert out["rank"] == np.linalg.matrix_rank(mu_hat.T) == K  # noise makes it full rank numerically ...
    out_rtol = F.collapse_metrics(H, y, rtol=1e-2)  # ... but numerically low rank at rtol = 1e-2
    assert out_rtol["rank"] == r
    Hc, yc = collapsed(mu, n)
    outc = F.collapse_metrics(Hc, yc)
    assert outc["rank"] == r
    assert outc["nc2_cond"] is None
    assert F.numerical_rank(mu) == np.linalg.matrix_rank(mu) == r
    s = np.linalg.svd(mu, compute_uv=False)
    assert F.effective_rank(mu) == pytest.approx(ref_effective_rank(mu), rel=1e-10)
    assert F.stable_rank(mu) == pytest.approx(np.sum(s**2) / s[0] ** 2, rel=1e-12)
    # Sigma_B has rank < K-1: nc1_pinv uses the non-zero eigenpairs and says so
    assert any("nc1_pinv" in w and "rank" in w for w in outc["warnings"])


def test_rank_tolerance_is_dtype_aware_and_overridable():
    U, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(20, 4)))
    M = U @ np.diag([1.0, 0.5, 0.1, 1e-9])  # 4th direction far below float32 precision, above float64
    assert F.numerical_rank(M) == 4
    assert F.numerical_rank(M.astype(np.float32)) == 3
    assert F.numerical_rank(torch.tensor(M, dtype=torch.float32)) == 3
    assert F.numerical_rank(M, dtype=np.float32) == 3
    assert F.numerical_rank(M, rtol=0.2) == 2
    assert F.numerical_rank(np.zeros((3, 2))) == 0


# ------------------------------------------------------------------------------------------------------------
# Bad input
# ------------------------------------------------------------------------------------------------------------


def test_bad_input_raises_config_error():
    H, y = random_problem(0)
    msg = r"labels\.shape == \(29,\), must be \(30,\).*features\.shape == \(30, 8\)"
    with pytest.raises(ConfigError, match=msg):
        F.collapse_metrics(np.vstack([H, H[:1]]), y)
    with pytest.raises(ConfigError, match=r"features\.shape == \(29,\), must be \(N, D\)"):
        F.collapse_metrics(H[:, 0], y)
    with pytest.raises(ConfigError, match=r"labels contains \[7\], must be in 0\.\.4"):
        F.collapse_metrics(H, np.where(y == 0, 7, y), num_classes=5)
    with pytest.raises(ConfigError, match=r"labels contains -1"):
        F.collapse_metrics(H, np.where(y == 0, -1, y))
    with pytest.raises(ConfigError, match=r"no sample of class\(es\) \[2\].*drop_empty=True"):
        F.collapse_metrics(H, np.where(y == 2, 3, y))
    Hn = H.copy()
    Hn[3, 1] = np.nan
    Hn[4, 2] = np.inf
    with pytest.raises(ConfigError, match=r"features has 2 non-finite entries"):
        F.collapse_metrics(Hn, y)
    with pytest.raises(ConfigError, match=r"number of classes with samples == 1, must be >= 2"):
        F.collapse_metrics(H, np.zeros_like(y))
    with pytest.raises(ConfigError, match=r"num_classes == 1, must be >= 2"):
        F.collapse_metrics(H, np.zeros_like(y), num_classes=1)
    with pytest.raises(ConfigError, match=r"labels contains \[0\.5\]"):
        F.collapse_metrics(H, np.where(y == 0, 0.5, y.astype(float)))
    with pytest.raises(ConfigError, match=r"weights\.shape == \(5, 3\), must be \(P, 8\)"):
        F.collapse_metrics(H, y, np.ones((5, 3)))
    with pytest.raises(ConfigError, match=r"normalize == 'x'"):
        F.class_mean_gram(H, y, normalize="x")


def test_drop_empty_classes():
    H, y = random_problem(1)
    y2 = np.where(y == 2, 3, y)  # class 2 empty
    out = F.collapse_metrics(H, y2, drop_empty=True)
    assert out["num_classes"] == 4 and out["classes"] == [0, 1, 3, 4]
    keep = [0, 1, 3, 4]
    remap = {c: i for i, c in enumerate(keep)}
    yr = np.array([remap[c] for c in y2])
    SW, SB = ref_sigma_w(H, yr, 4), ref_sigma_b(H, yr, 4)
    assert out["nc1_trace_ratio"] == pytest.approx(np.trace(SW) / np.trace(SB), rel=1e-12)
    # a classifier over the original 5 classes keeps the rows of the kept classes
    W = np.random.default_rng(0).normal(size=(5, 8))
    out_w = F.collapse_metrics(H, y2, W, drop_empty=True)
    assert out_w["nc4_agreement"] == pytest.approx(F.nc4_agreement(H, yr, W[keep]))
    # an empty class at the top is only visible through num_classes
    with pytest.raises(ConfigError, match=r"no sample of class\(es\) \[5\]"):
        F.collapse_metrics(H, y, num_classes=6)
    assert F.collapse_metrics(H, y, num_classes=6, drop_empty=True)["num_classes"] == 5


def test_stray_huge_label_is_reported_without_allocating_per_class_arrays():
    H, y = random_problem(2)
    y = y.copy()
    y[0] = 10**12
    with pytest.raises(ConfigError, match=r"no sample of class\(es\) \[5, 6, 7.*999999999995 empty"):
        F.collapse_metrics(H, y)


def test_fast_path_from_moments_equals_collapse_metrics():
    H, y = random_problem(6)
    values, reasons = F.metrics_from_moments(F.moments(H, y))
    ref = F.collapse_metrics(H, y)
    assert reasons == {}
    for key in ("nc1_trace_ratio", "nc1_pinv", "cdnv", "nc2_cond", "nc2_etf_error", "effective_rank"):
        assert values[key] == ref[key], key
    assert values["rank"] == ref["rank"]


def test_fewer_dimensions_than_classes():
    H, y = random_problem(8, D=3)  # D = 3 < K = 5: M cannot have K orthogonal columns
    out = F.collapse_metrics(H, y)
    mu = ref_means(H, y, 5)
    s = np.linalg.svd(mu.T, compute_uv=False)
    np.testing.assert_allclose(out["singular_values"], [*s, 0.0, 0.0], rtol=1e-12)
    assert out["rank"] == 3
    assert out["nc2_cond"] is None and any("(D < K)" in w for w in out["warnings"])
    assert math.isinf(F.nc2_cond(H, y))
    assert out["nc1_trace_ratio"] == pytest.approx(
        np.trace(ref_sigma_w(H, y, 5)) / np.trace(ref_sigma_b(H, y, 5)), rel=1e-12
    )


def test_wh_etf_error_zhu_et_al_against_explicit_formula():
    """Zhu et al. 2021's W–H relation ‖W M̄ᵀ/‖W M̄ᵀ‖_F − (I − 11ᵀ/K)/√(K−1)‖_F, computed here from explicit
    matrices; 0 for a classifier equal to simplex-ETF centred means, and not Papyan's self-duality."""
    rng = np.random.default_rng(3)
    K, D, n = 4, 7, 6
    y = np.arange(K).repeat(n)
    H = rng.standard_normal((K * n, D)) + rng.standard_normal((K, D))[y]
    W = rng.standard_normal((K, D))
    Mbar = np.stack([H[y == k].mean(0) for k in range(K)]) - H.mean(0)
    G = W @ Mbar.T
    T = (np.eye(K) - np.ones((K, K)) / K) / np.sqrt(K - 1)
    ref = np.linalg.norm(G / np.linalg.norm(G) - T)
    assert F.wh_etf_error(W, H, y) == pytest.approx(ref, rel=1e-12)
    out = F.collapse_metrics(H, y, weights=W)
    assert out["wh_etf_error"] == pytest.approx(ref, rel=1e-12)
    assert out["wh_etf_error"] != pytest.approx(out["self_duality"])
    # simplex ETF means (rows of I − 11ᵀ/K embedded in D dims), classifier = 3 × the means: zero error
    E = np.zeros((K, D))
    E[:, :K] = np.eye(K) - 1.0 / K
    assert F.wh_etf_error(3.0 * E, E) == pytest.approx(0.0, abs=1e-12)
    # W rotated within the class-mean span so that W M̄ᵀ is no longer ETF-shaped: error > 0
    assert F.wh_etf_error(E[::-1], E) > 0.1
