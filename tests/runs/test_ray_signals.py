"""A Ray sweep stopped by SIGINT or SIGTERM sent to its driver: the driver cancels the Ray tasks (Ray raises
``KeyboardInterrupt`` in a running one through its SIGINT handler), every running trainer writes its
checkpoint, the queued task never starts, and the command exits 130 / 143 naming the command that resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

pytestmark = [pytest.mark.ray, pytest.mark.check]  # a local Ray instance: ~30 s, the claims tier
pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]


def _training(out: Path) -> list[Path]:
    return [p for p in out.glob("points/*/*/metrics.jsonl") if p.stat().st_size > 0]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ray_sweep_cancels_its_tasks_which_write_checkpoints(tmp_path, signum):
    out = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "deepcollapse", "sweep", "--out", str(out), "--executor", "ray"]
    cmd += ["--workers", "2", "--no-progress"]
    cmd += ["--base", "classes=3", "--base", "n=2", "--base", "layers=3", "--base", "width=6"]
    cmd += ["--base", "steps=100000000", "--base", "log_every=200", "--base", "checkpoint_every=100000000"]
    cmd += ["--grid", "lam=0.004,0.008,0.016", "--seeds", "0"]  # 3 tasks on 2 Ray CPUs: one stays queued
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # in its trainer's loop (whose handler writes the checkpoint) once the step-0 records are written:
        # metrics.jsonl is created empty before the set-up (see test_sweep_signals.py)
        deadline = time.time() + 180
        while time.time() < deadline and len(_training(out)) < 2:
            time.sleep(0.2)
        assert len(_training(out)) == 2, "the two Ray tasks did not start training"
        proc.send_signal(signum)  # the driver only: Ray's workers are in another process group
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signum, err[-3000:]
    assert f"resume with: deepcollapse sweep --out {out}" in err
    assert "2 can resume from their checkpoint, 1 have no checkpoint" in err
    started = [p.parent for p in out.glob("points/*/*/metrics.jsonl")]
    assert len(started) == 2  # the queued task never started
    for folder in started:
        ck = torch.load(folder / "checkpoint.pt", weights_only=True)
        assert 0 < ck["step"] < 100000000  # written on the signal, not at a checkpoint_every boundary
        assert not (folder / "summary.json").exists()
