"""A network experiment announces its runtime, estimated from a calibration on its device, before it trains;
``--device`` / ``--batch-seeds`` reach every run; the estimate holds against the measured time (check
tier)."""

from __future__ import annotations

import time

import pytest

from deepcollapse._core.checks import ConfigError
from deepcollapse.experiments.framework import Experiment
from deepcollapse.experiments.net_runtime import estimate_net_runtime
from deepcollapse.nets.config import NetConfig
from deepcollapse.runs.sweep import SweepSpec

BASE = {"dataset": "digits", "backbone": "mlp", "backbone_width": 16, "layers": 3, "width": 12, "n": 10,
        "n_test": 4, "batch_size": 20, "epochs": 1, "threads": 1, "lr_schedule": "constant"}  # fmt: skip


def _experiment(spec: SweepSpec) -> Experiment:
    return Experiment(
        "tiny-net", "test", "-", "a tiny network sweep", "-", "-", "net", lambda ctx: ctx.sweep(spec, "net")
    )


def test_a_network_experiment_announces_its_estimate_first_and_takes_device_and_batch_seeds(tmp_path):
    said: list[str] = []
    spec = SweepSpec(base=BASE, seeds=[0, 1], kind="net", name="tiny")
    settings = tmp_path / "gpu.yaml"  # the settings file of a network experiment; --device wins over it
    settings.write_text("device: cuda\nbatch_seeds: on\n")
    out = tmp_path / "out"
    report = _experiment(spec).run(out, workers=1, config=settings, device="cpu", announce=said.append)
    assert len(said) == 1 and said[0].startswith("tiny-net: estimated runtime ")
    assert "2 runs in 1 trainer calls (1 call of 2 seeds at " in said[0] and "images/s" in said[0]
    for s in (0, 1):
        cfg = NetConfig.from_yaml(out / "net" / "points" / "base" / f"seed_{s}" / "config.yaml")
        assert (cfg.device, cfg.batch_seeds) == ("cpu", "on")
    text = report.read_text()
    assert "Before it started: estimated runtime" in text and "--device cpu --batch-seeds on" in text
    settings.write_text("device: tpu\n")
    with pytest.raises(ConfigError, match=r"gpu.yaml: device == 'tpu': did you mean 'cpu'\? Must be one of"):
        _experiment(spec).run(tmp_path / "bad", config=settings)
    assert not (tmp_path / "bad").exists()


@pytest.mark.check
def test_the_estimate_is_within_a_factor_of_two_of_the_measured_time(tmp_path):
    """The calibration predicts the training time of a run long enough to time (16 epochs of all 1 438
    digits, two seeds, on one thread), not from an assumed FLOP rate."""
    base = {**BASE, "n": None, "n_test": None, "batch_size": 64, "epochs": 16, "eval_every": 8,
            "backbone_width": 64, "width": 32, "device": "cpu"}  # fmt: skip
    spec = SweepSpec(base=base, seeds=[0, 1], kind="net", name="timed")
    tasks = spec.tasks(tmp_path)
    estimate = estimate_net_runtime(tasks, workers=1)
    from deepcollapse.runs.executors import run_tasks

    t0 = time.perf_counter()
    run_tasks(tasks, workers=1)
    measured = time.perf_counter() - t0
    print(f"estimate {estimate.seconds:.3g} s, measured {measured:.3g} s")
    assert 0.5 < estimate.seconds / measured < 2.0, (estimate.text(), measured)
