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

from deepcollapse._core.io import atomic_write_json
from deepcollapse.dufm.classify import classify
from deepcollapse.dufm.criteria import Criteria
from deepcollapse.dufm.points import read_run_params
from deepcollapse.dufm.results import DUFMSummary

__all__ = ["DUFMSummary", "analyze_dufm", "read_run_params"]  # (from dufm.results, dufm.points)


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
    summary = classify(out, criteria=Criteria() if criteria is None else criteria)
    if write:
        atomic_write_json(out / "summary.json", summary.to_dict())
    return summary
