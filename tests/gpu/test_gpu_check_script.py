"""`make gpu-check` without a GPU: it says so in one JSON line and exits 0, installing nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU the check really runs (minutes)")
def test_gpu_check_without_gpu_exits_0_with_a_json_reason():
    if shutil.which("make"):
        cmd = ["make", "-s", "gpu-check", f"PYTHON={sys.executable}"]
    else:  # pragma: no cover - make is on every dev box and CI
        cmd = [sys.executable, "benchmarks/gpu_check.py"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["gpu_check"] == "skipped" and "no CUDA device" in out["reason"]
