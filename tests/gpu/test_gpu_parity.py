"""Parity of the accelerator path with the CPU reference (run by `make gpu-check` on cuda).

The device under test is ``DEEPCOLLAPSE_TEST_DEVICE`` (default ``cpu``), so the same logic runs in the default
suite on the CPU (torch engine on the CPU against the numpy engine) and on a GPU box (torch engine on cuda
against the numpy engine on the CPU; one network training step on cuda against the CPU).

Tolerances are float32's: the two engines add the same terms in different orders (BLAS vs cuBLAS/ATen), so
each step differs by a few float32 ulps.  GD amplifies such differences while a run passes near a saddle, by
an amount that depends on the problem: on this small problem (K = 3, n = 2, L = 2, width 6, lr 0.3) the
largest relative loss difference between the torch engine on the CPU and the numpy engine over 2000 steps was
1.2e-5 when the test was written (7e-4 on a K = 4, L = 3 problem with a saddle passage), hence ``rtol =
1e-4``.  TF32 is switched off on cuda for the check.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.trainer import train_dufm
from deepcollapse.nets.train import load_net_data

DEVICE = os.environ.get("DEEPCOLLAPSE_TEST_DEVICE", "cpu")
torch.set_num_threads(1)

if DEVICE.startswith("cuda"):
    if not torch.cuda.is_available():
        pytest.skip("DEEPCOLLAPSE_TEST_DEVICE=cuda but no CUDA device", allow_module_level=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

STEPS = 2000
DUFM = dict(
    classes=3,
    n=2,
    layers=2,
    width=6,
    lam=0.004,
    lr=0.3,
    steps=STEPS,
    runs=4,
    log_every=100,
    checkpoint_every=STEPS,
    dtype="float32",
)


def _losses(folder) -> np.ndarray:
    recs = [json.loads(s) for s in (folder / "metrics.jsonl").read_text().splitlines()]
    recs.sort(key=lambda r: (r["step"], r["run"]))
    return np.array([[r["step"], r["run"], r["loss"]] for r in recs], dtype=np.float64)


def test_torch_engine_on_device_matches_numpy_engine_over_2000_steps(tmp_path):
    train_dufm(
        DUFMConfig.from_dict({**DUFM, "backend": "numpy", "device": "cpu"}), tmp_path / "np", progress=False
    )
    train_dufm(
        DUFMConfig.from_dict({**DUFM, "backend": "torch", "device": DEVICE}), tmp_path / "t", progress=False
    )
    a, b = _losses(tmp_path / "np"), _losses(tmp_path / "t")
    assert a.shape == b.shape and a.shape[0] == 4 * (STEPS // 100 + 1)
    np.testing.assert_array_equal(a[:, :2], b[:, :2])
    assert a[-1, 2] < 0.5 * a[0, 2]  # the trajectory really moves (not a fixed point compared with itself)
    np.testing.assert_allclose(b[:, 2], a[:, 2], rtol=1e-4, atol=1e-7)


def test_one_network_training_step_on_device_matches_cpu(tiny_net, one_training_step):
    cfg = tiny_net(n=10, batch_size=32)
    data = load_net_data(cfg)
    x, y = data.train.batch(slice(0, 32))
    results = [one_training_step(cfg, data, x, y, dev, momentum=cfg.momentum) for dev in ("cpu", DEVICE)]
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-4)
    torch.testing.assert_close(results[1][1], results[0][1], rtol=1e-4, atol=1e-5)
