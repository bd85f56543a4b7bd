"""One command line (issue 20, "Names"): `--lam` means the same in `theory` as in every `dufm` command, no
option may be abbreviated, and library messages reach the user in the command line's spelling."""

from __future__ import annotations

import json

import pytest

from deepcollapse.cli import main
from deepcollapse.theory import dufm_objective, srg_solution


def _json(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_theory_compare_lam_sets_both_lambdas(capsys):
    """`--lam X` = `--lam-h X --lam-w X`; `--lam-h` / `--lam-w` override it; the default is the flagship's."""
    base = ("theory", "compare", "--classes", "10", "--layers", "4", "--n", "50", "--json")
    by_lam = _json(capsys, *base, "--lam", "0.002")
    explicit = _json(capsys, *base, "--lam-h", "0.002", "--lam-w", "0.002")
    assert by_lam == explicit
    mixed = _json(capsys, *base, "--lam", "0.002", "--lam-w", "0.004")
    assert mixed["lam_h"] == 0.002 and mixed["lam_w"] == [0.004] * 4
    # the SRG value is eq. (1) on explicit matrices at those λs (an independent evaluation)
    sol = srg_solution(10, 4, 50, 0.002, 0.004)
    assert mixed["loss_srg"] == pytest.approx(
        dufm_objective(sol.H1, sol.weights, 0.002, 0.004).total, rel=1e-10
    )
    default = _json(capsys, *base)
    assert default["lam_h"] == 0.004 and default["lam_w"] == [0.004] * 4


def test_theory_grid_lam(capsys):
    base = ("theory", "grid", "--classes", "6", "--layers", "3", "--n", "5", "--format", "json")
    assert _json(capsys, *base, "--lam", "0.003") == _json(
        capsys, *base, "--lam-h", "0.003", "--lam-w", "0.003"
    )


def test_a_bad_lam_is_named_as_typed(capsys):
    assert main(["theory", "compare", "--lam", "-1"]) == 2
    assert capsys.readouterr().err.strip() == "deepcollapse: error: --lam == -1.0, must be > 0.0."
    assert main(["theory", "compare", "--lam", "0.1", "--lam-h", "0"]) == 2
    assert capsys.readouterr().err.strip().startswith("deepcollapse: error: --lam-h == 0.0")


@pytest.mark.parametrize(
    "argv, option",
    [
        (["reproduce", "fig2-top", "--smok"], "--smoke"),
        (["dufm", "train", "--out", "x", "--max-step", "3"], "--max-steps"),
        (["theory", "compare", "--constr", "def9"], "--construction"),
    ],
)
def test_no_abbreviations(capsys, argv, option):
    """An abbreviation is an unknown option with a suggestion, never silently the long one."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "unrecognized arguments" in err and err.endswith(f"Did you mean {option}?")


def test_force_message_in_cli_spelling(capsys, tmp_path):
    """The library says `force=True`; the command line says `--force` and `--out`, never both spellings."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["dufm", "train", "--out", str(out), "--max-steps", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"deepcollapse: error: --out == {str(out)!r}, must be a new or empty folder")
    assert "--force" in err and "force=True" not in err
    assert (out / "notes.txt").read_text() == "mine" and sorted(p.name for p in out.iterdir()) == [
        "notes.txt"
    ]


def test_library_message_keeps_python_spelling(tmp_path):
    """Outside the command line the same error names the keyword argument (`force=True`)."""
    from deepcollapse import ConfigError
    from deepcollapse._core.io import prepare_run_folder

    (tmp_path / "x.txt").write_text("mine")
    with pytest.raises(ConfigError, match=r"^out == .*force=True"):
        prepare_run_folder(tmp_path, [], force=False, resume_hint="resume")


def test_the_problem_options_have_problems_words_in_every_command():
    """``--classes``, ``--layers``, ``--n``, ``--lam-h``, ``--lam-w`` are described by the words of
    :class:`~deepcollapse.theory.problem.Problem`'s fields (issue 30: the options come from Problem's
    fields) in ``theory compare``, ``dufm train`` and ``dufm search``, plus at most a note of the command's
    own."""
    import argparse
    import dataclasses

    from deepcollapse._core.problem_fields import PROBLEM_HELP
    from deepcollapse.cli import build_parser
    from deepcollapse.theory.problem import Problem

    assert {f.name: f.metadata["help"] for f in dataclasses.fields(Problem) if "help" in f.metadata} == {
        k: PROBLEM_HELP[k] for k in ("classes", "layers", "n", "lam_h", "lam_w", "widths")
    }

    def sub(parser, *path):
        for name in path:
            action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            parser = action.choices[name]
        return {o: a.help for a in parser._actions for o in a.option_strings}

    root = build_parser()
    for path in (("theory", "compare"), ("dufm", "train"), ("dufm", "search")):
        helps = sub(root, *path)
        for option, field in (("--classes", "classes"), ("--layers", "layers"), ("--n", "n")):
            words = PROBLEM_HELP[field] + " (default: "
            assert helps[option].startswith(words), (path, option, helps[option])
        for option, field in (("--lam-h", "lam_h"), ("--lam-w", "lam_w")):
            assert helps[option].startswith(PROBLEM_HELP[field] + " ("), (path, option, helps[option])
