"""The runtime of a network experiment, estimated before it starts from a measured calibration (issue 28).

:func:`estimate_net_runtime` takes the tasks a network experiment (or sweep) is about to run, groups them
into the calls the executor will make (:func:`~deepcollapse.runs.executors.task_units`: the seeds and
learning-rate points of one architecture batched, where ``batch_seeds`` says), and times one step of each
distinct call shape on the runs' own device with :func:`~deepcollapse.nets.throughput.measure_step_rate`
(a second or so each), and one evaluation of one run on the real data.  A call costs its seeds' data loading
(timed once per dataset) plus ``epochs left × steps per epoch × step time`` plus its evaluations (one per
seed and evaluation, collapse metrics included) plus a checkpoint per seed and epoch (one written, timed, in
the output folder's file system).  On the CPU the calls are spread over the worker processes; on a GPU they
are counted one after the other (workers share the one device).  No assumed FLOP rate enters.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepcollapse.experiments.basin_runtime import duration_text
from deepcollapse.runs.executors import Task, task_units

__all__ = ["NetRuntimeEstimate", "estimate_net_runtime"]

#: The config fields that change a step's speed (runs agreeing in them share one calibration).
SPEED_FIELDS = (
    "dataset", "classes", "backbone", "backbone_width", "backbone_depth", "feature_dim", "layers", "width",
    "batch_size", "eval_batch_size", "device", "threads", "amp", "channels_last", "reg", "loss", "optimizer",
    "freeze_head",
)  # fmt: skip


@dataclass(frozen=True)
class NetRuntimeEstimate:
    """The estimated wall time of a set of network tasks.

    Attributes
    ----------
    seconds : float
        The estimate.
    device : str
        Where the calibration (and the runs) compute.
    runs, calls : int
        Runs still to train and the trainer calls they take (a call trains a batch of runs).
    workers : int
        Parallel calls assumed (1 on a GPU).
    rows : list of dict
        Per call shape: ``seeds``, ``calls``, ``images_per_s`` (all seeds of a call),
        ``images_per_s_per_seed``, ``step_s``, ``epochs``, ``steps_per_epoch``, ``call_s``.
    """

    seconds: float
    device: str
    runs: int
    calls: int
    workers: int
    rows: list[dict[str, Any]] = field(default_factory=list)

    def text(self) -> str:
        """One line: the estimate and what it was measured from.

        Returns
        -------
        str
            For the run's announcement (``Context.announce``) and the report's notes.

        Examples
        --------
        >>> rows = [{"calls": 2, "seeds": 2, "images_per_s": 1234.5}]
        >>> est = NetRuntimeEstimate(90.0, "cpu (2 cores)", 4, 2, 2, rows)
        >>> est.text().split(" (2 calls")[0]
        'estimated runtime 90 s on cpu (2 cores) on 2 workers: 4 runs in 2 trainer calls'
        >>> NetRuntimeEstimate(0.0, "-", 0, 0, 1).text()
        'nothing left to train (every run is finished)'
        """
        if not self.runs:
            return "nothing left to train (every run is finished)"
        rates = ", ".join(
            f"{r['calls']} call{'s' * (r['calls'] > 1)} of {r['seeds']} seed{'s' * (r['seeds'] > 1)} at "
            f"{r['images_per_s']:.5g} images/s"
            for r in self.rows
        )
        spread = f" on {self.workers} workers" if self.workers > 1 else ""
        return (
            f"estimated runtime {duration_text(self.seconds)} on {self.device}{spread}: {self.runs} runs in "
            f"{self.calls} trainer calls ({rates}; measured in a short calibration on this device, "
            "evaluations and data loading included)"
        )


def _save_seconds(folder: Path, config: Any, in_shape: tuple[int, ...]) -> float:
    """Seconds to write one run's checkpoint (its model and optimizer state after a step) where ``folder``
    will be (the nearest existing folder above it; the probe file is removed)."""
    import tempfile

    import torch

    from deepcollapse._core.io import atomic_torch_save
    from deepcollapse.nets.build import build_network, make_optimizer

    model = build_network(config, in_shape[0], in_shape)
    optimizer = make_optimizer(config, model)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()  # the state (momentum buffers) a checkpoint holds
    root = next(p for p in [folder, *folder.parents] if p.is_dir())
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        t0 = time.perf_counter()
        atomic_torch_save(
            {"model": model.state_dict(), "optimizer": optimizer.state_dict()}, Path(tmp) / "c.pt"
        )
        return time.perf_counter() - t0


def _epochs_done(folder: Path) -> int:
    path = folder / "checkpoint.pt"
    if not path.is_file():
        return 0
    from deepcollapse.nets.checkpoint import load_run_checkpoint

    return int(load_run_checkpoint(path, "cpu")["state"]["epoch"])


def estimate_net_runtime(
    tasks: list[Task], *, workers: int | None = None, probe_seconds: float = 1.0
) -> NetRuntimeEstimate:
    """Estimate how long the unfinished ``net`` tasks of ``tasks`` take here (see the module docstring).

    Parameters
    ----------
    tasks : list of Task
        Tasks of kind ``net`` (finished ones are skipped, resumed ones counted from their checkpoint).
    workers : int, optional
        Parallel worker processes on the CPU (default: one per call, at most the cores).
    probe_seconds : float
        Timed seconds per distinct call shape.

    Returns
    -------
    NetRuntimeEstimate
        The estimate.

    Examples
    --------
    The smoke digits runs of ``real-digits-dnc`` (2 schemes x 2 seeds), probed for 0.05 s:

    >>> import tempfile
    >>> from deepcollapse.experiments.net_figures import NET_FIGURES, figure_spec
    >>> spec = figure_spec(NET_FIGURES["real-digits-dnc"], smoke=True)
    >>> est = estimate_net_runtime(spec.tasks(Path(tempfile.mkdtemp())), workers=1, probe_seconds=0.05)
    >>> est.runs, est.calls, est.workers, est.seconds > 0
    (4, 4, 1, True)
    """
    import os

    import torch

    from deepcollapse.nets.build import load_net_data, select_device
    from deepcollapse.nets.config import NetConfig
    from deepcollapse.nets.throughput import measure_step_rate

    pending = [t for t in tasks if t.kind == "net" and not t.done]
    units = task_units(pending)
    if not units:
        return NetRuntimeEstimate(0.0, "-", 0, 0, 1)
    shapes: dict[str, dict[str, Any]] = {}
    data: dict[str, tuple[Any, float]] = {}
    call_s = []
    for unit in units:
        configs = [NetConfig.from_dict(dict(t.config)) for t in unit]
        c = configs[0]
        dkey = json.dumps([c.dataset, c.data_dir, c.classes, c.n, c.n_test], default=str)
        if dkey not in data:
            t0 = time.perf_counter()
            splits = load_net_data(c)
            data[dkey] = (splits, time.perf_counter() - t0)
        splits, load_s = data[dkey]
        in_shape, n_train = tuple(splits.train.images.shape[1:]), len(splits.train)
        skey = json.dumps([len(configs), *(c.to_dict()[k] for k in SPEED_FIELDS)], default=str)
        if skey not in shapes:
            rate = measure_step_rate(configs, in_shape, data=splits, probe_seconds=probe_seconds)
            shapes[skey] = {"rate": rate, "calls": 0, "call_s": 0.0}
        rate = shapes[skey]["rate"]
        B = c.batch_size
        steps = n_train // B + (1 if n_train % B >= 2 else 0)  # a last batch of one sample is dropped
        left = c.epochs - min(_epochs_done(Path(t.out_dir)) for t in unit)
        evals = (left // c.eval_every if c.eval_every else 0) + 1
        if "save_s" not in shapes[skey]:
            shapes[skey]["save_s"] = _save_seconds(Path(unit[0].out_dir), c, in_shape)
        save_s = shapes[skey]["save_s"]
        seconds = (
            len(unit) * (load_s + evals * (rate.eval_s or 0.0) + left * save_s) + left * steps * rate.step_s
        )
        shapes[skey]["calls"] += 1
        shapes[skey]["call_s"] += seconds
        shapes[skey].update(epochs=c.epochs, steps_per_epoch=steps)
        call_s.append(seconds)
    device = select_device(NetConfig.from_dict(dict(units[0][0].config)).device)
    on_gpu = device.type != "cpu"
    n_workers = 1 if on_gpu else max(1, min(workers or (os.cpu_count() or 1), len(units)))
    seconds = sum(call_s) / n_workers
    name = (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else f"{device.type} ({os.cpu_count()} cores)"
    )
    rows = [
        {
            "seeds": s["rate"].seeds,
            "calls": s["calls"],
            "images_per_s": s["rate"].images_per_s,
            "images_per_s_per_seed": s["rate"].images_per_s / s["rate"].seeds,
            "step_s": s["rate"].step_s,
            "epochs": s["epochs"],
            "steps_per_epoch": s["steps_per_epoch"],
            "call_s": s["call_s"],
        }
        for s in shapes.values()
    ]
    return NetRuntimeEstimate(seconds, name, len(pending), len(units), n_workers, rows)
