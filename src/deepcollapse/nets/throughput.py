"""How fast runs train on this machine, measured: the calibration behind the runtime estimates (issue 28).

:func:`measure_step_rate` times the training step that the loop would take for a batch of runs (one run:
:func:`~deepcollapse.nets.step.train_step`; several: :func:`~deepcollapse.nets.seed_batch.batched_train_step`
set up by :func:`~deepcollapse.nets.seed_batch.build_seed_batch`) on random inputs of the data's shape, on
the runs' device, after a few warm-up steps (cuDNN's algorithm search, the CUDA context), and, given the
data, one :func:`~deepcollapse.nets.evaluate.evaluate` of one run (forward passes and the host-side collapse
metrics).
The inputs' values do not change the speed; the networks are fresh ones built from the configs, so the run
folders are not touched.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from deepcollapse._core.devices import synchronize
from deepcollapse.nets.build import build_network, make_grad_scaler, make_optimizer, select_device
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.data.datasets import DataSplits
from deepcollapse.nets.evaluate import evaluate
from deepcollapse.nets.seed_batch import batched_train_step, build_seed_batch
from deepcollapse.nets.step import train_step

__all__ = ["StepRate", "measure_step_rate"]


@dataclass(frozen=True)
class StepRate:
    """A measured training and evaluation speed.

    Attributes
    ----------
    seeds : int
        Runs stepped together (1: the single-run step).
    batch_size : int
        Samples per run and step.
    step_s : float
        Seconds of one training step of all the runs.
    eval_s : float or None
        Seconds of one evaluation of one run (``None``: not measured, no data given).
    probe_steps : int
        Steps timed.
    device : str
        Where it ran.
    """

    seeds: int
    batch_size: int
    step_s: float
    eval_s: float | None
    probe_steps: int
    device: str

    @property
    def images_per_s(self) -> float:
        """Training images per second, all runs together.

        Returns
        -------
        float
            ``seeds · batch_size / step_s``.

        Examples
        --------
        >>> rate = StepRate(seeds=2, batch_size=64, step_s=0.5, eval_s=None, probe_steps=10, device="cpu")
        >>> rate.images_per_s
        256.0
        """
        return self.seeds * self.batch_size / self.step_s


def measure_step_rate(
    configs: Sequence[NetConfig],
    in_shape: tuple[int, ...],
    *,
    data: DataSplits | None = None,
    probe_seconds: float = 1.0,
    warmup: int = 3,
) -> StepRate:
    """Time the training step of ``configs`` (runs that may share a batch, or one run) and an evaluation.

    Parameters
    ----------
    configs : sequence of NetConfig
        The runs stepped together (see :mod:`deepcollapse.nets.seed_groups`); their ``device``,
        ``batch_size``, ``eval_batch_size``, ``threads`` are used.
    in_shape : tuple of int
        One sample's shape ``(C, H, W)``.
    data : DataSplits, optional
        The first run's data (on the CPU): one evaluation of one run on it is timed.
    probe_seconds : float
        About how long the timed steps run (at least 3 steps).
    warmup : int
        Untimed steps first.

    Returns
    -------
    StepRate
        The measured speed.

    Examples
    --------
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
    ...                    backbone_width=8, batch_size=8, device="cpu", threads=1)
    >>> rate = measure_step_rate([config], (1, 8, 8), probe_seconds=0.05, warmup=1)
    >>> rate.seeds, rate.batch_size, rate.eval_s, rate.step_s > 0
    (1, 8, None, True)
    """
    config = configs[0]
    device = select_device(config.device)
    threads = torch.get_num_threads()
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    try:
        if device.type == "cuda":
            torch.backends.cudnn.benchmark = True
        S, B, K = len(configs), config.batch_size, config.num_classes
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(S, B, *in_shape, generator=gen).to(device)  # (S, B, C, H, W)
        y = torch.randint(0, K, (S, B), generator=gen).to(device)  # (S, B)
        if S == 1:
            models = [build_network(config, in_shape[0], in_shape, device).to(device)]
            opt, scaler = make_optimizer(config, models[0]), make_grad_scaler(config, device)

            def step() -> None:
                train_step(config, models[0], opt, scaler, x[0], y[0], 50_000)

        else:
            batch, models, opts, scalers = build_seed_batch(configs, in_shape, device, 50_000)

            def step() -> None:
                batched_train_step(batch, opts, scalers, x, y)

        for _ in range(warmup):
            step()
        synchronize(device)
        t0 = time.perf_counter()
        for _ in range(3):
            step()
        synchronize(device)
        first = (time.perf_counter() - t0) / 3
        n = max(3, int(probe_seconds / max(first, 1e-9)))
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        synchronize(device)
        step_s = (time.perf_counter() - t0) / n
        eval_s = None
        if data is not None:
            on_device = DataSplits(data.name, data.train.to(device), data.test.to(device), data.classes)
            t0 = time.perf_counter()
            evaluate(config, models[0], on_device)
            synchronize(device)
            eval_s = time.perf_counter() - t0
    finally:
        torch.set_num_threads(threads)
    return StepRate(S, B, step_s, eval_s, n, str(device))
