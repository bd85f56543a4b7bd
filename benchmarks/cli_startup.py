"""How long the command line takes to answer: wall time of ``deepcollapse --version``, ``--help`` of each
command group and ``theory compare`` (the flagship table), median of ``--repeats`` fresh processes.

    python benchmarks/cli_startup.py                      # this checkout
    python benchmarks/cli_startup.py --other /tmp/old     # and another checkout's src/, same interpreter

Prints one JSON object: per command the median and all samples (seconds), the 1-minute load average before
and after (a shared machine's start-up times scale with its load), the CPU model and the Python version.  With
``--other``, the same commands run from that checkout (``PYTHONPATH=OTHER/src``) interleaved with this one,
and ``ratio`` = other / this.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from machine import cpu_model  # benchmarks/machine.py (a sibling script module)

COMMANDS = (
    ["--version"],
    ["--help"],
    ["dufm", "train", "--help"],
    ["net", "train", "--help"],
    ["reproduce", "--help"],
    ["theory", "compare"],
)
HERE = Path(__file__).resolve().parents[1]


def once(src: Path, argv: list[str]) -> float:
    """Wall seconds of ``python -m deepcollapse ARGV`` with ``src`` first on the path (output discarded)."""
    env = dict(os.environ, PYTHONPATH=str(src))
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "deepcollapse", *argv], env=env, capture_output=True, cwd="/", check=False
    )
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"cli_startup: `deepcollapse {' '.join(argv)}` exited {proc.returncode} from {src}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--repeats", type=int, default=7, help="fresh processes per command (default: 7)")
    parser.add_argument("--other", help="another checkout to time the same way (its src/ on PYTHONPATH)")
    args = parser.parse_args()
    trees = {"this": HERE / "src"}
    if args.other:
        trees["other"] = Path(args.other).resolve() / "src"
        if not (trees["other"] / "deepcollapse").is_dir():
            raise SystemExit(f"cli_startup: --other == {args.other!r} has no src/deepcollapse")
    load_before = os.getloadavg()[0]
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    for argv in COMMANDS:
        key = " ".join(argv)
        for _ in range(args.repeats):
            for name, src in trees.items():  # interleaved: both see the same load
                samples[name].setdefault(key, []).append(once(src, argv))
    rows = {}
    for key in samples["this"]:
        row: dict[str, object] = {
            "median_s": statistics.median(samples["this"][key]),
            "samples_s": [round(s, 4) for s in samples["this"][key]],
        }
        if "other" in samples:
            other = statistics.median(samples["other"][key])
            row["other_median_s"] = other
            row["ratio_other_over_this"] = other / float(row["median_s"])  # type: ignore[arg-type]
        rows[f"deepcollapse {key}"] = row
    print(
        json.dumps(
            {
                "cpu": cpu_model(),
                "cores": os.cpu_count(),
                "python": platform.python_version(),
                "load_1min": [load_before, os.getloadavg()[0]],
                "repeats": args.repeats,
                "other": args.other,
                "commands": rows,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
