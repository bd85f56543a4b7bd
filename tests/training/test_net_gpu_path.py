"""The GPU-path options on the CPU: amp (bfloat16 autocast), channels-last, the MLP backbone, running out of
device memory (simulated) and the device-resident evaluation."""

from __future__ import annotations

import json

import pytest
import torch

from deepcollapse import ConfigError
from deepcollapse.training import supervised
from deepcollapse.training.supervised import (
    DeviceMemoryError,
    NetConfig,
    build_network,
    load_net_data,
    make_grad_scaler,
    resume_net,
    train_net,
    train_step,
)

torch.set_num_threads(1)

SMALL = dict(
    dataset="digits",
    n_per_class=10,
    n_test_per_class=3,
    head_layers=3,
    head_width=12,
    batch_size=20,
    lr=0.05,
    lr_schedule="constant",
    device="cpu",
    eval_every=1,
    threads=1,
    epochs=2,
)


def test_channels_last_gives_the_same_step_as_contiguous():
    cfg = NetConfig(**SMALL)
    data = load_net_data(cfg)
    x, y = data.train.batch(slice(0, 20))
    losses, params = [], []
    for cl in (False, True):
        c = cfg.replace(channels_last=cl)
        model = build_network(c, data.in_channels)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        losses.append(float(train_step(c, model, opt, make_grad_scaler(c, x.device), x, y, len(data.train))))
        params.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    torch.testing.assert_close(params[0], params[1], rtol=1e-4, atol=1e-6)


def test_amp_on_cpu_uses_bfloat16_and_still_learns(tmp_path):
    cfg = NetConfig(**{**SMALL, "amp": True, "epochs": 4})
    assert not make_grad_scaler(cfg, torch.device("cpu")).is_enabled()  # no scaler for bfloat16
    summary = train_net(cfg, tmp_path / "r", progress=False)
    losses = summary["train_loss_per_epoch"]
    assert losses[-1] < losses[0] and summary["train_acc"] > 0.2
    cfg64 = NetConfig(**{**SMALL, "epochs": 4})
    ref = train_net(cfg64, tmp_path / "ref", progress=False)["train_loss_per_epoch"]
    assert losses != ref  # autocast really changed the arithmetic
    assert abs(losses[0] - ref[0]) < 0.05 * ref[0]  # ... by bfloat16 rounding only


def test_mlp_backbone_on_mnist1d(tmp_path):
    cfg = NetConfig(
        dataset="mnist1d",
        backbone="mlp",
        backbone_width=32,
        n_per_class=10,
        n_test_per_class=3,
        head_layers=3,
        head_width=12,
        batch_size=20,
        lr=0.05,
        lr_schedule="constant",
        device="cpu",
        epochs=3,
        threads=1,
    )
    summary = train_net(cfg, tmp_path / "r", progress=False)
    assert summary["epochs_done"] == 3 and summary["layers"]["H1"]["rank"] <= 10
    with pytest.raises(ConfigError, match="backbone == 'resnet20', must be 'mlp' for dataset mnist1d"):
        NetConfig(dataset="mnist1d")
    with pytest.raises(ConfigError, match="feature_dim == 8, must be None with backbone mlp"):
        NetConfig(backbone="mlp", feature_dim=8)


def test_out_of_memory_names_the_batch_size_and_keeps_the_checkpoint(tmp_path, monkeypatch):
    cfg = NetConfig(**{**SMALL, "epochs": 3})
    out = tmp_path / "r"
    real_step = supervised.train_step
    calls = {"n": 0}

    def step(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 5:  # epoch 1 has 5 steps; fail in epoch 2
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_step(*args, **kwargs)

    monkeypatch.setattr(supervised, "train_step", step)
    with pytest.raises(DeviceMemoryError) as info:
        train_net(cfg, out, progress=False)
    msg = str(info.value)
    assert "batch_size == 20, must be smaller" in msg and "epoch 2" in msg
    assert f"deepcollapse net resume {out} --batch-size" in msg and "\n" not in msg
    ckpt = torch.load(out / "checkpoint.pt", weights_only=True)
    assert ckpt["state"]["epoch"] == 1  # the last finished epoch's checkpoint is kept
    monkeypatch.setattr(supervised, "train_step", real_step)
    summary = resume_net(out, progress=False, batch_size=10)
    assert summary["epochs_done"] == 3
    assert "batch_size: 10" in (out / "config.yaml").read_text()
    epochs = [json.loads(s)["epoch"] for s in (out / "metrics.jsonl").read_text().splitlines()]
    assert epochs == [0, 1, 2, 3]


def test_evaluation_does_not_copy_per_batch(monkeypatch):
    """Host copies per evaluation do not grow with the number of evaluation batches (1 batch vs 15)."""
    counts = {"n": 0}
    real_cpu = torch.Tensor.cpu

    def counting_cpu(self, *a, **k):
        counts["n"] += 1
        return real_cpu(self, *a, **k)

    monkeypatch.setattr(torch.Tensor, "cpu", counting_cpu)
    seen = []
    for bs in (1000, 7):  # 100 training samples: 1 eval batch, then 15
        cfg = NetConfig(**{**SMALL, "eval_batch_size": bs})
        data = load_net_data(cfg)
        model = build_network(cfg, data.in_channels)
        counts["n"] = 0
        rec = supervised.evaluate(cfg, model, data)
        assert len(rec["layers"]) == 5
        seen.append(counts["n"])
    assert seen[0] == seen[1] and seen[0] <= 2 * 5 + 1  # per feature, not per batch
