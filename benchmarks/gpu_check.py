"""`make gpu-check`: the GPU parity tests and both throughput benchmarks on cuda, one JSON summary on stdout.

Runs from the source tree with whatever Python calls it (``PYTHONPATH=src``), installing nothing: a GPU box
needs its own CUDA PyTorch, numpy, scipy, pandas, matplotlib, PyYAML, tqdm, threadpoolctl, scikit-learn and
pytest.

1. ``tests/gpu`` with ``DEEPCOLLAPSE_TEST_DEVICE=cuda``: the torch DUFM engine on cuda against the numpy
   engine on the CPU (the same loss trajectory to float32 tolerance over 2000 steps) and one network training
   step on cuda against the CPU;
2. ``benchmarks/net_throughput.py --device cuda --quick``: images/s of ResNet20 + head at batch 128, with and
   without amp / channels-last;
3. ``benchmarks/dufm_throughput.py --device cuda`` (rows for R = 1 .. 4096 with the torch engine) when that
   script supports ``--device``; otherwise reported as unavailable.

Each step has its own time limit (together under 5 minutes).  Without a CUDA device it prints a JSON line
saying so and exits 0.  Exit status 1 if a parity test failed or a benchmark crashed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LIMITS = {"parity": 120, "net_throughput": 60, "dufm_throughput": 100}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["DEEPCOLLAPSE_TEST_DEVICE"] = "cuda"
    return env


def _run(cmd: list[str], limit: int) -> dict[str, Any]:
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {limit} s", "wall_s": limit}
    out = {
        "ok": proc.returncode == 0,
        "returncode": proc.returncode,
        "wall_s": round(time.perf_counter() - t, 1),
    }
    out["stdout"], out["stderr_tail"] = proc.stdout, proc.stderr[-2000:]
    return out


def _json_or_tail(res: dict[str, Any]) -> dict[str, Any]:
    text = res.pop("stdout", "")
    try:
        res["result"] = json.loads(text)
        res.pop("stderr_tail", None)
    except json.JSONDecodeError:
        res["stdout_tail"] = text[-2000:]
    return res


def main() -> int:
    try:
        import torch
    except ImportError:
        print(
            json.dumps({"gpu_check": "skipped", "reason": "torch is not importable with " + sys.executable})
        )
        return 0
    if not torch.cuda.is_available():
        print(
            json.dumps(
                {
                    "gpu_check": "skipped",
                    "reason": "no CUDA device found (torch.cuda.is_available() is False)",
                }
            )
        )
        return 0
    summary: dict[str, Any] = {
        "gpu_check": "ran",
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": sys.executable,
    }
    parity = _run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "tests/gpu"],
        LIMITS["parity"],
    )
    parity["stdout_tail"] = parity.pop("stdout", "")[-2000:]
    summary["parity_tests"] = parity
    summary["net_throughput"] = _json_or_tail(
        _run(
            [sys.executable, "benchmarks/net_throughput.py", "--device", "cuda", "--quick"],
            LIMITS["net_throughput"],
        )
    )
    dufm = ROOT / "benchmarks" / "dufm_throughput.py"
    if dufm.is_file() and "--device" in dufm.read_text():
        summary["dufm_throughput"] = _json_or_tail(
            _run([sys.executable, str(dufm), "--device", "cuda"], LIMITS["dufm_throughput"])
        )
    else:
        summary["dufm_throughput"] = {
            "ok": None,
            "error": "benchmarks/dufm_throughput.py has no --device option",
        }
    print(json.dumps(summary, indent=1))
    failed = [
        k for k in ("parity_tests", "net_throughput", "dufm_throughput") if summary[k].get("ok") is False
    ]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
