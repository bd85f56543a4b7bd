"""The documented digits run, shortened: ResNet20 + 4-layer head (width 64), DUFM-like regularisation."""

from __future__ import annotations

import pytest
import torch

from deepcollapse.experiments.net_presets import digits_demo_config
from deepcollapse.nets.train import train_net

torch.set_num_threads(1)


@pytest.mark.check
def test_digits_reaches_full_train_accuracy_with_collapse(tmp_path):
    cfg = digits_demo_config(epochs=30, eval_every=30)
    summary = train_net(cfg, tmp_path / "run", progress=False)
    assert summary["train_acc"] == 1.0
    assert summary["train_loss_per_epoch"][-1] < 0.5 * summary["train_loss_per_epoch"][0]
    dnc1 = summary["dnc1"]
    assert set(dnc1) == {"H1", "H~2", "H2", "H~3", "H3", "H~4", "H4"}
    assert dnc1["H4"] < 0.05 and dnc1["H4"] < dnc1["H1"]  # collapse strengthens through the head
