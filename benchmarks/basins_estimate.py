"""Runtime estimate of a basin-atlas preset on this machine, from measured throughput (issue 19, part 4).

Steps each cost shape of the preset (K, L, n, width) with the trainer's engine for ``--probe`` seconds at the
preset's runs per trainer call, times the per-run analysis, and prints one JSON object: per shape the
measured seconds per step and run·steps/s, and the estimated wall time of the whole atlas with ``--workers``
task processes (:func:`deepcollapse.experiments.basins.estimate_runtime`)::

    python benchmarks/basins_estimate.py --preset gpu --workers 8      # on the GPU machine (device auto)
    python benchmarks/basins_estimate.py --preset laptop --workers 2
"""

from __future__ import annotations

import argparse
import json

from deepcollapse.experiments.basins import BASINS_GPU, BASINS_LAPTOP, BASINS_SMOKE, estimate_runtime

PRESETS = {"smoke": BASINS_SMOKE, "laptop": BASINS_LAPTOP, "gpu": BASINS_GPU}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", choices=list(PRESETS), default="laptop")
    p.add_argument("--workers", type=int, default=2, help="parallel task processes")
    p.add_argument("--probe", type=float, default=1.0, help="seconds of stepping per shape")
    args = p.parse_args()
    atlas = PRESETS[args.preset]
    est = estimate_runtime(atlas, args.workers, probe_seconds=args.probe)
    print(
        json.dumps(
            {
                "preset": args.preset,
                "runs": atlas.total_runs,
                "steps": atlas.steps,
                **{k: est.attrs[k] for k in ("device", "workers", "tasks", "total_s", "wall_s")},
                "wall_h": est.attrs["wall_s"] / 3600,
                "shapes": est.to_dict(orient="records"),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
