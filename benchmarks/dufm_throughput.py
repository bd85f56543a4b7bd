"""Throughput of the L-DUFM trainer against the plain single-run autograd loop a researcher would write.

Flagship size (K = 10, n = 50, L = 4, width 30, float32, lr 0.5, all λ = 0.004).  Prints one JSON object:
runs·steps/s (median of repeats) for the baseline and the trainer's stepping engine at R = 1, 8, 32, 128 (in
this process, one BLAS thread) and with ``workers = 2`` (one single-threaded process per core), the ratio to
the baseline, FLOPs per step and the achieved GFLOP/s as a fraction of a large GEMM measured in the same run
(per core; the ``workers`` rows are compared with ``workers ×`` that).

    python benchmarks/dufm_throughput.py            # ~1-2 min
    python benchmarks/dufm_throughput.py --quick    # ~15 s
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np
import torch

from deepcollapse.models.dufm import DUFMConfig, init_params
from deepcollapse.training.dufm import _NumpyEngine
from deepcollapse.training.dufm_kernel import flops_per_step


def baseline_loop(config: DUFMConfig, steps: int) -> float:
    """The usual research script: one run, autograd of eq. (1), ``p -= lr * p.grad``; returns steps/s."""
    torch.manual_seed(0)
    K, n, N = config.classes, config.n, config.N
    Y = torch.kron(torch.eye(K), torch.ones(1, n))
    H1 = (torch.randn(30, N) * 0.1).requires_grad_()
    Ws = [(torch.randn(30, 30) / 30**0.5).requires_grad_() for _ in range(3)] + [
        (torch.randn(K, 30) / 30**0.5).requires_grad_()
    ]
    params = [H1, *Ws]
    lam = 0.004

    def step() -> None:
        H = H1
        for W in Ws[:-1]:
            H = torch.relu(W @ H)
        loss = ((Ws[-1] @ H - Y) ** 2).sum() / (2 * N) + lam / 2 * sum((p**2).sum() for p in params)
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= 0.5 * p.grad

    for _ in range(20):
        step()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    return steps / (time.perf_counter() - t)


def trainer_rate(config: DUFMConfig, steps: int) -> float:
    """runs·steps/s of the trainer's stepping engine (the code path of train_dufm between two log records)."""
    params = [t.numpy().copy() for t in init_params(config).tensors()]
    engine = _NumpyEngine(params, config)
    try:
        lrs = np.full(steps, config.lr)
        engine.advance(0, lrs[:10])  # warm-up (and worker start-up)
        t = time.perf_counter()
        engine.advance(10, lrs)
        return config.runs * steps / (time.perf_counter() - t)
    finally:
        engine.close()


def large_gemm_gflops(size: int = 2048, repeats: int = 5) -> float:
    """Single-thread float32 GEMM GFLOP/s of numpy/OpenBLAS (the trainer's kernel library)."""
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(0).standard_normal((size, size)).astype(np.float32)
    b = a.T.copy()
    c = np.empty_like(a)
    rates = []
    with threadpool_limits(limits=1, user_api="blas"):
        np.matmul(a, b, out=c)
        for _ in range(repeats):
            t = time.perf_counter()
            np.matmul(a, b, out=c)
            rates.append(2 * size**3 / (time.perf_counter() - t) / 1e9)
    return statistics.median(rates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and repeats")
    ap.add_argument("--repeats", type=int, default=None)
    args = ap.parse_args()
    repeats = args.repeats or (3 if args.quick else 5)
    work = 3000 if args.quick else 12000  # runs·steps per measurement
    torch.set_num_threads(1)
    base_cfg = dict(classes=10, n=50, layers=4, width=30, lam_h=0.004, lam_w=0.004, lr=0.5, dtype="float32")
    cfg1 = DUFMConfig(**base_cfg, runs=1)
    flops = flops_per_step(cfg1.shapes)
    gemm = large_gemm_gflops(1024 if args.quick else 2048)
    base = statistics.median(baseline_loop(cfg1, max(200, work // 4)) for _ in range(repeats))
    rows = []
    for workers in (1, 2):
        for R in (1, 8, 32, 128):
            if workers > 1 and R == 1:
                continue
            cfg = DUFMConfig(**base_cfg, runs=R, workers=workers)
            steps = max(50, work // R)
            rate = statistics.median(trainer_rate(cfg, steps) for _ in range(repeats))
            gflops = rate * flops / 1e9
            rows.append(
                {
                    "variant": "trainer",
                    "runs": R,
                    "workers": workers,
                    "runs_steps_per_s": round(rate, 1),
                    "ratio_to_baseline": round(rate / base, 2),
                    "gflops": round(gflops, 2),
                    "fraction_of_large_gemm": round(gflops / (gemm * workers), 3),
                }
            )
    out = {
        "benchmark": "dufm_throughput",
        "setting": {"classes": 10, "n": 50, "layers": 4, "width": 30, "dtype": "float32", "lr": 0.5},
        "flops_per_step": flops,
        "large_gemm_gflops_1thread": round(gemm, 1),
        "baseline": {
            "variant": "plain torch autograd loop, one run, 1 thread",
            "runs_steps_per_s": round(base, 1),
            "gflops": round(base * flops / 1e9, 2),
        },
        "trainer": rows,
        "best_ratio_R_ge_8": max(r["ratio_to_baseline"] for r in rows if r["runs"] >= 8),
        "repeats": repeats,
        "quick": args.quick,
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
            "torch": torch.__version__,
            "numpy": np.__version__,
        },
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
