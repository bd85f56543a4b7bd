"""Typed results (:mod:`deepcollapse._core.results`): JSON conversion, files of the last release, key access.

``data/results_cbb4f09/`` holds files written by the release before results were typed (commit cbb4f09, the
tree before the layout refactor), by these commands::

    dufm train --classes 4 --n 3 --layers 3 --width 6 --lam 0.01 --lr 0.3 --steps 300 --runs 3 --seed 3
        -> dufm_summary.json (summary.json)
    dufm train --classes 6 --n 2 --layers 3 --width 6 --lam 0.004 --lr 5000 --steps 50 --runs 2 --seed 1
        -> dufm_summary_diverged.json (both runs diverged: the short per-run entry)
    dufm train ... --runs 2 --max-steps 100 --json -> dufm_train_max_steps.json (the early-stop return value)
    dufm search --classes 3 --layers 3 --n 2 --lam 0.004 --width 4 --runs 4 --steps 200 --keep 2 --rounds 1
        -> search_summary.json;  dufm landscape SEARCH_FOLDER --out OUT -> landscape.json
    net train --dataset digits --classes 0,1 --backbone mlp --epochs 1 --batch-size 40 --n 40 --device cpu
        -> net_summary.json
    theory compare --classes 10 --layers 4 --n 50 --lam-h 0.004 --lam-w 0.004 --json [--loss ce]
        [--classes 4 --layers 3 --n 5 --activation linear] -> compare.json, compare_ce.json, compare_lin.json

Each must be read by this release's result class and written back byte for byte.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deepcollapse._core.results import Result, to_jsonable
from deepcollapse.dufm.classify import CLASSIFICATIONS, DUFMRun
from deepcollapse.dufm.summary import DUFMSummary
from deepcollapse.landscape.search import SearchSolution, SearchSummary
from deepcollapse.landscape.verdicts import VERDICTS, Landscape
from deepcollapse.nets.train import NetSummary
from deepcollapse.theory.compare import Comparison
from deepcollapse.theory.family_compare import Candidate, FamilyComparison

OLD = Path(__file__).parent / "data" / "results_cbb4f09"


@dataclass(frozen=True, eq=False)
class _Inner(Result):
    name: str | None = None
    value: Any = None


@dataclass(frozen=True, eq=False)
class _Outer(Result):
    _nested = {"parts": _Inner, "one": _Inner}
    _nested_values = {"by_name": _Inner}

    count: int | None = None
    parts: list[_Inner] | None = None
    one: _Inner | None = None
    by_name: dict[str, _Inner] | None = None
    array: Any = None


def _outer() -> _Outer:
    return _Outer(
        count=2,
        parts=[_Inner("a", np.float64(0.5)), _Inner("b", (1, 2))],
        one=_Inner("c", np.int64(3)),
        by_name={"d": _Inner("d", np.bool_(True))},
        array=np.arange(3.0),
    )


# ----------------------------------------------------------------------------------------------------------
# the base class
# ----------------------------------------------------------------------------------------------------------
def test_to_dict_converts_nested_results_tuples_and_numpy_to_json_types():
    d = _outer().to_dict()
    assert d == {
        "count": 2,
        "parts": [{"name": "a", "value": 0.5}, {"name": "b", "value": [1, 2]}],
        "one": {"name": "c", "value": 3},
        "by_name": {"d": {"name": "d", "value": True}},
        "array": [0.0, 1.0, 2.0],
    }
    assert type(d["one"]["value"]) is int and type(d["parts"][0]["value"]) is float
    assert type(d["by_name"]["d"]["value"]) is bool and type(d["array"][0]) is float
    json.dumps(d, allow_nan=False)  # raises if anything is not JSON


def test_from_dict_reads_nested_results_and_round_trips():
    o = _outer()
    back = _Outer.from_dict(o.to_dict())
    assert isinstance(back.parts[0], _Inner) and isinstance(back.one, _Inner)
    assert isinstance(back.by_name["d"], _Inner)
    assert back.parts[1].value == [1, 2]
    assert back == o and back.to_dict() == o.to_dict()


def test_keys_a_dict_lacks_stay_absent_and_unknown_keys_are_kept_in_order():
    data = {"future_key": [1, 2], "count": 5, "one": {"name": "x", "extra": 1}}
    r = _Outer.from_dict(data)
    assert r.count == 5 and r.parts is None and r.array is None  # absent: the default
    assert r.one is not None and r.one.name == "x" and r.one.value is None
    assert list(r) == ["future_key", "count", "one"]
    assert "parts" not in r and "future_key" in r
    assert r["future_key"] == [1, 2]
    with pytest.raises(KeyError):
        r["parts"]
    assert r.get("parts", "absent") == "absent"
    assert json.dumps(r.to_dict()) == json.dumps(data)  # the same keys, in the same order


def test_mapping_access_is_read_only_and_equal_to_the_dict():
    o = _Outer(count=1, parts=[], one=None, by_name={}, array=None)
    assert o["count"] == 1 and o.get("count") == 1 and o.get("missing") is None
    assert "count" in o and "missing" not in o
    assert list(o.keys()) == [f.name for f in dataclasses.fields(_Outer)]
    assert len(o) == 5 and dict(o)["count"] == 1 and {**o}["parts"] == []
    assert o == {"count": 1, "parts": [], "one": None, "by_name": {}, "array": None}
    assert o != {"count": 2, "parts": [], "one": None, "by_name": {}, "array": None}
    with pytest.raises(TypeError):
        o["count"] = 2  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.count = 2  # type: ignore[misc]


def test_to_jsonable_leaves_plain_json_alone_and_keeps_non_finite_floats():
    x = {"a": [1, "s", None, True], "b": float("inf")}
    assert to_jsonable(x) == x


def test_a_field_may_not_hide_a_mapping_method():
    with pytest.raises(TypeError, match="items"):

        @dataclass(frozen=True, eq=False)
        class _Bad(Result):
            items: list[int] | None = None  # type: ignore[assignment]


def test_from_dict_refuses_a_non_mapping():
    with pytest.raises(TypeError, match="needs a mapping"):
        _Outer.from_dict([1, 2])  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------------------
# files written by the previous release
# ----------------------------------------------------------------------------------------------------------
CASES = [
    ("dufm_summary.json", DUFMSummary),
    ("dufm_summary_diverged.json", DUFMSummary),
    ("dufm_train_max_steps.json", DUFMSummary),
    ("search_summary.json", SearchSummary),
    ("landscape.json", Landscape),
    ("net_summary.json", NetSummary),
    ("compare.json", Comparison),
    ("compare_ce.json", FamilyComparison),
    ("compare_lin.json", FamilyComparison),
]


@pytest.mark.parametrize(("name", "cls"), CASES, ids=[c[0] for c in CASES])
def test_a_file_of_the_previous_release_is_read_and_written_back_byte_for_byte(name, cls):
    text = (OLD / name).read_text()
    data = json.loads(text)
    r = cls.from_dict(data)
    assert isinstance(r, cls)
    assert r.to_dict() == data
    # the same bytes: keys in the same order, the same numbers (summary files are indented, --json not)
    indent = 2 if text.startswith("{\n") else None
    assert json.dumps(r.to_dict(), indent=indent) + ("\n" if text.endswith("\n") else "") == text
    for key, value in data.items():  # the dict access of earlier releases
        assert r[key] == value
    assert cls.from_dict(r.to_dict()) == r


def test_old_dufm_summary_reads_as_typed_runs():
    s = DUFMSummary.from_dict(json.loads((OLD / "dufm_summary.json").read_text()))
    assert s.finished is True and s.step == 300 and len(s.runs) == 3
    assert all(isinstance(r, DUFMRun) for r in s.runs)
    assert [r.seed for r in s.runs] == [3, 4, 5]
    assert all(r.classification in CLASSIFICATIONS for r in s.runs)
    assert s.best_loss == min(r.final_loss for r in s.runs)
    assert s.runs[0]["norms"]["H1"] == s.runs[0].norms["H1"] > 0


def test_old_diverged_runs_keep_their_short_entry():
    s = DUFMSummary.from_dict(json.loads((OLD / "dufm_summary_diverged.json").read_text()))
    run = s.runs[0]
    assert run.diverged is True and run.classification == "diverged" and run.diverged_step is not None
    assert run.norms is None and "norms" not in run and "polish_source" not in run
    assert list(run)[-1] == "below_dnc"  # the order the diverged branch wrote


def test_old_early_stop_return_value_holds_only_step_and_finished():
    s = DUFMSummary.from_dict(json.loads((OLD / "dufm_train_max_steps.json").read_text()))
    assert s.to_dict() == {"step": 100, "finished": False}
    assert s.runs is None and "runs" not in s


def test_old_search_landscape_net_and_comparison_files_read_as_types():
    search = SearchSummary.from_dict(json.loads((OLD / "search_summary.json").read_text()))
    assert isinstance(search.solutions[0], SearchSolution) and search.solutions[0].file == "rank01.npz"
    assert search.best_loss == search.solutions[0].loss and search.theory["closed_form"] is True
    land = Landscape.from_dict(json.loads((OLD / "landscape.json").read_text()))
    assert land.verdict in VERDICTS and land.directions is None and "target" in land
    net = NetSummary.from_dict(json.loads((OLD / "net_summary.json").read_text()))
    assert net.num_classes == 2 and net.epochs_done == 1 and set(net.ranks) == set(net.layers)
    lin = FamilyComparison.from_dict(json.loads((OLD / "compare_lin.json").read_text()))
    assert isinstance(lin.candidates["linear"], Candidate) and isinstance(lin.mse_relu, Comparison)
    assert lin.candidates["srg"].status == "unavailable"
    ce = FamilyComparison.from_dict(json.loads((OLD / "compare_ce.json").read_text()))
    assert ce.mse_relu is None and "mse_relu" not in ce
