"""benchmarks/net_throughput.py keeps to --max-seconds, printing each row as it is measured (stream.py) with
the fields gpu_check reads (label, images_per_s, seeds, flops_per_image), and the rows that would not fit as
skipped rows; the final line is the whole result (check tier: about 40 s of CPU)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from stream import read_rows  # noqa: E402  (benchmarks/stream.py, a script module)


@pytest.mark.check
def test_the_quick_cpu_run_keeps_to_its_budget_and_streams_its_rows():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "benchmarks/net_throughput.py", "--device", "cpu", "--quick", "--max-seconds", "30"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows, result = read_rows(proc.stdout)
    assert (
        result is not None and result["wall_s"] <= 30 and wall < 30 + 15
    )  # + interpreter and torch start-up
    measured = [r for r in rows if "skipped" not in r]
    assert measured and result["rows"] == measured
    for r in measured:
        assert {"label", "images_per_s", "images_per_s_per_seed", "seeds", "flops_per_image"} <= r.keys()
        assert r["images_per_s"] > 0 and r["flops_per_image"] > 0
    batched = [r for r in measured if r["label"].startswith("batched")]
    assert batched and all(r["seeds"] == 4 and r["ratio_to_sequential"] > 0 for r in batched)
    assert [r for r in rows if "skipped" in r] == result["skipped"] and result[
        "skipped"
    ]  # CIFAR options skipped
