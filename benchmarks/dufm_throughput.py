"""Throughput of the L-DUFM trainer's kernel: fraction of large-GEMM speed, paper sizes, model families.

Prints each row as one JSON line when it is measured and the whole result as the last line (``"final":
true``; the protocol of ``benchmarks/stream.py``, so a run stopped at a time limit still leaves its rows);
medians of interleaved repeats, every ratio measured within this run.  The result's fields:

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
* ``device_rows`` (``--device cuda``, or ``--cuda-only``; also under ``cuda`` on a GPU): the torch engine
  (:mod:`deepcollapse.dufm.torch_engine`) on the device for R = 1 … 65 536 runs at the flagship and at
  K = 15, L = 7 (width 64), for each step loop (``graph``: CUDA graphs, the default on cuda; ``chunk``: the
  same steps without graphs; ``eager``: a host synchronisation per step, the engine before; ``compile``:
  torch.compile), in increasing cost R × FLOPs, each with runs·steps/s, TFLOP/s and its fraction of the
  device's fp32 GEMM ceiling measured at the start (TF32 off, as the engine runs), the groups the runs were
  split into and the memory per run (measured peak and the engine's estimate); ``analysis`` rows: the CPU
  time of the trainer's per-run analysis for each cost shape of the basin atlases (for their runtime).

``--cuda-only`` measures the device rows alone (``make gpu-check``); with ``--device cpu`` the same rows run
on the CPU (no graph rows), as ``gpu_check.py --fake-device cpu`` runs them.  ``--max-seconds S``: rows
that would not finish within S seconds of the start (predicted from the last row of their kind) are
reported as ``skipped`` rows instead of run.

``--coretype NAME`` runs every row again in a subprocess under ``OPENBLAS_CORETYPE=NAME`` (numba compiling
for the same instruction set, ``NUMBA_CPU_NAME``), reported under ``coretype``: e.g. ``--coretype Haswell``
shows on an AVX-512 machine what an AVX2 CPU (AMD Zen 1-3, AVX2-only Intel) gets.
``--clock cpu`` times in-process rows by this process's CPU time instead of the wall clock: on a machine
shared with other jobs the wall clock measures the load, not the code (rows with ``workers = 2`` stay
wall-clock).
Run it as a user's machine runs it (``OPENBLAS_CORETYPE`` / ``OPENBLAS_L2_SIZE`` unset for this command)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/dufm_throughput.py [--quick]
    python benchmarks/dufm_throughput.py --device cuda --cuda-only --max-seconds 80    # a GPU's rows only
    git show main:src/deepcollapse/dufm/kernel.py > /tmp/main_kernel.py
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/dufm_throughput.py --compare-kernel \\
        /tmp/main_kernel.py                        # before/after per size, in the same run

``deepcollapse.dufm.kernel.estimate_runs_steps_per_s(shapes, rows)`` turns the ``sizes`` rows into
a runtime estimate for any other size.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from ceilings import gemm_tflops  # benchmarks/ceilings.py, machine.py, stream.py: sibling script modules
from machine import cpu_info
from stream import Budget, emit, final, read_rows

from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.kernel import advance_limited, flops_per_step, resolve_kernel
from deepcollapse.dufm.microkernels import GEMM_PATHS, gemm_path
from deepcollapse.dufm.model import init_params
from deepcollapse.dufm.torch_engine import GRAPH_STEPS, TorchEngine, step_bytes_per_run
from deepcollapse.dufm.trainer import NumpyEngine
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
    _, result = read_rows(done.stdout)
    return {"OPENBLAS_CORETYPE": name, "NUMBA_CPU_NAME": env.get("NUMBA_CPU_NAME"), **(result or {})}


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


# ------------------------------------------------------------------------------------------------------------
# the torch engine on a device (--device cuda; --cuda-only: these rows alone)
# ------------------------------------------------------------------------------------------------------------
#: (label, K, L, width) of the device rows: the flagship and the largest paper size (n = 50 both)
DEVICE_SHAPES = [("flagship", 10, 4, 30), ("K15 L7", 15, 7, 64)]
DEVICE_RUNS = (1, 16, 256, 1024, 4096, 16384, 65536)
#: the step loops measured (TorchEngine): eager only at R <= 4096 (launch-bound rows are slow), compile (tens
#: of seconds of compilation per R) at large R only
DEVICE_LOOPS = {
    "graph": DEVICE_RUNS,
    "chunk": DEVICE_RUNS,
    "eager": (1, 16, 256, 4096),
    "compile": (4096, 65536),
}
_ROW_SECONDS = 0.5  # measured stepping per row (plus set-up), as far as the budget allows
_SAFETY = 1.5  # a row starts only if 1.5 x its predicted time is left (per-run cost may grow with R on a CPU)


def _device_params(config: DUFMConfig, device: torch.device) -> list[torch.Tensor]:
    """Parameters drawn on the device with the trainer's initial stds (one generator for all runs: the rate
    does not depend on the draw, and 65 536 per-run CPU generators would take seconds)."""
    g = torch.Generator(device=device).manual_seed(0)
    return [
        torch.randn((config.runs, *shape), generator=g, device=device, dtype=config.torch_dtype) * std
        for shape, std in zip(config.shapes, config.init_scale)
    ]


def step_row(label: str, cfg: DUFMConfig, loop: str, steps: int, fp32_tflops: float | None) -> dict[str, Any]:
    """runs·steps/s of ``steps`` GD steps of the torch engine with step loop ``loop`` after a warm-up (on cuda
    ``GRAPH_STEPS + 1`` steps, which capture both CUDA graphs; the compile loop compiles in it); ``setup_s``
    is the engine's creation and warm-up, ``peak_bytes_per_run`` the device memory at the peak over the
    runs (cuda), ``estimated_bytes_per_run`` what the engine sized its groups by."""
    device = torch.device(cfg.device)
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    t = time.perf_counter()
    engine = TorchEngine(_device_params(cfg, device), cfg, step_loop=loop)  # type: ignore[arg-type]
    warm = GRAPH_STEPS + 1 if device.type == "cuda" and loop in ("graph", "compile") else 2
    engine.advance(0, np.full(warm, cfg.lr))  # (advance synchronises with the device)
    setup = time.perf_counter() - t
    t = time.perf_counter()
    engine.advance(warm, np.full(steps, cfg.lr))
    seconds = time.perf_counter() - t
    f = flops_per_step(cfg.shapes)
    rate = cfg.runs * steps / seconds
    row: dict[str, Any] = {
        "kind": "step",
        "label": label,
        "classes": cfg.classes,
        "n": cfg.n,
        "layers": cfg.layers,
        "width": cfg.width[0],
        "runs": cfg.runs,
        "step_loop": loop,
        "step_loop_ran": engine.step_loop,
        "groups": len(engine.groups),
        "steps": steps,
        "seconds": seconds,
        "setup_s": setup,
        "runs_steps_per_s": rate,
        "flops_per_step": f,
        "tflops": rate * f / 1e12,
        "fraction_of_fp32_gemm": rate * f / 1e12 / fp32_tflops if fp32_tflops else None,
        "diverged_runs": int((engine.first_bad >= 0).sum()),
        # the parameters stay on the device; a step's intermediates exist for one group at a time
        "estimated_bytes_per_run": (4 if cfg.dtype == "float32" else 8) * sum(a * b for a, b in cfg.shapes)
        + step_bytes_per_run(cfg) * (engine.groups[0][1] - engine.groups[0][0]) / cfg.runs,
    }
    if device.type == "cuda":
        row["peak_bytes_per_run"] = torch.cuda.max_memory_allocated(device) / cfg.runs
    engine.close()
    del engine
    return row


def analysis_rows(budget: Budget) -> list[dict[str, Any]]:
    """The CPU cost of the trainer's per-run analysis (one ``metrics.jsonl`` record, one classification) for
    each cost shape of the basin atlases (``tools/runtime_table.py`` turns them into runtimes)."""
    from deepcollapse.experiments.basin_runtime import atlas_shapes, measure_analysis
    from deepcollapse.experiments.basins import BASINS_GPU, BASINS_LAPTOP

    shapes = {}
    for atlas in (BASINS_GPU, BASINS_LAPTOP):
        for shape, group in atlas_shapes(atlas).items():
            shapes.setdefault(shape, group[0].config)
    rows, last = [], 0.0
    for (K, L, n, d), config in sorted(shapes.items(), key=lambda kv: kv[0][3] * kv[0][2]):
        base = {"kind": "analysis", "label": f"analysis K{K} L{L} n{n} d{d}", "classes": K, "layers": L,
                "n": n, "width": d}  # fmt: skip
        if not budget.allows(2 * last):
            rows.append({**base, "skipped": f"budget: {budget.left():.1f} s left"})
            emit(rows[-1])
            continue
        t = time.perf_counter()
        cfg = DUFMConfig.from_dict({**config, "device": "cpu", "runs": 1})
        observe_s, classify_s = measure_analysis(cfg)
        last = time.perf_counter() - t
        rows.append({**base, "observe_s": observe_s, "classify_s": classify_s})
        emit(rows[-1])
    return rows


def device_rows(device: torch.device, budget: Budget, quick: bool) -> dict[str, Any]:
    """The torch engine on ``device`` for R = 1 … 65 536 runs at the flagship and at K = 15, L = 7 (width 64),
    every step loop of :data:`DEVICE_LOOPS`, in increasing cost (R × FLOPs per step), each row printed when
    measured; a row that would not finish in what is left of ``budget`` (predicted from the last row of its
    loop, scaled linearly in R × FLOPs, which over-predicts on a GPU where larger R run faster, times
    :data:`_SAFETY`) is reported as skipped.
    """
    fp32 = gemm_tflops(device, "fp32")
    emit({"kind": "ceiling", "format": "fp32", "tflops": fp32, "device": str(device)})
    analysis = analysis_rows(budget)
    plan = []
    for label, K, L, width in DEVICE_SHAPES:
        cfg = DUFMConfig(
            **{**FLAGSHIP, "classes": K, "layers": L, "width": width}, device=str(device), backend="torch"
        )
        f = flops_per_step(cfg.shapes)
        for loop, runs in DEVICE_LOOPS.items():
            if loop == "graph" and device.type != "cuda":
                continue  # (CUDA graphs need a CUDA device; the chunk rows are the same steps)
            for R in runs[:4] if quick else runs:
                plan.append((R * f, list(DEVICE_LOOPS).index(loop), label, cfg, loop, R))
    plan.sort(key=lambda p: (p[0], p[1]))
    rows: list[dict[str, Any]] = []
    # loop -> (work R·FLOPs, seconds per step, set-up seconds) of its last row; before any: a guess
    last: dict[str, tuple[float, float, float]] = {}
    for work, _, label, cfg, loop, R in plan:
        name = f"{label} R={R} {loop}"
        w0, step0, setup0 = last.get(loop, (work, 1e-3, 2.0))
        per_step = step0 * work / w0
        # set-up: the parameters and warm-up steps scale with the work; a compilation does not (each R
        # compiles anew: a first guess of 60 s)
        setup_s = max(setup0, 60.0) if loop == "compile" else setup0 * work / w0
        steps = int(min(200, max(5, _ROW_SECONDS / per_step)))
        predicted = _SAFETY * (setup_s + steps * per_step)
        if not budget.allows(predicted):
            why = f"budget: predicted {predicted:.1f} s, {budget.left():.1f} s left"
            rows.append({"kind": "step", "label": name, "runs": R, "step_loop": loop, "skipped": why})
            emit(rows[-1])
            continue
        c = DUFMConfig.from_dict({**cfg.to_dict(), "runs": R})
        try:
            row = step_row(name, c, loop, steps, fp32)
        except torch.cuda.OutOfMemoryError as exc:
            rows.append({"kind": "step", "label": name, "runs": R, "step_loop": loop,
                         "error": "out of memory: " + str(exc).splitlines()[0]})  # fmt: skip
            emit(rows[-1])
            continue
        last[loop] = (work, row["seconds"] / row["steps"], row["setup_s"])
        rows.append(row)
        emit(row)
    return {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "engine": "torch analytic (bmm), dufm/torch_engine.py",
        "fp32_gemm_tflops": fp32,
        "rows": rows,
        "analysis": analysis,
    }


def cpu_result(args: argparse.Namespace, budget: Budget) -> dict[str, Any]:
    """The CPU rows (trainer, sizes, families; module docstring), each printed when measured; a row started
    after the budget ran out is reported as skipped, and the summary keys it feeds are ``None``."""
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
            if _skipped(budget, {"section": "trainer", "runs": R, "workers": workers}):
                continue
            cfg = DUFMConfig(**FLAGSHIP, runs=R, workers=workers)
            rate = statistics.median(trainer_rate(cfg, max(50, work // R)) for _ in range(repeats))
            gflops = round(rate * flops / 1e9, 2)
            rows.append({"runs": R, "workers": workers, "runs_steps_per_s": round(rate, 1),
                         "ratio_to_baseline": round(rate / base, 2), "gflops": gflops})  # fmt: skip
            emit({"section": "trainer", **rows[-1]})

    sizes = []
    for K, L, width in QUICK_SIZES if args.quick else SIZES:
        if _skipped(budget, {"section": "sizes", "classes": K, "layers": L, "width": width}):
            continue
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
        emit({"section": "sizes", **row})

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
    fam_rates = {}
    if not _skipped(budget, {"section": "families"}):
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
    for f in families:
        emit({"section": "families", **f})
    flag = next((r for r in sizes if (r["classes"], r["layers"], r["width"]) == (10, 4, 30)), {})
    k3 = next((r for r in sizes if (r["classes"], r["layers"], r["width"]) == (3, 4, 30)), {})
    return {
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
            "flagship_fraction_of_large_gemm": flag.get("fraction_of_large_gemm"),
            "flagship_target": 0.7,
            "K3_fraction_of_large_gemm": k3.get("fraction_of_large_gemm"),
            "K3_target": 0.6,
            "families_min_ratio_to_mse_relu": min((f["ratio_to_mse_relu"] for f in families), default=None),
            "families_target": 0.8,
        },
        "trainer": rows,
        "sizes": sizes,
        "families": families,
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes, steps and repeats (~1-2 min)")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--kernel", choices=("auto", "compiled", "numpy"), default="auto", help="trainer rows")
    ap.add_argument("--compare-kernel", help="an older dufm_kernel.py, measured beside the current one")
    ap.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="cuda: add the torch engine's GPU rows (R = 1 .. 65 536, every step loop)",
    )
    ap.add_argument(
        "--cuda-only",
        action="store_true",
        help="only the torch engine's device rows, without the CPU rows (with --device cpu: the same rows on "
        "the CPU, as gpu_check.py --fake-device cpu runs them)",
    )
    ap.add_argument(
        "--max-seconds",
        type=float,
        default=None,
        help="self-budget: rows that would not finish within this many seconds of the start are reported as "
        "skipped instead of run",
    )
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
    budget = Budget(args.max_seconds)
    torch.set_num_threads(1)
    out: dict[str, Any] = {"benchmark": "dufm_throughput"}
    if not args.cuda_only:
        out.update(cpu_result(args, budget))
    device = torch.device(args.device)
    if args.device == "cuda" and not torch.cuda.is_available():
        out["device_rows"] = {"skipped": "no CUDA device is available (torch.cuda.is_available() is False)"}
    elif args.device == "cuda" or args.cuda_only:
        out["device_rows"] = device_rows(device, budget, args.quick)
    out["cuda"] = out.get("device_rows") if args.device == "cuda" else None
    out["cuda_only"], out["max_seconds"], out["wall_s"] = args.cuda_only, args.max_seconds, budget.elapsed()
    if args.coretype:
        out["coretype"] = rows_under_coretype(args.coretype)
    final(out)


def _skipped(budget: Budget, row: dict[str, Any]) -> bool:
    """Report ``row`` as skipped (and return True) once the budget is spent."""
    if budget.left() > 0:
        return False
    emit({**row, "skipped": f"budget of {budget.seconds} s spent"})
    return True


if __name__ == "__main__":
    main()
