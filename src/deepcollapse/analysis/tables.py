"""Tables from run folders: one row per run, mean ± std over seeds per grid point.

Run folders are those of the trainers (docs/architecture.md): ``config.yaml``, ``metrics.jsonl`` (one JSON
object per logged step and run for the DUFM, per evaluation for real networks) and ``summary.json``.  Nothing
here imports training code: tables are built from files only, so they can be rebuilt on any machine from
copied folders.

Columns of a DUFM run row (:func:`dufm_run_rows`): ``seed, final_loss, fit, reg, classification, diverged,
loss_dnc, loss_srg, rank_1 … rank_L`` (numerical rank of the post-ReLU class means ``M_l``, layer 1 = the free
features ``H_1``), ``dnc1_1 … dnc1_L``, ``mean_rank`` (average rank of the intermediate layers ``M_2 …
M_{L-1}``, the quantity of 2024 Fig. 3 middle), ``is_dnc`` (classification == "dnc", averaged into the
probability of 2024 Fig. 3 right), ``below_dnc`` (final loss < L_DNC) and ``loss_ratio_srg`` (final loss /
L_SRG).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deepcollapse._core.io import read_json, read_jsonl, read_yaml

__all__ = [
    "aggregate_runs",
    "final_singular_values",
    "format_mean_std",
    "dufm_run_rows",
    "layer_metrics_frame",
    "net_run_rows",
    "read_jsonl",
    "read_summary",
    "step_metrics_frame",
]


def read_summary(folder: str | Path) -> dict[str, Any]:
    """The ``summary.json`` of a DUFM run folder, as written (not re-analysed).  A plain dict: analysis sits
    below the trainer's package in the layering (it reads run folders without importing ``dufm``); the
    typed form is :meth:`DUFMSummary.from_dict(read_summary(folder))
    <deepcollapse.dufm.results.DUFMSummary>` or :func:`~deepcollapse.dufm.summary.analyze_dufm`.

    Parameters
    ----------
    folder : str or Path
        A run folder of ``deepcollapse dufm train`` (or of an experiment's DUFM task).

    Returns
    -------
    dict
        ``summary.json`` as read.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "summary.json").write_text(json.dumps({"step": 10, "finished": True, "runs": []}))
    >>> read_summary(d)["step"]
    10
    """
    return read_json(Path(folder) / "summary.json")


def _num(v: Any) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return math.nan
    return x


def dufm_run_rows(folder: str | Path) -> list[dict[str, Any]]:
    """One row per run of a DUFM run folder, from its ``summary.json`` (see the module docstring)."""
    summary = read_summary(folder)
    loss_dnc = _num(summary.get("loss_dnc"))
    loss_srg = _num(summary.get("loss_srg"))
    rows = []
    for run in summary.get("runs", []):
        row: dict[str, Any] = {
            "seed": int(run["seed"]),
            "final_loss": _num(run.get("final_loss")),
            "fit": _num(run.get("fit")),
            "reg": _num(run.get("reg")),
            "classification": run.get("classification"),
            "diverged": bool(run.get("diverged", False)),
            "loss_dnc": loss_dnc,
            "loss_srg": loss_srg,
        }
        ranks = [int(r) for r in run.get("ranks") or []]
        for i, r in enumerate(ranks):
            row[f"rank_{i + 1}"] = r
        for i, v in enumerate(run.get("dnc1") or []):
            row[f"dnc1_{i + 1}"] = _num(v)
        mid = ranks[1:-1] if len(ranks) >= 3 else ranks[:-1]
        row["mean_rank"] = float(np.mean(mid)) if mid else math.nan
        row["is_dnc"] = float(run.get("classification") == "dnc")
        row["reaches_dnc"] = float(run.get("classification") in ("dnc", "dnc_converging"))
        row["below_dnc"] = float(row["final_loss"] < loss_dnc) if math.isfinite(loss_dnc) else math.nan
        row["loss_ratio_srg"] = (
            row["final_loss"] / loss_srg if math.isfinite(loss_srg) and loss_srg > 0 else math.nan
        )
        rows.append(row)
    return rows


def net_run_rows(folder: str | Path) -> list[dict[str, Any]]:
    """One row for a real-network run folder: the last evaluation of ``metrics.jsonl`` (accuracies, loss
    parts, per head layer ``rank_<l>``, ``dnc1_<l>``, ``effective_rank_<l>`` of the post-ReLU features) and
    the seed."""
    folder = Path(folder)
    evals = read_jsonl(folder / "metrics.jsonl")
    cfg_path = folder / "config.yaml"
    config = read_yaml(cfg_path, expected="run settings") if cfg_path.is_file() else {}
    if isinstance(config, dict) and isinstance(config.get("config"), dict):
        config = config["config"]
    row: dict[str, Any] = {"seed": int((config or {}).get("seed", 0) or 0)}
    if evals:
        last = evals[-1]
        for key in ("epoch", "train_acc", "test_acc", "loss", "fit", "reg"):
            if key in last:
                row[key] = _num(last[key])
        ranks = []
        for entry in last.get("layers", []):
            kind = entry.get("kind", "post")
            if kind != "post":
                continue
            layer = entry.get("layer")
            for key in ("rank", "dnc1", "dnc2_cond", "effective_rank"):
                if key in entry:
                    row[f"{key}_{layer}"] = _num(entry[key])
            if "rank" in entry:
                ranks.append(_num(entry["rank"]))
        mid = ranks[1:-1] if len(ranks) >= 3 else ranks[:-1]
        row["mean_rank"] = float(np.mean(mid)) if mid else math.nan
    return [row]


def step_metrics_frame(folder: str | Path) -> pd.DataFrame:
    """Per (step, run) scalars of a DUFM ``metrics.jsonl``: ``step, run, seed, loss, fit, reg, diverged``."""
    rows = [
        {k: rec.get(k) for k in ("step", "run", "seed", "loss", "fit", "reg", "diverged")}
        for rec in read_jsonl(Path(folder) / "metrics.jsonl")
    ]
    return pd.DataFrame(rows)


def layer_metrics_frame(folder: str | Path, x: str = "step") -> pd.DataFrame:
    """Long table of per-layer metrics: ``x`` (``step`` or ``epoch``), ``run``/``seed``, ``layer``, ``kind``,
    ``dnc1``, ``dnc2_cond``, ``rank`` (singular values are left out: see :func:`final_singular_values`)."""
    rows = []
    for rec in read_jsonl(Path(folder) / "metrics.jsonl"):
        for entry in rec.get("layers", []):
            row = {
                x: rec.get(x),
                "run": rec.get("run", 0),
                "seed": rec.get("seed"),
                "layer": entry.get("layer"),
            }
            row["kind"] = entry.get("kind", "post")
            for key in ("dnc1", "dnc2_cond", "rank", "effective_rank"):
                if key in entry:
                    row[key] = _num(entry[key])
            rows.append(row)
    return pd.DataFrame(rows)


def final_singular_values(folder: str | Path, kind: str = "post", x: str = "step") -> dict[int, np.ndarray]:
    """Singular values of the class means at the last logged step: ``{layer: array (runs, k)}``
    (zero-padded)."""
    recs = read_jsonl(Path(folder) / "metrics.jsonl")
    if not recs:
        return {}
    last = max(r.get(x, 0) for r in recs)
    per_layer: dict[int, list[list[float]]] = {}
    for rec in recs:
        if rec.get(x, 0) != last:
            continue
        for entry in rec.get("layers", []):
            if entry.get("kind", "post") != kind or "singular_values" not in entry:
                continue
            per_layer.setdefault(int(entry["layer"]), []).append([float(s) for s in entry["singular_values"]])
    out = {}
    for layer, lists in per_layer.items():
        k = max(len(s) for s in lists)
        out[layer] = np.array([s + [0.0] * (k - len(s)) for s in lists])
    return out


def aggregate_runs(runs: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Mean and standard deviation (ddof = 1; 0 for a single run) over seeds of every numeric column, per
    group.

    Columns ``<col>_mean`` and ``<col>_std`` for each numeric column of ``runs`` except ``seed``, plus
    ``n_runs``; e.g. ``is_dnc_mean`` is the empirical probability of a DNC solution.  Diverged runs are kept
    (their losses are NaN and drop out of the means; ``diverged_mean`` is the divergence rate).
    """
    if runs.empty:
        return pd.DataFrame(columns=[*by, "n_runs"])
    by = [b for b in by if b in runs.columns]
    df = runs.copy()
    for b in by:
        df[b] = df[b].astype(str) if df[b].map(lambda v: isinstance(v, (list, dict))).any() else df[b]
    if "diverged" in df:
        df["diverged"] = df["diverged"].astype(float)
    numeric = [c for c in df.columns if c not in by and c != "seed" and pd.api.types.is_numeric_dtype(df[c])]
    grouped = df.groupby(by, sort=False, dropna=False) if by else df.groupby(lambda _: 0)
    mean = grouped[numeric].mean().add_suffix("_mean")
    std = grouped[numeric].std(ddof=1).fillna(0.0).add_suffix("_std")
    count = grouped.size().rename("n_runs")
    out = pd.concat([count, mean, std], axis=1)
    cols = ["n_runs"]
    for c in numeric:
        cols += [f"{c}_mean", f"{c}_std"]
    out = out[cols].reset_index() if by else out[cols].reset_index(drop=True)
    return out


def format_mean_std(
    summary: pd.DataFrame, keys: Sequence[str], metrics: Sequence[str], digits: int = 4
) -> pd.DataFrame:
    """A display table: the ``keys`` columns, ``n_runs``, and one ``"mean ± std"`` string column per metric
    (``digits`` significant digits) for the metrics present in ``summary``."""
    cols = [k for k in [*keys, "n_runs"] if k in summary.columns]
    out = summary[cols].copy()
    for m in metrics:
        if f"{m}_mean" not in summary:
            continue
        mean, std = summary[f"{m}_mean"], summary.get(f"{m}_std", pd.Series(0.0, index=summary.index))
        out[m] = [
            "–" if pd.isna(a) else f"{a:.{digits}g} ± {0.0 if pd.isna(b) else b:.2g}"
            for a, b in zip(mean, std)
        ]
    return out
