"""The L-DUFM trainer: run folder, per-run independence, resume bit-identity, signals, divergence, engines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from deepcollapse._core.checks import ConfigError
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.model import init_params
from deepcollapse.dufm.summary import DUFMSummary
from deepcollapse.dufm.trainer import resume_dufm, train_dufm

torch.set_num_threads(1)


def _cfg(**kw) -> DUFMConfig:
    base = dict(
        classes=4,
        n=3,
        layers=3,
        width=6,
        lam_h=0.01,
        lam_w=0.01,
        lr=0.3,
        steps=300,
        runs=3,
        log_every=100,
        checkpoint_every=100,
        init_scale=0.5,
        seed=3,
    )
    base.update(kw)
    return DUFMConfig(**base)


def _params(folder: Path) -> list[torch.Tensor]:
    d = torch.load(folder / "params.pt", map_location="cpu", weights_only=True)
    return [d["H1"], *d["weights"]]


def _explicit_gd(config: DUFMConfig, steps: int) -> list[np.ndarray]:
    """Independent reference: float64 GD with torch autograd of eq. (1), one run at a time."""
    out = []
    P = init_params(config)
    N = config.N
    Y = torch.kron(
        torch.eye(config.classes, dtype=torch.float64), torch.ones(1, config.n, dtype=torch.float64)
    )
    for r in range(config.runs):
        ps = [t[r].clone().requires_grad_(True) for t in P.tensors()]
        for _ in range(steps):
            H = ps[0]
            for W in ps[1:-1]:
                H = torch.relu(W @ H)
            loss = ((ps[-1] @ H - Y) ** 2).sum() / (2 * N) + config.lam_h / 2 * (ps[0] ** 2).sum()
            loss = loss + sum(lam / 2 * (W**2).sum() for lam, W in zip(config.lam_w, ps[1:]))
            grads = torch.autograd.grad(loss, ps)
            with torch.no_grad():
                for p, g in zip(ps, grads):
                    p -= config.lr * g
        out.append([p.detach().numpy() for p in ps])
    return out


def test_run_folder_contents_and_formats(tmp_path):
    c = _cfg()
    summary = train_dufm(c, tmp_path / "run", progress=False)
    run = tmp_path / "run"
    assert sorted(p.name for p in run.iterdir()) == sorted(
        ["config.yaml", "metrics.jsonl", "checkpoint.pt", "checkpoint.prev.pt", "params.pt", "summary.json"]
    )
    assert DUFMConfig.from_yaml(run / "config.yaml") == c
    recs = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert sorted({r["step"] for r in recs}) == [0, 100, 200, 300]
    assert len(recs) == 4 * c.runs
    r0 = recs[-1]
    assert set(r0) >= {"step", "run", "seed", "loss", "fit", "reg", "diverged", "layers"}
    assert [(x["layer"], x["kind"]) for x in r0["layers"]] == [
        (1, "post"),
        (2, "pre"),
        (2, "post"),
        (3, "pre"),
        (3, "post"),
    ]
    assert set(r0["layers"][0]) >= {"dnc1", "dnc2_cond", "rank", "singular_values"}
    assert abs(r0["loss"] - r0["fit"] - r0["reg"]) < 1e-12
    # the loss decreases for every run
    for r in range(c.runs):
        losses = [x["loss"] for x in recs if x["run"] == r]
        assert losses[-1] < losses[0]
    s = json.loads((run / "summary.json").read_text())
    assert s == summary.to_dict()  # the typed result is the file (summary.to_dict() is JSON-ready)
    assert isinstance(summary, DUFMSummary) and DUFMSummary.from_dict(s) == summary
    assert [r.seed for r in summary.runs] == [r["seed"] for r in s["runs"]] == [3, 4, 5]
    assert {"loss_dnc", "loss_srg", "runs"} <= set(s)
    for r in s["runs"]:
        assert {
            "seed",
            "final_loss",
            "fit",
            "reg",
            "ranks",
            "dnc1",
            "classification",
            "diverged",
            "polished_loss",
        } <= set(r)
        assert len(r["ranks"]) == c.layers
    params = torch.load(run / "params.pt", weights_only=True)
    assert params["H1"].shape == (3, 6, 12) and [tuple(W.shape) for W in params["weights"]] == [
        (3, 6, 6),
        (3, 6, 6),
        (3, 4, 6),
    ]
    assert params["H1"].dtype == torch.float32


def test_trainer_equals_explicit_float64_gd(tmp_path):
    c = _cfg(dtype="float64", steps=40, log_every=40, checkpoint_every=40)
    train_dufm(c, tmp_path / "a", progress=False)
    got = _params(tmp_path / "a")
    ref = _explicit_gd(c, 40)
    for r in range(c.runs):
        for a, b in zip(got, ref[r]):
            np.testing.assert_allclose(a[r].numpy(), b, rtol=0, atol=1e-11)


@pytest.mark.parametrize("engine", [dict(backend="torch"), dict(backend="torch", grad="autograd")])
def test_torch_engines_match_numpy_engine(tmp_path, engine):
    c = _cfg(dtype="float64", steps=60, log_every=60, checkpoint_every=60)
    train_dufm(c, tmp_path / "np", progress=False)
    train_dufm(DUFMConfig.from_dict({**c.to_dict(), **engine}), tmp_path / "t", progress=False)
    for a, b in zip(_params(tmp_path / "np"), _params(tmp_path / "t")):
        assert torch.max(torch.abs(a - b)).item() < 1e-11


@pytest.mark.parametrize(
    "family", [{}, {"loss": "ce", "activation": "relu_eps", "eps": 0.2}, {"activation": "linear", "lr": 0.1}]
)
def test_runs_independent_of_batching_and_workers(tmp_path, family):
    c = _cfg(runs=4, steps=150, **family)
    train_dufm(c, tmp_path / "all", progress=False)
    train_dufm(
        DUFMConfig.from_dict({**c.to_dict(), "workers": 2, "sub_batch": 1}), tmp_path / "w", progress=False
    )
    train_dufm(DUFMConfig.from_dict({**c.to_dict(), "runs": 1, "seed": 5}), tmp_path / "one", progress=False)
    A, B, O = _params(tmp_path / "all"), _params(tmp_path / "w"), _params(tmp_path / "one")
    for a, b, o in zip(A, B, O):
        assert torch.equal(a, b)  # bit for bit, float32
        assert torch.equal(a[2], o[0])  # run 2 (seed 5) as if trained alone


def test_resume_is_bit_identical(tmp_path):
    c = _cfg(steps=400, checkpoint_every=150, log_every=100)
    train_dufm(c, tmp_path / "full", progress=False)
    part = train_dufm(c, tmp_path / "cut", progress=False, max_steps=230)
    assert part == {"step": 230, "finished": False}
    assert not (tmp_path / "cut" / "params.pt").exists()
    ck = torch.load(tmp_path / "cut" / "checkpoint.pt", weights_only=True)
    assert ck["step"] == 230
    resume_dufm(tmp_path / "cut", progress=False)
    for a, b in zip(_params(tmp_path / "full"), _params(tmp_path / "cut")):
        assert torch.equal(a, b)
    assert (tmp_path / "full" / "metrics.jsonl").read_text() == (
        tmp_path / "cut" / "metrics.jsonl"
    ).read_text()


def test_resume_after_kill_drops_records_past_checkpoint(tmp_path):
    """Simulate SIGKILL after a log but before the next checkpoint: resume still ends identical."""
    c = _cfg(steps=300, checkpoint_every=200, log_every=100)
    train_dufm(c, tmp_path / "full", progress=False)
    train_dufm(c, tmp_path / "cut", progress=False, max_steps=200)
    full_lines = (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()
    # a killed writer left records of step 300 (beyond the checkpoint) and half a line
    with open(tmp_path / "cut" / "metrics.jsonl", "a") as f:
        f.write(full_lines[-1] + "\n" + full_lines[-1][:20])
    resume_dufm(tmp_path / "cut", progress=False)
    assert (tmp_path / "cut" / "metrics.jsonl").read_text().splitlines() == full_lines
    for a, b in zip(_params(tmp_path / "full"), _params(tmp_path / "cut")):
        assert torch.equal(a, b)


@pytest.mark.parametrize(
    "signum",
    [
        signal.SIGTERM,
        pytest.param(signal.SIGINT, marks=pytest.mark.check),
    ],  # the same path; SIGINT: check tier
    ids=["SIGTERM", "SIGINT"],
)
def test_signal_checkpoint_and_resume(tmp_path, signum):
    """SIGTERM / SIGINT (Ctrl-C) mid-run (real process): checkpoint at the stop step, exit 128 + signum, the
    message names the resume command; resume continues bit-identically."""
    c = _cfg(steps=10**7, checkpoint_every=10**6, log_every=10**6, runs=2)
    full, cut = tmp_path / "full", tmp_path / "cut"
    cfg_file = tmp_path / "c.yaml"
    c.to_yaml(cfg_file)
    cmd = [sys.executable, "-m", "deepcollapse", "dufm", "train", "--config", str(cfg_file), "--no-progress"]
    proc = subprocess.Popen(cmd + ["--out", str(cut)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and not (cut / "metrics.jsonl").is_file():
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err.decode()
    assert f"resume with: deepcollapse dufm resume {cut}" in err.decode()
    stop = torch.load(cut / "checkpoint.pt", weights_only=True)["step"]
    assert 0 < stop < 10**6  # written on SIGTERM, not at a checkpoint_every boundary
    assert not (cut / "params.pt").exists()
    resume_dufm(cut, progress=False, max_steps=500)
    train_dufm(c, full, progress=False, max_steps=stop + 500)
    a = torch.load(cut / "checkpoint.pt", weights_only=True)
    b = torch.load(full / "checkpoint.pt", weights_only=True)
    assert a["step"] == b["step"] == stop + 500
    for x, y in zip(a["params"], b["params"]):
        assert torch.equal(x, y)


@pytest.mark.parametrize("engine", [{}, {"backend": "torch"}])
def test_diverged_run_is_frozen_others_go_on(tmp_path, engine):
    c = DUFMConfig.from_dict({**_cfg(steps=200, checkpoint_every=100).to_dict(), **engine})
    train_dufm(c, tmp_path / "full", progress=False)
    train_dufm(c, tmp_path / "cut", progress=False, max_steps=100)
    ck_path = tmp_path / "cut" / "checkpoint.pt"
    ck = torch.load(ck_path, weights_only=True)
    ck["params"][1][1, 0, 0] = float("inf")  # run 1 blows up at step 100
    del ck["checksum"]  # an edit on purpose: saved without a checksum, as files of earlier releases are
    torch.save(ck, ck_path)
    summary = resume_dufm(tmp_path / "cut", progress=False)
    r1 = summary["runs"][1]
    assert r1["diverged"] and r1["diverged_step"] == 100 and r1["classification"] == "diverged"
    assert not summary["runs"][0]["diverged"] and not summary["runs"][2]["diverged"]
    # the diverged entry is the short one (no norms, no polish), on disk as in the returned result
    assert summary.runs[1].norms is None and "norms" not in r1 and "norms" in summary.runs[0]
    assert json.loads((tmp_path / "cut" / "summary.json").read_text()) == summary.to_dict()
    A, B = _params(tmp_path / "full"), _params(tmp_path / "cut")
    for a, b in zip(A, B):
        assert torch.equal(a[[0, 2]], b[[0, 2]])
    recs = [json.loads(x) for x in (tmp_path / "cut" / "metrics.jsonl").read_text().splitlines()]
    last = [r for r in recs if r["step"] == 200]
    assert last[1]["diverged"] and last[1]["loss"] is None and not last[0]["diverged"]


def test_existing_output_needs_force(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="force"):
        train_dufm(_cfg(steps=5), out, progress=False)
    train_dufm(_cfg(steps=5), out, progress=False, force=True)
    assert (out / "notes.txt").read_text() == "mine"  # only the run files are replaced
    assert yaml.safe_load((out / "config.yaml").read_text())["steps"] == 5


def test_resume_extends_finished_run(tmp_path):
    c = _cfg(steps=200, checkpoint_every=100)
    train_dufm(DUFMConfig.from_dict({**c.to_dict(), "steps": 300}), tmp_path / "full", progress=False)
    train_dufm(c, tmp_path / "ext", progress=False)
    s = resume_dufm(tmp_path / "ext", steps=300, progress=False)
    assert s["step"] == 300
    for a, b in zip(_params(tmp_path / "full"), _params(tmp_path / "ext")):
        assert torch.equal(a, b)


def test_resume_errors(tmp_path):
    with pytest.raises(ConfigError, match="config.yaml"):
        resume_dufm(tmp_path, progress=False)
    os.makedirs(tmp_path / "x")
    (tmp_path / "x" / "config.yaml").write_text("classes: 4\nn: 3\nlayers: 3\nlr: -1.0\n")
    with pytest.raises(ConfigError, match="lr == -1"):  # a bad config.yaml is refused before any work
        resume_dufm(tmp_path / "x", progress=False)
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == ["config.yaml"]


def test_resume_of_a_folder_without_checkpoint_starts_from_step_0(tmp_path, caplog):
    """A run killed before its first checkpoint leaves only config.yaml: ``dufm resume`` starts it from step 0
    with that config, says so in one line, and ends as a fresh run (and as explicit float64 GD) does."""
    c = _cfg(dtype="float64", steps=40, log_every=20, checkpoint_every=40, runs=1)  # 1 run: analysis is slow
    train_dufm(c, tmp_path / "fresh", progress=False)
    cut = tmp_path / "cut"
    cut.mkdir()
    c.to_yaml(cut / "config.yaml")
    with caplog.at_level("WARNING", logger="deepcollapse"):
        assert resume_dufm(cut, progress=False)["step"] == 40
    said = [r.getMessage() for r in caplog.records if "checkpoint" in r.getMessage()]
    assert len(said) == 1 and "no checkpoint.pt" in said[0] and "starting from step 0" in said[0]
    for a, b in zip(_params(tmp_path / "fresh"), _params(cut)):
        assert torch.equal(a, b)
    assert (cut / "metrics.jsonl").read_text() == (tmp_path / "fresh" / "metrics.jsonl").read_text()
    ref = _explicit_gd(c, 40)  # independent of the trainer
    for r in range(c.runs):
        for a, b in zip(_params(cut), ref[r]):
            np.testing.assert_allclose(a[r].numpy(), b, rtol=0, atol=1e-11)
