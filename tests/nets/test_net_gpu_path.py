"""The GPU-path options on the CPU: amp (bfloat16 autocast), channels-last, the MLP backbone, running out of
device memory (simulated) and the device-resident evaluation."""

from __future__ import annotations

import json

import pytest
import torch

from deepcollapse import ConfigError
from deepcollapse.nets import train as supervised
from deepcollapse.nets.train import (
    DeviceMemoryError,
    NetConfig,
    build_network,
    load_net_data,
    make_grad_scaler,
    resume_net,
    train_net,
)

torch.set_num_threads(1)

SMALL = dict(n=10, n_test=3, batch_size=20, eval_every=1, epochs=2)  # on top of TINY_NET


def test_channels_last_gives_the_same_step_as_contiguous(tiny_net, one_training_step):
    cfg = tiny_net(**SMALL)
    data = load_net_data(cfg)
    x, y = data.train.batch(slice(0, 20))
    losses, params = zip(
        *(one_training_step(cfg.replace(channels_last=cl), data, x, y) for cl in (False, True))
    )
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    torch.testing.assert_close(params[0], params[1], rtol=1e-4, atol=1e-6)


def test_amp_on_cpu_uses_bfloat16_and_still_learns(tmp_path, tiny_net):
    """8 epochs: bfloat16 matmuls round differently per CPU (oneDNN's native bf16/AMX kernels or emulation);
    measured train accuracy 0.50 / 0.68 / 0.78 (fp32: 0.49-0.53) with ONEDNN_MAX_CPU_ISA = native (AMX) /
    AVX2 / AVX512_CORE, where 4 epochs gave 0.17-0.32 and fp32 itself only 0.21."""
    cfg = tiny_net(**{**SMALL, "amp": True, "epochs": 8})
    assert not make_grad_scaler(cfg, torch.device("cpu")).is_enabled()  # no scaler for bfloat16
    summary = train_net(cfg, tmp_path / "r", progress=False)
    losses = summary["train_loss_per_epoch"]
    assert losses[-1] < 0.8 * losses[0]
    assert summary["train_acc"] >= 0.1 + 0.15  # clearly above chance (K = 10)
    cfg64 = tiny_net(**{**SMALL, "epochs": 8})
    ref = train_net(cfg64, tmp_path / "ref", progress=False)["train_loss_per_epoch"]
    assert losses != ref  # autocast really changed the arithmetic
    assert abs(losses[0] - ref[0]) < 0.05 * ref[0]  # ... by bfloat16 rounding only


def test_mlp_backbone_on_mnist1d(tmp_path, tiny_net):
    cfg = tiny_net(
        dataset="mnist1d",
        backbone="mlp",
        backbone_width=32,
        n=10,
        n_test=3,
        batch_size=20,
        epochs=3,
    )
    summary = train_net(cfg, tmp_path / "r", progress=False)
    assert summary["epochs_done"] == 3 and summary["layers"]["H1"]["rank"] <= 10
    with pytest.raises(ConfigError, match="backbone == 'resnet20', must be 'mlp' for dataset mnist1d"):
        NetConfig(dataset="mnist1d")
    with pytest.raises(ConfigError, match="feature_dim == 8, must be None with backbone mlp"):
        NetConfig(backbone="mlp", feature_dim=8)


def test_out_of_memory_names_the_batch_size_and_keeps_the_checkpoint(tmp_path, monkeypatch, tiny_net):
    cfg = tiny_net(**{**SMALL, "epochs": 3})
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


def test_evaluation_does_not_copy_per_batch(monkeypatch, tiny_net):
    """Host copies per evaluation do not grow with the number of evaluation batches (1 batch vs 15)."""
    counts = {"n": 0}
    real_cpu = torch.Tensor.cpu

    def counting_cpu(self, *a, **k):
        counts["n"] += 1
        return real_cpu(self, *a, **k)

    monkeypatch.setattr(torch.Tensor, "cpu", counting_cpu)
    seen = []
    for bs in (1000, 7):  # 100 training samples: 1 eval batch, then 15
        cfg = tiny_net(**{**SMALL, "eval_batch_size": bs})
        data = load_net_data(cfg)
        model = build_network(cfg, data.in_channels)
        counts["n"] = 0
        rec = supervised.evaluate(cfg, model, data)
        assert len(rec["layers"]) == 5
        seen.append(counts["n"])
    # per feature, not per batch: 2 per feature, the labels, and W_L for the outcome's output class means
    assert seen[0] == seen[1] and seen[0] <= 2 * 5 + 2
