"""Descent continued until certified (issue 31): from a constructed non-critical point the descent ends lower
and certified; the same call gives the same point (count budgets); a certified start is returned as it is.

The losses are checked against formulas.md's eq. (1) written out with explicit matrices (numpy, below)."""

from __future__ import annotations

import numpy as np
import pytest

from deepcollapse.landscape.descent import CERTIFIED, descend_until_certified
from deepcollapse.landscape.piecewise import Problem, expand
from deepcollapse.landscape.verdicts import landscape

LAM = 0.01


def reference_loss(params: list[np.ndarray]) -> float:
    """1/(2N)‖W_L H_L − Y‖² + λ/2 (‖H_1‖² + Σ‖W_l‖²), ReLU between layers, Y = I_K ⊗ 1_n^T."""
    H1, *weights = params
    K, N = weights[-1].shape[0], H1.shape[1]
    Y = np.kron(np.eye(K), np.ones((1, N // K)))
    H = H1
    for W in weights[:-1]:
        H = np.maximum(W @ H, 0.0)
    fit = np.sum((weights[-1] @ H - Y) ** 2) / (2 * N)
    return float(fit + LAM / 2 * (np.sum(H1**2) + sum(np.sum(W**2) for W in weights)))


@pytest.fixture(scope="module")
def certified_point():
    """A certified point of K = 3, L = 3, n = 1, width 4 (descended from a random start)."""
    rng = np.random.default_rng(0)
    problem = Problem(classes=3, layers=3, n=1, lam_h=LAM, lam_w=[LAM] * 3)
    start = [
        rng.normal(size=(4, 3)),
        rng.normal(size=(4, 4)),
        rng.normal(size=(4, 4)),
        rng.normal(size=(3, 4)),
    ]
    out = descend_until_certified(start, problem)
    assert out.certified
    return problem, out.params


def _output(params: list[np.ndarray]) -> np.ndarray:
    H1, *weights = params
    H = H1
    for W in weights[:-1]:
        H = np.maximum(W @ H, 0.0)
    return weights[-1] @ H


def _perturbed(params: list[np.ndarray], size: float, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [p + size * rng.normal(size=p.shape) for p in params]


def test_a_non_critical_point_ends_lower_and_certified(certified_point):
    problem, params = certified_point
    start = _perturbed(params, 1e-2, 1)
    assert landscape(start, problem)["verdict"] == "not critical"  # the constructed start
    out = descend_until_certified(start, problem, rounds=6, smoothing=None)
    assert out.verdict_before == "not critical"
    assert out.certified and out.verdict in CERTIFIED
    assert out.clarke_residual <= 1e-6
    assert reference_loss(out.params) < reference_loss(start)
    assert out.loss_after == pytest.approx(reference_loss(out.params), rel=1e-12)
    assert out.loss_before == pytest.approx(reference_loss(start), rel=1e-12)
    assert out.steps[0]["action"].startswith("line search")  # the certified direction was followed
    losses = [s["loss_after"] for s in out.steps]
    assert all(b <= a for a, b in zip([out.loss_before, *losses], losses))  # never up
    # the verdict of the returned point, recomputed from scratch, is the one reported
    assert landscape(out.params, problem)["verdict"] == out.verdict


@pytest.mark.check  # two homotopies (≈ 5 s)
def test_the_smoothing_homotopy_ends_lower_and_certified(certified_point):
    """The first round (default): σ_ε polishes for ε = 1e-2 .. 1e-9 · max|H~|, then ReLU; certified."""
    problem, params = certified_point
    for seed in (1, 6):
        start = _perturbed(params, 1e-2, seed)
        assert landscape(start, problem)["verdict"] == "not critical"
        out = descend_until_certified(start, problem, rounds=6)
        assert out.steps[0]["action"].startswith("smoothing homotopy (8 levels)")
        assert out.certified and out.verdict in CERTIFIED and out.clarke_residual <= 1e-6
        assert out.loss_after == pytest.approx(reference_loss(out.params), rel=1e-12)
        assert reference_loss(out.params) < reference_loss(start)
        assert landscape(out.params, problem)["verdict"] == out.verdict


def test_counts_make_it_deterministic(certified_point):
    problem, params = certified_point
    start = _perturbed(params, 1e-2, 2)
    a = descend_until_certified(start, problem, rounds=3)
    b = descend_until_certified(start, problem, rounds=3)
    # the same rounds, moves and verdict; the point agrees to rounding (numpy's and torch's SIMD sums
    # depend on memory alignment, so two calls may differ in the last bits; a wall-clock budget would
    # differ by whole rounds).  Up to the flat directions: neurons active on every sample act linearly,
    # so an orthogonal mix Q of them (W_l -> Q W_l, W_{l+1} -> W_{l+1} Q^T) keeps eq. (1); the last bits
    # moved the matrices along it by up to 6e-5 between two calls.  Its invariants agree: the singular
    # values of every matrix and the network's output.
    assert a.verdict == b.verdict and a.rounds == b.rounds
    assert [s["action"] for s in a.steps] == [s["action"] for s in b.steps]
    assert a.loss_after == pytest.approx(b.loss_after, rel=1e-12)
    for x, y in zip(a.params, b.params):
        assert np.allclose(np.linalg.svd(x, compute_uv=False), np.linalg.svd(y, compute_uv=False), atol=1e-7)
    assert np.allclose(_output(a.params), _output(b.params), rtol=0, atol=1e-7)


def test_a_certified_start_is_returned_unchanged(certified_point):
    problem, params = certified_point
    out = descend_until_certified(params, problem)
    assert out.rounds == 0 and out.steps == [] and out.certified
    assert all(np.array_equal(x, y) for x, y in zip(out.params, params))


@pytest.mark.check  # three descents (≈ 10 s); the fast tier keeps the one of a non-critical point
def test_a_collapsed_point_descends_as_the_reduced_problem(certified_point):
    problem, params = certified_point
    n = 3
    big = Problem(classes=3, layers=3, n=n, lam_h=LAM, lam_w=[LAM] * 3)
    certified = 0
    for seed in (3, 4, 5):
        start = _perturbed(params, 1e-2, seed)
        # exactly collapsed H_1: eq. (1) at n equals n = 1's with nλ
        start = [expand(start[0], n), *start[1:]]
        out = descend_until_certified(start, big, rounds=6)
        assert out.reduced
        assert out.params[0].shape == (4, 3 * n)
        assert out.loss_after == pytest.approx(reference_loss(out.params), rel=1e-12)
        assert out.loss_after < reference_loss(start)
        certified += bool(out.certified)
    # Measured over the OpenBLAS kernels (OPENBLAS_CORETYPE Haswell .. SapphireRapids) and perturbations
    # 3..12: about 1 start in 10 under some kernels ends on a flat plateau whose verdict stays "saddle"
    # without a certified direction after 6 rounds; the others are certified in one round.  Two of three
    # must be.
    assert certified >= 2


def test_a_round_that_changes_nothing_ends_the_descent(certified_point, monkeypatch, capsys):
    """Every later round would start from the same state and repeat it: stop there, say so."""
    import deepcollapse.landscape.descent as descent

    problem, params = certified_point
    start = _perturbed(params, 1e-2, 1)
    monkeypatch.setattr(descent, "_settle", lambda candidate, f_cand, current, *rest: current)  # no move kept
    out = descend_until_certified(start, problem, rounds=6, smoothing=None, progress=True)
    assert "continued descent" in capsys.readouterr().err  # the bar over the rounds
    assert out.rounds == 1 and len(out.steps) == 1 and not out.certified
    assert out.verdict == "not critical" and out.loss_after == out.loss_before
    assert (
        out.note
        == "still not critical after 1 round(s) (round 1 left the point unchanged), loss lowered by 0"
    )
    # the homotopy's round is never taken for a stall: the next round (a line search) still runs
    out = descend_until_certified(start, problem, rounds=6)
    assert [s["action"].split(" (")[0].split(" +")[0] for s in out.steps] == [
        "smoothing homotopy",
        "line search",
    ]


def test_the_homotopy_runs_again_from_a_point_where_a_round_stalls(certified_point, monkeypatch):
    """A round that changes nothing sends the descent to the homotopy again, from that point (its polish
    budget is a count; a second pass goes on converging); where the homotopy has already started from the
    point, the descent ends.  The moves are stubbed so that only the first homotopy moves the point: start
    P0 -> P1, a stalled line search at P1, the homotopy from P1 (no move), a stalled line search: a stall."""
    import deepcollapse.landscape.descent as descent

    problem, params = certified_point
    start, moved = _perturbed(params, 1e-2, 1), _perturbed(params, 1e-2, 2)
    assert landscape(moved, problem).verdict not in CERTIFIED
    homotopy_starts: list[list[np.ndarray]] = []

    def smoothed(point, prob, levels, iterations):
        homotopy_starts.append(point)
        out = moved if len(homotopy_starts) == 1 else point
        return out, reference_loss(out)

    def settle(candidate, f_cand, current, prob, *rest):
        if candidate is moved:  # the first homotopy's point is kept, nothing else moves
            return candidate, f_cand, landscape(candidate, prob, reduce=False)
        return current

    monkeypatch.setattr(descent, "_smoothed", smoothed)
    monkeypatch.setattr(descent, "_settle", settle)
    out = descend_until_certified(start, problem, rounds=8)
    actions = [s["action"].split(" (")[0].split(" +")[0] for s in out.steps]
    assert actions == ["smoothing homotopy", "line search", "smoothing homotopy", "line search"]
    assert [np.array_equal(h[0], p[0]) for h, p in zip(homotopy_starts, (start, moved))] == [True, True]
    assert out.note.startswith("still ") and "round 4 left the point unchanged" in out.note
    assert out.loss_after == pytest.approx(reference_loss(moved), rel=1e-12)


def test_an_undecided_point_gets_its_clarke_residual_with_a_growing_budget(certified_point, monkeypatch):
    """An *undecided at kinks* point whose refinement does not move it is judged again with 4, 8, then 16
    times the Clarke residual's L-BFGS-B iterations (the minimum over ``D`` is an upper bound, so more
    iterations can only lower it).  Stubbed: every verdict below 2400 iterations reads "undecided", the
    refinement keeps the point; the real verdict at 2400 certifies it in the second round."""
    import dataclasses

    import deepcollapse.landscape.descent as descent
    from deepcollapse.landscape import verdicts
    from deepcollapse.landscape.probes import CLARKE_ITER

    problem, params = certified_point
    original, budgets = verdicts.landscape, []

    def judge(point, prob, **kwargs):
        budgets.append(kwargs.get("clarke_iter", CLARKE_ITER))
        land = original(point, prob, **kwargs)
        if budgets[-1] < 8 * CLARKE_ITER:
            return dataclasses.replace(land, verdict="undecided at kinks")
        return land

    monkeypatch.setattr(verdicts, "landscape", judge)
    monkeypatch.setattr(descent, "_refine", lambda point, prob, land, f, *rest: (point, f, land))
    out = descend_until_certified(params, problem, rounds=6, smoothing=None)
    assert budgets == [CLARKE_ITER, 4 * CLARKE_ITER, 8 * CLARKE_ITER]
    assert out.verdict_before == "undecided at kinks" and out.certified and out.rounds == 2
    assert [s["action"] for s in out.steps] == [
        f"refinement (4 rounds) + Clarke residual ({4 * CLARKE_ITER} iterations)",
        f"refinement (8 rounds) + Clarke residual ({8 * CLARKE_ITER} iterations)",
    ]
    assert out.loss_after == pytest.approx(reference_loss(params), rel=1e-12)
