"""The torch eq. (1) (theory/objective_torch.py) equals the numpy float64 one on explicit matrices, over every
model family (loss x activation), unbatched and batched; its autograd gradient equals the hand-written numpy
backward pass; and the torch engine, the landscape's HVP graph and the networks' weight term use it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from deepcollapse.family import ACTIVATIONS, LOSSES, get_family
from deepcollapse.theory import objective_torch as torch_eq1
from deepcollapse.theory.objective import dufm_objective
from deepcollapse.theory.problem import Problem

torch.set_num_threads(1)

FAMILIES = [
    (loss, act, 0.3 if act == "relu_eps" else None) for loss, act in itertools.product(LOSSES, ACTIVATIONS)
]


def _point(
    rng: np.random.Generator, K: int, n: int, widths: list[int]
) -> tuple[np.ndarray, list[np.ndarray]]:
    dims = [*widths, K]
    H1 = rng.normal(size=(widths[0], K * n))
    # scale 0.7: pre-activations of both signs, and for relu_eps some inside (0, eps)
    weights = [0.7 * rng.normal(size=(dims[i + 1], dims[i])) for i in range(len(widths))]
    return H1, weights


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.tensor(a, dtype=torch.float64)


@pytest.mark.parametrize(("loss", "activation", "eps"), FAMILIES)
@pytest.mark.parametrize("L", [1, 2, 4])
def test_torch_equals_numpy_over_every_family(loss, activation, eps, L):
    rng = np.random.default_rng(100 * L + len(loss) + len(activation))
    K, n = 3, 2
    H1, weights = _point(rng, K, n, [5, 4, 6, 3][:L])
    lam_h, lam_w = 0.03, list(rng.uniform(0.0, 0.2, size=L))
    ref = dufm_objective(H1, weights, lam_h, lam_w, loss=loss, activation=activation, eps=eps)
    fam = get_family(loss, activation, eps)
    Y = _t(fam.targets(K, n))
    got = torch_eq1.objective(_t(H1), [_t(W) for W in weights], Y, lam_h, lam_w, fam)
    for name in ("total", "fit", "reg"):
        assert float(getattr(got, name)) == pytest.approx(getattr(ref, name), abs=1e-12, rel=0), name
    assert abs(ref.fit) > 0.1 and abs(ref.reg) > 0.1  # both terms present


@pytest.mark.parametrize(("loss", "activation", "eps"), FAMILIES)
def test_batched_form_is_one_value_per_run(loss, activation, eps):
    rng = np.random.default_rng(7)
    K, n, R = 3, 2, 4
    points = [_point(rng, K, n, [4, 5, 4]) for _ in range(R)]
    lam_h, lam_w = 0.05, [0.01, 0.02, 0.04]
    fam = get_family(loss, activation, eps)
    H1 = _t(np.stack([p[0] for p in points]))  # (R, d_1, N)
    Ws = [_t(np.stack([p[1][i] for p in points])) for i in range(3)]
    got = torch_eq1.objective(H1, Ws, _t(fam.targets(K, n)), lam_h, lam_w, fam)
    assert got.total.shape == (R,)
    for r, (h, ws) in enumerate(points):
        ref = dufm_objective(h, ws, lam_h, lam_w, loss=loss, activation=activation, eps=eps)
        assert float(got.total[r]) == pytest.approx(ref.total, abs=1e-12, rel=0)


@pytest.mark.parametrize("loss", LOSSES)
def test_masks_give_the_smooth_piece(loss):
    """With the ReLU pattern of the point as masks, the piece equals ``f``; with other 0/1 masks it equals
    eq. (1) written with ``D ⊙ H~`` explicitly (numpy)."""
    rng = np.random.default_rng(3)
    K, n = 3, 2
    H1, weights = _point(rng, K, n, [4, 5, 4])
    fam = get_family(loss)
    lam_h, lam_w = 0.02, [0.03, 0.01, 0.05]
    Y = fam.targets(K, n)
    masks = [rng.uniform(size=(5, K * n)) > 0.5, rng.uniform(size=(4, K * n)) > 0.5]
    H = H1
    for W, D in zip(weights[:-1], masks):
        H = (W @ H) * D
    fit = fam.loss.value(weights[-1] @ H, Y)
    reg = 0.5 * lam_h * np.sum(H1**2) + sum(0.5 * lam * np.sum(W**2) for lam, W in zip(lam_w, weights))
    ts = [_t(H1)] + [_t(W) for W in weights]
    got = torch_eq1.objective(ts[0], ts[1:], _t(Y), lam_h, lam_w, fam, [_t(D.astype(float)) for D in masks])
    assert float(got.total) == pytest.approx(fit + reg, abs=1e-12, rel=0)
    # the pattern of the point itself: the piece through the point is f there
    pattern = []
    H = H1
    for W in weights[:-1]:
        pattern.append((W @ H > 0).astype(float))
        H = np.maximum(W @ H, 0.0)
    ref = dufm_objective(H1, weights, lam_h, lam_w, loss=loss)
    got = torch_eq1.objective(ts[0], ts[1:], _t(Y), lam_h, lam_w, fam, [_t(D) for D in pattern])
    assert float(got.total) == pytest.approx(ref.total, abs=1e-12, rel=0)


@pytest.mark.parametrize(("loss", "activation", "eps"), FAMILIES)
def test_autograd_of_the_torch_form_equals_the_numpy_backward(loss, activation, eps):
    """The gradient of the torch form (autograd) against the numpy hand-written backward pass of the
    landscape (:func:`deepcollapse.landscape.piecewise.value_and_grad`), float64."""
    from deepcollapse.landscape.piecewise import value_and_grad

    rng = np.random.default_rng(11)
    K, n = 3, 2
    H1, weights = _point(rng, K, n, [4, 5, 4])
    problem = Problem(K, 3, n, 0.02, (0.03, 0.01, 0.05), loss=loss, activation=activation, eps=eps)
    f_np, g_np = value_and_grad([H1, *weights], problem)
    ts = [_t(p).requires_grad_(True) for p in [H1, *weights]]
    f = torch_eq1.objective(
        ts[0], ts[1:], _t(problem.targets()), problem.lam_h, problem.lam_w, problem.family
    ).total
    grads = torch.autograd.grad(f, ts)
    assert float(f.detach()) == pytest.approx(f_np, abs=1e-12, rel=0)
    for g, ref in zip(grads, g_np):
        np.testing.assert_allclose(g.numpy(), ref, rtol=0, atol=1e-12)


def test_the_engines_use_it():
    """The trainer's batched objective, the landscape's piece and the networks' weight term are this form."""
    from deepcollapse.dufm.model import objective as model_objective
    from deepcollapse.landscape.piecewise import piece_objective

    rng = np.random.default_rng(5)
    K, n = 3, 2
    H1, weights = _point(rng, K, n, [4, 4])
    problem = Problem(K, 2, n, 0.02, (0.03, 0.05), loss="ce")
    ts = [_t(H1)] + [_t(W) for W in weights]
    Y = _t(problem.targets())
    ours = torch_eq1.objective(ts[0], ts[1:], Y, problem.lam_h, problem.lam_w, problem.family)
    batched = model_objective(ts[0][None], [W[None] for W in ts[1:]], Y, 0.02, [0.03, 0.05], problem.family)
    assert torch.equal(batched[0][0], ours.total)
    assert torch.equal(piece_objective(ts, None, Y, problem), ours.total)
    assert float(torch_eq1.penalty(0.1, [ts[1], ts[2]])) == pytest.approx(
        0.05 * (np.sum(weights[0] ** 2) + np.sum(weights[1] ** 2)), abs=1e-12, rel=0
    )
