"""Analyse a finished L-DUFM run folder against the theory engine: ``analyze_dufm(out_dir) -> DUFMSummary``.

For the folder: ``loss_dnc``, ``loss_srg`` (``None`` where the SRG construction is undefined, ``K < 6``) and
the whole :func:`deepcollapse.theory.compare.compare` dict under ``theory``
(:func:`~deepcollapse.dufm.classify.theory_of`), the tolerances of the classification under ``criteria``,
the best loss and the number of runs per label.  For each run: its ``run`` index and ``seed`` and the entry of
:func:`~deepcollapse.dufm.classify.classify_run`, computed in float64 from ``params.pt`` (or ``checkpoint.pt``
of an unfinished run: :func:`read_run_params`) with the loss history of ``metrics.jsonl``.  The classification
rules, the polish and what holds for other model families are in :mod:`deepcollapse.dufm.classify`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.io import atomic_write_json, load_checkpoint, read_jsonl
from deepcollapse.dufm.classify import classify
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.criteria import Criteria
from deepcollapse.dufm.results import DUFMSummary

__all__ = ["DUFMSummary", "analyze_dufm", "read_run_params"]  # (DUFMSummary: from dufm.results)


def read_run_params(out_dir: str | Path, config: DUFMConfig) -> tuple[dict[str, Any], list[np.ndarray]]:
    """The saved point of a DUFM run folder: ``params.pt`` (a finished run), else ``checkpoint.pt``.

    Parameters
    ----------
    out_dir : str or Path
        The run folder.
    config : DUFMConfig
        Its config (the shapes the arrays must have).

    Returns
    -------
    tuple of (dict, list of numpy.ndarray)
        The loaded file (``step``, ``diverged``, ...) and ``[H1, W_1 .. W_L]`` in float64, each with a leading
        run axis of length ``config.runs``.  A missing, damaged or foreign file is a one-line ``ConfigError``
        naming it.

    Examples
    --------
    >>> import os, tempfile
    >>> import deepcollapse as dc
    >>> out = os.path.join(tempfile.mkdtemp(), "run")
    >>> from deepcollapse.dufm.trainer import train_dufm
    >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
    >>> _ = train_dufm(config, out, progress=False, max_steps=10)  # checkpoint.pt only
    >>> data, params = read_run_params(out, config)
    >>> data["step"], [p.shape for p in params], params[0].dtype
    (10, [(2, 4, 4), (2, 4, 4), (2, 2, 4)], dtype('float64'))
    """
    import torch

    out = Path(out_dir)
    if (out / "params.pt").is_file():
        src = out / "params.pt"
        hint = f"delete it and run deepcollapse dufm resume {out} to write it again from checkpoint.pt"
    else:
        src = out / "checkpoint.pt"
        hint = f"delete it to start the run again from config.yaml (deepcollapse dufm resume {out})"
        if not src.is_file():
            raise ConfigError(f"out_dir == {str(out)!r}, must hold params.pt or checkpoint.pt.")
    data = load_checkpoint(src, hint=hint)
    tensors = data["params"] if "params" in data else [data.get("H1"), *(data.get("weights") or [])]
    if not isinstance(tensors, (list, tuple)):
        tensors = [tensors]
    shapes = [tuple(t.shape) if isinstance(t, torch.Tensor) else None for t in tensors]
    if len(tensors) != config.layers + 1 or any(
        s is None or len(s) != 3 or s[0] != config.runs for s in shapes
    ):
        raise ConfigError(
            f"{src}: holds no L-DUFM point of this run ({config.runs} runs of H1, W_1 .. W_{config.layers} "
            f"expected; found {shapes}); {hint}."
        )
    return data, [t.double().numpy() for t in tensors]


def analyze_dufm(
    out_dir: str | Path, *, write: bool = False, criteria: Criteria | None = None
) -> DUFMSummary:
    """Analyse a run folder: classify each run and compare it with the theory (module docstring).

    The folder's parameters, divergence steps and loss history (``metrics.jsonl``) go through
    :func:`~deepcollapse.dufm.classify.classify`, as a fit held in memory does.

    Parameters
    ----------
    out_dir : str or Path
        A DUFM run folder (``config.yaml`` and ``params.pt`` or ``checkpoint.pt``).
    write : bool
        Also write ``summary.json`` (atomically).
    criteria : Criteria, optional
        The thresholds of the classification (default ``Criteria()``).

    Returns
    -------
    DUFMSummary
        Its ``to_dict()`` is the content of ``summary.json`` (non-finite numbers as ``None``).

    Examples
    --------
    >>> import os, tempfile
    >>> import deepcollapse as dc
    >>> out = os.path.join(tempfile.mkdtemp(), "run")
    >>> from deepcollapse.dufm.trainer import train_dufm
    >>> config = dc.DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
    >>> _ = train_dufm(config, out, progress=False)
    >>> summary = analyze_dufm(out)
    >>> summary.step, summary.finished, sum(summary.classifications.values())
    (20, True, 2)
    """
    out = Path(out_dir)
    if not (out / "config.yaml").is_file():
        raise ConfigError(f"out_dir == {str(out)!r}, must be a DUFM run folder (no config.yaml).")
    config = DUFMConfig.from_yaml(out / "config.yaml")
    data, params = read_run_params(out, config)
    diverged = {int(k): int(v) for k, v in data.get("diverged", {}).items()}
    histories: dict[int, list[tuple[int, float | None]]] = {}
    for rec in read_jsonl(out / "metrics.jsonl", strict=True):  # a torn last line of a killed writer skipped
        if isinstance(rec.get("run"), int) and isinstance(rec.get("step"), int):
            histories.setdefault(rec["run"], []).append((rec["step"], rec.get("loss")))
    summary = classify(
        params,
        config,
        Criteria() if criteria is None else criteria,
        diverged=diverged,
        history=histories,
        step=int(data.get("step", -1)),
    )
    if write:
        atomic_write_json(out / "summary.json", summary.to_dict())
    return summary
