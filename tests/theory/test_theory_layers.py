"""Conditionally optimal layers and solution_from_class_means vs direct evaluation of the objective."""

from __future__ import annotations

import numpy as np
import pytest

from deepcollapse._core.checks import ConfigError
from deepcollapse.theory import (
    balanced_factorisation,
    conditional_loss,
    dufm_objective,
    ridge_last_layer,
    solution_from_class_means,
)


def ridge_objective(W, M, lam, K):
    return np.sum((W @ M - np.eye(M.shape[1])) ** 2) / (2 * K) + lam / 2 * np.sum(W**2)


@pytest.mark.parametrize("shape", [(7, 5), (3, 5), (5, 5)])
def test_ridge_value_and_optimality(shape):
    rng = np.random.default_rng(1)
    M = np.maximum(rng.normal(size=shape), 0)
    lam = 0.03
    W, value = ridge_last_layer(M, lam)
    K = shape[1]
    assert value == pytest.approx(ridge_objective(W, M, lam, K), rel=1e-12)
    # gradient of the ridge objective vanishes
    grad = (W @ M - np.eye(K)) @ M.T / K + lam * W
    assert np.abs(grad).max() < 1e-12
    for _ in range(5):
        D = rng.normal(size=W.shape)
        assert ridge_objective(W + 1e-3 * D, M, lam, K) > value


def test_ridge_block_constant():
    """Definition 11.1: a block of Kb classes inside a K-class problem uses the constant K λ."""
    rng = np.random.default_rng(2)
    M = rng.uniform(size=(4, 3))
    W, value = ridge_last_layer(M, 0.02, classes=10)
    assert value == pytest.approx(ridge_objective(W, M, 0.02, 10), rel=1e-12)


def test_balanced_factorisation():
    rng = np.random.default_rng(3)
    Mt2 = rng.normal(size=(6, 4))
    a, b = 0.02, 0.3
    W1, M1, value = balanced_factorisation(Mt2, a, b)
    assert np.allclose(W1 @ M1, Mt2, atol=1e-12)
    direct = a / 2 * np.sum(W1**2) + b / 2 * np.sum(M1**2)
    assert value == pytest.approx(direct, rel=1e-12)
    assert value == pytest.approx(np.sqrt(a * b) * np.linalg.svd(Mt2, compute_uv=False).sum(), rel=1e-12)
    # any other factorisation W1 G, G^-1 M1 costs at least as much
    for _ in range(10):
        G = np.eye(4) + 0.3 * rng.normal(size=(4, 4))
        W, H = W1 @ G, np.linalg.solve(G, M1)
        assert a / 2 * np.sum(W**2) + b / 2 * np.sum(H**2) >= value - 1e-12
    W1p, M1p, _ = balanced_factorisation(Mt2, a, b, d1=9)
    assert W1p.shape == (6, 9) and M1p.shape == (9, 4) and np.allclose(W1p @ M1p, Mt2)
    with pytest.raises(ConfigError, match="d1"):
        balanced_factorisation(Mt2, a, b, d1=3)


def random_means(rng, K, widths):
    """Non-negative middle layers of full rank K and a last layer with negative entries."""
    means = [rng.uniform(0.1, 1.0, size=(d, K)) for d in widths[:-1]]
    means.append(rng.normal(size=(widths[-1], K)))
    return means


@pytest.mark.parametrize("L", [2, 3, 5])
@pytest.mark.parametrize("n", [1, 6])
def test_solution_from_class_means(L, n):
    rng = np.random.default_rng(10 * L + n)
    K = 4
    widths = [5, 6, 7, 5][: L - 1]
    means = random_means(rng, K, widths)
    lam_w = list(rng.uniform(0.001, 0.01, size=L))
    lam_h = 0.002
    sol = solution_from_class_means(means, n, lam_h, lam_w)
    assert sol.interpolation_residual < 1e-10
    assert sol.H1.shape[1] == K * n
    # DNC1 collapsed: each class column repeated n times
    assert np.allclose(sol.H1, np.repeat(sol.H1[:, ::n], n, axis=1))
    # the explicit point reproduces the class means
    h = sol.H1[:, ::n]
    for l, W in enumerate(sol.weights[:-1]):
        h = W @ h
        assert np.allclose(h, means[l], atol=1e-10)
        h = np.maximum(h, 0)
    direct = dufm_objective(sol.H1, sol.weights, lam_h, lam_w).total
    assert sol.loss == pytest.approx(direct, rel=1e-12)
    assert sol.loss == pytest.approx(conditional_loss(means, n, lam_h, lam_w), rel=1e-10)
    # the n-sample problem equals n = 1 with lam_h -> n lam_h
    sol1 = solution_from_class_means(means, 1, n * lam_h, lam_w)
    assert sol.loss == pytest.approx(sol1.loss, rel=1e-12)


def test_solution_is_conditionally_optimal():
    """Perturbing any weight (keeping the others) or H1 does not lower the loss."""
    rng = np.random.default_rng(5)
    means = random_means(rng, 3, [4, 5, 4])
    sol = solution_from_class_means(means, 2, 0.01, [0.01, 0.02, 0.01, 0.03])
    # perturb the last layer: ridge optimum
    base = sol.loss
    for _ in range(5):
        W = [w.copy() for w in sol.weights]
        W[-1] += 1e-4 * rng.normal(size=W[-1].shape)
        assert dufm_objective(sol.H1, W, 0.01, [0.01, 0.02, 0.01, 0.03]).total >= base - 1e-14


def test_bad_class_means():
    with pytest.raises(ConfigError):
        solution_from_class_means([], 1, 0.1, 0.1)
    with pytest.raises(ConfigError):
        solution_from_class_means([np.ones((3, 4)), np.ones((3, 5))], 1, 0.1, 0.1)
    with pytest.raises(ConfigError):
        solution_from_class_means([np.full((3, 4), np.nan)], 1, 0.1, 0.1)
    with pytest.raises(ConfigError, match="lam_w"):
        solution_from_class_means([np.ones((3, 4))], 1, 0.1, [0.1, 0.1, 0.1])


def test_polish_collapsed_point_never_increases_loss():
    """class_means_of + solution_from_class_means on a random DNC1-collapsed point: loss can only go down, and
    a conditionally optimal point is a fixed point."""
    from deepcollapse.theory import class_means_of

    rng = np.random.default_rng(7)
    K, n, L = 4, 3, 4
    lam_h, lam_w = 0.003, [0.002, 0.004, 0.001, 0.003]
    M1 = rng.normal(size=(6, K))
    H1 = np.repeat(M1, n, axis=1)
    weights = [rng.normal(size=(6, 6)) for _ in range(L - 1)] + [rng.normal(size=(K, 6))]
    before = dufm_objective(H1, weights, lam_h, lam_w).total
    means = class_means_of(H1, weights)
    h = M1
    for l, W in enumerate(weights[:-1]):
        h = W @ h
        assert np.allclose(means[l], h)  # collapsed: class means = per-class features
        h = np.maximum(h, 0)
    sol = solution_from_class_means(means, n, lam_h, lam_w, d1=6)
    assert sol.interpolation_residual < 1e-8
    assert sol.loss <= before
    again = solution_from_class_means(class_means_of(sol.H1, sol.weights), n, lam_h, lam_w, d1=6)
    assert again.loss == pytest.approx(sol.loss, rel=1e-10)
    with pytest.raises(ConfigError):
        class_means_of(np.ones((3, 7)), [np.ones((2, 3)), np.ones((2, 2))])
