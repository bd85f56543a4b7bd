"""One set of rules for every command's options (issue 12), and the helpers that apply them.

* **One name per idea**, the same in every command (``--n`` samples per class, ``--layers`` / ``--width``,
  ``--lam``, ``--lr-schedule`` / ``--lr-decay``, ``--out``, ``--force``, ``--no-progress``); an old spelling
  stays accepted for one release as a hidden alias that prints a deprecation warning (:func:`add_option` with
  ``aliases=``; the table :data:`RENAMES` lists them).
* **One default per option in --help**: the default is written by :func:`add_option` as ``(default: X)`` and
  nowhere else (no ``ArgumentDefaultsHelpFormatter``, no default repeated in the help text).
* **Options generated from config fields**: :func:`add_config_options` declares one option per field of a
  config dataclass from the field's metadata (``help``, ``choices``, ``option``, ``shown_default``) and its
  type and default, so ``--help`` shows the default that runs and a new option is one field.
* **Every option described**, plain text (no RST markup) — ``tests/cli/test_cli_help.py`` walks every
  sub-command's ``--help`` and checks these rules, including for options added later.
* **Did you mean**: :class:`Parser` suggests the closest sub-command, choice or option for a typo.
* **Errors in the user's words**: :func:`user_words` rewrites a config error about a field (``lam_h == -0.1``)
  into the option the user typed (``--lam == -0.1``).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from deepcollapse._core.checks import ConfigError

__all__ = [
    "DESCRIPTIONS",
    "FORCE_HELP",
    "NO_PROGRESS_HELP",
    "RENAMES",
    "Parser",
    "add_config_options",
    "add_option",
    "config_values",
    "field_default",
    "check_folder_kind",
    "folder_kind",
    "normalise",
    "user_words",
]

#: Old spelling -> new spelling of every renamed option (accepted, hidden from --help, for one release).
RENAMES: dict[str, dict[str, str]] = {
    "net train": {
        "--n-per-class": "--n",
        "--n-test-per-class": "--n-test",
        "--head-layers": "--layers",
        "--head-width": "--width",
        "--gamma": "--lr-decay",
        "--milestones": "--lr-milestones",
    },
    "net resume": {},
    "sweep": {"--n-seeds": "--runs"},
    "dufm resume": {},
}

FORCE_HELP = "replace what --out holds that conflicts with this command (another config or experiment)"
NO_PROGRESS_HELP = "no progress bars"

#: What an option is, for options whose help gives only a default: the same words in every command.
DESCRIPTIONS: dict[str, str] = {
    "--dataset": "dataset to train on",
    "--backbone": "feature extractor in front of the MLP head",
    "--loss": "fit term: mse (squared error) or ce (softmax cross-entropy)",
    "--reg": "regularisation: dufm (λ_H1 on features, λ on head weights), standard (weight decay), none",
    "--optimizer": "optimiser",
    "--momentum": "SGD momentum",
    "--lr": "learning rate",
    "--lr-schedule": "learning-rate schedule",
    "--lr-decay": "factor by which a step schedule multiplies the learning rate",
    "--epochs": "training epochs",
    "--batch-size": "mini-batch size",
    "--seed": "random seed",
    "--device": "where to compute",
    "--no-progress": NO_PROGRESS_HELP,
    "--force": FORCE_HELP,
    "--json": "print JSON instead of a table",
    "--out": "output folder",
    "--workers": "parallel worker processes",
}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _default_text(default: Any) -> str:
    if isinstance(default, (list, tuple)):
        return ",".join(str(v) for v in default)
    return str(default)


class _DeprecatedAlias(argparse.Action):
    """Stores like the new option, after a one-line warning naming the new spelling."""

    def __init__(self, option_strings: Sequence[str], dest: str, new: str = "", store: Any = None, **kw: Any):
        self.new = new
        self.store = store  # a constant for flags (store_true), None for options taking a value
        super().__init__(option_strings, dest, nargs=0 if store is not None else None, **kw)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        print(
            f"deepcollapse: warning: {option_string} is deprecated, use {self.new} "
            "(the old spelling is accepted until the next release)",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, self.store if self.store is not None else values)


def add_option(
    parser: argparse.ArgumentParser,
    name: str,
    help: str,
    *,
    default: Any = None,
    shown_default: str | None = None,
    aliases: Iterable[str] = (),
    **kwargs: Any,
) -> argparse.Action:
    """``parser.add_argument(name, ...)`` following the module's rules.

    ``help`` describes the option (plain text, without its default); ``default`` is the parsed default and is
    appended once as ``(default: X)`` (``shown_default`` when the real default is computed later, e.g. "all
    classes"); ``aliases`` are old spellings, accepted with a deprecation warning and hidden from --help.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The parser (or sub-command parser) to add the option to.
    name : str
        The option, e.g. ``"--steps"``.
    help : str
        What the option is, plain text without its default (an empty text or one holding ``(default`` is a
        ``ValueError``).
    default : Any, optional
        The parsed default, shown once as ``(default: X)`` (not for flags).
    shown_default : str, optional
        The text shown as the default instead, when the real default is computed later.
    aliases : iterable of str, optional
        Old spellings: accepted with a deprecation warning on stderr, hidden from ``--help``.
    **kwargs
        Passed on to ``parser.add_argument`` (``type``, ``choices``, ``action``, ``metavar``, ...).

    Returns
    -------
    argparse.Action
        The action of the option (not of its aliases).

    Examples
    --------
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> action = add_option(p, "--steps", "GD steps", default=100, type=int)
    >>> action.help, p.parse_args([]).steps, p.parse_args(["--steps", "5"]).steps
    ('GD steps (default: 100)', 100, 5)
    """
    if not help or not help.strip():
        raise ValueError(f"option {name} needs a description")
    if "(default" in help:
        raise ValueError(f"option {name}: write the default with default=/shown_default=, not in the help")
    text = _one_line(help)
    if shown_default is not None:
        text += f" (default: {shown_default})"
    elif default is not None and kwargs.get("action") not in ("store_true", "store_false"):
        text += f" (default: {_default_text(default)})"
    action = parser.add_argument(name, help=text, default=default, **kwargs)
    for alias in aliases:
        store = {"store_true": True, "store_false": False}.get(kwargs.get("action", ""))
        typed: dict[str, Any] = {"type": kwargs["type"]} if kwargs.get("type") is not None else {}
        parser.add_argument(
            alias,
            dest=action.dest,
            action=_DeprecatedAlias,
            new=name,
            store=store,
            help=argparse.SUPPRESS,
            **typed,
        )
    return action


def _optional_int(text: str) -> int | None:
    return None if text.strip().lower() in ("none", "all") else int(text)


def _optional_float(text: str) -> float | None:
    return None if text.strip().lower() == "none" else float(text)


def _float_list(text: str) -> list[float]:
    try:
        values = json_or(text, lambda t: [float(v) for v in t.split(",") if v.strip()])
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"== {text!r}, must be comma-separated numbers, e.g. 0.5,0.75"
        ) from None
    return [float(v) for v in values] if isinstance(values, list) else [float(values)]


# How a field's annotation (a string: the config modules use ``from __future__ import annotations``) is
# parsed from the command line; any other annotation (``Any``, ``list[int] | None``, ``str``) is passed on
# as the text, which the config's own validation parses (one int or a comma-separated list, ...).
_PARSERS: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "int | None": _optional_int,
    "float | None": _optional_float,
    "list[float]": _float_list,
}


def field_default(field: dataclasses.Field[Any]) -> Any:
    """The default of a dataclass field: ``field.default``, or ``field.default_factory()``.

    Parameters
    ----------
    field
        A field of a config dataclass (``dataclasses.fields(Config)``).

    Returns
    -------
    Any
        The value the field takes when it is not given (before the config's ``__post_init__``).

    Examples
    --------
    >>> import dataclasses
    >>> @dataclasses.dataclass
    ... class Config:
    ...     steps: int = 100
    ...     seeds: list = dataclasses.field(default_factory=lambda: [0, 1])
    >>> [field_default(f) for f in dataclasses.fields(Config)]
    [100, [0, 1]]
    """
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    raise ValueError(f"field {field.name} has no default")


def shown_default(field: dataclasses.Field[Any], overrides: Mapping[str, Any] | None = None) -> str | None:
    """The text ``--help`` shows as the default of ``field``'s option: the metadata's ``shown_default`` (a
    default computed in ``__post_init__``), else the field's default; ``None`` for flags and unset defaults.

    Parameters
    ----------
    field
        A field of a config dataclass.
    overrides
        Metadata replacing the field's own for one command (as in :func:`add_config_options`).

    Returns
    -------
    str or None
        What follows ``(default:`` in the option's help, or ``None`` when no default is shown.

    Examples
    --------
    >>> import dataclasses
    >>> @dataclasses.dataclass
    ... class Config:
    ...     lr_milestones: list = dataclasses.field(default_factory=lambda: [0.5, 0.75])
    ...     classes: int = dataclasses.field(default=0, metadata={"shown_default": "all classes"})
    >>> [shown_default(f) for f in dataclasses.fields(Config)]
    ['0.5,0.75', 'all classes']
    """
    meta = {**field.metadata, **(overrides or {})}
    if meta.get("shown_default") is not None:
        return str(meta["shown_default"])
    default = field_default(field)
    if default is None or field.type == "bool":
        return None
    return _default_text(default)


def add_config_options(
    parser: argparse.ArgumentParser,
    config_cls: type,
    *,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    command: str = "",
) -> dict[str, str]:
    """Declare one option per field of the config dataclass ``config_cls``, from the field's metadata.

    The option is ``--field-name`` (metadata ``option`` where it differs), its help the metadata's
    ``help`` followed once by ``(default: X)`` (:func:`shown_default`), its choices the metadata's
    ``choices``, its type from the field's annotation (:data:`_PARSERS`; a ``bool`` field is a flag
    setting the opposite of its default; metadata ``const`` is the value of the option given alone).
    Every option's parsed default is ``None`` ("not given"), so a
    ``--config`` file below the options keeps its values: :func:`config_values` collects what was given.
    The old spellings of :data:`RENAMES` ``[command]`` become hidden aliases.

    Parameters
    ----------
    parser
        The sub-command's parser.
    config_cls
        A config dataclass whose fields carry ``metadata={"help": ...}``.
    include
        Only these fields (default: every field).
    exclude
        Fields without an option in this command.
    overrides
        Per field, metadata replacing the field's own for this command (``help``, ``shown_default``,
        ``type``, ``option``).
    command
        The command's name in :data:`RENAMES` (``"net train"``), for the hidden aliases.

    Returns
    -------
    dict[str, str]
        ``field -> --option`` for the options declared (for :func:`user_words`).  A plain dict: a lookup
        table of option names, not a result.

    Examples
    --------
    >>> import argparse, dataclasses
    >>> @dataclasses.dataclass
    ... class Config:
    ...     steps: int = dataclasses.field(default=100, metadata={"help": "GD steps"})
    ...     lr_decay: float = dataclasses.field(default=0.1, metadata={"help": "step factor"})
    >>> p = argparse.ArgumentParser()
    >>> add_config_options(p, Config)
    {'steps': '--steps', 'lr_decay': '--lr-decay'}
    >>> p.parse_args(["--lr-decay", "0.5"])
    Namespace(steps=None, lr_decay=0.5)
    """
    wanted = None if include is None else set(include)
    skip = set(exclude)
    renamed = {new: old for old, new in RENAMES.get(command, {}).items()}
    out: dict[str, str] = {}
    for f in dataclasses.fields(config_cls):
        if (wanted is not None and f.name not in wanted) or f.name in skip:
            continue
        meta = {**f.metadata, **(overrides or {}).get(f.name, {})}
        name = meta.get("option") or "--" + f.name.replace("_", "-")
        if not meta.get("help"):
            raise ValueError(f"{config_cls.__name__}.{f.name} has no metadata help: it needs one for {name}")
        kwargs: dict[str, Any] = {"dest": f.name}
        if f.type == "bool":
            kwargs["action"] = "store_false" if field_default(f) else "store_true"
        else:
            kwargs["type"] = meta.get("type") or _PARSERS.get(str(f.type), str)
            if meta.get("choices") is not None:
                kwargs["choices"] = list(meta["choices"])
            if meta.get("metavar"):
                kwargs["metavar"] = meta["metavar"]
            if meta.get("const") is not None:  # the option alone means this value (a former flag)
                kwargs["nargs"], kwargs["const"] = "?", meta["const"]
        aliases = [renamed[name]] if name in renamed else []
        add_option(
            parser,
            name,
            meta["help"],
            default=None,
            shown_default=shown_default(f, overrides=(overrides or {}).get(f.name)),
            aliases=aliases,
            **kwargs,
        )
        out[f.name] = name
    return out


def config_values(args: argparse.Namespace, config_cls: type) -> dict[str, Any]:
    """The fields of ``config_cls`` given on the command line (options of :func:`add_config_options`).
    A plain dict: keyword arguments for ``config_cls`` (or overrides of a YAML config), not a result.

    Parameters
    ----------
    args
        The parsed command line.
    config_cls
        The config dataclass the options were generated from.

    Returns
    -------
    dict[str, Any]
        ``field -> value`` for every option that was given (not ``None``).  A plain dict: keyword arguments
        for the config dataclass (``config_cls.from_dict`` / ``config_cls(**values)``).

    Examples
    --------
    >>> import argparse, dataclasses
    >>> @dataclasses.dataclass
    ... class Config:
    ...     steps: int = dataclasses.field(default=100, metadata={"help": "GD steps"})
    ...     lr: float = dataclasses.field(default=0.5, metadata={"help": "step size"})
    >>> p = argparse.ArgumentParser()
    >>> _ = add_config_options(p, Config)
    >>> config_values(p.parse_args(["--steps", "5"]), Config)
    {'steps': 5}
    """
    names = [f.name for f in dataclasses.fields(config_cls)]
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def _all_options(parser: argparse.ArgumentParser) -> set[str]:
    """Option strings of ``parser`` and of every sub-parser below it (for "did you mean")."""
    out: set[str] = set()
    for action in parser._actions:
        out.update(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out |= _all_options(sub)
    return out


def _closest(option: str, options: Sequence[str]) -> list[str]:
    """The option of ``options`` closest to ``option`` (compared without the leading ``--``), or ``[]``."""
    names = {o[2:]: o for o in options}
    close = difflib.get_close_matches(option[2:], list(names), n=1, cutoff=0.6)
    return [names[c] for c in close]


def _chosen(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.ArgumentParser:
    """The deepest sub-parser that ``argv`` selects (``deepcollapse dufm landscape ...`` -> that parser)."""
    words = [w for w in argv if not w.startswith("-")]
    current = parser
    for word in words:
        subs = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or word not in subs[0].choices:
            continue
        current = subs[0].choices[word]
    return current


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors suggest the closest sub-command, choice or option (among the
    options of the sub-command typed; an option that only other sub-commands have is said to be so)."""

    root: Parser | None = None
    _argv: list[str] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No abbreviations: `--smok` must not silently mean `--smoke` (sub-parsers are this class too).
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """``argparse.ArgumentParser.parse_known_args``, remembering the words of the root parser's command
        line (for the "did you mean" of :meth:`error`).

        Parameters
        ----------
        args : list of str, optional
            The words to parse (default: ``sys.argv[1:]``).
        namespace : argparse.Namespace, optional
            The namespace to fill (default: a new one).

        Returns
        -------
        tuple of (argparse.Namespace, list of str)
            The parsed options and the words no option took.

        Examples
        --------
        >>> p = Parser(prog="demo")
        >>> _ = p.add_argument("--steps", type=int)
        >>> p.parse_known_args(["--steps", "5", "extra"])
        (Namespace(steps=5), ['extra'])
        """
        if self is (self.root or self):
            self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        """One line in the user's words, no usage dump: a value of the wrong type is said as ``--classes ==
        'four', must be an integer.``, a suggestion comes first (``'trian': did you mean 'train'? ...``), and
        ``--help`` is named for the rest.

        Parameters
        ----------
        message : str
            argparse's error message.

        Returns
        -------
        NoReturn
            Never returns: prints ``PROG: error: ...`` on stderr (``PROG`` the program's name,
            ``deepcollapse`` for every sub-command too, as :func:`deepcollapse.cli.main` prints a config
            error; the message names the sub-command's ``--help``) and exits with status 2 (``SystemExit``).

        Examples
        --------
        >>> import contextlib, io
        >>> p = Parser(prog="demo")
        >>> _ = p.add_argument("--classes", type=int)
        >>> err = io.StringIO()
        >>> with contextlib.redirect_stderr(err):
        ...     try:
        ...         p.parse_args(["--classes", "four"])
        ...     except SystemExit as exc:
        ...         print("exit status", exc.code)
        exit status 2
        >>> print(err.getvalue().strip())
        demo: error: --classes == 'four', must be an integer (`demo --help` describes it).
        """
        program = self.prog.split()[0] if self.prog.split() else self.prog  # `deepcollapse`, not `... train`
        self.exit(2, f"{program}: error: {self._user_message(message)}\n")

    def _user_message(self, message: str) -> str:
        m = re.match(r"argument ([^:]+): invalid (\w+) value: (.*)$", message)
        if m:  # a type conversion failed: the option, the value as typed, what it must be
            option = m.group(1).split("/")[-1]
            want = _TYPE_WORDS.get(m.group(2), f"a valid {m.group(2)}")
            return f"{option} == {m.group(3)}, must be {want} (`{self.prog} --help` describes it)."
        m = re.match(r"argument ([^:]+): (.*)$", message)
        if m and "invalid choice" not in message:  # an ArgumentTypeError: its own words, after the option
            option = m.group(1).split("/")[-1]
            body = m.group(2)
            text = f"{option} {body}" if body.startswith("==") else f"{option}: {body}"
            return text + ("" if body.rstrip().endswith((".", "?", ")")) else ".")
        m = re.search(r"argument ([^:]+): invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            option = m.group(1).split("/")[-1]
            choices = re.findall(r"'([^']*)'", m.group(3)) or [c.strip() for c in m.group(3).split(",")]
            close = difflib.get_close_matches(m.group(2), choices, n=1, cutoff=0.5)
            head = (
                f"{m.group(2)!r}"
                if option.startswith("{") or not option.startswith("-")
                else (f"{option} == {m.group(2)!r}")
            )
            allowed = ", ".join(choices)
            if close:
                return f"{head}: did you mean {close[0]!r}? Must be one of {allowed}."
            return f"{head}, must be one of {allowed}."
        m = re.search(r"unrecognized arguments: (.*)", message)
        if m:
            hint = self._unrecognized_hint(m.group(1))
            return (
                f"{message.rstrip('.')}.{hint}"
                if hint
                else f"{message.rstrip('.')}; `{self.prog} --help` lists the options."
            )
        return f"{message.rstrip('.')}; `{self.prog} --help` lists the options."

    def _unrecognized_hint(self, words: str) -> str:
        root = self.root or self
        chosen = _chosen(root, getattr(root, "_argv", None) or [])
        here = sorted(_all_options(chosen))
        everywhere = _all_options(root) | _all_options(self)
        for word in words.split():
            if not word.startswith("--"):
                continue
            key = word.split("=")[0]
            close = _closest(key, here)
            if close and close[0] != key:
                return f" Did you mean {close[0]}?"
            if key in everywhere:  # an option of another sub-command
                return (
                    f" {key} is not an option of `{chosen.prog}`; `{chosen.prog} --help` lists its options."
                )
            close = _closest(key, sorted(everywhere))
            if close:
                return f" Did you mean {close[0]}?"
        return ""


#: argparse's type names (``invalid int value``) in words, for :meth:`Parser.error`.
_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "_optional_int": "an integer or none",
    "_optional_float": "a number or none",
    "_float_list": "comma-separated numbers, e.g. 0.5,0.75",
}


def user_words(exc: ConfigError, options: Mapping[str, str]) -> ConfigError:
    """``exc`` with its leading field name (``lam_h == ...``, ``lam_w[2] == ...``) replaced by the option the
    user typed (``options[field]``, e.g. ``{"lam_h": "--lam"}``); unchanged if the field is not mapped.

    Parameters
    ----------
    exc : ConfigError
        A config error whose message starts with a field name.
    options : Mapping[str, str]
        ``field -> --option`` (:func:`add_config_options`, :func:`field_options`, :func:`option_names`).

    Returns
    -------
    ConfigError
        A new error naming the option, or ``exc`` itself when its field is not in ``options``.

    Examples
    --------
    >>> str(user_words(ConfigError("lam_h == -0.1, must be > 0."), {"lam_h": "--lam"}))
    '--lam == -0.1, must be > 0.'
    """
    text = str(exc)
    m = re.match(r"^(?:unknown key \w+\.)?([A-Za-z_][A-Za-z0-9_]*)(\[\d+\])?( ==|,|:)", text)
    if not m or m.group(1) not in options:
        return exc
    return ConfigError(
        options[m.group(1)] + (m.group(2) or "") + text[m.end(2) if m.group(2) else m.end(1) :]
    )


def cli_spelling(message: str, parser: argparse.ArgumentParser, argv: Sequence[str]) -> str:
    """A library message in the command line's words: a leading field name (``out == ...``) and keyword
    spellings (``force=True``) become the options of the sub-command typed (``--out == ...``, ``--force``)
    where it has them; anything else is left as written.

    Parameters
    ----------
    message : str
        The library's message (a :class:`~deepcollapse.ConfigError`'s text).
    parser : argparse.ArgumentParser
        The root parser.
    argv : sequence of str
        The command line's words (they choose the sub-command whose options are used).

    Returns
    -------
    str
        The message with the field names the sub-command has as options spelt as those options.

    Examples
    --------
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> _ = p.add_argument("--out")
    >>> _ = p.add_argument("--force", action="store_true")
    >>> cli_spelling("out == 'runs' holds another run; pass force=True to replace it", p, [])
    "--out == 'runs' holds another run; pass --force to replace it"
    """
    options = _all_options(_chosen(parser, argv))

    def option(field: str) -> str | None:
        name = "--" + field.replace("_", "-")
        return name if name in options else None

    m = re.match(r"^([a-z][a-z0-9_]*)(\[\d+\])? ==", message)
    if m and option(m.group(1)):
        message = f"{option(m.group(1))}{message[m.end(1) :]}"
    message = re.sub(r"\b([a-z][a-z0-9_]*)=True\b", lambda k: option(k.group(1)) or k.group(0), message)
    return re.sub(r"(--[a-z0-9-]+) / \1\b", r"\1", message)


def folder_kind(path: str | Path) -> str:
    """What a folder holds: ``"dufm"`` (a DUFM run), ``"net"`` (a network run), ``"sweep"``, ``"experiment"``
    (a ``reproduce`` output), ``"search"`` (a ``dufm search``), ``"registry"`` (a best-known registry),
    ``"landscape"`` (a ``dufm landscape`` output), ``"missing"`` or ``"other"``.

    Parameters
    ----------
    path : str or Path
        The folder.

    Returns
    -------
    str
        ``"dufm"``, ``"net"``, ``"sweep"``, ``"experiment"``, ``"search"``, ``"registry"``, ``"landscape"``,
        ``"missing"`` or ``"other"``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> d = Path(tempfile.mkdtemp())
    >>> folder_kind(d), folder_kind(d / "nothing")
    ('other', 'missing')
    >>> _ = (d / "sweep.yaml").write_text("grid: {lam: [0.002, 0.004]}")
    >>> folder_kind(d)
    'sweep'
    """
    p = Path(path)
    if not p.is_dir():
        return "missing"
    if (p / "experiment.json").is_file():
        return "experiment"
    if (p / "sweep.yaml").is_file():
        return "sweep"
    for marker, kind in (("search.json", "search"), ("best_known.json", "registry")):
        if (p / marker).is_file():
            return kind
    cfg = p / "config.yaml"
    if cfg.is_file():
        import yaml

        try:
            data = yaml.safe_load(cfg.read_text()) or {}
        except (yaml.YAMLError, ValueError, OSError):  # a damaged config.yaml (check_folder_kind says how)
            return "other"
        if isinstance(data, dict) and isinstance(data.get("config"), dict):
            data = data["config"]
        if isinstance(data, dict) and ("dataset" in data or "backbone" in data):
            return "net"
        if isinstance(data, dict) and "layers" in data and "n" in data:
            return "dufm"
    if (p / "landscape.json").is_file():  # after config.yaml: `dufm landscape --out` may be a run folder
        return "landscape"
    return "other"


_WHAT = {
    "dufm": ("a DUFM run folder", "deepcollapse dufm resume {dir} (or dufm analyze)"),
    "net": ("a network run folder", "deepcollapse net resume {dir}"),
    "sweep": (
        "a sweep folder",
        "the sweep command again, e.g. deepcollapse sweep {dir}/sweep.yaml --out {dir}",
    ),
    "experiment": ("a reproduce output folder", "the reproduce command again (see {dir}/report.html)"),
    "search": ("a search folder", "the same dufm search command to resume it (see {dir}/search.json)"),
    "registry": ("a best-known registry folder", "--registry {dir} to offer points to it"),
    "landscape": ("a landscape folder", "deepcollapse dufm landscape (see {dir}/landscape.json)"),
}


def check_folder_kind(path: str | Path, expected: str, option: str = "DIR", *, new_ok: bool = False) -> None:
    """Raise a one-line :class:`ConfigError` when ``path`` is not a ``expected`` folder, saying what it is and
    which command fits it.  With ``new_ok`` (an output folder), a missing folder or one that holds none of the
    kinds of :func:`folder_kind` (e.g. an empty one) passes too: only another kind of work is refused.

    Parameters
    ----------
    path : str or Path
        The folder given.
    expected : str
        The kind it must be (:func:`folder_kind`): ``"dufm"``, ``"net"``, ``"sweep"`` or ``"experiment"``.
    option : str, optional
        The argument's name in the message.
    new_ok : bool, optional
        Also accept a missing folder or one of kind ``"other"`` (the folder a command is about to fill).

    Returns
    -------
    None
        Returns quietly when ``path`` is an ``expected`` folder (or new, with ``new_ok``); raises
        :class:`ConfigError` otherwise.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "experiment.json").write_text("{}")
    >>> check_folder_kind(d, "experiment")
    >>> try:
    ...     check_folder_kind(d, "dufm")
    ... except ConfigError as exc:
    ...     print(str(exc).replace(str(d), "D"))  # doctest: +NORMALIZE_WHITESPACE
    DIR == 'D', must be a DUFM run folder; it is a reproduce output folder: use the reproduce command
    again (see D/report.html).
    >>> check_folder_kind(d / "new", "dufm", "--out", new_ok=True)  # a folder to be made
    """
    kind = folder_kind(path)
    if kind == expected or (new_ok and kind in ("missing", "other")):
        return
    want = _WHAT[expected][0]
    if new_ok:
        what, command = _WHAT[kind]
        raise ConfigError(
            f"{option} == {str(path)!r}, must be a new folder or {want}; it is {what} (its own command: "
            f"{command.format(dir=path)}): choose another {option}."
        )
    if kind in _WHAT:
        what, command = _WHAT[kind]
        raise ConfigError(
            f"{option} == {str(path)!r}, must be {want}; it is {what}: use {command.format(dir=path)}."
        )
    if kind == "missing":
        raise ConfigError(f"{option} == {str(path)!r}, must be {want} (no such folder).")
    cfg = Path(path) / "config.yaml"
    if cfg.is_file():  # there is a config.yaml: say what is wrong with it (empty, YAML syntax, another kind)
        from deepcollapse._core.io import read_yaml

        data = read_yaml(cfg, expected="config fields", hint=f"{option} must be {want}")
        raise ConfigError(
            f"{cfg}: holds no config of {want} (keys {', '.join(map(str, data)) or 'none'}); "
            f"{option} must be {want}."
        )
    raise ConfigError(f"{option} == {str(path)!r}, must be {want} (no config.yaml of one found there).")


_RST = [(re.compile(r":(?:func|class|mod|meth|data|attr):`~?([^`]*)`"), r"\1"), (re.compile(r"``"), "")]
_DEFAULT = re.compile(r"\s*\((?:default:?)\s*([^()]*(?:\([^()]*\)[^()]*)*)\)")


def _plain(text: str | None) -> str | None:
    if not text:
        return text
    for pattern, repl in _RST:
        text = pattern.sub(repl, text)
    return text


def _sub_parsers(
    parser: argparse.ArgumentParser, path: str = ""
) -> list[tuple[str, argparse.ArgumentParser]]:
    out = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _sub_parsers(sub, f"{path} {name}".strip())
    return out


def _rename(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    action = parser._option_string_actions.get(old)
    if action is None or new in parser._option_string_actions:
        return
    del parser._option_string_actions[old]
    action.option_strings = [new if s == old else s for s in action.option_strings]
    parser._option_string_actions[new] = action
    if action.metavar is None and action.nargs != 0:
        action.metavar = new.lstrip("-").upper().replace("-", "_")
    store = True if isinstance(action, argparse._StoreTrueAction) else None
    typed: dict[str, Any] = {"type": action.type} if action.type is not None else {}
    parser.add_argument(
        old, dest=action.dest, action=_DeprecatedAlias, new=new, store=store, help=argparse.SUPPRESS, **typed
    )


def normalise(root: argparse.ArgumentParser) -> None:
    """Apply the module's rules to every parser below ``root`` (run once, after every command group has
    registered; so options other modules add follow them too): the renames of :data:`RENAMES` with hidden
    aliases, plain-text help and descriptions (RST markup removed), one ``(default: X)`` per option, the
    shared description of an option whose help gave only a default.

    Parameters
    ----------
    root : argparse.ArgumentParser
        The root parser; every sub-parser below it is normalised too.

    Returns
    -------
    None
        Rewrites the parsers' help texts and options in place.

    Examples
    --------
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> seed = p.add_argument("--seed", type=int, default=0, help="(default: 0)")
    >>> normalise(p)
    >>> seed.help
    'random seed (default: 0)'
    """
    for path, parser in _sub_parsers(root):
        raw = isinstance(parser.formatter_class, type) and issubclass(
            parser.formatter_class, argparse.RawDescriptionHelpFormatter
        )
        if not raw:  # a raw description / epilog keeps its paragraphs (dufm landscape's verdicts)
            parser.formatter_class = argparse.HelpFormatter  # never ArgumentDefaults..Formatter: one default
        parser.description = _plain(parser.description)
        for old, new in RENAMES.get(path, {}).items():
            _rename(parser, old, new)
        for action in parser._actions:
            if action.help is argparse.SUPPRESS or not action.option_strings or action.dest == "help":
                continue
            name = next((s for s in action.option_strings if s.startswith("--")), action.option_strings[0])
            text = _plain(action.help) or ""
            defaults = _DEFAULT.findall(text)
            body = _DEFAULT.sub("", text).strip().rstrip(";,")
            if not body and name in DESCRIPTIONS:
                body = DESCRIPTIONS[name]
            shown = defaults[0].strip() if defaults else None
            if shown is None and action.default not in (None, False, argparse.SUPPRESS, []):
                shown = _default_text(action.default)
            action.help = body + (f" (default: {shown})" if shown else "")


def field_options(fields: Iterable[str], command: str) -> dict[str, str]:
    """``field -> --option`` for config fields exposed as options named after them (dashes for underscores),
    with the renames of :data:`RENAMES` ``[command]`` applied.  A plain dict: a lookup table of option
    names for :func:`user_words`.

    Parameters
    ----------
    fields : iterable of str
        Config field names.
    command : str
        The command's name in :data:`RENAMES` (``"net train"``).

    Returns
    -------
    dict[str, str]
        ``field -> --option``.

    Examples
    --------
    >>> field_options(["n_per_class", "lam_h"], "net train")
    {'n_per_class': '--n', 'lam_h': '--lam-h'}
    """
    renames = RENAMES.get(command, {})
    out = {}
    for f in fields:
        opt = "--" + f.replace("_", "-")
        out[f] = renames.get(opt, opt)
    return out


def option_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """``dest -> --option`` for the visible options of ``parser`` (for :func:`user_words`).  A plain dict: a
    lookup table of option names.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The parser whose options are listed (not those of its sub-parsers).

    Returns
    -------
    dict[str, str]
        ``dest -> --option`` of every visible ``--`` option (``--help`` aside: its first spelling is ``-h``).

    Examples
    --------
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> _ = p.add_argument("--lam-h", type=float)
    >>> _ = p.add_argument("--old", help=argparse.SUPPRESS)
    >>> option_names(p)
    {'lam_h': '--lam-h'}
    """
    return {
        a.dest: a.option_strings[0]
        for a in parser._actions
        if a.option_strings and a.help is not argparse.SUPPRESS and a.option_strings[0].startswith("--")
    }


def json_or(text: str, parse: Callable[[str], Any]) -> Any:
    """``parse(text)``, or a JSON list when ``text`` starts with ``[`` (shared by list-valued options).

    Parameters
    ----------
    text : str
        The option's value as typed.
    parse : callable
        How to read ``text`` when it is not a JSON list.

    Returns
    -------
    Any
        The JSON list, or ``parse(text)``.

    Examples
    --------
    >>> json_or("[1, 2]", int), json_or("3", int)
    ([1, 2], 3)
    """
    return json.loads(text) if text.strip().startswith("[") else parse(text)
