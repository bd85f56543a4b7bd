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
    """One row per run of a DUFM run folder, from its ``summary.json`` (see the module docstring).

    Parameters
    ----------
    folder : str or Path
        A DUFM run folder.

    Returns
    -------
    list of dict
        One row per run, the columns of the module docstring.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> runs = [{"seed": 0, "final_loss": 0.5, "classification": "dnc", "ranks": [3, 3, 3]},
    ...         {"seed": 1, "final_loss": 0.4, "classification": "low_rank", "ranks": [3, 2, 3]}]
    >>> _ = (d / "summary.json").write_text(json.dumps({"loss_dnc": 0.5, "loss_srg": 0.45, "runs": runs}))
    >>> [(r["seed"], r["mean_rank"], r["is_dnc"], r["below_dnc"]) for r in dufm_run_rows(d)]
    [(0, 3.0, 1.0, 0.0), (1, 2.0, 0.0, 1.0)]
    """
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
    the seed.

    Parameters
    ----------
    folder : str or Path
        A network run folder (``metrics.jsonl``, ``config.yaml``).

    Returns
    -------
    list of dict
        One row (also ``mean_rank``, the average rank of the intermediate post-ReLU layers).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "config.yaml").write_text("seed: 3\\n")
    >>> layers = [{"layer": 1, "kind": "post", "rank": 3, "dnc1": 0.1},
    ...           {"layer": 2, "kind": "pre", "rank": 2},
    ...           {"layer": 2, "kind": "post", "rank": 2, "dnc1": 0.01}]
    >>> record = {"epoch": 5, "train_acc": 1.0, "loss": 0.2, "layers": layers}
    >>> _ = (d / "metrics.jsonl").write_text(json.dumps(record) + "\\n")
    >>> row = net_run_rows(d)[0]
    >>> list(row)
    ['seed', 'epoch', 'train_acc', 'loss', 'rank_1', 'dnc1_1', 'rank_2', 'dnc1_2', 'mean_rank']
    >>> row["seed"], row["rank_2"], row["mean_rank"]  # post-ReLU layers only
    (3, 2.0, 3.0)
    """
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
    """Per (step, run) scalars of a DUFM ``metrics.jsonl``: ``step, run, seed, loss, fit, reg, diverged``.

    Parameters
    ----------
    folder : str or Path
        A DUFM run folder.

    Returns
    -------
    DataFrame
        One row per record (``None`` where a record lacks a key).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> layers = [{"layer": 1, "kind": "post", "dnc1": 0.5, "rank": 3, "singular_values": [2.0, 1.0, 0.5]},
    ...           {"layer": 2, "kind": "pre", "dnc1": 0.4, "rank": 2, "singular_values": [1.0, 0.5]}]
    >>> records = [{"step": s, "run": r, "seed": r, "loss": 1.0 / (s + 1), "layers": layers}
    ...            for s in (0, 10) for r in (0, 1)]
    >>> _ = (d / "metrics.jsonl").write_text("".join(json.dumps(rec) + "\\n" for rec in records))
    >>> frame = step_metrics_frame(d)
    >>> frame.shape, frame["loss"].round(3).tolist()
    ((4, 7), [1.0, 1.0, 0.091, 0.091])
    """
    rows = [
        {k: rec.get(k) for k in ("step", "run", "seed", "loss", "fit", "reg", "diverged")}
        for rec in read_jsonl(Path(folder) / "metrics.jsonl")
    ]
    return pd.DataFrame(rows)


def layer_metrics_frame(folder: str | Path, x: str = "step") -> pd.DataFrame:
    """Long table of per-layer metrics: ``x`` (``step`` or ``epoch``), ``run``/``seed``, ``layer``, ``kind``,
    ``dnc1``, ``dnc2_cond``, ``rank`` (singular values are left out: see :func:`final_singular_values`).

    Parameters
    ----------
    folder : str or Path
        A DUFM or network run folder.
    x : str, default "step"
        The records' time column (``"epoch"`` for networks).

    Returns
    -------
    DataFrame
        One row per (record, layer entry).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> layers = [{"layer": 1, "kind": "post", "dnc1": 0.5, "rank": 3, "singular_values": [2.0, 1.0, 0.5]},
    ...           {"layer": 2, "kind": "pre", "dnc1": 0.4, "rank": 2, "singular_values": [1.0, 0.5]}]
    >>> records = [{"step": s, "run": r, "seed": r, "loss": 1.0 / (s + 1), "layers": layers}
    ...            for s in (0, 10) for r in (0, 1)]
    >>> _ = (d / "metrics.jsonl").write_text("".join(json.dumps(rec) + "\\n" for rec in records))
    >>> frame = layer_metrics_frame(d)
    >>> list(frame.columns), len(frame)
    (['step', 'run', 'seed', 'layer', 'kind', 'dnc1', 'rank'], 8)
    """
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
    (zero-padded).

    Parameters
    ----------
    folder : str or Path
        A DUFM or network run folder.
    kind : str, default "post"
        The layer entries of this ``kind`` (``"pre"`` or ``"post"``).
    x : str, default "step"
        The records' time column (``"epoch"`` for networks).

    Returns
    -------
    dict of int to numpy.ndarray
        ``(runs, k)`` per layer; empty without records.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> layers = [{"layer": 1, "kind": "post", "dnc1": 0.5, "rank": 3, "singular_values": [2.0, 1.0, 0.5]},
    ...           {"layer": 2, "kind": "pre", "dnc1": 0.4, "rank": 2, "singular_values": [1.0, 0.5]}]
    >>> records = [{"step": s, "run": r, "seed": r, "loss": 1.0 / (s + 1), "layers": layers}
    ...            for s in (0, 10) for r in (0, 1)]
    >>> _ = (d / "metrics.jsonl").write_text("".join(json.dumps(rec) + "\\n" for rec in records))
    >>> final_singular_values(d)[1].tolist(), list(final_singular_values(d, kind="pre"))
    ([[2.0, 1.0, 0.5], [2.0, 1.0, 0.5]], [2])
    """
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

    Parameters
    ----------
    runs : DataFrame
        One row per run (:func:`dufm_run_rows`, :func:`net_run_rows` and the swept fields).
    by : sequence of str
        The grouping columns (those absent are ignored; list or dict values are grouped as strings).

    Returns
    -------
    DataFrame
        One row per group: the ``by`` columns, ``n_runs``, ``<col>_mean``, ``<col>_std``.

    Examples
    --------
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"lam": [0.1, 0.1, 0.2], "seed": [0, 1, 0], "final_loss": [0.5, 0.7, 0.4]})
    >>> summary = aggregate_runs(runs, ["lam"])
    >>> list(summary.columns), summary["final_loss_mean"].tolist(), summary["n_runs"].tolist()
    (['lam', 'n_runs', 'final_loss_mean', 'final_loss_std'], [0.6, 0.4], [2, 1])
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
    (``digits`` significant digits) for the metrics present in ``summary``.

    Parameters
    ----------
    summary : DataFrame
        Per-group means and stds (:func:`aggregate_runs`).
    keys : sequence of str
        The grouping columns shown.
    metrics : sequence of str
        The metrics shown (absent ones skipped).
    digits : int, default 4
        Significant digits of the mean.

    Returns
    -------
    DataFrame
        Strings ``"mean ± std"`` (``"–"`` for a missing mean).

    Examples
    --------
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"lam": [0.1, 0.1, 0.2], "seed": [0, 1, 0], "final_loss": [0.5, 0.7, 0.4]})
    >>> format_mean_std(aggregate_runs(runs, ["lam"]), ["lam"], ["final_loss"])["final_loss"].tolist()
    ['0.6 ± 0.14', '0.4 ± 0']
    """
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
