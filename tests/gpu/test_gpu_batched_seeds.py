"""Batched seeds on the accelerator (run by `make gpu-check` with DEEPCOLLAPSE_TEST_DEVICE=cuda): S seeds
stepped as one batched network on the device equal the same seeds stepped alone on the CPU, and the step
captured in a CUDA graph equals the eager batched step.  The fast tier (no DEEPCOLLAPSE_TEST_DEVICE) skips
this module: tests/nets/test_net_batched_seeds.py covers the same logic on the CPU; gpu-check's dry run
(``--device cpu``, DEEPCOLLAPSE_TEST_DEVICE=cpu) runs it on the CPU, so its cost counts in the parity step's
limit there too.  Tolerances are float32's
over 10 steps of SGD with momentum, rtol 1e-3, atol 1e-4 (cuDNN's grouped convolutions add in another order
than oneDNN's; on the CPU the largest difference was 2e-5); TF32 is off."""

from __future__ import annotations

import os

import pytest
import torch

from deepcollapse.nets.build import build_network, load_net_data, make_grad_scaler, make_optimizer
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.seed_batch import SeedBatch, batched_train_step
from deepcollapse.nets.step import train_step

DEVICE = os.environ.get("DEEPCOLLAPSE_TEST_DEVICE")
if DEVICE is None:
    pytest.skip("make gpu-check only (tests/nets covers the CPU)", allow_module_level=True)
if DEVICE.startswith("cuda"):
    if not torch.cuda.is_available():
        pytest.skip("DEEPCOLLAPSE_TEST_DEVICE=cuda but no CUDA device", allow_module_level=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

CFG = dict(dataset="digits", backbone="resnet8", layers=3, width=12, n=10, batch_size=20, reg="standard",
           lam=0.01, lr=0.05, channels_last=False, device="cpu")  # fmt: skip
STEPS = 10


def _batches(datas, seed=0):
    gen = torch.Generator().manual_seed(seed)
    N = len(datas[0].train)
    for _ in range(STEPS):
        idx = [torch.randperm(N, generator=gen)[:20] for _ in datas]
        xs, ys = zip(*(d.train.batch(i) for d, i in zip(datas, idx)))
        yield torch.stack(xs), torch.stack(ys)  # (S, B, C, H, W), (S, B)


def _seed_batch(cfgs, device):
    models = [build_network(c, 1, (1, 8, 8), device).to(device).to(memory_format=torch.contiguous_format)
              for c in cfgs]  # fmt: skip
    return SeedBatch(cfgs, models, 100), [make_optimizer(c, m) for c, m in zip(cfgs, models)]


def test_batched_seeds_on_the_device_equal_the_seeds_alone_on_the_cpu():
    cfgs = [NetConfig(**CFG, seed=s) for s in range(3)]
    datas = [load_net_data(c) for c in cfgs]
    cpu = torch.device("cpu")
    alone = [build_network(c, 1, (1, 8, 8)) for c in cfgs]
    opts = [make_optimizer(c, m) for c, m in zip(cfgs, alone)]
    batch, bopts = _seed_batch(cfgs, torch.device(DEVICE))
    scalers = [make_grad_scaler(c, torch.device(DEVICE)) for c in cfgs]
    for x, y in _batches(datas):
        for s, (c, m, o) in enumerate(zip(cfgs, alone, opts)):
            train_step(c, m, o, make_grad_scaler(c, cpu), x[s], y[s], 100)
        batched_train_step(batch, bopts, scalers, x.to(DEVICE), y.to(DEVICE))
    for s, m in enumerate(alone):
        ref, got = m.state_dict(), batch.state_dict(s)
        for k in ref:
            torch.testing.assert_close(
                got[k].cpu(), ref[k], rtol=1e-3, atol=1e-4, msg=lambda m, k=k: f"{k}: {m}"
            )


@pytest.mark.skipif(not DEVICE.startswith("cuda"), reason="CUDA graphs")
def test_the_captured_step_equals_the_eager_batched_step():
    from deepcollapse.nets.graph_step import GraphStep

    cfgs = [NetConfig(**CFG, seed=s) for s in range(2)]
    datas = [load_net_data(c) for c in cfgs]
    dev = torch.device(DEVICE)
    (b1, o1), (b2, o2) = _seed_batch(cfgs, dev), _seed_batch(cfgs, dev)
    scalers = [make_grad_scaler(c, dev) for c in cfgs]
    graph = None
    for x, y in _batches(datas):
        x, y = x.to(dev), y.to(dev)
        plain = batched_train_step(b1, o1, scalers, x, y)
        graph = graph or GraphStep(b2, o2, x, y)
        torch.testing.assert_close(graph(x, y).clone(), plain, rtol=1e-4, atol=1e-6)
    assert graph is not None and graph.capture and graph.graph is not None  # replayed, not eager
    for s in range(2):
        ref, got = b1.state_dict(s), b2.state_dict(s)
        for k in ref:
            torch.testing.assert_close(got[k], ref[k], rtol=1e-4, atol=1e-5, msg=k)
