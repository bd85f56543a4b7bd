"""``deepcollapse dufm``: train the batched L-DUFM with full-batch GD, resume it, analyse it vs the theory.

Examples::

    deepcollapse dufm train --classes 10 --n 50 --layers 4 --width 30 --lam 0.004 --lr 0.5 --steps 100000 \\
        --runs 10 --seed 0 --workers 2 --out runs/flagship
    deepcollapse dufm train --config flagship.yaml --out runs/flagship      # any DUFMConfig field in YAML
    deepcollapse dufm resume runs/flagship deepcollapse dufm analyze runs/flagship --json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deepcollapse._core.checks import ConfigError, check_per_layer
from deepcollapse.cli.best_known import REGISTRY_NONE, add_registry_option, named_registry, offer_point
from deepcollapse.cli.options import (
    add_config_options,
    add_option,
    config_values,
    field_options,
    shown_default,
)
from deepcollapse.cli.search_options import _FAMILY, _PROBLEM, _add_problem, _field, _problem_values
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.landscape.search_config import SearchConfig


def register(subparsers: Any) -> None:
    """Add ``dufm train | resume | analyze | search | landscape`` to the ``deepcollapse`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The root parser's sub-parsers (``parser.add_subparsers()``).

    Returns
    -------
    None
        Adds the ``dufm`` command group (each sub-command sets ``func``).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["dufm", "train", "--classes", "4", "--lam", "0.01", "--out", "runs/a"])
    >>> args.dufm_command, args.classes, args.lam, args.out
    ('train', 4, 0.01, 'runs/a')
    """
    p = subparsers.add_parser("dufm", help="train / resume / analyse the batched L-DUFM (full-batch GD)")
    sub = p.add_subparsers(dest="dufm_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    t = sub.add_parser("train", help="train R runs into a run folder")
    t.add_argument("--config", help="DUFMConfig YAML; options given explicitly override it")
    add_option(
        t,
        "--lam",
        "set λ_H1 and every λ_W",
        type=float,
        shown_default=shown_default(_field(DUFMConfig, "lam_h")),
    )
    add_config_options(t, DUFMConfig, command="dufm train")  # every field is an option (--help = the field)
    t.add_argument("--out", required=True, help="run folder")
    t.add_argument("--force", action="store_true", help="replace an existing run in --out")
    t.add_argument(
        "--max-steps", type=int, help="stop after this many steps with a checkpoint (resume later)"
    )
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.add_argument("--json", action="store_true", help="print the summary as JSON")
    t.set_defaults(func=_train)

    r = sub.add_parser(
        "resume", help="continue a run folder from its checkpoint (from step 0 if none was written yet)"
    )
    r.add_argument("dir", help="run folder")
    add_config_options(  # the fields a resumed run may change; not given = the run's own value
        r,
        DUFMConfig,
        include=("steps", "workers"),
        overrides={
            "steps": {"help": "new total number of steps (extend a run)", "shown_default": "the run's"},
            "workers": {"help": "change the number of worker processes", "shown_default": "the run's"},
        },
        command="dufm resume",
    )
    r.add_argument("--max-steps", type=int, help="stop after this many steps with a checkpoint")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--json", action="store_true", help="print the summary as JSON")
    r.set_defaults(func=_resume)

    a = sub.add_parser("analyze", help="classify the runs of a folder and compare with L_DNC / L_SRG")
    a.add_argument("dir", help="run folder")
    a.add_argument("--json", action="store_true", help="print the full analysis as JSON")
    a.add_argument("--no-write", action="store_true", help="do not (re)write summary.json")
    a.set_defaults(func=_analyze)
    _register_search(sub)


def _search_options(args: argparse.Namespace) -> dict[str, str]:
    """The option the user typed for each SearchConfig field (``--lam`` for λ_H1 / λ_W when it set them)."""
    names = field_options([f.name for f in dataclasses.fields(SearchConfig)], "dufm search")
    for field in ("lam_h", "lam_w"):
        if getattr(args, field, None) is None:
            names[field] = "--lam"
    return names


def _register_search(sub: Any) -> None:
    s = sub.add_parser("search", help="global search for the lowest loss of eq. (1) (resumable)")
    _add_problem(s, "dufm search")
    add_config_options(s, SearchConfig, exclude=_PROBLEM + _FAMILY, command="dufm search")  # the others
    s.add_argument("--out", required=True, help="search folder (re-run the same command to resume)")
    s.add_argument("--force", action="store_true", help="start over in an existing search folder")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_registry_option(
        s,
        "best-known registry folder offered the search's best point (kept only if lower than the cell's row "
        "after a float64 re-evaluation), or off",
        REGISTRY_NONE,
    )
    s.set_defaults(func=_search)

    from deepcollapse.cli.landscape import register_landscape  # the `dufm landscape` command

    register_landscape(sub)


def search_config(args: argparse.Namespace) -> Any:
    """SearchConfig from the options given; ``--lam`` (default: the field default of λ_H1) sets λ_H1 and
    every λ_W not given explicitly.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``dufm search`` command line.

    Returns
    -------
    SearchConfig
        The validated config (a bad value raises :class:`~deepcollapse.ConfigError` naming the option typed).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["dufm", "search", "--classes", "4", "--layers", "3", "--lam", "0.01",
    ...                           "--out", "runs/search"])
    >>> config = search_config(args)
    >>> config.classes, config.layers, config.lam_h, config.lam_w
    (4, 3, 0.01, [0.01, 0.01, 0.01])
    """
    from deepcollapse.cli.options import user_words

    data = {**config_values(args, SearchConfig), **_problem_values(args)}
    try:
        data["lam_w"] = check_per_layer("lam_w", data["lam_w"], max(int(data["layers"]), 1), gt=None)
        return SearchConfig.from_dict(data)
    except ConfigError as exc:
        raise user_words(exc, _search_options(args)) from None


def _search(args: argparse.Namespace) -> int:
    from deepcollapse.landscape.search import SearchInterrupted, search_dufm

    config = search_config(args)
    registry = named_registry(args.registry)  # only when named (issue 45); checked before anything is written
    best = Path(args.out) / "solutions" / "rank01.npz"
    try:
        summary = search_dufm(config, args.out, force=args.force, progress=not args.no_progress)
    except SearchInterrupted as exc:
        print(f"deepcollapse: {exc}", file=sys.stderr)
        if best.is_file():  # the best point so far was written: offer it like a finished search's
            offer_point(registry, best, args)
        return exc.exit_code
    offer_point(registry, best, args)
    if args.json:
        print(json.dumps(summary.to_dict(), indent=2))
        return 0
    srg = summary["loss_srg"]
    print(f"L_DNC = {summary['loss_dnc']:.10f}   L_SRG = {'-' if srg is None else f'{srg:.10f}'}")
    print(
        f"rounds {summary['rounds']}, {summary['starts_evaluated']} GD starts, {summary['elapsed_s']:.0f} s"
    )
    print(f"{'file':<12} {'loss':>14} {'/L_SRG':>9} {'structure':>12}  ranks M_1..M_L  source")
    for r in summary["solutions"]:
        ratio = "-" if srg is None else f"{r['loss'] / srg:.6f}"
        print(
            f"{r['file']:<12} {r['loss']:>14.10f} {ratio:>9} {r['structure']:>12}  "
            f"{str(r['ranks']):14} {r['source']}"
        )
    return 0


def build_config(args: argparse.Namespace) -> Any:
    """DUFMConfig from ``--config`` (if any), then ``--lam``, then every explicit option.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``dufm train`` command line (``--seeds`` alone also sets ``--runs`` to their number).

    Returns
    -------
    DUFMConfig
        The validated config (a bad value raises :class:`~deepcollapse.ConfigError`).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["dufm", "train", "--classes", "4", "--lam", "0.01", "--seeds", "3,5,8",
    ...                           "--out", "runs/a"])
    >>> config = build_config(args)
    >>> config.classes, config.lam_h, config.lam_w, config.runs, config.seeds
    (4, 0.01, [0.01, 0.01, 0.01, 0.01], 3, [3, 5, 8])
    """
    data: dict[str, Any] = {}
    if args.config:
        data = DUFMConfig.from_yaml(args.config).to_dict()
    if args.lam is not None:
        data["lam_h"] = data["lam_w"] = args.lam
    data.update(config_values(args, DUFMConfig))
    if args.seeds is not None and args.runs is None:  # --seeds 3,5,8 alone implies --runs 3
        data["runs"] = len([s for s in str(args.seeds).split(",") if s.strip()])
    return DUFMConfig.from_dict(data)


def print_summary(summary: Mapping[str, Any]) -> None:
    """The readable per-run analysis of a DUFM run folder (``dufm train/resume/analyze`` and ``demo``):
    numbers through ``fmt_num`` (summary.json keeps every digit), then, for runs without a verdict, how far
    each is from one.

    Parameters
    ----------
    summary : Mapping[str, Any]
        The run folder's summary (``summary.json``, :func:`deepcollapse.dufm.summary.analyze_dufm`); one
        without ``runs`` is a run stopped by ``--max-steps``.

    Returns
    -------
    None
        Prints the theory's losses, one line per run and the classification counts.

    Examples
    --------
    >>> print_summary({"step": 500})  # a run stopped by --max-steps before its analysis
    stopped at step 500; continue with `deepcollapse dufm resume`
    """
    from deepcollapse._core.format import fmt_num

    if "runs" not in summary:
        print(f"stopped at step {summary.get('step')}; continue with `deepcollapse dufm resume`")
        return
    fmt = lambda x: fmt_num(x, 6)  # losses are compared with each other: 6 significant digits
    print(
        f"L_DNC = {fmt(summary['loss_dnc'])}   L_SRG = {fmt(summary['loss_srg'])}   "
        f"L_zero = {fmt(summary['loss_zero'])}   (step {summary['step']})"
    )
    if summary.get("theory", {}).get("note"):
        print(summary["theory"]["note"])
    print(
        f"{'run':>3} {'seed':>5} {'loss':>10} {'polished':>10} {'class':>14}  ranks (M_1..M_L)  dnc1 (last)"
    )
    for r in summary["runs"]:
        d1 = r["dnc1"][-1] if r.get("dnc1") else None
        polished = fmt(r["polished_loss"]) + ("*" if r.get("polish_source") == "run" else "")
        print(
            f"{r['run']:>3} {r['seed']:>5} {fmt(r['final_loss']):>10} {polished:>10} "
            f"{r['classification']:>14}  {str(r['ranks']):16} {fmt_num(d1, 3)}"
        )
    if any(r.get("polish_source") == "run" for r in summary["runs"]):
        print(
            "* no collapsed re-fit of the run's class means is lower than the run itself: "
            "its own point is kept"
        )
    notes = [(r["run"], r["convergence_note"]) for r in summary["runs"] if r.get("convergence_note")]
    for run, note in notes:
        print(f"run {run}: {note}")
    print(
        "classifications:",
        ", ".join(f"{k} {v}" for k, v in sorted(summary["classifications"].items())),
        f"| below L_DNC: {summary['n_below_dnc']}/{len(summary['runs'])}",
    )


def _option_of_field(args: argparse.Namespace) -> dict[str, str]:
    """The option the user typed for each config field (``--lam`` for λ_H1 / λ_W when it set them)."""
    names = field_options([f.name for f in dataclasses.fields(DUFMConfig)], "dufm train")
    for field in ("lam_h", "lam_w"):
        if args.lam is not None and getattr(args, field, None) is None:
            names[field] = "--lam"
    return names


def _no_steps(where: str, steps: int) -> str:
    default = shown_default(_field(DUFMConfig, "steps"))
    return (
        f"{where} == {steps}, must be >= 1 (a run trains at least one GD step): give the steps to train, "
        f"e.g. --steps 1000 (default {default})."
    )


def _train(args: argparse.Namespace) -> int:
    from deepcollapse.cli.options import user_words
    from deepcollapse.dufm.trainer import train_dufm

    if args.steps is not None and args.steps < 1:  # (a library fit of 0 steps classifies its start)
        raise ConfigError(_no_steps("--steps", args.steps))
    try:
        config = build_config(args)
    except ConfigError as exc:
        raise user_words(exc, _option_of_field(args)) from None
    if config.steps < 1:
        raise ConfigError(_no_steps(f"steps (in --config {args.config})", config.steps))
    if args.max_steps is not None and args.max_steps < 0:
        raise ConfigError(f"max_steps == {args.max_steps}, must be >= 0.")
    summary = train_dufm(
        config, args.out, force=args.force, progress=not args.no_progress, max_steps=args.max_steps
    )
    print(json.dumps(summary.to_dict(), indent=2)) if args.json else print_summary(summary)
    return 0


def _resume(args: argparse.Namespace) -> int:
    from deepcollapse.cli.options import check_folder_kind
    from deepcollapse.dufm.trainer import resume_dufm

    check_folder_kind(args.dir, "dufm")
    summary = resume_dufm(
        args.dir,
        steps=args.steps,
        workers=args.workers,
        progress=not args.no_progress,
        max_steps=args.max_steps,
    )
    print(json.dumps(summary.to_dict(), indent=2)) if args.json else print_summary(summary)
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from deepcollapse.cli.options import check_folder_kind
    from deepcollapse.dufm.summary import analyze_dufm

    check_folder_kind(args.dir, "dufm")
    summary = analyze_dufm(args.dir, write=not args.no_write)
    print(json.dumps(summary.to_dict(), indent=2)) if args.json else print_summary(summary)
    return 0
