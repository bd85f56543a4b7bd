"""The torch engine's graph-safe step loop (issue 28): the chunk path against the plain (eager) path,
device-side divergence, groups of runs, R > 4096, resume; the step-loop option's bad input; ``--device cuda``
without a CUDA device.

The eager loop is the engine as it was before the chunk loop existed (the learning rate folded into the
GEMM's ``beta``, the divergence read on the host every step); the chunk loop reads the learning rate from a
device buffer and keeps the divergence on the device.  Different arithmetic, so they agree to float32
rounding; the chunk loop agrees with itself bit for bit however the runs are grouped and the steps cut
into calls.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.model import init_params, targets
from deepcollapse.dufm.torch_engine import TorchEngine, gd_step, step_bytes_per_run
from deepcollapse.dufm.trainer import resume_dufm, train_dufm

torch.set_num_threads(1)

# lr 1.5 for 10 steps blows up 5 of 16 runs (steps 3-6); lr 0.15 afterwards lets the others settle
DIVERGING = dict(
    classes=3,
    n=2,
    layers=2,
    width=4,
    lam_h=0.01,
    lam_w=0.01,
    lr=1.5,
    lr_schedule="step",
    lr_decay=0.1,
    lr_decay_every=10,
    init_scale=0.7,
    runs=16,
    backend="torch",
)


def _records(folder) -> list[dict]:
    recs = [json.loads(s) for s in (folder / "metrics.jsonl").read_text().splitlines()]
    return sorted(recs, key=lambda r: (r["step"], r["run"]))


def test_chunk_loop_equals_eager_loop_in_the_engine_with_diverging_runs():
    """The engine alone, over calls of several lengths: the chunk loop diverges the same runs at the same
    steps as the eager loop and steps the others alike (the trainer's records and summary: the check-tier
    test below)."""
    c = DUFMConfig(**DIVERGING)
    P = [t.numpy().copy() for t in init_params(c).tensors()]
    lrs = np.array([c.learning_rate(t) for t in range(300)])
    eager, chunk = TorchEngine(P, c, step_loop="eager"), TorchEngine(P, c, step_loop="chunk")
    cut = [0, 3, 20, 137, 300]
    de = {k: v for a, b in zip(cut, cut[1:]) for k, v in eager.advance(a, lrs[a:b]).items()}
    dc = {k: v for a, b in zip(cut, cut[1:]) for k, v in chunk.advance(a, lrs[a:b]).items()}
    assert de == dc and 0 < len(dc) < 16 and max(dc.values()) < 10  # some runs diverge, early
    alive = np.array([r not in dc for r in range(16)])
    for x, y, p in zip(chunk.numpy_params(), eager.numpy_params(), P):
        np.testing.assert_allclose(x[alive], y[alive], rtol=1e-5, atol=1e-7)
        assert not np.allclose(x[alive], p[alive])  # the survivors moved


@pytest.mark.check  # two trainer runs with every record's float64 analysis (the engine alone: above)
def test_chunk_loop_equals_eager_loop_with_diverging_runs(tmp_path):
    c = dict(DIVERGING, steps=300, log_every=20, checkpoint_every=300)
    train_dufm(DUFMConfig(**c, step_loop="eager"), tmp_path / "eager", progress=False)
    train_dufm(DUFMConfig(**c, step_loop="chunk"), tmp_path / "chunk", progress=False)
    a, b = _records(tmp_path / "eager"), _records(tmp_path / "chunk")
    assert [(r["step"], r["run"], r["diverged"]) for r in a] == [
        (r["step"], r["run"], r["diverged"]) for r in b
    ]
    steps = {r["run"]: r["diverged_step"] for r in a if r["diverged"]}
    assert steps == {r["run"]: r["diverged_step"] for r in b if r["diverged"]}
    assert 0 < len(steps) < 16 and max(steps.values()) < 10  # some runs diverge, early; the others go on
    la = np.array([r["loss"] for r in a if not r["diverged"]], dtype=float)
    lb = np.array([r["loss"] for r in b if not r["diverged"]], dtype=float)
    np.testing.assert_allclose(lb, la, rtol=1e-5)
    assert la[-1] < la[0]  # the survivors' trajectories move
    sa = json.loads((tmp_path / "eager" / "summary.json").read_text())["runs"]
    sb = json.loads((tmp_path / "chunk" / "summary.json").read_text())["runs"]
    assert [r["diverged_step"] for r in sa] == [r["diverged_step"] for r in sb]


@pytest.mark.parametrize("grad", ["analytic", "autograd"])
@pytest.mark.parametrize("family", [{}, {"loss": "ce", "activation": "relu_eps", "eps": 0.1}])
def test_graph_safe_step_reads_nothing_on_the_host(family, grad):
    """On ``meta`` tensors (shapes without data) any host read (``.item()``, ``bool(t)``, ``nonzero``) raises:
    the graph-safe step runs there, so nothing in it waits for the device (a CUDA graph can hold it)."""
    c = DUFMConfig(classes=3, n=2, layers=3, width=4, backend="torch", grad=grad, **family)
    meta = torch.device("meta")
    P = [torch.empty((5, *shape), device=meta) for shape in c.shapes]
    alive = torch.ones(5, dtype=torch.bool, device=meta)
    first = torch.full((5,), -1, dtype=torch.int64, device=meta)
    lr_buf = torch.zeros(8, device=meta)
    pos, t0 = torch.zeros(1, dtype=torch.int64, device=meta), torch.zeros(1, dtype=torch.int64, device=meta)
    gd_step(
        P, alive, first, lr_buf, pos, t0, targets(3, 2, torch.float32, meta), c.lam_h, c.lam_w, c.family, grad
    )
    with pytest.raises(RuntimeError, match="meta"):  # what the eager loop's divergence test does
        bool(alive.any())


def test_chunk_loop_over_4096_runs_is_the_same_in_groups_and_calls():
    """R = 5000 tiny runs: one group in one call, four groups in three calls, and the eager loop."""
    c = DUFMConfig(
        classes=2, n=1, layers=2, width=2, lam_h=0.01, lam_w=0.01, lr=0.5, runs=5000, backend="torch"
    )
    P = [t.numpy().copy() for t in init_params(c).tensors()]
    lrs = np.full(40, 0.5)
    whole = TorchEngine(P, c)
    assert whole.step_loop == "chunk" and whole.groups == [(0, 5000)]
    div_whole = whole.advance(0, lrs)
    split = TorchEngine(P, c, group_size=1500)
    assert split.groups == [(0, 1500), (1500, 3000), (3000, 4500), (4500, 5000)]
    div_split = {**split.advance(0, lrs[:13]), **split.advance(13, lrs[13:14]), **split.advance(14, lrs[14:])}
    eager = TorchEngine(P, c, step_loop="eager")
    div_eager = eager.advance(0, lrs)
    assert div_whole == div_split == div_eager and 0 < len(div_whole) < 5000
    alive = np.array([r not in div_whole for r in range(5000)])
    for x, y, z in zip(whole.numpy_params(), split.numpy_params(), eager.numpy_params()):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_allclose(x[alive], z[alive], rtol=1e-5, atol=1e-6)
    assert whole.best_loss() == split.best_loss()


def test_chunk_loop_autograd_equals_analytic():
    c = DUFMConfig(**{**DIVERGING, "lr_schedule": "constant", "lr": 0.3, "init_scale": 0.5}, grad="autograd")
    P = [t.numpy().copy() for t in init_params(c).tensors()]
    a = TorchEngine(P, c)
    b = TorchEngine(P, DUFMConfig.from_dict({**c.to_dict(), "grad": "analytic"}))
    lrs = np.full(50, 0.3)
    assert a.advance(0, lrs) == b.advance(0, lrs) == {}
    for x, y in zip(a.numpy_params(), b.numpy_params()):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_torch_chunk_resume_is_bit_identical(tmp_path):
    c = DUFMConfig(**DIVERGING, steps=120, log_every=40, checkpoint_every=50)
    train_dufm(c, tmp_path / "full", progress=False)
    train_dufm(c, tmp_path / "cut", progress=False, max_steps=77)
    resume_dufm(tmp_path / "cut", progress=False)
    for name in ("params.pt",):
        a = torch.load(tmp_path / "full" / name, weights_only=True)
        b = torch.load(tmp_path / "cut" / name, weights_only=True)
        assert a["diverged"] == b["diverged"] and len(a["diverged"]) > 0
        for x, y in zip([a["H1"], *a["weights"]], [b["H1"], *b["weights"]]):
            assert torch.equal(x, y)
    assert (tmp_path / "full" / "metrics.jsonl").read_text() == (
        tmp_path / "cut" / "metrics.jsonl"
    ).read_text()


def test_step_bytes_per_run_counts_the_step_tensors():
    """Independent count for the flagship: activations 2·3·30·500, output terms 3·10·500, backward 3·30·500,
    three parameter-sized tensors of 30·500 + 3·900 + 300, float32, x 1.5."""
    c = DUFMConfig(classes=10, n=50, layers=4, width=30)
    params = 30 * 500 + 3 * 900 + 300
    assert step_bytes_per_run(c) == int(
        1.5 * 4 * (2 * 3 * 30 * 500 + 3 * 10 * 500 + 3 * 30 * 500 + 3 * params)
    )


@pytest.mark.parametrize(
    "fields, message",
    [
        (
            {"step_loop": "graph"},
            "step_loop == 'graph', must be 'auto', 'chunk', 'compile' or 'eager' on device",
        ),
        (
            {"step_loop": "chunk", "backend": "numpy"},
            "step_loop == 'chunk', must be 'auto' with the numpy engine",
        ),
        ({"step_loop": "compile", "backend": "torch", "grad": "autograd"}, "step_loop == 'compile', must be"),
        ({"step_loop": "fast", "backend": "torch"}, "step_loop == 'fast', must be one of"),
    ],
)
def test_step_loop_bad_input(fields, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        DUFMConfig(**{"backend": "torch", **fields})


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_device_cuda_without_a_gpu_is_one_line_exit_2_nothing_written(tmp_path, capsys):
    from deepcollapse.cli import main

    out = tmp_path / "run"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("device: cuda\nsteps: 10\n")
    for args in (["--device", "cuda"], ["--config", str(cfg)]):
        assert main(["dufm", "train", *args, "--out", str(out)]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1, lines
        assert "device == 'cuda', must be a CUDA device of this machine (found torch " in lines[0]
        assert f"torch {torch.__version__}" in lines[0] and "use cpu" in lines[0]
        assert not out.exists()


@pytest.mark.check  # torch.compile (inductor) takes 20-40 s to compile the step on the CPU
def test_compile_loop_equals_chunk_loop_with_diverging_runs():
    c = DUFMConfig(**DIVERGING)
    P = [t.numpy().copy() for t in init_params(c).tensors()]
    lrs = np.array([c.learning_rate(t) for t in range(200)])
    ref, comp = TorchEngine(P, c), TorchEngine(P, c, step_loop="compile")
    div = ref.advance(0, lrs)
    assert {**comp.advance(0, lrs[:7]), **comp.advance(7, lrs[7:])} == div and 0 < len(div) < 16
    alive = np.array([r not in div for r in range(16)])
    for x, y in zip(comp.numpy_params(), ref.numpy_params()):
        np.testing.assert_allclose(x[alive], y[alive], rtol=1e-4, atol=1e-6)
