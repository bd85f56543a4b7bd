"""What running a task did, typed (issue 30): ``run_task`` / ``run_unit`` / ``run_tasks`` return
:class:`TaskOutcome` results whose ``to_dict()`` is, key for key and in order, the status dict of earlier
releases, and which still read like that dict (``outcome["status"]``)."""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import pytest

from deepcollapse._core.results import Result
from deepcollapse.runs.executors import Task, TaskError, TaskOutcome, run_task, run_tasks, run_unit
from deepcollapse.runs.kinds import TASK_KINDS, get_kind


def _finish(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text("{}")


@pytest.fixture
def fake_dufm(monkeypatch):
    """The ``dufm`` kind with runners that only write the done marker (no trainer, no torch); two pending
    tasks run in one batched call; a config with ``fail`` raises."""

    def run(config, out, progress):
        if config.get("fail"):
            raise RuntimeError("broken config")
        _finish(Path(out))

    def run_batch(configs, outs, progress):
        for out in outs:
            _finish(Path(out))

    kind = dataclasses.replace(
        get_kind("dufm"),
        run=run,
        resume=lambda out, progress: _finish(Path(out)),
        group=lambda configs: [list(range(len(configs)))],
        run_batch=run_batch,
    )
    monkeypatch.setitem(TASK_KINDS, "dufm", kind)
    return kind


def test_run_task_statuses_keep_the_keys_of_the_dicts(tmp_path, fake_dufm):
    task = Task("dufm", {}, str(tmp_path / "a"), "a")
    trained = run_task(task)
    assert isinstance(trained, TaskOutcome) and isinstance(trained, Result)
    assert list(trained.to_dict()) == ["label", "status", "seconds"]
    assert trained.status == trained["status"] == "trained" and trained.seconds >= 0.0
    assert trained.batched is None and "batched" not in trained and trained.get("error") is None
    skipped = run_task(task)
    assert skipped == {"label": "a", "status": "skipped", "seconds": 0.0}
    assert dict(skipped) == skipped.to_dict() and json.loads(json.dumps(skipped.to_dict())) == skipped

    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "checkpoint.pt").write_bytes(b"")
    resumed = run_task(Task("dufm", {}, str(tmp_path / "b"), "b"))
    assert resumed.status == "resumed" and list(resumed) == ["label", "status", "seconds"]
    with pytest.raises(TypeError):
        resumed["status"] = "trained"  # type: ignore[index]  # read-only, as a result


def test_a_batched_unit_says_how_many_shared_the_call(tmp_path, fake_dufm):
    done = Task("dufm", {}, str(tmp_path / "done"), "done")
    _finish(Path(done.out_dir))
    unit = [done, Task("dufm", {}, str(tmp_path / "x"), "x"), Task("dufm", {}, str(tmp_path / "y"), "y")]
    out = run_unit(unit)
    assert [o.status for o in out] == ["skipped", "trained", "trained"]
    assert list(out[0].to_dict()) == ["label", "status", "seconds"]
    assert list(out[1].to_dict()) == ["label", "status", "seconds", "batched"]
    assert [o.batched for o in out] == [None, 2, 2] and out[1]["batched"] == 2


def test_run_tasks_returns_outcomes_in_order_and_raises_on_a_failure(tmp_path, fake_dufm):
    tasks = [Task("dufm", {}, str(tmp_path / name), name) for name in ("p", "q")]
    first = run_tasks(tasks, workers=1)
    assert [type(o) for o in first] == [TaskOutcome, TaskOutcome]
    assert [(o.label, o.status, o.batched) for o in first] == [("p", "trained", 2), ("q", "trained", 2)]
    assert [o["status"] for o in run_tasks(tasks, workers=1)] == ["skipped", "skipped"]
    with pytest.raises(TaskError, match="bad: RuntimeError: broken config"):
        run_tasks([Task("dufm", {"fail": True}, str(tmp_path / "bad"), "bad")], workers=1)


@pytest.mark.parametrize(
    "data",
    [
        {"label": "a", "status": "trained", "seconds": 1.5},
        {"label": "a", "status": "trained", "seconds": 1.5, "batched": 4},
        {"label": "a", "status": "failed", "error": "boom", "seconds": 0.0},
    ],
    ids=["single", "batched", "failed"],
)
def test_an_outcome_crosses_processes_and_reads_back_from_its_dict(data):
    """A pool worker or a Ray task returns outcomes pickled; the keys (and their order) survive."""
    outcome = TaskOutcome.from_dict(data)
    again = pickle.loads(pickle.dumps(outcome))
    assert again == outcome and again.to_dict() == data and list(again.to_dict()) == list(data)
    assert TaskOutcome.from_dict(outcome.to_dict()).to_dict() == data


def test_on_done_sees_each_task_that_finishes_in_this_call_and_its_errors_do_not_stop_the_sweep(
    tmp_path, fake_dufm, caplog
):
    _finish(tmp_path / "b")  # done before the call: skipped, not announced
    tasks = [Task("dufm", {}, str(tmp_path / name), name) for name in ("a", "b", "c")]
    seen = []
    outcomes = run_tasks(
        tasks, workers=1, on_done=lambda task, outcome: seen.append((task.label, outcome.status))
    )
    assert seen == [("a", "trained"), ("c", "trained")]
    assert [o.status for o in outcomes] == ["trained", "skipped", "trained"]

    def broken(task, outcome):
        raise OSError(f"registry unwritable after {task.label}")

    more = [Task("dufm", {}, str(tmp_path / name), name) for name in ("d", "e")]
    with caplog.at_level("ERROR"):
        assert [o.status for o in run_tasks(more, workers=1, on_done=broken)] == ["trained", "trained"]
    assert "registry unwritable after d" in caplog.text and "registry unwritable after e" in caplog.text
