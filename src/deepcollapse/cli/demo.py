"""``deepcollapse demo --out DIR``: theory comparison, the flagship DUFM at reduced steps and 2024 Fig. 3
left, as one HTML report (about 1 min on an idle 2-core CPU, up to ~10 min on a busy one; the report states
the wall time it took; ``make demo`` calls it).  Prints the report's path at the end."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from deepcollapse._core.checks import ConfigError


def register(subparsers: Any) -> None:
    """Add ``demo`` to the ``deepcollapse`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The root parser's sub-parsers (``parser.add_subparsers()``).

    Returns
    -------
    None
        Adds the ``demo`` command (its ``func`` is :func:`run`).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["demo", "--out", "demo-output", "--steps", "200", "--workers", "2"])
    >>> args.out, args.steps, args.workers, args.func is run
    ('demo-output', 200, 2, True)
    """
    from deepcollapse.cli.reproduce import add_executor_options
    from deepcollapse.experiments.demo_sizes import DEMO_RUNS, DEMO_STEPS  # not .demo: start-up time

    p = subparsers.add_parser(
        "demo",
        help="a short tour (about 1 min on an idle 2-core CPU, up to ~10 min on a busy one): theory, the "
        "flagship DUFM experiment, Fig. 3 left, as an HTML report",
        description=__doc__,
    )
    p.add_argument("--out", help="output folder (e.g. demo-output)")
    p.add_argument("--steps", type=int, default=DEMO_STEPS, help=f"GD steps per run (default {DEMO_STEPS})")
    p.add_argument(
        "--runs", type=int, default=DEMO_RUNS, help=f"seeds of the flagship run (default {DEMO_RUNS})"
    )
    add_executor_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``deepcollapse demo``: the theory comparison, the flagship DUFM runs and Fig. 3 left into
    ``--out``, then print the results and the report's path.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (the options of :func:`register`).

    Returns
    -------
    int
        The exit status: 0 (a missing ``--out`` raises :class:`~deepcollapse.ConfigError` before any work).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> run(parser.parse_args(["demo"]))  # no --out: refused before anything runs
    Traceback (most recent call last):
    ...
    deepcollapse._core.checks.ConfigError: --out == None, must be an output folder (e.g. --out demo-output).
    """
    from deepcollapse.experiments.demo import run_demo

    if not args.out:
        raise ConfigError("--out == None, must be an output folder (e.g. --out demo-output).")
    t0 = time.perf_counter()
    path = run_demo(
        args.out,
        steps=args.steps,
        runs=args.runs,
        executor=args.executor,
        workers=args.workers,
        ray_address=args.ray_address,
        progress=not args.no_progress,
        force=args.force,
    )
    _print_results(Path(args.out))
    print(f"demo finished in {time.perf_counter() - t0:.0f} s")
    print(f"report: {path}")
    return 0


def _print_results(out: Path) -> None:
    """The flagship theory comparison, then each flagship run folder's analysis next to the theory values."""
    from deepcollapse.cli.dufm import print_summary
    from deepcollapse.cli.theory import print_compare
    from deepcollapse.experiments.dufm_helpers import FLAGSHIP
    from deepcollapse.theory import compare

    K, L, n, lam = FLAGSHIP["classes"], FLAGSHIP["layers"], FLAGSHIP["n"], FLAGSHIP["lam"]
    print("== Theory: the flagship L-DUFM ==")
    print_compare(compare(K, L, n, lam, lam), K, L, n, lam, [lam] * L)
    print("\n== Gradient descent on the same problem (analysis of each run folder) ==")
    for summary_file in sorted((out / "flagship").rglob("summary.json")):
        print(f"-- {summary_file.parent.relative_to(out)}")
        print_summary(json.loads(summary_file.read_text()))
    figures = sorted(str(p.relative_to(out)) for p in (out / "figures").glob("*.png"))
    print(f"\nfigures: {', '.join(figures)}")
