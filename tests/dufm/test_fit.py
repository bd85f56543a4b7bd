"""``fit_dufm`` (GD in memory) and ``classify`` (parameters in memory): nothing written, the same numbers as
the run folder of ``train_dufm`` bit for bit, and the thresholds of one frozen ``Criteria`` acting as
documented."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse.dufm import classify as classify_module
from deepcollapse.dufm.classify import classify
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.criteria import Criteria
from deepcollapse.dufm.fit import DUFMFit, FitCallback, fit_dufm
from deepcollapse.dufm.summary import analyze_dufm
from deepcollapse.dufm.trainer import train_dufm

torch.set_num_threads(1)


def _cfg(**kw) -> DUFMConfig:
    # K = 3, L = 2 at λ = 0.02: after 2000 steps the four seeds end at a DNC point, a rank-2 point and two
    # full-rank points that are not DNC (σ_1/σ_K of M_2 about 1.3): every branch the tests below need
    base = dict(classes=3, n=2, layers=2, width=6, lam_h=0.02, lam_w=0.02, lr=0.5, steps=2000, runs=4)
    base.update(kw)
    base.setdefault("log_every", 500)
    base.setdefault("checkpoint_every", 1000)
    return DUFMConfig(**base)


@pytest.fixture(scope="module")
def fitted() -> DUFMFit:
    return fit_dufm(_cfg())


def _class_means(H: np.ndarray, K: int) -> np.ndarray:
    return H.reshape(H.shape[0], K, -1).mean(axis=2)  # (d, K): samples ordered by class


def _explicit(fit: DUFMFit, r: int) -> dict:
    """Independent numbers of run ``r`` in float64: the post-ReLU class means M_1 .. M_L, the fit term
    ‖W_L H_L − Y‖² / (2N) and the regulariser."""
    c = fit.config
    H = fit.H1[r].astype(np.float64)
    Ws = [W[r].astype(np.float64) for W in fit.weights]
    means = [_class_means(H, c.classes)]
    for W in Ws[:-1]:
        H = np.maximum(W @ H, 0.0)
        means.append(_class_means(H, c.classes))
    Y = np.kron(np.eye(c.classes), np.ones((1, c.n)))
    fit_term = np.sum((Ws[-1] @ H - Y) ** 2) / (2 * c.N)
    reg = c.lam_h / 2 * np.sum(fit.H1[r].astype(np.float64) ** 2)
    reg += sum(lam / 2 * np.sum(W**2) for lam, W in zip(c.lam_w, Ws))
    return {"means": means, "fit": float(fit_term), "reg": float(reg)}


def test_fit_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fit = fit_dufm(_cfg(steps=50, log_every=25))
    assert list(tmp_path.iterdir()) == []
    assert fit.finished and fit.step == 50 and fit.logged_steps.tolist() == [0, 25, 50]
    assert fit.H1.shape == (4, 6, 6) and [W.shape for W in fit.weights] == [(4, 6, 6), (4, 3, 6)]
    assert not fit.H1.flags.writeable  # a frozen result: its arrays are read-only
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.step = 3  # type: ignore[misc]


@pytest.mark.parametrize("engine", [{}, {"backend": "torch"}], ids=["numpy", "torch"])
def test_fit_equals_the_run_folder_bit_for_bit(tmp_path, engine):
    c = _cfg(steps=300, log_every=100, checkpoint_every=150, **engine)
    fit = fit_dufm(c)
    train_dufm(c, tmp_path / "run", progress=False)
    saved = torch.load(tmp_path / "run" / "params.pt", weights_only=True)
    for a, b in zip(fit.params, [saved["H1"], *saved["weights"]]):
        assert a.dtype == b.numpy().dtype and np.array_equal(a, b.numpy())  # bit for bit
    assert fit.diverged == {int(k): v for k, v in saved["diverged"].items()} and fit.step == saved["step"]
    recs = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert sorted({r["step"] for r in recs}) == fit.logged_steps.tolist() == [0, 100, 200, 300]
    for rec in recs:
        i = fit.logged_steps.tolist().index(rec["step"])
        for key, hist in (("loss", fit.loss_history), ("fit", fit.fit_history), ("reg", fit.reg_history)):
            v = hist[i, rec["run"]]
            assert rec[key] == (float(v) if math.isfinite(v) else None)  # exactly, not approximately
    assert fit.history(1) == [(r["step"], r["loss"]) for r in recs if r["run"] == 1]


def test_classify_in_memory_equals_the_folder_route(tmp_path):
    c = _cfg(steps=600, log_every=200, checkpoint_every=600)
    fit = fit_dufm(c)
    folder = train_dufm(c, tmp_path / "run", progress=False)
    memory = classify(fit)
    assert memory.to_dict() == folder.to_dict() == analyze_dufm(tmp_path / "run").to_dict()
    assert memory == json.loads((tmp_path / "run" / "summary.json").read_text())
    # bare arrays and the Problem: the same classification of every run (the run indices, not the seeds, are
    # known there)
    bare = classify(fit.params, c.problem, history={r: fit.history(r) for r in range(c.runs)}, step=fit.step)
    drop = ("run", "seed")
    assert [{k: v for k, v in r.to_dict().items() if k not in drop} for r in bare.runs] == [
        {k: v for k, v in r.to_dict().items() if k not in drop} for r in folder.runs
    ]
    one = classify([p[2] for p in fit.params], c, history={0: fit.history(2)}, step=fit.step)  # one run
    assert one.runs[0].classification == folder.runs[2].classification


def test_diverged_runs_in_memory_as_in_the_folder(tmp_path):
    """At lr 2 some runs blow up: the fit marks them as the trainer does, its history holds NaN where the
    folder holds null, and classify labels them ``diverged`` as analyze_dufm does."""
    c = _cfg(lr=2.0, runs=6, steps=200, log_every=50, checkpoint_every=200)
    fit = fit_dufm(c)
    folder = train_dufm(c, tmp_path / "run", progress=False)
    saved = torch.load(tmp_path / "run" / "params.pt", weights_only=True)
    assert 0 < len(fit.diverged) < c.runs  # some, not all
    assert fit.diverged == {int(k): v for k, v in saved["diverged"].items()}
    for a, b in zip(fit.params, [saved["H1"], *saved["weights"]]):
        assert np.array_equal(a, b.numpy(), equal_nan=True)
    recs = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    for r, s in fit.diverged.items():
        assert [v for t, v in fit.history(r) if t > s] == [None] * sum(
            t > s for t in fit.logged_steps.tolist()
        )
        assert fit.history(r) == [(x["step"], x["loss"]) for x in recs if x["run"] == r]
    summary = classify(fit)
    assert summary.to_dict() == folder.to_dict()
    assert {r for r, run in enumerate(summary.runs) if run.classification == "diverged"} == set(fit.diverged)


def test_criteria_is_frozen_and_validated():
    crit = Criteria()
    with pytest.raises(dataclasses.FrozenInstanceError):
        crit.dnc2_tol = 0.1  # type: ignore[misc]
    assert hash(crit) == hash(Criteria()) and crit == Criteria() and Criteria(grad_tol=1e-3) != crit
    for bad in (dict(grad_tol=-1.0), dict(zero_tol=float("nan")), dict(rank_rtol=1.5), dict(gram_tol="x")):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            Criteria(**bad)
    # the module constants of earlier releases are its defaults
    assert (classify_module.ZERO_TOL, classify_module.GRAD_TOL, classify_module.PLATEAU_TOL) == (
        crit.zero_tol,
        crit.grad_tol,
        crit.plateau_tol,
    )
    assert (classify_module.DNC2_TOL, classify_module.DNC_CONVERGING_COND) == (
        crit.dnc2_tol,
        crit.dnc_converging_cond,
    )


def test_dnc2_tol_moves_the_dnc_line_as_documented(fitted):
    """Rule 4: a run with full-rank M_2 .. M_L is ``dnc`` iff σ_1/σ_K(M_L) <= 1 + dnc2_tol (σ from numpy
    here)."""
    K = fitted.config.classes
    for tol in (0.05, 0.5):
        summary = classify(fitted, criteria=Criteria(dnc2_tol=tol))
        assert summary.criteria["dnc2_tol"] == tol
        for r, run in enumerate(summary.runs):
            M = _explicit(fitted, r)["means"]
            full = all(np.linalg.matrix_rank(m, tol=1e-3 * np.linalg.norm(m, 2)) == K for m in M[1:])
            s = np.linalg.svd(M[-1], compute_uv=False)
            if full and s[0] / s[K - 1] <= 1 + tol - 1e-6:
                assert run.classification == "dnc", (tol, r, s[0] / s[K - 1])
            elif full and s[0] / s[K - 1] > 1 + tol + 1e-6:
                assert run.classification != "dnc", (tol, r, s[0] / s[K - 1])
    labels = [run.classification for run in classify(fitted, criteria=Criteria(dnc2_tol=0.5)).runs]
    assert labels.count("dnc") > [r.classification for r in classify(fitted).runs].count("dnc")  # it mattered


def test_zero_tol_and_rank_rtol_act_as_documented(fitted):
    # rule 2: "zero" iff fit >= loss_zero − zero_tol and reg <= zero_tol (loss_zero = 1/2 for MSE); fit and
    # reg from explicit matrices here.  No run is near the zero point: only a tolerance of 1/2 calls them so
    zeros = []
    for tol in (1e-4, 0.3, 0.5):
        summary = classify(fitted, criteria=Criteria(zero_tol=tol))
        for r, run in enumerate(summary.runs):
            x = _explicit(fitted, r)
            assert (run.classification == "zero") == (x["fit"] >= 0.5 - tol and x["reg"] <= tol), (tol, r)
        zeros.append(sum(run.classification == "zero" for run in summary.runs))
    assert zeros == [0, 0, 4]
    # ranks count singular values above rank_rtol · σ_1 of each class-mean matrix (numpy's SVD here)
    for rtol in (0.9, 1e-6):
        summary = classify(fitted, criteria=Criteria(rank_rtol=rtol))
        assert summary.criteria["rank_rtol"] == rtol
        for r, run in enumerate(summary.runs):
            want = []
            for M in _explicit(fitted, r)["means"]:
                s = np.linalg.svd(M, compute_uv=False)
                want.append(int(np.sum(s > rtol * s[0])) if s[0] > 0 else 0)
            assert run.ranks == want


def test_classify_refuses_what_it_cannot_read(fitted):
    with pytest.raises(ConfigError, match="problem: required"):
        classify(fitted.params)
    with pytest.raises(ConfigError, match="shapes"):
        classify(fitted.params[:-1], fitted.config)
    with pytest.raises(ConfigError, match="must be a DUFMConfig"):
        fit_dufm({"classes": 3})  # type: ignore[arg-type]


def test_callbacks_see_every_chunk_in_order_and_are_closed_on_error():
    calls: list[str] = []

    class Record(FitCallback):
        def on_start(self, state):
            calls.append(f"start {state.step} {state.logged}")

        def on_chunk(self, state):
            calls.append(f"chunk {state.step} {state.logged}")
            if state.logged:
                assert state.loss is not None and state.loss.shape == (4,)

        def on_end(self, state):
            calls.append(f"end {state.step}")

        def close(self):
            calls.append("close")

    fit_dufm(_cfg(steps=40, log_every=20, checkpoint_every=40), [Record()])
    assert calls[0] == "start 0 True" and calls[-2:] == ["end 40", "close"]
    assert "chunk 20 True" in calls and "chunk 40 True" in calls

    class Boom(FitCallback):
        def on_chunk(self, state):
            raise RuntimeError("boom")

    calls.clear()
    with pytest.raises(RuntimeError, match="boom"):
        fit_dufm(_cfg(steps=40, log_every=20), [Record(), Boom()])
    assert calls[-1] == "close" and not any(c.startswith("end") for c in calls)
