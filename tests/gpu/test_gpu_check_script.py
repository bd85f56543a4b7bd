"""`make gpu-check` (benchmarks/gpu_check.py): without a GPU it says so and exits 0, installing nothing; its
summary's arithmetic (workloads as fractions of the measured ceilings, missing fields named, never a crash);
and the dry run on the CPU (``--device cpu``, the claims tier): every step finishes within its own limit and
leaves its rows, so a step that cannot finish in its limit is found before a GPU is spent on it."""

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
    assert not (ROOT / "benchmarks" / "results" / "gpu_check.json.tmp").exists()


def _gpu_check_command(*words: str) -> str:
    proc = subprocess.run(["make", "-n", "gpu-check", *words], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    (line,) = [w for w in proc.stdout.splitlines() if "gpu_check.py" in w]
    return line


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_gpu_check_uses_the_venv_python_and_keeps_the_python_override(tmp_path):
    """Issue 45, point 5: right after `make demo`, `make gpu-check` ran the system python3 and said "torch is
    not importable". It runs .venv's python where there is one, else $(PYTHON); `PYTHON=...` on the command
    line (a GPU box's own CUDA PyTorch) and GPU_PYTHON still choose."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    assert f"PYTHONPATH=src {venv}/bin/python benchmarks/gpu_check.py" in _gpu_check_command(f"VENV={venv}")
    no_venv = f"VENV={tmp_path / 'none'}"
    assert "PYTHONPATH=src python3 benchmarks/gpu_check.py" in _gpu_check_command(no_venv)
    assert "src python3.99 benchmarks" in _gpu_check_command(f"VENV={venv}", "PYTHON=python3.99")
    assert "src /opt/py benchmarks" in _gpu_check_command(f"VENV={venv}", "GPU_PYTHON=/opt/py")


def test_workloads_are_fractions_of_the_measured_ceilings_and_missing_fields_are_named(script_module):
    g = script_module("benchmarks/gpu_check.py")
    ceilings = {"fp32": 50.0, "tf32": 400.0, "bf16": 800.0}
    steps = {
        "dufm_throughput": {
            "rows": [
                {"kind": "ceiling", "format": "fp32", "tflops": 51.0},
                {"kind": "analysis", "observe_s": 0.01, "classify_s": 0.1},
                {
                    "kind": "step",
                    "label": "flagship R=4096 graph",
                    "runs_steps_per_s": 2e6,
                    "flops_per_step": 9e6,
                },
                {"kind": "step", "label": "flagship R=65536 compile", "skipped": "budget: 3 s left"},
            ]
        },
        "net_throughput": {
            "rows": [
                {"label": "single", "device": "cuda", "shape": "cifar10", "seeds": 1, "images_per_s": 10620.0,
                 "images_per_s_per_seed": 10620.0, "flops_per_image": 2.5e9},
                {"label": "single amp", "device": "cuda", "shape": "cifar10", "seeds": 1,
                 "images_per_s": 8600.0, "images_per_s_per_seed": 8600.0, "flops_per_image": 2.5e9},
                {"label": "sequential S=5", "device": "cuda", "shape": "cifar10", "seeds": 5,
                 "images_per_s": 10000.0, "images_per_s_per_seed": 2000.0, "flops_per_image": 2.5e9},
                {"label": "batched S=5", "device": "cuda", "shape": "cifar10", "seeds": 5,
                 "images_per_s": 50000.0, "images_per_s_per_seed": 10000.0, "flops_per_image": 2.5e9,
                 "ratio_to_sequential": 5.0},
                {"label": "graph S=5", "device": "cuda", "shape": "mnist", "seeds": 5, "images_per_s": 8e4,
                 "images_per_s_per_seed": 1.6e4, "flops_per_image": 1e9, "ratio_to_sequential": 6.0},
                {"label": "batched S=8", "device": "cuda", "shape": "mnist", "skipped": "budget: 3 s left"},
                {"label": "no flops", "images_per_s": 1.0},
            ]
        },
    }  # fmt: skip
    missing: list[str] = []
    work = g.workloads(steps, ceilings, missing)
    w = {x["label"]: x for x in work}
    assert set(w) == {"flagship R=4096 graph", "single", "single amp", "sequential S=5", "batched S=5",
                      "graph S=5"}  # fmt: skip
    assert w["flagship R=4096 graph"]["tflops"] == pytest.approx(18.0)  # 2e6 · 9e6 / 1e12
    assert w["flagship R=4096 graph"]["ceiling"] == "fp32"
    assert w["flagship R=4096 graph"]["fraction_of_ceiling"] == pytest.approx(18.0 / 50.0)
    assert w["single"]["ceiling"] == "tf32" and w["single"]["fraction_of_ceiling"] == pytest.approx(
        26.55 / 400
    )
    assert w["single amp"]["ceiling"] == "bf16" and w["single amp"]["fraction_of"]["fp32"] == pytest.approx(
        21.5 / 50
    )
    assert w["batched S=5"]["seeds"] == 5
    assert missing == ["net_throughput row 'no flops': no flops_per_image"]
    # the network step by shape: one seed and S batched seeds, each against its ceiling (TF32, bf16 for amp)
    net = g.net_summary(work)
    assert list(net) == ["cifar10", "mnist"]
    c10 = {e["label"]: e for e in net["cifar10"]}
    assert [e["what"] for e in net["cifar10"]] == ["one seed", "one seed", "one seed", "5 batched seeds"]
    assert c10["single amp"]["ceiling"] == "bf16" and c10["single amp"][
        "fraction_of_ceiling"
    ] == pytest.approx(8600 * 2.5e9 / 1e12 / 800)
    b = c10["batched S=5"]
    assert b["fraction_of_ceiling"] == pytest.approx(50000 * 2.5e9 / 1e12 / 400)
    assert b["images_per_s_per_seed"] == 10000.0 and b["speedup_over_one_at_a_time"] == 5.0
    assert "speedup_over_one_at_a_time" not in c10["single"]
    (graph,) = net["mnist"]
    assert graph["what"] == "5 batched seeds (CUDA graph)" and graph["fraction_of_ceiling"] == pytest.approx(
        8e4 * 1e9 / 1e12 / 400
    )
    assert g.pytest_counts("4 passed, 1 skipped in 12.3s") == {"passed": 4, "skipped": 1}


@pytest.mark.check  # about 1.5-3 minutes: each benchmark uses its budget on the CPU
def test_dry_run_on_the_cpu_every_step_within_its_limit_and_leaves_its_rows(tmp_path, script_module):
    g = script_module("benchmarks/gpu_check.py")
    out = tmp_path / "dry.json"
    proc = subprocess.run(
        [sys.executable, "benchmarks/gpu_check.py", "--device", "cpu", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=sum(g.LIMITS.values()) + 60,
    )
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0, (summary.get("failed"), proc.stderr[-3000:])
    assert json.loads(out.read_text()) == summary
    assert summary["gpu_check"] == "dry run on the CPU" and summary["failed"] == []
    assert summary["wall_s"] <= sum(g.LIMITS.values())
    assert set(summary["steps"]) == set(g.LIMITS)
    for name, step in summary["steps"].items():
        assert step["ok"] and not step["timed_out"] and step["wall_s"] <= step["limit_s"], (name, step)
        if name != "parity":
            measured = [r for r in step["rows"] if not r.get("skipped") and not r.get("error")]
            assert measured, f"{name} left no measured row"
            why = [
                r["skipped"] for r in step["rows"] if r.get("skipped")
            ]  # the budget, or no such CPU format
            assert all("budget" in w or "on the CPU" in w for w in why), why
    counts = summary["steps"]["parity"]["counts"]
    assert counts["passed"] >= 4 and "failed" not in counts  # tests/gpu, batched seeds included
    # the network step: one seed and S batched seeds, each as a fraction of the CPU's fp32 ceiling
    net = summary["net"]
    assert net and all(
        e["ceiling"] == "fp32" and e["fraction_of_ceiling"] > 0 for v in net.values() for e in v
    )
    whats = {e["what"] for v in net.values() for e in v}
    assert "one seed" in whats and any(w.endswith("batched seeds") for w in whats), whats
    assert summary["ceilings_tflops"]["fp32"] > 0
    rows = [
        r for r in summary["steps"]["dufm_throughput"]["rows"] if r.get("kind") == "step" and "seconds" in r
    ]
    assert {r["step_loop_ran"] for r in rows} <= {"chunk", "eager", "compile"}  # no CUDA graphs on a CPU
    cost = [r["runs"] * r["flops_per_step"] for r in rows]
    assert cost == sorted(cost)  # rows in increasing cost
    assert any(r["kind"] == "analysis" and (r["classes"], r["width"]) == (10, 32) for r in
               summary["steps"]["dufm_throughput"]["rows"])  # fmt: skip
    dufm = [w for w in summary["workloads"] if w["step"] == "dufm_throughput"]
    assert len(dufm) == len(rows)
    for w, r in zip(dufm, rows):
        tflops = r["runs_steps_per_s"] * r["flops_per_step"] / 1e12
        assert w["fraction_of_ceiling"] == pytest.approx(tflops / summary["ceilings_tflops"]["fp32"])
