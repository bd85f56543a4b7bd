"""The outcome classifier of network heads on synthetic class means with known answers.

Every construction here is written out in the test (an orthogonal frame, the triangular graph's incidence
matrix and the SRG's last layer, a random rank-r factorisation, a constant), independent of the theory
package the classifier compares with; each is checked with small noise (the label stays) and large noise
(it changes).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from deepcollapse import ConfigError
from deepcollapse.nets.outcome import (
    OUTCOMES,
    HeadCriteria,
    HeadOutcome,
    classify_head,
    finalise_outcome,
    gram_distances,
    loss_decrease,
)
from deepcollapse.theory.constructions.gram import srg_pre_gram

L = 4  # head layers: H1, H~2, H2, H~3, H3, H~4, H4


def _names(layers: int = L) -> list[str]:
    return ["H1"] + [n for l in range(2, layers + 1) for n in (f"H~{l}", f"H{l}")]


def _as_rows(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Paper layout (d, K) -> the classifier's input (K, d)."""
    return {k: v.T for k, v in cols.items()}


def _noisy(means: dict[str, np.ndarray], level: float, seed: int = 0) -> dict[str, np.ndarray]:
    """Each layer plus Gaussian noise of Frobenius norm ``level · ‖M‖_F``."""
    rng = np.random.default_rng(seed)
    out = {}
    for k, M in means.items():
        E = rng.standard_normal(M.shape)
        out[k] = M + level * np.linalg.norm(M) * E / np.linalg.norm(E)
    return out


def dnc_means(K: int, d: int = 16, seed: int = 0, layers: int = L) -> dict[str, np.ndarray]:
    """DNC for the bias-free MSE head (formulas.md, Definitions 1/10): every layer's class means an orthogonal
    frame with equal norms, ``M_l = α_l Q_l`` (``Q_l^T Q_l = I_K``, non-negative after ReLU: a scaled
    coordinate frame), ``M~_l = M_l``."""
    rng = np.random.default_rng(seed)
    cols = {"H1": 1.7 * np.linalg.qr(rng.standard_normal((d, K)))[0]}
    for l in range(2, layers + 1):
        P = np.zeros((d, K))
        P[rng.permutation(d)[:K], np.arange(K)] = 1.0  # distinct coordinates: orthonormal, non-negative
        cols[f"H~{l}"] = cols[f"H{l}"] = (0.5 + l) * P
    return _as_rows(cols)


def triangular(r: int) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
    """Edges of K_r, the normalised incidence matrix T_r (r x K: 1/√(r-1) where a vertex is in an edge) and
    the SRG's last pre-ReLU class means Z (K x K: row {a, b} is −1 at edge {a, b}, +1 at the edges disjoint
    from it, 0 elsewhere, normalised to unit rows): 2024 paper, Definitions 3 and 9."""
    edges = list(itertools.combinations(range(r), 2))
    K = len(edges)
    T = np.zeros((r, K))
    for j, (a, b) in enumerate(edges):
        T[a, j] = T[b, j] = 1.0 / math.sqrt(r - 1)
    Z = np.zeros((K, K))
    for i, e in enumerate(edges):
        for j, f in enumerate(edges):
            Z[i, j] = -1.0 if e == f else (1.0 if not set(e) & set(f) else 0.0)
    return edges, T, Z / np.linalg.norm(Z, axis=1, keepdims=True)


def srg_explicit_gram(r: int) -> np.ndarray:
    """The cosine Gram of the SRG's M~_L written from the triangular graph: 1 on the diagonal,
    (C(r−4, 2) − 2)/(C(r−2, 2) + 1) for disjoint edges, C(r−3, 2)/(C(r−2, 2) + 1) for edges sharing a
    vertex."""
    edges = list(itertools.combinations(range(r), 2))
    s2 = math.comb(r - 2, 2) + 1
    G = np.empty((len(edges), len(edges)))
    for i, e in enumerate(edges):
        for j, f in enumerate(edges):
            shared = len(set(e) & set(f))
            G[i, j] = (
                1.0
                if shared == 2
                else (math.comb(r - 3, 2) / s2 if shared else (math.comb(r - 4, 2) - 2) / s2)
            )
    return G


def srg_means(r: int, seed: int = 0, layers: int = L) -> dict[str, np.ndarray]:
    """The SRG solution's class means (Definition 9), classes relabelled by a random permutation: H1 and the
    middle layers ``A T_r`` (rows multiples of rows of T_r, each row of T_r twice), the last layer
    ``M~_L = Z`` (embedded in 2K rows) and ``M_L = ReLU(M~_L)``."""
    _, T, Z = triangular(r)
    K = T.shape[1]
    perm = np.random.default_rng(seed).permutation(K)
    T, Z = T[:, perm], Z[:, perm]
    A = np.vstack([np.eye(r), 0.5 * np.eye(r)])  # (2r, r)
    cols = {"H1": 3.0 * T}
    for l in range(2, layers):
        cols[f"H~{l}"] = cols[f"H{l}"] = l * (A @ T)
    last = 2.0 * np.vstack([Z, np.zeros((K, K))])  # (2K, K)
    cols[f"H~{layers}"], cols[f"H{layers}"] = last, np.maximum(last, 0.0)
    return _as_rows(cols)


def low_rank_means(K: int, r: int, seed: int = 0, d: int = 16) -> dict[str, np.ndarray]:
    """A random rank-r head: full-rank H1, every later layer ``|U| |V|`` with U (d x r), V (r x K) random and
    non-negative (so M~_l = M_l), rank exactly r."""
    rng = np.random.default_rng(seed)
    cols = {"H1": rng.standard_normal((d, K))}
    for l in range(2, L + 1):
        M = np.abs(rng.standard_normal((d, r))) @ np.abs(rng.standard_normal((r, K)))
        cols[f"H~{l}"] = cols[f"H{l}"] = M
    return _as_rows(cols)


def constant_means(K: int, seed: int = 0, d: int = 16) -> dict[str, np.ndarray]:
    """The network form of the all-zero solution: every class has the same mean in every layer."""
    rng = np.random.default_rng(seed)
    return _as_rows({n: np.outer(np.abs(rng.standard_normal(d)), np.ones(K)) for n in _names()})


# -- the independent constructions are what they claim ------------------------------------------------------


@pytest.mark.parametrize("r", [4, 5, 6])
def test_the_explicit_srg_gram_is_the_constructions_and_the_theorys(r):
    _, T, Z = triangular(r)
    G = Z.T @ Z
    d = np.sqrt(np.diag(G))
    assert np.allclose(G / np.outer(d, d), srg_explicit_gram(r), atol=1e-12)
    assert np.allclose(srg_pre_gram(r * (r - 1) // 2), srg_explicit_gram(r), atol=1e-12)
    # T_r^T T_r = (2I + G_r)/(r-1) with G_r the triangular graph's adjacency: rank r
    assert np.linalg.matrix_rank(T) == r


# -- each construction, exact and with small noise, keeps its label; large noise changes it -----------------


@pytest.mark.parametrize("K", [4, 7, 10])
def test_dnc(K):
    out = classify_head(dnc_means(K), train_acc=1.0)
    assert out.label == "dnc", out.why
    assert out.dnc_cond == pytest.approx(1.0, abs=1e-12) and out.gram_distance_dnc < 1e-12
    assert set(out.ranks.values()) == {K} and out.sv_gap is None
    assert classify_head(_noisy(dnc_means(K), 1e-3), train_acc=1.0).label == "dnc"
    noisy = classify_head(_noisy(dnc_means(K), 0.3), train_acc=1.0)
    assert noisy.label == "full_rank" and noisy.dnc_cond > 1.1, noisy.why


@pytest.mark.parametrize("r", [4, 5])
def test_srg(r):
    K = r * (r - 1) // 2
    out = classify_head(srg_means(r), train_acc=1.0)
    assert out.label == "srg_like", out.why
    assert out.gram_distance_srg < 1e-9 and out.srg_r == r and out.srg_note is None
    # DNC's Gram (the identity) against the SRG's, by hand: ‖C − I‖_F / ‖I‖_F
    G = srg_explicit_gram(r)
    assert out.gram_distance_dnc == pytest.approx(np.linalg.norm(G - np.eye(K)) / math.sqrt(K))
    # the SRG's middle layers have rank r (its bottleneck), the last pre-ReLU layer rank r (3 for r = 4)
    assert out.ranks["H~2"] == r and out.ranks[f"H~{L}"] == (3 if r == 4 else r)
    assert out.bottleneck_rank < K and out.sv_gap > 1e6
    assert classify_head(_noisy(srg_means(r, seed=1), 1e-2), train_acc=1.0).label == "srg_like"
    noisy = classify_head(_noisy(srg_means(r, seed=2), 0.6), train_acc=1.0)
    assert noisy.label != "srg_like" and noisy.gram_distance_srg > 0.2, noisy.why


def test_dnc_is_far_from_srg():
    out = classify_head(dnc_means(10), train_acc=1.0)
    G = srg_explicit_gram(5)
    assert out.gram_distance_srg == pytest.approx(np.linalg.norm(np.eye(10) - G) / np.linalg.norm(G))


@pytest.mark.parametrize("K, r", [(10, 3), (7, 5)])
def test_low_rank(K, r):
    out = classify_head(low_rank_means(K, r), train_acc=1.0)
    assert out.label == "low_rank", out.why
    assert out.bottleneck_rank == r and out.bottleneck != "H1" and out.sv_gap > 1e6
    assert f"= {r} < K = {K}" in out.why and "1e-03·σ_1" in out.why.replace("0.001", "1e-03")
    small = classify_head(_noisy(low_rank_means(K, r), 1e-6), train_acc=1.0)
    assert small.label == "low_rank" and small.bottleneck_rank == r
    assert 1e2 < small.sv_gap < 1e7  # the noise sets the gap
    big = classify_head(_noisy(low_rank_means(K, r), 0.2), train_acc=1.0)
    assert big.label == "full_rank" and big.bottleneck_rank == K, big.why


def test_constant():
    """One common direction in a post-ReLU layer (rank-1 class means): an input-independent output, labelled
    ``constant`` (without the outputs the norm is unknown, so not ``zero``)."""
    out = classify_head(constant_means(10), train_acc=0.1)
    assert out.label == "constant" and max(out.sigma2_ratios.values()) < 1e-12, out.why
    assert set(out.ranks.values()) == {1} and out.output_norm is None
    assert classify_head(_noisy(constant_means(10), 1e-4), train_acc=0.1).label == "constant"
    big = classify_head(_noisy(constant_means(10), 0.3), train_acc=0.1)
    assert big.label == "not_converged" and min(big.sigma2_ratios.values()) > 0.01, big.why
    # one common direction with a per-class scale (u v^T, u, v >= 0): the Fig. 4 cell's constant runs
    rng = np.random.default_rng(3)
    means = dnc_means(10)
    means["H4"] = np.outer(1.0 + 0.05 * rng.random(10), np.abs(rng.standard_normal(16)))  # (K, d)
    out = classify_head(means, train_acc=0.1)
    assert out.label == "constant" and "H4" in out.why and out.sigma2_ratios["H4"] < 1e-12
    # with its output: a constant, non-zero output o 1^T (the ½Σ_k MSE head of wd 0.04, ‖o‖ ≈ 0.2)
    o = np.full(10, 0.07)  # one output vector for every class
    out = classify_head(constant_means(10), outputs=np.tile(o, (10, 1)), train_acc=0.1)
    assert out.label == "constant" and out.output_spread == pytest.approx(0.0, abs=1e-15), out.why
    assert out.output_norm == pytest.approx(np.linalg.norm(o))  # ‖O‖_F/√K of K equal rows = ‖o‖


def test_zero():
    """Zero output: an all-zero post-ReLU layer, or output class means of norm <= 1 % of the targets'."""
    means = dnc_means(10)
    means["H3"] = np.zeros_like(means["H3"])
    out = classify_head(means, train_acc=0.1)
    assert out.label == "zero" and "H3" in out.why, out.why
    # torch's MSELoss head under wd 0.04: class means of rank 1, output exactly 0
    out = classify_head(constant_means(10), outputs=np.zeros((10, 10)), train_acc=0.1)
    assert out.label == "zero" and out.output_norm == 0.0, out.why


def test_zero_by_the_output():
    """The DUFM's zero point: every layer shrinks to 0 but keeps a relative structure (here: DNC's, scaled by
    1e-9); the output's class means, O = 1e-9 · I, carry nothing of the targets."""
    means = {k: 1e-9 * v for k, v in dnc_means(10).items()}
    assert classify_head(means, train_acc=0.1).label == "not_converged"  # the class means alone: no
    out = classify_head(means, outputs=1e-9 * np.eye(10), train_acc=0.1)
    assert out.label == "zero" and out.output_spread == pytest.approx(1e-9), out.why
    assert out.output_norm == pytest.approx(1e-9)  # ‖1e-9 I‖_F / √K
    # the best constant output, 1/K: spread 0, norm √K/K ≈ 0.32 > 0.01: constant, not zero
    const = classify_head(dnc_means(10), outputs=np.full((10, 10), 0.1), train_acc=0.1)
    assert const.label == "constant" and const.output_norm == pytest.approx(math.sqrt(10) * 0.1), const.why
    fit = classify_head(dnc_means(10), outputs=0.9 * np.eye(10), train_acc=1.0)
    assert fit.label == "dnc" and fit.output_spread == pytest.approx(0.9)
    with pytest.raises(ConfigError, match=r"outputs.shape == \(10, 3\)"):
        classify_head(dnc_means(10), outputs=np.ones((10, 3)))


def test_a_rank_one_pre_relu_layer_of_both_signs_is_not_zero():
    """K = 2: M~_2 = u (1, −1) has rank 1, M_2 = ReLU(M~_2) has rank 2 (an orthogonal frame) and separates
    the classes: a low-rank head (M~_2 ≠ M_2, so not DNC), not the zero solution."""
    u = np.array([1.0, 2.0, 0.5])
    pre = np.vstack([np.concatenate([u, -u]), np.concatenate([-u, u])])  # (K = 2, d = 6)
    means = {"H1": np.eye(2), "H~2": pre, "H2": np.maximum(pre, 0.0)}
    out = classify_head(means, train_acc=1.0)
    assert out.ranks["H~2"] == 1 and out.ranks["H2"] == 2 and out.label == "low_rank", out.why


def test_diverged():
    means = dnc_means(10)
    means["H~3"] = means["H~3"].copy()
    means["H~3"][0, 0] = np.nan
    out = classify_head(means, train_acc=1.0)
    assert out.label == "diverged" and "H~3" in out.why and out.ranks is None
    assert classify_head(dnc_means(10), train_acc=1.0, diverged=True).label == "diverged"


def test_not_converged_by_accuracy_or_a_falling_loss():
    out = classify_head(dnc_means(10), train_acc=0.9)
    assert out.label == "not_converged" and "0.9 < 0.99" in out.why
    falling = [1.0 - 0.05 * e for e in range(20)]  # epochs 18 -> 20 (the last 10 %): 0.15 -> 0.05
    out = classify_head(dnc_means(10), train_acc=1.0, train_loss_per_epoch=falling)
    assert out.label == "not_converged" and out.loss_decrease == pytest.approx((0.15 - 0.05) / 0.15)
    flat = [1.0] * 10 + [0.3] * 10
    assert classify_head(dnc_means(10), train_acc=1.0, train_loss_per_epoch=flat).label == "dnc"


def test_loss_decrease_by_hand():
    assert loss_decrease([4.0, 3.0, 2.0, 1.0], window=0.25) == pytest.approx((2.0 - 1.0) / 2.0)
    assert loss_decrease([1.0]) is None  # no epoch before the window
    assert loss_decrease([1.0, float("nan")] * 10) is None


# -- precedence when several labels apply -------------------------------------------------------------------


def test_precedence():
    assert OUTCOMES == (
        "diverged",
        "zero",
        "constant",
        "not_converged",
        "srg_like",
        "dnc",
        "low_rank",
        "full_rank",
    )
    # an SRG head is also low-rank: srg_like wins
    out = classify_head(srg_means(5), train_acc=1.0)
    assert out.label == "srg_like" and out.bottleneck_rank < 10
    # a constant head at chance accuracy: constant wins over not_converged
    assert classify_head(constant_means(10), train_acc=0.1).label == "constant"
    # a structure of a network that has not fitted its data: not_converged wins over srg_like
    assert classify_head(srg_means(5), train_acc=0.5).label == "not_converged"
    # divergence wins over everything
    assert classify_head(constant_means(10), train_acc=0.1, diverged=True).label == "diverged"


# -- class counts without an SRG, one-layer heads, bad input ------------------------------------------------


@pytest.mark.parametrize("K", [3, 7, 8])
def test_no_srg_for_k_not_c_r_2(K):
    out = classify_head(low_rank_means(K, 2), train_acc=1.0)
    assert out.gram_distance_srg is None and out.srg_r is None
    assert f"not defined for K = {K}" in out.srg_note
    assert out.label == "low_rank"
    assert classify_head(dnc_means(K), train_acc=1.0).label == "dnc"


def test_one_layer_head():
    means = {"H1": np.eye(10)[:, :] * 2.0}
    out = classify_head(means, train_acc=1.0)
    assert out.label == "dnc" and out.gram_layer == "H1" and "L = 1" in out.srg_note


def test_bad_means_named():
    with pytest.raises(ConfigError, match="must be the head's features in order"):
        classify_head({"H1": np.eye(3), "H2": np.eye(3)})
    with pytest.raises(ConfigError, match=r"means\['H2'\].shape"):
        classify_head({"H1": np.eye(3), "H~2": np.eye(3), "H2": np.eye(4)})
    with pytest.raises(ConfigError, match="zero_rtol == 2"):
        HeadCriteria(zero_rtol=2.0)


# -- the stored outcome decided again at the end of a run ---------------------------------------------------


def test_finalise_outcome_and_round_trip():
    mid = classify_head(dnc_means(10), train_acc=1.0)  # what an evaluation stores
    assert mid.loss_decrease is None
    stored = mid.to_dict()
    assert HeadOutcome.from_dict(stored).to_dict() == stored
    falling = [1.0 - 0.04 * e for e in range(20)]
    end = finalise_outcome(stored, train_loss_per_epoch=falling)
    assert end.label == "not_converged" and end.ranks == mid.ranks
    assert finalise_outcome(stored, train_loss_per_epoch=[0.3] * 20).label == "dnc"
    gone = finalise_outcome(stored, diverged=True)
    assert gone.label == "diverged" and gone.classes == 10 and gone.ranks is None
    assert finalise_outcome(None) is None
    assert finalise_outcome(None, diverged=True, classes=10, layers=4).label == "diverged"
    # a stricter criterion stored with the outcome is the one used again
    strict = classify_head(
        _noisy(dnc_means(10), 1e-3), train_acc=1.0, criteria=HeadCriteria(dnc_cond_tol=1e-6)
    )
    assert strict.label == "full_rank"
    assert finalise_outcome(strict.to_dict(), train_loss_per_epoch=[0.3] * 20).label == "full_rank"


# -- real runs: short trainings on the bundled digits, checked against class means recomputed here --------


def _recomputed_means(cfg, run):
    """The class means of every head feature and of the output of the run's final network, recomputed from its
    checkpoint by a plain forward pass over the training set (eval mode), in float64."""
    import torch

    from deepcollapse.nets.build import build_network, load_net_data
    from deepcollapse.nets.head import feature_layers

    data = load_net_data(cfg)
    model = build_network(cfg, data.in_channels, tuple(data.train.images.shape[1:]))
    model.load_state_dict(torch.load(run / "checkpoint.pt", weights_only=False)["model"])
    model.eval()
    with torch.no_grad():
        x, y = data.train.batch(slice(None))
        out, feats = model(x)
    y = y.numpy()

    def means(t):
        return np.stack([t.double().numpy()[y == c].mean(axis=0) for c in range(cfg.num_classes)])

    return {name: means(feats[key]) for key, _, _, name in feature_layers(cfg.layers)}, means(out)


def _train(tmp_path, **overrides):
    import json

    import torch

    from deepcollapse.nets.config import NetConfig
    from deepcollapse.nets.train import train_net

    torch.set_num_threads(1)
    cfg = NetConfig(
        **{
            "dataset": "digits",
            "backbone": "mlp",
            "backbone_width": 32,
            "layers": 3,
            "width": 16,
            "n": 40,
            "n_test": 5,
            "batch_size": 40,
            "eval_every": 0,
            "device": "cpu",
            "threads": 1,
            **overrides,
        }
    )
    summary = train_net(cfg, tmp_path, progress=False)
    return cfg, summary, json.loads((tmp_path / "summary.json").read_text())


def test_real_run_at_strong_weight_decay_is_the_zero_solution(tmp_path):
    cfg, summary, on_disk = _train(tmp_path, reg="standard", lam=0.1, lr=0.05, epochs=20)
    assert summary.outcome.label == "zero" and on_disk["outcome"]["label"] == "zero"
    assert summary.train_acc == pytest.approx(0.1)  # chance
    _, O = _recomputed_means(cfg, tmp_path)  # (K, K): the output's class means
    assert np.linalg.norm(O - O.mean(axis=0)) / np.sqrt(9) <= 0.01
    assert summary.outcome.output_spread == pytest.approx(np.linalg.norm(O - O.mean(axis=0)) / 3, abs=1e-6)


def test_real_run_that_fits_is_labelled_from_its_class_means(tmp_path):
    cfg, summary, on_disk = _train(
        tmp_path, reg="dufm", lam=0.005, lr=0.1, lr_schedule="multistep", epochs=30
    )
    out = summary.outcome
    assert on_disk["outcome"] == out.to_dict() and out.label in OUTCOMES
    assert out.label not in ("zero", "diverged")
    means, O = _recomputed_means(cfg, tmp_path)
    K = cfg.num_classes
    assert out.output_spread == pytest.approx(np.linalg.norm(O - O.mean(axis=0)) / np.sqrt(K - 1), rel=1e-4)
    for name, A in means.items():  # the ranks at 1e-3 · σ_1, recomputed
        s = np.linalg.svd(A, compute_uv=False)
        assert out.ranks[name] == int(np.sum(s > 1e-3 * s[0])), name
    s = np.linalg.svd(means["H3"], compute_uv=False)
    assert out.dnc_cond == pytest.approx(s[0] / s[K - 1], rel=1e-4)
    # the label is what the stated rules give on these measures
    if summary.train_acc < 0.99:
        assert out.label == "not_converged"
    elif min(out.ranks.values()) < K:
        assert out.label in ("srg_like", "low_rank")
    else:
        assert out.label in ("srg_like", "dnc", "full_rank")
        assert (out.label == "dnc") == (out.dnc_cond <= 1.1 and out.label != "srg_like")


def test_real_run_that_diverges(tmp_path):
    _, summary, on_disk = _train(tmp_path, reg="dufm", lr=1e6, momentum=0.0, epochs=3)
    assert summary.diverged and summary.outcome.label == "diverged"
    assert on_disk["outcome"]["label"] == "diverged" and on_disk["outcome"].get("ranks") is None


@pytest.mark.parametrize("seed", range(4))
def test_gram_distances_the_one_measure_srg_and_dnc_heads_score_zero(seed):
    """Issue 43: one Gram distance for every report.  A head built exactly at SRG (its classes relabelled by
    any permutation) is at distance 0 from the SRG's Gram and a DNC head at 0 from DNC's; the SRG head's
    distance to DNC is ‖C_SRG − I‖_F / √K, from the Gram written out by hand."""
    for r in (4, 5):
        K = r * (r - 1) // 2
        srg = classify_head(srg_means(r, seed=seed), train_acc=1.0)
        assert srg.gram_distance_srg == pytest.approx(0.0, abs=1e-9), (r, seed)
        C = srg_explicit_gram(r)
        assert srg.gram_distance_dnc == pytest.approx(np.linalg.norm(C - np.eye(K)) / math.sqrt(K))
        dnc = classify_head(dnc_means(K, seed=seed), train_acc=1.0)
        assert dnc.gram_distance_dnc == pytest.approx(0.0, abs=1e-12)
        assert dnc.gram_distance_srg == pytest.approx(np.linalg.norm(np.eye(K) - C) / np.linalg.norm(C))
        # the function itself, on a Gram of any positive scale and a shuffled SRG Gram
        P = np.eye(K)[np.random.default_rng(seed).permutation(K)]
        to_dnc, to_srg = gram_distances(7.0 * P @ C @ P.T)
        assert to_srg == pytest.approx(0.0, abs=1e-9) and to_dnc == pytest.approx(srg.gram_distance_dnc)
        d_dnc, d_srg = gram_distances(2.0 * np.eye(K), srg=False)
        assert d_dnc == pytest.approx(0.0, abs=1e-15) and d_srg is None
    assert gram_distances(np.eye(7))[1] is None  # K = 7 is no C(r, 2): no SRG distance
