"""Landscape verdicts: the K = 2 DNC optimum, a constructed saddle, a point off the critical set."""

from __future__ import annotations

import json

import numpy as np
import pytest

from deepcollapse._core.checks import ConfigError
from deepcollapse.landscape.piecewise import (
    Problem,
    _Piece,
    activation_pattern,
    flatten,
    preactivations,
    unflatten,
    value,
    value_and_grad,
)
from deepcollapse.landscape.verdicts import Landscape, landscape, load_point, symmetry_basis
from deepcollapse.theory import dnc_solution

K2 = dict(classes=2, layers=3, n=3, lam=0.01)


def _dnc_k2() -> tuple[list[np.ndarray], Problem]:
    sol = dnc_solution(2, 3, 3, 0.01, 0.01, width=2)
    return [sol.H1, *sol.weights], Problem.make(2, 3, 0.01, 0.01, 3)


def _dense_hessian(params: list[np.ndarray], problem: Problem) -> np.ndarray:
    """Reference Hessian of the smooth piece by central differences of the hand-written numpy gradient."""
    shapes = [p.shape for p in params]
    x = flatten(params)
    pattern = activation_pattern(params)
    h = 1e-6
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        gp = flatten(value_and_grad(unflatten(x + e, shapes), problem, pattern)[1])
        gm = flatten(value_and_grad(unflatten(x - e, shapes), problem, pattern)[1])
        cols.append((gp - gm) / (2 * h))
    Hm = np.stack(cols, axis=1)
    return (Hm + Hm.T) / 2


def test_autograd_hvp_matches_finite_differences_of_the_numpy_gradient():
    params, problem = _dnc_k2()
    Hm = _dense_hessian(params, problem)
    piece = _Piece(params, problem, activation_pattern(params))
    H_auto = np.stack([piece.hvp(e) for e in np.eye(Hm.shape[0])], axis=1)
    assert np.max(np.abs(H_auto - Hm)) < 1e-7


def test_numpy_gradient_matches_finite_differences_away_from_kinks():
    rng = np.random.default_rng(0)
    problem = Problem.make(3, 2, 0.01, 0.02, 3)
    params = [rng.standard_normal((4, 6)), rng.standard_normal((4, 4)), rng.standard_normal((4, 4))]
    params.append(rng.standard_normal((3, 4)))
    _, g = value_and_grad(params, problem)
    x, shapes = flatten(params), [p.shape for p in params]
    v = rng.standard_normal(x.size)
    h = 1e-6
    fd = (value(unflatten(x + h * v, shapes), problem) - value(unflatten(x - h * v, shapes), problem)) / (
        2 * h
    )
    assert fd == pytest.approx(float(flatten(g) @ v), rel=1e-6)


def test_k2_dnc_is_a_local_minimum_with_zero_modes_from_symmetry_and_kinks():
    params, problem = _dnc_k2()
    r = landscape(params, problem, reduce=False)
    assert r["verdict"] == "local minimum"
    assert r["grad_norm"] < 1e-12
    assert r["zero_preactivations"] == [6, 6]  # the off-diagonal zeros of M~_2, M~_3 (kinks)
    Hm = _dense_hessian(params, problem)
    w, V = np.linalg.eigh(Hm)
    assert w[0] > -1e-7  # positive semi-definite (independent finite-difference Hessian)
    assert min(r["lowest_eigenvalues"]) > -1e-10
    # the rotation H1 -> Q H1, W1 -> W1 Q^T is a zero mode ...
    B = symmetry_basis(params)
    assert B.shape[1] == 1 and np.linalg.norm(Hm @ B[:, 0]) < 1e-6
    # ... and every other zero mode only moves pre-activations that sit at a kink (0 -> negative side, the
    # smooth piece's flat directions): first-order change of every non-zero pre-activation and of the output
    null = V[:, np.abs(w) < 1e-6]
    assert null.shape[1] == 2
    shapes = [p.shape for p in params]
    x = flatten(params)
    active = [np.abs(Ht) > 1e-12 for Ht in preactivations(params)]

    def moved(v: np.ndarray) -> float:
        h = 1e-6
        plus, minus = unflatten(x + h * v, shapes), unflatten(x - h * v, shapes)
        d = [(a - b)[m] / (2 * h) for a, b, m in zip(preactivations(plus), preactivations(minus), active)]
        return max(float(np.max(np.abs(di))) for di in d)

    for j in range(null.shape[1]):
        u = null[:, j]
        off_sym = u - B @ (B.T @ u)
        if np.linalg.norm(off_sym) > 1e-6:
            assert moved(off_sym / np.linalg.norm(off_sym)) < 1e-5
    # off the symmetry: exactly one flat mode left, the kink mode
    assert r["near_zero_modes"] == 1 and r["lowest_eigenvalues_off_symmetry"][1] == pytest.approx(
        0.01, rel=1e-6
    )


def test_constructed_saddle_negative_direction_found():
    """L = 1 (UFM) at the all-zero point: Hessian eigenvalues λ ± σ_i(Y)/N, σ_max(Y) = √n, so the lowest is
    λ − 1/(K√n) (independent closed form)."""
    K, n, lam = 2, 3, 0.01
    problem = Problem.make(K, n, lam, lam, 1)
    params = [np.zeros((3, K * n)), np.zeros((K, 3))]
    r = landscape(params, problem, reduce=False)
    assert r["verdict"] == "saddle"
    assert r["lowest_eigenvalues"][0] == pytest.approx(lam - 1 / (K * np.sqrt(n)), rel=1e-8)
    v = r["directions"][0]
    shapes = [p.shape for p in params]
    f = [value(unflatten(t * v, shapes), problem) for t in (0.0, 0.01, -0.01)]
    assert f[1] < f[0] and f[2] < f[0]  # a descent direction on both sides (second order)
    # the typed result: attributes, key access, JSON-ready to_dict() (directions as lists) and back
    assert isinstance(r, Landscape) and r.verdict == r["verdict"] and r.reduced is False
    d = r.to_dict()
    assert json.loads(json.dumps(d)) == d and d["directions"][0] == list(v)
    back = Landscape.from_dict(d)
    assert back == r and back.lowest_eigenvalues == r.lowest_eigenvalues


def test_collapsed_points_are_analysed_on_the_reduced_problem_with_the_same_inertia():
    params, problem = _dnc_k2()
    full = landscape(params, problem, reduce=False)
    red = landscape(params, problem)
    assert red["reduced"] and not full["reduced"] and red["verdict"] == full["verdict"]
    assert red["loss"] == pytest.approx(full["loss"], rel=1e-14)
    # a collapsed saddle: the L = 1 zero point with n = 3 (λ − 1/(K√n) < 0 in the full metric)
    p1 = Problem.make(2, 3, 0.01, 0.01, 1)
    r1 = landscape([np.zeros((3, 6)), np.zeros((2, 3))], p1)
    assert r1["reduced"] and r1["verdict"] == "saddle" and r1["lowest_eigenvalues"][0] < 0


def test_off_the_critical_set_is_not_critical():
    params, problem = _dnc_k2()
    params = [params[0] * 1.1, *params[1:]]
    r = landscape(params, problem)
    assert r["verdict"] == "not critical"
    assert r["grad_norm"] > 1e-3 and r["clarke_residual"] > 1e-3


def test_load_point_errors_and_constructions(tmp_path):
    with pytest.raises(ConfigError, match="TARGET == .*must be a DUFM run folder"):
        load_point(str(tmp_path))
    with pytest.raises(ConfigError, match="construction == 'etf', must be one of 'dnc', 'srg'"):
        load_point(construction="etf")
    params, problem, what = load_point(
        construction="dnc", classes=2, layers=3, n=3, lam_h=0.01, lam_w=0.01, width=2
    )
    assert problem.N == 6 and params[0].shape == (2, 6) and "dnc" in what


def test_kinks_left_at_rounding_level_do_not_hide_a_critical_point():
    """The flagship SRG construction (K = 10, L = 4, width 10, n = 1) is critical at its kinks; moving every
    weight by 1e-13 leaves its ~180 zero pre-activations at ±1e-13, where the exact-zero test sees almost
    none and the piece's gradient is ~1e-2.  The near-kink test still finds the Clarke residual ~1e-10."""
    params, problem, _ = load_point(
        construction="srg", classes=10, layers=4, n=1, lam_h=0.004, lam_w=0.004, width=10
    )
    rng = np.random.default_rng(0)
    moved = [params[0]] + [W + 1e-13 * rng.standard_normal(W.shape) for W in params[1:]]
    r = landscape(moved, problem)
    assert sum(r["zero_preactivations"]) < 10 and sum(r["near_kinks"]) >= 150
    assert r["grad_norm"] > 1e-3 and r["clarke_residual"] < 1e-8
    assert r["verdict"] == "critical at a kink"


def test_srg_construction_at_k6_is_not_even_a_local_minimum():
    """At K = 6 (L = 4) the paper finds solutions below L_SRG (App. B.1); the landscape finds more: the SRG
    construction itself has a descent direction.  Checked independently: the step the probe reports, along
    −∇f from float64 autograd of an objective written here, lowers the theory engine's eq. (1) below L_SRG."""
    import torch

    from deepcollapse.theory import dufm_objective, loss_srg

    params, problem, _ = load_point(
        construction="srg", classes=6, layers=4, n=1, lam_h=0.004, lam_w=0.004, width=6
    )
    r = landscape(params, problem)
    assert r["verdict"] == "not critical" and r["descent_probe"]["direction"] == 0
    ts = [torch.tensor(p, requires_grad=True) for p in params]
    H = ts[0]
    for W in ts[1:-1]:
        H = torch.relu(W @ H)
    f = ((ts[-1] @ H - torch.eye(6)) ** 2).sum() / 12 + 0.002 * sum((t**2).sum() for t in ts)
    g = torch.autograd.grad(f, ts)
    norm = float(torch.sqrt(sum((x**2).sum() for x in g)))
    step = r["descent_probe"]["step"] / norm
    moved = [p - step * x.numpy() for p, x in zip(params, g)]
    lower = dufm_objective(moved[0], moved[1:], 0.004, [0.004] * 4).total
    reference = loss_srg(6, 4, 1, 0.004, 0.004).loss
    assert value(params, problem) == pytest.approx(reference, rel=1e-12)
    assert lower < reference - 1e-6


def test_a_point_far_out_gives_inf_without_a_runtime_warning():
    """A line search's long trial step overflows: the value is inf (rejected by the caller) and nothing is
    printed on the user's terminal (warnings turned into errors here)."""
    import warnings

    from deepcollapse.landscape.piecewise import Problem, value_and_grad

    problem = Problem(3, 3, 1, 0.004, (0.004,) * 3)
    far = [np.full(s, 1e100) for s in ((4, 3), (4, 4), (4, 4), (3, 4))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f, grads = value_and_grad(far, problem)
    assert f == np.inf and not np.isfinite(grads[0]).all()


def test_the_landscape_computes_with_one_torch_thread_and_restores_the_count(monkeypatch, tmp_path):
    # issue 45: `dufm landscape --construction srg --classes 10 ...` took 350 s on a busy 2-core machine,
    # torch's one thread per core waiting on each other over tiny autograd graphs; one thread is the cure
    import torch

    import deepcollapse.landscape.verdicts as verdicts
    from deepcollapse.cli import main

    seen = []
    real = verdicts.hessian_spectrum

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(verdicts, "hessian_spectrum", spy)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        params, problem = _dnc_k2()
        assert landscape(params, problem).verdict == "local minimum"
        assert torch.get_num_threads() == 2  # restored
        out = tmp_path / "land"
        args = ["dufm", "landscape", "--construction", "dnc", "--classes", "2", "--layers", "3", "--n", "3"]
        assert main([*args, "--lam", "0.01", "--width", "2", "--out", str(out), "--no-progress"]) == 0
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert seen == [1, 1]
    assert json.loads((out / "landscape.json").read_text())["verdict"] == "local minimum"
