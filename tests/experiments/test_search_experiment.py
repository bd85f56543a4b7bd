"""The best-known table's points are executor tasks: a process pool gives the in-process rows, finished
searches are reused, and deleting ``point.json`` redoes only the verdict."""

from __future__ import annotations

import json

import pytest

from deepcollapse.experiments.search_experiments import BEST_KNOWN_SMOKE, best_known_rows
from deepcollapse.landscape.solution_file import check_solution
from deepcollapse.runs.executors import Task, run_tasks


@pytest.mark.check  # two smoke tables (≈ 10 s)
def test_search_points_run_in_a_pool_and_reuse_finished_searches(tmp_path):
    settings = {**BEST_KNOWN_SMOKE, "classes": [3, 4]}
    inline = best_known_rows(tmp_path / "a", settings)
    seen = []

    def pool(tasks, on_done):
        # no registry: nothing to announce; the pool still tells this process of each finished point
        assert on_done is None
        return run_tasks(tasks, executor="local", workers=2, on_done=lambda t, o: seen.append(t.label))

    pooled = best_known_rows(tmp_path / "b", settings, run=pool)
    assert sorted(seen) == ["K3_L3", "K4_L3"]
    for a, b in zip(inline, pooled):
        assert a["best_loss"] == b["best_loss"] and a["verdict"] == b["verdict"]
        assert a["best_from"] == "this search" and a["search_loss"] == a["best_loss"]  # no registry given
        certified = a["verdict_before_descent"].startswith(("critical at a kink", "local minimum"))
        # a point still not certified after the refinement is descended further, never upwards
        assert (a["descent"] is None) == certified
        assert certified or a["descent"]["loss_after"] <= a["descent"]["loss_before"]
        sol = check_solution(tmp_path / "a" / a["solution"])  # independent float64 evaluation
        assert abs(sol["loss"] - a["best_loss"]) <= 1e-12 * a["best_loss"]
    point = tmp_path / "a" / "points" / "K3_L3"
    rounds = json.loads((point / "summary.json").read_text())["rounds"]
    (point / "point.json").unlink()
    assert not Task("search", {}, str(point)).done
    again = best_known_rows(tmp_path / "a", settings)
    assert json.loads((point / "summary.json").read_text())["rounds"] == rounds  # no new search round
    assert again[0]["best_loss"] == inline[0]["best_loss"]


def test_each_point_is_in_the_registry_as_soon_as_it_is_finished(tmp_path):
    """A table stopped after some points (a killed run, a session's end) has offered those points already."""
    from deepcollapse.landscape.best_known import Registry

    settings = {**BEST_KNOWN_SMOKE, "classes": [3, 4]}
    registry = Registry.load(tmp_path / "registry")

    def stopped_after_the_points(tasks, on_done):
        run_tasks(tasks, workers=1, on_done=on_done)
        raise KeyboardInterrupt  # before the table's own loop over the points

    with pytest.raises(KeyboardInterrupt):
        best_known_rows(
            tmp_path / "a", settings, run=stopped_after_the_points, registry=registry, command="t"
        )
    rows = Registry.load(tmp_path / "registry").rows
    assert sorted((r.key.classes, r.key.layers) for r in rows) == [(3, 3), (4, 3)]
    for r in rows:  # each row is the point's own solution, re-evaluated independently
        point = json.loads((tmp_path / "a" / "points" / f"K{r.key.classes}_L3" / "point.json").read_text())
        assert r.loss == pytest.approx(point["best_loss"], rel=1e-12)
        assert r.provenance.command == "t"
