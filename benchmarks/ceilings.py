"""The device's own GEMM ceilings, measured now: TFLOP/s of one large square matrix product per number format.

* ``fp32`` -- float32 with TF32 off (``torch.backends.cuda.matmul.allow_tf32 = False``, torch's default): the
  true float32 ceiling, and the one the DUFM engine's float32 ``bmm`` runs against (it never enables TF32);
* ``tf32`` -- float32 inputs on tensor cores (cuda only): what cuDNN's float32 convolutions use by default
  (``torch.backends.cudnn.allow_tf32`` is on), so the ceiling of a float32 network step;
* ``bf16`` / ``fp16`` -- 16-bit tensor-core products: the ceiling of autocast (``--amp``; float16 on CUDA).

Prints one JSON line per format as it is measured and a final line with ``ceilings_tflops`` (``{format:
TFLOP/s}``; the protocol of :mod:`stream`).  ``dufm_throughput.py`` and ``gpu_check.py`` call
:func:`gemm_tflops`::

    python benchmarks/ceilings.py --device cuda --max-seconds 20
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch
from stream import Budget, emit, final  # benchmarks/stream.py (a sibling script module)

from deepcollapse._core.devices import synchronize

FORMATS = ("fp32", "tf32", "bf16", "fp16")
_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def default_size(device: torch.device) -> int:
    """8192 on a GPU (a product of ≈ 1.1 TFLOP), 1024 on the CPU."""
    return 8192 if device.type == "cuda" else 1024


def gemm_tflops(
    device: torch.device | str, fmt: str = "fp32", size: int | None = None, repeats: int = 5
) -> float:
    """Median TFLOP/s (2 n³ per product) of ``repeats`` timings of ``n × n`` products in format ``fmt``
    (:data:`FORMATS`), each timing long enough (≥ 50 ms) to hide launch and clock-ramp effects.

    TF32 is switched on for ``tf32`` only and the previous settings are restored.
    """
    device = torch.device(device)
    if fmt == "tf32" and device.type != "cuda":
        raise ValueError("tf32 is a CUDA tensor-core format")
    n = size or default_size(device)
    dtype = _DTYPES[fmt]
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = fmt == "tf32"
    try:
        g = torch.Generator(device=device).manual_seed(0)
        a = torch.randn(n, n, device=device, dtype=torch.float32, generator=g).to(dtype)
        b = torch.randn(n, n, device=device, dtype=torch.float32, generator=g).to(dtype)
        c = torch.empty(n, n, device=device, dtype=dtype)
        torch.mm(a, b, out=c)  # warm-up (cuBLAS handles, clocks)
        synchronize(device)
        t = time.perf_counter()
        torch.mm(a, b, out=c)
        synchronize(device)
        k = max(1, int(0.05 / max(time.perf_counter() - t, 1e-9)))  # products per timing
        rates = []
        for _ in range(repeats):
            synchronize(device)
            t = time.perf_counter()
            for _ in range(k):
                torch.mm(a, b, out=c)
            synchronize(device)
            rates.append(k * 2 * n**3 / (time.perf_counter() - t) / 1e12)
        return statistics.median(rates)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


def measure(device: torch.device, budget: Budget, size: int | None = None) -> dict[str, Any]:
    """Every format this device has, as rows printed while measured; returns ``{format: TFLOP/s}``."""
    ceilings: dict[str, Any] = {}
    last = 0.0
    for fmt in FORMATS:
        if device.type != "cuda" and fmt in ("tf32", "fp16"):  # (CPU fp16 products run at ~1 GFLOP/s)
            emit({"format": fmt, "skipped": f"no {fmt} tensor cores on the CPU"})
            continue
        if not budget.allows(2 * last):
            emit({"format": fmt, "skipped": f"budget: {budget.left():.1f} s left"})
            continue
        t = time.perf_counter()
        try:
            rate = gemm_tflops(device, fmt, size)
        except RuntimeError as exc:  # e.g. a CPU build without fast fp16 products
            emit({"format": fmt, "skipped": str(exc).splitlines()[0]})
            continue
        last = time.perf_counter() - t
        ceilings[fmt] = rate
        emit({"format": fmt, "tflops": round(rate, 3), "size": size or default_size(device), "seconds": last})
    return ceilings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--max-seconds", type=float, default=None, help="stop starting formats after this long")
    ap.add_argument("--size", type=int, default=None, help="matrix size (default 8192 on a GPU, 1024 on CPU)")
    args = ap.parse_args()
    device = torch.device(args.device)
    budget = Budget(args.max_seconds)
    ceilings = measure(device, budget, args.size)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    final(
        {
            "benchmark": "ceilings",
            "device": name,
            "torch_threads": torch.get_num_threads(),
            "ceilings_tflops": ceilings,
            "wall_s": budget.elapsed(),
        }
    )


if __name__ == "__main__":
    main()
