"""The network trained in memory (``fit_net``, issue 30 item 1) is the run folder's network: the same model
bit for bit, the same evaluation records and summary (but the timings), and nothing written."""

from __future__ import annotations

import os

import pytest
import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.io import read_jsonl
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.train import fit_net, train_net

TIMES = ("epoch_time", "time", "elapsed", "seconds")


def _untimed(d):
    return {k: v for k, v in d.items() if not any(t in k for t in TIMES)}


def test_fit_in_memory_equals_the_run_folder_bit_for_bit(tmp_path, monkeypatch):
    config = NetConfig(
        dataset="digits",
        classes=[0, 1, 2, 3],
        n=8,
        n_test=4,
        batch_size=8,
        layers=3,
        width=6,
        backbone="mlp",
        backbone_width=12,
        epochs=3,
        eval_every=2,
        lam=0.01,
        device="cpu",
        threads=1,
    )
    monkeypatch.chdir(tmp_path)
    seen = []
    fit = fit_net(config, callback=lambda epoch, rec: seen.append(epoch))
    assert os.listdir(tmp_path) == []  # nothing written
    summary = train_net(config, tmp_path / "run", progress=False)
    ckpt = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)
    state = fit.model.state_dict()
    assert state.keys() == ckpt["model"].keys()
    assert all(torch.equal(state[k], ckpt["model"][k]) for k in state)
    records = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert [r["epoch"] for r in fit.records] == [0, 2, 3] == [r["epoch"] for r in records]
    assert [_untimed(r) for r in fit.records] == [_untimed(r) for r in records]
    assert _untimed(fit.summary.to_dict()) == _untimed(summary.to_dict())
    assert [h["epoch"] for h in fit.history] == [1, 2, 3] and seen == [1, 2, 3]


def test_fit_net_takes_a_net_config():
    with pytest.raises(ConfigError, match="must be a NetConfig"):
        fit_net({"epochs": 1})
