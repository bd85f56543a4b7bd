"""Images/s of one training step of ResNet20 + a 4-layer MLP head (width 64) at batch 128, and the expected
GPU runtime of each paper network figure.

One JSON object on stdout:

- ``rows``: per device (``cpu``, and ``cuda`` when present) and option set (``plain`` float32, ``amp``,
  ``channels_last``, ``amp+channels_last``): the median images/s over ``--repeats`` timings of ``--steps``
  steps (after warm-up), and the ratio to ``plain`` on the same device measured in the same run.  The step is
  the trainer's own :func:`deepcollapse.nets.train.train_step` (DUFM-like regularisation, MSE, SGD
  momentum) on random 3×32×32 inputs (CIFAR-10 size; the data does not change the cost).
- ``flops_per_image``: FLOPs of one training step (forward + backward) and of one evaluation forward pass per
  image, counted by ``torch.utils.flop_counter.FlopCounterMode`` (2 FLOPs per multiply-add), for CIFAR-10 and
  MNIST inputs.
- ``gpu_estimates``: for each paper preset (:data:`deepcollapse.experiments.net_presets.NET_PRESETS`), total
  FLOPs (epochs × training images × step FLOPs + evaluations × training and test images × forward FLOPs, ×
  seeds × grid points) divided by an **assumed** sustained GPU throughput (``--gpu-tflops``, default 5
  TFLOP/s: a conservative figure for a 0.27 M-parameter CNN at batch 128, launch-bound on any A100/H100-class
  GPU; with a measured cuda row the estimate from the measured images/s is given too).  These are estimates,
  not measurements.
- ``blas``: threadpoolctl's view of the BLAS/OpenMP libraries, torch's thread count and oneDNN availability.

    python benchmarks/net_throughput.py                  # ~1-3 min on 2 CPU cores
    python benchmarks/net_throughput.py --quick          # fewer steps
    python benchmarks/net_throughput.py --device cuda    # only the cuda rows (and the estimates)

Measure with ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`` for that command alone (project rule).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from typing import Any

import torch

from deepcollapse.experiments.net_presets import NET_PRESETS, net_preset
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.train import build_network, make_grad_scaler, train_step

BATCH = 128
OPTIONS = {
    "plain": {},
    "amp": {"amp": True},
    "channels_last": {"channels_last": True},
    "amp+channels_last": {"amp": True, "channels_last": True},
}
DATA = {  # (channels, size, training images, test images)
    "cifar10": (3, 32, 50_000, 10_000),
    "mnist": (1, 28, 60_000, 10_000),
}


def _config(**changes: Any) -> NetConfig:
    return NetConfig(
        dataset="digits",
        layers=4,
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


def images_per_second(device: torch.device, options: dict[str, Any], steps: int, repeats: int) -> list[float]:
    """Images/s of ``steps`` training steps at batch 128 (after 3 warm-up steps), ``repeats`` times."""
    cfg = _config(**options)
    model = build_network(cfg, 3).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum)
    scaler = make_grad_scaler(cfg, device)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH, 3, 32, 32, generator=gen).to(device)  # (B, C, H, W)
    y = torch.randint(0, 10, (BATCH,), generator=gen).to(device)  # (B,)
    for _ in range(3):
        train_step(cfg, model, opt, scaler, x, y, 50_000)
    _sync(device)
    rates = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(steps):
            train_step(cfg, model, opt, scaler, x, y, 50_000)
        _sync(device)
        rates.append(steps * BATCH / (time.perf_counter() - t))
    return rates


def flops_per_image(channels: int, size: int) -> dict[str, float]:
    """FLOPs per image of one training step and of one evaluation forward pass (ResNet20 + 4-layer head)."""
    from torch.utils.flop_counter import FlopCounterMode

    cfg = _config()
    model = build_network(cfg, channels)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)
    x = torch.randn(BATCH, channels, size, size)
    y = torch.randint(0, 10, (BATCH,))
    with FlopCounterMode(display=False) as fc:
        train_step(cfg, model, opt, make_grad_scaler(cfg, x.device), x, y, 50_000)
    train = fc.get_total_flops() / BATCH
    with FlopCounterMode(display=False) as fc, torch.no_grad():
        model.eval()
        model(x)
    return {"train_step": train, "eval_forward": fc.get_total_flops() / BATCH}


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


def blas_info() -> dict[str, Any]:
    try:
        from threadpoolctl import threadpool_info

        pools = [
            {k: p.get(k) for k in ("internal_api", "num_threads", "version", "architecture")}
            for p in threadpool_info()
        ]
    except ImportError:  # pragma: no cover
        pools = []
    return {
        "threadpools": pools,
        "torch_threads": torch.get_num_threads(),
        "mkldnn": torch.backends.mkldnn.is_available(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--device", choices=["all", "cpu", "cuda"], default="all", help="all: cpu and cuda if present"
    )
    ap.add_argument("--steps", type=int, default=None, help="steps per timing (default 4 on cpu, 50 on cuda)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="2 steps per timing on cpu, 20 on cuda")
    ap.add_argument("--gpu-tflops", type=float, default=5.0, help="assumed sustained GPU TFLOP/s (estimates)")
    args = ap.parse_args()
    devices = []
    if args.device in ("all", "cpu"):
        devices.append(torch.device("cpu"))
    if args.device in ("all", "cuda"):
        if torch.cuda.is_available():
            devices.append(torch.device("cuda"))
            torch.backends.cudnn.benchmark = True
        elif args.device == "cuda":
            print(
                "device == 'cuda', must be available (no CUDA device found); use --device cpu.",
                file=sys.stderr,
            )
            sys.exit(2)
    rows = []
    for dev in devices:
        steps = args.steps or ((2 if args.quick else 4) if dev.type == "cpu" else (20 if args.quick else 50))
        base = None
        for label, opts in OPTIONS.items():
            rates = images_per_second(dev, opts, steps, args.repeats)
            med = statistics.median(rates)
            base = base or med
            rows.append(
                {
                    "device": str(dev),
                    "options": label,
                    "images_per_s_median": round(med, 1),
                    "images_per_s": [round(r, 1) for r in rates],
                    "ratio_to_plain": round(med / base, 3),
                    "steps": steps,
                    "batch": BATCH,
                }
            )
    flops = {name: flops_per_image(c, s) for name, (c, s, _, _) in DATA.items()}
    cuda_plain = next(
        (r["images_per_s_median"] for r in rows if r["device"] == "cuda" and r["options"] == "plain"), None
    )
    result = {
        "benchmark": "net_throughput",
        "model": "ResNet20 + 4-layer bias-free MLP head (width 64), DUFM-like reg, MSE, SGD momentum",
        "rows": rows,
        "flops_per_image": flops,
        "gpu_estimates": gpu_estimates(flops, args.gpu_tflops, cuda_plain),
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "blas": blas_info(),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
