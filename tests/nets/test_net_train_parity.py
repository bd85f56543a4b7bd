"""``net train`` against a plain PyTorch training loop written out here (issue 43, point 6).

The loop below is the textbook one -- ``torch.optim.SGD`` with momentum, the decay as torch's own
``weight_decay`` (coupled) or as ``p ← p (1 − lr·λ)`` before the step (decoupled, SGDW), the MSE as
``0.5 · Σ_k`` or ``F.mse_loss`` -- and shares nothing with the package's step but the initial weights and the
data (``build_network`` and ``load_net_data``), the data order being the documented one
(``randperm`` seeded with ``seed · 1_000_003 + epoch``).  After 2 epochs of 3 steps each the parameters agree
with the run folder's checkpoint to float32 rounding.
"""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from deepcollapse.nets.build import build_network, load_net_data
from deepcollapse.nets.checkpoint import load_run_checkpoint
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.train import train_net

torch.set_num_threads(1)

BASE = dict(
    dataset="digits",
    classes=[0, 1, 2],
    backbone="resnet8",
    channels_last=False,
    layers=3,
    width=8,
    n=12,
    n_test=2,
    batch_size=12,  # 36 images: 3 steps an epoch
    epochs=2,
    lr=0.05,
    lr_schedule="constant",
    momentum=0.9,
    reg="standard",
    lam=0.04,
    eval_every=0,
    seed=3,
    device="cpu",
    threads=1,
)


def _plain_loop(cfg: NetConfig) -> dict[str, torch.Tensor]:
    data = load_net_data(cfg)
    model = build_network(cfg, data.in_channels, tuple(data.train.images.shape[1:]))
    model.train()
    decayed = [p for p in model.parameters() if cfg.wd_scope == "all" or p.ndim >= 2]
    ids = {id(p) for p in decayed}
    others = [p for p in model.parameters() if id(p) not in ids]
    coupled = cfg.lam if cfg.wd_mode == "coupled" else 0.0
    groups = [{"params": decayed, "weight_decay": coupled}, {"params": others, "weight_decay": 0.0}]
    opt = torch.optim.SGD([g for g in groups if g["params"]], lr=cfg.lr, momentum=cfg.momentum)
    N = len(data.train)
    for epoch in range(1, cfg.epochs + 1):
        order = torch.randperm(N, generator=torch.Generator().manual_seed(cfg.seed * 1_000_003 + epoch))
        for start in range(0, N, cfg.batch_size):
            x, y = data.train.batch(order[start : start + cfg.batch_size])
            out, _ = model(x)  # (B, K)
            target = F.one_hot(y, out.shape[1]).float()
            if cfg.mse_reduction == "mean":
                loss = F.mse_loss(out, target)
            else:
                loss = 0.5 * (out - target).pow(2).sum(dim=1).mean()
            opt.zero_grad()
            loss.backward()
            if cfg.wd_mode == "decoupled":
                with torch.no_grad():
                    for p in decayed:
                        p.mul_(1.0 - cfg.lr * cfg.lam)
            opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize(
    "convention",
    [
        {},
        {"wd_scope": "weights"},
        {"wd_mode": "decoupled"},
        {"mse_reduction": "mean"},
        {"wd_scope": "weights", "wd_mode": "decoupled", "mse_reduction": "mean"},
    ],
    ids=["coupled-all", "weights-only", "decoupled", "mse-mean", "all-three"],
)
def test_net_train_equals_a_plain_torch_loop(tmp_path, convention):
    cfg = NetConfig(**{**BASE, **convention})
    train_net(cfg, tmp_path / "run", progress=False)
    ours = load_run_checkpoint(tmp_path / "run" / "checkpoint.pt", "cpu")["model"]
    plain = _plain_loop(cfg)
    assert set(ours) == set(plain)
    moved = 0
    init = build_network(cfg, 1, (1, 8, 8)).state_dict()
    for name, value in plain.items():
        if not value.is_floating_point():
            assert torch.equal(ours[name], value), name  # BatchNorm's num_batches_tracked
            continue
        torch.testing.assert_close(ours[name], value, rtol=2e-5, atol=2e-6, msg=name)
        moved += int(not torch.allclose(value, init[name]))
    assert moved > 10  # the parameters did move: the comparison is not of two initialisations
