"""`deepcollapse reproduce`: --list, unknown names, missing options (exit 2), a smoke run."""

import pytest

from deepcollapse.cli import main


def test_list_shows_every_experiment(capsys):
    from deepcollapse.experiments.registry import list_experiments

    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    for e in list_experiments():
        assert e.name in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["reproduce", "fig99", "--out", "x"], "experiment == 'fig99', must be one of fig1-srg-matrices"),
        (["reproduce"], "name == None"),
        (["reproduce", "fig1-srg-matrices"], "--out == None"),
        (["reproduce", "fig1-srg-matrices", "--out", "OUT", "--executor", "dask"], "executor == 'dask'"),
    ],
)
def test_errors_exit_2_with_one_line(argv, message, capsys, tmp_path):
    argv = [str(tmp_path / "o") if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepcollapse: error: ") and message in err
    assert "Traceback" not in err


def test_smoke_run_prints_the_report_path(capsys, tmp_path):
    assert main(["reproduce", "fig1-srg-matrices", "--smoke", "--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"report: {tmp_path.resolve() / 'report.html'}" in out
    assert (tmp_path / "report.html").is_file()


def test_mistyped_experiment_name_suggests_the_right_one(capsys, tmp_path):
    assert main(["reproduce", "fig2top", "--smoke", "--out", str(tmp_path)]) == 2
    assert "did you mean 'fig2-top'?" in capsys.readouterr().err


def test_folder_of_another_experiment_is_refused_without_force(capsys, tmp_path):
    out = str(tmp_path / "out")
    assert main(["reproduce", "fig1-srg-matrices", "--smoke", "--out", out, "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["reproduce", "fig3-left", "--smoke", "--out", out, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds 'fig1-srg-matrices'" in err[0] and "--force" in err[0]
    # the same experiment again is fine (finished parts are reused), and --force overrides the refusal
    assert main(["reproduce", "fig1-srg-matrices", "--smoke", "--out", out, "--no-progress"]) == 0
    assert main(["reproduce", "fig3-left", "--smoke", "--out", out, "--no-progress", "--force"]) == 0
