"""Throughput of the L-DUFM trainer's kernel: fraction of large-GEMM speed, paper sizes, model families.

Prints one JSON object (medians of interleaved repeats; every ratio is measured within this run):

* ``cpu``: the CPU model and its widest SIMD level (``/proc/cpuinfo`` flags: amx / avx512 / avx2 / avx);
* ``blas``: the BLAS libraries and kernels that ran (threadpoolctl: numpy's OpenBLAS and, for the compiled
  kernel, scipy's, which numba's ``np.dot`` calls); ``gemm_path``: whether the compiled step's GEMMs go to
  BLAS or (on OpenBLAS's AVX2 kernels) to :mod:`deepcollapse.dufm.microkernels`; every ``sizes`` row times
  both paths (``compiled, gemm blas`` / ``compiled, gemm micro``) and gives each one's fraction of large GEMM;
* ``large_gemm_gflops_1thread``: one float32 GEMM (2048², one thread), the per-core ceiling;
* ``baseline``: the plain single-run torch autograd loop a researcher would write (flagship size);
* ``trainer``: the trainer's stepping engine (the kernel ``--kernel`` selects) at the flagship size
  (K = 10, n = 50, L = 4, width 30, float32, lr 0.5, λ = 0.004) for R = 1 … 128 in one process and with
  two worker processes;
* ``sizes``: runs·steps/s at R = 8, one process, for the sizes the papers' figures use (K = 3 … 15,
  L = 4 … 7, width 16 … 128), each with its fraction of large-GEMM speed and, per kernel (``compiled``,
  ``numpy``, and the ``--compare-kernel`` file, e.g. main's kernel before a change), the rate and the ratio;
* ``families``: every loss × activation at the flagship, with the ratio to MSE + ReLU;
* ``cuda`` (``--device cuda``): the torch engine on the GPU for R = 1 … 4096 (or a message when none).

``--coretype NAME`` runs every row again in a subprocess under ``OPENBLAS_CORETYPE=NAME`` (numba compiling
for the same instruction set, ``NUMBA_CPU_NAME``), reported under ``coretype``: e.g. ``--coretype Haswell``
shows on an AVX-512 machine what an AVX2 CPU (AMD Zen 1-3, AVX2-only Intel) gets.
``--clock cpu`` times in-process rows by this process's CPU time instead of the wall clock: on a machine
shared with other jobs the wall clock measures the load, not the code (rows with ``workers = 2`` stay
wall-clock).
Run it as a user's machine runs it (``OPENBLAS_CORETYPE`` / ``OPENBLAS_L2_SIZE`` unset for this command)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/dufm_throughput.py [--quick]
    git show main:src/deepcollapse/dufm/kernel.py > /tmp/main_kernel.py
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/dufm_throughput.py --compare-kernel \\
        /tmp/main_kernel.py                        # before/after per size, in the same run

``deepcollapse.dufm.kernel.estimate_runs_steps_per_s(shapes, rows)`` turns the ``sizes`` rows into
a runtime estimate for any other size.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from machine import cpu_info  # benchmarks/machine.py (a sibling script module)

from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.kernel import advance_limited, flops_per_step, resolve_kernel
from deepcollapse.dufm.microkernels import GEMM_PATHS, gemm_path
from deepcollapse.dufm.model import init_params
from deepcollapse.dufm.trainer import NumpyEngine, TorchEngine
from deepcollapse.family import ACTIVATIONS, LOSSES, get_family

FLAGSHIP = dict(classes=10, n=50, layers=4, width=30, lam_h=0.004, lam_w=0.004, lr=0.5, dtype="float32")
# (K, L, width) of the paper figures' DUFM runs: flagship, K = 3 (issue 13's second target), the K and
# depth grids (Figs. 2-3: K up to 15, L up to 7) and the width grid (Fig. 3 right: 16 .. 128)
SIZES = [(10, 4, 30), (3, 4, 30), (6, 4, 30), (15, 4, 30), (10, 5, 30), (10, 7, 30), (10, 4, 16), (10, 4, 64),
         (10, 4, 128), (15, 7, 64)]  # fmt: skip
QUICK_SIZES = [(10, 4, 30), (3, 4, 30), (15, 7, 64), (10, 4, 128)]
CLOCK = time.perf_counter  # --clock cpu: this process's CPU time (for in-process rows on a shared machine)


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
    t = CLOCK()
    for _ in range(steps):
        step()
    return steps / (CLOCK() - t)


def trainer_rate(config: DUFMConfig, steps: int) -> float:
    """runs·steps/s of the trainer's stepping engine (the code path of train_dufm between two log records)."""
    params = [t.numpy().copy() for t in init_params(config).tensors()]
    engine = NumpyEngine(params, config)
    try:
        lrs = np.full(steps, config.lr)
        engine.advance(0, lrs[:10])  # warm-up (and worker start-up)
        clock = CLOCK if config.workers == 1 else time.perf_counter  # workers' CPU time is not ours
        t = clock()
        engine.advance(10, lrs)
        return config.runs * steps / (clock() - t)
    finally:
        engine.close()


def kernel_rate(fn: Callable[..., Any], config: DUFMConfig, steps: int, **kw: Any) -> float:
    """runs·steps/s of one ``advance``-like call (one BLAS thread, denormals flushed as in the trainer)."""
    params = [t.numpy().copy() for t in init_params(config).tensors()]
    c = config
    args = (c.classes, c.n, c.lam_h, c.lam_w, c.sub_batch)
    fn(params, np.full(5, c.lr), 0, *args, **kw)  # warm-up (compilation, caches)
    lrs = np.full(steps, c.lr)
    t = CLOCK()
    _, div = fn(params, lrs, 0, *args, **kw)
    rate = c.runs * steps / (CLOCK() - t)
    if div:
        raise RuntimeError(f"runs diverged in the benchmark ({div}); lower the learning rate")
    return rate


def _limited(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap an old kernel module's ``advance`` like ``advance_limited`` (one BLAS thread)."""
    from threadpoolctl import threadpool_limits

    def run(*args: Any, **kw: Any) -> Any:
        flushed = torch.set_flush_denormal(True)
        try:
            with threadpool_limits(limits=1, user_api="blas"):
                return fn(*args, **kw)
        finally:
            if flushed:
                torch.set_flush_denormal(False)

    return run


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
            t = CLOCK()
            np.matmul(a, b, out=c)
            rates.append(2 * size**3 / (CLOCK() - t) / 1e9)
    return statistics.median(rates)


def _with_gemm(path: str) -> Callable[..., Any]:
    """The compiled kernel with its GEMMs forced to ``path`` (``blas`` / ``micro``) for the call."""

    def run(*args: Any, **kw: Any) -> Any:
        old = os.environ.get("DEEPCOLLAPSE_GEMM")
        os.environ["DEEPCOLLAPSE_GEMM"] = path
        try:
            return advance_limited(*args, kernel="compiled", **kw)
        finally:
            if old is None:
                del os.environ["DEEPCOLLAPSE_GEMM"]
            else:
                os.environ["DEEPCOLLAPSE_GEMM"] = old

    return run


# OpenBLAS core types -> the LLVM CPU of the same instruction set (numba's NUMBA_CPU_NAME), so that the
# micro-kernels are compiled as on such a CPU
LLVM_CPU = {"haswell": "haswell", "zen": "znver2", "skylakex": "skylake-avx512", "cooperlake": "cooperlake",
            "sapphirerapids": "sapphirerapids", "sandybridge": "sandybridge"}  # fmt: skip


def rows_under_coretype(name: str) -> dict[str, Any]:
    """This benchmark's rows again, in a subprocess with ``OPENBLAS_CORETYPE=name`` (and ``NUMBA_CPU_NAME``
    of the same instruction set when known): one machine shows both kernel choices."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_L2_SIZE", "NUMBA_CPU_NAME")}
    env["OPENBLAS_CORETYPE"] = name
    if name.lower() in LLVM_CPU:
        env["NUMBA_CPU_NAME"] = LLVM_CPU[name.lower()]
    argv, skip = [], False
    for a in sys.argv[1:]:  # the same options, without --coretype
        if skip or a == "--coretype":
            skip = not skip and a == "--coretype"
            continue
        if not a.startswith("--coretype="):
            argv.append(a)
    done = subprocess.run([sys.executable, __file__, *argv], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return {"OPENBLAS_CORETYPE": name, "error": done.stderr.strip().splitlines()[-1:]}
    return {"OPENBLAS_CORETYPE": name, "NUMBA_CPU_NAME": env.get("NUMBA_CPU_NAME"), **json.loads(done.stdout)}


def blas_info() -> list[dict[str, Any]]:
    from threadpoolctl import threadpool_info

    return [
        {
            "library": Path(i["filepath"]).name,
            "internal_api": i["internal_api"],
            "kernel": i.get("architecture"),
            "version": i.get("version"),
        }
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    ]


def interleaved(fns: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """Median of ``repeats`` calls of each function, the calls interleaved (drift hits all alike)."""
    got: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            got[k].append(f())
    return {k: statistics.median(v) for k, v in got.items()}


def cuda_rows(repeats: int, quick: bool) -> dict[str, Any]:
    if not torch.cuda.is_available():
        return {"skipped": "no CUDA device is available (torch.cuda.is_available() is False)"}
    rows = []
    for R in (1, 16, 256, 4096) if quick else (1, 4, 16, 64, 256, 1024, 4096):
        cfg = DUFMConfig(**FLAGSHIP, runs=R, device="cuda", backend="torch")
        params = [t.numpy().copy() for t in init_params(cfg).tensors()]
        steps = 100 if quick else 300

        def once(cfg: DUFMConfig = cfg, params: list[np.ndarray] = params, steps: int = steps) -> float:
            eng = TorchEngine(params, cfg)
            eng.advance(0, np.full(5, cfg.lr))
            torch.cuda.synchronize()
            t = time.perf_counter()
            eng.advance(5, np.full(steps, cfg.lr))
            torch.cuda.synchronize()
            return cfg.runs * steps / (time.perf_counter() - t)

        rows.append(
            {"runs": R, "runs_steps_per_s": round(statistics.median(once() for _ in range(repeats)), 1)}
        )
    return {"device": torch.cuda.get_device_name(0), "engine": "torch analytic (bmm)", "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes, steps and repeats (~1-2 min)")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--kernel", choices=("auto", "compiled", "numpy"), default="auto", help="trainer rows")
    ap.add_argument("--compare-kernel", help="an older dufm_kernel.py, measured beside the current one")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cuda: add torch GPU rows")
    ap.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="cpu: time in-process rows by this process's CPU time (a machine shared with other jobs)",
    )
    ap.add_argument(
        "--coretype",
        metavar="NAME",
        help="also run every row again in a subprocess under OPENBLAS_CORETYPE=NAME (e.g. Haswell: the AVX2 "
        "kernels of AMD Zen and AVX2-only Intel CPUs), with numba compiling for the matching CPU",
    )
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    repeats = args.repeats or (3 if args.quick else 5)
    work = 3000 if args.quick else 12000  # runs·steps per measurement
    torch.set_num_threads(1)
    kernel = resolve_kernel(args.kernel)
    os.environ["DEEPCOLLAPSE_KERNEL"] = kernel  # the trainer rows (and their worker processes) use it
    kernels: dict[str, Callable[..., Any]] = {}
    if resolve_kernel("auto") == "compiled":
        kernels["compiled"] = lambda *a, **k: advance_limited(*a, kernel="compiled", **k)
        for path in GEMM_PATHS[1:]:  # both GEMM paths of the compiled step, whichever "auto" picks
            kernels[f"compiled, gemm {path}"] = _with_gemm(path)
    kernels["numpy"] = lambda *a, **k: advance_limited(*a, kernel="numpy", **k)
    if args.compare_kernel:
        spec = importlib.util.spec_from_file_location("compare_kernel", args.compare_kernel)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        kernels["compare"] = _limited(mod.advance)

    cfg1 = DUFMConfig(**FLAGSHIP, runs=1)
    flops = flops_per_step(cfg1.shapes)
    gemms = [large_gemm_gflops(1024 if args.quick else 2048)]
    base = statistics.median(baseline_loop(cfg1, max(200, work // 4)) for _ in range(repeats))

    rows = []
    for workers in (1, 2):
        for R in (1, 8, 32) if args.quick else (1, 8, 32, 128):
            if workers > 1 and R == 1:
                continue
            cfg = DUFMConfig(**FLAGSHIP, runs=R, workers=workers)
            rate = statistics.median(trainer_rate(cfg, max(50, work // R)) for _ in range(repeats))
            gflops = round(rate * flops / 1e9, 2)
            rows.append({"runs": R, "workers": workers, "runs_steps_per_s": round(rate, 1),
                         "ratio_to_baseline": round(rate / base, 2), "gflops": gflops})  # fmt: skip

    sizes = []
    for K, L, width in QUICK_SIZES if args.quick else SIZES:
        cfg = DUFMConfig(**{**FLAGSHIP, "classes": K, "layers": L, "width": width}, runs=8)
        f = flops_per_step(cfg.shapes)
        steps = max(20, int(work * 9.0e6 / f) // cfg.runs)  # about the same work per measurement
        rates = interleaved(
            {
                k: (lambda fn=fn, cfg=cfg, steps=steps: kernel_rate(fn, cfg, steps))
                for k, fn in kernels.items()
            },
            repeats,
        )
        gemms.append(large_gemm_gflops(1024 if args.quick else 2048, repeats=3))
        row: dict[str, Any] = {"classes": K, "n": 50, "layers": L, "width": width, "runs": 8, "workers": 1,
                               "flops_per_step": f, "kernel": kernel,
                               "runs_steps_per_s": round(rates[kernel], 1)}  # fmt: skip
        row["gflops"] = round(rates[kernel] * f / 1e9, 2)
        row["fraction_of_large_gemm"] = round(rates[kernel] * f / 1e9 / statistics.median(gemms), 3)
        row["kernels"] = {k: round(v, 1) for k, v in rates.items()}
        row["fraction_of_large_gemm_by_kernel"] = {
            k: round(v * f / 1e9 / statistics.median(gemms), 3) for k, v in rates.items()
        }
        if "compare" in rates:
            row["speedup_vs_compare"] = round(rates[kernel] / rates["compare"], 2)
        if "numpy" in rates and kernel != "numpy":
            row["speedup_vs_numpy_path"] = round(rates[kernel] / rates["numpy"], 2)
        sizes.append(row)

    gemm = statistics.median(gemms)
    for r in rows:
        r["fraction_of_large_gemm"] = round(r["gflops"] / (gemm * r["workers"]), 3)
    fam_cfgs = {
        get_family(lo, a, 0.1 if a == "relu_eps" else None).name: DUFMConfig(
            **{**FLAGSHIP, "lr": 0.1 if a == "linear" else 0.5},
            runs=8,
            loss=lo,
            activation=a,
            eps=0.1 if a == "relu_eps" else None,
        )  # fmt: skip
        for lo in LOSSES
        for a in ACTIVATIONS
    }
    fam_steps = max(20, work // 8)
    fam_rates = interleaved(
        {
            name: (lambda c=c: kernel_rate(kernels[kernel], c, fam_steps, family=c.family))
            for name, c in fam_cfgs.items()
        },
        repeats,
    )
    families = [
        {
            "family": name,
            "kernel": kernel,
            "runs": 8,
            "runs_steps_per_s": round(v, 1),
            "ratio_to_mse_relu": round(v / fam_rates["mse+relu"], 2),
            "fraction_of_large_gemm": round(v * flops / 1e9 / gemm, 3),
        }  # fmt: skip
        for name, v in fam_rates.items()
    ]
    flag = next(r for r in sizes if (r["classes"], r["layers"], r["width"]) == (10, 4, 30))
    k3 = next(r for r in sizes if (r["classes"], r["layers"], r["width"]) == (3, 4, 30))
    out = {
        "benchmark": "dufm_throughput",
        "kernel": kernel,
        "cpu": cpu_info(),
        "blas": blas_info(),
        "gemm_path": gemm_path() if kernel == "compiled" else None,
        "numba_cpu": os.environ.get("NUMBA_CPU_NAME") or "host",
        "clock": args.clock + (" (rows with workers = 2: wall clock)" if args.clock == "cpu" else ""),
        "openblas_env": {v: os.environ.get(v) for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")},
        "flagship": {k: FLAGSHIP[k] for k in ("classes", "n", "layers", "width", "dtype", "lr")},
        "flops_per_step_flagship": flops,
        "large_gemm_gflops_1thread": round(gemm, 1),
        "large_gemm_gflops_samples": [round(g, 1) for g in gemms],
        "baseline": {
            "variant": "plain torch autograd loop, one run, 1 thread",
            "runs_steps_per_s": round(base, 1),
            "gflops": round(base * flops / 1e9, 2),
        },
        "targets": {
            "flagship_fraction_of_large_gemm": flag["fraction_of_large_gemm"],
            "flagship_target": 0.7,
            "K3_fraction_of_large_gemm": k3["fraction_of_large_gemm"],
            "K3_target": 0.6,
            "families_min_ratio_to_mse_relu": min(f["ratio_to_mse_relu"] for f in families),
            "families_target": 0.8,
        },
        "trainer": rows,
        "sizes": sizes,
        "families": families,
        "cuda": cuda_rows(repeats, args.quick) if args.device == "cuda" else None,
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
    if args.coretype:
        out["coretype"] = rows_under_coretype(args.coretype)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
