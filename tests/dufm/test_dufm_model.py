"""The batched L-DUFM: config validation, per-run init, gradients against float64 autograd of eq. (1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.kernel import NumpyDUFM, advance, numpy_gradients
from deepcollapse.dufm.model import (
    analytic_gradients,
    autograd_gradients,
    init_params,
    init_run,
    objective,
    targets,
)
from deepcollapse.theory.objective import dufm_objective

torch.set_num_threads(1)


def _explicit_loss(
    H1: torch.Tensor, Ws: list[torch.Tensor], K: int, n: int, lam_h: float, lam_w: list[float]
):
    """Eq. (1) for ONE run written with explicit matrices (independent of the batched code)."""
    N = K * n
    Y = torch.zeros(K, N, dtype=torch.float64)
    for i in range(N):
        Y[i // n, i] = 1.0
    H = H1
    for W in Ws[:-1]:
        H = torch.clamp(W @ H, min=0.0)
    out = Ws[-1] @ H
    loss = torch.sum((out - Y) ** 2) / (2 * N) + lam_h / 2 * torch.sum(H1**2)
    for lam, W in zip(lam_w, Ws):
        loss = loss + lam / 2 * torch.sum(W**2)
    return loss


def _reference_grads(params: list[torch.Tensor], K, n, lam_h, lam_w) -> list[torch.Tensor]:
    """float64 autograd of the explicit per-run loss, run by run."""
    R = params[0].shape[0]
    out = [torch.zeros_like(p, dtype=torch.float64) for p in params]
    for r in range(R):
        ps = [p[r].detach().double().clone().requires_grad_(True) for p in params]
        loss = _explicit_loss(ps[0], ps[1:], K, n, lam_h, lam_w)
        for o, g in zip(out, torch.autograd.grad(loss, ps)):
            o[r] = g
    return out


def _config(**kw) -> DUFMConfig:
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
        init_scale=[0.7, 0.6, 0.6, 0.6],
    )
    base.update(kw)
    return DUFMConfig(**base)


# ------------------------------------------------------------------------------------------------------------
# config
# ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw, field",
    [
        ({"lam_h": -0.001}, "lam_h"),  # λ = 0 is allowed (unregularised, issue 9)
        ({"lam_w": [0.1, 0.1, -0.1, 0.1]}, "lam_w[2]"),
        ({"loss": "hinge"}, "loss"),
        ({"activation": "tanh"}, "activation"),
        ({"activation": "relu_eps"}, "eps"),
        ({"activation": "relu_eps", "eps": 0.0}, "eps"),
        ({"eps": 0.1}, "eps"),
        ({"lam_w": -1.0}, "lam_w"),
        ({"lam_w": [0.1, 0.1]}, "lam_w"),
        ({"width": 0}, "width"),
        ({"width": [3, 0, 3, 3]}, "width[1]"),
        ({"lr": 0.0}, "lr"),
        ({"lr": float("nan")}, "lr"),
        ({"lr": float("inf")}, "lr"),
        ({"classes": 0}, "classes"),
        ({"dtype": "float16"}, "dtype"),
        ({"init": "xavier"}, "init"),
        ({"lr_schedule": "linear"}, "lr_schedule"),
        ({"seeds": [1, 2]}, "seeds"),
        ({"grad": "numeric"}, "grad"),
    ],
)
def test_invalid_config_names_field(kw, field):
    with pytest.raises(ConfigError) as e:
        DUFMConfig(**kw)
    msg = str(e.value)
    assert msg.startswith(field) and "\n" not in msg


def test_yaml_round_trip_and_unknown_key(tmp_path):
    c = DUFMConfig(
        classes=6,
        n=3,
        layers=2,
        width=[7, 8],
        lam_w=[0.01, 0.02],
        seeds=[5, 9],
        runs=2,
        lr_schedule="cosine",
        lr_min=0.01,
    )
    p = tmp_path / "c.yaml"
    c.to_yaml(p)
    assert DUFMConfig.from_yaml(p) == c
    p.write_text(p.read_text() + "lamda: 0.1\n")
    with pytest.raises(ConfigError, match="lamda"):
        DUFMConfig.from_yaml(p)
    # the `lam` alias sets every λ unless given explicitly
    d = DUFMConfig.from_dict({"lam": 0.003, "lam_h": 0.001, "layers": 2})
    assert d.lam_h == 0.001 and d.lam_w == [0.003, 0.003]


def test_learning_rate_schedules():
    c = DUFMConfig(lr=0.4, lr_schedule="step", lr_decay=0.5, lr_decay_every=10, steps=100)
    assert [c.learning_rate(t) for t in (0, 9, 10, 25)] == [0.4, 0.4, 0.2, 0.1]
    c = DUFMConfig(lr=0.4, lr_schedule="cosine", lr_min=0.1, steps=100)
    assert c.learning_rate(0) == pytest.approx(0.4)
    assert c.learning_rate(50) == pytest.approx(0.25)
    assert c.learning_rate(100) == pytest.approx(0.1)


# ------------------------------------------------------------------------------------------------------------
# initialisation
# ------------------------------------------------------------------------------------------------------------
def test_run_is_independent_of_batch_size():
    c = _config(runs=4, seed=10, dtype="float32")
    P = init_params(c)
    for r in range(4):
        single = init_run(c, 10 + r)
        for a, b in zip(P.tensors(), single):
            assert torch.equal(a[r], b)
    c1 = _config(runs=1, seeds=[12], dtype="float32")
    assert torch.equal(init_params(c1).H1[0], P.H1[2])


def test_default_init_scales():
    c = DUFMConfig(width=30, layers=4, runs=1, dtype="float64")
    p = init_run(c, 0)
    assert c.init_scale[0] == 1.0
    assert p[0].std().item() == pytest.approx(1.0, rel=0.05)
    assert p[1].std().item() == pytest.approx(1 / math.sqrt(30), rel=0.1)
    u = init_run(DUFMConfig(width=30, layers=4, init="uniform", init_scale=0.5, dtype="float64"), 0)
    assert u[0].abs().max().item() <= 0.5 * math.sqrt(3) and u[0].std().item() == pytest.approx(0.5, rel=0.05)


# ------------------------------------------------------------------------------------------------------------
# objective and gradients
# ------------------------------------------------------------------------------------------------------------
def test_objective_matches_theory_objective():
    c = _config()
    P = init_params(c)
    total, fit, reg = objective(P.H1, P.weights, targets(3, 4), c.lam_h, c.lam_w)
    for r in range(c.runs):
        ref = dufm_objective(P.H1[r].numpy(), [W[r].numpy() for W in P.weights], c.lam_h, c.lam_w)
        assert total[r].item() == pytest.approx(ref.total, rel=1e-13)
        assert fit[r].item() == pytest.approx(ref.fit, rel=1e-13)
        assert reg[r].item() == pytest.approx(ref.reg, rel=1e-13)


@pytest.mark.parametrize("layers, width", [(1, [4]), (2, [5, 3]), (3, [5, 4, 6]), (4, [3, 5, 4, 2])])
def test_gradients_equal_float64_autograd(layers, width):
    c = _config(layers=layers, width=width, lam_w=0.013, init_scale=0.8)
    P = init_params(c)
    ref = _reference_grads(P.tensors(), c.classes, c.n, c.lam_h, c.lam_w)
    Y = targets(c.classes, c.n)
    for name, grads in [
        ("analytic", analytic_gradients(P.H1, P.weights, Y, c.lam_h, c.lam_w)),
        ("autograd", autograd_gradients(P.H1, P.weights, Y, c.lam_h, c.lam_w)),
        (
            "numpy",
            [
                torch.from_numpy(g)
                for g in numpy_gradients([t.numpy() for t in P.tensors()], c.classes, c.n, c.lam_h, c.lam_w)
            ],
        ),
    ]:
        for g, gr in zip(grads, ref):
            assert g.shape == gr.shape
            assert torch.max(torch.abs(g - gr)).item() < 1e-10, name
    # the ReLU is active somewhere (the test exercises the masks)
    if layers > 1:
        assert (torch.bmm(P.weights[0], P.H1) < 0).any()


def test_numpy_step_is_plain_gd():
    c = _config()
    P = init_params(c)
    params = [t.numpy().copy() for t in P.tensors()]
    ref = _reference_grads(P.tensors(), c.classes, c.n, c.lam_h, c.lam_w)
    k = NumpyDUFM(params, c.classes, c.n, c.lam_h, c.lam_w)
    assert k.step(0.3) is None
    for new, old, g in zip(k.params, params, ref):
        np.testing.assert_allclose(new, old - 0.3 * g.numpy(), rtol=0, atol=1e-13)


def test_advance_freezes_only_diverged_runs():
    c = _config(runs=3)
    params = [t.numpy().copy() for t in init_params(c).tensors()]
    bad = [p.copy() for p in params]
    bad[0][1, 0, 0] = np.inf  # run 1's first forward pass is not finite
    lrs = np.full(20, 0.3)
    new, div = advance(bad, lrs, 100, c.classes, c.n, c.lam_h, c.lam_w, sub_batch=2)
    assert div == {1: 100}
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(new, bad))  # frozen where it diverged
    ref, div_ref = advance(
        [p[[0, 2]] for p in params], lrs, 100, c.classes, c.n, c.lam_h, c.lam_w, sub_batch=1
    )
    assert div_ref == {}
    for a, b in zip(new, ref):  # the others went on, bit for bit as if alone
        assert np.array_equal(a[[0, 2]], b)
