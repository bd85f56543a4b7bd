"""The tables ``sweep`` and ``reproduce NAME`` print at their end (issue 32, point 7): the results in the
terminal, not only the paths of the files that hold them.

A summary table (columns ``<metric>_mean`` / ``<metric>_std``, one row per point: ``summary.csv`` of a
sweep, ``tables/*summary*.csv`` of an experiment) is shown as its key columns, the number of runs and
``mean ± std`` of the headline metrics present (:data:`HEADLINE`, else the first few); any other table as its
first columns.  At most :data:`MAX_ROWS` rows and :data:`MAX_COLUMNS` columns, numbers with 4 significant
digits (``_core.format``); the CSV files keep every row, column and digit, and their paths are printed too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deepcollapse._core.format import fmt_num, fmt_table

__all__ = ["HEADLINE", "MAX_COLUMNS", "MAX_ROWS", "print_experiment_tables", "summary_table"]

#: The metrics shown first, where a table has them (DUFM sweeps, network sweeps, searches).
HEADLINE = (
    "final_loss",
    "loss",
    "loss_dnc",
    "loss_srg",
    "mean_rank",
    "avg_rank",
    "reaches_dnc",
    "below_dnc",
    "train_acc",
    "test_acc",
    "verdict",
)
MAX_ROWS = 15
MAX_COLUMNS = 8


def _mean_std(mean: Any, std: Any) -> str:
    if mean is None or mean != mean:  # NaN: no value at this point
        return "-"
    if std is None or std != std or std == 0:
        return fmt_num(float(mean), 4)
    return f"{fmt_num(float(mean), 4)} ± {fmt_num(float(std), 2)}"


def summary_table(frame: Any, keys: list[str] | None = None) -> str:
    """The text table of a results frame (module docstring).

    Parameters
    ----------
    frame : pandas.DataFrame
        A summary (``<metric>_mean`` / ``_std`` columns) or any other table.
    keys : list of str, optional
        The columns naming a row (default: the leading columns that are not metrics).

    Returns
    -------
    str
        The table (``""`` for an empty frame).

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"lam": [0.002, 0.004], "n_runs": [2, 2], "final_loss_mean": [0.5, 0.25],
    ...                       "final_loss_std": [0.0, 0.0123]})
    >>> print(summary_table(frame))
      lam  runs  final_loss
    0.002     2  0.5
    0.004     2  0.25 ± 0.012
    """
    if frame is None or len(frame) == 0:
        return ""
    columns = list(frame.columns)
    metrics = [c[: -len("_mean")] for c in columns if c.endswith("_mean")]
    records = frame.to_dict("records")
    if not metrics:  # not a summary: its first columns as they are
        shown = [c for c in columns if c != "run_dir"][:MAX_COLUMNS]
        return fmt_table(records, shown, digits=4, max_rows=MAX_ROWS)
    if keys is None:
        keys = []
        for c in columns:
            if c.endswith(("_mean", "_std")) or c == "n_runs":
                break
            keys.append(c)
    keys = [k for k in keys if k in columns][:3]
    room = MAX_COLUMNS - len(keys) - 1
    chosen = [m for m in HEADLINE if m in metrics][:room]
    chosen += [m for m in metrics if m not in chosen][: max(0, room - len(chosen))]
    rows = []
    for r in records:
        row: dict[str, Any] = {k: r[k] for k in keys}
        row["runs"] = r.get("n_runs")
        for m in chosen:
            row[m] = _mean_std(r.get(f"{m}_mean"), r.get(f"{m}_std"))
        rows.append(row)
    return fmt_table(rows, digits=4, max_rows=MAX_ROWS)


def print_experiment_tables(out_dir: str | Path) -> None:
    """Print the summary tables an experiment wrote (``tables/*summary*.csv``, else every table) under their
    file names.

    Parameters
    ----------
    out_dir : str or Path
        The experiment's output folder (its tables are in ``tables/``).

    Returns
    -------
    None
        Prints each table (:func:`summary_table`) under its file name; nothing when there are none.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> (out / "tables").mkdir()
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"lam": [0.002, 0.004], "n_runs": [2, 2], "final_loss_mean": [0.5, 0.25],
    ...                       "final_loss_std": [0.0, 0.0123]})
    >>> frame.to_csv(out / "tables" / "lam_summary.csv", index=False)
    >>> print_experiment_tables(out)
    <BLANKLINE>
    tables/lam_summary.csv (mean ± std over seeds; every digit in the file):
      lam  runs  final_loss
    0.002     2  0.5
    0.004     2  0.25 ± 0.012
    """
    import pandas as pd

    folder = Path(out_dir) / "tables"
    files = sorted(folder.glob("*.csv")) if folder.is_dir() else []
    summaries = [f for f in files if "summary" in f.stem] or files
    for f in summaries:
        try:
            frame = pd.read_csv(f)
        except (ValueError, OSError, pd.errors.EmptyDataError):
            continue
        text = summary_table(frame)
        if text:
            what = (
                "mean ± std over seeds"
                if any(c.endswith("_mean") for c in frame.columns)
                else "first columns"
            )
            print(f"\n{f.relative_to(Path(out_dir))} ({what}; every digit in the file):")
            print(text)
