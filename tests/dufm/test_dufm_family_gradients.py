"""Every loss x activation in both engines: analytic gradients == float64 autograd of an explicit objective
written here (torch.nn.functional cross-entropy, σ_ε by its piecewise definition), plain-GD steps, batching
bit-identity, and per-run divergence under cross-entropy at λ = 0."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from deepcollapse._core.checks import ConfigError
from deepcollapse.dufm.compiled import AVAILABLE as COMPILED
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.kernel import NumpyDUFM, advance, numpy_gradients, resolve_kernel
from deepcollapse.dufm.model import analytic_gradients, autograd_gradients, init_params, objective, targets
from deepcollapse.family import ACTIVATIONS, LOSSES

torch.set_num_threads(1)
EPS = 0.4
FAMILIES = [(lo, a) for lo in LOSSES for a in ACTIVATIONS]
KERNELS = ["numpy"] + (["compiled"] if COMPILED else [])


def _sigma(name: str, X: torch.Tensor) -> torch.Tensor:
    if name == "relu":
        return torch.where(X > 0, X, torch.zeros_like(X))
    if name == "linear":
        return X
    mid = X**2 * (2 * EPS - X) / EPS**2  # Definition 7's σ_ε as documented: piecewise, by torch.where
    return torch.where(X <= 0, torch.zeros_like(X), torch.where(X >= EPS, X, mid))


def _explicit(ps: list[torch.Tensor], K: int, n: int, lam_h, lam_w, loss: str, act: str) -> torch.Tensor:
    """The objective of ONE run from its definition (independent of the package's family code)."""
    N = K * n
    y = torch.arange(K).repeat_interleave(n)
    H = ps[0]
    for W in ps[1:-1]:
        H = _sigma(act, W @ H)
    out = ps[-1] @ H  # (K, N)
    if loss == "mse":
        fit = torch.sum((out - F.one_hot(y, K).T.double()) ** 2) / (2 * N)
    else:
        fit = F.cross_entropy(out.T, y, reduction="mean")
    reg = lam_h / 2 * torch.sum(ps[0] ** 2) + sum(lam / 2 * torch.sum(W**2) for lam, W in zip(lam_w, ps[1:]))
    return fit + reg


def _reference(params, c: DUFMConfig) -> list[torch.Tensor]:
    out = [torch.zeros_like(p, dtype=torch.float64) for p in params]
    for r in range(params[0].shape[0]):
        ps = [p[r].detach().double().clone().requires_grad_(True) for p in params]
        loss = _explicit(ps, c.classes, c.n, c.lam_h, c.lam_w, c.loss, c.activation)
        for o, g in zip(out, torch.autograd.grad(loss, ps)):
            o[r] = g
    return out


def _config(loss: str, act: str, **kw) -> DUFMConfig:
    base = dict(
        classes=3,
        n=4,
        layers=3,
        width=[5, 4, 6],
        lam_h=0.01,
        lam_w=[0.02, 0.005, 0.01],
        lr=0.3,
        steps=10,
        runs=3,
        dtype="float64",
        init_scale=[0.7, 0.6, 0.6, 0.6] if kw.get("layers", 3) == 3 else 0.5,
        loss=loss,
        activation=act,
        eps=EPS if act == "relu_eps" else None,
    )
    base.update(kw)
    return DUFMConfig(**base)


@pytest.mark.parametrize("lam", [None, 0.0])
@pytest.mark.parametrize("loss,act", FAMILIES)
def test_gradients_of_every_family_equal_float64_autograd(loss: str, act: str, lam: float | None) -> None:
    c = _config(loss, act, **({} if lam is None else {"lam_h": lam, "lam_w": lam}))
    fam = c.family
    P = init_params(c)
    ref = _reference(P.tensors(), c)
    Y = targets(c.classes, c.n)
    np_params = [t.numpy() for t in P.tensors()]
    engines = {
        "torch analytic": analytic_gradients(P.H1, P.weights, Y, c.lam_h, c.lam_w, family=fam),
        "torch autograd": autograd_gradients(P.H1, P.weights, Y, c.lam_h, c.lam_w, family=fam),
        "numpy kernel": [
            torch.from_numpy(g) for g in numpy_gradients(np_params, c.classes, c.n, c.lam_h, c.lam_w, fam)
        ],
    }
    for name, grads in engines.items():
        for g, gr in zip(grads, ref):
            assert g.shape == gr.shape
            assert torch.max(torch.abs(g - gr)).item() < 1e-10, name
    total, _, _ = objective(P.H1, P.weights, Y, c.lam_h, c.lam_w, family=fam)
    for r in range(c.runs):
        ps = [p[r] for p in P.tensors()]
        ref_r = _explicit(ps, c.classes, c.n, c.lam_h, c.lam_w, loss, act).item()
        assert total[r].item() == pytest.approx(ref_r, rel=1e-13)
    # the test exercises every piece of σ: negative pre-activations, and for σ_ε some inside (0, ε)
    pre = torch.bmm(P.weights[0], P.H1)
    assert (pre < 0).any() and (pre > EPS).any()
    if act == "relu_eps":
        assert ((pre > 0) & (pre < EPS)).any()


@pytest.mark.parametrize("loss,act", FAMILIES)
def test_numpy_step_is_plain_gd_for_every_family(loss: str, act: str) -> None:
    c = _config(loss, act)
    P = init_params(c)
    params = [t.numpy().copy() for t in P.tensors()]
    ref = _reference(P.tensors(), c)
    k = NumpyDUFM(params, c.classes, c.n, c.lam_h, c.lam_w, c.family)
    assert k.step(0.3) is None
    for new, old, g in zip(k.params, params, ref):
        np.testing.assert_allclose(new, old - 0.3 * g.numpy(), rtol=0, atol=1e-13)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("loss,act", FAMILIES)
def test_batched_runs_are_bit_identical_whatever_r_and_sub_batch(loss: str, act: str, kernel: str) -> None:
    c = _config(loss, act, dtype="float32", runs=5)
    params = [t.numpy().copy() for t in init_params(c).tensors()]
    lrs = np.full(40, 0.1)
    args = (c.classes, c.n, c.lam_h, c.lam_w)
    ref, div = advance(params, lrs, 0, *args, sub_batch=4, family=c.family, kernel=kernel)
    assert div == {}
    for sub in (1, 2, 5):
        got, _ = advance(params, lrs, 0, *args, sub_batch=sub, family=c.family, kernel=kernel)
        assert all(np.array_equal(a, b) for a, b in zip(got, ref))
    alone, _ = advance([p[[3]] for p in params], lrs, 0, *args, family=c.family, kernel=kernel)
    assert all(np.array_equal(a[3], b[0]) for a, b in zip(ref, alone))


@pytest.mark.skipif(not COMPILED, reason="numba is not installed")
@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 2e-5)])
@pytest.mark.parametrize("loss,act", FAMILIES)
def test_numpy_and_compiled_kernels_agree(loss: str, act: str, dtype: str, tol: float) -> None:
    c = _config(loss, act, dtype=dtype, runs=3)
    params = [t.numpy().copy() for t in init_params(c).tensors()]
    lrs = np.linspace(0.2, 0.05, 60)
    args = (c.classes, c.n, c.lam_h, c.lam_w)
    a, da = advance(params, lrs, 0, *args, family=c.family, kernel="numpy")
    b, db = advance(params, lrs, 0, *args, family=c.family, kernel="compiled")
    assert da == db == {}
    for x, y, p0 in zip(a, b, params):
        assert not np.array_equal(x, p0)  # they moved
        np.testing.assert_allclose(x, y, rtol=0, atol=tol * max(1.0, float(np.abs(x).max())))


def test_kernel_selection_falls_back_to_numpy_without_numba(monkeypatch) -> None:
    import deepcollapse.dufm.compiled as compiled

    monkeypatch.delenv("DEEPCOLLAPSE_KERNEL", raising=False)
    assert resolve_kernel() == ("compiled" if COMPILED else "numpy")
    monkeypatch.setattr(compiled, "AVAILABLE", False)
    assert resolve_kernel() == "numpy" and resolve_kernel("auto") == "numpy"
    with pytest.raises(ConfigError, match="kernel == 'compiled', must be 'numpy' or 'auto'"):
        resolve_kernel("compiled")
    monkeypatch.setenv("DEEPCOLLAPSE_KERNEL", "fast")
    with pytest.raises(ConfigError, match="DEEPCOLLAPSE_KERNEL == 'fast'"):
        resolve_kernel()
    monkeypatch.setenv("DEEPCOLLAPSE_KERNEL", "numpy")
    assert resolve_kernel() == "numpy"


@pytest.mark.parametrize("kernel", KERNELS)
def test_cross_entropy_overflow_at_lam_zero_marks_only_that_run_diverged(kernel: str) -> None:
    """CE at λ = 0: a run whose logits overflow float32 is diverged at that step; the others go on."""
    c = _config("ce", "relu", dtype="float32", lam_h=0.0, lam_w=0.0, runs=3)
    params = [t.numpy().copy() for t in init_params(c).tensors()]
    bad = [p.copy() for p in params]
    for p in bad:  # every parameter of run 1 times 1e13: its logits scale by 1e52, beyond float32 (3.4e38)
        p[1] *= np.float32(1e13)
    lrs = np.full(30, 0.3)
    with np.errstate(all="raise"):  # the kernel silences the overflow it detects; nothing leaks
        new, div = advance(
            bad, lrs, 7, c.classes, c.n, c.lam_h, c.lam_w, sub_batch=3, family=c.family, kernel=kernel
        )
    assert div == {1: 7}
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(new, bad))  # frozen where it diverged
    ref, _ = advance(
        [p[[0, 2]] for p in params], lrs, 7, c.classes, c.n, 0.0, c.lam_w, family=c.family, kernel=kernel
    )
    for a, b in zip(new, ref):
        assert np.array_equal(a[[0, 2]], b) and np.isfinite(b).all()


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_sum_that_overflows_while_every_element_is_finite_is_divergence(kernel: str) -> None:
    """Every output entry finite (≈ 3e37 < float32 max 3.4e38) but their sum overflows: diverged at once."""
    c = _config(
        "mse", "linear", dtype="float32", layers=1, width=[1], runs=2, lam_h=0.0, lam_w=0.0, init_scale=0.5
    )
    params = [t.numpy().copy() for t in init_params(c).tensors()]
    params[0][0] = np.float32(1e19)  # H1 (1, 1, N): run 0
    params[1][0] = np.float32(3e18)  # W_1 (1, K, 1): every output entry 3e37, Σ over K N = 12 entries: 3.6e38
    out = params[1][0] @ params[0][0]
    with np.errstate(over="ignore"):
        assert np.isfinite(out).all() and not np.isfinite(out.sum(dtype=np.float32))
    new, div = advance(
        params, np.full(3, 0.1), 0, c.classes, c.n, 0.0, c.lam_w, family=c.family, kernel=kernel
    )
    assert div == {0: 0}
    assert np.isfinite(new[0][1]).all() and 1 not in div


def test_runtime_estimate_interpolates_benchmark_rows() -> None:
    from deepcollapse.dufm.kernel import estimate_runs_steps_per_s, flops_per_step

    small = DUFMConfig(classes=3, n=50, layers=4, width=30).shapes
    big = DUFMConfig(classes=10, n=50, layers=4, width=30).shapes
    fs, fb = flops_per_step(small), flops_per_step(big)
    assert fs == 3 * 2 * 50 * 3 * (30 * 30 * 3 + 3 * 30) and fb == 3 * 2 * 500 * (30 * 30 * 3 + 10 * 30)
    rows = [
        {"flops_per_step": fs, "runs_steps_per_s": 1e9 / fs},  # 1 GFLOP/s at the small size
        {"flops_per_step": fb, "runs_steps_per_s": 3e9 / fb},  # 3 GFLOP/s at the flagship
    ]
    assert estimate_runs_steps_per_s(big, rows) == pytest.approx(3e9 / fb)
    assert estimate_runs_steps_per_s(big, rows, workers=2) == pytest.approx(6e9 / fb)
    mid = DUFMConfig(classes=6, n=50, layers=4, width=30).shapes
    fm = flops_per_step(mid)
    w = (np.log(fm) - np.log(fs)) / (np.log(fb) - np.log(fs))  # linear in log FLOPs
    assert estimate_runs_steps_per_s(mid, rows) == pytest.approx((1e9 + w * 2e9) / fm)
    huge = DUFMConfig(classes=15, n=50, layers=7, width=128).shapes
    assert estimate_runs_steps_per_s(huge, rows) == pytest.approx(3e9 / flops_per_step(huge))  # held flat
