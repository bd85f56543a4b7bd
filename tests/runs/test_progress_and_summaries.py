"""Long work is not silent (issue 32, point 7): the bars of the trainers report from inside the tasks of a
process pool to the driver, which draws one bar per running task; ``sweep`` and ``reproduce NAME`` end with
their results as a table in the terminal (the sweep's table: tests/cli/test_cli_sweep.py)."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from deepcollapse._core.progress import ReportingBar, progress_bar, report_progress_to
from deepcollapse.cli import main
from deepcollapse.runs.executors import Task, _TaskBars, run_tasks

TINY = {"classes": 3, "n": 2, "layers": 2, "width": 4, "lr": 0.3, "runs": 1, "polish": False}


def test_a_bar_reports_to_the_sink_when_one_is_installed_and_draws_otherwise():
    reports: list[dict] = []
    with report_progress_to(reports.append):
        bar = progress_bar(total=30, desc="dufm", unit="step")
        assert isinstance(bar, ReportingBar)
        bar.interval = 0.0
        bar.update(10)
        bar.set_postfix(best="0.5")
        bar.close()
        assert not isinstance(progress_bar(total=3, desc="x", unit="y", disable=True), ReportingBar)
    assert [r["n"] for r in reports] == [0, 10, 10, 10]
    assert reports[-1] == {
        "desc": "dufm",
        "n": 10,
        "total": 30,
        "unit": "step",
        "postfix": "best=0.5",
        "closed": True,
    }
    assert not isinstance(progress_bar(total=3, desc="x", unit="y"), ReportingBar)  # no sink: tqdm


def test_the_driver_draws_one_bar_per_running_task(monkeypatch):
    import sys

    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    bars = _TaskBars(["lam=0.003/seeds_0-1", "lam=0.004/seeds_0-1"], enabled=True)
    bars.show(0, {"desc": "dufm", "n": 1000, "total": 30000, "unit": "step", "postfix": "best=0.9"})
    bars.show(1, {"desc": "dufm", "n": 2000, "total": 30000, "unit": "step", "postfix": ""})
    bars.done(0)
    bars.close()
    text = stream.getvalue()
    assert "lam=0.003/seeds_0-1: dufm" in text and "1000/30000" in text and "best=0.9" in text
    assert "lam=0.004/seeds_0-1: dufm" in text and "2000/30000" in text


@pytest.mark.check
def test_tasks_in_a_process_pool_show_their_steps(tmp_path, capfd):
    """End to end with two spawned workers (the case of `make demo`, which sat at 'sweep tasks 0/2')."""
    tasks = [
        Task("dufm", {**TINY, "steps": 3000, "seed": s}, str(tmp_path / f"t{s}"), label=f"task{s}")
        for s in (0, 1)
    ]
    run_tasks(tasks, workers=2, progress=True)
    err = capfd.readouterr().err
    assert "task0: dufm" in err and "task1: dufm" in err and "/3000" in err


def test_reproduce_ends_with_the_experiment_tables(tmp_path, capsys):
    assert main(["reproduce", "fig3-left", "--smoke", "--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    table = pd.read_csv(tmp_path / "tables" / "fig3_left.csv")
    assert "tables/fig3_left.csv" in out
    for ratio in table["ratio"]:
        assert f" {ratio:.4g}" in out
