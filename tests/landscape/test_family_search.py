"""Search and landscape for every model family (issue 19, part 1): the float64 objective and gradient, the
polish and the smooth verdicts, each against an independent float64 torch computation written here; the
family recorded in solution files; the bad inputs (λ = 0, contradicting family options)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from deepcollapse.cli import main
from deepcollapse.family import get_family
from deepcollapse.landscape.piecewise import polish, value_and_grad
from deepcollapse.landscape.search import SearchConfig
from deepcollapse.landscape.solution_file import save_solution
from deepcollapse.landscape.verdicts import landscape

FAMILIES = [
    ("mse", "relu", None),
    ("mse", "relu_eps", 0.1),
    ("mse", "linear", None),
    ("ce", "relu", None),
    ("ce", "relu_eps", 0.1),
]
SMOOTH = [f for f in FAMILIES if f[1] != "relu"] + [("ce", "linear", None)]


def _objective(ts, K, n, lam_h, lam_w, loss, activation, eps):
    """Eq. (1) written out in torch float64, independently of the package: σ piece by piece, the fit as
    ``‖out − Y‖²/(2N)`` or ``−Σ Y ⊙ log_softmax(out)/N``."""
    H = ts[0]
    for W in ts[1:-1]:
        X = W @ H
        if activation == "relu":
            H = torch.clamp(X, min=0.0)
        elif activation == "linear":
            H = X
        else:  # σ_ε of Definition 7: 0 (x <= 0), x²(2ε − x)/ε² (0 < x < ε), x (x >= ε)
            H = torch.where(
                X <= 0, torch.zeros_like(X), torch.where(X >= eps, X, X * X * (2 * eps - X) / eps**2)
            )
    out = ts[-1] @ H
    N = K * n
    Y = torch.eye(K, dtype=torch.float64).repeat_interleave(n, dim=1)  # samples ordered by class
    if loss == "mse":
        fit = ((out - Y) ** 2).sum() / (2 * N)
    else:
        fit = -(torch.log_softmax(out, dim=0) * Y).sum() / N
    reg = lam_h / 2 * (ts[0] ** 2).sum()
    for lam, W in zip(lam_w, ts[1:]):
        reg = reg + lam / 2 * (W**2).sum()
    return fit + reg


def _config(loss, activation, eps, K=3, L=3, n=2, width=4, lam=0.01):
    return SearchConfig(
        classes=K,
        layers=L,
        n=n,
        width=width,
        lam_h=lam,
        lam_w=[lam] * L,
        loss=loss,
        activation=activation,
        eps=eps,
    )


def _random_point(rng, K, L, n, d, scale=0.6):
    return [scale * rng.standard_normal((d, K * n))] + [
        scale * rng.standard_normal(s) for s in [(d, d)] * (L - 1) + [(K, d)]
    ]


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: "+".join(str(x) for x in f if x is not None))
def test_objective_and_gradient_against_torch_autograd(family):
    loss, activation, eps = family
    for L, n in ((2, 1), (3, 2)):
        config = _config(loss, activation, eps, L=L, n=n)
        problem = config.problem
        params = _random_point(np.random.default_rng(L + 10 * n), 3, L, n, 4)
        f, grads = value_and_grad(params, problem)
        ts = [torch.tensor(p, requires_grad=True) for p in params]
        ref = _objective(ts, 3, n, 0.01, [0.01] * L, loss, activation, eps)
        ref_grads = torch.autograd.grad(ref, ts)
        assert f == pytest.approx(float(ref.detach()), rel=1e-13)
        for g, r in zip(grads, ref_grads):
            np.testing.assert_allclose(g, r.numpy(), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: "+".join(str(x) for x in f if x is not None))
def test_polish_decreases_the_family_loss_to_a_critical_point(family):
    loss, activation, eps = family
    config = _config(loss, activation, eps, L=2, n=1, width=3, lam=0.02)
    params = _random_point(np.random.default_rng(1), 3, 2, 1, 3, scale=0.8)
    res = polish(params, config.problem, lbfgs_iter=3000)
    ts = [torch.tensor(p) for p in res.params]
    start = float(
        _objective([torch.tensor(p) for p in params], 3, 1, 0.02, [0.02] * 2, loss, activation, eps)
    )
    end = float(_objective(ts, 3, 1, 0.02, [0.02] * 2, loss, activation, eps))
    assert end == pytest.approx(res.loss, rel=1e-12) and end < start - 1e-3
    if activation != "relu":  # smooth: the polish ends where the gradient vanishes
        assert res.grad_norm < 1e-7


@pytest.mark.parametrize("family", SMOOTH, ids=lambda f: "+".join(str(x) for x in f if x is not None))
def test_smooth_family_verdict_and_hessian_against_torch(family):
    loss, activation, eps = family
    K, L, n, d, lam = 3, 2, 1, 3, 0.02
    config = _config(loss, activation, eps, K=K, L=L, n=n, width=d, lam=lam)
    params = polish(_random_point(np.random.default_rng(2), K, L, n, d, 0.8), config.problem).params
    land = landscape(params, config.problem, k=4, grad_tol=1e-6, eig_tol=1e-6)
    assert land.smooth is True and land.family == config.problem.family.name
    assert land.zero_preactivations == [0] and land.near_kinks == [0]
    assert land.clarke_residual == land.grad_norm < 1e-6
    assert land.verdict in ("local minimum", "saddle")
    if land.verdict == "local minimum":  # said of the loss itself, not of a smooth piece
        assert "a local minimum of the loss" in land.explanation
    shapes = [p.shape for p in params]
    sizes = [p.size for p in params]

    def flat_objective(x):
        ts, i = [], 0
        for s, m in zip(shapes, sizes):
            ts.append(x[i : i + m].reshape(s))
            i += m
        return _objective(ts, K, n, lam, [lam] * L, loss, activation, eps)

    x = torch.tensor(np.concatenate([p.ravel() for p in params]))
    H = torch.autograd.functional.hessian(flat_objective, x).numpy()
    eig = np.linalg.eigvalsh(0.5 * (H + H.T))
    np.testing.assert_allclose(land.lowest_eigenvalues, eig[:4], atol=1e-9)
    assert land.lambda_max == pytest.approx(eig[-1], rel=1e-9)
    if land.verdict == "local minimum":  # off the rotation symmetry of H_1 every eigenvalue is >= −eig_tol
        assert min(land.lowest_eigenvalues_off_symmetry) >= -1e-6


def test_solution_file_records_the_family_and_theory_check_reads_it(tmp_path, capsys):
    rng = np.random.default_rng(3)
    params = _random_point(rng, 3, 3, 2, 4)
    fam = get_family("ce", "relu_eps", 0.1)
    path = save_solution(
        tmp_path / "ce.npz", params[0], params[1:], n=2, lam_h=0.01, lam_w=[0.01] * 3, family=fam
    )
    ref = float(_objective([torch.tensor(p) for p in params], 3, 2, 0.01, [0.01] * 3, "ce", "relu_eps", 0.1))
    assert main(["theory", "check", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["family"] == "ce+relu_eps(0.1)" and out["loss"] == pytest.approx(ref, rel=1e-13)
    assert main(["theory", "check", str(path), "--loss", "ce", "--eps", "0.1", "--json"]) == 0  # agreeing
    capsys.readouterr()
    for bad in (["--loss", "mse"], ["--activation", "relu"], ["--eps", "0.2"]):
        assert main(["theory", "check", str(path), *bad]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and err.startswith(f"deepcollapse: error: {bad[0]} == ")
        assert "contradicts FILE ==" in err and "ce+relu_eps(0.1)" in err
    # a file written before families were recorded is MSE + ReLU
    old = tmp_path / "old.npz"
    np.savez(
        old,
        H1=params[0],
        **{f"W_{l}": W for l, W in enumerate(params[1:], 1)},
        n=2,
        lam_h=0.01,
        lam_w=[0.01] * 3,
    )
    mse = float(_objective([torch.tensor(p) for p in params], 3, 2, 0.01, [0.01] * 3, "mse", "relu", None))
    assert main(["theory", "check", str(old), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["family"] == "mse+relu" and out["loss"] == pytest.approx(mse, rel=1e-13)
    assert main(["theory", "check", str(old), "--loss", "ce"]) == 2
    assert "holds a mse+relu point" in capsys.readouterr().err


@pytest.mark.parametrize(
    "lam", [["--lam", "0"], ["--lam-h", "0"], ["--lam-w", "0.01,0,0.01"]], ids=["lam", "lam-h", "lam-w"]
)
def test_search_refuses_lambda_zero_in_one_line_and_writes_nothing(tmp_path, capsys, lam):
    out = tmp_path / "s"
    args = ["dufm", "search", "--classes", "3", "--layers", "3", "--loss", "ce", *lam, "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"deepcollapse: error: {lam[0]} == 0, must be > 0")
    assert "no minimum" in err
    assert not out.exists()


def test_landscape_refuses_a_contradicting_family_for_a_file(tmp_path, capsys):
    params = _random_point(np.random.default_rng(4), 3, 2, 1, 3)
    path = save_solution(tmp_path / "p.npz", params[0], params[1:], n=1, lam_h=0.01, lam_w=[0.01] * 2)
    assert main(["dufm", "landscape", str(path), "--loss", "ce"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--loss == 'ce' contradicts TARGET ==" in err
    assert not (tmp_path / "p.landscape").exists()
