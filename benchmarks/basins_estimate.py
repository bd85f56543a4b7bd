"""Runtime estimate of a basin-atlas preset on this machine, from measured throughput (issue 19, part 4).

Steps each cost shape of the preset (K, L, n, width) with the trainer's engine for ``--probe`` seconds at the
preset's runs per trainer call, times the per-run analysis, and prints one JSON object: per shape the
measured seconds per step and run·steps/s, and the estimated wall time of the whole atlas with ``--workers``
task processes (default: as ``reproduce`` starts them, one per CPU up to the number of tasks)
(:func:`deepcollapse.experiments.basin_runtime.estimate_runtime`).  ``--rates FILE`` takes the costs from a
``make gpu-check`` JSON instead of measuring
(:func:`~deepcollapse.experiments.basin_runtime.costs_from_gpu_check`)::

    python benchmarks/basins_estimate.py --preset gpu                # on the GPU machine (device auto)
    python benchmarks/basins_estimate.py --preset laptop --workers 2
    python benchmarks/basins_estimate.py --preset gpu --rates benchmarks/results/gpu_check_h200.json
"""

from __future__ import annotations

import argparse
import json

from deepcollapse._core.io import read_json
from deepcollapse.experiments.basin_runtime import atlas_runtime, costs_from_gpu_check, estimate_runtime
from deepcollapse.experiments.basins import BASINS_GPU, BASINS_LAPTOP, BASINS_SMOKE

PRESETS = {"smoke": BASINS_SMOKE, "laptop": BASINS_LAPTOP, "gpu": BASINS_GPU}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", choices=list(PRESETS), default="laptop")
    p.add_argument("--workers", type=int, default=None, help="parallel task processes")
    p.add_argument("--probe", type=float, default=1.0, help="seconds of stepping per shape")
    p.add_argument("--rates", help="a gpu-check JSON (benchmarks/gpu_check.py --out) instead of measuring")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cuda", help="with --rates: where it steps")
    args = p.parse_args()
    atlas = PRESETS[args.preset]
    if args.rates:
        est = atlas_runtime(
            atlas, costs_from_gpu_check(atlas, read_json(args.rates)), args.workers, args.device
        )
    else:
        est = estimate_runtime(atlas, args.workers, probe_seconds=args.probe)
    keys = ("device", "workers", "tasks", "total_s", "device_s", "host_s", "wall_s")
    out = {
        "preset": args.preset,
        "runs": atlas.total_runs,
        "steps": atlas.steps,
        **{k: est.attrs[k] for k in keys},
    }
    out["wall_h"] = est.attrs["wall_s"] / 3600
    print(json.dumps({**out, "shapes": est.to_dict(orient="records")}, indent=1))


if __name__ == "__main__":
    main()
