"""DNC / SRG constructions: closed forms vs explicit matrices, spectra, ranks, scales, Theorem 5, thresholds.

Reference values are computed here independently: explicit matrices written by hand (DNC), the formulas of
formulas.md typed in again (L_DNC(α), L_SRG(α)), Lemmas 15/16 for spectra, scipy on the explicit small model.
"""

from __future__ import annotations

import json
import math
from itertools import combinations

import numpy as np
import pytest
from scipy import optimize

from deepcollapse._core.checks import ConfigError
from deepcollapse.theory import (
    adjacency_matrix,
    dnc_solution,
    dufm_objective,
    loss_dnc,
    loss_srg,
    solution_from_class_means,
    srg_geometry,
    srg_gram,
    srg_intermediate_gram,
    srg_solution,
    theorem5_conditions,
    zero_solution,
    zero_threshold,
    zero_threshold_equal_lambda,
)
from deepcollapse.theory.constructions import (
    GramMatch,
    SRGCoefficients,
    _means_from,
    _numeric,
    def11_2_kept_classes,
    dnc_geometry,
    gram_match,
    srg_analytic,
    srg_last_unit,
)
from deepcollapse.theory.graphs import incidence_matrix

REL = 1e-10


def rel_err(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def formula_dnc(K, L, n, lam_h, lams, a):
    """formulas.md: L_DNC(α) (n = 1 reduction with n λ_H)."""
    if L == 1:
        return n * lam_h / 2 * K * a[0] + K * lams[0] / (2 * (a[0] + K * lams[0]))
    v = math.sqrt(lams[0] * n * lam_h) * K * math.sqrt(a[0])
    for l in range(2, L):
        v += lams[l - 1] / 2 * K * a[l - 1] / a[l - 2]
    return v + K * lams[-1] / (2 * (a[-1] + K * lams[-1]))


def formula_srg(r, L, n, lam_h, lams, a):
    """formulas.md: L_SRG(α) for K = C(r, 2), L >= 3."""
    K = r * (r - 1) // 2
    c2 = (r - 2) * (r - 3) // 2
    s2 = c2 + 1
    p0 = math.sqrt(2) + math.sqrt((r - 1) * (r - 2))
    Q = K * r * (r - 1) / (4 * s2)
    v = math.sqrt(lams[0] * n * lam_h) * p0 * math.sqrt(a[0])
    for l in range(2, L - 1):
        v += lams[l - 1] / 2 * r * a[l - 1] / a[l - 2]
    v += lams[L - 2] / 2 * Q * a[-1] / a[-2]
    sig2 = a[-1] / s2 * np.concatenate([[c2**2], np.full(r - 1, (r - 3) ** 2), np.ones(r * (r - 3) // 2)])
    return v + float(np.sum(lams[-1] / (2 * (sig2 + K * lams[-1]))))


def dnc_by_hand(K, L, n, lam_h, lams, a):
    """Explicit DNC matrices (identity geometry) at scales a = [α_2..α_L] (or [α_1] for L = 1)."""
    I = np.eye(K)
    if L == 1:
        H1 = math.sqrt(a[0]) * I
        weights = [math.sqrt(a[0]) / (a[0] + K * lams[0]) * I]
    else:
        A, B = lams[0], n * lam_h
        W1 = (B / A) ** 0.25 * a[0] ** 0.25 * I
        H1 = (A / B) ** 0.25 * a[0] ** 0.25 * I
        weights = [W1] + [math.sqrt(a[l] / a[l - 1]) * I for l in range(1, L - 1)]
        weights.append(math.sqrt(a[-1]) / (a[-1] + K * lams[-1]) * I)
    return np.repeat(H1, n, axis=1), weights


SETTINGS = [  # (K, L, n, lam_h, lam_w)
    (2, 1, 1, 0.01, 0.02),
    (3, 2, 5, 0.004, [0.004, 0.002]),
    (7, 3, 1, 0.001, [0.002, 0.001, 0.003]),
    (10, 4, 50, 0.004, 0.004),
    (5, 6, 3, 0.002, [0.003, 0.001, 0.002, 0.004, 0.002, 0.001]),
]


@pytest.mark.parametrize("K,L,n,lam_h,lam_w", SETTINGS)
def test_dnc_closed_form_equals_explicit_matrices(K, L, n, lam_h, lam_w):
    lams = lam_w if isinstance(lam_w, list) else [lam_w] * L
    cf = loss_dnc(K, L, n, lam_h, lams)
    assert cf.loss < 0.5 and all(a > 0 for a in cf.scales)
    H1, weights = dnc_by_hand(K, L, n, lam_h, lams, cf.scales)
    direct = dufm_objective(H1, weights, lam_h, lams).total
    assert rel_err(cf.loss, direct) < REL
    assert rel_err(formula_dnc(K, L, n, lam_h, lams, cf.scales), direct) < REL
    sol = dnc_solution(K, L, n, lam_h, lams)
    assert rel_err(sol.loss, direct) < REL
    assert rel_err(dufm_objective(sol.H1, sol.weights, lam_h, lams).total, direct) < REL
    # DNC2: M_l^T M_l = α_l I_K, rank K in every layer
    for M, a in zip(sol.class_means, cf.scales):
        assert np.allclose(M.T @ M, a * np.eye(K), atol=1e-12 * max(a, 1))
        assert np.linalg.matrix_rank(M) == K


SRG_SETTINGS = [  # (K, L, n, lam_h, lam_w)
    (6, 4, 1, 0.001, 0.001),
    (10, 3, 1, 0.0005, [0.0005, 0.001, 0.0007]),
    (10, 4, 50, 0.004, 0.004),
    (15, 5, 7, 0.0002, [0.0003, 0.0001, 0.0002, 0.0004, 0.0002]),
    (21, 4, 2, 0.0003, [0.0002, 0.0003, 0.0001, 0.0002]),
]


@pytest.mark.parametrize("K,L,n,lam_h,lam_w", SRG_SETTINGS)
def test_srg_closed_form_equals_explicit_matrices(K, L, n, lam_h, lam_w):
    lams = lam_w if isinstance(lam_w, list) else [lam_w] * L
    r = round((1 + math.sqrt(1 + 8 * K)) / 2)
    cf = loss_srg(K, L, n, lam_h, lams)
    assert cf is not None and cf.construction == "def9" and cf.scales[-1] > 0
    sol = srg_solution(K, L, n, lam_h, lams)
    direct = dufm_objective(sol.H1, sol.weights, lam_h, lams).total
    assert rel_err(cf.loss, direct) < REL
    assert rel_err(formula_srg(r, L, n, lam_h, lams, cf.scales), direct) < REL
    assert sol.interpolation_residual < 1e-10
    assert sol.H1.shape[1] == K * n and sol.weights[-1].shape[0] == K
    # Definition 9 structure: middle rows are non-negative multiples of rows of T_r; the last layer's rows
    # have one negative entry and C(r-2, 2) positive ones of equal magnitude.
    T = incidence_matrix(r)
    for M in sol.class_means[:-1]:
        assert np.all(M >= 0)
        for row in M:
            j = int(np.argmax(np.abs(T @ row)))
            assert np.allclose(row / np.linalg.norm(row), T[j] / np.linalg.norm(T[j]))
    for row in sol.class_means[-1]:
        nz = row[np.abs(row) > 1e-12]
        assert (nz < 0).sum() == 1 and (nz > 0).sum() == (r - 2) * (r - 3) // 2
        assert np.allclose(np.abs(nz), np.abs(nz[0]))


@pytest.mark.parametrize("r", [4, 5, 6, 7])
def test_srg_spectra_and_ranks(r):
    """Lemmas 15/16 spectra; rank r before the last ReLU (3 for r = 4), K after it."""
    K, L = r * (r - 1) // 2, 4
    sol = srg_solution(K, L, 1, 0.0005, 0.0005)
    a = sol.scales
    G_eigs = np.concatenate([[2.0 * (r - 2)], np.full(r - 1, r - 4.0), np.full(r * (r - 3) // 2, -2.0)])
    for M, al in zip(sol.class_means[:-1], a[:-1]):
        lemma15 = np.sort(al / (r - 1) * (2 + G_eigs))
        assert np.allclose(np.linalg.eigvalsh(M.T @ M), lemma15, atol=1e-10 * al)
        assert np.linalg.matrix_rank(M) == r
    Mt = sol.class_means[-1]
    ML = np.maximum(Mt, 0)
    c2, s2 = (r - 2) * (r - 3) // 2, (r - 2) * (r - 3) // 2 + 1
    lemma16 = np.sort(
        a[-1] / s2 * np.concatenate([[c2**2], np.full(r - 1, (r - 3.0) ** 2), np.ones(r * (r - 3) // 2)])
    )
    assert np.allclose(np.linalg.eigvalsh(ML.T @ ML), lemma16, atol=1e-10 * a[-1])
    assert np.linalg.matrix_rank(Mt) == (
        3 if r == 4 else r
    )  # the r = 4 caveat: rows of A^(1) sum to r - 4 = 0
    assert np.linalg.matrix_rank(ML) == K
    cf = loss_srg(K, L, 1, 0.0005, 0.0005)
    assert cf.rank == r and cf.rank_post == K and cf.ranks == [r, r, 3 if r == 4 else r]


@pytest.mark.parametrize("r", [4, 5, 6, 8, 10])
def test_srg_analytic_coefficients_match_numeric(r):
    numeric = _numeric("x", incidence_matrix(r), srg_last_unit(r))
    analytic = srg_analytic(r)
    assert isinstance(analytic, SRGCoefficients)
    assert numeric.P_mid == pytest.approx(analytic.P_mid, rel=1e-12)
    assert numeric.q_mid == pytest.approx(analytic.q_mid, rel=1e-12)  # Lemma 13
    assert numeric.q_last == pytest.approx(analytic.q_last, rel=1e-12)  # Lemma 14 (Q)
    assert np.allclose(numeric.e, analytic.e, atol=1e-12)  # Lemma 16


def test_srg_analytic_and_gram_match_are_typed_results_with_the_dicts_of_earlier_releases():
    c = srg_analytic(5)
    d = c.to_dict()
    assert list(d) == ["P_mid", "q_mid", "q_last", "e"] and d["e"] == c.e.tolist()
    assert c["e"] is c.e and dict(c)["q_last"] == c.q_last  # read-only key access of the old dict
    back = SRGCoefficients.from_dict(json.loads(json.dumps(d)))
    assert back == c and isinstance(back.e, np.ndarray) and back.to_dict() == d
    G = srg_gram(10)
    perm = np.random.default_rng(1).permutation(10)
    m = gram_match(G[np.ix_(perm, perm)], G, starts=4)
    assert isinstance(m, GramMatch) and list(m.to_dict()) == ["lower", "distance", "perm"]
    assert m.distance < 1e-9 and m["distance"] == m.distance and len(m.perm) == 10
    assert (
        all(type(p) is int for p in m.perm) and GramMatch.from_dict(json.loads(json.dumps(m.to_dict()))) == m
    )


@pytest.mark.parametrize("K", [7, 8, 9, 11, 14, 20])
@pytest.mark.parametrize("construction", ["def11.1", "def11.2"])
def test_general_k_constructions_explicit(K, construction):
    L, n, lam_h, lams = 4, 3, 0.0005, [0.0005, 0.0003, 0.0006, 0.0004]
    cf = loss_srg(K, L, n, lam_h, lams, construction=construction)
    assert cf is not None and cf.construction == construction
    sol = srg_solution(K, L, n, lam_h, lams, construction=construction)
    direct = dufm_objective(sol.H1, sol.weights, lam_h, lams).total
    assert rel_err(cf.loss, direct) < REL
    assert sol.weights[-1].shape[0] == K and sol.H1.shape[1] == K * n  # rows of W_L dropped too (11.2)
    assert sol.interpolation_residual < 1e-10
    ML = np.maximum(sol.class_means[-1], 0)
    assert np.linalg.matrix_rank(ML) == K


def test_def11_1_blocks_add_up():
    """Def. 11.1 = SRG(C(r,2)) ⊕ DNC(K - C(r,2)); each block's loss uses the full-K ridge constant."""
    K, L, n, lam_h, lam = 8, 4, 1, 0.0005, 0.0005
    cf = loss_srg(K, L, n, lam_h, lam, construction="def11.1")
    srg6, dnc2 = srg_geometry(K, "def11.1")
    assert srg6.classes == 6 and dnc2.classes == 2
    # block 1 alone: explicit 6-class SRG class means, last layer solved with the K = 8 normalisation
    a, b = cf.scales, cf.block_scales
    lams = [lam] * L
    part1 = formula_srg(4, L, n, lam_h, lams, a) - sum(lam / (2 * (e * a[-1] + 6 * lam)) for e in srg6.e)
    part1 += sum(lam / (2 * (e * a[-1] + K * lam)) for e in srg6.e)
    part2 = (
        formula_dnc(2, L, n, lam_h, lams, b)
        - 2 * lam / (2 * (b[-1] + 2 * lam))
        + 2 * lam / (2 * (b[-1] + K * lam))
    )
    assert rel_err(cf.loss, part1 + part2) < REL


CASES_STATIONARY = [("dnc", 10, 4), ("def9", 10, 4), ("def9", 15, 3), ("def11.2", 8, 5), ("def11.1", 12, 4)]


@pytest.mark.parametrize("name,K,L", CASES_STATIONARY)
def test_optimised_scales_are_stationary(name, K, L):
    """Central finite differences of the explicit-matrix objective w.r.t. log α_l vanish at the optimum."""
    n, lam_h = 2, 0.0004
    lams = [0.0004, 0.0006, 0.0003, 0.0005, 0.0004][:L]
    if name == "dnc":
        cf, geoms = loss_dnc(K, L, n, lam_h, lams), [dnc_geometry(K), None]
    else:
        cf, geoms = loss_srg(K, L, n, lam_h, lams, construction=name), list(srg_geometry(K, name))
    scales = [list(cf.scales), list(cf.block_scales or [])]

    def explicit(sc):
        means = _means_from(geoms, sc, L, None)
        sol = solution_from_class_means(means, n, lam_h, lams)
        return dufm_objective(sol.H1, sol.weights, lam_h, lams).total

    base = explicit(scales)
    assert rel_err(base, cf.loss) < REL
    h = 1e-4
    for b, block in enumerate(scales):
        for i in range(len(block)):
            up = [list(s) for s in scales]
            dn = [list(s) for s in scales]
            up[b][i] *= math.exp(h)
            dn[b][i] *= math.exp(-h)
            fu, fd = explicit(up), explicit(dn)
            grad = (fu - fd) / (2 * h)
            assert abs(grad) < 1e-7, (b, i, grad)
            assert fu > base - 1e-15 and fd > base - 1e-15  # a local minimum


@pytest.mark.parametrize("K,L", [(4, 3), (10, 4), (6, 5)])
def test_one_scalar_reduction_matches_full_optimisation(K, L):
    """scipy over all log-scales of the DNC formula (typed in above) finds the same optimum."""
    n, lam_h = 1, 0.001
    lams = [0.001, 0.002, 0.0015, 0.001, 0.0012][:L]
    cf = loss_dnc(K, L, n, lam_h, lams)
    f = lambda x: formula_dnc(K, L, n, lam_h, lams, np.exp(x))
    best = min(
        (
            optimize.minimize(
                f, x0, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000}
            )
            for x0 in (np.log(cf.scales) + 0.5, np.zeros(L - 1), np.full(L - 1, -2.0))
        ),
        key=lambda r: r.fun,
    )
    assert best.fun >= cf.loss - 1e-12
    assert best.fun == pytest.approx(cf.loss, rel=1e-8)


@pytest.mark.parametrize("lam,n,kmax", [(0.001, 1, 100), (0.004, 50, 40), (0.0003, 5, 40)])
def test_theorem5_srg_beats_dnc_on_grid(lam, n, kmax):
    """L_SRG < L_DNC wherever Theorem 5's conditions hold and L_DNC < 1/2 (K = 6..kmax, L = 3..8)."""
    checked = non_triangular = 0
    for K in range(6, kmax + 1):
        for L in range(3, 9):
            if not theorem5_conditions(K, L):
                continue
            lams = [lam * (1 + 0.2 * (i % 3)) for i in range(L)]
            dnc = loss_dnc(K, L, n, lam, lams)
            srg = loss_srg(K, L, n, lam, lams)
            assert srg.loss <= dnc.loss + 1e-15
            if dnc.loss < 0.5:
                assert srg.loss < dnc.loss, (K, L)
                checked += 1
                non_triangular += int(
                    round((1 + math.sqrt(1 + 8 * K)) / 2) * (round((1 + math.sqrt(1 + 8 * K)) / 2) - 1) // 2
                    != K
                )
    assert checked > 20 and non_triangular > 15


def test_theorem5_conditions():
    assert theorem5_conditions(6, 4) and theorem5_conditions(10, 3)
    assert not theorem5_conditions(9, 3) and not theorem5_conditions(5, 8) and not theorem5_conditions(100, 2)


@pytest.mark.parametrize("K,L", [(2, 1), (2, 2), (2, 3), (2, 5), (3, 4), (10, 4)])
def test_zero_threshold(K, L):
    """Λ* from L_DNC equals the tangency closed form; L_DNC < 1/2 just below, = 1/2 just above."""
    lam_star = zero_threshold(K, L)
    closed = (L - 1) ** (L - 1) / (L ** (2 * L) * K ** (L + 1))
    assert lam_star == pytest.approx(closed, rel=1e-8)
    n, lams = 3, [0.01 * (1 + 0.1 * i) for i in range(L)]
    for factor, zero in ((0.98, False), (1.02, True)):
        lam_h = factor * lam_star / (n * math.prod(lams))
        cf = loss_dnc(K, L, n, lam_h, lams)
        assert cf.is_zero == zero and (cf.loss == 0.5) == zero


def test_binary_threshold_is_1_over_128_not_256():
    assert zero_threshold(2, 2) == pytest.approx(1 / 128, rel=1e-10)
    # at the 2023 paper's printed 1/256 the optimum is still non-zero
    lam = (1 / 256) ** (1 / 3)
    assert loss_dnc(2, 2, 1, lam, lam).loss < 0.5


def small_model_min(lam, seeds=8, d=2):
    """Direct L-BFGS on the explicit K = 2, L = 2, n = 1 model with every λ = lam (analytic gradient)."""
    K = 2
    Y = np.eye(K)
    shapes = [(d, K), (d, d), (K, d)]
    sizes = [a * b for a, b in shapes]

    def fg(x):
        H1, W1, W2 = (x[sum(sizes[:i]) : sum(sizes[: i + 1])].reshape(s) for i, s in enumerate(shapes))
        Z = W1 @ H1
        H2 = np.maximum(Z, 0)
        R = W2 @ H2 - Y
        f = np.sum(R**2) / (2 * K) + lam / 2 * (np.sum(H1**2) + np.sum(W1**2) + np.sum(W2**2))
        gW2 = R @ H2.T / K + lam * W2
        gZ = (W2.T @ R / K) * (Z > 0)
        gW1 = gZ @ H1.T + lam * W1
        gH1 = W1.T @ gZ + lam * H1
        return f, np.concatenate([gH1.ravel(), gW1.ravel(), gW2.ravel()])

    rng = np.random.default_rng(0)
    best = np.inf
    for _ in range(seeds):
        x0 = rng.normal(scale=0.7, size=sum(sizes))
        res = optimize.minimize(fg, x0, jac=True, method="L-BFGS-B", options={"maxiter": 5000, "gtol": 1e-12})
        best = min(best, res.fun)
    return best


def test_binary_threshold_against_direct_optimisation():
    lam_star = zero_threshold(2, 2) ** (1 / 3)  # all three λ equal: λ^3 = Λ*
    below = 0.9 * lam_star
    found = small_model_min(below)
    expected = loss_dnc(2, 2, 1, below, below).loss
    assert expected < 0.5
    assert found == pytest.approx(expected, rel=1e-6)  # GD-free optimiser reaches L_DNC, nothing lower
    assert found >= expected - 1e-9
    above = 1.1 * lam_star
    assert small_model_min(above) >= 0.5 - 1e-9


def test_zero_solution_and_undefined_srg():
    z = zero_solution(5, 3, 4)
    assert z.loss == 0.5 and dufm_objective(z.H1, z.weights, 1.0, 1.0).total == 0.5
    assert loss_srg(5, 4, 1, 0.001, 0.001) is None and loss_srg(10, 1, 1, 0.001, 0.001) is None
    with pytest.raises(ConfigError, match="classes == 5"):
        srg_solution(5, 4, 1, 0.001, 0.001)
    with pytest.raises(ConfigError, match="classes == 7"):
        loss_srg(7, 4, 1, 0.001, 0.001, construction="def9") or srg_geometry(7, "def9")
    with pytest.raises(ConfigError, match="construction"):
        loss_srg(10, 4, 1, 0.001, 0.001, construction="nope")
    for bad in (
        {"classes": 1},
        {"layers": 0},
        {"n": 0},
        {"lam_h": 0.0},
        {"lam_h": math.inf},
        {"lam_w": [1, 2]},
    ):
        args = {"classes": 10, "layers": 4, "n": 1, "lam_h": 0.01, "lam_w": 0.01} | bad
        with pytest.raises(ConfigError):
            loss_dnc(**args)


def test_large_regularisation_both_zero():
    cf_d, cf_s = loss_dnc(10, 4, 50, 0.1, 0.1), loss_srg(10, 4, 50, 0.1, 0.1)
    assert cf_d.loss == cf_s.loss == 0.5 and cf_s.scales == [0.0, 0.0, 0.0] and cf_s.rank == 0


@pytest.mark.parametrize("r", [4, 5, 6])
def test_srg_gram_matrices(r):
    K = r * (r - 1) // 2
    edges = list(combinations(range(r), 2))
    c = lambda m: m * (m - 1) / 2
    ref = np.array(
        [
            [
                1.0 if i == j else (c(r - 3) if set(a) & set(b) else c(r - 4)) / c(r - 2)
                for j, b in enumerate(edges)
            ]
            for i, a in enumerate(edges)
        ]
    )
    assert np.allclose(srg_gram(K), ref, atol=1e-12)
    assert np.allclose(srg_intermediate_gram(K), np.eye(K) + adjacency_matrix(r) / 2, atol=1e-12)
    # scale-free: equals the cosine Gram of the explicit solution's M_L
    sol = srg_solution(K, 4, 1, 0.0005, 0.0005)
    ML = np.maximum(sol.class_means[-1], 0)
    G = ML.T @ ML
    assert np.allclose(srg_gram(K), G / np.sqrt(np.outer(np.diag(G), np.diag(G))), atol=1e-10)


def test_srg_gram_general_k():
    G = srg_gram(8)
    assert G.shape == (8, 8) and np.allclose(G[6:, 6:], np.eye(2)) and np.allclose(G[:6, 6:], 0)
    G2 = srg_gram(8, construction="def11.2")
    keep = def11_2_kept_classes(8)
    assert len(keep) == 8 and np.allclose(G2, srg_gram(10)[np.ix_(keep, keep)])


@pytest.mark.parametrize("builder,K", [(dnc_solution, 6), (srg_solution, 6), (srg_solution, 8)])
def test_width_padding_keeps_the_loss(builder, K):
    """Wider layers (rows spread over more neurons, Definition 9's A_l) give the same loss."""
    L, n, lam = 4, 2, 0.0005
    narrow = builder(K, L, n, lam, lam)
    wide = builder(K, L, n, lam, lam, width=13)
    assert wide.H1.shape[0] == 13 and all(W.shape[1] == 13 for W in wide.weights)
    assert rel_err(dufm_objective(wide.H1, wide.weights, lam, lam).total, narrow.loss) < REL
    with pytest.raises(ConfigError, match="width"):
        builder(K, L, n, lam, lam, width=3)


@pytest.mark.parametrize("K", [6, 7, 10, 15])
def test_srg_two_layers_explicit(K):
    """L = 2 (no middle layer): M~_2 = X_L, nuclear norm computed numerically; r = 4 ties with DNC."""
    n, lam_h, lams = 3, 0.001, [0.002, 0.001]
    cf = loss_srg(K, 2, n, lam_h, lams)
    sol = srg_solution(K, 2, n, lam_h, lams)
    assert rel_err(cf.loss, dufm_objective(sol.H1, sol.weights, lam_h, lams).total) < REL
    assert cf.loss >= loss_dnc(K, 2, n, lam_h, lams).loss - 1e-15  # 2-layer DUFM: DNC optimal (2023 paper)
    if K == 6:
        # X_L = (P - I)/√2 for the perfect-matching involution P: ‖X_L‖_* = 3√2, e = 1/2: the DNC loss exactly
        assert rel_err(cf.loss, loss_dnc(K, 2, n, lam_h, lams).loss) < 1e-12


def test_equal_lambda_threshold():
    for L, n in ((2, 1), (3, 5), (5, 50)):
        lam = zero_threshold_equal_lambda(2, L, n)
        assert loss_dnc(2, L, n, 0.99 * lam, 0.99 * lam).loss < 0.5
        assert loss_dnc(2, L, n, 1.01 * lam, 1.01 * lam).loss == 0.5
        assert n * lam ** (L + 1) == pytest.approx(
            (L - 1) ** (L - 1) / (L ** (2 * L) * 2 ** (L + 1)), rel=1e-8
        )


@pytest.mark.parametrize("r,L", [(5, 3), (5, 4), (6, 5)])
def test_srg_one_scalar_reduction_matches_full_optimisation(r, L):
    """scipy over all log-scales of the SRG formula (typed in above) finds the one-scalar optimum."""
    K, n, lam_h = r * (r - 1) // 2, 2, 0.0005
    lams = [0.0005, 0.001, 0.0004, 0.0006, 0.0005][:L]
    cf = loss_srg(K, L, n, lam_h, lams)
    f = lambda x: formula_srg(r, L, n, lam_h, lams, np.exp(x))
    opts = {"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000}
    best = min(
        (
            optimize.minimize(f, x0, method="Nelder-Mead", options=opts)
            for x0 in (np.log(cf.scales) + 0.5, np.zeros(L - 1))
        ),
        key=lambda res: res.fun,
    )
    assert best.fun >= cf.loss - 1e-12
    assert best.fun == pytest.approx(cf.loss, rel=1e-8)


def test_compare_result_is_the_json_of_theory_compare(capsys):
    """``theory compare --json`` prints ``compare(...).to_dict()``; the typed result answers key access as the
    dict did, reads back from its JSON, and its ratio is the ratio of its own losses."""
    from deepcollapse.cli import main
    from deepcollapse.theory.compare import Comparison, compare

    c = compare(10, 4, 50, 0.004, 0.004)
    assert main(["theory", "compare", "--classes", "10", "--layers", "4", "--n", "50", "--lam-h", "0.004",
                 "--lam-w", "0.004", "--json"]) in (0, None)  # fmt: skip
    printed = json.loads(capsys.readouterr().out)
    assert isinstance(c, Comparison) and printed == c.to_dict()
    assert Comparison.from_dict(printed) == c and c.loss_dnc == c["loss_dnc"] == printed["loss_dnc"]
    assert c.ratio == pytest.approx(c.loss_srg / c.loss_dnc, rel=1e-15) and c.lam_w == [0.004] * 4
