"""The register-blocked GEMMs of the compiled step (:mod:`deepcollapse.dufm.microkernels`): each product
against float64 numpy on shapes that hit every block and edge; with the micro path forced, the compiled
step keeps the batching bit-identity and its agreement with the numpy path; the path choice."""

from __future__ import annotations

import numpy as np
import pytest

from deepcollapse._core.checks import ConfigError
from deepcollapse.dufm import microkernels as mk
from deepcollapse.dufm.compiled import AVAILABLE as COMPILED
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.kernel import advance
from deepcollapse.dufm.model import init_params

pytestmark = pytest.mark.skipif(not COMPILED, reason="numba is not installed")
# (m, k, n): rows of C, inner dimension, columns; blocks of 3 rows / 4 k-terms / 5 × 3 dot products and
# every remainder (m, k < block; m, k not multiples), n = 1 and odd; the thin paths (mm_tn with k <= 4, mm_nt
# with m < 5 <= k: a last layer of K <= 4 classes)
SHAPES = [
    (1, 1, 1),
    (2, 3, 5),
    (3, 4, 7),
    (5, 3, 9),
    (7, 9, 1),
    (10, 30, 13),
    (30, 10, 17),
    (31, 6, 40),
    (3, 11, 37),
    (2, 5, 8),
    (4, 2, 33),
    (30, 1, 9),
]


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-13), ("float32", 2e-6)])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_each_product_equals_float64_numpy(m: int, k: int, n: int, dtype: str, tol: float) -> None:
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    A, B, At, Bt = (rng.standard_normal(s).astype(dtype) for s in [(m, k), (k, n), (k, m), (n, k)])
    A64, At64, B64 = A.astype(np.float64), At.astype(np.float64), B.astype(np.float64)
    for fn, x, y, exact in [(mk.mm_nn, A, B, A64 @ B64), (mk.mm_tn, At, B, At64.T @ B64)]:
        C = np.full((m, n), np.nan, dtype)  # every entry must be written
        fn(x, y, C)
        np.testing.assert_allclose(C, exact, rtol=0, atol=tol * k)
    G = rng.standard_normal((m, n)).astype(dtype)
    C = np.full((m, k), np.nan, dtype)
    mk.mm_nt(G, Bt.T.copy(), C)  # (m, n) · (k, n)ᵀ
    np.testing.assert_allclose(C, G.astype(np.float64) @ Bt.astype(np.float64), rtol=0, atol=tol * n)


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_fused_relu_kernels_equal_the_product_then_the_separate_pass(m: int, k: int, n: int) -> None:
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    A, B, At, P = (rng.standard_normal(s).astype(np.float32) for s in [(m, k), (k, n), (k, m), (m, n)])
    C, F = np.empty((m, n), np.float32), np.full((m, n), np.nan, np.float32)
    mk.mm_nn(A, B, C)
    mk.mm_nn_relu(A, B, F)  # σ = ReLU: x ≤ 0 → 0
    assert np.array_equal(F, np.where(C <= 0, np.float32(0), C))
    mk.mm_tn(At, B, C)
    mk.mm_tn_relu_d(At, B, F, P)  # ⊙ σ'(P) = 1[P > 0]
    assert np.array_equal(F, C * (P > 0).astype(np.float32))


def _config(**kw) -> DUFMConfig:
    base = dict(classes=4, n=5, layers=3, width=[7, 5, 6], lam_h=0.01, lam_w=0.005, lr=0.1, steps=10, runs=5,
                dtype="float32", init_scale=0.6)  # fmt: skip
    return DUFMConfig(**{**base, **kw})


FAMILIES = [("mse", "relu", None), ("ce", "relu_eps", 0.4), ("mse", "linear", None)]


@pytest.mark.parametrize("loss,act,eps", FAMILIES)
def test_micro_path_runs_are_bit_identical_whatever_r_and_sub_batch(monkeypatch, loss, act, eps) -> None:
    monkeypatch.setenv("DEEPCOLLAPSE_GEMM", "micro")
    c = _config(loss=loss, activation=act, eps=eps)
    params = [t.numpy().copy() for t in init_params(c).tensors()]
    lrs = np.full(40, 0.1)
    args = (c.classes, c.n, c.lam_h, c.lam_w)
    ref, div = advance(params, lrs, 0, *args, sub_batch=4, family=c.family, kernel="compiled")
    assert div == {}
    for sub in (1, 2, 5):
        got, _ = advance(params, lrs, 0, *args, sub_batch=sub, family=c.family, kernel="compiled")
        assert all(np.array_equal(a, b) for a, b in zip(got, ref))
    alone, _ = advance([p[[3]] for p in params], lrs, 0, *args, family=c.family, kernel="compiled")
    assert all(np.array_equal(a[3], b[0]) for a, b in zip(ref, alone))


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 2e-5)])
@pytest.mark.parametrize("loss,act,eps", FAMILIES)
def test_micro_path_agrees_with_numpy_path_and_blas(monkeypatch, loss, act, eps, dtype, tol) -> None:
    c = _config(loss=loss, activation=act, eps=eps, dtype=dtype, runs=3)
    params = [t.numpy().copy() for t in init_params(c).tensors()]
    lrs = np.linspace(0.2, 0.05, 60)
    args = (c.classes, c.n, c.lam_h, c.lam_w)
    a, _ = advance(params, lrs, 0, *args, family=c.family, kernel="numpy")
    monkeypatch.setenv("DEEPCOLLAPSE_GEMM", "blas")
    b, _ = advance(params, lrs, 0, *args, family=c.family, kernel="compiled")
    monkeypatch.setenv("DEEPCOLLAPSE_GEMM", "micro")
    m, dm = advance(params, lrs, 0, *args, family=c.family, kernel="compiled")
    assert dm == {}
    for x, y, z, p0 in zip(a, b, m, params):
        assert not np.array_equal(z, p0)  # it moved
        for ref in (x, y):
            np.testing.assert_allclose(z, ref, rtol=0, atol=tol * max(1.0, float(np.abs(ref).max())))


def test_gemm_path_choice(monkeypatch) -> None:
    monkeypatch.delenv("DEEPCOLLAPSE_GEMM", raising=False)
    for kernel, want in [("Haswell", "micro"), ("Zen", "micro"), ("SkylakeX", "blas"), (None, "blas")]:
        monkeypatch.setattr(mk, "scipy_blas_kernel", lambda kernel=kernel: kernel)
        assert mk.gemm_path() == want and mk.gemm_path("auto") == want
    assert mk.gemm_path("micro") == "micro"
    monkeypatch.setattr(mk, "scipy_blas_kernel", lambda: "Zen")
    # auto on an AVX2 kernel, by shape: W_l products when d_{l+1} d_l <= 32² or a side <= 16, ∂W_l up to 64²
    assert mk.micro_layers([30, 30, 10]) == [(True, True, True)] * 2
    assert mk.micro_layers([64, 64, 128, 128, 3]) == [
        (False, True, False),
        (False, False, False),
        (False, False, False),
        (True, True, True),
    ]
    assert mk.micro_layers([128, 128], "micro") == [(True, True, True)]
    assert mk.micro_layers([30, 30], "blas") == [(False, False, False)]
    monkeypatch.setenv("DEEPCOLLAPSE_GEMM", "blas")
    monkeypatch.setattr(mk, "scipy_blas_kernel", lambda: "Haswell")
    assert mk.gemm_path() == "blas"
    monkeypatch.setenv("DEEPCOLLAPSE_GEMM", "fast")
    with pytest.raises(ConfigError, match="DEEPCOLLAPSE_GEMM == 'fast', must be one of 'auto', 'blas'"):
        mk.gemm_path()


def test_scipy_blas_kernel_is_a_name_or_none() -> None:
    from threadpoolctl import threadpool_info

    got = mk.scipy_blas_kernel()
    names = {i.get("architecture") for i in threadpool_info() if i.get("internal_api") == "openblas"}
    assert got is None or got in names
