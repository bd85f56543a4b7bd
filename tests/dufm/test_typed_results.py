"""The typed results of the DUFM steps (issue 30, item 4): ``polish`` -> :class:`PolishResult`,
``observe_run`` -> :class:`RunObservation`, ``classify_run`` -> :class:`DUFMRun`; each keeps the keys of the
dict of earlier releases, reads back with ``from_dict`` and reads the files of earlier releases."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from deepcollapse.dufm import DUFMConfig
from deepcollapse.dufm.classify import classify, classify_run, polish, theory_of
from deepcollapse.dufm.results import DUFMRun, DUFMSummary, PolishResult, RunObservation
from deepcollapse.dufm.trainer import observe_run

# a small problem: K = 3 classes, n = 2 samples per class, L = 2 layers of width 3
K, N, LAM = 3, 2, 0.01
CONFIG = DUFMConfig(classes=K, n=N, layers=2, width=3, lam_h=LAM, lam_w=LAM)


def _dnc_loss_l2(K: int, n: int, lam_h: float, lam_w: float) -> tuple[float, float]:
    """``min_α √(λ_W n λ_H) K √α + K λ_W / (2 (α + K λ_W))`` (the optimal DNC loss at L = 2, its scale α)."""
    f = lambda a: math.sqrt(lam_w * n * lam_h) * K * math.sqrt(a) + K * lam_w / (2 * (a + K * lam_w))  # noqa: E731
    res = minimize_scalar(f, bounds=(1e-12, 100.0), method="bounded", options={"xatol": 1e-12})
    return float(res.fun), float(res.x)


def test_polish_returns_a_polish_result_with_the_old_keys():
    """An orthogonal frame polishes to the optimal DNC loss, with the scale c = √α of the closed form."""
    result = polish([np.eye(K)], CONFIG)
    assert isinstance(result, PolishResult)
    d = result.to_dict()
    assert list(d) == ["polished_loss", "scales", "source"]
    loss, alpha = _dnc_loss_l2(K, N, LAM, LAM)
    assert d["polished_loss"] == pytest.approx(loss, rel=1e-9)
    assert d["scales"][0] ** 2 == pytest.approx(alpha, rel=1e-4)
    assert d["source"] == "learned"
    assert result["polished_loss"] == result.polished_loss  # Mapping access of earlier releases
    assert PolishResult.from_dict(d) == result
    json.dumps(d)  # JSON-ready


def test_polish_of_zero_means_and_of_nothing():
    result = polish([np.zeros((K, K))], CONFIG)
    assert isinstance(result, PolishResult)
    assert result.to_dict() == {"polished_loss": 0.5, "scales": [0.0], "source": "zero"}
    assert polish([np.full((K, K), np.nan)], CONFIG) is None
    assert polish([], CONFIG) is None


def test_polish_result_reads_an_old_dict(tmp_path):
    old = {"polished_loss": 0.125, "scales": [1.5, 0.25], "source": "collapsed"}
    path = tmp_path / "polish.json"
    path.write_text(json.dumps(old))
    result = PolishResult.from_dict(json.loads(path.read_text()))
    assert result.polished_loss == 0.125 and result.scales == [1.5, 0.25] and result.source == "collapsed"
    assert json.dumps(result.to_dict()) == path.read_text()


def _explicit_observation(H1, W1, W2, K, n, lam_h, lam_w, rtol):
    """Eq. (1) and the per-layer metrics of a 2-layer ReLU DUFM, written out in numpy."""
    N = K * n
    Y = np.kron(np.eye(K), np.ones((1, n)))
    Ht2 = W1 @ H1
    H2 = np.maximum(Ht2, 0.0)
    fit = np.sum((W2 @ H2 - Y) ** 2) / (2 * N)
    reg = lam_h / 2 * np.sum(H1**2) + lam_w / 2 * (np.sum(W1**2) + np.sum(W2**2))
    layers = []
    for layer, kind, X in ((1, "post", H1), (2, "pre", Ht2), (2, "post", H2)):
        M = X.reshape(X.shape[0], K, n).mean(axis=2)  # (d, K) class means
        within = np.sum((X - np.repeat(M, n, axis=1)) ** 2) / N
        between = np.sum((M - X.mean(axis=1, keepdims=True)) ** 2) / K
        s = np.linalg.svd(M, compute_uv=False)
        layers.append(
            {
                "layer": layer,
                "kind": kind,
                "dnc1": within / between,
                "dnc2_cond": s[0] / s[K - 1],
                "rank": int(np.sum(s > rtol * s[0])),
                "singular_values": list(s),
            }
        )
    return {"loss": fit + reg, "fit": fit, "reg": reg, "layers": layers}


def test_observe_run_returns_a_run_observation_with_the_old_keys():
    rng = np.random.default_rng(0)
    K, n, d = 3, 4, 5
    config = DUFMConfig(classes=K, n=n, layers=2, width=d, lam_h=0.01, lam_w=0.02)
    H1 = rng.standard_normal((d, K * n)) + np.repeat(3 * rng.standard_normal((d, K)), n, axis=1)
    W1, W2 = rng.standard_normal((d, d)), rng.standard_normal((K, d))
    obs = observe_run(H1, [W1, W2], config)
    assert isinstance(obs, RunObservation)
    d_obs = obs.to_dict()
    ref = _explicit_observation(H1, W1, W2, K, n, 0.01, 0.02, config.rank_rtol)
    assert list(d_obs) == ["loss", "fit", "reg", "layers"]
    for key in ("loss", "fit", "reg"):
        assert d_obs[key] == pytest.approx(ref[key], rel=1e-12)
    assert len(d_obs["layers"]) == 3
    for got, want in zip(d_obs["layers"], ref["layers"]):
        assert list(got) == ["layer", "kind", "dnc1", "dnc2_cond", "rank", "singular_values"]
        assert (got["layer"], got["kind"], got["rank"]) == (want["layer"], want["kind"], want["rank"])
        assert got["dnc1"] == pytest.approx(want["dnc1"], rel=1e-10)
        assert got["dnc2_cond"] == pytest.approx(want["dnc2_cond"], rel=1e-10)
        assert got["singular_values"] == pytest.approx(want["singular_values"], rel=1e-10)
    assert obs["loss"] == obs.loss and obs["layers"] is obs.layers  # Mapping access of earlier releases
    assert RunObservation.from_dict(d_obs) == obs
    json.dumps(d_obs, allow_nan=False)


def test_observe_run_of_non_finite_parameters_has_no_layers():
    config = DUFMConfig(classes=2, n=2, layers=2, width=2, lam_h=0.01, lam_w=0.01)
    H1 = np.full((2, 4), np.inf)
    with np.errstate(invalid="ignore", over="ignore"):
        obs = observe_run(H1, [np.eye(2), np.eye(2)], config)
    assert obs.to_dict() == {"loss": None, "fit": None, "reg": None, "layers": []}


def test_run_observation_reads_an_old_metrics_record(tmp_path):
    """A ``metrics.jsonl`` record of an earlier release (the observation plus the trainer's bookkeeping)."""
    old = {
        "step": 100,
        "run": 0,
        "seed": 7,
        "loss": 0.25,
        "fit": 0.125,
        "reg": 0.125,
        "diverged": False,
        "layers": [
            {
                "layer": 1,
                "kind": "post",
                "dnc1": 0.5,
                "dnc2_cond": 1.25,
                "rank": 2,
                "singular_values": [2.0, 1.6],
            }
        ],
    }
    path = tmp_path / "metrics.jsonl"
    path.write_text(json.dumps(old) + "\n")
    obs = RunObservation.from_dict(json.loads(path.read_text()))
    assert obs.loss == 0.25 and obs.layers[0]["rank"] == 2 and obs["step"] == 100
    assert json.dumps(obs.to_dict()) + "\n" == path.read_text()


def test_classify_run_returns_a_dufm_run_with_the_old_keys():
    """Loss parts, norms, gradient norm (torch autograd of eq. (1) written out), ranks and DNC1 of one run."""
    import torch

    rng = np.random.default_rng(1)
    K, n, d = 3, 2, 4
    config = DUFMConfig(classes=K, n=n, layers=2, width=d, lam_h=0.01, lam_w=0.01)
    H1 = rng.standard_normal((d, K * n))
    W1, W2 = rng.standard_normal((d, d)), rng.standard_normal((K, d))
    run = classify_run(H1, [W1, W2], config, None, theory_of(config), None, [(0, 2.0), (90, 1.0), (100, 0.9)])
    assert isinstance(run, DUFMRun)
    d_run = run.to_dict()
    keys = ["diverged", "diverged_step", "final_loss", "fit", "reg", "norms", "grad_norm"]
    keys += ["loss_decrease_last_10pct", "ranks", "ranks_pre", "dnc1", "dnc2_cond", "srg_gram_distance"]
    keys += [
        "classification",
        "polished_loss",
        "polish_scales",
        "polish_source",
        "polish_refit_loss",
        "below_dnc",
    ]
    if d_run["classification"] == "not_converged":
        keys += ["steps_to_verdict", "convergence_note"]
    assert list(d_run) == keys and run.run is None and "run" not in run  # run and seed: added by classify

    ref = _explicit_observation(H1, W1, W2, K, n, 0.01, 0.01, config.rank_rtol)
    assert d_run["final_loss"] == pytest.approx(ref["loss"], rel=1e-12)
    assert (d_run["fit"], d_run["reg"]) == pytest.approx((ref["fit"], ref["reg"]), rel=1e-12)
    assert d_run["norms"]["H1"] == pytest.approx(np.linalg.norm(H1))
    assert d_run["norms"]["W"] == pytest.approx([np.linalg.norm(W1), np.linalg.norm(W2)])
    assert d_run["loss_decrease_last_10pct"] == pytest.approx((1.0 - ref["loss"]) / ref["loss"])
    posts = [m for m in ref["layers"] if m["kind"] == "post"]
    assert d_run["ranks"] == [m["rank"] for m in posts]
    assert d_run["dnc1"] == pytest.approx([m["dnc1"] for m in posts], rel=1e-10)
    P = [torch.tensor(a, requires_grad=True) for a in (H1, W1, W2)]
    Y = torch.tensor(np.kron(np.eye(K), np.ones((1, n))))
    out = P[2] @ torch.relu(P[1] @ P[0])
    loss = ((out - Y) ** 2).sum() / (2 * K * n) + 0.005 * sum((p**2).sum() for p in P)
    grad_norm = torch.sqrt(sum((g**2).sum() for g in torch.autograd.grad(loss, P))).item()
    assert d_run["grad_norm"] == pytest.approx(grad_norm, rel=1e-10)
    assert d_run["polished_loss"] <= d_run["final_loss"]
    assert run["classification"] == run.classification  # Mapping access of earlier releases
    assert DUFMRun.from_dict(d_run) == run


def test_classify_run_of_a_diverged_run_and_the_summary_entries():
    config = DUFMConfig(classes=3, n=2, layers=2, width=3, lam_h=0.01, lam_w=0.01, runs=2, steps=10)
    run = classify_run(np.zeros((3, 6)), [np.eye(3), np.eye(3)], config, 5, theory_of(config), None)
    assert isinstance(run, DUFMRun) and run.classification == "diverged" and run.diverged_step == 5
    assert "norms" not in run and run.norms is None and list(run)[:2] == ["diverged", "diverged_step"]
    rng = np.random.default_rng(2)
    params = [rng.standard_normal((2, 3, 6)), rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 3))]
    summary = classify(params, config)
    for r, entry in enumerate(summary.runs):
        alone = classify_run(
            params[0][r], [params[1][r], params[2][r]], config, None, theory_of(config), None
        )
        assert entry.to_dict() == {"run": r, "seed": config.run_seeds[r], **alone.to_dict()}


def test_an_old_summary_run_entry_still_loads(tmp_path):
    """A ``summary.json`` of an earlier release, its run entry as classify_run's dict plus run and seed."""
    entry = {
        "run": 0,
        "seed": 0,
        "diverged": False,
        "diverged_step": None,
        "final_loss": 0.25,
        "fit": 0.125,
        "reg": 0.125,
        "norms": {"H1": 1.5, "W": [1.0, 2.0]},
        "grad_norm": 1e-9,
        "loss_decrease_last_10pct": 0.0,
        "ranks": [3, 3],
        "ranks_pre": [3],
        "dnc1": [0.0, 0.0],
        "dnc2_cond": [1.0, 1.0],
        "srg_gram_distance": None,
        "classification": "dnc",
        "polished_loss": 0.25,
        "polish_scales": None,
        "polish_source": "run",
        "polish_refit_loss": 0.26,
        "below_dnc": False,
    }
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"loss_dnc": 0.25, "step": 10, "finished": True, "runs": [entry]}, indent=2))
    summary = DUFMSummary.from_dict(json.loads(path.read_text()))
    run = summary.runs[0]
    assert isinstance(run, DUFMRun) and run.classification == "dnc" and run["ranks"] == [3, 3]
    assert json.dumps(summary.to_dict(), indent=2) == path.read_text()


def test_the_summary_holds_the_config_itself():
    """``DUFMSummary.config`` is the :class:`DUFMConfig` (issue 30, item 4); ``summary["config"]`` and
    ``summary.json`` keep the dict."""
    config = DUFMConfig(classes=3, n=2, layers=2, width=3, lam_h=0.01, lam_w=0.02, runs=2, steps=10)
    rng = np.random.default_rng(3)
    params = [rng.standard_normal((2, 3, 6)), rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 3))]
    summary = classify(params, config)
    assert isinstance(summary.config, DUFMConfig) and summary.config == config
    assert summary.config.problem == config.problem
    assert summary["config"] == config.to_dict() and summary.to_dict()["config"] == config.to_dict()
    again = DUFMSummary.from_dict(json.loads(json.dumps(summary.to_dict())))
    assert again.config == config and again == summary


def test_an_old_summary_config_is_typed_and_written_back_unchanged(tmp_path):
    """A config of an earlier release lacking the newer fields reads as a validated DUFMConfig (the newer
    fields at their defaults) and is written back key for key; one that no longer validates stays a dict."""
    old = {"classes": 4, "n": 3, "layers": 3, "width": 6, "lam_h": 0.01, "lam_w": 0.01, "steps": 100}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"step": 100, "finished": True, "config": old}, indent=2))
    summary = DUFMSummary.from_dict(json.loads(path.read_text()))
    assert isinstance(summary.config, DUFMConfig)
    assert summary.config == DUFMConfig(classes=4, n=3, layers=3, width=6, lam_h=0.01, lam_w=0.01, steps=100)
    assert summary["config"] == old
    assert json.dumps(summary.to_dict(), indent=2) == path.read_text()
    broken = DUFMSummary.from_dict({"step": 1, "finished": True, "config": {"classes": 1, "steps": 1}})
    assert broken.config == {"classes": 1, "steps": 1}
    assert broken.to_dict()["config"] == {"classes": 1, "steps": 1}
