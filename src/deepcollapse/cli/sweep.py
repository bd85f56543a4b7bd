"""``deepcollapse sweep``: a grid of config overrides × seeds, resumable, joined into one table and a report.

Examples::

    deepcollapse sweep configs/wd_rank.yaml --out runs/wd --workers 2
    deepcollapse sweep --base classes=10 --base steps=20000 --grid lam=0.002,0.004 --runs 4 --out runs/s
    deepcollapse sweep configs/wd_rank.yaml --out runs/wd --executor ray --ray-address auto

Re-running the same command skips finished points (``summary.json`` present) and resumes interrupted ones.
"""

from __future__ import annotations

import argparse
from typing import Any

import yaml

from deepcollapse._core.checks import ConfigError
from deepcollapse.cli.reproduce import add_executor_options
from deepcollapse.runs.kinds import TASK_KINDS  # the task-kind table (imports no trainer)


def register(subparsers: Any) -> None:
    """Add ``sweep [FILE]`` to the ``deepcollapse`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The root parser's sub-parsers (``parser.add_subparsers()``).

    Returns
    -------
    None
        Adds the ``sweep`` command (its ``func`` is :func:`run`).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["sweep", "--grid", "lam=0.002,0.004", "--seeds", "0,1", "--out", "runs/s"])
    >>> args.file, args.grid, args.seeds, args.out
    (None, ['lam=0.002,0.004'], '0,1', 'runs/s')
    """
    p = subparsers.add_parser(
        "sweep",
        help="run a grid of config overrides × seeds (DUFM or real networks) and join the results",
        description="Run a sweep from a YAML file and/or command-line overrides.",
    )
    p.add_argument("file", nargs="?", help="sweep YAML (keys: name, kind, base, grid, points, seeds | runs)")
    p.add_argument("--out", help="output folder")
    p.add_argument("--base", action="append", default=[], metavar="KEY=VALUE", help="set a base config field")
    p.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="add a grid axis (values comma-separated)",
    )
    p.add_argument("--seeds", help="comma-separated seeds (replaces the file's)")
    p.add_argument("--n-seeds", type=int, help="number of runs: seeds 0..N-1 (replaces the file's)")
    p.add_argument(
        "--kind", choices=list(TASK_KINDS), help="task kind, when no file is given (default: dufm)"
    )
    add_executor_options(p)
    p.set_defaults(func=run)


def _grid_values(raw: str) -> list[Any]:
    v = yaml.safe_load(raw) if raw.strip().startswith("[") else None
    if isinstance(v, list):
        return v
    return [yaml.safe_load(x) for x in raw.split(",") if x.strip()]


def build_spec(args: argparse.Namespace) -> Any:
    """The sweep spec from the file (if any) updated by ``--base``, ``--grid``, ``--seeds``/``--runs``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``sweep`` command line.

    Returns
    -------
    SweepSpec
        The validated spec (a bad value raises :class:`~deepcollapse.ConfigError`).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["sweep", "--base", "classes=4", "--grid", "lam=0.002,0.004",
    ...                           "--seeds", "0,1"])
    >>> spec = build_spec(args)
    >>> spec.kind, spec.base, spec.grid, spec.seeds
    ('dufm', {'classes': 4}, {'lam': [0.002, 0.004]}, [0, 1])
    """
    from deepcollapse.runs.sweep import SweepSpec, parse_assignments

    data: dict[str, Any] = {}
    if args.file:
        from deepcollapse._core.io import read_yaml

        data = read_yaml(args.file, expected="sweep keys (kind, base, grid, seeds, ...)")
    elif not (args.base or args.grid):
        raise ConfigError("file == None, must be a sweep YAML file (or give --base / --grid).")
    if args.kind:
        data["kind"] = args.kind
    if args.base:
        data["base"] = {**(data.get("base") or {}), **parse_assignments(args.base, "--base")}
    if args.grid:
        grid = dict(data.get("grid") or {})
        for item in args.grid:
            if "=" not in item:
                raise ConfigError(f"--grid == {item!r}, must be of the form key=v1,v2,...")
            key, raw = item.split("=", 1)
            grid[key.strip()] = _grid_values(raw)
        data["grid"] = grid
    if args.seeds is not None and args.n_seeds is not None:
        raise ConfigError("--seeds and --runs are both given, must give at most one.")
    if args.seeds is not None:
        data.pop("runs", None)
        data.pop("n_seeds", None)
        try:
            data["seeds"] = [int(s) for s in args.seeds.split(",") if s.strip()]
        except ValueError:
            raise ConfigError(f"--seeds == {args.seeds!r}, must be comma-separated integers.") from None
    if args.n_seeds is not None:
        data.pop("seeds", None)
        data.pop("n_seeds", None)
        data["runs"] = args.n_seeds
    return SweepSpec.from_dict(data)


def run(args: argparse.Namespace) -> int:
    """Run ``deepcollapse sweep``: every point × seed of the spec into ``--out`` (finished runs skipped), then
    print the per-point table and the paths of the results, summary and report.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (the options of :func:`register`).

    Returns
    -------
    int
        The exit status: 0 (a bad spec or a missing ``--out`` raises :class:`~deepcollapse.ConfigError`
        before any run).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> run(parser.parse_args(["sweep", "--grid", "lam=0.002,0.004"]))  # no --out: refused before any run
    Traceback (most recent call last):
    ...
    deepcollapse._core.checks.ConfigError: --out == None, must be an output folder.
    """
    from deepcollapse.runs.sweep import run_sweep, write_sweep_report

    spec = build_spec(args)
    if not args.out:
        raise ConfigError("--out == None, must be an output folder.")
    result = run_sweep(
        spec,
        args.out,
        executor=args.executor,
        workers=args.workers,
        ray_address=args.ray_address,
        progress=not args.no_progress,
        force=args.force,
    )
    from deepcollapse.cli.summary_tables import summary_table

    n_done = sum(s.status != "skipped" for s in result.statuses)
    print(f"{len(result.statuses)} tasks ({n_done} run now, {len(result.statuses) - n_done} already done)")
    table = summary_table(result.summary, ["point", *spec.varying_keys()])
    if table:
        print("per point (mean ± std over seeds; every digit in summary.csv):")
        print(table)
    print(f"results: {result.out_dir / 'results.csv'} ({len(result.runs)} rows)")
    print(f"summary: {result.out_dir / 'summary.csv'}")
    print(f"report: {write_sweep_report(result)}")
    return 0
