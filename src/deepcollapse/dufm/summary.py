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

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.io import atomic_write_json, finite_or_none, load_checkpoint, read_jsonl
from deepcollapse._core.results import Result
from deepcollapse.dufm.classify import (
    DNC2_TOL,
    DNC_CONVERGING_COND,
    DNC_CONVERGING_GAP,
    GRAD_TOL,
    GRAM_TOL,
    PLATEAU_TOL,
    ZERO_TOL,
    DUFMRun,
    classify_run,
    theory_of,
)
from deepcollapse.dufm.config import DUFMConfig

__all__ = ["DUFMSummary", "analyze_dufm", "read_run_params"]


@dataclass(frozen=True, eq=False)
class DUFMSummary(Result):
    """The analysis of a DUFM run folder (``summary.json``): returned by :func:`analyze_dufm`,
    :func:`~deepcollapse.dufm.trainer.train_dufm` and :func:`~deepcollapse.dufm.trainer.resume_dufm`.

    A training stopped early on purpose (``max_steps``) returns a summary holding only ``step`` and
    ``finished = False`` (its other fields are ``None`` and absent from ``to_dict()``).  Read-only key access
    (``summary["runs"][0]["classification"]``) works as for the dict of earlier releases.

    Attributes
    ----------
    loss_dnc, loss_srg : float or None
        The closed-form optimal DNC and SRG losses of the problem (``None`` without a closed form;
        ``loss_srg`` also where SRG is undefined, ``K < 6``).
    loss_zero : float or None
        The fit of the all-zero network (1/2 for MSE, ``log K`` for cross-entropy).
    step : int
        The step of the parameters analysed.
    finished : bool
        ``step == config.steps``.
    best_loss : float or None
        The lowest final loss over the runs that did not diverge.
    n_below_dnc : int or None
        How many runs ended below ``loss_dnc``.
    classifications : dict of str to int or None
        Number of runs per label of :data:`~deepcollapse.dufm.classify.CLASSIFICATIONS` (labels with no run
        are absent).
    criteria : dict or None
        The tolerances of the classification (``zero_tol, grad_tol, plateau_tol, gram_tol, dnc2_tol,
        dnc_converging_cond, dnc_converging_gap, rank_rtol``).
    theory : dict or None
        The :class:`~deepcollapse.theory.compare.Comparison` as a dict plus ``closed_form: True``, or, without
        a closed form, ``{closed_form: False, note, family, loss_dnc: None, loss_srg: None, loss_zero}``.
    config : dict or None
        The run's :class:`~deepcollapse.dufm.config.DUFMConfig` as a dict.
    runs : list of DUFMRun or None
        One entry per run.
    """

    _nested = {"runs": DUFMRun}

    loss_dnc: float | None = None
    loss_srg: float | None = None
    loss_zero: float | None = None
    step: int | None = None
    finished: bool | None = None
    best_loss: float | None = None
    n_below_dnc: int | None = None
    classifications: dict[str, int] | None = None
    criteria: dict[str, float] | None = None
    theory: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    runs: list[DUFMRun] | None = None


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


def analyze_dufm(out_dir: str | Path, *, write: bool = False) -> DUFMSummary:
    """Analyse a run folder: classify each run and compare it with the theory (module docstring).

    Parameters
    ----------
    out_dir : str or Path
        A DUFM run folder (``config.yaml`` and ``params.pt`` or ``checkpoint.pt``).
    write : bool
        Also write ``summary.json`` (atomically).

    Returns
    -------
    DUFMSummary
        Its ``to_dict()`` is the content of ``summary.json`` (non-finite numbers as ``None``).
    """
    from deepcollapse.theory.constructions import srg_gram

    out = Path(out_dir)
    if not (out / "config.yaml").is_file():
        raise ConfigError(f"out_dir == {str(out)!r}, must be a DUFM run folder (no config.yaml).")
    config = DUFMConfig.from_yaml(out / "config.yaml")
    data, params = read_run_params(out, config)
    diverged = {int(k): int(v) for k, v in data.get("diverged", {}).items()}
    theory = theory_of(config)
    G_srg = srg_gram(config.classes) if config.classes >= 6 and theory.get("loss_srg") is not None else None
    histories: dict[int, list[tuple[int, float | None]]] = {}
    for rec in read_jsonl(out / "metrics.jsonl", strict=True):  # a torn last line of a killed writer skipped
        if isinstance(rec.get("run"), int) and isinstance(rec.get("step"), int):
            histories.setdefault(rec["run"], []).append((rec["step"], rec.get("loss")))
    runs = []
    for r, seed in enumerate(config.run_seeds):
        rec = {"run": r, "seed": seed}
        rec.update(
            classify_run(
                params[0][r],
                [W[r] for W in params[1:]],
                config,
                diverged.get(r),
                theory,
                G_srg,
                histories.get(r),
            )
        )
        runs.append(rec)
    losses = [r["final_loss"] for r in runs if r["final_loss"] is not None]
    counts: dict[str, int] = {}
    for run in runs:
        counts[run["classification"]] = counts.get(run["classification"], 0) + 1
    summary: dict[str, Any] = {
        "loss_dnc": theory["loss_dnc"],
        "loss_srg": theory["loss_srg"],
        "loss_zero": theory["loss_zero"],
        "step": int(data.get("step", -1)),
        "finished": int(data.get("step", -1)) == config.steps,
        "best_loss": min(losses) if losses else None,
        "n_below_dnc": sum(bool(r["below_dnc"]) for r in runs),
        "classifications": counts,
        "criteria": {
            "zero_tol": ZERO_TOL,
            "grad_tol": GRAD_TOL,
            "plateau_tol": PLATEAU_TOL,
            "gram_tol": GRAM_TOL,
            "dnc2_tol": DNC2_TOL,
            "dnc_converging_cond": DNC_CONVERGING_COND,
            "dnc_converging_gap": DNC_CONVERGING_GAP,
            "rank_rtol": config.rank_rtol,
        },
        "theory": theory,
        "config": config.to_dict(),
        "runs": runs,
    }
    summary = json.loads(json.dumps(summary, default=_json_default))
    if write:
        atomic_write_json(out / "summary.json", finite_or_none(summary))
    return DUFMSummary.from_dict(finite_or_none(summary))


def _json_default(x: Any) -> Any:
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")
