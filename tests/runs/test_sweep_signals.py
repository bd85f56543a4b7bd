"""A sweep stopped by SIGINT or SIGTERM sent to its main process only (``kill PID``, a scheduler's SIGTERM;
not the process group): the workers stop, every running task writes its checkpoint, the command exits
130 / 143 and names the command that resumes, and no worker process outlives it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _training(out: Path) -> list[Path]:
    """The run folders whose trainer has written its step-0 records (so its signal handler is installed)."""
    return [p for p in out.glob("points/*/*/metrics.jsonl") if p.stat().st_size > 0]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the worker processes")
@pytest.mark.parametrize(
    "signum",
    [
        pytest.param(signal.SIGINT, marks=pytest.mark.check),
        signal.SIGTERM,
    ],  # the same path; SIGINT: check tier
    ids=["SIGINT", "SIGTERM"],
)
def test_sweep_stops_workers_writes_checkpoints_and_exits(tmp_path, signum):
    out = tmp_path / "sweep"
    cmd = [
        sys.executable,
        "-m",
        "deepcollapse",
        "sweep",
        "--out",
        str(out),
        "--workers",
        "2",
        "--no-progress",
    ]
    cmd += ["--base", "classes=3", "--base", "n=2", "--base", "layers=3", "--base", "width=6"]
    cmd += ["--base", "steps=100000000", "--base", "log_every=200", "--base", "checkpoint_every=100000000"]
    cmd += ["--grid", "lam=0.004,0.008,0.016", "--seeds", "0"]  # 3 tasks on 2 workers: one stays queued
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # a worker is in its trainer's loop (whose handler writes the checkpoint) once the step-0 records are
        # in metrics.jsonl: the file is created empty before the set-up, and a signal during the set-up
        # stops the task without a checkpoint (the message then counts it among those with none)
        deadline = time.time() + 120
        while time.time() < deadline and len(_training(out)) < 2:
            time.sleep(0.2)
        assert len(_training(out)) == 2, "the two workers did not start training"
        workers = _children(proc.pid)
        assert workers, "no worker processes found"
        proc.send_signal(signum)  # the main process only
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum, err[-3000:]
    assert f"resume with: deepcollapse sweep --out {out}" in err
    started = [p.parent for p in out.glob("points/*/*/metrics.jsonl")]
    assert len(started) == 2  # the queued task never started
    for folder in started:
        ck = torch.load(folder / "checkpoint.pt", weights_only=True)
        assert 0 < ck["step"] < 100000000  # written on the signal, not at a checkpoint_every boundary
        assert not (folder / "summary.json").exists()
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.2)
    assert not [p for p in workers if _alive(p)], "worker processes outlived the sweep"
