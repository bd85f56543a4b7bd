"""Streaming collapse statistics vs the naive "materialise all features, then compute" approach.

Claim checked: ``CollapseStatistics`` gives the same metrics as ``collapse_metrics`` on the concatenated
features (relative difference reported) at similar throughput, with peak memory independent of N
(O(D² + K D) state plus one batch) instead of O(N D).

Workload: N = 200 000 float32 features of dimension D = 512 (Gaussian clusters around K class centres),
K = 10 and K = 100, produced batch by batch by a seeded generator (the stand-in for a network's forward pass;
its cost is measured separately and subtracted for the "metric" throughput).

* ``naive``: write every batch into one (N, D) float32 array, then ``collapse_metrics`` (all metrics incl. NC1
  pinv, NCC accuracy).
* ``streaming``: two passes (statistics, then NCC accuracy) with ``CollapseStatistics`` / ``NCCStatistics``;
  same metrics.
* ``streaming_no_outer``: one pass, ``outer=False`` (everything except ``nc1_pinv`` and NCC accuracy).

Reported as JSON: per K and method the median wall time over ``--repeats`` runs, throughput (samples/s, with
and without the generator's time), ratio to naive, and peak traced memory (``tracemalloc``, measured in a
separate run so tracing does not perturb the timings).  BLAS runs single-threaded
(``OMP/OPENBLAS/MKL_NUM_THREADS=1`` unless set) so the numbers do not depend on what else runs on the machine.

Run:  ``.venv/bin/python benchmarks/metrics_streaming.py`` (a few minutes on a 2-core CPU)
      ``.venv/bin/python benchmarks/metrics_streaming.py --quick`` (seconds; N = 20 000, D = 128)
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from deepcollapse.metrics.functional import collapse_metrics  # noqa: E402
from deepcollapse.metrics.streaming import CollapseStatistics  # noqa: E402

COMPARE = (
    "nc1_trace_ratio",
    "nc1_pinv",
    "cdnv",
    "nc2_cond",
    "nc2_etf_error",
    "effective_rank",
    "ncc_accuracy",
)


def batches(N: int, D: int, K: int, batch: int, seed: int = 0) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Deterministic float32 batches: h = 3 c_y + noise, labels cycling through 0..K-1."""
    centres = 3.0 * np.random.default_rng(seed).standard_normal((K, D), dtype=np.float32)
    for i, start in enumerate(range(0, N, batch)):
        b = min(batch, N - start)
        rng = np.random.default_rng([seed, i + 1])
        y = (np.arange(start, start + b) % K).astype(np.int64)
        yield centres[y] + rng.standard_normal((b, D), dtype=np.float32), y


def generate_only(N: int, D: int, K: int, batch: int) -> dict[str, Any]:
    total = 0.0
    for h, _ in batches(N, D, K, batch):
        total += float(h[0, 0])
    return {"checksum": total}


def naive(N: int, D: int, K: int, batch: int) -> dict[str, Any]:
    H = np.empty((N, D), dtype=np.float32)  # (N, D) materialised features
    y = np.empty(N, dtype=np.int64)
    pos = 0
    for h, lab in batches(N, D, K, batch):
        H[pos : pos + len(lab)], y[pos : pos + len(lab)] = h, lab
        pos += len(lab)
    return collapse_metrics(H, y, num_classes=K)


def streaming(N: int, D: int, K: int, batch: int) -> dict[str, Any]:
    stats = CollapseStatistics(K, D)
    for h, lab in batches(N, D, K, batch):
        stats.update(h, lab)
    ncc = stats.ncc_statistics()
    for h, lab in batches(N, D, K, batch):  # second pass: NCC needs the final class means
        ncc.update(h, lab)
    return stats.compute(ncc)


def streaming_no_outer(N: int, D: int, K: int, batch: int) -> dict[str, Any]:
    stats = CollapseStatistics(K, D, outer=False)
    for h, lab in batches(N, D, K, batch):
        stats.update(h, lab)
    return stats.compute()


METHODS: dict[str, Callable[..., dict[str, Any]]] = {
    "naive": naive,
    "streaming": streaming,
    "streaming_no_outer": streaming_no_outer,
}


def timed(fn: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def peak_memory(fn: Callable[..., Any], *args: Any) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def rel_diff(a: Any, b: Any) -> float | None:
    if a is None or b is None:
        return None if a is None and b is None else float("inf")
    return abs(a - b) / max(abs(b), 1e-300)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 20000, D = 128, 1 repeat")
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--classes", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.dim, args.repeats = 20_000, 128, 1
    N, D, B = args.n, args.dim, args.batch

    result: dict[str, Any] = {
        "benchmark": "metrics_streaming",
        "N": N,
        "D": D,
        "batch": B,
        "repeats": args.repeats,
        "feature_dtype": "float32",
        "threads": os.environ.get("OMP_NUM_THREADS"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, python {platform.python_version()}, "
        f"numpy {np.__version__}",
        "naive_features_bytes": N * D * 4,
        "results": [],
    }
    for fn in METHODS.values():  # warm-up: imports, BLAS initialisation, first-call overheads
        fn(2000, 16, 4, 512)
    for K in args.classes:
        gen = statistics.median(timed(generate_only, N, D, K, B)[0] for _ in range(args.repeats))
        entry: dict[str, Any] = {"K": K, "generator_seconds": gen, "methods": {}}
        outputs = {}
        for name, fn in METHODS.items():
            times = []
            for _ in range(args.repeats):
                t, out = timed(fn, N, D, K, B)
                times.append(t)
            outputs[name] = out
            t = statistics.median(times)
            passes = 2 if name == "streaming" else 1
            entry["methods"][name] = {
                "seconds_median": t,
                "seconds_all": times,
                "samples_per_second": N / t,
                "metric_samples_per_second": N / max(t - passes * gen, 1e-9),
                "peak_traced_bytes": peak_memory(fn, N, D, K, B),
            }
        base = entry["methods"]["naive"]
        for stats in entry["methods"].values():
            stats["throughput_ratio_to_naive"] = base["seconds_median"] / stats["seconds_median"]
            stats["peak_memory_ratio_to_naive"] = stats["peak_traced_bytes"] / base["peak_traced_bytes"]
        entry["max_rel_diff_streaming_vs_naive"] = {
            k: rel_diff(outputs["streaming"][k], outputs["naive"][k]) for k in COMPARE
        }
        entry["naive_metrics"] = {k: outputs["naive"][k] for k in COMPARE}
        result["results"].append(entry)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
