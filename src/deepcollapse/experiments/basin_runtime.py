"""Runtime estimate of a basin atlas from measured throughput (:func:`estimate_runtime`), used by the
``basins`` experiments before they start and by ``benchmarks/basins_estimate.py``.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from deepcollapse.experiments.basin_atlas import BasinAtlas, atlas_tasks
from deepcollapse.runs.executors import Task

__all__ = ["duration_text", "estimate_runtime"]


def estimate_runtime(atlas: BasinAtlas, workers: int, *, probe_seconds: float = 1.0) -> pd.DataFrame:
    """Estimate the atlas's wall time on this machine from measured throughput, per cost shape.

    For each distinct (K, L, n, width): the trainer's engine (:class:`~deepcollapse.dufm.trainer.NumpyEngine`
    or ``TorchEngine``, as the trainer picks for the atlas's device) advances ``runs_per_task`` runs in one
    batch in one call of about ``probe_seconds`` (after a warm-up), giving seconds per step; the
    per-run analysis (``observe_run`` at each record, ``classify_run`` at the end) is timed on one probe
    run.  A task costs ``steps · t_step + R · (records + 1) · t_observe + R · t_classify``; the total is
    the sum over tasks divided by ``min(workers, tasks)`` (tasks balanced over the workers; on one GPU the
    workers share it, so the estimate holds while the GPU is not saturated).

    Parameters
    ----------
    atlas : BasinAtlas
        The atlas.
    workers : int
        Parallel task processes.
    probe_seconds : float
        Time spent stepping each shape.

    Returns
    -------
    DataFrame
        One row per shape: ``classes, layers, n, width, tasks, runs_per_task, probe_steps, step_s,
        run_steps_per_s, observe_s, classify_s, task_s, total_s``; ``attrs["total_s"]`` and
        ``attrs["wall_s"]`` (the estimate) and ``attrs["device"]``.
    """
    from deepcollapse.dufm.classify import classify_run, theory_of
    from deepcollapse.dufm.config import DUFMConfig
    from deepcollapse.dufm.model import init_params
    from deepcollapse.dufm.trainer import NumpyEngine, TorchEngine, observe_run
    from deepcollapse.theory.constructions import srg_gram

    tasks = atlas_tasks(atlas, Path("."))
    shapes: dict[tuple[int, int, int, int], list[Task]] = {}
    for t in tasks:
        c = t.config
        shapes.setdefault((c["classes"], c["layers"], c["n"], c["width"][0]), []).append(t)
    rows = []
    for (K, L, n, d), group in shapes.items():
        cfg = DUFMConfig.from_dict({**group[0].config, "runs": atlas.runs_per_task, "seed": 0})
        params = [t.numpy().copy() for t in init_params(cfg).tensors()]
        engine = NumpyEngine(params, cfg) if cfg.resolved_backend == "numpy" else TorchEngine(params, cfg)
        try:
            engine.advance(0, np.full(2, cfg.lr))  # warm-up (numba compilation, CUDA context)
            engine.numpy_params()
            t0 = time.perf_counter()  # a short call gives the rate, then one call of about probe_seconds
            engine.advance(2, np.full(5, cfg.lr))
            engine.numpy_params()
            steps = max(5, int(probe_seconds / max((time.perf_counter() - t0) / 5, 1e-9)))
            t0 = time.perf_counter()
            engine.advance(7, np.full(steps, cfg.lr))  # one call, as the trainer's chunks of many steps
            P = engine.numpy_params()  # (synchronises a GPU)
            step_s = (time.perf_counter() - t0) / steps
        finally:
            engine.close()
        H1, Ws = P[0][0].astype(np.float64), [W[0].astype(np.float64) for W in P[1:]]
        one = DUFMConfig.from_dict({**cfg.to_dict(), "runs": 1, "device": "cpu"})
        t0 = time.perf_counter()
        observe_run(H1, Ws, one)
        observe_s = time.perf_counter() - t0
        theory = theory_of(one)
        G = srg_gram(K) if K >= 6 and theory.get("loss_srg") is not None else None
        t0 = time.perf_counter()
        classify_run(H1, Ws, one, None, theory, G, [(0, None), (steps, None)])
        classify_s = time.perf_counter() - t0
        task_s = [
            atlas.steps * step_s
            + t.config["runs"] * ((atlas.steps // t.config["log_every"] + 1) * observe_s + classify_s)
            for t in group
        ]
        rows.append(
            {
                "classes": K,
                "layers": L,
                "n": n,
                "width": d,
                "tasks": len(group),
                "runs_per_task": atlas.runs_per_task,
                "probe_steps": steps,
                "step_s": step_s,
                "run_steps_per_s": atlas.runs_per_task / step_s,
                "observe_s": observe_s,
                "classify_s": classify_s,
                "task_s": float(np.mean(task_s)),
                "total_s": float(np.sum(task_s)),
            }
        )
    df = pd.DataFrame(rows)
    total = float(df["total_s"].sum())
    df.attrs.update(
        total_s=total,
        wall_s=total / max(1, min(workers, len(tasks))),
        device=str(DUFMConfig.from_dict(tasks[0].config).device),
        workers=workers,
        tasks=len(tasks),
    )
    return df


def duration_text(s: float) -> str:
    """``s`` seconds as "42 s", "3.5 min" or "2.1 h"."""
    return f"{s:.0f} s" if s < 120 else (f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h")
