"""eq. (1) on explicit matrices vs a hand-written per-sample loop."""

from __future__ import annotations

import numpy as np
import pytest

from deepcollapse._core.checks import ConfigError
from deepcollapse.theory import dufm_objective, forward


def loop_objective(H1, weights, lam_h, lam_ws, labels):
    """Per-sample, per-entry Python loops straight from eq. (1)."""
    K = len(weights[-1])
    N = len(H1[0])
    fit = 0.0
    for i in range(N):
        h = [H1[j][i] for j in range(len(H1))]
        for W in weights[:-1]:
            h = [max(0.0, sum(W[a][b] * h[b] for b in range(len(h)))) for a in range(len(W))]
        out = [sum(weights[-1][a][b] * h[b] for b in range(len(h))) for a in range(K)]
        for k in range(K):
            fit += (out[k] - (1.0 if labels[i] == k else 0.0)) ** 2
    fit /= 2.0 * N
    reg = lam_h / 2.0 * sum(x * x for row in H1 for x in row)
    for lam, W in zip(lam_ws, weights):
        reg += lam / 2.0 * sum(x * x for row in W for x in row)
    return fit, reg


@pytest.mark.parametrize("L", [1, 2, 3, 4])
def test_objective_matches_loop(L):
    rng = np.random.default_rng(L)
    K, n = 3, 4
    widths = [5, 4, 6, 3][:L]
    H1 = rng.normal(size=(widths[0], K * n))
    dims = widths + [K]
    weights = [rng.normal(size=(dims[i + 1], dims[i])) for i in range(L)]
    lam_ws = list(rng.uniform(0.01, 0.2, size=L))
    labels = np.repeat(np.arange(K), n)
    parts = dufm_objective(H1, weights, 0.05, lam_ws)
    fit, reg = loop_objective(H1.tolist(), [W.tolist() for W in weights], 0.05, lam_ws, labels.tolist())
    assert parts.fit == pytest.approx(fit, rel=1e-12)
    assert parts.reg == pytest.approx(reg, rel=1e-12)
    assert parts.total == pytest.approx(fit + reg, rel=1e-12)
    # custom (shuffled) labels
    perm = rng.permutation(K * n)
    parts2 = dufm_objective(H1, weights, 0.05, lam_ws, labels=labels[perm])
    fit2, _ = loop_objective(H1.tolist(), [W.tolist() for W in weights], 0.05, lam_ws, labels[perm].tolist())
    assert parts2.fit == pytest.approx(fit2, rel=1e-12)


def test_zero_point_is_one_half():
    H1 = np.zeros((4, 12))
    weights = [np.zeros((4, 4)), np.zeros((3, 4))]
    parts = dufm_objective(H1, weights, 0.3, [0.1, 0.7])
    assert parts.total == 0.5 and parts.fit == 0.5 and parts.reg == 0.0


def test_forward_shapes_and_relu():
    rng = np.random.default_rng(0)
    H1 = rng.normal(size=(3, 6))
    weights = [rng.normal(size=(4, 3)), rng.normal(size=(5, 4)), rng.normal(size=(2, 5))]
    pre, post, out = forward(H1, weights)
    assert [p.shape for p in pre] == [(4, 6), (5, 6)]
    assert np.array_equal(post[1], np.maximum(pre[0], 0)) and np.array_equal(post[0], H1)
    assert np.allclose(out, weights[2] @ np.maximum(weights[1] @ np.maximum(weights[0] @ H1, 0), 0))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lam_h": -0.1},
        {"lam_h": float("nan")},
        {"lam_w": [0.1, 0.1, 0.1]},
        {"lam_w": -1.0},
        {"labels": np.zeros(5, dtype=int)},
    ],
)
def test_objective_bad_input(kwargs):
    args = {"H1": np.ones((2, 4)), "weights": [np.ones((2, 2)), np.ones((2, 2))], "lam_h": 0.1, "lam_w": 0.1}
    args.update(kwargs)
    with pytest.raises(ConfigError):
        dufm_objective(**args)


def test_objective_shape_mismatch():
    with pytest.raises(ConfigError, match="weights\\[1\\]"):
        dufm_objective(np.ones((2, 4)), [np.ones((3, 2)), np.ones((2, 2))], 0.1, 0.1)
