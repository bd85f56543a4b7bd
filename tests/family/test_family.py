"""The model family: values and derivatives against independent computations (float64 torch autograd,
central finite differences, per-sample loops), Definition 7's conditions, in-place hooks, validation."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse.family import ACTIVATIONS, LOSSES, get_family

FAMILIES = [(lo, a) for lo in LOSSES for a in ACTIVATIONS]


def _act(name: str, eps: float = 0.3):
    return get_family("mse", name, eps if name == "relu_eps" else None).activation


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_derivative_matches_autograd_and_finite_differences(name: str) -> None:
    act = _act(name)
    rng = np.random.default_rng(0)
    # avoid the kinks of ReLU (0) and the points 0, ε of σ_ε where one-sided differences disagree
    X = rng.uniform(-1.0, 1.0, size=(3, 7, 11))
    X[np.abs(X) < 1e-3] += 0.01
    X[np.abs(X - 0.3) < 1e-3] += 0.01
    # autograd of the torch forward (a separate implementation from the numpy derivative)
    t = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(act.torch_forward(t).sum(), t)
    np.testing.assert_allclose(act.derivative(X), g.numpy(), rtol=0, atol=1e-12)
    # central differences of the numpy forward
    h = 1e-6
    fd = (act.forward(X + h) - act.forward(X - h)) / (2 * h)
    np.testing.assert_allclose(act.derivative(X), fd, rtol=0, atol=1e-7)
    # numpy and torch forwards agree
    np.testing.assert_allclose(act.forward(X), act.torch_forward(torch.tensor(X)).numpy(), atol=1e-15)
    np.testing.assert_allclose(act.derivative(X), act.torch_derivative(torch.tensor(X)).numpy(), atol=1e-15)


def test_relu_and_linear_values() -> None:
    X = np.array([-2.0, -0.0, 0.0, 1e-300, 3.5])
    np.testing.assert_array_equal(_act("relu").forward(X), [0.0, 0.0, 0.0, 1e-300, 3.5])
    np.testing.assert_array_equal(_act("relu").derivative(X), [0.0, 0.0, 0.0, 1.0, 1.0])  # ReLU'(0) := 0
    np.testing.assert_array_equal(_act("linear").forward(X), X)
    np.testing.assert_array_equal(_act("linear").derivative(X), np.ones(5))


@pytest.mark.parametrize("eps", [1e-3, 0.1, 2.0])
def test_relu_eps_satisfies_definition_7(eps: float) -> None:
    act = get_family("mse", "relu_eps", eps).activation
    outside = np.concatenate([-np.logspace(-6, 3, 50), [0.0, eps], eps + np.logspace(-6, 3, 50)])
    # (i) σ_ε = ReLU on (−∞, 0] ∪ [ε, ∞)
    np.testing.assert_allclose(act.forward(outside), np.maximum(outside, 0.0), rtol=1e-15, atol=0)
    inside = eps * np.linspace(0, 1, 2001)[1:-1]
    s = act.forward(inside)
    # (ii) 0 < σ_ε(x) < x on (0, ε)
    assert np.all(s > 0) and np.all(s < inside)
    # (iii) C¹: one-sided difference quotients agree at 0 and ε; σ_ε' bounded (by 4/3) and > 0 on (0, ε)
    for x0 in (0.0, eps):
        h = eps * 1e-7
        left = (act.forward(np.array([x0])) - act.forward(np.array([x0 - h]))) / h
        right = (act.forward(np.array([x0 + h])) - act.forward(np.array([x0]))) / h
        assert abs(left[0] - right[0]) < 1e-5
    d = act.derivative(inside)
    assert np.all(d > 0) and d.max() <= 4.0 / 3.0 + 1e-12
    assert abs(act.derivative(np.array([2 * eps / 3]))[0] - 4.0 / 3.0) < 1e-12  # the bound is attained
    # and the derivative is continuous everywhere (it is the C¹ claim)
    xs = np.linspace(-eps, 2 * eps, 30001)
    assert np.max(np.abs(np.diff(act.derivative(xs)))) < 1e-3


def _ce_loop(out: np.ndarray, labels: np.ndarray) -> float:
    """Mean cross-entropy sample by sample with Python floats (an independent reference)."""
    total = 0.0
    for i, y in enumerate(labels):
        col = [float(v) for v in out[:, i]]
        m = max(col)
        total += m + math.log(sum(math.exp(v - m) for v in col)) - col[y]
    return total / len(labels)


@pytest.mark.parametrize("loss", LOSSES)
def test_loss_values_and_residuals(loss: str) -> None:
    fam = get_family(loss, "relu")
    K, n = 4, 3
    Y = fam.targets(K, n)
    np.testing.assert_array_equal(Y, np.repeat(np.eye(K), n, axis=1))
    labels = np.repeat(np.arange(K), n)
    rng = np.random.default_rng(1)
    out = rng.normal(size=(2, K, K * n)) * 3
    v = fam.loss.value(out, Y)
    for r in range(2):
        if loss == "mse":
            ref = sum((out[r, k, i] - Y[k, i]) ** 2 for k in range(K) for i in range(K * n)) / (2 * K * n)
        else:
            ref = _ce_loop(out[r], labels)
        assert v[r] == pytest.approx(ref, rel=1e-13)
    # residual = N ∂value/∂out, against float64 autograd of the torch value
    t = torch.tensor(out, requires_grad=True)
    (g,) = torch.autograd.grad(fam.loss.torch_value(t, torch.tensor(Y)).sum(), t)
    np.testing.assert_allclose(fam.loss.residual(out, Y), K * n * g.numpy(), rtol=0, atol=1e-13)
    np.testing.assert_allclose(
        fam.loss.torch_value(torch.tensor(out), torch.tensor(Y)).numpy(), v, rtol=1e-14
    )
    np.testing.assert_allclose(
        fam.loss.torch_residual(torch.tensor(out), torch.tensor(Y)).numpy(),
        fam.loss.residual(out, Y),
        atol=1e-15,
    )


def test_cross_entropy_is_stable_for_huge_logits() -> None:
    fam = get_family("ce", "relu")
    Y = fam.targets(3, 1)
    out = np.array([[[1e30, 0.0, -1e30], [0.0, 1e30, 0.0], [-1e30, 0.0, 1e30 + 2e14]]], dtype=np.float64)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        v = fam.loss.value(out, Y)
        res = fam.loss.residual(out, Y)
    assert np.isfinite(v).all() and np.isfinite(res).all()
    # every column's correct class wins by at least 2e14: each sample's cross-entropy underflows to 0
    assert v[0] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(res, 0.0, atol=1e-12)
    out32 = np.array([[[80.0, 0.0], [0.0, 90.0]]], dtype=np.float32)  # exp(90) overflows float32
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        assert np.isfinite(fam.loss.value(out32, fam.targets(2, 1, np.float32))).all()


@pytest.mark.parametrize("loss,act", FAMILIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_in_place_kernel_hooks_equal_the_functions(loss: str, act: str, dtype: type) -> None:
    fam = get_family(loss, act, 0.25 if act == "relu_eps" else None)
    rng = np.random.default_rng(2)
    pre = rng.normal(size=(3, 5, 8)).astype(dtype) * 0.5
    zeros = np.zeros_like(pre)
    post = np.empty_like(pre)
    scratch = np.empty_like(pre)
    fam.activation.forward_(pre, post, zeros, scratch)
    np.testing.assert_allclose(post, fam.activation.forward(pre), rtol=1e-6, atol=1e-7)
    G = rng.normal(size=pre.shape).astype(dtype)
    expect = G * fam.activation.derivative(pre)
    fam.activation.backprop_(G, pre, post, scratch, np.empty(pre.shape, bool))
    np.testing.assert_allclose(G, expect, rtol=1e-6, atol=1e-7)
    out = rng.normal(size=(3, 4, 8)).astype(dtype) * 4
    Y = fam.targets(4, 2, dtype)
    E = out.copy()
    fam.loss.residual_(E, Y, np.empty_like(E))
    np.testing.assert_allclose(E, fam.loss.residual(out, Y), rtol=1e-6, atol=1e-7)


def test_names_and_closed_forms() -> None:
    assert get_family().name == "mse+relu" and get_family().has_closed_form
    fam = get_family("ce", "relu_eps", 0.1)
    assert fam.name == "ce+relu_eps(0.1)" and fam.eps == 0.1 and not fam.has_closed_form
    assert not get_family("mse", "linear").has_closed_form
    assert get_family("ce", "linear") == get_family("ce", "linear")


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"loss": "hinge"}, "loss =="),
        ({"activation": "tanh"}, "activation =="),
        ({"activation": "relu_eps"}, "eps == None"),
        ({"activation": "relu_eps", "eps": 0.0}, "eps == 0.0"),
        ({"activation": "relu_eps", "eps": -1}, "eps == -1"),
        ({"activation": "relu", "eps": 0.1}, "eps == 0.1"),
    ],
)
def test_bad_family_names_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=field.replace("(", r"\(")):
        get_family(**kwargs)


def test_family_does_not_import_torch() -> None:
    import subprocess

    code = (
        "import sys, deepcollapse.family as f; f.get_family('ce', 'relu_eps', 0.1); "
        "print('torch' in sys.modules)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "False"


@pytest.mark.parametrize("loss,act", FAMILIES)
def test_scalar_and_loop_forms_equal_the_vectorised_ones(loss: str, act: str) -> None:
    """The compiled kernel's one-number / plain-loop definitions agree with the numpy ones."""
    eps = 0.25
    fam = get_family(loss, act, eps if act == "relu_eps" else None)
    xs = np.concatenate([np.linspace(-1, 1, 41), [0.0, eps, 1e-9, -1e-9, eps * (1 - 1e-9)]])
    a = fam.activation
    scal = np.array([a.scalar(float(x), eps, 1.0 / eps**2) for x in xs])
    np.testing.assert_allclose(scal, a.forward(xs), rtol=1e-14, atol=1e-15)
    der = np.array([a.scalar_derivative(float(x), eps, 1.0 / eps**2) for x in xs])
    np.testing.assert_allclose(der, a.derivative(xs), rtol=1e-14, atol=1e-15)
    assert np.isnan(a.scalar(float("nan"), eps, 1.0 / eps**2))  # NaN is not hidden (divergence stays visible)
    rng = np.random.default_rng(3)
    out = rng.normal(size=(4, 6)) * 5
    Y = np.eye(4)[:, [0, 1, 2, 3, 0, 1]]
    E = out.copy()
    fam.loss.loop_residual_(E, Y, 0.5, np.empty(6), np.empty(6))
    np.testing.assert_allclose(E, 0.5 * fam.loss.residual(out, Y), rtol=1e-14, atol=1e-15)


def test_family_of_configs_and_saved_dicts() -> None:
    from deepcollapse.dufm.config import DUFMConfig
    from deepcollapse.family import family_of

    assert family_of({}).name == "mse+relu"  # a run folder from before the family fields
    assert family_of({"loss": "ce", "activation": "relu_eps", "eps": 0.2}).name == "ce+relu_eps(0.2)"
    assert family_of(DUFMConfig(activation="linear")).name == "mse+linear"
