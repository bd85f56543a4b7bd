"""The task-kind table: one entry per kind, read by sweeps and executors; ``kind: search`` in a sweep file
runs a search; unknown kinds and fields of another kind are one-line errors that name what is allowed."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from deepcollapse._core.checks import ConfigError
from deepcollapse.landscape.solution_file import check_solution
from deepcollapse.runs.executors import Task
from deepcollapse.runs.kinds import TASK_KINDS, get_kind
from deepcollapse.runs.sweep import SweepSpec, load_sweep, run_sweep, write_sweep_report
from deepcollapse.theory.compare import compare

SEARCH = dict(classes=3, layers=3, n=2, lam_h=0.004, lam_w=0.004, width=4, runs=4, steps=100, keep=2)


def test_every_kind_names_a_config_class_runner_and_markers():
    assert set(TASK_KINDS) == {"dufm", "net", "search"}
    for name, kind in TASK_KINDS.items():
        assert kind.name == name and kind is get_kind(name)
        assert set(kind.fields()) >= {f.name for f in dataclasses.fields(kind.config_cls)}
        assert kind.done_file != kind.resume_file and callable(kind.run) and callable(kind.rows)
    assert (get_kind("dufm").done_file, get_kind("search").done_file) == ("summary.json", "point.json")
    assert "lam" in get_kind("dufm").fields() and "budget" in get_kind("search").fields()


def test_the_table_imports_no_trainer():
    """Runners import their trainer when they run (torch costs about a second; the CLI reads the table)."""
    code = "import sys, deepcollapse.runs.kinds; print([m for m in sys.modules if m.startswith('torch')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    "make",
    [
        lambda: get_kind("serch"),
        lambda: SweepSpec.from_dict({"kind": "serch", "base": SEARCH}),
        lambda: Task("serch", {}, "out"),
    ],
    ids=["get_kind", "sweep", "task"],
)
def test_an_unknown_kind_is_one_line_listing_the_kinds(make):
    with pytest.raises(ConfigError) as info:
        make()
    msg = str(info.value)
    assert "== 'serch': did you mean 'search'? Must be one of 'dufm', 'net', 'search'." in msg
    assert "\n" not in msg


@pytest.mark.parametrize(
    ("kind", "base", "message"),
    [
        (
            "search",
            {**SEARCH, "amp": True},
            "base.amp == True, must be a field of kind 'search': 'amp' belongs",
        ),
        ("search", {**SEARCH, "backbone": "mlp"}, "'backbone' belongs to kind 'net' (set kind: net"),
        ("dufm", {"classes": 3, "budget": 1.0}, "'budget' belongs to kind 'search' (set kind: search"),
        ("net", {"steps": 10}, "'steps' belongs to kind 'dufm' / 'search'"),
    ],
)
def test_a_field_of_another_kind_is_refused_naming_that_kind(kind, base, message):
    with pytest.raises(ConfigError) as info:
        SweepSpec.from_dict({"kind": kind, "base": base})
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_search_seed_is_set_by_the_sweep_but_runs_is_the_search_field():
    with pytest.raises(ConfigError, match="base.seed == 1, must not be set"):
        SweepSpec.from_dict({"kind": "search", "base": {**SEARCH, "seed": 1}})
    spec = SweepSpec.from_dict({"kind": "search", "base": SEARCH, "seeds": [0, 1]})
    tasks = spec.tasks("out")
    assert [t.config["seed"] for t in tasks] == [0, 1] and tasks[0].config["runs"] == 4


def test_a_sweep_file_with_kind_search_runs_a_search(tmp_path):
    sweep = tmp_path / "search.yaml"
    base = {**SEARCH, "budget": 0.05, "rounds": 1}  # one round (a call always completes one)
    sweep.write_text(json.dumps({"name": "tiny-search", "kind": "search", "base": base, "seeds": [0]}))
    spec = load_sweep(sweep)  # (JSON is YAML)
    (task,) = spec.tasks(tmp_path / "out")
    from deepcollapse.landscape.search import SearchConfig

    assert set(task.config) == {f.name for f in dataclasses.fields(SearchConfig)}  # no amp, backbone, ...
    result = run_sweep(spec, tmp_path / "out", workers=1)
    folder = tmp_path / "out" / "points" / "base" / "seed_0"
    for name in ("point.json", "search.json", "summary.json", "landscape.json", "pool.npz", "solutions"):
        assert (folder / name).exists(), name
    row = json.loads((folder / "point.json").read_text())
    assert row["rounds"] == 1 and row["solution"] == "solutions/rank01.npz"
    # the best loss is eq. (1) at the written solution (an independent float64 evaluation), no higher than
    # the DNC loss of the closed form (the polished DNC construction is one of the candidates)
    assert check_solution(folder / "solutions" / "rank01.npz")["loss"] == pytest.approx(row["best_loss"])
    loss_dnc = compare(3, 3, 2, 0.004, [0.004] * 3)["loss_dnc"]
    assert row["best_loss"] <= loss_dnc * (1 + 1e-9)
    assert result.runs[["seed", "best_loss"]].values.tolist() == [[0, row["best_loss"]]]
    assert result.summary["n_runs"].tolist() == [1]
    assert write_sweep_report(result).is_file()
    again = run_sweep(load_sweep(sweep), tmp_path / "out", workers=1)
    assert [s["status"] for s in again.statuses] == ["skipped"]
