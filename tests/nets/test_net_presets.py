"""Paper presets for the end-to-end figures: full settings as in the papers, smoke variants run in seconds."""

from __future__ import annotations

import pytest
import torch

from deepcollapse import ConfigError
from deepcollapse.experiments.net_presets import NET_PRESETS, list_net_presets, net_preset
from deepcollapse.nets.train import train_net

torch.set_num_threads(1)


def test_paper_settings():
    fig2 = net_preset("net-2024-fig2-bottom")
    assert (fig2.dataset, fig2.layers, fig2.width, fig2.reg) == ("cifar10", 4, 64, "dufm")
    assert (fig2.lam, fig2.lam_h, fig2.lr, fig2.lam_h_scale) == (0.005, 5e-6, 0.05, "dataset")
    c10, mn = net_preset("net-2024-fig4-cifar10"), net_preset("net-2024-fig4-mnist")
    assert (c10.layers, c10.reg, c10.lam, c10.lr) == (5, "standard", 0.08, 0.005)
    assert (mn.dataset, mn.lam, mn.lr) == ("mnist", 0.04, 0.01)
    f1 = net_preset("net-2023-fig1")
    assert (f1.classes, f1.layers, f1.width, f1.freeze_head) == ([0, 1], 3, 64, True)
    assert (f1.batch_size, f1.lr) == (128, 1e-5)
    names = [p["name"] for p in list_net_presets()]
    assert names == list(NET_PRESETS) and len(names) == 7
    assert list_net_presets()[3]["sweep"]["lam"][0] == 2.0**-10
    with pytest.raises(ConfigError, match="name == 'fig99'"):
        net_preset("fig99")


@pytest.mark.parametrize("name", list(NET_PRESETS))
def test_smoke_variants_are_small_digits_runs(name):
    c = net_preset(name, smoke=True)
    assert c.dataset == "digits" and c.epochs <= 10 and c.n <= 40
    assert c.reg == net_preset(name).reg and c.layers == net_preset(name).layers


def test_smoke_run_2024_fig4_mnist(tmp_path):
    summary = train_net(net_preset("net-2024-fig4-mnist", smoke=True), tmp_path / "r", progress=False)
    assert summary["epochs_done"] == 10 and len(summary["layers"]) == 9  # H1 + 4 × (pre, post)
    assert summary["train_acc"] >= 0.1 + 0.15  # above chance (K = 10)


@pytest.mark.check
@pytest.mark.parametrize("name", [n for n in NET_PRESETS if n != "net-2024-fig4-mnist"])
def test_every_smoke_preset_learns(name, tmp_path):
    """A smoke run that ends at chance accuracy checks nothing: each one must end clearly above 1/K."""
    cfg = net_preset(name, smoke=True).replace(eval_every=0)
    summary = train_net(cfg, tmp_path / "r", progress=False)
    chance = 1.0 / cfg.num_classes
    assert summary["train_acc"] >= chance + 0.15, (name, summary["train_acc"])
