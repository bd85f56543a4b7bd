"""analyze_dufm on run folders built from the theory's explicit constructions (DNC, SRG, zero)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from deepcollapse.dufm.classify import gram_match
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.summary import analyze_dufm
from deepcollapse.theory.constructions import (
    dnc_solution,
    loss_dnc,
    loss_srg,
    srg_gram,
    srg_solution,
    zero_solution,
)

torch.set_num_threads(1)


def _folder(tmp_path, name, solutions, config: DUFMConfig):
    """A run folder holding explicit points (one per run) in the trainer's params.pt layout."""
    out = tmp_path / name
    out.mkdir()
    config.to_yaml(out / "config.yaml")
    H1 = torch.stack([torch.from_numpy(s.H1) for s in solutions])
    weights = [torch.stack([torch.from_numpy(s.weights[i]) for s in solutions]) for i in range(config.layers)]
    torch.save(
        {"H1": H1, "weights": weights, "config": config.to_dict(), "step": config.steps, "diverged": {}},
        out / "params.pt",
    )
    return out


def test_gram_match_finds_permutations():
    G = srg_gram(10)
    perm = np.random.default_rng(1).permutation(10)
    m = gram_match(G[np.ix_(perm, perm)], G)
    assert m["distance"] < 1e-9 and m["lower"] < 1e-9
    # the identity (DNC Gram) is not SRG-like: the invariant lower bound already says so
    m = gram_match(np.eye(10), G)
    assert m["lower"] > 0.3 and m["distance"] >= m["lower"]


@pytest.mark.parametrize("K, L", [(4, 3), (10, 4)])
def test_dnc_construction_is_classified_dnc(tmp_path, K, L):
    lam, n, width = 0.004, 5, 12
    cfg = DUFMConfig(
        classes=K, n=n, layers=L, width=width, lam_h=lam, lam_w=lam, runs=1, steps=0, dtype="float64"
    )
    sol = dnc_solution(K, L, n, lam, lam, width=width)
    s = analyze_dufm(_folder(tmp_path, "dnc", [sol], cfg))
    r = s["runs"][0]
    closed = loss_dnc(K, L, n, lam, lam).loss
    assert r["final_loss"] == pytest.approx(closed, rel=1e-9)  # explicit matrices vs the closed form
    assert r["classification"] == "dnc", r
    assert r["ranks"][1:] == [K] * (L - 1)
    assert r["polished_loss"] == pytest.approx(closed, rel=1e-6)
    assert max(r["dnc1"]) < 1e-20
    assert s["loss_dnc"] == pytest.approx(closed)


def test_srg_and_zero_constructions(tmp_path):
    K, L, n, lam, width = 10, 4, 5, 0.004, 12
    cfg = DUFMConfig(
        classes=K,
        n=n,
        layers=L,
        width=width,
        lam_h=lam,
        lam_w=lam,
        runs=2,
        steps=0,
        seeds=[7, 8],
        dtype="float64",
    )
    srg = srg_solution(K, L, n, lam, lam, width=width)
    zero = zero_solution(K, L, n, width=width)
    s = analyze_dufm(_folder(tmp_path, "srg", [srg, zero], cfg), write=True)
    r_srg, r_zero = s["runs"]
    closed = loss_srg(K, L, n, lam, lam).loss
    assert r_srg["final_loss"] == pytest.approx(closed, rel=1e-9)
    assert r_srg["classification"] == "srg_like", r_srg
    assert r_srg["srg_gram_distance"] < 1e-8
    assert r_srg["ranks"][1:3] == [5, 5]  # rank r = 5 in the middle layers (K = C(5, 2))
    assert r_srg["polished_loss"] == pytest.approx(closed, rel=1e-6)
    assert r_zero["classification"] == "zero" and r_zero["final_loss"] == 0.5
    assert [r["seed"] for r in s["runs"]] == [7, 8]
    on_disk = json.loads((tmp_path / "srg" / "summary.json").read_text())
    assert on_disk["runs"][0]["classification"] == "srg_like" and on_disk["loss_srg"] == pytest.approx(closed)


def test_perturbed_point_is_not_converged(tmp_path):
    K, L, n, lam, width = 4, 3, 3, 0.004, 6
    cfg = DUFMConfig(
        classes=K, n=n, layers=L, width=width, lam_h=lam, lam_w=lam, runs=1, steps=0, dtype="float64"
    )
    sol = dnc_solution(K, L, n, lam, lam, width=width)
    sol.H1 = sol.H1 + 0.05 * np.random.default_rng(0).standard_normal(sol.H1.shape)
    r = analyze_dufm(_folder(tmp_path, "p", [sol], cfg))["runs"][0]
    assert r["classification"] == "not_converged" and r["grad_norm"] > 1e-3
    # polish keeps the class-mean structure (DNC-like up to noise) and re-optimises the layers
    assert r["polished_loss"] < r["final_loss"]


def test_k6_dnc_and_srg_are_told_apart(tmp_path):
    """For K = 6 (r = 4) the SRG's last-layer Gram matrix is diagonal like DNC's: the middle ranks decide."""
    K, L, n, lam, width = 6, 4, 3, 0.004, 8
    cfg = DUFMConfig(
        classes=K, n=n, layers=L, width=width, lam_h=lam, lam_w=lam, runs=2, steps=0, dtype="float64"
    )
    dnc = dnc_solution(K, L, n, lam, lam, width=width)
    srg = srg_solution(K, L, n, lam, lam, width=width, construction="def9")
    r_dnc, r_srg = analyze_dufm(_folder(tmp_path, "k6", [dnc, srg], cfg))["runs"]
    assert r_dnc["classification"] == "dnc", r_dnc
    assert r_srg["classification"] == "srg_like", r_srg
    assert r_srg["ranks"][1:3] == [4, 4]


def _class_scaled(sol, factors, n):
    """The solution with class c's columns of H_1 scaled by factors[c]: by positive homogeneity every layer's
    class mean c scales by the same factor, so M_L keeps orthogonal columns of unequal norms."""
    import copy

    out = copy.deepcopy(sol)
    out.H1 = sol.H1 * np.repeat(np.asarray(factors, dtype=float), n)[None, :]
    return out


def test_run_heading_to_dnc_is_dnc_converging(tmp_path):
    """The issue's trajectories (K = 10, L = 4, λ = 0.004 after 50 000 steps): rank 10 in every layer, DNC2
    condition numbers 1.04-1.10, a loss a few 1e-4 above L_DNC and ‖∇‖ ~ 1e-3.  Built here from the explicit
    DNC solution with unequal class scales; the losses are checked against the closed form L_DNC."""
    K, L, n, lam, width = 10, 4, 5, 0.004, 12
    cfg = DUFMConfig(
        classes=K, n=n, layers=L, width=width, lam_h=lam, lam_w=lam, runs=3, steps=0, dtype="float64"
    )
    sol = dnc_solution(K, L, n, lam, lam, width=width)
    heading = _class_scaled(sol, np.linspace(0.96, 1.04, K), n)  # cond(M_L) = (1.04/0.96)^... ≈ 1.08
    far = _class_scaled(sol, np.linspace(0.6, 1.4, K), n)  # DNC-shaped but far from the optimum's scales
    s = analyze_dufm(_folder(tmp_path, "heading", [heading, far, sol], cfg))
    r_heading, r_far, r_dnc = s["runs"]
    L_dnc = loss_dnc(K, L, n, lam, lam).loss
    gap = r_heading["final_loss"] / L_dnc - 1
    assert 0 < gap < 5e-3, gap
    assert 1.05 < r_heading["dnc2_cond"][-1] < 1.25 and r_heading["grad_norm"] > 1e-4
    assert r_heading["ranks"][1:] == [K] * (L - 1)
    assert r_heading["classification"] == "dnc_converging", r_heading
    assert r_far["final_loss"] / L_dnc - 1 > 5e-3 and r_far["classification"] != "dnc_converging"
    assert r_dnc["classification"] == "dnc"
    assert s["criteria"]["dnc_converging_gap"] == 5e-3
