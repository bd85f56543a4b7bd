"""The trainer, analysis, resume and CLI with the other model families (cross-entropy, linear, σ_ε, λ = 0)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import yaml

from deepcollapse._core.checks import ConfigError
from deepcollapse.cli import main as cli_main
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.model import init_params
from deepcollapse.dufm.trainer import resume_dufm, train_dufm

torch.set_num_threads(1)


def _cfg(**kw) -> DUFMConfig:
    base = dict(
        classes=4, n=3, layers=3, width=6, lam_h=0.01, lam_w=0.01, lr=0.3, steps=60, runs=2,
        log_every=30, checkpoint_every=30, init_scale=0.5, seed=3,
    )  # fmt: skip
    base.update(kw)
    return DUFMConfig(**base)


def _params(folder):
    d = torch.load(folder / "params.pt", map_location="cpu", weights_only=True)
    return [d["H1"], *d["weights"]]


@pytest.mark.parametrize(
    "family",
    [{"loss": "ce"}, {"loss": "ce", "activation": "linear"}, {"activation": "relu_eps", "eps": 0.2}],
)
@pytest.mark.parametrize("engine", [dict(backend="torch"), dict(backend="torch", grad="autograd")])
def test_torch_engines_match_numpy_engine(tmp_path, family, engine):
    c = _cfg(dtype="float64", **family)
    train_dufm(c, tmp_path / "np", progress=False)
    train_dufm(DUFMConfig.from_dict({**c.to_dict(), **engine}), tmp_path / "t", progress=False)
    for a, b in zip(_params(tmp_path / "np"), _params(tmp_path / "t")):
        assert torch.max(torch.abs(a - b)).item() < 1e-11


def test_cross_entropy_run_at_lam_zero_is_analysed_without_closed_forms(tmp_path):
    c = _cfg(loss="ce", lam_h=0.0, lam_w=0.0, steps=200, log_every=100, checkpoint_every=100)
    summary = train_dufm(c, tmp_path / "ce", progress=False)
    assert summary["loss_dnc"] is None and summary["loss_srg"] is None
    assert "no closed form" in summary["theory"]["note"] and "ce+relu" in summary["theory"]["note"]
    assert summary["loss_zero"] == pytest.approx(math.log(4), rel=1e-12)  # CE of the zero output
    recs = [json.loads(x) for x in (tmp_path / "ce" / "metrics.jsonl").read_text().splitlines()]
    for run in summary["runs"]:
        assert run["polished_loss"] is None and not run["below_dnc"]
        assert run["reg"] == 0.0 and run["final_loss"] == pytest.approx(run["fit"])
        assert run["final_loss"] < math.log(4)  # GD lowered the cross-entropy
        # λ = 0: the norms are reported, and they grew from their initial values
        first = [r for r in recs if r["run"] == run["run"] and r["step"] == 0][0]
        assert first["loss"] > run["final_loss"]
        assert run["norms"]["W"][-1] > 0.0 and len(run["norms"]["W"]) == 3
        W_L0 = float(torch.linalg.norm(init_params(c).weights[-1][run["run"]].double()))
        assert run["norms"]["W"][-1] > W_L0  # unregularised CE: the last layer's norm grows


def test_mse_relu_at_lam_zero_says_no_closed_form(tmp_path):
    summary = train_dufm(_cfg(lam_h=0.0, lam_w=0.0, steps=30), tmp_path / "a", progress=False)
    assert summary["loss_dnc"] is None and "lam = 0" in summary["theory"]["note"]
    assert summary["loss_zero"] == 0.5


def test_resume_refuses_another_model(tmp_path):
    c = _cfg(steps=60)
    train_dufm(c, tmp_path / "r", progress=False, max_steps=30)
    cfg_path = tmp_path / "r" / "config.yaml"
    data = yaml.safe_load(cfg_path.read_text())
    data["loss"] = "ce"
    cfg_path.write_text(yaml.safe_dump(data))
    with pytest.raises(
        ConfigError, match=r"^loss == 'ce' in .*must be 'mse' as in its checkpoint.pt.*dufm train"
    ):
        resume_dufm(tmp_path / "r", progress=False)
    data["loss"] = "mse"
    cfg_path.write_text(yaml.safe_dump(data))
    assert resume_dufm(tmp_path / "r", progress=False)["step"] == 60  # the same model resumes


def test_cli_train_with_family_options(tmp_path, capsys):
    out = tmp_path / "cli"
    argv = ["dufm", "train", "--classes", "3", "--n", "2", "--layers", "2", "--width", "4", "--steps", "5"]
    argv += ["--loss", "ce", "--activation", "relu_eps", "--eps", "0.1", "--out", str(out), "--no-progress"]
    assert cli_main(argv) == 0
    cfg = DUFMConfig.from_yaml(out / "config.yaml")
    assert (cfg.loss, cfg.activation, cfg.eps) == ("ce", "relu_eps", 0.1)
    assert "no closed form for model ce+relu_eps(0.1)" in capsys.readouterr().out
    bad = ["dufm", "train", "--activation", "relu_eps", "--out", str(tmp_path / "bad"), "--steps", "1"]
    assert cli_main(bad) == 2
    assert "eps == None, must be > 0" in capsys.readouterr().err


def test_sweep_yaml_fields_reach_the_config():
    c = DUFMConfig.from_yaml("loss: ce\nactivation: linear\nlam: 0\n")
    assert c.family.name == "ce+linear" and c.lam_h == 0.0 and c.lam_w == [0.0] * 4
    assert np.isclose(DUFMConfig.from_dict(c.to_dict()).lam_h, 0.0)


def test_sweep_grid_over_families_passes_through_the_config(tmp_path):
    from deepcollapse.runs.sweep import SweepSpec

    spec = SweepSpec.from_dict(
        {
            "base": {"classes": 3, "n": 2, "layers": 2, "width": 4, "steps": 5, "lam": 0.0},
            "grid": {"loss": ["mse", "ce"]},
            "points": [{"activation": "relu"}, {"activation": "relu_eps", "eps": 0.05}],
        }
    )
    names = sorted(DUFMConfig.from_dict(t.config).family.name for t in spec.tasks(tmp_path))
    assert names == ["ce+relu", "ce+relu_eps(0.05)", "mse+relu", "mse+relu_eps(0.05)"]
    with pytest.raises(ConfigError, match="eps == None"):
        SweepSpec.from_dict({"base": {"activation": "relu_eps"}}).tasks(tmp_path)


def test_numpy_kernel_path_through_the_trainer(tmp_path, monkeypatch):
    """Without numba (forced here) the trainer runs the numpy kernel: bit-identical across workers and
    sub-batches, and equal to the default kernel up to float rounding."""
    c = _cfg(loss="ce", activation="relu_eps", eps=0.2, runs=4, steps=80, log_every=40, checkpoint_every=40)
    c = DUFMConfig.from_dict({**c.to_dict(), "dtype": "float64"})  # float32 rounding differences grow in GD
    train_dufm(c, tmp_path / "auto", progress=False)
    monkeypatch.setenv("DEEPCOLLAPSE_KERNEL", "numpy")
    train_dufm(c, tmp_path / "np", progress=False)
    w = DUFMConfig.from_dict({**c.to_dict(), "workers": 2, "sub_batch": 1})
    train_dufm(w, tmp_path / "npw", progress=False)
    for a, b, d in zip(_params(tmp_path / "np"), _params(tmp_path / "npw"), _params(tmp_path / "auto")):
        assert torch.equal(a, b)
        assert torch.max(torch.abs(a - d)).item() < 1e-10 * max(1.0, a.abs().max().item())
