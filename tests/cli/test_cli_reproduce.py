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


@pytest.mark.check  # seconds-long end to end: the claims tier keeps the fast tier within 3 minutes
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


def _snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _dufm_run(folder, monkeypatch):
    monkeypatch.setenv("DEEPCOLLAPSE_KERNEL", "numpy")  # 2 steps: not worth numba's compile
    tiny = ["--classes", "2", "--n", "1", "--layers", "2", "--width", "2", "--lam", "0.01", "--runs", "1"]
    assert main(["dufm", "train", *tiny, "--steps", "2", "--no-progress", "--out", str(folder)]) == 0


def _net_run(folder, monkeypatch):
    from deepcollapse.nets.config import NetConfig

    folder.mkdir()
    NetConfig(dataset="digits", layers=2, width=12, device="cpu").to_yaml(folder / "config.yaml")


def _marker(name, text):
    def make(folder, monkeypatch):
        folder.mkdir()
        (folder / name).write_text(text)

    return make


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (_dufm_run, "a DUFM run folder"),
        (_net_run, "a network run folder"),
        (_marker("search.json", "{}"), "a search folder"),
        (_marker("landscape.json", "{}"), "a landscape folder"),
        (_marker("best_known.json", "{}"), "a best-known registry folder"),
    ],
)
@pytest.mark.parametrize("force", [False, True])
def test_a_folder_of_another_kind_of_work_is_refused(make, what, force, capsys, tmp_path, monkeypatch):
    """Issue 45, point 1: `reproduce fig3-left --out DIR` into a `dufm train` run folder (or a network run,
    a search, a landscape, a registry) wrote into it, and `dufm resume DIR` then refused it. Now: one line
    naming --out and what the folder holds, exit 2, nothing written, --force or not."""
    out = tmp_path / "work"
    make(out, monkeypatch)
    capsys.readouterr()
    before = _snapshot(out)
    argv = ["reproduce", "fig3-left", "--smoke", "--out", str(out), "--no-progress"]
    assert main(argv + (["--force"] if force else [])) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    head = f"deepcollapse: error: --out == {str(out)!r}, must be a new folder or a reproduce output folder;"
    assert err[0].startswith(head)
    assert f"it is {what}" in err[0] and "choose another --out" in err[0]
    assert _snapshot(out) == before  # nothing written
    if make is _dufm_run:  # the run is still the run it was
        assert main(["dufm", "resume", str(out), "--no-progress"]) == 0


def test_an_empty_or_new_folder_is_still_accepted(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "new"):
        assert main(["reproduce", "fig1-srg-matrices", "--smoke", "--out", str(out), "--no-progress"]) == 0
        assert (out / "report.html").is_file()
