"""The training conventions of issue 29 as NetConfig options, each against an independent computation.

``wd_scope`` (decay on BatchNorm parameters and biases or not), ``wd_mode`` (coupled L2 in the loss or
decoupled decay in the optimiser step), ``mse_reduction`` (0.5 · sum over classes or torch's MSELoss mean) and
``head_init_scale``; the defaults reproduce the step written out as it was before the options, bit for bit.
"""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from deepcollapse import ConfigError
from deepcollapse.cli import main
from deepcollapse.nets.build import SGDW, build_network, load_net_data, make_grad_scaler, make_optimizer
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.head import MLPHead
from deepcollapse.nets.mlp_backbone import MLPBackbone
from deepcollapse.nets.step import fit_loss, regularisation, train_step
from deepcollapse.nets.train import resume_net, train_net

torch.set_num_threads(1)

MLP = dict(
    dataset="digits",
    backbone="mlp",
    backbone_width=32,
    layers=3,
    width=12,
    n=12,
    n_test=2,
    batch_size=24,
    lr=0.05,
    lr_schedule="constant",
    device="cpu",
    threads=1,
)
RESNET = {**MLP, "backbone": "resnet8", "channels_last": False}


def _setup(**overrides):
    cfg = NetConfig(**{**MLP, **overrides})
    data = load_net_data(cfg)
    model = build_network(cfg, data.in_channels, tuple(data.train.images.shape[1:]))
    x, y = data.train.batch(slice(0, 24))
    return cfg, data, model, x, y


def _params(model):
    return [p.detach().clone() for p in model.parameters()]


def _grads(model, loss):
    model.zero_grad(set_to_none=True)
    loss.backward()
    return [p.grad.detach().clone() for p in model.parameters()]


# -- defaults: the step as it was written before the options ------------------------------------------------


def _step_as_before(cfg, model, opt, x, y):
    """The network step before issue 29, written out: 0.5 · Σ_k MSE averaged over the batch, the L2 terms in
    the loss (dufm: λ_H1 on H1, λ on the head; standard: λ on every parameter), plain torch SGD."""
    out, feats = model(x)
    target = F.one_hot(y, out.shape[1]).to(out.dtype)
    fit = 0.5 * (out - target).pow(2).sum(dim=1).mean()
    zero = feats["H1"].new_zeros(())
    if cfg.reg == "dufm":
        reg_h1 = 0.5 * 1.0 * cfg.lam_h * feats["H1"].pow(2).sum(dim=1).mean()
        reg_w = 0.5 * cfg.lam * sum((W.pow(2).sum() for W in model.head_weights()), zero)
    else:
        reg_h1, reg_w = zero, 0.5 * cfg.lam * sum((p.pow(2).sum() for p in model.parameters()), zero)
    loss = fit + reg_h1 + reg_w
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


@pytest.mark.parametrize("reg", ["dufm", "standard"])
def test_defaults_are_the_step_before_the_options_bit_for_bit(reg):
    cfg, data, model, x, y = _setup(reg=reg, lam=0.05, lam_h=0.01, momentum=0.9)
    assert (cfg.wd_scope, cfg.wd_mode, cfg.mse_reduction, cfg.head_init_scale) == (
        "all",
        "coupled",
        "sum",
        1.0,
    )
    # the network: backbone then head drawn from the seed, as before
    torch.manual_seed(cfg.seed)
    backbone = MLPBackbone(tuple(data.train.images.shape[1:]), cfg.backbone_width, cfg.backbone_depth)
    head = MLPHead(backbone.out_features, cfg.width, cfg.layers, cfg.num_classes)
    for a, b in zip([*backbone.parameters(), *head.parameters()], model.parameters()):
        assert torch.equal(a, b)
    ref = copy.deepcopy(model)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=cfg.lr, momentum=cfg.momentum)
    opt = make_optimizer(cfg, model)
    assert type(opt) is torch.optim.SGD
    scaler = make_grad_scaler(cfg, torch.device("cpu"))
    for _ in range(3):
        _step_as_before(cfg, ref, opt_ref, x, y)
        train_step(cfg, model, opt, scaler, x, y, len(data.train))
    for a, b in zip(ref.parameters(), model.parameters()):
        assert torch.equal(a, b)


# -- wd_scope ------------------------------------------------------------------------------------------------


def test_wd_scope_weights_leaves_batchnorm_and_biases_undecayed():
    cfg, data, model, x, y = _setup(**RESNET, reg="standard", lam=0.3, wd_scope="weights")
    names = [n for n, _ in model.named_parameters()]
    bn = [i for i, n in enumerate(names) if ".bn" in n or n.startswith("backbone.bn")]
    assert bn and all(model.get_parameter(names[i]).ndim == 1 for i in bn)

    def loss_of(c):
        out, feats = model(x)
        _, reg_w = regularisation(c, model, feats["H1"])
        return fit_loss(c, out, y) + reg_w

    g_fit = _grads(model, loss_of(cfg.replace(reg="none")))
    g_weights = _grads(model, loss_of(cfg))
    g_all = _grads(model, loss_of(cfg.replace(wd_scope="all")))
    theta = _params(model)
    for i, p in enumerate(theta):
        if p.ndim >= 2:  # convolutions and linear weights: the decay term 0.3 · θ in both scopes
            torch.testing.assert_close(g_weights[i], g_fit[i] + 0.3 * p, rtol=1e-5, atol=1e-6)
        else:  # BatchNorm scales and shifts: no decay term with scope "weights", 0.3 · θ with "all"
            assert torch.equal(g_weights[i], g_fit[i])
            torch.testing.assert_close(g_all[i], g_fit[i] + 0.3 * p, rtol=1e-5, atol=1e-6)
    # the objective's term, by hand over the parameters with >= 2 dimensions
    with torch.no_grad():
        _, reg_w = regularisation(cfg, model, model(x)[1]["H1"])
    ref = 0.5 * 0.3 * sum(float((p.double() ** 2).sum()) for p in theta if p.ndim >= 2)
    assert float(reg_w) == pytest.approx(ref, rel=1e-5)


def test_wd_scope_weights_leaves_the_mlp_backbones_biases_undecayed():
    cfg, _, model, x, y = _setup(reg="standard", lam=0.3, wd_scope="weights")
    with torch.no_grad():
        _, reg_w = regularisation(cfg, model, model(x)[1]["H1"])
    weights = [p for n, p in model.named_parameters() if not n.endswith("bias")]
    assert any(n.endswith("bias") for n, _ in model.named_parameters())
    ref = 0.5 * 0.3 * sum(float((p.detach().double() ** 2).sum()) for p in weights)
    assert float(reg_w) == pytest.approx(ref, rel=1e-5)


# -- wd_mode -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reg", ["standard", "dufm"])
def test_decoupled_sgd_two_steps_by_hand(reg):
    lr, lam, mu = 0.05, 0.2, 0.9
    cfg, data, model, x, y = _setup(reg=reg, lam=lam, lam_h=0.01, momentum=mu, wd_mode="decoupled")
    decayed = {id(p) for p in (model.head_weights() if reg == "dufm" else model.parameters())}
    mask = [id(p) in decayed for p in model.parameters()]
    ref = copy.deepcopy(model)

    def loss_grad(theta):  # the gradient of the loss without the weight terms (λ_H1's stays: features)
        with torch.no_grad():
            for p, t in zip(ref.parameters(), theta):
                p.copy_(t)
        out, feats = ref(x)
        loss = fit_loss(cfg, out, y)
        if reg == "dufm":
            loss = loss + 0.5 * 0.01 * feats["H1"].pow(2).sum(dim=1).mean()
        return _grads(ref, loss)

    # SGDW: θ_{t+1} = θ_t − lr·λ·θ_t − lr·v_{t+1},  v_{t+1} = μ v_t + g_t  (decayed parameters only)
    t0 = _params(model)
    g0 = loss_grad(t0)
    t1 = [t - lr * lam * t * m - lr * g for t, g, m in zip(t0, g0, mask)]
    g1 = loss_grad(t1)
    t2 = [t - lr * lam * t * m - lr * (mu * a + b) for t, a, b, m in zip(t1, g0, g1, mask)]

    opt = make_optimizer(cfg, model)
    assert isinstance(opt, SGDW)
    scaler = make_grad_scaler(cfg, torch.device("cpu"))
    train_step(cfg, model, opt, scaler, x, y, len(data.train))
    for a, b in zip(model.parameters(), t1):
        torch.testing.assert_close(a.detach(), b, rtol=1e-5, atol=1e-7)
    train_step(cfg, model, opt, scaler, x, y, len(data.train))
    for a, b in zip(model.parameters(), t2):
        torch.testing.assert_close(a.detach(), b, rtol=1e-5, atol=1e-7)


def test_decoupled_loss_has_no_weight_term_but_the_objective_does():
    cfg, _, model, x, y = _setup(reg="standard", lam=0.2, wd_mode="decoupled")
    with torch.no_grad():
        h1 = model(x)[1]["H1"]
        _, in_loss = regularisation(cfg, model, h1)
        _, objective = regularisation(cfg, model, h1, objective=True)
    assert float(in_loss) == 0.0
    ref = 0.5 * 0.2 * sum(float((p.detach().double() ** 2).sum()) for p in model.parameters())
    assert float(objective) == pytest.approx(ref, rel=1e-5)


def test_decoupled_adam_is_torch_adamw():
    cfg, data, model, x, y = _setup(reg="standard", lam=0.2, optimizer="adam", lr=0.01, wd_mode="decoupled")
    ref = copy.deepcopy(model)
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=0.01, weight_decay=0.2)
    opt = make_optimizer(cfg, model)
    scaler = make_grad_scaler(cfg, torch.device("cpu"))
    for _ in range(2):
        out, _ = ref(x)
        opt_ref.zero_grad()
        fit_loss(cfg, out, y).backward()
        opt_ref.step()
        train_step(cfg, model, opt, scaler, x, y, len(data.train))
    for a, b in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


def test_decoupled_run_resumes_bit_identical(tmp_path):
    cfg = NetConfig(**{**MLP, "reg": "standard", "lam": 0.05, "wd_mode": "decoupled", "epochs": 2})
    train_net(cfg, tmp_path / "full", progress=False)
    train_net(cfg.replace(epochs=1), tmp_path / "half", progress=False)
    resume_net(tmp_path / "half", epochs=2, progress=False)
    a = torch.load(tmp_path / "full" / "checkpoint.pt", weights_only=False)["model"]
    b = torch.load(tmp_path / "half" / "checkpoint.pt", weights_only=False)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


# -- mse_reduction -------------------------------------------------------------------------------------------


def test_mse_mean_is_torch_mseloss():
    cfg, _, model, x, y = _setup(mse_reduction="mean")
    with torch.no_grad():
        out, _ = model(x)
    onehot = torch.eye(10)[y]
    assert torch.equal(fit_loss(cfg, out, y), torch.nn.MSELoss()(out, onehot))
    o, t = out.double().numpy(), onehot.double().numpy()
    assert float(fit_loss(cfg, out, y)) == pytest.approx(np.mean((o - t) ** 2), rel=1e-6)
    summed = float(fit_loss(cfg.replace(mse_reduction="sum"), out, y))
    assert float(fit_loss(cfg, out, y)) == pytest.approx(summed * 2 / 10, rel=1e-6)


# -- head_init_scale -----------------------------------------------------------------------------------------


def test_head_init_scale_multiplies_the_default_init():
    cfg, data, base, _, _ = _setup(width=64)
    shape = tuple(data.train.images.shape[1:])
    scaled = build_network(cfg.replace(head_init_scale=3.0), data.in_channels, shape)
    for a, b in zip(base.backbone.parameters(), scaled.backbone.parameters()):
        assert torch.equal(a, b)
    for W, V in zip(base.head_weights(), scaled.head_weights()):
        assert torch.equal(V, 3.0 * W)
    # W_2 (64 x 64): U(−s/√64, s/√64) has std s/√(3 · 64)
    W2 = scaled.head_weights()[1].detach().double().numpy()
    assert np.std(W2) == pytest.approx(3.0 / np.sqrt(3 * 64), rel=0.05)


# -- names, YAML, bad input ----------------------------------------------------------------------------------


def test_yaml_names_and_round_trip(tmp_path):
    cfg = NetConfig(
        **{
            **MLP,
            "wd_scope": "weights",
            "wd_mode": "decoupled",
            "mse_reduction": "mean",
            "head_init_scale": 0.5,
        }
    )
    text = cfg.to_yaml(tmp_path / "c.yaml")
    for line in ("wd_scope: weights", "wd_mode: decoupled", "mse_reduction: mean", "head_init_scale: 0.5"):
        assert line in text
    assert NetConfig.from_yaml(tmp_path / "c.yaml") == cfg


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"wd_mode": "decopled"},
            "wd_mode == 'decopled': did you mean 'decoupled'? Must be one of 'coupled', 'decoupled'",
        ),
        ({"wd_scope": "bn"}, "wd_scope == 'bn', must be one of 'all', 'weights'"),
        ({"mse_reduction": "avg"}, "mse_reduction == 'avg', must be one of 'sum', 'mean'"),
        ({"head_init_scale": 0.0}, "head_init_scale == 0.0, must be > 0.0"),
        (
            {"head_init_scale": 2.0, "head_init": "somewhere"},
            "head_init_scale == 2.0, must be 1 with head_init",
        ),
    ],
)
def test_bad_conventions_name_the_field(changes, message):
    with pytest.raises(ConfigError) as err:
        NetConfig(**{**MLP, **changes})
    assert message in str(err.value)


@pytest.mark.parametrize(
    "key, value", [("wd_mode", "decoupeld"), ("mse_reduction", "avg"), ("wd_scope", "bn")]
)
def test_cli_refuses_an_unknown_convention_in_one_line(tmp_path, capsys, key, value):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(json.dumps({**MLP, key: value, "epochs": 1}))  # JSON is YAML
    out = tmp_path / "out"
    assert main(["net", "train", "--config", str(cfg), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    option = "--" + key.replace("_", "-")
    # a close match is suggested first (issue 32: "…: did you mean 'decoupled'? Must be one of …")
    shape = rf"deepcollapse: error: {option} == '{value}'(: did you mean '\w+'\? Must|, must) be one of"
    assert len(err) == 1 and re.match(shape, err[0]), err
    assert not out.exists()
    # the same on the command line: argparse names the option, nothing is written
    with pytest.raises(SystemExit) as exit_:
        main(["net", "train", "--dataset", "digits", option, value, "--out", str(out)])
    assert exit_.value.code == 2 and option in capsys.readouterr().err and not out.exists()
