"""`make gpu-check`: the GPU parity tests and the throughput benchmarks on one GPU, measured as they go, in
under 5 minutes; one JSON summary.

Runs from the source tree with whatever Python calls it (``PYTHONPATH=src``), installing nothing: a GPU box
needs its own CUDA PyTorch, numpy, scipy, pandas, matplotlib, PyYAML, tqdm, threadpoolctl, scikit-learn and
pytest.  The steps, each a subprocess with its own time limit (:data:`LIMITS`, 290 s together) and, for the
benchmarks, a self-budget a little below it (``--max-seconds``, :data:`BUDGETS`):

1. ``ceilings`` -- ``benchmarks/ceilings.py``: the device's own GEMM ceilings, measured now (TFLOP/s of a
   large fp32 product with TF32 off, TF32, bf16 and fp16);
2. ``parity`` -- ``tests/gpu`` with ``DEEPCOLLAPSE_TEST_DEVICE``: the torch DUFM engine on the device
   (CUDA-graph step loop, R up to 8192) against the CPU engines, one network training step against the CPU,
   S batched seeds on the device against the seeds alone on the CPU and the CUDA-graph-captured batched step
   against the eager one;
3. ``dufm_throughput`` -- ``benchmarks/dufm_throughput.py --cuda-only``: runs·steps/s of the DUFM engine for
   R = 1 … 65 536 at the flagship and at K = 15, L = 7, per step loop, and the per-run analysis cost;
4. ``net_throughput`` -- ``benchmarks/net_throughput.py --quick``: images/s of the network step, one seed
   (row ``single``; on the CPU ``sequential S=...``: S seeds one after the other) and S seeds batched
   (``batched S=...``, on CUDA also ``graph S=...``), rows with ``label``, ``shape``, ``seeds``,
   ``images_per_s``, ``images_per_s_per_seed`` and ``flops_per_image``.

Every benchmark prints its rows as JSON lines while it measures (``benchmarks/stream.py``); they are echoed
to stderr as ``[step] ...`` and kept, so a step stopped at its limit still leaves its numbers.  The summary
(the last line on stdout; ``--out FILE`` also writes it, after every step) gives each step's status, wall
time and rows, the ceilings, and every workload as a fraction of them: DUFM rows ``runs_steps_per_s ·
flops_per_step``, network rows ``images_per_s · flops_per_image``, each against fp32 (the DUFM engine's
float32 ``bmm`` runs without TF32), TF32 (float32 network rows: cuDNN convolutions use TF32 by default) or
bf16 (amp rows) as its primary ceiling, and against all of them.  ``net`` picks out of them, per input
shape, the images/s of one seed and of S batched seeds (with the batch's speed-up over stepping its seeds one
after the other), each as a fraction of its ceiling.  A field a row lacks is listed under ``missing``, never
a crash.  The limits add up to 290 s; a step's limit includes stopping it (:data:`GRACE`), so the whole
check, with its own start, stays under 5 minutes.

Exit status 1 if a parity test failed, a step crashed or ran past its limit, or a benchmark row failed;
rows skipped because they would not fit in the budget are not failures.  Without a CUDA device it prints
a JSON line saying so and exits 0.  ``--device cpu`` is the dry run: every step on the CPU with the same
structure and limits (a CPU test runs it, so that a step that cannot finish in its limit is found before a
GPU is spent on it)::

    make gpu-check PYTHON=python3          # on the GPU box: also writes benchmarks/results/gpu_check.json
    python benchmarks/gpu_check.py --device cpu --out /tmp/dry.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from stream import read_rows  # noqa: E402  (benchmarks/stream.py)

#: wall-clock limit of each step in seconds, stopping it included (the whole check: under 5 minutes)
LIMITS = {"ceilings": 30, "parity": 100, "dufm_throughput": 100, "net_throughput": 60}
#: seconds of a step's limit kept for stopping it (SIGTERM, then SIGKILL) when it runs past the rest
GRACE = 3.0
#: each benchmark's own budget (--max-seconds): its limit less start-up (imports, CUDA context) and one row
BUDGETS = {"ceilings": 20, "dufm_throughput": 80, "net_throughput": 45}
_AMP_WORDS = ("amp", "bf16", "fp16", "half")


def _env(device: str) -> dict[str, str]:
    env = dict(os.environ)
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["DEEPCOLLAPSE_TEST_DEVICE"] = device
    return env


def run_step(name: str, cmd: list[str], limit: float, device: str) -> dict[str, Any]:
    """Run one step's command with a time limit, echoing its output to stderr line by line; return its
    status, wall time, the JSON rows it printed (and its final result), and the tails of its output."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=_env(device),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: a timeout stops its children too
    )
    out: list[str] = []
    err: list[str] = []

    def pump(stream: Any, sink: list[str]) -> None:
        for line in stream:
            sink.append(line)
            sys.stderr.write(f"[{name}] {line}")
            sys.stderr.flush()

    readers = [
        threading.Thread(target=pump, args=(s, k), daemon=True)
        for s, k in ((proc.stdout, out), (proc.stderr, err))
    ]
    for r in readers:
        r.start()
    timed_out = False
    try:
        proc.wait(timeout=limit - GRACE)
    except subprocess.TimeoutExpired:
        timed_out = True
        for sig, wait in ((signal.SIGTERM, GRACE - 1.0), (signal.SIGKILL, 1.0)):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=wait)
                break
            except (subprocess.TimeoutExpired, ProcessLookupError):
                continue
    for r in readers:
        r.join(timeout=1)
    rows, result = read_rows("".join(out))
    res: dict[str, Any] = {
        "command": " ".join(cmd[1:]),
        "limit_s": limit,
        "wall_s": round(time.perf_counter() - t0, 2),
        "returncode": proc.returncode,
        "timed_out": timed_out,
        "ok": proc.returncode == 0 and not timed_out,
        "rows": rows,
        "final": result,
        "skipped_rows": sum(1 for r in rows if r.get("skipped")),
        "failed_rows": [r.get("label", r) for r in rows if r.get("error")],
    }
    if timed_out:
        res["error"] = f"ran past its limit of {limit:g} s (stopped; the rows it printed are kept)"
    elif proc.returncode != 0:
        res["error"] = f"exit status {proc.returncode}"
    if not res["ok"] or not rows:
        res["stdout_tail"], res["stderr_tail"] = "".join(out)[-2000:], "".join(err)[-2000:]
    return res


def pytest_counts(text: str) -> dict[str, int]:
    """``{"passed": 5, "skipped": 1, ...}`` from pytest's summary line."""
    return {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected)", text)}


def workloads(steps: dict[str, Any], ceilings: dict[str, float], missing: list[str]) -> list[dict[str, Any]]:
    """Every measured benchmark row as TFLOP/s and as fractions of the ceilings (module docstring); a row
    without the fields it needs is named in ``missing``."""
    out = []
    for name, step in steps.items():
        if name not in ("dufm_throughput", "net_throughput"):
            continue
        for row in step.get("rows", []):
            if row.get("skipped") or row.get("error") or row.get("kind") in ("ceiling", "analysis"):
                continue
            label = str(row.get("label") or row)
            if name == "dufm_throughput":
                rate, per, unit = row.get("runs_steps_per_s"), row.get("flops_per_step"), "runs·steps/s"
                need = ("runs_steps_per_s", "flops_per_step")
                primary = "fp32"
            else:
                rate, per, unit = row.get("images_per_s"), row.get("flops_per_image"), "images/s"
                need = ("images_per_s", "flops_per_image")
                amp = any(w in label.lower() for w in _AMP_WORDS) or row.get("amp") is True
                primary = "bf16" if amp else ("tf32" if "tf32" in ceilings else "fp32")
            lacking = [k for k in need if not isinstance(row.get(k), int | float)]
            if lacking:
                missing.append(f"{name} row {label!r}: no {', '.join(lacking)}")
                continue
            assert rate is not None and per is not None
            tflops = float(rate) * float(per) / 1e12
            w: dict[str, Any] = {"step": name, "label": label, "rate": rate, "unit": unit, "tflops": tflops}
            for key in ("device", "shape", "seeds", "images_per_s_per_seed", "ratio_to_sequential"):
                if key in row:
                    w[key] = row[key]
            w["ceiling"] = primary
            w["fraction_of_ceiling"] = tflops / ceilings[primary] if ceilings.get(primary) else None
            w["fraction_of"] = {k: tflops / v for k, v in ceilings.items() if v}
            out.append(w)
    return out


def net_summary(work: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per input shape of the network step: the images/s of one seed (``single``, ``single amp`` etc., or
    ``sequential S=...``: S seeds stepped one after the other) and of S batched seeds (``batched S=...``,
    ``graph S=...``: the same step captured in a CUDA graph), each with its fraction of its ceiling; a
    batched row also gives ``speedup_over_one_at_a_time`` (its images/s over those of its S seeds stepped
    one after the other, measured interleaved with it).  ``work``: :func:`workloads`' rows."""
    out: dict[str, list[dict[str, Any]]] = {}
    for w in work:
        label = w["label"]
        if w["step"] != "net_throughput" or "shape" not in w:
            continue
        if label == "single" or label.startswith(("single ", "sequential S=")):
            what = "one seed"
        elif label.startswith(("batched S=", "graph S=")):
            what = f"{w['seeds']} batched seeds" + (" (CUDA graph)" if label.startswith("graph") else "")
        else:
            continue
        entry = {"what": what, "label": label, "device": w.get("device"), "seeds": w.get("seeds", 1),
                 "images_per_s": w["rate"], "images_per_s_per_seed": w.get("images_per_s_per_seed"),
                 "tflops": w["tflops"], "ceiling": w["ceiling"],
                 "fraction_of_ceiling": w["fraction_of_ceiling"]}  # fmt: skip
        if what != "one seed" and "ratio_to_sequential" in w:
            entry["speedup_over_one_at_a_time"] = w["ratio_to_sequential"]
        out.setdefault(w["shape"], []).append(entry)
    return out


def _write(path: str | None, summary: dict[str, Any]) -> None:
    if path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(p.suffix + ".tmp")
        tmp.write_text(json.dumps(summary, indent=1) + "\n")
        os.replace(tmp, p)


def _table(summary: dict[str, Any]) -> str:
    lines = [f"gpu-check on {summary['device']}: ceilings (TFLOP/s) " + ", ".join(
        f"{k} {v:.4g}" for k, v in summary["ceilings_tflops"].items())]  # fmt: skip
    for name, step in summary["steps"].items():
        state = "ok" if step.get("ok") else "FAILED"
        lines.append(f"  {name:<16} {state:<8} {step.get('wall_s', 0):6.1f} s of {step.get('limit_s', 0):g} s"
                     + (f"  ({step['error']})" if step.get("error") else ""))  # fmt: skip
    for w in summary["workloads"]:
        if w["step"] == "net_throughput":
            continue  # below, by shape
        frac = w["fraction_of_ceiling"]
        lines.append(f"  {w['label']:<34} {w['rate']:12.5g} {w['unit']:<13} {w['tflops']:8.4g} TFLOP/s"
                     + (f"  {frac:.3g} of {w['ceiling']}" if frac is not None else ""))  # fmt: skip
    for shape, entries in summary["net"].items():
        lines.append(f"  network step, {shape} (images/s):")
        for e in entries:
            frac, per = e["fraction_of_ceiling"], e["images_per_s_per_seed"]
            lines.append(
                f"    {e['what'] + ' [' + e['label'] + ']':<40} {e['images_per_s']:10.5g}"
                + (f" ({per:.5g} per seed)" if e["what"] != "one seed" and per is not None else "")
                + (f"  {frac:.3g} of {e['ceiling']}" if frac is not None else "")
                + (f", {e['speedup_over_one_at_a_time']:.3g}x one at a time"
                   if "speedup_over_one_at_a_time" in e else "")
            )  # fmt: skip
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        default="cuda",
        help="cpu: the dry run, every step on the CPU with the same structure and limits (no GPU needed)",
    )
    ap.add_argument(
        "--out", help="also write the summary JSON here (after every step), e.g. benchmarks/results/"
    )
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print(
            json.dumps({"gpu_check": "skipped", "reason": "torch is not importable with " + sys.executable})
        )
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        reason = "no CUDA device found (torch.cuda.is_available() is False)"
        print(json.dumps({"gpu_check": "skipped", "reason": reason}))
        return 0
    py, dev = sys.executable, args.device
    summary: dict[str, Any] = {
        "gpu_check": "ran" if dev == "cuda" else "dry run on the CPU",
        "device": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": py,
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "limits_s": LIMITS,
        "budgets_s": BUDGETS,
        "steps": {},
        "ceilings_tflops": {},
        "workloads": [],
        "net": {},
        "missing": [],
    }
    t0 = time.perf_counter()
    commands = {
        "ceilings": [py, "benchmarks/ceilings.py", "--device", dev],
        "parity": [
            py,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "-m",
            "not slow and not check",
            "tests/gpu",
        ],  # fmt: skip
        "dufm_throughput": [py, "benchmarks/dufm_throughput.py", "--device", dev, "--cuda-only"],
        "net_throughput": [py, "benchmarks/net_throughput.py", "--device", dev, "--quick"],
    }
    for name, cmd in commands.items():
        if name in BUDGETS:
            cmd = [*cmd, "--max-seconds", str(BUDGETS[name])]
        step = run_step(name, cmd, LIMITS[name], dev)
        if name == "parity":
            step["counts"] = pytest_counts(step.get("stdout_tail", "") or "")
        summary["steps"][name] = step
        if name == "ceilings":
            summary["ceilings_tflops"] = dict((step.get("final") or {}).get("ceilings_tflops") or {}) or {
                r["format"]: r["tflops"] for r in step["rows"] if "tflops" in r
            }
        summary["wall_s"] = round(time.perf_counter() - t0, 1)
        _write(args.out, summary)
    if "fp32" not in summary["ceilings_tflops"]:
        summary["missing"].append("ceilings: no fp32 GEMM ceiling measured")
    summary["workloads"] = workloads(summary["steps"], summary["ceilings_tflops"], summary["missing"])
    summary["net"] = net_summary(summary["workloads"])
    summary["failed"] = [
        n for n, s in summary["steps"].items() if s.get("ok") is False or s.get("failed_rows")
    ]
    summary["wall_s"] = round(time.perf_counter() - t0, 1)
    _write(args.out, summary)
    print(_table(summary), file=sys.stderr)
    print(json.dumps(summary))
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
