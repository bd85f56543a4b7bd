"""The network loop under SIGTERM / SIGINT: it stops with ``Interrupted`` naming the checkpoint that is really
on disk and the command that resumes, the resumed run equals an uninterrupted one, and the torch thread count
is restored however the run ends."""

from __future__ import annotations

import os
import signal

import pytest
import torch

import deepcollapse.nets.train as net_train
from deepcollapse._core.checks import Interrupted
from deepcollapse.nets.train import resume_net, train_net

SMALL = dict(backbone="mlp", backbone_width=16, n=12, n_test=4, batch_size=24, eval_every=1, epochs=2)


@pytest.fixture
def two_threads():
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(old)


def test_threads_are_restored_after_a_run(tmp_path, tiny_net, two_threads):
    train_net(tiny_net(**SMALL, threads=1), tmp_path / "run", progress=False)
    assert torch.get_num_threads() == 2


def test_sigterm_after_an_epoch_writes_its_checkpoint_and_resume_is_exact(tmp_path, tiny_net, two_threads):
    cfg = tiny_net(**SMALL, threads=1)
    train_net(cfg, tmp_path / "full", progress=False)
    cut = tmp_path / "cut"

    def stop(epoch, record):
        if epoch == 1:
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(Interrupted) as info:
        train_net(cfg, cut, progress=False, callback=stop)
    assert info.value.signum == signal.SIGTERM and info.value.exit_code == 143
    assert f"after epoch 1; checkpoint written to {cut}" in info.value.message
    assert info.value.resume == f"deepcollapse net resume {cut}"
    assert torch.get_num_threads() == 2  # restored on the way out too
    assert torch.load(cut / "checkpoint.pt", weights_only=False)["state"]["epoch"] == 1
    assert not (cut / "summary.json").exists()
    resume_net(cut, progress=False)
    a = torch.load(tmp_path / "full" / "checkpoint.pt", weights_only=False)["model"]
    b = torch.load(cut / "checkpoint.pt", weights_only=False)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("epoch", [1, 2])
def test_a_signal_mid_epoch_drops_the_epoch_and_says_which_checkpoint_is_kept(
    tmp_path, tiny_net, monkeypatch, epoch
):
    cfg = tiny_net(**SMALL, threads=1)
    real = net_train.train_step
    calls = {"n": 0}
    batches = 5  # 10 classes x 12 samples, batch 24

    def step(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == (epoch - 1) * batches + 2:  # the second batch of ``epoch``
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(net_train, "train_step", step)
    with pytest.raises(Interrupted) as info:
        train_net(cfg, tmp_path, progress=False)
    assert calls["n"] == (epoch - 1) * batches + 2  # stopped after that batch
    assert info.value.signum == signal.SIGINT and info.value.resume == f"deepcollapse net resume {tmp_path}"
    assert f"during epoch {epoch}" in info.value.message
    if epoch == 1:
        assert "no checkpoint was written yet" in info.value.message
        assert not (tmp_path / "checkpoint.pt").exists()
    else:
        assert f"the checkpoint of epoch 1 in {tmp_path} is kept" in info.value.message
        assert torch.load(tmp_path / "checkpoint.pt", weights_only=False)["state"]["epoch"] == 1


def test_ctrl_c_in_epoch_1_promises_no_checkpoint_and_its_resume_command_starts_from_epoch_0(
    tmp_path, tiny_net, monkeypatch, capsys, caplog
):
    """Through the command line: the message says no checkpoint exists, the printed command resumes, and the
    resumed run equals an independent fresh run of the same config (weights and every metrics record)."""
    import json
    import shlex

    from deepcollapse.cli import main

    cfg = tiny_net(**{**SMALL, "epochs": 1}, threads=1)
    fresh = tmp_path / "fresh"
    train_net(cfg, fresh, progress=False)  # the reference, run before any patching
    cfg.to_yaml(tmp_path / "cfg.yaml")
    real = net_train.train_step
    calls = {"n": 0}

    def step(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:  # the second batch of epoch 1
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(net_train, "train_step", step)
    cut = tmp_path / "cut"
    code = main(["net", "train", "--config", str(tmp_path / "cfg.yaml"), "--out", str(cut), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 130 and not (cut / "checkpoint.pt").exists()
    assert "no checkpoint was written yet" in err and "starts the run again from epoch 0" in err
    assert "is kept" not in err and "checkpoint written" not in err  # no promise of a checkpoint
    resume = [line for line in err.splitlines() if line.startswith("deepcollapse: resume with: ")]
    assert resume == [f"deepcollapse: resume with: deepcollapse net resume {cut}"]
    monkeypatch.setattr(net_train, "train_step", real)
    with caplog.at_level("WARNING", logger="deepcollapse"):
        assert main(shlex.split(resume[0].split(": ", 2)[2])[1:] + ["--no-progress"]) == 0
    said = [r.getMessage() for r in caplog.records if "no checkpoint.pt" in r.getMessage()]
    assert len(said) == 1 and "starting from epoch 0 with its config.yaml" in said[0]
    a = torch.load(fresh / "checkpoint.pt", weights_only=False)
    b = torch.load(cut / "checkpoint.pt", weights_only=False)
    assert a["state"]["epoch"] == b["state"]["epoch"] == cfg.epochs
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])

    def records(folder):
        drop = {"epoch_time", "elapsed", "time"}  # wall-clock fields differ between any two runs
        rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
        return [{k: v for k, v in r.items() if k not in drop} for r in rows]

    assert records(cut) == records(fresh) and [r["epoch"] for r in records(cut)] == list(
        range(cfg.epochs + 1)
    )
