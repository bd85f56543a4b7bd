"""`deepcollapse theory ...` end to end through the dispatcher (exit codes, JSON, tables, figures, errors)."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from deepcollapse._core.format import fmt_num
from deepcollapse.cli import main
from deepcollapse.theory import dufm_objective, loss_dnc, srg_solution


def run(capsys, *argv):
    code = main(["theory", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_compare_json(capsys):
    code, out, err = run(
        capsys,
        "compare",
        "--classes",
        "10",
        "--layers",
        "4",
        "--n",
        "50",
        "--lam-h",
        "0.004",
        "--lam-w",
        "0.004",
        "--json",
    )
    assert code == 0 and err == ""
    d = json.loads(out)
    for key in (
        "loss_dnc",
        "loss_srg",
        "srg_construction",
        "loss_zero",
        "scales_dnc",
        "scales_srg",
        "rank_srg",
        "theorem5",
    ):
        assert key in d
    assert d["srg_construction"] == "def9" and d["rank_srg"] == 5 and d["loss_zero"] == 0.5
    assert d["theorem5"] is True and d["loss_srg"] < d["loss_dnc"] < 0.5
    # the reported SRG loss is the value of eq. (1) on explicit matrices
    sol = srg_solution(10, 4, 50, 0.004, 0.004)
    assert math.isclose(d["loss_srg"], dufm_objective(sol.H1, sol.weights, 0.004, 0.004).total, rel_tol=1e-10)


def test_compare_per_layer_lam_w_and_undefined_srg(capsys):
    code, out, _ = run(
        capsys,
        "compare",
        "--classes",
        "4",
        "--layers",
        "3",
        "--n",
        "2",
        "--lam-h",
        "0.001",
        "--lam-w",
        "0.001,0.002,0.003",
        "--json",
    )
    d = json.loads(out)
    assert code == 0 and d["loss_srg"] is None and d["srg_construction"] is None
    assert d["lam_w"] == [0.001, 0.002, 0.003]
    assert d["loss_dnc"] == pytest.approx(loss_dnc(4, 3, 2, 0.001, [0.001, 0.002, 0.003]).loss, rel=1e-12)


def test_compare_table(capsys):
    code, out, _ = run(capsys, "compare", "--classes", "7", "--layers", "4")
    assert code == 0
    assert "DNC" in out and "SRG (def11" in out and "zero" in out and "Theorem 5" in out


def test_compare_construction_choice(capsys):
    code, out, _ = run(capsys, "compare", "--classes", "8", "--construction", "def11.1", "--json")
    assert code == 0 and json.loads(out)["srg_construction"] == "def11.1"


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["compare", "--classes", "1"], "--classes == 1"),
        (["compare", "--classes", "ten"], "--classes == 'ten'"),
        (["compare", "--layers", "0"], "--layers == 0"),
        (["compare", "--n", "0"], "--n == 0"),
        (["compare", "--lam-h", "0"], "--lam-h == 0.0"),
        (["compare", "--lam-h", "inf"], "--lam-h == inf"),
        (["compare", "--lam-w", "nan"], "--lam-w == nan"),
        (["compare", "--layers", "3", "--lam-w", "0.1,0.2"], "--lam-w has 2 values"),
        (["compare", "--classes", "7", "--construction", "def9"], "--classes == 7"),
        (["compare", "--construction", "foo"], "--construction == 'foo'"),
        (["grid", "--classes", "5:2"], "--classes == '5:2'"),
        (["grid", "--format", "xml"], "--format == 'xml'"),
        (["plot", "srg", "--classes", "5", "--out", "x.png"], "--classes == 5"),
        (["plot", "srg", "--layers", "2", "--out", "x.png"], "--layers == 2"),
    ],
)
def test_bad_input_one_line_exit_2(capsys, tmp_path, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert err.startswith("deepcollapse: error: ") and needle in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "x.png").exists()


def test_grid_csv_and_markdown(capsys, tmp_path):
    code, out, _ = run(
        capsys,
        "grid",
        "--classes",
        "5:8",
        "--layers",
        "3,4",
        "--n",
        "1",
        "--lam-h",
        "0.001",
        "--lam-w",
        "0.001",
    )
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 8 and rows[0]["classes"] == "5" and rows[0]["loss_srg"] == ""
    for row in rows:
        assert float(row["loss_dnc"]) == pytest.approx(
            loss_dnc(int(row["classes"]), int(row["layers"]), 1, 0.001, 0.001).loss, rel=1e-9
        )
        if row["theorem5"] == "True":
            assert float(row["ratio"]) < 1
    target = tmp_path / "grid.md"
    code, out, err = run(
        capsys, "grid", "--classes", "6,10", "--layers", "4", "--format", "markdown", "--out", str(target)
    )
    text = target.read_text()
    assert code == 0 and out == "" and "wrote 2 rows" in err
    assert text.startswith("L_DNC and L_SRG of the L-DUFM at n = 50")  # the setting above the table
    assert "\n| classes | layers |" in text and text.count("\n") == 6
    # issue 45, point 10a: the Markdown is for reading, 6 significant digits (the CSV above keeps them all)
    header, _, *body = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()[2:]]
    rows = [dict(zip(header, cells, strict=True)) for cells in body]
    assert [r["classes"] for r in rows] == ["6", "10"]
    for r, K in zip(rows, (6, 10), strict=True):
        assert r["loss_dnc"] == fmt_num(loss_dnc(K, 4, 50, 0.004, 0.004).loss, 6)
        for key in ("loss_dnc", "loss_srg", "ratio"):
            assert len(r[key].replace("0.", "", 1).lstrip("0")) <= 6, r  # not repr's 17 digits


def test_plots_write_png(capsys, tmp_path):
    out1, out2 = tmp_path / "ratio.png", tmp_path / "srg.png"
    assert run(capsys, "plot", "ratio", "--r", "4:6", "--out", str(out1))[0] == 0
    assert run(capsys, "plot", "srg", "--classes", "10", "--layers", "4", "--out", str(out2))[0] == 0
    for p in (out1, out2):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000


def test_theory_without_subcommand_prints_help(capsys):
    code, out, _ = run(capsys)
    assert code == 2 and "compare" in out


def test_grid_json(capsys):
    code, out, _ = run(capsys, "grid", "--classes", "6,7", "--layers", "4", "--format", "json")
    rows = json.loads(out)
    assert code == 0 and [r["classes"] for r in rows] == [6, 7]
    assert all(r["theorem5_strict"] and r["srg_beats_dnc"] for r in rows)


def test_plot_functions_draw_on_given_axes():
    """The plot_x(data, ax=None) -> (fig, ax) convention of analysis.theory_plots (no pyplot)."""
    from matplotlib.figure import Figure

    from deepcollapse.analysis.theory_plots import plot_ratio, plot_srg, ratio_data, srg_figure_data

    fig = Figure()
    ax = fig.add_subplot()
    data = ratio_data([4, 5], [4], 1, 0.001, 0.001)
    assert data.curves[4]["ratio"][1] < 1
    f2, ax2 = plot_ratio(data, ax=ax)
    assert f2 is fig and ax2 is ax and len(ax.lines) >= 1
    fig2 = Figure()
    axes = fig2.subplots(1, 4)
    sdata = srg_figure_data(10, 4, 50, 0.004, 0.004)
    assert sdata.srg_mid.shape == (5, 10) and sdata.srg_gram.shape == (10, 10)
    f3, _ = plot_srg(sdata, ax=axes)
    assert f3 is fig2 and all(len(a.images) == 1 for a in axes)


def test_plot_data_are_typed_results_with_the_dicts_of_earlier_releases():
    """ratio_data / srg_figure_data return RatioCurves / SRGFigureData (issue 30): read-only key access, and
    to_dict() holds the keys of the plain dicts of earlier releases, in order; plain dicts still plot."""
    from matplotlib.figure import Figure

    from deepcollapse.analysis.theory_plots import (
        RatioCurves,
        SRGFigureData,
        plot_ratio,
        plot_srg,
        ratio_data,
        srg_figure_data,
    )

    data = ratio_data([4, 5], [3, 4], 1, 0.001, 0.001)
    assert isinstance(data, RatioCurves)
    d = data.to_dict()
    assert list(d) == ["r", "classes", "curves", "n", "lam_h", "lam_w"]
    assert d["classes"] == [6, 10] and list(d["curves"]) == [3, 4] and d["curves"] == data["curves"]
    assert list(d["curves"][3]) == ["ratio", "dnc_is_zero"] and len(d["curves"][3]["ratio"]) == 2
    json.dumps(d)  # JSON-ready
    sdata = srg_figure_data(10, 3, 1, 0.001, 0.001)
    assert isinstance(sdata, SRGFigureData)
    sd = sdata.to_dict()
    assert list(sd) == [
        "classes",
        "layers",
        "n",
        "lam_h",
        "lam_w",
        "construction",
        "unit_scales",
        "srg_mid",
        "srg_last",
        "srg_gram",
        "dnc_gram",
        "loss_srg",
        "loss_dnc",
    ]
    assert sd["srg_gram"] == sdata.srg_gram.tolist() and sdata["srg_gram"] is sdata.srg_gram
    back = SRGFigureData.from_dict(json.loads(json.dumps(sd)))
    assert back == sdata and back.srg_gram.shape == (10, 10)
    fig, _ = plot_srg(dict(sdata), ax=Figure().subplots(1, 4))  # the plain dict of earlier releases
    fig, ax = plot_ratio(dict(data))
    assert len(ax.lines) >= 2
