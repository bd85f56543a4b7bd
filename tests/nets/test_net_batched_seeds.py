"""Seeds trained as one batched network (issue 28): each seed equals the same seed trained alone, its
folder is a single run's folder, and a batch stops, runs out of memory and resumes as S separate runs would.

The reference is the single-run loop (``train_net``), an independent code path: its own network, optimizer
and step per seed.  Parity is to float32 rounding (the batched convolutions and sums add in another order).
"""

from __future__ import annotations

import os
import signal

import pytest
import torch

import deepcollapse.nets.seed_batch as seed_batch
from deepcollapse._core.checks import Interrupted
from deepcollapse._core.io import read_jsonl
from deepcollapse.nets.batched import resume_nets, train_nets
from deepcollapse.nets.build import build_network, make_grad_scaler, make_optimizer
from deepcollapse.nets.checkpoint import DeviceMemoryError
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.seed_batch import SeedBatch, batched_train_step
from deepcollapse.nets.seed_groups import group_runs, seeds_per_batch
from deepcollapse.nets.step import train_step
from deepcollapse.nets.train import resume_net, train_net

# The smallest settings that exercise the logic: 10 digits per class, batch 20 (5 steps an epoch).
MLP = dict(backbone="mlp", backbone_width=16, n=10, n_test=4, batch_size=20, batch_seeds="on")
#: ResNet8 (BatchNorm in training mode, running statistics) with weight decay on every parameter + momentum.
RESNET = dict(backbone="resnet8", n=6, n_test=2, batch_size=20, reg="standard", lam=0.01, channels_last=False)


def _ckpt(folder):
    return torch.load(folder / "checkpoint.pt", weights_only=False)


def _max_diff(a: dict, b: dict) -> float:
    return max((a[k].double() - b[k].double()).abs().max().item() for k in a)


def _losses(folder) -> list[float]:
    return [r["loss"] for r in read_jsonl(folder / "metrics.jsonl")]


def test_resnet_seeds_trained_in_a_batch_equal_each_seed_trained_alone(tmp_path, tiny_net):
    # two seeds and a third "sweep point" with another learning rate: one batch (PER_SEED_FIELDS)
    configs = [
        tiny_net(**RESNET, seed=0, epochs=3, batch_seeds="on"),
        tiny_net(**RESNET, seed=1, epochs=3, batch_seeds="on"),
        tiny_net(**RESNET, seed=2, epochs=3, batch_seeds="on", lr=0.02),
    ]
    assert group_runs(configs) == [[0, 1, 2]]
    batched = train_nets(configs, [tmp_path / f"b{s}" for s in range(3)], progress=False)
    for s, cfg in enumerate(configs):
        alone = train_net(cfg, tmp_path / f"a{s}", progress=False)
        a, b = _ckpt(tmp_path / f"a{s}"), _ckpt(tmp_path / f"b{s}")
        assert a.keys() == b.keys() and a["model"].keys() == b["model"].keys()
        assert any("running_var" in k for k in a["model"])  # batch-norm statistics compared too
        assert _max_diff(a["model"], b["model"]) < 1e-5
        mom_a = [v["momentum_buffer"] for v in a["optimizer"]["state"].values()]
        mom_b = [v["momentum_buffer"] for v in b["optimizer"]["state"].values()]
        assert len(mom_a) == len(mom_b) > 0
        assert max((u - v).abs().max().item() for u, v in zip(mom_a, mom_b)) < 1e-5
        assert a["state"]["epoch"] == b["state"]["epoch"] == 3
        assert _losses(tmp_path / f"a{s}") == pytest.approx(_losses(tmp_path / f"b{s}"), rel=1e-5)
        assert batched[s].loss == pytest.approx(alone.loss, rel=1e-5)
        assert sorted(os.listdir(tmp_path / f"a{s}")) == sorted(os.listdir(tmp_path / f"b{s}"))


def test_a_batched_seed_folder_resumes_alone(tmp_path, tiny_net):
    configs = [tiny_net(**MLP, seed=s, epochs=2) for s in range(2)]
    train_nets(configs, [tmp_path / "b0", tmp_path / "b1"], progress=False)
    resume_net(tmp_path / "b1", epochs=3, progress=False)  # the single-run loop reads the batched checkpoint
    train_net(configs[1].replace(epochs=3), tmp_path / "alone", progress=False)
    assert _ckpt(tmp_path / "b1")["state"]["epoch"] == 3
    assert _max_diff(_ckpt(tmp_path / "alone")["model"], _ckpt(tmp_path / "b1")["model"]) < 1e-5


def test_sigterm_after_an_epoch_leaves_every_folder_resumable_and_resume_is_exact(tmp_path, tiny_net):
    configs = [tiny_net(**MLP, seed=s, epochs=2) for s in range(2)]
    full = [tmp_path / f"full{s}" for s in range(2)]
    cut = [tmp_path / f"cut{s}" for s in range(2)]
    train_nets(configs, full, progress=False)

    def stop(s, epoch, record):
        if epoch == 1 and s == 0:
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(Interrupted) as info:
        train_nets(configs, cut, progress=False, callback=stop)
    assert info.value.exit_code == 143
    assert info.value.resume == "deepcollapse net resume " + " ".join(map(str, cut))
    assert "after epoch 1; the checkpoints of epoch 1 are written to the 2 run folders" in info.value.message
    assert [_ckpt(c)["state"]["epoch"] for c in cut] == [1, 1]
    assert not any((c / "summary.json").exists() for c in cut)
    resume_nets(cut, progress=False)
    for a, b in zip(
        full, cut
    ):  # a batch resumed from its checkpoints is the uninterrupted batch, bit for bit
        assert all(torch.equal(_ckpt(a)["model"][k], _ckpt(b)["model"][k]) for k in _ckpt(a)["model"])
        assert _losses(a) == _losses(b)


def test_a_signal_mid_epoch_keeps_the_previous_checkpoints(tmp_path, tiny_net, monkeypatch):
    configs = [tiny_net(**MLP, seed=s, epochs=2) for s in range(2)]
    outs = [tmp_path / "s0", tmp_path / "s1"]
    real, calls = seed_batch.batched_train_step, {"n": 0}

    def step(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5 + 2:  # the second batch of epoch 2
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(seed_batch, "batched_train_step", step)
    with pytest.raises(Interrupted) as info:
        train_nets(configs, outs, progress=False)
    assert info.value.signum == signal.SIGINT
    assert "during epoch 2; the checkpoints of epoch 1 in the 2 run folders are kept" in info.value.message
    assert info.value.resume == f"deepcollapse net resume {outs[0]} {outs[1]}"
    assert [_ckpt(o)["state"]["epoch"] for o in outs] == [1, 1]
    monkeypatch.setattr(seed_batch, "batched_train_step", real)
    assert [s.epochs_done for s in resume_nets(outs, progress=False)] == [2, 2]


def test_out_of_memory_names_the_batch_and_a_smaller_setting_and_resume_continues(
    tmp_path, tiny_net, monkeypatch
):
    configs = [tiny_net(**MLP, seed=s, epochs=2) for s in range(4)]
    outs = [tmp_path / f"s{s}" for s in range(4)]
    real, calls = seed_batch.batched_train_step, {"n": 0}

    def step(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5 + 1:  # the first batch of epoch 2
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(*args, **kwargs)

    monkeypatch.setattr(seed_batch, "batched_train_step", step)
    with pytest.raises(DeviceMemoryError) as info:
        train_nets(configs, outs, progress=False)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("batch_size == 20 with batch_seeds == 4 seeds batched together")
    assert "at epoch 2; the checkpoints of epoch 1 are kept in the 4 run folders" in msg
    assert "--batch-seeds 2`" in msg and "deepcollapse net resume " + " ".join(map(str, outs)) in msg
    assert [_ckpt(o)["state"]["epoch"] for o in outs] == [1, 1, 1, 1]
    monkeypatch.setattr(seed_batch, "batched_train_step", real)
    done = resume_nets(outs, batch_seeds=2, progress=False)  # the smaller setting: two batches of two
    assert [s.epochs_done for s in done] == [2, 2, 2, 2]
    assert all(NetConfig.from_yaml(o / "config.yaml").batch_seeds == 2 for o in outs)


def test_folders_stopped_at_different_epochs_catch_up_then_train_together(tmp_path, tiny_net):
    configs = [tiny_net(**MLP, seed=s, epochs=3) for s in range(3)]
    outs = [tmp_path / f"s{s}" for s in range(3)]
    full = [tmp_path / f"f{s}" for s in range(3)]
    train_nets(configs, full, progress=False)

    def stop_at(epoch_to_stop):
        def cb(*args):
            if args[-2] == epoch_to_stop:
                os.kill(os.getpid(), signal.SIGTERM)

        return cb

    with pytest.raises(Interrupted):
        train_nets(configs, outs, progress=False, callback=stop_at(1))
    with pytest.raises(Interrupted):  # seed 2 alone one epoch further (as after a kill between two seeds)
        resume_net(outs[2], progress=False, callback=stop_at(2))
    assert [_ckpt(o)["state"]["epoch"] for o in outs] == [1, 1, 2]
    assert [s.epochs_done for s in resume_nets(outs, progress=False)] == [3, 3, 3]
    for a, b in zip(full, outs):
        assert _max_diff(_ckpt(a)["model"], _ckpt(b)["model"]) < 1e-5


def test_each_seed_has_its_own_loss_scaler(tiny_net):
    """Seed 1's overflow skips seed 1's step and halves its scale only (the amp GradScaler per seed)."""
    cfgs = [tiny_net(**MLP, seed=s) for s in range(2)]
    shape = (1, 8, 8)
    alone = build_network(cfgs[0], 1, shape)
    models = [build_network(c, 1, shape) for c in cfgs]
    batch = SeedBatch(cfgs, models, 100)
    opts = [make_optimizer(c, m) for c, m in zip(cfgs, models)]
    scalers = [torch.amp.GradScaler("cpu", init_scale=2.0**8) for _ in cfgs]
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(2, 20, *shape, generator=g), torch.randint(0, 10, (2, 20), generator=g)
    x[1, 0, 0, 0, 0] = float("inf")
    before = {k: v.clone() for k, v in models[1].state_dict().items()}
    batched_train_step(batch, opts, scalers, x, y)
    ref_scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8)
    train_step(cfgs[0], alone, make_optimizer(cfgs[0], alone), ref_scaler, x[0], y[0], 100)
    assert scalers[1].get_scale() == 2.0**7 and scalers[0].get_scale() == ref_scaler.get_scale() == 2.0**8
    assert all(torch.equal(before[k], v) for k, v in models[1].state_dict().items())  # seed 1 skipped
    assert _max_diff(alone.state_dict(), batch.state_dict(0)) < 1e-6  # seed 0 stepped as alone


def test_which_runs_share_a_batch(tiny_net):
    runs = [tiny_net(seed=s, batch_seeds=3) for s in range(4)] + [tiny_net(seed=0, lam=0.1, batch_seeds=3)]
    assert group_runs(runs) == [[0, 1, 2], [3], [4]]  # lam is read by the loss: another batch
    assert group_runs([tiny_net(seed=s) for s in range(2)]) == [[0], [1]]  # auto on the CPU: alone
    assert seeds_per_batch(tiny_net(batch_seeds="off")) == 1
    assert seeds_per_batch(tiny_net(batch_seeds="on")) is None
    assert tiny_net(batch_seeds=True).batch_seeds == "on"  # YAML reads a bare on as true
    assert seeds_per_batch(tiny_net(device="cuda", batch_seeds="auto")) is None


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_the_graph_safe_step_takes_the_plain_batched_step(tiny_net, optimizer):
    """The step that CUDA captures (static buffers, no host sync), run eagerly on the CPU, equals the plain
    batched step bit for bit, also across a learning-rate change (which re-captures on CUDA)."""
    from deepcollapse.nets.graph_step import GraphStep

    cfgs = [tiny_net(**RESNET, seed=s, optimizer=optimizer) for s in range(2)]
    shape = (1, 8, 8)

    def setup():
        models = [build_network(c, 1, shape).to(memory_format=torch.contiguous_format) for c in cfgs]
        batch = SeedBatch(cfgs, models, 60)
        return batch, [make_optimizer(c, m) for c, m in zip(cfgs, models)]

    (b1, o1), (b2, o2) = setup(), setup()
    scalers = [make_grad_scaler(c, torch.device("cpu")) for c in cfgs]
    g = torch.Generator().manual_seed(1)
    batches = [
        (torch.randn(2, 20, *shape, generator=g), torch.randint(0, 10, (2, 20), generator=g))
        for _ in range(4)
    ]
    graph = GraphStep(b2, o2, *batches[0])
    assert not graph.capture  # on the CPU the body runs eagerly
    for i, (x, y) in enumerate(batches):
        if i == 2:
            for opt in o1 + o2:
                opt.param_groups[0]["lr"] = 0.01
        plain = batched_train_step(b1, o1, scalers, x, y)
        assert torch.equal(graph(x, y), plain)
    for s in range(2):
        a, b = b1.state_dict(s), b2.state_dict(s)
        assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_net_sweep_trains_its_seeds_and_lr_points_as_one_batch_each_in_its_folder(tmp_path):
    from deepcollapse.runs.executors import task_units
    from deepcollapse.runs.sweep import SweepSpec, run_sweep

    base = {"dataset": "digits", "layers": 3, "width": 12, "epochs": 1, "device": "cpu", "threads": 1, **MLP}
    spec = SweepSpec(base=base, grid={"lr": [0.05, 0.02]}, seeds=[0, 1], kind="net", name="b")
    assert [len(u) for u in task_units(spec.tasks(tmp_path))] == [4]
    result = run_sweep(spec, tmp_path, workers=1)
    assert [s["batched"] for s in result.statuses] == [4, 4, 4, 4]
    assert len(result.runs) == 4 and sorted(result.runs["seed"]) == [0, 0, 1, 1]
    assert all((tmp_path / "points" / f"lr={lr}" / f"seed_{s}" / "summary.json").is_file()
               for lr in (0.05, 0.02) for s in (0, 1))  # fmt: skip
    again = SweepSpec(base={**base, "batch_seeds": 2}, grid=spec.grid, seeds=[0, 1], kind="net")
    assert [r["status"] for r in run_sweep(again, tmp_path, workers=1).statuses] == ["skipped"] * 4


def test_a_seed_that_diverges_stops_as_alone_and_the_others_go_on(tmp_path, tiny_net):
    configs = [tiny_net(**MLP, seed=0, epochs=3), tiny_net(**MLP, seed=1, epochs=3, lr=1e6)]  # one batch
    batched = train_nets(configs, [tmp_path / "b0", tmp_path / "b1"], progress=False)
    alone = train_net(configs[1], tmp_path / "alone", progress=False)
    assert alone.diverged and batched[1].diverged and batched[1].epochs_done == alone.epochs_done < 3
    # the same files: no checkpoint of a non-finite epoch (here none at all: it diverged in epoch 1)
    assert sorted(os.listdir(tmp_path / "b1")) == sorted(os.listdir(tmp_path / "alone"))
    assert not batched[0].diverged and batched[0].epochs_done == 3
