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
    otherwise the same command again (sweeps, reproduce and demo skip finished runs and resume the rest)."""
    import shlex
    from pathlib import Path

    group = getattr(args, "command", None)
    sub = getattr(args, f"{group}_command", None) if group else None
    if group in ("dufm", "net") and sub == "train" and (Path(args.out) / "config.yaml").is_file():
        return f"deepcollapse {group} resume {shlex.quote(str(args.out))}"
    words = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(["deepcollapse", *words])


def main(argv: Sequence[str] | None = None) -> int:
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
