"""Typed results: equality is NaN-aware, and the keys every produced Comparison / DUFMRun holds are
required fields while older files lacking them still read (issue 44, point 2d)."""

from __future__ import annotations

import math

import pytest

from deepcollapse.dufm.results import DUFMRun, DUFMSummary
from deepcollapse.theory.compare import Comparison, compare


def test_a_result_holding_nan_equals_itself_and_its_copy():
    c = Comparison.from_dict(
        {"loss_dnc": math.nan, "loss_srg": None, "loss_zero": 0.5, "lam_w": [math.nan, 1.0]}
    )
    assert c == c
    assert c == Comparison.from_dict(c.to_dict())
    assert c == c.to_dict()  # a mapping: compared as JSON
    assert c != Comparison.from_dict({**c.to_dict(), "loss_dnc": 0.1})  # NaN only equals NaN
    assert c != Comparison.from_dict({**c.to_dict(), "lam_w": [1.0, math.nan]})  # in the same place


def test_nested_nan_and_plain_values_compare_as_before():
    run = {"run": 0, "final_loss": math.nan, "dnc1": [math.nan, 0.1], "classification": "diverged"}
    a = DUFMSummary.from_dict({"runs": [run], "step": 10})
    assert a == DUFMSummary.from_dict({"runs": [dict(run)], "step": 10})
    assert a != DUFMSummary.from_dict({"runs": [{**run, "dnc1": [math.nan, 0.2]}], "step": 10})
    assert compare(6, 3, 1, 0.001, 0.001) == compare(6, 3, 1, 0.001, 0.001)


def test_required_fields_must_be_given_to_the_constructor():
    with pytest.raises(TypeError, match="loss_zero"):
        Comparison(loss_dnc=0.1, loss_srg=None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="classification"):
        DUFMRun(run=0)  # type: ignore[call-arg]


def test_older_files_lacking_required_keys_still_read_and_round_trip():
    old = {"classes": 4, "loss_dnc": 0.2}  # no loss_srg, no loss_zero
    c = Comparison.from_dict(old)
    assert c.loss_srg is None and c.loss_zero is None
    assert c.to_dict() == old  # the missing keys stay missing
    old_run = {"run": 1, "seed": 1, "final_loss": 0.3, "classification": "dnc"}
    r = DUFMRun.from_dict(old_run)
    assert r.ranks is None and r.to_dict() == old_run
