"""The 2023 experiment end to end on the digits: DUFM-trained head (K = 2), frozen, on a random ResNet20."""

from __future__ import annotations

import pytest
import torch

from deepcollapse.nets.train import NetConfig, train_net

torch.set_num_threads(1)


@pytest.mark.check
def test_backbone_under_frozen_dufm_head_reaches_collapse(tmp_path):
    from deepcollapse.dufm.config import DUFMConfig
    from deepcollapse.dufm.trainer import train_dufm

    dufm = DUFMConfig(
        classes=2,
        n=50,
        layers=3,
        width=64,
        lam_h=5e-4,
        lam_w=5e-4,
        lr=0.1,
        steps=30000,
        log_every=10000,
        checkpoint_every=10000,
        dtype="float64",
    )
    train_dufm(dufm, tmp_path / "dufm", progress=False)
    cfg = NetConfig(
        dataset="digits",
        classes=[0, 1],
        layers=3,
        width=64,
        freeze_head=True,
        head_init=str(tmp_path / "dufm"),
        reg="none",
        lr=0.01,
        momentum=0.9,
        lr_schedule="constant",
        epochs=60,
        batch_size=32,
        eval_every=60,
        threads=1,
        device="cpu",
    )
    summary = train_net(cfg, tmp_path / "net", progress=False)
    assert summary["train_acc"] == 1.0
    assert summary["dnc1"]["H3"] < 0.05  # from ≈ 20 at initialisation (measured)
    blob = torch.load(tmp_path / "dufm" / "params.pt", weights_only=True)
    ck = torch.load(tmp_path / "net" / "checkpoint.pt", weights_only=True)["model"]
    for l, W in enumerate(blob["weights"]):
        assert torch.equal(ck[f"head.layers.{l}.weight"], W[0].float())
