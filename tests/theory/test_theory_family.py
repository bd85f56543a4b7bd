"""Theory for the model families of issue 9: objective, cross-entropy candidates, deep linear UFM, relu_eps.

Reference values are computed here independently: a cross-entropy objective written again with
``scipy.special.logsumexp`` and hand-written activations; the DNC cross-entropy loss by a 1-D symmetric
reduction typed in here; the deep linear optimum against the ReLU ``L_DNC`` (a different formula) and
against float64 gradient descent with torch autograd.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize
from scipy.special import logsumexp

from deepcollapse._core.checks import ConfigError
from deepcollapse.theory import (
    ce_dnc,
    ce_dnc_solution,
    ce_srg,
    ce_srg_solution,
    compare_family,
    dnc_solution,
    dufm_objective,
    grid_family,
    linear_optimum,
    linear_solution,
    loss_dnc,
    solution_from_class_means,
    srg_solution,
)

LAM = 0.004


def sigma(X, activation, eps=None):
    """Activations written out again (Definition 7's σ_ε as documented by the family package)."""
    if activation == "relu":
        return np.where(X > 0, X, 0.0)
    if activation == "linear":
        return X
    out = np.where(X >= eps, X, 0.0)
    mid = (X > 0) & (X < eps)
    return np.where(mid, X**2 * (2 * eps - X) / eps**2, out)


def objective_by_hand(H1, weights, lam_h, lam_w, loss="ce", activation="relu", eps=None):
    """Eq. (1) with a cross-entropy (or MSE) fit, samples ordered by class."""
    H = H1
    for W in weights[:-1]:
        H = sigma(W @ H, activation, eps)
    out = weights[-1] @ H  # (K, N)
    K, N = out.shape
    y = np.repeat(np.arange(K), N // K)
    if loss == "ce":
        fit = float(np.mean(logsumexp(out, axis=0) - out[y, np.arange(N)]))
    else:
        Y = np.zeros((K, N))
        Y[y, np.arange(N)] = 1
        fit = float(np.sum((out - Y) ** 2) / (2 * N))
    lams = lam_w if isinstance(lam_w, list) else [lam_w] * len(weights)
    reg = lam_h / 2 * float(np.sum(H1**2)) + sum(lw / 2 * float(np.sum(W**2)) for lw, W in zip(lams, weights))
    return fit + reg


def rel(a, b):
    return abs(a - b) / abs(b)


# ------------------------------------------------------------------------------------------------
# objective
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", ["mse", "ce"])
@pytest.mark.parametrize("activation,eps", [("relu", None), ("linear", None), ("relu_eps", 0.3)])
def test_objective_every_family_matches_hand_written(loss, activation, eps):
    rng = np.random.default_rng(0)
    K, n = 3, 4
    H1 = rng.normal(size=(5, K * n))
    weights = [rng.normal(size=(6, 5)) * 0.5, rng.normal(size=(4, 6)) * 0.5, rng.normal(size=(K, 4))]
    got = dufm_objective(H1, weights, 0.01, [0.02, 0.03, 0.04], loss=loss, activation=activation, eps=eps)
    ref = objective_by_hand(H1, weights, 0.01, [0.02, 0.03, 0.04], loss, activation, eps)
    assert rel(got.total, ref) < 1e-12 and got.fit + got.reg == pytest.approx(got.total, rel=1e-15)


def test_objective_ce_stable_zero_point_and_lam_zero():
    K, n = 4, 2
    zeros = [np.zeros((3, 3)), np.zeros((K, 3))]
    parts = dufm_objective(np.zeros((3, K * n)), zeros, 0.0, 0.0, loss="ce")
    assert parts.total == pytest.approx(math.log(K), rel=1e-15) and parts.reg == 0.0
    # huge logits: finite, equal to the hand value (log-sum-exp subtracts the column maximum)
    H1 = np.kron(np.eye(K), np.ones((1, n))) * 1e3
    W = [np.eye(K), 50 * np.eye(K)]
    parts = dufm_objective(H1, W, 0.0, 0.0, loss="ce")
    assert math.isfinite(parts.total) and parts.total == pytest.approx(0.0, abs=1e-300)


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"loss": "hinge"}, "loss == 'hinge'"),
        ({"activation": "tanh"}, "activation == 'tanh'"),
        ({"activation": "relu_eps"}, "eps == None"),
        ({"activation": "relu_eps", "eps": -1.0}, "eps == -1.0"),
        ({"lam_h": -1.0}, "lam_h == -1.0"),
    ],
)
def test_objective_bad_family(kwargs, needle):
    args = {"lam_h": 0.1, **kwargs}
    lam_h = args.pop("lam_h")
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(")):
        dufm_objective(np.ones((2, 4)), [np.ones((2, 2))], lam_h, 0.1, **args)


# ------------------------------------------------------------------------------------------------
# cross-entropy candidates
# ------------------------------------------------------------------------------------------------
CASES = [
    (4, 3, 2, "dnc"),
    (10, 1, 2, "dnc"),
    (6, 4, 3, "def9"),
    (10, 3, 2, "def9"),
    (8, 4, 2, "def11.1"),
    (8, 4, 2, "def11.2"),
    (10, 2, 2, "def9"),
]


def _fit_and_solution(K, L, n, which):
    if which == "dnc":
        return ce_dnc(K, L, n, LAM, LAM), ce_dnc_solution(K, L, n, LAM, LAM)
    return ce_srg(K, L, n, LAM, LAM, which), ce_srg_solution(K, L, n, LAM, LAM, which)


@pytest.mark.parametrize("K,L,n,which", CASES)
def test_ce_candidate_equals_explicit_matrices(K, L, n, which):
    fit, sol = _fit_and_solution(K, L, n, which)
    ref = objective_by_hand(sol.H1, sol.weights, LAM, LAM, "ce")
    assert rel(fit.loss, ref) < 1e-10 and rel(sol.loss, ref) < 1e-10
    assert fit.loss < math.log(K) and fit.grad_norm < 1e-8
    # DNC1-collapsed: n copies of each class mean
    assert np.array_equal(sol.H1[:, ::n], sol.H1[:, n - 1 :: n])


def _scaled_point(sol, layer, delta):
    """The explicit point with the class means of ``layer`` (2..L) scaled by exp(δ/2), first and middle
    layers re-fitted conditionally (loss-independent), the last layer W_L kept fixed."""
    means = [M.copy() for M in sol.class_means]
    means[layer - 2] *= math.exp(delta / 2)
    new = solution_from_class_means(means, sol.n, LAM, LAM)
    return objective_by_hand(new.H1, new.weights[:-1] + [sol.weights[-1]], LAM, LAM, "ce")


@pytest.mark.parametrize("K,L,n,which", [c for c in CASES if c[1] >= 2])
def test_ce_candidate_is_stationary_by_finite_differences(K, L, n, which):
    _, sol = _fit_and_solution(K, L, n, which)
    h = 1e-5
    # every scale α_l (the last one at fixed W_L) ...
    for layer in range(2, L + 1):
        d = (_scaled_point(sol, layer, h) - _scaled_point(sol, layer, -h)) / (2 * h)
        assert abs(d) < 1e-6, (layer, d)
    # ... and every direction of the last layer
    rng = np.random.default_rng(1)
    for _ in range(3):
        D = rng.normal(size=sol.weights[-1].shape)
        D /= np.linalg.norm(D)

        def f(t, D=D):
            return objective_by_hand(sol.H1, sol.weights[:-1] + [sol.weights[-1] + t * D], LAM, LAM, "ce")

        assert abs((f(h) - f(-h)) / (2 * h)) < 1e-6


def test_ce_dnc_matches_symmetric_one_dimensional_reduction():
    """L_DNC^CE by a second route: W_L = β (I − 11^T/K) (symmetry), half terms L (K/2) (B α_L)^{1/L}."""
    for K, L, n in [(4, 3, 2), (10, 4, 50), (3, 2, 5)]:
        B = n * LAM * LAM ** (L - 1)

        def inner(a, K=K):
            f = lambda b: math.log1p((K - 1) * math.exp(-math.sqrt(a) * b)) + LAM / 2 * (K - 1) * b**2  # noqa: E731
            return optimize.minimize_scalar(
                f, bounds=(0, 1e3), method="bounded", options={"xatol": 1e-13}
            ).fun

        def outer(x, K=K, L=L, B=B):
            a = math.exp(x)
            return L * (K / 2) * (B * a) ** (1 / L) + inner(a)

        xs = np.linspace(-10, 10, 401)
        x0 = xs[int(np.argmin([outer(x) for x in xs]))]
        ref = optimize.minimize_scalar(
            outer, bounds=(x0 - 0.1, x0 + 0.1), method="bounded", options={"xatol": 1e-10}
        ).fun
        assert rel(ce_dnc(K, L, n, LAM, LAM).loss, ref) < 1e-8


@pytest.mark.parametrize("K,L,n", [(6, 4, 3), (10, 3, 2), (8, 4, 2), (4, 3, 2)])
def test_ce_candidate_beats_the_points_it_contains(K, L, n):
    """Same structure, MSE-optimal scales and ridge last layer: contained in the CE search, so not better."""
    d = ce_dnc(K, L, n, LAM, LAM)
    mse_dnc = dnc_solution(K, L, n, LAM, LAM)
    assert d.loss <= objective_by_hand(mse_dnc.H1, mse_dnc.weights, LAM, LAM, "ce") + 1e-12
    assert d.loss < math.log(K)
    if K >= 6:
        s = ce_srg(K, L, n, LAM, LAM)
        mse_srg = srg_solution(K, L, n, LAM, LAM, s.construction)
        assert s.loss <= objective_by_hand(mse_srg.H1, mse_srg.weights, LAM, LAM, "ce") + 1e-12
        if K == 8:  # best of 11.1 / 11.2
            assert s.loss <= min(ce_srg(K, L, n, LAM, LAM, c).loss for c in ("def11.1", "def11.2")) + 1e-15


def test_ce_strong_regularisation_gives_the_zero_point():
    fit = ce_dnc(4, 3, 1, 0.5, 0.5)
    assert fit.is_zero and fit.loss == math.log(4)
    with pytest.raises(ConfigError, match="all-zero point"):
        ce_dnc_solution(4, 3, 1, 0.5, 0.5)


def test_ce_conjecture_direction_at_flagship():
    """Measured at the flagship setting (K = 10, L = 4, n = 50, λ = 0.004): SRG beats DNC under CE."""
    r = compare_family(10, 4, 50, LAM, LAM, loss="ce")
    assert r["srg_beats_dnc"] is True and r["candidates"]["srg"]["rank"] == 5


# ------------------------------------------------------------------------------------------------
# deep linear UFM
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("K,L,n,lam", [(10, 4, 50, LAM), (3, 2, 2, 0.01), (2, 1, 5, 0.02), (5, 6, 1, 0.05)])
def test_linear_mse_optimum_explicit_and_equals_relu_dnc(K, L, n, lam):
    opt = linear_optimum(K, L, n, lam, lam)
    sol = linear_solution(K, L, n, lam, lam)
    ref = objective_by_hand(sol.H1, sol.weights, lam, lam, "mse", "linear")
    assert rel(opt.loss, ref) < 1e-10
    # a second formula: the ReLU model's L_DNC (its optimum has non-negative, orthogonal class means)
    assert rel(opt.loss, loss_dnc(K, L, n, lam, lam).loss) < 1e-10
    assert opt.rank in (0, K)


def test_linear_ce_etf_explicit():
    for K, L, n in [(3, 2, 2), (10, 4, 50)]:
        opt = linear_optimum(K, L, n, LAM, LAM, "ce")
        sol = linear_solution(K, L, n, LAM, LAM, "ce")
        ref = objective_by_hand(sol.H1, sol.weights, LAM, LAM, "ce", "linear")
        assert rel(opt.loss, ref) < 1e-10 and opt.rank == K - 1
        assert "no closed form" in opt.status


def test_linear_unregularised_and_width_limited():
    assert linear_optimum(4, 3, 2, 0.0, 0.0).loss == 0.0
    # width 2 < K = 4: two singular values must stay 0 (each costs 1/(2K))
    full, narrow = linear_optimum(4, 3, 2, 0.01, 0.01), linear_optimum(4, 3, 2, 0.01, 0.01, width=2)
    assert narrow.rank == 2 and narrow.loss == pytest.approx(full.loss / 2 + 2 / 8, rel=1e-12)


def _gd_linear(K, L, n, lam, loss, width, steps, lr, seed=0):
    """Plain float64 gradient descent with torch autograd on the deep linear UFM."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(seed)
    dt = torch.float64
    dims = [width] * L + [K]
    H = (0.5 * torch.randn(width, K * n, generator=g, dtype=dt)).requires_grad_()
    Ws = [
        (torch.randn(dims[i + 1], dims[i], generator=g, dtype=dt) / math.sqrt(dims[i])).requires_grad_()
        for i in range(L)
    ]
    Y = torch.kron(torch.eye(K, dtype=dt), torch.ones(1, n, dtype=dt))
    value = math.inf
    for _ in range(steps):
        out = H
        for W in Ws:
            out = W @ out
        if loss == "mse":
            fit = ((out - Y) ** 2).sum() / (2 * K * n)
        else:
            fit = (torch.logsumexp(out, 0).sum() - (out * Y).sum()) / (K * n)
        f = fit + lam / 2 * (H**2).sum() + sum(lam / 2 * (W**2).sum() for W in Ws)
        params = [H, *Ws]
        grads = torch.autograd.grad(f, params)
        with torch.no_grad():
            for p, gr in zip(params, grads):
                p -= lr * gr
        value = f.item()
    return value, int(torch.linalg.matrix_rank(out.detach()).item())


@pytest.mark.parametrize("K,L,loss", [(3, 2, "mse"), (3, 3, "mse"), (3, 2, "ce"), (3, 1, "ce")])
def test_linear_optimum_against_gradient_descent(K, L, loss):
    lam = 0.01
    opt = linear_optimum(K, L, 2, lam, lam, loss)
    value, rank = _gd_linear(K, L, 2, lam, loss, width=5, steps=1500, lr=0.5)
    # GD from a generic init reaches the optimum (MSE) / the ETF candidate (CE, small K), never below it
    assert value >= opt.loss - 1e-9
    assert value == pytest.approx(opt.loss, rel=1e-6)
    assert rank >= opt.rank


# ------------------------------------------------------------------------------------------------
# relu_eps and the per-family comparison
# ------------------------------------------------------------------------------------------------
def test_relu_eps_small_eps_is_the_relu_point_large_eps_has_no_closed_form():
    small = compare_family(10, 4, 5, LAM, LAM, activation="relu_eps", eps=0.05)
    relu = compare_family(10, 4, 5, LAM, LAM)
    for name in ("dnc", "srg"):
        assert small["candidates"][name]["status"] == "closed form"
        assert rel(small["candidates"][name]["loss"], relu["candidates"][name]["loss"]) < 1e-10
    big = compare_family(10, 4, 5, LAM, LAM, activation="relu_eps", eps=2.0)
    sol = srg_solution(10, 4, 5, LAM, LAM)
    ref = objective_by_hand(sol.H1, sol.weights, LAM, LAM, "mse", "relu_eps", 2.0)
    assert big["candidates"]["srg"]["status"] == "explicit evaluation (no closed form)"
    assert rel(big["candidates"]["srg"]["loss"], ref) < 1e-10
    ce = compare_family(10, 4, 5, LAM, LAM, loss="ce", activation="relu_eps", eps=3.0)
    assert ce["candidates"]["dnc"]["status"] == "explicit evaluation (no closed form)"


def test_family_statuses():
    lin = compare_family(6, 3, 2, LAM, LAM, activation="linear")
    assert lin["candidates"]["srg"]["status"] == "unavailable" and lin["srg_beats_dnc"] is None
    assert lin["candidates"]["linear"]["status"] == "closed form"
    ce_lin = compare_family(6, 3, 2, LAM, LAM, loss="ce", activation="linear")
    assert ce_lin["candidates"]["linear"]["status"] == "numerical re-optimisation"
    assert ce_lin["candidates"]["zero"]["loss"] == pytest.approx(math.log(6))
    small = compare_family(4, 3, 2, LAM, LAM, loss="ce")
    assert small["candidates"]["srg"]["status"] == "unavailable"
    rows = grid_family("6,7", "3,4", 2, LAM, LAM, loss="ce")
    assert [(r["classes"], r["layers"]) for r in rows] == [(6, 3), (6, 4), (7, 3), (7, 4)]
    assert all(r["status_dnc"] == "numerical re-optimisation" for r in rows)


def test_linear_ce_etf_is_not_the_deep_optimum():
    """Why CE + linear has "no closed form": at L = 4 (K = 10, n = 1, λ = 0.004) plain GD finds a point below
    the simplex-ETF candidate, so the symmetric reduction is not the optimum of the deep model."""
    etf = linear_optimum(10, 4, 1, LAM, LAM, "ce")
    value, _ = _gd_linear(10, 4, 1, LAM, "ce", width=10, steps=1500, lr=0.5)
    assert value < etf.loss * 0.9
