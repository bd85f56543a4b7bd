"""``deepcollapse reproduce``: run a paper figure by name.

Examples::

    deepcollapse reproduce --list
    deepcollapse reproduce fig2-top --smoke --out runs/fig2-smoke
    deepcollapse reproduce fig3-middle --out runs/fig3m --workers 2
    deepcollapse reproduce fig3-right --out runs/fig3r --executor ray --ray-address auto
    deepcollapse reproduce best-known --loss ce --out runs/best-known-ce --workers 2
    deepcollapse reproduce basins --config configs/basins/lr_init.yaml --out runs/atlas --workers 2
    deepcollapse reproduce net-2024-fig4-mnist --device cuda --data-dir ~/data --out runs/fig4-mnist
    deepcollapse reproduce basins-gpu --device cuda --out runs/atlas-gpu
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from deepcollapse._core.checks import ConfigError

#: the experiments that offer the points they find to the best-known registry (``--registry``)
OFFERING = ("best-known", "depth-bound", "basins", "basins-gpu")
#: those whose full-size run reads and offers to the user registry without ``--registry`` (tables of
#: best-known points); the others only to a registry named, and a smoke run to none (issue 45)
REGISTRY_BY_DEFAULT = ("best-known", "depth-bound")


def add_executor_options(p: argparse.ArgumentParser) -> None:
    """``--executor``, ``--workers``, ``--ray-address``, ``--no-progress``, ``--force`` (shared by sweep).

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.

    Returns
    -------
    None
        Adds the five options to ``p``.

    Examples
    --------
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_executor_options(p)
    >>> args = p.parse_args(["--workers", "2", "--no-progress"])
    >>> args.executor, args.workers, args.no_progress, args.force
    ('local', 2, True, False)
    """
    from deepcollapse.cli.options import FORCE_HELP, NO_PROGRESS_HELP

    p.add_argument("--executor", default="local", help="local (a process pool) or ray")
    p.add_argument("--workers", type=int, help="parallel processes / Ray CPUs (default: min(tasks, cores))")
    p.add_argument(
        "--ray-address",
        help="HOST:PORT of a running Ray cluster (token auth: see README) (default: start a local instance)",
    )
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    p.add_argument("--force", action="store_true", help=FORCE_HELP)


def register(subparsers: Any) -> None:
    """Add ``reproduce NAME`` to the ``deepcollapse`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The root parser's sub-parsers (``parser.add_subparsers()``).

    Returns
    -------
    None
        Adds the ``reproduce`` command (its ``func`` is :func:`run`).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["reproduce", "fig2-top", "--smoke", "--out", "runs/fig2-smoke"])
    >>> args.name, args.smoke, args.out, args.executor
    ('fig2-top', True, 'runs/fig2-smoke', 'local')
    """
    p = subparsers.add_parser(
        "reproduce",
        help="run a paper figure (DUFM, theory or real network): tables, figures, report.html",
        description="Run one of the papers' figures by name; --list shows them.",
    )
    p.add_argument("name", nargs="?", help="experiment name (see --list)")
    p.add_argument("--list", action="store_true", help="list the experiments and exit")
    p.add_argument("--smoke", action="store_true", help="the seconds-long variant (checks the pipeline)")
    p.add_argument("--out", help="output folder (re-running into it skips finished runs)")
    p.add_argument(
        "--data-dir",
        help="folder with the full MNIST IDX files / cifar-10-batches-py that the paper-scale network "
        "experiments (net-2024-*, net-2023-*) read; never replaced by the bundled mnist_5k subset "
        "(default: data, the presets' data_dir; unused with --smoke)",
    )
    p.add_argument(
        "--config",
        help="YAML of the experiment's settings instead of the shipped ones (basins, basins-gpu: the "
        "BasinAtlas fields, e.g. configs/basins/lr_init.yaml; best-known: the BestKnownSettings fields, e.g. "
        "configs/best_known/deep.yaml for L = 4, 5 only; the network experiments: device and "
        "batch_seeds); --device / --batch-seeds win over the file's; only for experiments that take a "
        "settings file",
    )
    add_family_options(p)
    add_run_options(p)
    add_executor_options(p)
    from deepcollapse.cli.best_known import add_registry_option

    add_registry_option(
        p,
        "best-known registry folder that the experiments finding points offer them to (best-known and "
        "depth-bound: every point, and their tables read it, so they are the minimum over every source with "
        "the shipped rows; basins, basins-gpu: each cell's lowest run, only with this option); off: neither; "
        "a --smoke run offers to none",
        "full-size best-known and depth-bound: $DEEPCOLLAPSE_REGISTRY, else "
        "~/.local/share/deepcollapse/best_known; basins, basins-gpu and --smoke: none",
    )
    p.set_defaults(func=run)


def add_run_options(p: argparse.ArgumentParser) -> None:
    """``--device`` (where an experiment computes: every run of a network experiment, the trainer calls of a
    basin atlas) and ``--batch-seeds`` (every run of a network experiment): the names and choices of ``net
    train``'s options, generated from the NetConfig fields.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.

    Returns
    -------
    None
        Adds the two options to ``p`` (not given: ``None``, the experiment's own value).

    Examples
    --------
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_run_options(p)
    >>> args = p.parse_args(["--device", "cpu"])
    >>> args.device, args.batch_seeds
    ('cpu', None)
    """
    from deepcollapse.cli.options import add_config_options
    from deepcollapse.nets.config import NetConfig

    fields = {f.name: f for f in dataclasses.fields(NetConfig)}
    add_config_options(
        p,
        NetConfig,
        include=("device", "batch_seeds"),
        overrides={
            "device": {
                "help": "where to compute: the network experiments (net-*, real-*: auto = cuda > mps > "
                "cpu, cpu, cuda, mps; with cuda their seeds train as one batched network) and the basin "
                "atlases (basins, basins-gpu: auto = cuda where present, cpu, cuda; basins-gpu runs with "
                "auto); other experiments refuse it",
                "shown_default": "the experiment's",
            },
            "batch_seeds": {
                "help": fields["batch_seeds"].metadata["help"] + "; only for the network experiments (net-*, "
                "real-*)",
                "shown_default": "the experiment's",
            },
        },
        command="reproduce",
    )


def add_family_options(p: argparse.ArgumentParser) -> None:
    """``--loss``, ``--activation``, ``--eps``: the model family of an experiment that takes one (the same
    names, help and choices as ``dufm train`` / ``dufm search``, from :mod:`deepcollapse.family.fields`).

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.

    Returns
    -------
    None
        Adds the three options to ``p`` (not given: ``None``, the experiment's own family).

    Examples
    --------
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_family_options(p)
    >>> args = p.parse_args(["--loss", "ce"])
    >>> args.loss, args.activation, args.eps
    ('ce', None, None)
    """
    from deepcollapse.cli.options import add_option
    from deepcollapse.family.fields import activation_field, eps_field, loss_field

    fields: tuple[tuple[str, Any, dict[str, Any]], ...] = (
        ("--loss", loss_field(), {}),
        ("--activation", activation_field(), {}),
        ("--eps", eps_field(), {"type": float}),
    )
    for name, fld, kw in fields:
        meta = fld.metadata
        if "choices" in meta:
            kw = {**kw, "choices": list(meta["choices"])}
        add_option(
            p,
            name,
            meta["help"] + "; only for experiments that take a model family (best-known)",
            shown_default=None if fld.default is None else str(fld.default),
            **kw,
        )


def run(args: argparse.Namespace) -> int:
    """Run ``deepcollapse reproduce``: list the experiments (``--list``), or run one into ``--out`` and print
    its summary tables and the report's path.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (the options of :func:`register`).

    Returns
    -------
    int
        The exit status: 0 (a missing name or ``--out``, or an option the experiment does not take, raises
        :class:`~deepcollapse.ConfigError` before any work).

    Examples
    --------
    >>> import argparse, contextlib, io
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> with contextlib.redirect_stdout(io.StringIO()) as out:
    ...     status = run(parser.parse_args(["reproduce", "--list"]))
    >>> status, "fig2-top" in out.getvalue()
    (0, True)
    """
    from deepcollapse.experiments.registry import get_experiment, list_experiments

    if args.list:
        exps = list_experiments()
        width = max(len(e.name) for e in exps)
        for e in exps:
            print(f"{e.name:<{width}}  {e.paper} {e.figure:<22} [{e.kind}] full size: {e.runtime}")
            print(f"{'':<{width}}  {e.description}")
        return 0
    if not args.name:
        names = ", ".join(e.name for e in list_experiments())
        raise ConfigError(f"name == None, must be one of {names} (or use --list).")
    exp = get_experiment(args.name)
    if not args.out:
        raise ConfigError("--out == None, must be an output folder.")
    from deepcollapse.cli.options import check_folder_kind, folder_kind

    if folder_kind(args.out) != "sweep":  # a sweep or another experiment: refused below unless --force
        check_folder_kind(args.out, "experiment", "--out", new_ok=True)  # a run, a search ...: always
    registry = None
    if args.registry is not None and args.name not in OFFERING:
        raise ConfigError(
            f"--registry == {args.registry!r} is only for the experiments that find points "
            f"({', '.join(OFFERING)}); leave it out for {args.name}."
        )
    named = args.registry is not None and args.registry.strip().lower() != "off"
    if args.smoke and named:
        raise ConfigError(
            f"--registry == {args.registry!r} with --smoke: a smoke run offers its toy points to no "
            "registry; leave --registry out, or run the full size."
        )
    if args.name in OFFERING and not args.smoke:  # checked before anything is written
        from deepcollapse.cli.best_known import named_registry
        from deepcollapse.landscape.best_known import open_registry

        default = args.name in REGISTRY_BY_DEFAULT
        registry = open_registry(args.registry) if default else named_registry(args.registry)
    path = exp.run(
        args.out,
        smoke=args.smoke,
        executor=args.executor,
        workers=args.workers,
        ray_address=args.ray_address,
        progress=not args.no_progress,
        force=args.force,
        data_dir=args.data_dir,
        family={"loss": args.loss, "activation": args.activation, "eps": args.eps},
        config=args.config,
        device=args.device,
        batch_seeds=args.batch_seeds,
        announce=lambda text: print(f"deepcollapse: {text}", file=sys.stderr, flush=True),
        registry=registry,
    )
    from deepcollapse.cli.summary_tables import print_experiment_tables

    print_experiment_tables(path.parent)
    print(f"report: {path}")
    return 0
