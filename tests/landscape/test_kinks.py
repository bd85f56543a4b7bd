"""The active-set refinement on the kink manifold (``refine_at_kinks``) against an independent float64 torch
forward of eq. (1) written here, and its use by the search task (``solutions/refined.npz``)."""

from __future__ import annotations

import json

import numpy as np
import torch

from deepcollapse.landscape.kinks import refine_at_kinks
from deepcollapse.landscape.piecewise import Problem, polish
from deepcollapse.landscape.solution_file import check_solution

LAM = 0.004


def _eq1(ts, masks, K, lam):
    """Eq. (1), MSE, written out: ``1/(2N)‖W_L H_L − I_K‖² + λ/2 Σ‖·‖²`` with ``H_{l+1} = D_l ⊙ W_l H_l``
    (``masks`` None: ReLU); n = 1, so ``N = K`` and ``Y = I_K``."""
    H = ts[0]
    for l, W in enumerate(ts[1:-1]):
        Ht = W @ H
        H = torch.relu(Ht) if masks is None else masks[l] * Ht
    fit = ((ts[-1] @ H - torch.eye(K, dtype=torch.float64)) ** 2).sum() / (2 * K)
    return fit + 0.5 * lam * sum((t**2).sum() for t in ts)


def _pre(params):
    H, out = torch.tensor(params[0]), []
    for W in params[1:-1]:
        Ht = torch.tensor(W) @ H
        out.append(Ht)
        H = torch.relu(Ht)
    return out


def _kinked_point(off: float = 1e-9):
    """A polished K = 3, L = 3 point of width 4 plus a fifth hidden unit that is dead (exact kinks in H~_2:
    a zero row of W_1 and a zero column of W_2), then moved ``off`` off the kink."""
    K, width = 3, 4
    problem = Problem(K, 3, 1, LAM, (LAM,) * 3)
    rng = np.random.default_rng(3)
    start = [rng.normal(size=(width, K)), *(rng.normal(size=(width, width)) * 0.5 for _ in range(2))]
    start.append(rng.normal(size=(K, width)) * 0.5)
    pol = polish(start, problem).params
    H1, W1, W2, W3 = (np.asarray(p) for p in pol)
    W1 = np.vstack([W1, off * rng.normal(size=(1, width))])  # the new unit's H~_2 is ~off: near a kink
    W2 = np.hstack([W2, off * rng.normal(size=(width, 1))])
    return [H1, W1, W2, W3], problem


def test_refinement_lands_on_the_kink_and_is_clarke_critical():
    params, problem = _kinked_point()
    result = refine_at_kinks(params, problem, max_seconds=10)
    ts0 = [torch.tensor(p) for p in params]
    f0 = float(_eq1(ts0, None, 3, LAM))
    refined = result.params
    f1 = float(_eq1([torch.tensor(p) for p in refined], None, 3, LAM))
    assert f1 <= f0 + 1e-13 * f0  # never higher than the start
    assert abs(result.loss_after - f1) <= 1e-14 and abs(result.loss_before - f0) <= 1e-14
    pre = _pre(refined)
    dead = pre[0][-1]  # the unit moved off the kink by 1e-9
    assert float(dead.abs().max()) <= 1e-13 * float(pre[0].abs().max())
    # Clarke: some D ∈ [0, 1] at the kinks (|H~| <= 1e-9 max|H~|, computed here) with ‖∇f_D‖ small; the
    # D minimising ‖∇f_D‖² by a projected gradient method in torch (own forward, not the package's)
    kinks = [Ht.abs() <= 1e-9 * Ht.abs().max() for Ht in pre]
    assert int(sum(k.sum() for k in kinks)) >= 3
    d = torch.full((int(sum(k.sum() for k in kinks)),), 0.5, dtype=torch.float64, requires_grad=True)
    ts = [torch.tensor(p, requires_grad=True) for p in refined]
    opt = torch.optim.Adam([d], lr=0.1)
    best = np.inf
    for _ in range(80):
        masks, i = [], 0
        for Ht, k in zip(pre, kinks):
            m = (Ht > 0).to(torch.float64).clone()
            m[k] = d[i : i + int(k.sum())]
            masks.append(m)
            i += int(k.sum())
        g = torch.autograd.grad(_eq1(ts, masks, 3, LAM), ts, create_graph=True)
        r = sum((x**2).sum() for x in g)
        best = min(best, float(r.detach()) ** 0.5)
        opt.zero_grad()
        r.backward()
        opt.step()
        with torch.no_grad():
            d.clamp_(0.0, 1.0)
    assert best <= 1e-6
    assert result.clarke_after is not None and result.clarke_after <= 1e-6
    assert result.clarke_masks is not None  # the multipliers' witness, checked with the own forward
    for D, Ht in zip(result.clarke_masks, pre):
        assert D.min() >= 0.0 and D.max() <= 1.0
        far = (Ht.abs() > 1e-6 * Ht.abs().max()).numpy()
        assert np.array_equal(D[far], (Ht > 0).numpy()[far].astype(np.float64))
    g = torch.autograd.grad(_eq1(ts, [torch.tensor(D) for D in result.clarke_masks], 3, LAM), ts)
    assert float(sum((x**2).sum() for x in g)) ** 0.5 <= 1e-6
    keys = {"loss_before", "loss_after", "clarke_after", "active", "converged"}
    assert result.to_file_dict().keys() >= keys
    assert "params" not in result.to_file_dict() and "clarke_masks" not in result.to_file_dict()
    # the verdict of the refined point reads the same Clarke element off its multipliers (checked above)
    from deepcollapse.landscape.kink_manifold import multiplier_certificate
    from deepcollapse.landscape.probes import KINK_RTOL, kink_masks

    refined = [np.asarray(p) for p in result.params]
    residual, _ = multiplier_certificate(refined, problem, kink_masks(refined, KINK_RTOL), KINK_RTOL)
    assert residual <= 1e-6


def test_a_smooth_family_has_nothing_to_do():
    problem = Problem(3, 3, 1, LAM, (LAM,) * 3).with_family("mse", "linear")
    rng = np.random.default_rng(0)
    params = [rng.normal(size=s) for s in ((4, 3), (4, 4), (4, 4), (3, 4))]
    result = refine_at_kinks(params, problem)
    assert result.note.startswith("nothing to do") and not result.changed and not result.converged
    assert all(np.array_equal(a, b) for a, b in zip(result.params, params))


def test_search_point_writes_the_refinement_fields(tmp_path, monkeypatch):
    from deepcollapse.experiments.search_experiments import BEST_KNOWN_SMOKE, _search_config
    from deepcollapse.landscape import verdicts
    from deepcollapse.runs.search_point import run_search_point

    real, calls = verdicts.landscape, []

    def first_undecided(params, problem, **kw):  # force the refinement branch on the first verdict
        land = real(params, problem, **kw)
        calls.append(land["verdict"])
        if len(calls) == 1:
            return verdicts.Landscape.from_dict({**land.to_dict(), "verdict": "undecided at kinks"})
        return land

    monkeypatch.setattr(verdicts, "landscape", first_undecided)
    row = run_search_point(_search_config(3, 3, BEST_KNOWN_SMOKE), tmp_path)
    saved = json.loads((tmp_path / "point.json").read_text())
    assert saved["verdict_before_refinement"].startswith("undecided at kinks")
    assert saved["kink_refinement"] == json.loads((tmp_path / "kink_refinement.json").read_text())
    assert saved["clarke_residual"] == row["clarke_residual"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert saved["best_loss"] <= summary["best_loss"]
    sol = check_solution(tmp_path / saved["solution"])  # independent float64 evaluation of the saved point
    assert abs(sol["loss"] - saved["best_loss"]) <= 1e-12 * saved["best_loss"]
    if saved["solution"] == "solutions/refined.npz":
        assert len(calls) == 2 and saved["verdict"].startswith(calls[1])  # the refined point's verdict
    # the verdict redone (point.json deleted, the real first verdict): the folder holds the refinement files
    # of this verdict only
    (tmp_path / "point.json").unlink()
    monkeypatch.setattr(verdicts, "landscape", real)
    again = run_search_point(_search_config(3, 3, BEST_KNOWN_SMOKE), tmp_path)
    assert (tmp_path / "solutions" / "refined.npz").exists() == (again["solution"] == "solutions/refined.npz")
    assert (tmp_path / "kink_refinement.json").exists() == (again["kink_refinement"] is not None)


def test_newton_kkt_converges_on_the_manifold():
    """The SQP step (Newton–KKT with exact Hessian-vector products) reaches a KKT point of
    ``min f_A s.t. H~_l[A] = 0`` from a perturbed start; checked with torch: ``H~[A]`` vanishes and the
    gradient of the piece (own forward, ``A`` off) lies in the span of the constraint gradients."""
    from deepcollapse.landscape.kink_manifold import Manifold, newton_kkt
    from deepcollapse.landscape.piecewise import flatten, unflatten

    params, problem = _kinked_point()
    pre = [Ht.numpy() for Ht in _pre(params)]
    A = [np.abs(Ht) <= 1e-6 * np.abs(Ht).max() for Ht in pre]  # the dead unit's row of H~_2
    A[1].flat[np.argmin(np.where(pre[1] > 0, pre[1], np.inf))] = True  # and the smallest positive of H~_3
    assert int(sum(a.sum() for a in A)) >= 4
    shapes = [p.shape for p in params]
    x0 = flatten(params)
    x0 = x0 + 1e-5 * np.random.default_rng(5).normal(size=x0.size)  # off the manifold
    x, info = newton_kkt(Manifold(problem, shapes, A), x0, 1e-6, float("inf"))
    assert info["iterations"] < 30 and info["residual"] <= 1e-7 and np.linalg.norm(x - x0) > 1e-6
    ts = [torch.tensor(p, requires_grad=True) for p in unflatten(x, shapes)]
    H, cons, masks = ts[0], [], []
    for W, a in zip(ts[1:-1], A):
        Ht = W @ H
        cons.append(Ht[torch.tensor(a)])
        masks.append(((Ht > 0) & ~torch.tensor(a)).to(torch.float64).detach())
        H = torch.relu(Ht) * masks[-1]
    c = torch.cat(cons)
    assert float(c.detach().abs().max()) <= 1e-9 * float((ts[1] @ ts[0]).detach().abs().max())
    g = torch.autograd.grad(_eq1(ts, masks, 3, LAM), ts)
    gvec = torch.cat([x.ravel() for x in g]).numpy()

    def row(ci):  # ∇c_i (W_L does not enter the constraints)
        parts = torch.autograd.grad(ci, ts, retain_graph=True, allow_unused=True)
        full = [torch.zeros_like(t) if d is None else d for d, t in zip(parts, ts)]
        return torch.cat([d.ravel() for d in full]).numpy()

    J = np.stack([row(ci) for ci in c])  # (m, size)
    mu = np.linalg.lstsq(J.T, -gvec, rcond=None)[0]
    assert np.linalg.norm(gvec + J.T @ mu) <= 1e-7


def test_cli_refine_kinks_saves_the_refined_point_and_both_verdicts(tmp_path, capsys):
    from deepcollapse.cli import main
    from deepcollapse.landscape.kinks import REFINED_VERDICTS
    from deepcollapse.landscape.solution_file import save_solution

    params, problem = _kinked_point(1e-4)  # far enough off the kink for a certified descent ("not critical")
    start = tmp_path / "start.npz"
    save_solution(start, params[0], params[1:], n=1, lam_h=LAM, lam_w=(LAM,) * 3)
    out = tmp_path / "o"
    argv = ["dufm", "landscape", str(start), "--refine-kinks", "--no-progress", "--out", str(out), "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    saved = json.loads((out / "landscape.json").read_text())
    assert saved["verdict_before_refinement"] == result["verdict_before_refinement"]
    assert saved["inputs"]["refine_kinks"] is True
    f0 = float(_eq1([torch.tensor(p) for p in params], None, 3, LAM))
    assert abs(saved["kink_refinement"]["loss_before"] - f0) <= 1e-14  # own torch eq. (1)
    assert result["verdict_before_refinement"] in REFINED_VERDICTS
    # the refined point: re-evaluated independently, not higher, and its verdict is the one in the file
    from deepcollapse.landscape.solution_file import load_solution

    sol = load_solution(out / "refined.npz")
    f1 = float(_eq1([torch.tensor(sol["H1"]), *(torch.tensor(W) for W in sol["weights"])], None, 3, LAM))
    assert f1 <= f0 * (1 + 1e-13) and abs(result["loss"] - f1) <= 1e-14
    assert abs(check_solution(out / "refined.npz")["difference"]) <= 1e-14  # the file's claimed loss
    assert result["verdict"] not in REFINED_VERDICTS and result["clarke_residual"] <= 1e-6
    # the same point without the option replaces the result (no --force: the same point), and the earlier
    # refined point goes with the result it belonged to
    assert main(argv[:3] + ["--no-progress", "--out", str(out)]) == 0
    assert not (out / "refined.npz").exists()
    assert "verdict_before_refinement" not in json.loads((out / "landscape.json").read_text())
    # the README's sequence (issue 32): `dufm landscape X && dufm landscape X --refine-kinks`, no --force
    assert main(argv[:-1]) == 0 and (out / "refined.npz").is_file()
    assert json.loads((out / "landscape.json").read_text())["inputs"]["refine_kinks"] is True
    # another point in that folder is still refused without --force
    other = tmp_path / "other.npz"
    save_solution(other, 2 * params[0], params[1:], n=1, lam_h=LAM, lam_w=(LAM,) * 3)
    assert main(["dufm", "landscape", str(other), "--no-progress", "--out", str(out)]) == 2
    assert "another point" in capsys.readouterr().err


def _eq1_general(ts, masks, problem):
    """Eq. (1), MSE, for any n (columns class-major, ``Y = I_K ⊗ 1_n^T``), written out like :func:`_eq1`."""
    H = ts[0]
    for l, W in enumerate(ts[1:-1]):
        H = masks[l] * (W @ H)
    eye = torch.eye(problem.classes, dtype=torch.float64)
    Y = torch.kron(eye, torch.ones(1, problem.n, dtype=torch.float64))
    fit = ((ts[-1] @ H - Y) ** 2).sum() / (2 * problem.N)
    reg = problem.lam_h * (ts[0] ** 2).sum()
    reg = reg + sum(lam * (W**2).sum() for lam, W in zip(problem.lam_w, ts[1:]))
    return fit + 0.5 * reg


def test_a_given_witness_is_checked_and_bounds_the_verdicts_clarke_residual(monkeypatch):
    """``witness_residual`` is ‖∇f_D‖ of an own torch eq. (1) for an admissible ``D`` and ``inf`` for one the
    near-kink rule does not allow; ``landscape(..., clarke_witness=D)`` tries it first (no minimisation over
    ``D`` when it certifies), also on the reduced problem of a collapsed point with n = 2."""
    from deepcollapse.landscape import verdicts
    from deepcollapse.landscape.kink_manifold import witness_residual
    from deepcollapse.landscape.probes import KINK_RTOL
    from deepcollapse.landscape.targets import load_point

    # SRG at K = 6, L = 3 (n = 1) is "not critical"; its refinement is critical at a kink, with a witness
    start, problem, _ = load_point(None, construction="srg", classes=6, layers=3, n=1, width=8)
    result = refine_at_kinks(start, problem, max_seconds=20)
    point = [np.asarray(p) for p in result.params]
    D = result.clarke_masks
    assert D is not None and any(((m > 0) & (m < 1)).any() for m in D)  # a fractional D at a kink
    residual, grad = witness_residual(point, problem, D, KINK_RTOL)
    ts = [torch.tensor(p, requires_grad=True) for p in point]
    own = torch.autograd.grad(_eq1_general(ts, [torch.tensor(m) for m in D], problem), ts)
    own_vec = torch.cat([g.ravel() for g in own]).numpy()
    assert grad is not None and np.allclose(grad, own_vec, rtol=0, atol=1e-14)
    assert abs(residual - float(np.linalg.norm(own_vec))) <= 1e-14 and residual <= 1e-6
    assert float(np.linalg.norm(own_vec)) < 1e-3 * verdicts.landscape(point, problem)["grad_norm"]
    # not candidates: an entry outside [0, 1]; the pattern flipped where H~ is far from its kink; wrong shapes
    pre = [(torch.tensor(point[1]) @ torch.tensor(point[0])).numpy()]
    too_big = [m.copy() for m in D]
    too_big[0].flat[0] = 1.5
    flipped = [m.copy() for m in D]
    far = int(np.argmax(np.abs(pre[0])))
    flipped[0].flat[far] = 1.0 - flipped[0].flat[far]
    for bad in (too_big, flipped, D[:1], [m[:, :-1] for m in D]):
        assert witness_residual(point, problem, bad, KINK_RTOL) == (float("inf"), None)

    def no_minimisation(*args, **kwargs):
        raise AssertionError("the witness certified: no minimisation over D")

    monkeypatch.setattr(verdicts, "clarke_direction", no_minimisation)
    land = verdicts.landscape(point, problem, clarke_witness=D)
    assert land["verdict"] == "critical at a kink" and land["clarke_residual"] == residual
    # n = 2 with λ_H1 / 2: the collapsed point and its witness, repeated per sample, are the same point of the
    # reduced problem (n λ_H1 = λ_H1 of the n = 1 problem)
    problem2 = Problem(6, 3, 2, problem.lam_h / 2, problem.lam_w)
    point2 = [np.repeat(point[0], 2, axis=1), *point[1:]]
    land2 = verdicts.landscape(point2, problem2, clarke_witness=[np.repeat(m, 2, axis=1) for m in D])
    assert land2["reduced"] and land2["verdict"] == "critical at a kink"
    assert abs(land2["clarke_residual"] - residual) <= 1e-14
    # a witness that differs within a class is not carried to the reduced problem: the minimisation runs
    monkeypatch.undo()
    uneven = [np.repeat(m, 2, axis=1) for m in D]
    uneven[0][:, 1] = 1.0 - uneven[0][:, 1]
    land3 = verdicts.landscape(point2, problem2, clarke_witness=uneven)
    assert land3["reduced"] and land3["verdict"] == "critical at a kink"
