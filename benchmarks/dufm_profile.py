"""Where one compiled DUFM step goes: each GEMM by shape, the elementwise passes, and the rest.

For each size (default the flagship K = 10, L = 4, width 30 and K = 3; n = 50, float32, one BLAS thread),
prints a markdown table: every GEMM of one run's step timed alone in a compiled loop (hot cache), by BLAS
(numba's ``np.dot``: scipy's OpenBLAS) and by the register-blocked micro-kernels
(:mod:`deepcollapse.dufm.microkernels`), with GFLOP/s and the fraction of one large GEMM measured in the same
run; the fused elementwise passes; and the whole step (R = 8 runs in one process, the benchmark's
``kernel_rate``) by each GEMM path.  "rest" is the step minus the sum of the parts (the loop, checks, the
cache misses between runs).  Times are this process's CPU time (a machine shared with other jobs)::

    python benchmarks/dufm_profile.py                                  # the BLAS kernel of this machine
    OPENBLAS_CORETYPE=Haswell NUMBA_CPU_NAME=haswell python benchmarks/dufm_profile.py   # an AVX2 CPU's
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numba
import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).parent))
import dufm_throughput as bench  # noqa: E402

from deepcollapse.dufm.config import DUFMConfig  # noqa: E402
from deepcollapse.dufm.kernel import advance_limited, flops_per_step  # noqa: E402
from deepcollapse.dufm.microkernels import (  # noqa: E402
    mm_nn,
    mm_nn_relu,
    mm_nt,
    mm_tn,
    mm_tn_relu_d,
    scipy_blas_kernel,
)

CLOCK = time.process_time
MICRO_FUSES_RELU = True  # deepcollapse.dufm.compiled: mm_nn_relu, mm_tn_relu_d on the micro path


@numba.njit
def _gemm(
    A: Any, B: Any, C: Any, P: Any, form: int, micro: bool, reps: int
) -> None:  # 0 AB, 1 ABᵀ, 2 AᵀB, +3 σ
    for _ in range(reps):
        if form == 0:
            if micro:
                mm_nn(A, B, C)
            else:
                np.dot(A, B, C)
        elif form == 1:
            if micro:
                mm_nt(A, B, C)
            else:
                np.dot(A, B.T, C)
        elif form == 2:
            if micro:
                mm_tn(A, B, C)
            else:
                np.dot(A.T, B, C)
        elif form == 3:  # hidden layers: the micro path fuses σ (ReLU) into the GEMM, BLAS has its own pass
            if micro:
                mm_nn_relu(A, B, C)
            else:
                np.dot(A, B, C)
        else:  # form 5, likewise ⊙ σ'
            if micro:
                mm_tn_relu_d(A, B, C, P)  # P: σ' of P, an array apart from C as in the step
            else:
                np.dot(A.T, B, C)


@numba.njit
def _elementwise(X: Any, Y: Any, kind: int, reps: int) -> float:  # the compiled step's loops, same shapes
    d0, d1 = X.shape
    t = X.dtype.type
    s = t(0)
    for _ in range(reps):
        if kind == 0:  # σ = ReLU
            for a in range(d0):
                for b in range(d1):
                    Y[a, b] = max(X[a, b], t(0))
        elif kind == 1:  # ⊙ σ'
            for a in range(d0):
                for b in range(d1):
                    Y[a, b] = Y[a, b] * (t(1) if X[a, b] > 0 else t(0))
        elif kind == 2:  # Σ E, then the MSE residual
            for a in range(d0):
                for b in range(d1):
                    s += X[a, b]
            for a in range(d0):
                for b in range(d1):
                    X[a, b] = t(1e-3) * (X[a, b] - Y[a, b])
        else:  # decay and update
            for a in range(d0):
                for b in range(d1):
                    X[a, b] = X[a, b] * t(0.999) - Y[a, b]
    return s


def _time(fn: Any, *args: Any) -> float:
    """Median µs per repetition of ``fn(*args, reps)`` (reps grown to ~20 ms per sample)."""
    reps = 4
    fn(*args, 1)
    while True:
        t = CLOCK()
        fn(*args, reps)
        if CLOCK() - t > 0.02:
            break
        reps *= 4
    samples = []
    for _ in range(5):
        t = CLOCK()
        fn(*args, reps)
        samples.append((CLOCK() - t) / reps)
    return statistics.median(samples) * 1e6


def step_rates(K: int, L: int, width: int, repeats: int) -> tuple[dict[str, float], float]:
    """runs·steps/s of the compiled step (R = 8, one process) by each GEMM path, and the large-GEMM GFLOP/s:
    medians of ``repeats`` interleaved measurements (load drift hits all alike)."""
    cfg = DUFMConfig(**{**bench.FLAGSHIP, "classes": K, "layers": L, "width": width}, runs=8)
    steps = max(20, int(3000 * 9.0e6 / flops_per_step(cfg.shapes)) // cfg.runs)

    def fn(*a: Any, **k: Any) -> Any:
        return advance_limited(*a, kernel="compiled", **k)

    got: dict[str, list[float]] = {"blas": [], "micro": [], "gemm": []}
    for _ in range(repeats):
        for path in ("blas", "micro"):
            os.environ["DEEPCOLLAPSE_GEMM"] = path
            got[path].append(bench.kernel_rate(fn, cfg, steps))
        got["gemm"].append(bench.large_gemm_gflops(1024, repeats=3))
    del os.environ["DEEPCOLLAPSE_GEMM"]
    med = {k: statistics.median(v) for k, v in got.items()}
    return {p: med[p] for p in ("blas", "micro")}, med["gemm"]


def _row(*cells: Any) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def profile(K: int, L: int, width: int, n: int, repeats: int) -> list[str]:
    """The markdown table of one size."""
    N, dt = K * n, np.float32
    rng = np.random.default_rng(0)
    d = [width] * L + [K]  # d_1 .. d_{L+1}
    Ws = [(rng.standard_normal((d[l + 1], d[l])) / np.sqrt(d[l])).astype(dt) for l in range(L)]
    Hs = [rng.standard_normal((d[l], N)).astype(dt) for l in range(L)]
    ops: list[tuple[str, str, tuple[Any, ...], int]] = []  # name, shape, (A, B, C, P, form), flops
    for l in range(L):
        m, k, i = d[l + 1], d[l], l + 1
        G = rng.standard_normal((m, N)).astype(dt)
        fl = 2 * m * k * N
        ops.append(
            (
                f"forward W{i}·H{i}",
                f"{m}×{k} · {k}×{N}",
                (Ws[l], Hs[l], np.empty((m, N), dt), np.empty((1, 1), dt), 3 if l < L - 1 else 0),
                fl,
            )
        )
        ops.append(
            (
                f"backward ∂W{i} = G·H{i}ᵀ",
                f"{m}×{N} · {N}×{k}",
                (G, Hs[l], np.empty((m, k), dt), np.empty((1, 1), dt), 1),
                fl,
            )
        )
        ops.append(
            (
                f"backward W{i}ᵀ·G",
                f"{k}×{m} · {m}×{N}",
                (Ws[l], G, np.empty((k, N), dt), rng.standard_normal((k, N)).astype(dt), 5 if l > 0 else 2),
                fl,
            )
        )
    P, D = rng.standard_normal((width, N)).astype(dt), rng.standard_normal((width, N)).astype(dt)
    E, Y = rng.standard_normal((K, N)).astype(dt), np.zeros((K, N), dt)
    W2, H1, G1 = Ws[1].copy(), Hs[0].copy(), rng.standard_normal(Hs[0].shape).astype(dt)
    elem = [("σ (ReLU), per hidden layer", f"{width}×{N}", L - 1, (P, D.copy(), 0)),
            ("⊙ σ', per hidden layer", f"{width}×{N}", L - 1, (P, D, 1)),
            ("Σ output + residual", f"{K}×{N}", 1, (E, Y, 2)),
            ("update W (decay − ∂W)", f"{width}×{width}", L, (W2, Ws[1], 3)),
            ("update H1", f"{width}×{N}", 1, (H1, G1, 3))]  # fmt: skip
    rate, gemm = step_rates(K, L, width, repeats)
    f = flops_per_step(DUFMConfig(**{**bench.FLAGSHIP, "classes": K, "layers": L, "width": width}).shapes)
    out = [
        f"\n### K = {K}, L = {L}, width {width}, N = {N} (float32, R = 8, one process); "
        f"large GEMM {gemm:.1f} GFLOP/s\n",
        _row(
            "part", "shape", "× per step", "BLAS µs", "GFLOP/s (fraction)", "micro µs", "GFLOP/s (fraction)"
        ),
        _row(*["---"] * 7),
    ]
    tot = {"blas": 0.0, "micro": 0.0}
    for name, shape, args, flops in ops:
        us = {p: _time(_gemm, *args, p == "micro") for p in ("blas", "micro")}
        cells = []
        for p in ("blas", "micro"):
            tot[p] += us[p]
            g = flops / us[p] / 1e3
            cells += [f"{us[p]:.2f}", f"{g:.1f} ({g / gemm:.2f})"]
        out.append(_row(name, shape, 1, *cells))
    for name, shape, count, args in elem:
        us1 = _time(_elementwise, *args)
        tot["blas"] += count * us1
        fused = name.startswith(("σ", "⊙")) and MICRO_FUSES_RELU  # ReLU: σ, σ' in the GEMMs' stores
        tot["micro"] += 0.0 if fused else count * us1
        out.append(_row(name, shape, count, f"{us1:.2f}", "", "(fused)" if fused else f"{us1:.2f}", ""))
    step = {p: 1e6 / rate[p] for p in rate}
    out.append(
        _row("sum of the parts (µs per step)", "", "", f"{tot['blas']:.1f}", "", f"{tot['micro']:.1f}", "")
    )
    rest = {p: step[p] - tot[p] for p in step}
    out.append(_row("rest: loop, checks, cache misses between runs", "", "", f"{rest['blas']:.1f}", "",
                    f"{rest['micro']:.1f}", ""))  # fmt: skip
    cells = []
    for p in ("blas", "micro"):
        g = rate[p] * f / 1e9
        cells += [f"{step[p]:.1f} ({rate[p]:.0f} runs·steps/s)", f"{g:.1f} ({g / gemm:.3f})"]
    out.append(_row("**whole step** (median of interleaved repeats)", "", "", *cells))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10x4x30,3x4x30", help="K×L×width list, comma-separated")
    ap.add_argument("--n", type=int, default=50, help="samples per class")
    ap.add_argument("--repeats", type=int, default=3, help="whole-step repeats (median)")
    args = ap.parse_args()
    with threadpool_limits(limits=1, user_api="blas"):
        cpu, llvm = bench.cpu_info(), getattr(numba.config, "CPU_NAME", None) or "host"
        print(f"CPU {cpu['model']} ({cpu['simd']}); BLAS kernel {scipy_blas_kernel()}; numba CPU {llvm}; "
              f"1-min load {os.getloadavg()[0]:.2f}")  # fmt: skip
        for size in args.sizes.split(","):
            K, L, w = (int(x) for x in size.lower().split("x"))
            print("\n".join(profile(K, L, w, args.n, args.repeats)))
        print(f"\n1-min load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
