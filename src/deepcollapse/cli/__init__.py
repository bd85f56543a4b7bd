"""The ``deepcollapse`` command line.

Each command group lives in its own module exposing ``register(subparsers)``; a registered sub-command
sets ``func`` (``args -> int | None``) as its parser default.  Every :class:`~deepcollapse.ConfigError`
raised below is printed as a one-line ``deepcollapse: error: ...`` with exit code 2 (argparse's own
convention), never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from deepcollapse._core.checks import DeepCollapseError, Interrupted

# Command-group modules, in the order they appear in --help.  A module that fails to import (e.g. an optional
# dependency missing) only disables its own commands.
_GROUPS = ("theory", "metrics", "dufm", "best_known", "net", "reproduce", "sweep", "demo")


def build_parser() -> argparse.ArgumentParser:
    """The ``deepcollapse`` parser: every command group's sub-commands, normalised by
    :func:`deepcollapse.cli.options.normalise` (a group whose optional dependency is missing is left out).

    Returns
    -------
    argparse.ArgumentParser
        The root parser (a :class:`~deepcollapse.cli.options.Parser`); each sub-command sets ``func``.

    Examples
    --------
    >>> args = build_parser().parse_args(["theory", "compare", "--classes", "6", "--json"])
    >>> args.command, args.theory_command, args.classes, args.json
    ('theory', 'compare', '6', True)
    """
    from deepcollapse import __version__
    from deepcollapse.cli.options import Parser, normalise

    parser = Parser(
        prog="deepcollapse",
        description=(
            "Deep neural collapse and the low-rank bias: theory, DUFM training, metrics, experiments."
        ),
    )
    parser.add_argument("--version", action="version", version=f"deepcollapse {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _GROUPS:
        try:
            module = importlib.import_module(f"deepcollapse.cli.{name}")
        except ModuleNotFoundError as exc:  # a group not built yet, or an optional dependency missing
            if exc.name and exc.name.startswith("deepcollapse.cli"):
                continue
            raise
        module.register(sub)
    normalise(parser)
    Parser.root = parser
    return parser


def resume_command(args: argparse.Namespace, argv: Sequence[str] | None = None) -> str:
    """The command that continues an interrupted one: ``dufm resume`` / ``net resume`` for a training run
    whose folder holds its ``config.yaml`` (resume starts from step 0 when no checkpoint was written yet),
    otherwise the same command again (sweeps, reproduce and demo skip finished runs and resume the rest).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line of the interrupted command.
    argv : sequence of str, optional
        Its words (default: ``sys.argv[1:]``).

    Returns
    -------
    str
        The shell command to run (quoted for a POSIX shell).

    Examples
    --------
    >>> import argparse
    >>> resume_command(argparse.Namespace(command="sweep"), ["sweep", "grid.yaml", "--out", "runs/s"])
    'deepcollapse sweep grid.yaml --out runs/s'
    >>> import tempfile
    >>> from pathlib import Path
    >>> d = tempfile.mkdtemp()
    >>> _ = (Path(d) / "config.yaml").write_text("classes: 4")
    >>> args = argparse.Namespace(command="dufm", dufm_command="train", out=d)
    >>> resume_command(args, ["dufm", "train", "--out", d]) == f"deepcollapse dufm resume {d}"
    True
    """
    import shlex
    from pathlib import Path

    group = getattr(args, "command", None)
    sub = getattr(args, f"{group}_command", None) if group else None
    if group in ("dufm", "net") and sub == "train" and (Path(args.out) / "config.yaml").is_file():
        return f"deepcollapse {group} resume {shlex.quote(str(args.out))}"
    words = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(["deepcollapse", *words])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``deepcollapse`` command line: parse ``argv``, run the sub-command's ``func``, and turn a
    :class:`~deepcollapse.ConfigError` into a one-line ``deepcollapse: error: ...`` (an interruption into
    the command that resumes it).

    Parameters
    ----------
    argv : sequence of str, optional
        The words after ``deepcollapse`` (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: the command's (0 on success), 2 for a usage or config error or no command, 130 for
        Ctrl-C, 141 for a closed pipe.

    Examples
    --------
    >>> import contextlib, io
    >>> out, err = io.StringIO(), io.StringIO()
    >>> with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    ...     ok = main(["theory", "grid", "--classes", "2", "--layers", "2"])
    ...     bad = main(["theory", "compare", "--classes", "1"])
    >>> ok, out.getvalue().splitlines()[0].split(",")[:3], bad
    (0, ['classes', 'layers', 'loss_dnc'], 2)
    >>> print(err.getvalue().strip())
    deepcollapse: error: --classes == 1, must be >= 2.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    args._words = list(sys.argv[1:] if argv is None else argv)  # the command as typed (provenance)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s"
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code = args.func(args)
    except DeepCollapseError as exc:
        from deepcollapse.cli.options import cli_spelling

        words = list(sys.argv[1:] if argv is None else argv)
        print(f"deepcollapse: error: {cli_spelling(str(exc), parser, words)}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"deepcollapse: interrupted: {exc.message}.", file=sys.stderr)
        resume = exc.resume if args.command in ("dufm", "net") and exc.resume else resume_command(args, argv)
        print(f"deepcollapse: resume with: {resume}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        # Reached only by commands without their own interrupt handling (those raise Interrupted, above,
        # with a message that counts what is on disk); promise nothing about checkpoints here.
        print("deepcollapse: interrupted; what was already written to disk is kept.", file=sys.stderr)
        print(f"deepcollapse: resume with: {resume_command(args, argv)}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `deepcollapse theory compare | head -3`: the reader left; stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 141  # 128 + SIGPIPE, as a shell reports a command stopped by a closed pipe
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
