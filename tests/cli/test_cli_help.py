"""Every sub-command's --help follows the command-line rules (deepcollapse.cli.options), including commands
and options added later: one default per option, every option described, no RST markup; renamed options keep
their old spelling as a hidden alias; typos get a "did you mean"; errors speak in option names."""

from __future__ import annotations

import argparse
import re

import pytest

from deepcollapse.cli import build_parser, main
from deepcollapse.cli.options import RENAMES, _sub_parsers


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    return [(path, p) for path, p in _sub_parsers(build_parser()) if path]


@pytest.mark.parametrize("path", [path for path, _ in _commands()])
def test_help_rules(path):
    parser = dict(_commands())[path]
    text = parser.format_help()
    assert "``" not in text and not re.search(r":(func|class|mod|meth):`", text), text
    assert "default: None" not in text
    for action in parser._actions:
        if action.help is argparse.SUPPRESS or action.dest == "help":
            continue
        if isinstance(action, argparse._SubParsersAction):
            continue
        name = "/".join(action.option_strings) or action.dest
        help_text = action.help or ""
        assert re.sub(r"\(default[^)]*\)", "", help_text).strip(), f"{path} {name}: no description"
        assert len(re.findall(r"\(default", help_text)) <= 1, f"{path} {name}: two defaults: {help_text}"


@pytest.mark.parametrize(
    ("command", "old", "new", "value"),
    [(c, old, new, v) for c, ren in RENAMES.items() for old, new in ren.items() for v in ["3"]],
)
def test_renamed_options_keep_a_hidden_alias(command, old, new, value, capsys):
    parser = dict(_commands())[command]
    assert old not in parser.format_help() and new in parser.format_help()
    action = parser._option_string_actions[new]
    args = parser.parse_args([old, value] + (["--out", "x"] if command == "net train" else []))
    assert "deprecated, use " + new in capsys.readouterr().err
    ref = parser.parse_args([new, value] + (["--out", "x"] if command == "net train" else []))
    assert getattr(args, action.dest) == getattr(ref, action.dest)


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["dufm", "trian"], "Did you mean 'train'?"),
        (["theroy"], "Did you mean 'theory'?"),
        (["dufm", "train", "--out", "x", "--lamm", "0.1"], "Did you mean --lam?"),
        (["net", "train", "--out", "x", "--datset", "digits"], "Did you mean --dataset?"),
    ],
)
def test_typos_get_did_you_mean(argv, suggestion, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert suggestion in capsys.readouterr().err


def test_an_option_of_another_sub_command_is_named_as_such(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["theory", "check", "x.npz", "--steps", "5"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--steps is not an option of `deepcollapse theory check`" in err
    assert "Did you mean --steps" not in err


def test_errors_name_the_option_the_user_typed(tmp_path, capsys):
    assert main(["dufm", "train", "--lam", "-0.1", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "--lam == -0.1" in err and "lam_h" not in err
    assert main(["dufm", "train", "--lam-w", "0.004,-1,0.004,0.004", "--out", str(tmp_path / "r")]) == 2
    assert "--lam-w" in capsys.readouterr().err
    assert main(["net", "train", "--layers", "0", "--out", str(tmp_path / "n")]) == 2
    err = capsys.readouterr().err
    assert "--layers == 0" in err and "head_layers" not in err


def test_resume_on_the_other_kind_of_folder_says_which_command_fits(tmp_path, capsys):
    from deepcollapse.dufm.config import DUFMConfig
    from deepcollapse.nets.config import NetConfig

    dufm, net = tmp_path / "dufm", tmp_path / "net"
    dufm.mkdir()
    net.mkdir()
    DUFMConfig(classes=3, n=2, layers=2, width=4).to_yaml(dufm / "config.yaml")
    NetConfig(dataset="digits").to_yaml(net / "config.yaml")
    assert main(["dufm", "resume", str(net)]) == 2
    err = capsys.readouterr().err
    assert "it is a network run folder: use deepcollapse net resume" in err
    assert main(["net", "resume", str(dufm)]) == 2
    assert "it is a DUFM run folder: use deepcollapse dufm resume" in capsys.readouterr().err
    assert main(["dufm", "analyze", str(net)]) == 2
    assert "deepcollapse net resume" in capsys.readouterr().err
