"""Runtime of a basin atlas from measured throughput: what each cost shape costs (:func:`measure_shape` and
:func:`measure_analysis`, a short calibration on this machine, or :func:`costs_from_gpu_check`, the rates of
a ``make gpu-check`` JSON) and the wall time they add up to (:func:`atlas_runtime`).  The ``basins``
experiments print the estimate before they start and compare it with the wall time at the end;
``benchmarks/basins_estimate.py`` prints it alone; ``tools/runtime_table.py`` writes the README's table of
paper-scale runtimes from a gpu-check JSON.

The model.  A task (one trainer call of ``R`` runs) costs ``steps · step_s`` of stepping (on the atlas's
device) and ``R · ((records + 1) · observe_s + classify_s)`` of per-run analysis on the CPU (the records of
``metrics.jsonl`` and the classification of ``summary.json``).  ``workers`` task processes share the
work; on the CPU the wall time is the total over ``min(workers, tasks)``; on one GPU the workers share the
device, whose stepping does not overlap, so the wall time is the larger of the total stepping time and the
total over the workers.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deepcollapse.experiments.basin_atlas import BasinAtlas, atlas_tasks
from deepcollapse.runs.executors import Task

__all__ = [
    "ShapeCost",
    "atlas_runtime",
    "atlas_shapes",
    "costs_from_gpu_check",
    "duration_text",
    "estimate_runtime",
    "measure_analysis",
    "measure_shape",
    "task_workers",
]

Shape = tuple[int, int, int, int]  # (K, L, n, width)


@dataclass(frozen=True)
class ShapeCost:
    """What one cost shape costs: ``step_s`` seconds per GD step of ``runs`` runs batched in one trainer call
    (on the atlas's device), ``observe_s`` and ``classify_s`` seconds of CPU analysis per run and record /
    per run, and where the numbers come from (``source``)."""

    runs: int
    step_s: float
    observe_s: float
    classify_s: float
    source: str


def _shape(task: Task) -> Shape:
    c = task.config
    return (c["classes"], c["layers"], c["n"], c["width"][0])


def atlas_shapes(atlas: BasinAtlas, tasks: Sequence[Task] | None = None) -> dict[Shape, list[Task]]:
    """The atlas's tasks (or ``tasks``) grouped by cost shape ``(K, L, n, width)``, in order of appearance.

    Parameters
    ----------
    atlas : BasinAtlas
        The atlas.
    tasks : sequence of Task, optional
        Group these tasks instead of all of the atlas's
        (:func:`~deepcollapse.experiments.basin_atlas.atlas_tasks`).

    Returns
    -------
    dict of tuple to list of Task
        ``(classes, layers, n, width)`` -> the tasks of that shape.

    Examples
    --------
    >>> from deepcollapse.experiments.basin_atlas import BasinAtlas
    >>> atlas = BasinAtlas(classes=3, layers=2, n=2, width=4, steps=100, runs=2, runs_per_task=2)
    >>> {shape: len(group) for shape, group in atlas_shapes(atlas).items()}
    {(3, 2, 2, 4): 1}
    """
    shapes: dict[Shape, list[Task]] = {}
    for t in atlas_tasks(atlas, Path(".")) if tasks is None else tasks:
        shapes.setdefault(_shape(t), []).append(t)
    return shapes


def task_workers(workers: int | None, tasks: int) -> int:
    """The task processes the local executor starts: ``workers``, or one per pending task up to the CPU
    count (:func:`~deepcollapse.runs.executors.run_tasks`).

    Parameters
    ----------
    workers : int or None
        The processes asked for (``None`` or 0: as the executor picks).
    tasks : int
        The pending tasks.

    Returns
    -------
    int
        At least 1.

    Examples
    --------
    >>> task_workers(4, 10), task_workers(None, 1)
    (4, 1)
    """
    return workers or max(1, min(tasks, os.cpu_count() or 1))


def measure_shape(config: Any, probe_seconds: float = 1.0, total_steps: int | None = None) -> float:
    """Seconds per GD step of ``config.runs`` runs with the engine the trainer picks for ``config`` (a
    :class:`~deepcollapse.dufm.config.DUFMConfig`), in one call of about ``probe_seconds`` (at most 1 % of
    the ``total_steps`` the shape will take) after a warm-up (numba compilation, the CUDA context and
    graphs), as the trainer's chunks of many steps run.

    Parameters
    ----------
    config : DUFMConfig
        The trainer config of the shape (its ``runs`` runs batched).
    probe_seconds : float, default 1.0
        About how long the timed call steps.
    total_steps : int, optional
        The steps the shape will take in all; the probe is capped at 1 % of their time.

    Returns
    -------
    float
        Seconds per GD step (of all ``config.runs`` runs together).

    Examples
    --------
    >>> from deepcollapse.experiments.basin_atlas import BasinAtlas
    >>> atlas = BasinAtlas(classes=3, layers=2, n=2, width=4, steps=100, runs=2, runs_per_task=2)
    >>> from deepcollapse.experiments.basin_atlas import cell_config
    >>> measure_shape(cell_config(atlas, atlas.base, seed=0, runs=2), probe_seconds=0.01) > 0
    True
    """
    from deepcollapse.dufm.fit import ENGINES
    from deepcollapse.dufm.model import init_params

    params = [t.numpy().copy() for t in init_params(config).tensors()]
    engine = ENGINES[config.resolved_backend](params, config)  # the fit loop's own choice
    try:
        engine.advance(0, np.full(20, config.lr))  # warm-up; advance synchronises with a device
        t0 = time.perf_counter()  # a short call gives the rate, then one call of about probe_seconds
        engine.advance(20, np.full(5, config.lr))
        step_s = max((time.perf_counter() - t0) / 5, 1e-9)
        if total_steps is not None:
            probe_seconds = min(probe_seconds, 0.01 * total_steps * step_s)
        steps = max(5, int(probe_seconds / step_s))
        t0 = time.perf_counter()
        engine.advance(25, np.full(steps, config.lr))
        return (time.perf_counter() - t0) / steps
    finally:
        engine.close()
        if config.device == "cuda":
            import torch

            torch.cuda.empty_cache()  # give the calibration's memory back to the task processes


def measure_analysis(config: Any) -> tuple[float, float]:
    """``(observe_s, classify_s)``: seconds of the trainer's per-run analysis on one run of ``config``'s
    shape, on the CPU -- one record of ``metrics.jsonl`` (``observe_run``) and the classification of
    ``summary.json`` (``classify_run``) -- timed on a run after 100 GD steps from its initialisation.

    Parameters
    ----------
    config : DUFMConfig
        The trainer config of the shape (its ``runs`` and ``device`` are ignored: one run on the CPU).

    Returns
    -------
    tuple of float
        ``(observe_s, classify_s)``, seconds per record and per run.

    Examples
    --------
    >>> from deepcollapse.experiments.basin_atlas import BasinAtlas
    >>> atlas = BasinAtlas(classes=3, layers=2, n=2, width=4, steps=100, runs=2, runs_per_task=2)
    >>> from deepcollapse.experiments.basin_atlas import cell_config
    >>> observe_s, classify_s = measure_analysis(cell_config(atlas, atlas.base, seed=0, runs=2))
    >>> observe_s > 0 and classify_s > 0
    True
    """
    from deepcollapse.dufm.classify import classify_run, theory_of
    from deepcollapse.dufm.config import DUFMConfig
    from deepcollapse.dufm.kernel import advance_limited, one_blas_thread
    from deepcollapse.dufm.model import init_params
    from deepcollapse.dufm.trainer import observe_run
    from deepcollapse.theory.constructions import srg_gram

    c = DUFMConfig.from_dict(
        {**config.to_dict(), "runs": 1, "device": "cpu", "backend": "auto", "step_loop": "auto"}
    )
    P = [t.numpy().copy() for t in init_params(c).tensors()]
    P, _ = advance_limited(P, np.full(100, c.lr), 0, c.problem, sub_batch=1)
    H1, Ws = P[0][0].astype(np.float64), [W[0].astype(np.float64) for W in P[1:]]
    with one_blas_thread():  # as the trainer runs its analysis
        t0 = time.perf_counter()
        observe_run(H1, Ws, c)
        observe_s = time.perf_counter() - t0
        theory = theory_of(c)
        G = srg_gram(c.classes) if c.classes >= 6 and theory.get("loss_srg") is not None else None
        t0 = time.perf_counter()
        classify_run(H1, Ws, c, None, theory, G, [(0, None), (100, None)])
        return observe_s, time.perf_counter() - t0


def costs_from_gpu_check(
    atlas: BasinAtlas, summary: Mapping[str, Any], step_loop: str | None = None
) -> dict[Shape, ShapeCost]:
    """Each cost shape's :class:`ShapeCost` from a ``make gpu-check`` JSON (``benchmarks/gpu_check.py
    --out``): the stepping rate of its ``dufm_throughput`` rows and its per-run analysis rows.

    Stepping: the rows of ``step_loop`` (default: ``graph`` where the JSON has such rows, else ``chunk``, the
    defaults on cuda and on the CPU) that ran at the largest measured ``R`` not above the atlas's
    ``runs_per_task`` (all of them when none is smaller), as achieved FLOP/s interpolated in log FLOPs per
    step between the measured sizes (:func:`~deepcollapse.dufm.kernel.estimate_runs_steps_per_s`).  Analysis:
    the ``analysis`` row of the same shape, else of the nearest width with the same K, L and n.

    Raises ``ValueError`` naming what the JSON lacks.

    Parameters
    ----------
    atlas : BasinAtlas
        The atlas whose shapes (:func:`atlas_shapes`) are costed.
    summary : mapping
        The gpu-check JSON, read (``summary["steps"]["dufm_throughput"]["rows"]``).
    step_loop : str, optional
        Whose stepping rows to use (``"graph"``, ``"chunk"``, ...); default as above.

    Returns
    -------
    dict of tuple to ShapeCost
        ``(K, L, n, width)`` -> its cost (``source``: ``"gpu-check rows at R = <R> (<step_loop>)"``).

    Examples
    --------
    >>> from deepcollapse.experiments.basin_atlas import BasinAtlas
    >>> atlas = BasinAtlas(classes=3, layers=2, n=2, width=4, steps=100, runs=2, runs_per_task=2)
    >>> rows = [{"kind": "step", "step_loop_ran": "chunk", "runs": 2, "flops_per_step": 1008,
    ...          "runs_steps_per_s": 4000.0},
    ...         {"kind": "analysis", "classes": 3, "layers": 2, "n": 2, "width": 8, "observe_s": 0.001,
    ...          "classify_s": 0.01}]
    >>> costs = costs_from_gpu_check(atlas, {"steps": {"dufm_throughput": {"rows": rows}}})
    >>> cost = costs[(3, 2, 2, 4)]
    >>> cost.step_s, cost.classify_s, cost.source
    (0.0005, 0.01, 'gpu-check rows at R = 2 (chunk)')
    """
    from deepcollapse.dufm.config import DUFMConfig
    from deepcollapse.dufm.kernel import estimate_runs_steps_per_s

    rows = [
        r for r in summary.get("steps", {}).get("dufm_throughput", {}).get("rows", []) if not r.get("skipped")
    ]
    steps = [r for r in rows if r.get("kind") == "step"]
    if step_loop is None:
        step_loop = "graph" if any(r.get("step_loop_ran") == "graph" for r in steps) else "chunk"
    steps = [r for r in steps if r.get("step_loop_ran") == step_loop]
    if not steps:
        raise ValueError(f"the gpu-check JSON has no dufm_throughput step rows of step_loop {step_loop!r}")
    measured_R = sorted({int(r["runs"]) for r in steps})
    R = max([r for r in measured_R if r <= atlas.runs_per_task] or [min(measured_R)])
    at_R = [r for r in steps if int(r["runs"]) == R]
    analysis = [r for r in rows if r.get("kind") == "analysis"]
    out = {}
    for (K, L, n, d), group in atlas_shapes(atlas).items():
        cfg = DUFMConfig.from_dict({**group[0].config, "device": "cpu", "runs": atlas.runs_per_task})
        rate = estimate_runs_steps_per_s(cfg.shapes, at_R)
        same = [r for r in analysis if (r["classes"], r["layers"], r["n"]) == (K, L, n)]
        if not same:
            raise ValueError(f"the gpu-check JSON has no analysis row for K = {K}, L = {L}, n = {n}")
        a = min(same, key=lambda r: abs(math.log(r["width"] / d)))
        out[(K, L, n, d)] = ShapeCost(
            atlas.runs_per_task,
            atlas.runs_per_task / rate,
            float(a["observe_s"]),
            float(a["classify_s"]),
            f"gpu-check rows at R = {R} ({step_loop})",
        )
    return out


def atlas_runtime(
    atlas: BasinAtlas,
    costs: Mapping[Shape, ShapeCost],
    workers: int | None,
    device: str,
    tasks: Sequence[Task] | None = None,
) -> pd.DataFrame:
    """The wall time of the atlas's tasks (the module docstring's model) from each shape's cost.

    Parameters
    ----------
    atlas : BasinAtlas
        The atlas.
    costs : mapping
        :class:`ShapeCost` of every shape of :func:`atlas_shapes`.
    workers : int or None
        Task processes (``None``: as the local executor picks, :func:`task_workers`).
    device : {'cpu', 'cuda'}
        Where the tasks step.
    tasks : sequence of Task, optional
        Only these tasks of the atlas (e.g. the ones not done yet); default all.

    Returns
    -------
    DataFrame
        One row per shape: ``classes, layers, n, width, tasks, runs_per_task, step_s, run_steps_per_s,
        observe_s, classify_s, device_s, host_s, task_s, total_s, source``; ``attrs``: ``total_s``,
        ``device_s`` (stepping), ``host_s`` (analysis), ``wall_s`` (the estimate), ``device``, ``workers``,
        ``tasks``.

    Examples
    --------
    >>> from deepcollapse.experiments.basin_atlas import BasinAtlas
    >>> atlas = BasinAtlas(classes=3, layers=2, n=2, width=4, steps=100, runs=2, runs_per_task=2)
    >>> costs = {shape: ShapeCost(2, 0.001, 0.0001, 0.01, "made up") for shape in atlas_shapes(atlas)}
    >>> df = atlas_runtime(atlas, costs, 1, "cpu")
    >>> round(df.attrs["device_s"], 4), round(df.attrs["host_s"], 4), df.attrs["tasks"]
    (0.1, 0.0222, 1)
    """
    rows = []
    n_tasks = 0
    for shape, group in atlas_shapes(atlas, tasks).items():
        c = costs[shape]
        n_tasks += len(group)
        device_s = [atlas.steps * c.step_s for _ in group]
        host_s = [
            t.config["runs"] * ((atlas.steps // t.config["log_every"] + 1) * c.observe_s + c.classify_s)
            for t in group
        ]
        K, L, n, d = shape
        rows.append(
            {
                "classes": K,
                "layers": L,
                "n": n,
                "width": d,
                "tasks": len(group),
                "runs_per_task": c.runs,
                "step_s": c.step_s,
                "run_steps_per_s": c.runs / c.step_s,
                "observe_s": c.observe_s,
                "classify_s": c.classify_s,
                "device_s": float(np.sum(device_s)),
                "host_s": float(np.sum(host_s)),
                "task_s": float(np.mean(np.add(device_s, host_s))),
                "total_s": float(np.sum(device_s) + np.sum(host_s)),
                "source": c.source,
            }
        )
    df = pd.DataFrame(rows, columns=_COLUMNS)
    total, dev = float(df["total_s"].sum()), float(df["device_s"].sum())
    w = task_workers(workers, n_tasks)
    spread = total / max(1, min(w, n_tasks))
    df.attrs.update(
        total_s=total,
        device_s=dev,
        host_s=float(df["host_s"].sum()),
        wall_s=max(dev, spread) if device == "cuda" else spread,
        device=device,
        workers=w,
        tasks=n_tasks,
    )
    return df


_COLUMNS = ["classes", "layers", "n", "width", "tasks", "runs_per_task", "step_s", "run_steps_per_s",
            "observe_s", "classify_s", "device_s", "host_s", "task_s", "total_s", "source"]  # fmt: skip


def estimate_runtime(
    atlas: BasinAtlas,
    workers: int | None,
    *,
    probe_seconds: float = 1.0,
    tasks: Sequence[Task] | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Estimate the atlas's wall time on this machine: :func:`atlas_runtime` of costs measured here.

    For each distinct (K, L, n, width): the trainer's engine (numpy or torch, as the trainer picks for the
    atlas's device) steps ``runs_per_task`` runs for about ``probe_seconds`` (:func:`measure_shape`), and the
    per-run analysis is timed on one run (:func:`measure_analysis`).  A small atlas is probed for at most 1 %
    of its own stepping time.

    Parameters
    ----------
    atlas : BasinAtlas
        The atlas.
    workers : int or None
        Task processes (``None``: as the local executor picks).
    probe_seconds : float
        Time spent stepping each shape.
    tasks : sequence of Task, optional
        Only these tasks of the atlas (see :func:`atlas_runtime`); only their shapes are measured.
    progress : bool, default False
        A progress bar over the shapes on stderr (the calibration of a large atlas on a CPU takes minutes).

    Returns
    -------
    DataFrame
        :func:`atlas_runtime`'s table (its ``source``: ``"calibration on <device>"``).

    Examples
    --------
    >>> from deepcollapse.experiments.basin_atlas import BasinAtlas
    >>> atlas = BasinAtlas(classes=3, layers=2, n=2, width=4, steps=100, runs=2, runs_per_task=2)
    >>> df = estimate_runtime(atlas, 1, probe_seconds=0.01)
    >>> df["source"].tolist(), df.attrs["wall_s"] > 0
    (['calibration on cpu'], True)
    """
    from tqdm.auto import tqdm

    from deepcollapse.dufm.config import DUFMConfig

    costs = {}
    device = "cpu"
    shapes = atlas_shapes(atlas, tasks)
    bar = tqdm(
        shapes.items(), total=len(shapes), desc="runtime calibration", unit="shape", disable=not progress
    )
    for shape, group in bar:
        cfg = DUFMConfig.from_dict({**group[0].config, "runs": atlas.runs_per_task, "seed": 0})
        device = cfg.device
        step_s = measure_shape(cfg, probe_seconds, len(group) * atlas.steps)
        observe_s, classify_s = measure_analysis(cfg)
        costs[shape] = ShapeCost(
            atlas.runs_per_task, step_s, observe_s, classify_s, f"calibration on {device}"
        )
    return atlas_runtime(atlas, costs, workers, device, tasks)


def duration_text(s: float) -> str:
    """``s`` seconds as "0.42 s", "42 s", "3.5 min" or "2.1 h".

    Parameters
    ----------
    s : float
        Seconds.

    Returns
    -------
    str
        Two significant digits below 10 s, whole seconds below 2 min, minutes below 2 h, else hours.

    Examples
    --------
    >>> duration_text(0.42), duration_text(42), duration_text(210), duration_text(7560)
    ('0.42 s', '42 s', '3.5 min', '2.1 h')
    """
    if s < 10:
        return f"{s:.2g} s"
    return f"{s:.0f} s" if s < 120 else (f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h")
