"""`deepcollapse theory compare|grid --loss --activation --eps`: per-candidate status, JSON, errors."""

from __future__ import annotations

import csv
import io
import json

import pytest

from deepcollapse.cli import main
from deepcollapse.theory import ce_dnc, ce_srg, linear_optimum


def run(capsys, *argv):
    code = main(["theory", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_compare_ce_json_and_table(capsys):
    code, out, err = run(capsys, "compare", "--loss", "ce", "--n", "5", "--json")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert d["family"] == "ce+relu"
    assert d["candidates"]["dnc"]["loss"] == pytest.approx(ce_dnc(10, 4, 5, 0.004, 0.004).loss, rel=1e-12)
    assert d["candidates"]["srg"]["loss"] == pytest.approx(ce_srg(10, 4, 5, 0.004, 0.004).loss, rel=1e-12)
    assert d["candidates"]["dnc"]["status"] == "numerical re-optimisation"
    code, out, _ = run(capsys, "compare", "--loss", "ce", "--activation", "linear", "--classes", "4")
    assert code == 0 and "unavailable" in out and "no closed form" in out and "linear-etf" in out


def test_compare_default_table_states_how(capsys):
    code, out, _ = run(capsys, "compare", "--classes", "4")
    assert code == 0 and "closed form" in out and "unavailable" in out


def test_compare_linear_mse_closed_form(capsys):
    code, out, _ = run(capsys, "compare", "--activation", "linear", "--json")
    d = json.loads(out)
    assert d["candidates"]["linear"]["status"] == "closed form"
    assert d["candidates"]["linear"]["loss"] == pytest.approx(linear_optimum(10, 4, 50, 0.004, 0.004).loss)


def test_grid_ce_csv(capsys):
    code, out, _ = run(capsys, "grid", "--classes", "6,10", "--layers", "4", "--loss", "ce", "--n", "5")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [r["classes"] for r in rows] == ["6", "10"]
    assert all(r["status_srg"] == "numerical re-optimisation" and r["family"] == "ce+relu" for r in rows)


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["compare", "--loss", "hinge"], "--loss == 'hinge'"),
        (["compare", "--activation", "tanh"], "--activation == 'tanh'"),
        (["compare", "--activation", "relu_eps"], "--eps == None"),
        (["compare", "--activation", "relu_eps", "--eps", "0"], "--eps == 0.0"),
        (["compare", "--eps", "0.1"], "--eps == 0.1"),
        (["compare", "--loss", "ce", "--construction", "def9"], "--construction == 'def9'"),
        (["grid", "--loss", "ce", "--activation", "sigmoid"], "--activation == 'sigmoid'"),
    ],
)
def test_family_bad_input_one_line_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and err.startswith("deepcollapse: error: ") and needle in err
    assert err.count("\n") == 1
