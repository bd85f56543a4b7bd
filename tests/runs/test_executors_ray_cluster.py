"""``--ray-address`` against a real ``ray start --head`` cluster on the loopback address, with token
authentication on (as recent Ray starts new clusters): with the token the sweep runs there and gives the local
table; without it the CLI prints one line saying how to pass the token, exit 2; a dead address fails fast.

The cluster is started by the test in its own session (``--block``) and stopped by signalling that process
group only; about 40 s in all."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

pytestmark = [pytest.mark.ray, pytest.mark.check]  # a real cluster: ~40 s, the claims tier
ray = pytest.importorskip("ray")

TOKEN = "deepcollapse-test-token-0123456789abcdef"
SWEEP = [
    "--base",
    "classes=3",
    "--base",
    "n=2",
    "--base",
    "layers=2",
    "--base",
    "width=4",
    "--base",
    "steps=50",
]
SWEEP += ["--base", "log_every=25", "--grid", "lam=0.004,0.008", "--seeds", "0", "--no-progress"]


def _free_port() -> int:
    with socket.socket() as s:  # outside Ray's default worker port range 10002-19999
        for port in range(26400, 26500):
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def cluster():
    here = Path(sys.executable).parent / "ray"  # the ray of this interpreter's environment
    ray_bin = str(here) if here.is_file() else shutil.which("ray")
    if ray_bin is None:
        pytest.skip("the ray command line is not installed")
    port = _free_port()
    tmp = Path(tempfile.mkdtemp(prefix="dcray"))  # short: Ray's unix socket paths must stay < 108 chars
    env = _env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=TOKEN, HOME=str(tmp))
    cmd = [ray_bin, "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}"]
    cmd += ["--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={tmp / 'r'}"]
    log = open(tmp / "ray.log", "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"ray start exited {proc.returncode}: {(tmp / 'ray.log').read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("ray start --head did not listen within 90 s")
        time.sleep(2)  # the raylet registers after the GCS listens
        yield f"127.0.0.1:{port}", tmp
    finally:  # stop only the processes this fixture started: its own process group
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # stragglers of the group (workers) after `ray start` exited
        except ProcessLookupError:
            pass
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _sweep(out: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "deepcollapse", "sweep", *SWEEP, "--out", str(out), *extra]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)


def test_sweep_on_token_cluster_with_and_without_token(cluster, tmp_path):
    address, home = cluster
    # without the token: one line that says how to pass it, exit 2, no traceback
    t0 = time.time()
    bad = _sweep(tmp_path / "bad", _env(HOME=str(tmp_path)), "--executor", "ray", "--ray-address", address)
    assert bad.returncode == 2, bad.stderr[-3000:]
    errors = [line for line in bad.stderr.splitlines() if line.startswith("deepcollapse: error:")]
    assert len(errors) == 1 and "RAY_AUTH_TOKEN" in errors[0] and "RAY_AUTH_MODE=disabled" in errors[0]
    assert "Traceback" not in bad.stderr
    assert time.time() - t0 < 120
    # with the token: the sweep runs on the cluster and gives the same table as the local executor
    env = _env(HOME=str(tmp_path), RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=TOKEN)
    good = _sweep(tmp_path / "ray", env, "--executor", "ray", "--ray-address", address)
    assert good.returncode == 0, good.stderr[-3000:]
    local = _sweep(tmp_path / "local", _env(), "--workers", "1")
    assert local.returncode == 0, local.stderr[-3000:]
    cols = ["point", "seed", "final_loss", "mean_rank"]
    a = pd.read_csv(tmp_path / "ray" / "results.csv")[cols]
    b = pd.read_csv(tmp_path / "local" / "results.csv")[cols]
    pd.testing.assert_frame_equal(a, b)


def test_dead_address_fails_fast_with_one_line(tmp_path):
    port = _free_port()  # nothing listens there
    t0 = time.time()
    res = _sweep(tmp_path / "x", _env(), "--executor", "ray", "--ray-address", f"127.0.0.1:{port}")
    assert res.returncode == 2
    assert time.time() - t0 < 60
    errors = [line for line in res.stderr.splitlines() if line.startswith("deepcollapse: error:")]
    assert len(errors) == 1 and "ray start --head" in errors[0], res.stderr[-2000:]
