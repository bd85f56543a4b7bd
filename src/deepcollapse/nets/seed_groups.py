"""Which network runs train together as one batched model (``batch_seeds``), decided without torch's weight.

Runs may share a batch (:class:`~deepcollapse.nets.seed_batch.SeedBatch`) when their configs are equal in
every field but those of :data:`PER_SEED_FIELDS`: the fields that the batched loop consumes per seed (the
initialisation by :func:`~deepcollapse.nets.build.build_network`, the learning rate of an epoch by
:func:`~deepcollapse.nets.step.lr_at` and each seed's own optimizer).  Every other field, in particular each
one that :func:`~deepcollapse.nets.step.fit_loss` or :func:`~deepcollapse.nets.step.regularisation` reads
(a field added later included), is equal across a batch, which is what lets the batched step compute every
seed's loss terms with one config.  So the seeds of a sweep point batch together, and so do the points of a
learning-rate sweep (2024 Fig. 9 right); points of a weight-decay sweep form one batch per value.

``batch_seeds`` (a :class:`~deepcollapse.nets.config.NetConfig` field, ``--batch-seeds`` everywhere) bounds
the batch: ``off`` (or 1) one run per call, ``on`` every compatible run in one batch, ``N`` at most N, and
``auto`` (default) ``on`` where the run computes on CUDA and ``off`` on the CPU.  The CPU default is measured,
not assumed: ``benchmarks/net_throughput.py --device cpu`` times S batched seeds against S single-seed steps
in the same run (rows ``batched S=...`` with ``ratio_to_sequential``).  On this project's 2-core AMD machine
with one torch thread (as the CPU experiments run) the batched step was slower for the ResNet8 / ResNet20
backbones (vmap turns each convolution into a grouped one, which oneDNN runs slower than S plain ones) and
within the machine's noise of the single steps for the small MLP backbone, so ``auto`` does not batch on the
CPU; ``on`` or ``N`` still does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from deepcollapse.nets.config import NetConfig, check_batch_seeds

__all__ = ["PER_SEED_FIELDS", "batch_key", "check_batchable", "group_runs", "seeds_per_batch"]

#: The fields in which runs of one batch may differ (see the module docstring).
PER_SEED_FIELDS = ("seed", "lr", "lr_schedule", "lr_milestones", "lr_decay", "head_init", "head_init_run")


def _as_dict(config: NetConfig | Mapping[str, Any]) -> dict[str, Any]:
    return config.to_dict() if isinstance(config, NetConfig) else dict(config)


def batch_key(config: NetConfig | Mapping[str, Any]) -> str:
    """What runs of one batch share: the config without :data:`PER_SEED_FIELDS`, as canonical JSON.

    Parameters
    ----------
    config : NetConfig or dict
        The config (or its ``to_dict()``).

    Returns
    -------
    str
        Equal for exactly the runs that may share a batch.

    Examples
    --------
    >>> batch_key({"seed": 0, "lr": 0.1, "lam": 0.01}), batch_key({"seed": 3, "lam": 0.01})
    ('{"lam": 0.01}', '{"lam": 0.01}')
    """
    d = {k: v for k, v in _as_dict(config).items() if k not in PER_SEED_FIELDS}
    return json.dumps(d, sort_keys=True, default=str)


def _on_cuda(device: str) -> bool:
    if device == "cuda":
        return True
    if device != "auto":
        return False
    import torch  # only to resolve device auto, when a network run is about to start anyway

    return bool(torch.cuda.is_available())


def seeds_per_batch(config: NetConfig | Mapping[str, Any]) -> int | None:
    """The largest number of runs of ``config``'s kind in one batch: 1 (off), ``None`` (no limit: on, and
    auto on CUDA) or N.

    Parameters
    ----------
    config : NetConfig or dict
        The config (``batch_seeds``, ``device``).

    Returns
    -------
    int or None
        The bound; ``None`` means every compatible run.

    Examples
    --------
    >>> seeds_per_batch({"batch_seeds": "on"}), seeds_per_batch({"batch_seeds": "auto", "device": "cpu"})
    (None, 1)
    >>> seeds_per_batch({"batch_seeds": "4"}), seeds_per_batch({"batch_seeds": "on", "until": "converged"})
    (4, 1)
    """
    d = _as_dict(config)
    value = check_batch_seeds(d.get("batch_seeds", "auto"))
    if d.get("until") == "converged":  # each run stops at its own epoch: trained alone
        return 1
    if value == "off":
        return 1
    if value == "on":
        return None
    if value == "auto":
        return None if _on_cuda(str(d.get("device", "auto"))) else 1
    return int(value)


def group_runs(configs: Sequence[NetConfig | Mapping[str, Any]]) -> list[list[int]]:
    """Split runs into batches: the indices of ``configs`` grouped by :func:`batch_key` (in order of first
    appearance), each group cut into chunks of :func:`seeds_per_batch`.

    Parameters
    ----------
    configs : sequence of NetConfig or dict
        The runs' configs.

    Returns
    -------
    list of list of int
        Every index exactly once; a list of one index is a run trained alone.

    Examples
    --------
    Three seeds of one weight decay (at most 2 per batch) and one run of another:

    >>> runs = [{"seed": s, "lam": 0.01, "batch_seeds": 2} for s in range(3)]
    >>> group_runs(runs + [{"seed": 0, "lam": 0.1, "batch_seeds": 2}])
    [[0, 1], [2], [3]]
    """
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(configs):
        groups.setdefault(batch_key(c), []).append(i)
    out: list[list[int]] = []
    for members in groups.values():
        size = seeds_per_batch(configs[members[0]]) or len(members)
        out += [members[i : i + size] for i in range(0, len(members), size)]
    return sorted(out, key=lambda g: g[0])


def check_batchable(configs: Sequence[NetConfig]) -> None:
    """Refuse runs that may not share a batch (``ValueError`` naming the first field that differs).

    Parameters
    ----------
    configs : sequence of NetConfig
        The runs of one batch.

    Returns
    -------
    None
        Returns only when every field outside :data:`PER_SEED_FIELDS` agrees.

    Raises
    ------
    ValueError
        Two configs differ in another field.

    Examples
    --------
    >>> from deepcollapse.nets.config import NetConfig
    >>> check_batchable([NetConfig(seed=0, lr=0.1), NetConfig(seed=1, lr=0.05)])
    >>> check_batchable([NetConfig(lam=0.01), NetConfig(lam=0.1)])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: runs batched together must agree in 'lam' (0.01 != 0.1); only seed, lr, ... may differ
    """
    first = _as_dict(configs[0])
    for c in configs[1:]:
        d = _as_dict(c)
        diff = [k for k in first if k not in PER_SEED_FIELDS and first[k] != d.get(k)]
        if diff:
            raise ValueError(
                f"runs batched together must agree in {diff[0]!r} ({first[diff[0]]!r} != "
                f"{d.get(diff[0])!r}); "
                f"only {', '.join(PER_SEED_FIELDS)} may differ"
            )
