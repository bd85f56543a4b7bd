"""Errors a person can read (issue 32, point 10): a value of the wrong type for ANY option is one line in the
user's words (no usage dump), a "did you mean" comes first where it is seen, and a notebook cell that trains
into the same folder twice is told how to proceed."""

from __future__ import annotations

import argparse

import pytest

from deepcollapse.cli import build_parser, main
from deepcollapse.cli.options import _sub_parsers

_TYPED = {"int", "float", "_optional_int", "_optional_float", "_float_list"}


def _typed_options() -> list[tuple[str, str]]:
    """``(sub-command, --option)`` for every visible option that converts its value with a type."""
    out = []
    for path, parser in _sub_parsers(build_parser()):
        for action in parser._actions:
            kind = getattr(action.type, "__name__", None)
            if action.help is argparse.SUPPRESS or not action.option_strings or kind not in _TYPED:
                continue
            out.append((path, action.option_strings[0]))
    return out


TYPED = _typed_options()


def test_there_are_typed_options_in_many_commands():
    assert len({path for path, _ in TYPED}) >= 5 and len(TYPED) >= 30


@pytest.mark.parametrize(("command", "option"), TYPED, ids=[f"{c} {o}" for c, o in TYPED])
def test_a_value_of_the_wrong_type_is_one_line_naming_the_option(command, option, capsys):
    words = command.split()
    needs = {
        "dufm train": ["--out", "x"],
        "net train": ["--out", "x"],
        "theory plot ratio": ["--out", "x.png"],
    }
    needs["theory plot srg"] = ["--out", "x.png"]
    positional = {"dufm resume": ["d"], "dufm analyze": ["d"], "net resume": ["d"], "theory check": ["f.npz"]}
    argv = [*words, *positional.get(command, []), *needs.get(command, []), option, "four"]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"error: {option} == 'four', must be " in err and "usage:" not in err


def test_classes_four_is_one_line(capsys):
    with pytest.raises(SystemExit):
        main(["dufm", "train", "--classes", "four", "--out", "x"])
    assert capsys.readouterr().err == (
        "deepcollapse: error: --classes == 'four', must be an integer "
        "(`deepcollapse dufm train --help` describes it).\n"
    )


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["reproduce", "fig2top", "--smoke", "--out", "x"], "did you mean 'fig2-top'?"),
        (["dufm", "train", "--loss", "mes", "--out", "x"], "did you mean 'mse'?"),
        (["dufm", "trian"], "did you mean 'train'?"),
    ],
)
def test_a_suggestion_comes_first_however_long_the_list(argv, suggestion, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert suggestion in line[:90], line


def test_training_into_the_same_folder_twice_says_how_to_proceed(tmp_path, monkeypatch):
    from deepcollapse import ConfigError
    from deepcollapse.dufm import DUFMConfig, train_dufm

    monkeypatch.setenv("DEEPCOLLAPSE_KERNEL", "numpy")
    config = DUFMConfig(classes=3, n=2, layers=2, width=3, steps=2, runs=1, polish=False)
    folder = tmp_path / "tiny"
    train_dufm(config, folder, progress=False)
    with pytest.raises(ConfigError) as exc:  # the same cell run again
        train_dufm(config, folder, progress=False)
    assert "force=True" in str(exc.value) and f"analyze_dufm({str(folder)!r})" in str(exc.value)
    with pytest.raises(ConfigError) as exc:  # another config into that folder
        train_dufm(config.replace(steps=3), folder, progress=False)
    assert "force=True" in str(exc.value) and f"resume_dufm({str(folder)!r})" in str(exc.value)
    train_dufm(config.replace(steps=3), folder, progress=False, force=True)
