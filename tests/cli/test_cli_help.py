"""Every sub-command's --help follows the command-line rules (deepcollapse.cli.options), including commands
and options added later: one default per option, every option described, no RST markup; renamed options keep
their old spelling as a hidden alias; typos get a "did you mean"; errors speak in option names."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
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
        (["dufm", "trian"], "did you mean 'train'?"),
        (["theroy"], "did you mean 'theory'?"),
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
        main(["theory", "check", "x.npz", "--runs", "5"])  # (--steps would be close to check's --eps)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--runs is not an option of `deepcollapse theory check`" in err
    assert "Did you mean --runs" not in err


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


# --- options generated from config fields (issue 17): --help shows the default that runs -------------------
# (command, config class, config builder of that command).  No field is excluded: every field is an option.
_GENERATED = {
    "dufm train": (
        "deepcollapse.dufm.config:DUFMConfig",
        "deepcollapse.cli.dufm:build_config",
        ["--out", "x"],
    ),
    "dufm search": (
        "deepcollapse.landscape.search:SearchConfig",
        "deepcollapse.cli.dufm:search_config",
        ["--out", "x"],
    ),
    "net train": (
        "deepcollapse.nets.config:NetConfig",
        "deepcollapse.cli.net:config_from_args",
        ["--out", "x"],
    ),
}
# Fields of the config classes that have no option (none today; add a field here with a comment saying why).
_NO_OPTION: dict[str, set[str]] = {"dufm train": set(), "dufm search": set(), "net train": set()}


def _load(ref: str):
    module, name = ref.split(":")
    return getattr(importlib.import_module(module), name)


def _field_default(f: dataclasses.Field):
    return f.default_factory() if f.default is dataclasses.MISSING else f.default


@pytest.mark.parametrize("command", sorted(_GENERATED))
def test_every_config_field_has_an_option(command):
    cls_ref, _, _ = _GENERATED[command]
    parser = dict(_commands())[command]
    dests = {a.dest for a in parser._actions if a.option_strings and a.help is not argparse.SUPPRESS}
    missing = {f.name for f in dataclasses.fields(_load(cls_ref))} - dests - _NO_OPTION[command]
    assert not missing, f"{command}: config fields without an option: {sorted(missing)}"


@pytest.mark.parametrize("command", sorted(_GENERATED))
def test_help_defaults_are_the_defaults_that_run(command):
    """No option given -> the dataclass's own default config; each printed default, given back as the option,
    builds that same config (so the text in --help is the value that runs)."""
    cls_ref, build_ref, required = _GENERATED[command]
    cls, build = _load(cls_ref), _load(build_ref)
    parser = dict(_commands())[command]
    reference = cls()  # the defaults that run, from the dataclass itself
    assert build(parser.parse_args(required)) == reference
    checked = 0
    for f in dataclasses.fields(cls):
        action = next(a for a in parser._actions if a.dest == f.name and a.help is not argparse.SUPPRESS)
        printed = re.findall(r"\(default: ([^()]*)\)$", action.help)
        default = _field_default(f)
        if f.type == "bool":  # a flag: not given = the default, given = the other value
            assert not printed and isinstance(default, bool)
            flagged = build(parser.parse_args([*required, action.option_strings[0]]))
            assert getattr(flagged, f.name) is (not default)
            continue
        if default is None or "shown_default" in f.metadata:  # described in words (checked below)
            continue
        if f.name == "lam_w" and command == "dufm search":
            assert printed == ["--lam for every layer"]
            continue
        assert printed, f"{command} {action.option_strings[0]}: no default shown"
        # the printed text parsed as the user would type it gives the dataclass default
        given = build(parser.parse_args([*required, action.option_strings[0], printed[0]]))
        assert given == reference, f"{command} {action.option_strings[0]} {printed[0]}"
        if not isinstance(default, list):
            assert type(default)(printed[0]) == default
        checked += 1
    assert checked >= 10


def test_dufm_train_help_states_the_h1_init_std_that_runs():
    from deepcollapse.dufm.config import DUFMConfig

    text = " ".join(dict(_commands())["dufm train"].format_help().split())
    m = re.search(r"--init-scale INIT_SCALE [^(]*\(default: H1 ([0-9.]+), W_l 1/sqrt\(d_l\)\)", text)
    assert m, text
    widths = [30, 20, 10]  # the derived default, computed here from the shapes: [H1 std, 1/√d_1, .., 1/√d_L]
    config = DUFMConfig(layers=3, width=widths)
    assert config.init_scale == [float(m.group(1))] + [1.0 / w**0.5 for w in widths]
    assert float(m.group(1)) == 1.0  # the H1 std that runs (issue 17: the help said 0.1)
    assert "0.1, 1/sqrt" not in text


@pytest.mark.parametrize(
    ("command", "field", "words"),
    [
        ("net train", "classes", "all"),
        ("net train", "n", "every training sample"),
        ("net train", "n_test", "every test sample"),
        ("net train", "threads", "torch's"),
        ("dufm train", "seeds", "seed + r"),
        ("dufm search", "rounds", "only the budget"),
    ],
)
def test_defaults_described_in_words_are_unset_fields(command, field, words):
    cls_ref, build_ref, required = _GENERATED[command]
    parser = dict(_commands())[command]
    action = next(a for a in parser._actions if a.dest == field and a.help is not argparse.SUPPRESS)
    assert action.help.endswith(f"(default: {words})")
    assert getattr(_load(build_ref)(parser.parse_args(required)), field) is None


def test_building_the_parsers_loads_neither_torch_nor_pandas():
    """The options come from the config classes, which are torch-free, and the theory is imported where it is
    used, not by a config class (start-up time of every command: benchmarks/cli_startup.py)."""
    import subprocess
    import sys

    code = (
        "import sys, deepcollapse.cli as c; c.build_parser(); "
        "heavy = ('torch', 'pandas', 'matplotlib', 'scipy.optimize', 'deepcollapse.theory.constructions'); "
        "bad = sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy)); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("path", [path for path, _ in _commands()])
def test_every_printed_default_is_the_parsers_default(path):
    """For every option (generated or declared by hand) whose argparse default is a value, the one
    "(default: X)" in --help is that value, written as a user would type it."""
    parser = dict(_commands())[path]
    for action in parser._actions:
        if not action.option_strings or action.help in (None, argparse.SUPPRESS):
            continue
        printed = re.findall(r"\(default: ([^()]*)\)", action.help)
        if not printed or action.default in (None, argparse.SUPPRESS) or isinstance(action.default, bool):
            continue
        value = action.default
        typed = action.type(printed[0]) if callable(action.type) else printed[0]
        if isinstance(value, list | tuple):
            assert printed[0].replace(" ", "") == ",".join(str(v) for v in value), (path, action.dest)
        else:
            assert typed == value, f"{path} {action.option_strings[0]}: help {printed[0]!r}, runs {value!r}"


def test_the_printed_default_check_covers_the_hand_declared_options():
    checked = sum(
        1
        for _, parser in _commands()
        for a in parser._actions
        if a.option_strings
        and a.help not in (None, argparse.SUPPRESS)
        and re.search(r"\(default: ", a.help)
        and a.default not in (None, argparse.SUPPRESS)
        and not isinstance(a.default, bool)
    )
    assert checked >= 25  # 32 when written: theory, sweep, reproduce, metrics, landscape options


_CONFIG_COMMANDS = {  # the commands whose options are generated from a config dataclass's fields
    "dufm train": "deepcollapse.dufm.config:DUFMConfig",
    "dufm search": "deepcollapse.landscape.search:SearchConfig",
    "dufm landscape": "deepcollapse.landscape.search:SearchConfig",
    "net train": "deepcollapse.nets.config:NetConfig",
}


def _as_list(value):
    return list(value) if isinstance(value, list | tuple) else [value]


def _typed(text, value):
    """``text`` (a printed default: one value or comma-separated values) as a list of the type of ``value``;
    ``None`` when it is words, not values of that type."""
    if value is None or not _as_list(value):  # computed later (all classes, seed + r): said in words
        return None
    kind = type(_as_list(value)[0])
    try:
        return [kind(t.strip()) if kind is not bool else t.strip() == "True" for t in text.split(",")]
    except ValueError:
        return None


@pytest.mark.parametrize("path", list(_CONFIG_COMMANDS))
def test_every_default_printed_for_a_config_option_is_what_runs(path):
    """Options generated from config fields parse to ``None`` ("not given"), so the check above skips them:
    here their "(default: X)" is compared with what a config built without the option runs with (``Config()``
    after its ``__post_init__``), numbers written inside a computed default included (the H1 init std)."""
    import math

    module, _, name = _CONFIG_COMMANDS[path].partition(":")
    cls = getattr(importlib.import_module(module), name)
    runs = cls()
    fields = {f.name: f for f in dataclasses.fields(cls)}
    checked = 0
    for action in dict(_commands())[path]._actions:
        dest = action.dest
        if dest == "lam" and dest not in fields:  # the DUFM commands' --lam sets λ_H1 and every λ_W
            dest = "lam_h"
        if dest not in fields or action.help in (None, argparse.SUPPRESS):
            continue
        printed = re.findall(r"\(default: (.*)\)$", action.help)
        if not printed:
            continue
        text, value, where = printed[0], getattr(runs, dest), f"{path} {action.option_strings[0]}"
        if dest == "init_scale":  # a computed default stated with a number: H1's std, then W_l's rule
            m = re.fullmatch(r"H1 ([0-9.e+-]+), W_l 1/sqrt\(d_l\)", text)
            assert m, f"{where}: {text!r}"
            assert value == [float(m.group(1))] + [1 / math.sqrt(d) for d in runs.width], where
        elif path == "dufm search" and dest == "budget":  # a number without --rounds, none with it
            m = re.fullmatch(r"([0-9.]+) without --rounds, no limit with it", text)
            assert m, f"{where}: {text!r}"
            assert value == float(m.group(1)) and cls(rounds=2).budget is None, where
        else:
            typed = _typed(text, value)
            if typed is None:  # a default in words ("seed + r", "--lam for every layer", "all")
                assert value is None or not re.search(r"\d", text), f"{where}: {text!r} with numbers"
                continue
            got = _as_list(value)
            assert got == typed * len(got) or got == typed, f"{where}: help says {text!r}, runs {value!r}"
            if action.dest == "lam" and dest == "lam_h":
                assert runs.lam_w == typed * len(runs.lam_w), f"{where}: help {text!r}, λ_W runs {runs.lam_w}"
        checked += 1
    assert checked >= 6, path


def test_no_help_states_a_default_in_its_words():
    """The one "(default: X)" at the end of an option's help is its default; a default written inside the help
    words ("mse (eq. (1), default)", "from --data-dir (default data)") escapes the checks above."""
    for path, parser in _commands():
        for a in parser._actions:
            if not a.option_strings or a.help in (None, argparse.SUPPRESS):
                continue
            words = re.sub(r"\s*\(default: [^()]*(?:\([^()]*\)[^()]*)*\)$", "", a.help)
            assert not re.search(r"\bdefault", words, re.I), f"{path} {a.option_strings[0]}: {a.help}"
