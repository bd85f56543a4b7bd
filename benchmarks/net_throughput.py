"""Images/s of a network training step (ResNet20 + a 5-layer bias-free MLP head, width 64, batch 128), printed
row by row as measured (``benchmarks/stream.py``: one JSON line per row, the whole result last with
``"final": true``; ``--max-seconds`` makes rows that would not fit into ``skipped`` rows).

Every row has ``label``, ``device``, ``shape`` (``cifar10`` 3×32×32 or ``mnist`` 1×28×28), ``seeds`` (S, the
networks stepped), ``images_per_s`` (all S together), ``images_per_s_per_seed`` and ``flops_per_image`` (FLOPs
of one training step per image, ``torch.utils.flop_counter.FlopCounterMode``, 2 per multiply-add; what
``gpu_check.py`` divides by the GPU's GEMM ceiling).  Rows:

- ``batched`` / ``sequential`` (CPU and CUDA): S seeds stepped as one batched network
  (:func:`deepcollapse.nets.seed_batch.batched_train_step`) against S single-seed steps of S separate networks
  (:func:`deepcollapse.nets.step.train_step`, one after the other), measured interleaved in the same run;
  the batched row carries ``ratio_to_sequential``.  On the CPU for four model sizes (MLP backbone on 8×8
  digits, ResNet8 on 8×8 and 28×28, ResNet20 on 32×32), one torch thread (as the CPU experiments run) and, in
  full mode, every core: the evidence behind ``batch_seeds: auto`` (off on the CPU).
- ``graph`` (CUDA): the batched step captured once in a CUDA graph and replayed
  (:class:`deepcollapse.nets.graph_step.GraphStep`), the batch already on the device.
- ``single`` with ``amp`` / ``channels_last`` (CUDA, full mode): the one-seed options.
- ``cpu options`` (``--device cpu`` / ``all``, full mode or ``--quick`` CIFAR only): the one-seed CPU paths
  compared interleaved as before: ``eager`` (NCHW float32), ``eager_no_onednn``, ``channels_last``,
  ``compile`` (inductor; needs a C++ compiler), ``bf16`` (needs AMX / AVX512-BF16), one thread and two
  single-thread worker processes; GFLOP/s as a fraction of large-GEMM speed; a bit-determinism check.

The final object adds ``machine`` (CPU model and flags, torch threads, oneDNN, the BLAS kernels via
threadpoolctl, the load average: the machine may be shared, so read the interleaved ratios before absolute
rates) and the CUDA device's name.  No runtime estimate from an assumed FLOP rate: the README's table of
paper-scale runtimes is computed from these measured rows (``tools/runtime_table.py``).

Run it as a user's machine runs it (``OPENBLAS_CORETYPE`` / ``OPENBLAS_L2_SIZE`` unset for this command)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/net_throughput.py --device cpu  # ~15 min
    python benchmarks/net_throughput.py --device cpu --quick  # batched vs sequential, 1 thread; CIFAR options
    python benchmarks/net_throughput.py --device cuda --quick --max-seconds 60   # what make gpu-check runs
"""

from __future__ import annotations

import argparse
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
from stream import Budget, emit, final  # benchmarks/stream.py (a sibling script module)

from deepcollapse._core.devices import synchronize
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


def _config(**changes: Any) -> NetConfig:
    base: dict[str, Any] = dict(dataset="digits", layers=5, width=64, reg="dufm", lr=0.05, batch_size=BATCH,
                                device="cpu")  # fmt: skip
    return NetConfig(**{**base, **changes})


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
        flops = flops_per_image((C, S, S), BATCH) * BATCH
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
# Batched seeds against sequential single-seed steps (CPU and CUDA), the graph-captured step (CUDA)
# ------------------------------------------------------------------------------------------------------------

#: The CPU model sizes of the batched-vs-sequential rows: (NetConfig changes, sample shape, batch size).
CPU_CASES: dict[str, tuple[dict[str, Any], tuple[int, int, int], int]] = {
    "mlp digits": ({"backbone": "mlp", "backbone_width": 128, "width": 32, "layers": 4}, (1, 8, 8), 128),
    "resnet8 digits": ({"backbone": "resnet8"}, (1, 8, 8), 64),
    "resnet8 mnist": ({"backbone": "resnet8"}, (1, 28, 28), 64),
    "resnet20 cifar10": ({}, (3, 32, 32), 128),
}
GPU_SHAPES = {"cifar10": (3, 32, 32), "mnist": (1, 28, 28)}


class Seeds:
    """S networks of one config on ``device``, stepped as one batch (``batched``), one after the other
    (``sequential``) or through the captured step (``graph``), on one fixed batch per seed on the device."""

    def __init__(
        self, S: int, device: torch.device, shape: tuple[int, ...], batch: int, **changes: Any
    ) -> None:
        from deepcollapse.nets.build import make_optimizer
        from deepcollapse.nets.seed_batch import build_seed_batch

        self.device, self.S, self.batch = device, S, batch
        self.cfgs = [_config(seed=s, batch_size=batch, **changes) for s in range(S)]
        gen = torch.Generator().manual_seed(0)
        self.x = torch.randn(S, batch, *shape, generator=gen).to(device)  # (S, B, C, H, W)
        self.y = torch.randint(0, 10, (S, batch), generator=gen).to(device)  # (S, B)
        self.alone = [build_network(c, shape[0], shape, device).to(device) for c in self.cfgs]
        self.alone_opts = [make_optimizer(c, m) for c, m in zip(self.cfgs, self.alone)]
        self.batch_, _, self.opts, self.scalers = build_seed_batch(self.cfgs, shape, device, N_TRAIN)
        self.graph: Any = None

    def sequential(self) -> None:
        for s in range(self.S):
            train_step(self.cfgs[s], self.alone[s], self.alone_opts[s], self.scalers[s], self.x[s], self.y[s],
                       N_TRAIN)  # fmt: skip

    def batched(self) -> None:
        from deepcollapse.nets.seed_batch import batched_train_step

        batched_train_step(self.batch_, self.opts, self.scalers, self.x, self.y)

    def graphed(self) -> None:
        from deepcollapse.nets.graph_step import GraphStep

        if self.graph is None:
            self.graph = GraphStep(self.batch_, self.opts, self.x, self.y)
        self.graph(self.x, self.y)


def _rate(fn: Any, device: torch.device, images: int, steps: int) -> float:
    synchronize(device)
    t = time.perf_counter()
    for _ in range(steps):
        fn()
    synchronize(device)
    return steps * images / (time.perf_counter() - t)


def flops_per_image(shape: tuple[int, ...], batch: int, **changes: Any) -> float:
    """FLOPs of one training step per image on the CPU (forward + backward; FlopCounterMode)."""
    from torch.utils.flop_counter import FlopCounterMode

    cfg = _config(batch_size=batch, **changes)
    model = build_network(cfg, shape[0], shape)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum)
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(batch, *shape, generator=gen), torch.randint(0, 10, (batch,), generator=gen)
    with FlopCounterMode(display=False) as fc:
        train_step(cfg, model, opt, make_grad_scaler(cfg, torch.device("cpu")), x, y, N_TRAIN)
    return float(fc.get_total_flops()) / batch


class Rows:
    """Emits rows as measured and keeps them (and the skipped ones) for the final object."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.rows: list[dict[str, Any]] = []
        self.skipped: list[dict[str, Any]] = []
        self.flop_rate: dict[str, float] = {}  # device -> the slowest FLOP/s seen (to predict a first step)

    def fits(self, label: str, device: str, predicted: float, **info: Any) -> bool:
        """Whether a row predicted to take ``predicted`` seconds (with a margin) fits; else a skipped row."""
        needed = 1.5 * predicted + 1.0
        if self.budget.allows(needed):
            return True
        left = max(self.budget.left(), 0)
        why = (
            f"budget: would take ~{predicted:.0f} s ({needed:.0f} s with a safety margin), {left:.0f} s left"
        )
        row = {"label": label, "device": device, "skipped": why, **info}
        self.skipped.append(row)
        emit(row)
        return False

    def add(self, row: dict[str, Any]) -> None:
        dev = row["device"]
        rate = row["images_per_s"] * row["flops_per_image"]
        self.flop_rate[dev] = min(self.flop_rate.get(dev, rate), rate)
        self.rows.append(row)
        emit(row)


def batched_vs_sequential(
    rows: Rows, device: torch.device, name: str, shape: tuple[int, ...], batch: int, S: int,
    steps: int, repeats: int, graph: bool, flops: float, threads: int | None = None, **changes: Any,
) -> None:  # fmt: skip
    """The ``sequential``, ``batched`` (and ``graph``) rows of S seeds, timed interleaved."""
    info = {"shape": name, "seeds": S, "batch": batch, "flops_per_image": flops}
    if threads is not None:
        info["threads"] = threads
    kinds = ["sequential"] + (["batched"] if S > 1 else []) + (["graph"] if graph else [])
    label = f"{name} S={S}"
    rate = rows.flop_rate.get(device.type)
    if rate is not None and not rows.fits(label, device.type, S * batch * flops / rate, **info):
        return  # not even one step of the S seeds fits
    seeds = Seeds(S, device, shape, batch, **changes)
    fns = {"sequential": seeds.sequential, "batched": seeds.batched, "graph": seeds.graphed}
    fns["sequential"]()  # warm-up, and the time of one step of the S seeds predicts the row
    one = S * batch / _rate(fns["sequential"], device, S * batch, 1)
    if not rows.fits(label, device.type, one * (steps * repeats + 4) * len(kinds), **info):
        return
    for k in kinds:
        for _ in range(4 if k == "graph" else 1 if k == "sequential" else 2):  # graph: 3 eager steps, capture
            fns[k]()
    samples: dict[str, list[float]] = {k: [] for k in kinds}
    for _ in range(repeats):
        for k in kinds:
            samples[k].append(_rate(fns[k], device, S * batch, steps))
    base = statistics.median(samples["sequential"])
    for k in kinds:
        med = statistics.median(samples[k])
        row = {
            "label": f"{k} S={S}" if k != "sequential" or S > 1 else "single",
            "device": device.type,
            **info,
            "images_per_s": round(med, 1),
            "images_per_s_per_seed": round(med / S, 1),
            "samples": [round(r, 1) for r in samples[k]],
            "steps": steps,
        }
        if k != "sequential":
            row["ratio_to_sequential"] = round(med / base, 3)
        rows.add(row)


def cuda_options(rows: Rows, device: torch.device, steps: int, repeats: int, flops: float) -> None:
    """The one-seed CUDA rows with amp / channels_last (full mode), each against ``plain``."""
    base = None
    for label, opts in OPTIONS.items():
        rate = rows.flop_rate.get("cuda")
        predicted = 0.0 if rate is None else BATCH * flops * (steps * repeats + 3) / rate
        if not rows.fits(f"single {label}", "cuda", predicted, shape="cifar10", seeds=1):
            continue
        cfg = _config(**opts)
        model = build_network(cfg, 3).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum)
        scaler = make_grad_scaler(cfg, device)
        x_, y_ = (t.to(device) for t in _batch(3, 32))

        def step(
            cfg: NetConfig = cfg,
            model: Any = model,
            opt: Any = opt,
            scaler: Any = scaler,
            x: Any = x_,
            y: Any = y_,
        ) -> None:
            train_step(cfg, model, opt, scaler, x, y, N_TRAIN)

        for _ in range(3):
            step()
        rates = [_rate(step, device, BATCH, steps) for _ in range(repeats)]
        med = statistics.median(rates)
        base = base or med
        rows.add(
            {
                "label": f"single {label}",
                "device": "cuda",
                "shape": "cifar10",
                "seeds": 1,
                "batch": BATCH,
                "images_per_s": round(med, 1),
                "images_per_s_per_seed": round(med, 1),
                "flops_per_image": flops,
                "samples": [round(r, 1) for r in rates],
                "ratio_to_plain": round(med / base, 3),
            }
        )


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


def _seed_list(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--device", choices=["all", "cpu", "cuda"], default="all", help="all: cpu, and cuda if present"
    )
    ap.add_argument(
        "--steps", type=int, default=None, help="steps per timing (default: cpu 4, cuda 20; quick fewer)"
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="fewer rows and steps (what make gpu-check runs)")
    ap.add_argument(
        "--max-seconds",
        type=float,
        default=None,
        help="wall-clock budget; rows that would not fit are reported as skipped (default: none)",
    )
    ap.add_argument(
        "--seeds",
        type=_seed_list,
        default=None,
        help="S values of the batched rows, comma-separated (default: cpu 4; cuda 1,4,8 quick, "
        "1,2,4,8,16 full)",
    )
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile rows")
    ap.add_argument("--check-steps", type=int, default=3, help="steps of each determinism check")
    args = ap.parse_args()
    budget = Budget(args.max_seconds)
    if args.device == "cuda" and not torch.cuda.is_available():
        from deepcollapse._core.devices import cuda_missing_message

        instead = "--device cpu (or all: cuda where present)"
        print(cuda_missing_message("--device", "cuda", instead), file=sys.stderr)
        sys.exit(2)
    machine = machine_info()
    rows = Rows(budget)
    flops: dict[str, float] = {}  # the CUDA rows' FLOPs per image (counted on the CPU)
    cpu = None
    if args.device in ("all", "cpu"):
        cores = os.cpu_count() or 1
        S = args.seeds or [4]
        steps = args.steps or (2 if args.quick else 4)
        cases = {
            k: v for k, v in CPU_CASES.items() if not args.quick or k in ("mlp digits", "resnet20 cifar10")
        }
        for threads in [1] if args.quick else sorted({1, cores}):
            torch.set_num_threads(threads)
            for name, (changes, shape, batch) in cases.items():
                f = flops_per_image(shape, batch, **changes)
                n_steps = steps * (10 if "mlp" in name else 1)  # the MLP step takes milliseconds
                for n in S:
                    batched_vs_sequential(
                        rows, torch.device("cpu"), name, shape, batch, n, n_steps, args.repeats, False, f,
                        threads, **changes,
                    )  # fmt: skip
        torch.set_num_threads(cores)
        need = 120 if args.quick else 600
        if budget.allows(need):
            cpu = cpu_section(args)
            for shape in cpu["shapes"].values():
                for r in shape["rows"]:
                    emit({"label": f"cpu option {r['option']}", "device": "cpu", **r})
        else:
            why = (
                f"budget: the CPU options take ~{need} s, {max(budget.left(), 0):.0f} s of --max-seconds left"
            )
            rows.skipped.append({"label": "cpu options", "device": "cpu", "skipped": why})
            emit(rows.skipped[-1])
    if args.device in ("all", "cuda") and torch.cuda.is_available():
        torch.backends.cudnn.benchmark = True
        dev = torch.device("cuda")
        flops = {name: flops_per_image(shape, BATCH) for name, shape in GPU_SHAPES.items()}
        steps = args.steps or (10 if args.quick else 20)
        S = args.seeds or ([1, 4, 8] if args.quick else [1, 2, 4, 8, 16])
        for name, shape in GPU_SHAPES.items():
            for n in S:
                batched_vs_sequential(
                    rows, dev, name, shape, BATCH, n, steps, args.repeats, True, flops[name]
                )
        if not args.quick:
            cuda_options(rows, dev, steps, args.repeats, flops["cifar10"])
    final({
        "benchmark": "net_throughput",
        "model": "ResNet20 + 5-layer bias-free MLP head (width 64), DUFM-like reg, MSE, SGD momentum, "
        "batch 128 (CPU cases: their own backbone and batch)",
        "rows": rows.rows,
        "skipped": rows.skipped,
        "flops_per_image": flops,
        "cpu": cpu,
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "machine": machine,
        "wall_s": round(budget.elapsed(), 1),
        "max_seconds": args.max_seconds,
    })  # fmt: skip


if __name__ == "__main__":
    main()
