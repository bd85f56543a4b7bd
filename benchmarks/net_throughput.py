"""Images/s of one training step of ResNet20 + a 5-layer bias-free MLP head (width 64) at batch 128: the CPU
paths compared in one run, the CUDA options, and the expected GPU runtime of each paper network figure.

One JSON object on stdout:

- ``cpu`` (``--device all`` or ``cpu``): for MNIST-shaped (1×28×28) and CIFAR-shaped (3×32×32) inputs, the
  median images/s over ``--repeats`` interleaved timings (options measured in turn, so load drift hits all
  alike) of ``--steps`` training steps (forward + backward + SGD-momentum step, the trainer's own
  :func:`deepcollapse.nets.train.train_step`, DUFM-like regularisation, MSE) of each option:

  * ``eager`` -- NCHW float32, torch's defaults (convolutions already go through oneDNN); the baseline of
    every ``ratio_to_eager``;
  * ``eager_no_onednn`` -- the same with ``torch.backends.mkldnn`` disabled (what oneDNN buys today);
  * ``channels_last`` -- NHWC memory format for the backbone and the batches (``NetConfig.channels_last``);
  * ``compile`` / ``compile+channels_last`` -- ``torch.compile`` (inductor) of the network, forward and
    backward; only where a C++ compiler is on ``PATH`` (otherwise one line on stderr and no rows); the
    compile time is reported separately (``compile_s``);
  * ``bf16`` / ``bf16+channels_last`` -- bfloat16 autocast (``NetConfig.amp``), only where the CPU has
    AMX or AVX512-BF16 (changes the numerics: reported, never a default);
  * ``*, 1 thread`` and ``*, 1 thread x 2 workers`` -- one torch thread in one process, and two processes with
    one thread each stepping at once (the aggregate images/s of two runs, as a sweep with ``--workers 2``
    runs them); every other row uses as many torch threads as cores.

  Each row gives GFLOP/s (FLOPs of one step counted once by ``torch.utils.flop_counter.FlopCounterMode``,
  2 per multiply-add, convolutions and matrix products only) and its fraction of large-GEMM speed
  (``torch.mm`` 2048×2048 float32 at the same number of threads, measured in the same run).  ``determinism``
  runs each option twice from the same seed for ``--check-steps`` steps on a fixed batch sequence: whether
  the losses are bit-identical, and the largest relative difference to the eager losses.
- ``rows`` (``--device all`` or ``cuda`` with a GPU): per option set (``plain`` float32, ``amp``,
  ``channels_last``, ``amp+channels_last``), the CUDA images/s and the ratio to ``plain``.
- ``flops_per_image``, ``gpu_estimates``: FLOPs of a training step / evaluation pass, and each paper preset's
  runtime on one GPU estimated from them at an **assumed** sustained throughput (``--gpu-tflops``, default 5
  TFLOP/s; with a measured cuda row also from the measured images/s).  Estimates, not measurements.
- ``machine``: CPU model and flags that matter, torch threads, oneDNN, the BLAS kernels (threadpoolctl), the
  1-minute load average at start, per round and at the end (the machine may be shared: read ratios, which
  are interleaved, before absolute rates).

Run it as a user's machine runs it (``OPENBLAS_CORETYPE`` / ``OPENBLAS_L2_SIZE`` unset for this command)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/net_throughput.py --device cpu  # ~10 min
    python benchmarks/net_throughput.py --device cpu --quick   # CIFAR shape only, fewer steps
    python benchmarks/net_throughput.py --device cuda --quick  # only the cuda rows (and the estimates)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import shutil
import statistics
import sys
import time
from typing import Any

import torch
from machine import cpu_flags, cpu_model  # benchmarks/machine.py (a sibling script module)

from deepcollapse.experiments.net_presets import NET_PRESETS, net_preset
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.train import build_network, make_grad_scaler, train_step

BATCH = 128
N_TRAIN = 50_000  # only scales the DUFM feature term (lam_h_scale="batch_mean": not even that)
OPTIONS = {  # the CUDA rows
    "plain": {},
    "amp": {"amp": True},
    "channels_last": {"channels_last": True},
    "amp+channels_last": {"amp": True, "channels_last": True},
}
CPU_OPTIONS: dict[str, dict[str, bool]] = {
    "eager": {},
    "eager_no_onednn": {"onednn": False},
    "channels_last": {"channels_last": True},
    "compile": {"compile": True},
    "compile+channels_last": {"compile": True, "channels_last": True},
    "bf16": {"amp": True},
    "bf16+channels_last": {"amp": True, "channels_last": True},
}
WORKER_OPTIONS = ("eager", "channels_last", "compile+channels_last")
SHAPES = {"mnist": (1, 28), "cifar10": (3, 32)}  # (channels, size)
DATA = {  # (channels, size, training images, test images)
    "cifar10": (3, 32, 50_000, 10_000),
    "mnist": (1, 28, 60_000, 10_000),
}


def _config(**changes: Any) -> NetConfig:
    return NetConfig(
        dataset="digits",
        layers=5,
        width=64,
        reg="dufm",
        lr=0.05,
        batch_size=BATCH,
        device="cpu",
        **changes,
    )


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ------------------------------------------------------------------------------------------------------------
# CPU options
# ------------------------------------------------------------------------------------------------------------


def has_bf16() -> bool:
    return bool(cpu_flags() & {"amx_bf16", "avx512_bf16"})


def cxx_compiler() -> str | None:
    """The C++ compiler inductor would call (``$CXX``, else g++, c++, cc), or None."""
    for name in (os.environ.get("CXX"), "g++", "c++", "cc"):
        if name and shutil.which(name):
            return name
    return None


class Stepper:
    """One network + optimiser set up for a CPU option; ``step(x, y)`` runs one training step."""

    def __init__(self, options: dict[str, bool], channels: int, seed: int = 0) -> None:
        self.options = options
        self.cfg = _config(
            channels_last=options.get("channels_last", False), amp=options.get("amp", False), seed=seed
        )
        self.model = build_network(self.cfg, channels)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=self.cfg.lr, momentum=self.cfg.momentum)
        self.scaler = make_grad_scaler(self.cfg, torch.device("cpu"))
        self.net: Any = torch.compile(self.model) if options.get("compile") else self.model

    def step(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.options.get("onednn", True):
            return train_step(self.cfg, self.net, self.opt, self.scaler, x, y, N_TRAIN)
        torch._C._set_mkldnn_enabled(False)  # torch.backends.mkldnn.flags() also warns about TF32
        try:
            return train_step(self.cfg, self.net, self.opt, self.scaler, x, y, N_TRAIN)
        finally:
            torch._C._set_mkldnn_enabled(True)


def _batch(channels: int, size: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCH, channels, size, size, generator=gen)  # (B, C, H, W)
    y = torch.randint(0, 10, (BATCH,), generator=gen)  # (B,)
    return x, y


def _timed(stepper: Stepper, x: torch.Tensor, y: torch.Tensor, steps: int) -> float:
    t = time.perf_counter()
    for _ in range(steps):
        stepper.step(x, y)
    return steps * BATCH / (time.perf_counter() - t)


def _worker(
    options: dict[str, bool], channels: int, size: int, steps: int, repeats: int, barrier: Any, queue: Any
) -> None:
    """One of two processes, one torch thread each: warm up, then time ``repeats`` rounds in lockstep."""
    torch.set_num_threads(1)
    stepper = Stepper(options, channels)
    x, y = _batch(channels, size)
    for _ in range(2):
        stepper.step(x, y)
    for _ in range(repeats):
        barrier.wait()
        queue.put(_timed(stepper, x, y, steps))


def two_workers(options: dict[str, bool], channels: int, size: int, steps: int, repeats: int) -> list[float]:
    """Aggregate images/s of two single-thread processes stepping at once, per round."""
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(options, channels, size, steps, repeats, barrier, queue))
        for _ in range(2)
    ]
    for p in procs:
        p.start()
    rates = [queue.get() for _ in range(2 * repeats)]
    for p in procs:
        p.join()
    return [rates[2 * i] + rates[2 * i + 1] for i in range(repeats)]


def gemm_gflops(threads: int, size: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of ``torch.mm`` on two ``size``² float32 matrices with ``threads`` torch threads (median)."""
    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a = torch.randn(size, size, generator=torch.Generator().manual_seed(0))
        b, c = a.T.contiguous(), torch.empty(size, size)
        torch.mm(a, b, out=c)
        rates = []
        for _ in range(repeats):
            t = time.perf_counter()
            torch.mm(a, b, out=c)
            rates.append(2 * size**3 / (time.perf_counter() - t) / 1e9)
        return statistics.median(rates)
    finally:
        torch.set_num_threads(prev)


def step_flops(channels: int, size: int) -> float:
    """FLOPs of one training step at batch 128 (forward + backward; FlopCounterMode, 2 per multiply-add)."""
    from torch.utils.flop_counter import FlopCounterMode

    stepper = Stepper({}, channels)
    x, y = _batch(channels, size)
    with FlopCounterMode(display=False) as fc:
        stepper.step(x, y)
    return float(fc.get_total_flops())


def determinism(options: dict[str, bool], channels: int, size: int, steps: int) -> list[list[float]]:
    """Losses of ``steps`` steps, twice from seed 0 (fresh network and optimiser), on batches 0..steps-1."""
    runs = []
    for _ in range(2):
        stepper = Stepper(options, channels, seed=0)
        runs.append([float(stepper.step(*_batch(channels, size, seed=i))) for i in range(steps)])
    return runs


def _row(
    label: str, samples: list[float], threads: int, workers: int, flops: float, gemm: dict[int, float]
) -> dict[str, Any]:
    """One table row: median images/s, GFLOP/s and the fraction of ``workers`` × the GEMM at ``threads``."""
    med = statistics.median(samples)
    gf = med * flops / BATCH / 1e9
    return {"option": label, "threads": threads, "workers": workers, "images_per_s": round(med, 1),
            "samples": [round(r, 1) for r in samples], "gflops": round(gf, 2),
            "fraction_of_gemm": round(gf / (gemm[threads] * workers), 3)}  # fmt: skip


def cpu_section(args: argparse.Namespace) -> dict[str, Any]:
    """Every CPU option at batch 128, interleaved, for each input shape (see the module docstring)."""
    cores = os.cpu_count() or 1
    torch.set_num_threads(cores)
    options = dict(CPU_OPTIONS)
    notes = []
    compiler = cxx_compiler()
    if compiler is None or args.no_compile:
        why = "--no-compile" if args.no_compile else "no C++ compiler (g++, c++, cc, $CXX) on PATH"
        print(f"net_throughput: torch.compile rows skipped: {why}", file=sys.stderr)
        notes.append(f"torch.compile rows skipped: {why}")
        options = {k: v for k, v in options.items() if not v.get("compile")}
    if not has_bf16():
        print("net_throughput: bf16 rows skipped: the CPU has neither AMX nor AVX512-BF16", file=sys.stderr)
        notes.append("bf16 rows skipped: the CPU has neither AMX nor AVX512-BF16")
        options = {k: v for k, v in options.items() if not v.get("amp")}
    loads = [os.getloadavg()[0]]
    gemm = {cores: gemm_gflops(cores), 1: gemm_gflops(1)}
    shapes = {"cifar10": SHAPES["cifar10"]} if args.quick else SHAPES
    steps = args.steps or (2 if args.quick else 4)
    out: dict[str, Any] = {"threads": cores, "steps": steps, "repeats": args.repeats, "shapes": {}}
    for name, (C, S) in shapes.items():
        flops = step_flops(C, S)
        x, y = _batch(C, S)
        steppers, compile_s = {}, {}
        for label, opts in options.items():
            t = time.perf_counter()
            steppers[label] = Stepper(opts, C)
            for _ in range(2):  # warm-up (compilation for the compiled options)
                steppers[label].step(x, y)
            compile_s[label] = round(time.perf_counter() - t, 1)
        rates: dict[tuple[str, int], list[float]] = {}
        for threads in sorted({cores, 1}, reverse=True):
            torch.set_num_threads(threads)
            for st in steppers.values():
                st.step(x, y)  # warm-up at this thread count (a compiled network recompiles for it)
            for _ in range(args.repeats):
                for label, st in steppers.items():
                    rates.setdefault((label, threads), []).append(_timed(st, x, y, steps))
                loads.append(os.getloadavg()[0])
        torch.set_num_threads(cores)
        rows = []

        for (label, threads), samples in rates.items():
            name_ = label if threads == cores else f"{label}, 1 thread"
            rows.append(_row(name_, samples, threads, 1, flops, gemm))
        for label in (k for k in WORKER_OPTIONS if k in steppers):
            loads.append(os.getloadavg()[0])
            samples = two_workers(options[label], C, S, steps, args.repeats)
            rows.append(_row(f"{label}, 1 thread x 2 workers", samples, 1, 2, flops, gemm))
        base = {
            (r["threads"], r["workers"]): r["images_per_s"] for r in rows if r["option"].startswith("eager,")
        }
        base[(cores, 1)] = next(r["images_per_s"] for r in rows if r["option"] == "eager")
        for r in rows:  # against today's default (eager, every core) and eager with the same threads/workers
            r["ratio_to_eager"] = round(r["images_per_s"] / base[(cores, 1)], 2)
            r["ratio_to_eager_same_threads"] = round(
                r["images_per_s"] / base[(r["threads"], r["workers"])], 2
            )
        checks = {}
        ref = determinism({}, C, S, args.check_steps)[0]
        for label, opts in options.items():
            a, b = determinism(opts, C, S, args.check_steps)
            checks[label] = {
                "bit_identical_per_seed": a == b,
                "max_rel_diff_to_eager": max(abs(u - v) / abs(v) for u, v in zip(a, ref)),
                "losses": a,
            }
        out["shapes"][name] = {
            "input": [C, S, S],
            "flops_per_step": flops,
            "rows": rows,
            "compile_s": {k: v for k, v in compile_s.items() if options[k].get("compile")},
            "determinism": checks,
        }
    loads.append(os.getloadavg()[0])
    out["large_gemm_gflops"] = {f"{k}_threads": round(v, 1) for k, v in gemm.items()}
    out["load_avg_1min"] = {"min": round(min(loads), 2), "median": round(statistics.median(loads), 2),
                            "max": round(max(loads), 2), "samples": [round(v, 2) for v in loads]}  # fmt: skip
    out["notes"] = notes
    return out


# ------------------------------------------------------------------------------------------------------------
# CUDA rows and GPU estimates
# ------------------------------------------------------------------------------------------------------------


def images_per_second(device: torch.device, options: dict[str, Any], steps: int, repeats: int) -> list[float]:
    """Images/s of ``steps`` training steps at batch 128 (after 3 warm-up steps), ``repeats`` times."""
    cfg = _config(**options)
    model = build_network(cfg, 3).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum)
    scaler = make_grad_scaler(cfg, device)
    x, y = (t.to(device) for t in _batch(3, 32))
    for _ in range(3):
        train_step(cfg, model, opt, scaler, x, y, N_TRAIN)
    _sync(device)
    rates = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(steps):
            train_step(cfg, model, opt, scaler, x, y, N_TRAIN)
        _sync(device)
        rates.append(steps * BATCH / (time.perf_counter() - t))
    return rates


def flops_per_image(channels: int, size: int) -> dict[str, float]:
    """FLOPs per image of one training step and of one evaluation forward pass (ResNet20 + 5-layer head)."""
    from torch.utils.flop_counter import FlopCounterMode

    stepper = Stepper({}, channels)
    x, _ = _batch(channels, size)
    with FlopCounterMode(display=False) as fc, torch.no_grad():
        stepper.model.eval()
        stepper.model(x)
    return {"train_step": step_flops(channels, size) / BATCH, "eval_forward": fc.get_total_flops() / BATCH}


def gpu_estimates(
    flops: dict[str, dict[str, float]], tflops: float, measured: float | None
) -> dict[str, Any]:
    """Expected runtime of each paper preset on one GPU from its FLOP count (see the module docstring)."""
    out = {}
    for name, preset in NET_PRESETS.items():
        cfg = net_preset(name)
        c, _, n_train, n_test = DATA["cifar10" if cfg.dataset == "cifar10" else "mnist"]
        if cfg.classes:
            n_train, n_test = n_train * len(cfg.classes) // 10, n_test * len(cfg.classes) // 10
        f = flops["cifar10" if cfg.dataset == "cifar10" else "mnist"]
        evals = (cfg.epochs // cfg.eval_every if cfg.eval_every else 0) + 1
        runs = (
            preset.seeds * max(1, *(len(v) for v in preset.sweep.values())) if preset.sweep else preset.seeds
        )
        per_run = cfg.epochs * n_train * f["train_step"] + evals * (n_train + n_test) * f["eval_forward"]
        total = per_run * runs
        row = {
            "runs": runs,
            "epochs": cfg.epochs,
            "training_images_per_run": cfg.epochs * n_train,
            "total_pflop": total / 1e15,
            "estimate_hours_at_assumed_tflops": total / (tflops * 1e12) / 3600,
        }
        if measured:
            row["estimate_hours_from_measured_cuda_rate"] = (
                runs * cfg.epochs * n_train / measured / 3600 * (1 + evals / cfg.epochs / 3)
            )
        out[name] = row
    return {"assumed_sustained_tflops": tflops, "note": "estimates from FLOP counts, not measurements", **out}


def machine_info() -> dict[str, Any]:
    try:
        from threadpoolctl import threadpool_info

        pools = [
            {k: p.get(k) for k in ("internal_api", "num_threads", "version", "architecture")}
            for p in threadpool_info()
        ]
    except ImportError:  # pragma: no cover
        pools = []
    return {
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "cpu_flags": sorted(cpu_flags() & {"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"}),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threadpools": pools,
        "torch_threads": torch.get_num_threads(),
        "mkldnn": torch.backends.mkldnn.is_available(),
        "cxx_compiler": cxx_compiler(),
        "openblas_env": {v: os.environ.get(v) for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")},
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--device", choices=["all", "cpu", "cuda"], default="all", help="all: cpu and cuda if present"
    )
    ap.add_argument("--steps", type=int, default=None, help="steps per timing (default 4 on cpu, 50 on cuda)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="cpu: CIFAR shape only, 2 steps; cuda: 20 steps")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile rows")
    ap.add_argument("--check-steps", type=int, default=3, help="steps of each determinism check")
    ap.add_argument("--gpu-tflops", type=float, default=5.0, help="assumed sustained GPU TFLOP/s (estimates)")
    args = ap.parse_args()
    machine = machine_info()
    cpu = cpu_section(args) if args.device in ("all", "cpu") else None
    rows: list[dict[str, Any]] = []
    if args.device in ("all", "cuda"):
        if torch.cuda.is_available():
            torch.backends.cudnn.benchmark = True
            dev = torch.device("cuda")
            steps = args.steps or (20 if args.quick else 50)
            base = None
            for label, opts in OPTIONS.items():
                rates = images_per_second(dev, opts, steps, args.repeats)
                med = statistics.median(rates)
                base = base or med
                rows.append({"device": "cuda", "options": label, "images_per_s_median": round(med, 1),
                             "images_per_s": [round(r, 1) for r in rates], "steps": steps,
                             "ratio_to_plain": round(med / base, 3), "batch": BATCH})  # fmt: skip
        elif args.device == "cuda":
            print(
                "device == 'cuda', must be available (no CUDA device found); use --device cpu.",
                file=sys.stderr,
            )
            sys.exit(2)
    flops = {name: flops_per_image(c, s) for name, (c, s, _, _) in DATA.items()}
    cuda_plain = next((float(r["images_per_s_median"]) for r in rows if r["options"] == "plain"), None)
    result = {
        "benchmark": "net_throughput",
        "model": "ResNet20 + 5-layer bias-free MLP head (width 64), DUFM-like reg, MSE, SGD momentum, "
        "batch 128",
        "cpu": cpu,
        "rows": rows,
        "flops_per_image": flops,
        "gpu_estimates": gpu_estimates(flops, args.gpu_tflops, cuda_plain),
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "machine": machine,
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
