"""The CPU default of the network step (issue 18): ``channels_last="auto"`` is channels-last on the CPU,
reproducible per seed, and equal to the NCHW step up to float32 rounding."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest
import torch

from deepcollapse import ConfigError
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.train import (
    build_network,
    channels_last_on,
    load_net_data,
    make_grad_scaler,
    train_step,
)

torch.set_num_threads(1)

STEPS = 4


def _losses(cfg: NetConfig, steps: int = STEPS) -> list[float]:
    """Losses of ``steps`` SGD-momentum steps of a fresh network of ``cfg`` on the first batches of digits."""
    data = load_net_data(cfg)
    model = build_network(cfg, data.in_channels)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9)
    scaler = make_grad_scaler(cfg, torch.device("cpu"))
    out = []
    for i in range(steps):
        x, y = data.train.batch(slice(20 * i, 20 * i + 20))
        out.append(float(train_step(cfg, model, opt, scaler, x, y, len(data.train))))
    return out


def test_channels_last_auto_means_the_cpu_only_and_old_values_still_read():
    cfg = NetConfig()
    assert cfg.channels_last == "auto"
    assert channels_last_on(cfg, "cpu") and not channels_last_on(cfg, torch.device("cuda"))
    assert not channels_last_on(NetConfig(dataset="mnist1d", backbone="mlp"), "cpu")
    for given, meant in ((True, True), (False, False), ("true", True), ("false", False), ("AUTO", "auto")):
        assert NetConfig(channels_last=given).channels_last == meant
    assert channels_last_on(NetConfig(channels_last=True), "cuda")
    assert not channels_last_on(NetConfig(channels_last=False), "cpu")
    old = NetConfig.from_dict({**NetConfig().to_dict(), "channels_last": False})  # an older config.yaml
    assert old.channels_last is False and NetConfig.from_yaml(old.to_yaml()).channels_last is False
    with pytest.raises(ConfigError, match="channels_last == 'yes', must be auto, true or false"):
        NetConfig(channels_last="yes")


def test_channels_last_option_keeps_the_bare_flag():
    from deepcollapse.cli import build_parser
    from deepcollapse.cli.options import config_values

    parser = build_parser()
    for argv, meant in (([], "auto"), (["--channels-last"], True), (["--channels-last", "false"], False)):
        args = parser.parse_args(["net", "train", "--out", "x", *argv])
        assert NetConfig(**config_values(args, NetConfig)).channels_last == meant


def test_cpu_default_trains_reproducibly_per_seed(tiny_net):
    cfg = tiny_net(n=10, n_test=3, batch_size=20)
    assert channels_last_on(cfg, "cpu")  # the default under test is channels-last
    first, second = _losses(cfg), _losses(cfg)
    assert first == second  # bit-identical, same seed
    assert _losses(cfg.replace(seed=1)) != first


def test_cpu_default_equals_the_nchw_step_up_to_float32_rounding(tiny_net):
    """Channels-last reorders the convolution and BatchNorm sums, so the losses are not bit-identical to
    NCHW's; each step's loss differs by float32 rounding only.  Bound: relative 1e-5 after 4 momentum steps,
    ~100 float32 ulps (2^-23 ≈ 1.2e-7) -- sums of ~10^3 terms each reordered, grown over 4 steps (measured
    on ResNet20 at batch 32: ≤ 1.4e-6 after 4 steps)."""
    cfg = tiny_net(n=10, n_test=3, batch_size=20)
    nhwc, nchw = _losses(cfg), _losses(cfg.replace(channels_last=False))
    assert nhwc == pytest.approx(nchw, rel=1e-5)
    assert nchw[-1] < nchw[0]  # the steps really trained (the comparison is not between constants)


_FRESH = """
import json, sys
import torch
torch.set_num_threads(1)
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.train import build_network, load_net_data, make_grad_scaler, train_step
STEPS = {steps}
{source}
print(json.dumps(_losses(NetConfig(**json.loads(sys.argv[1])))))
"""


@pytest.mark.check
def test_cpu_default_is_reproducible_in_a_fresh_process(tiny_net):
    cfg = tiny_net(n=10, n_test=3, batch_size=20)
    script = _FRESH.format(steps=STEPS, source=inspect.getsource(_losses))
    out = subprocess.run(
        [sys.executable, "-c", script, json.dumps(cfg.to_dict())], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == _losses(cfg)
