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

from deepcollapse._core.checks import ConfigError, check_int, check_per_layer
from deepcollapse.cli.best_known import add_registry_option, offer_point
from deepcollapse.cli.options import (
    add_config_options,
    add_option,
    config_values,
    field_default,
    field_options,
    shown_default,
)
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


def _field(config_cls: type, name: str) -> dataclasses.Field[Any]:
    return next(f for f in dataclasses.fields(config_cls) if f.name == name)


_PROBLEM = ("classes", "layers", "n", "lam_h", "lam_w", "width")  # the SearchConfig fields naming eq. (1)
_FAMILY = ("loss", "activation", "eps")  # and its model family (the same fields as DUFMConfig's)


def _add_problem(p: argparse.ArgumentParser, command: str) -> None:
    """``--lam`` and the problem options of :class:`SearchConfig` (its fields, defaults and help)."""
    add_option(p, "--lam", "every λ", type=float, shown_default=shown_default(_field(SearchConfig, "lam_h")))
    # λ_W stays text: one λ for every layer or L of them (check_per_layer)
    overrides: dict[str, dict[str, Any]] = {"lam_w": {"type": str, "shown_default": "--lam for every layer"}}
    if command == "dufm landscape":  # a file or a run folder brings its own family
        fields = {f.name: f for f in dataclasses.fields(SearchConfig)}
        overrides.update(
            {
                f: {"help": fields[f].metadata["help"] + "; for a construction (a TARGET has its own)"}
                for f in _FAMILY
            }
        )
    add_config_options(p, SearchConfig, include=_PROBLEM + _FAMILY, overrides=overrides, command=command)


def _problem_values(args: argparse.Namespace) -> dict[str, Any]:
    """The problem options given, the SearchConfig defaults for the others; λs from ``--lam`` if not given."""
    values = {name: field_default(_field(SearchConfig, name)) for name in _PROBLEM}
    values.update({k: v for k, v in config_values(args, SearchConfig).items() if k in _PROBLEM})
    lam = args.lam if args.lam is not None else field_default(_field(SearchConfig, "lam_h"))
    values["lam_h"] = lam if args.lam_h is None else args.lam_h
    values["lam_w"] = lam if args.lam_w is None else args.lam_w
    return values


def _family_given(args: argparse.Namespace) -> dict[str, Any]:
    """``loss``, ``activation``, ``eps`` as given (``None``: not given)."""
    return {name: getattr(args, name, None) for name in _FAMILY}


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
    add_registry_option(s)
    s.set_defaults(func=_search)

    from deepcollapse.landscape.explain import verdicts_epilog
    from deepcollapse.landscape.targets import TARGET_HELP

    g = sub.add_parser(
        "landscape",
        help="gradient, Hessian spectrum and verdict (minimum / saddle) at a point",
        description="Gradient, lowest Hessian eigenvalues and a verdict at a point of eq. (1), explained in "
        "words; saves landscape.json, the slice figure (PNG + PDF) and its data (landscape_slices.npz).",
        epilog=verdicts_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument("target", nargs="?", help=TARGET_HELP)
    g.add_argument("--construction", help="dnc | srg: build the point with the problem options below")
    _add_problem(g, "dufm landscape")
    g.add_argument("--run", type=int, help="run index of a run folder (default: lowest loss)")
    g.add_argument("--k", type=int, default=6, help="eigenvalues computed (default 6)")
    g.add_argument("--grad-tol", type=float, default=1e-6, help="critical if ‖∇f‖ <= this (default 1e-6)")
    g.add_argument("--eig-tol", type=float, default=1e-6, help="negative if λ < −this (default 1e-6)")
    g.add_argument(
        "--refine-kinks",
        action="store_true",
        help="where the verdict is 'not critical' or 'undecided at kinks', refine the point on its kink "
        "manifold (active-set Newton–KKT, as the search task does), save it as refined.npz in --out when not "
        "higher, and give its verdict (the first one stays in landscape.json as verdict_before_refinement)",
    )
    g.add_argument(
        "--descend",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="where the verdict (after --refine-kinks, if given) is not 'critical at a kink' or 'local "
        "minimum', continue the descent for at most ROUNDS rounds (smoothing homotopy, line search along the "
        "certified descent direction, polish, kink refinement; counts, no wall clock), save the point as "
        "descended.npz in --out when lower, and give its verdict; 0: none (default: 0)",
    )
    g.add_argument(
        "--out",
        help="folder for landscape.json and the slice figure (default: TARGET/landscape for a folder, "
        "X.landscape for X.npz, landscape_<construction>_K.._L.._n.. for a construction)",
    )
    g.add_argument("--force", action="store_true", help="replace an earlier landscape of another point there")
    g.add_argument("--no-progress", action="store_true", help="no progress bars")
    g.add_argument("--json", action="store_true", help="print the result as JSON")
    add_registry_option(
        g,
        "with --refine-kinks or --descend: best-known registry folder offered the final point "
        "(descended.npz, refined.npz, or a .npz TARGET) with its verdict, kept only if lower than the "
        "cell's row after a float64 re-evaluation; or off",
    )
    g.set_defaults(func=_landscape)


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
    from deepcollapse.landscape.best_known import open_registry
    from deepcollapse.landscape.search import SearchInterrupted, search_dufm

    config = search_config(args)
    registry = open_registry(args.registry)  # checked before the search writes anything
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


def _landscape(args: argparse.Namespace) -> int:
    import textwrap
    from pathlib import Path

    from deepcollapse._core.io import finite_or_none
    from deepcollapse.landscape.output import claim_output, default_output, landscape_inputs
    from deepcollapse.landscape.verdicts import landscape, load_point

    params, problem, what = load_point(
        args.target,
        construction=args.construction,
        **_problem_values(args),
        run=args.run,
        **_family_given(args),
    )
    inputs = landscape_inputs(params, problem, k=args.k, grad_tol=args.grad_tol, eig_tol=args.eig_tol)
    check_int("--descend", args.descend, min=0)
    if args.refine_kinks:  # part of what determines the result (absent otherwise: earlier folders match)
        inputs["refine_kinks"] = True
    if args.descend:
        inputs["descend"] = args.descend
    out = (
        Path(args.out)
        if args.out
        else default_output(
            args.target, args.construction, problem.classes, problem.layers, problem.n, problem.family.name
        )
    )
    registry = None
    offers = args.refine_kinks or args.descend > 0
    if offers:
        from deepcollapse.landscape.best_known import open_registry

        registry = open_registry(args.registry)  # checked before anything is written
    claim_output(out, inputs, force=args.force, option="--out" if args.out else None)  # before the work
    progress = not args.no_progress
    land = landscape(
        params, problem, k=args.k, grad_tol=args.grad_tol, eig_tol=args.eig_tol, progress=progress
    )
    before = land
    refinement = None
    if args.refine_kinks:
        from deepcollapse.landscape.kinks import refine_verdict

        sharpened = refine_verdict(
            params, problem, land, grad_tol=args.grad_tol, k=args.k, eig_tol=args.eig_tol, progress=progress
        )
        land, refinement = sharpened.landscape, sharpened.refinement
        if sharpened.params is not None:
            params = sharpened.params
            _save_refined(out, params, problem, what)
            what += " (refined at kinks: refined.npz)"
    if not (args.refine_kinks and land is not before):  # an earlier result's refined point is not this one's
        (out / "refined.npz").unlink(missing_ok=True)
    descent = None
    if args.descend:
        params, land, descent = _descend(out, params, problem, land, args, what, progress)
    if descent is not None and descent.params is params:
        what += " (descended: descended.npz)"
    else:  # an earlier result's descended point is not this one's
        (out / "descended.npz").unlink(missing_ok=True)
    directions = land.directions
    assert directions is not None  # landscape() always returns them
    result = land.to_file_dict()
    result["target"] = what
    if args.refine_kinks:
        result["verdict_before_refinement"] = before["verdict"]
        result["kink_refinement"] = None if refinement is None else refinement.to_file_dict()
    if args.descend:
        result["descent"] = None if descent is None else _descent_record(descent)
    if result["reduced"]:  # the analysis (and so the slices) ran on the n = 1 problem at (M_1, W)
        from deepcollapse.landscape.piecewise import collapse

        params = [collapse(params[0], problem.classes), *params[1:]]
        problem = problem.reduced()
        what += " (collapsed H_1: analysed as the n = 1 problem with nλ_H1, same verdict)"
        result["target"] = what
    _save_landscape(out, result, inputs, params, problem, land, progress)
    offered = out / "refined.npz" if (out / "refined.npz").is_file() else None
    if (out / "descended.npz").is_file():
        offered = out / "descended.npz"
    if offered is None and args.target and str(args.target).endswith(".npz"):
        offered = Path(args.target)
    if offers and offered is not None:
        offer_point(registry, offered, args, verdict=land.verdict, clarke_residual=land.clarke_residual)
    if args.json:
        print(json.dumps(finite_or_none(result), indent=2))
        return 0
    print(what)
    print(
        f"loss {result['loss']:.12f}   ‖∇f‖ {result['grad_norm']:.3e}   "
        f"Clarke residual {result['clarke_residual']:.3e}"
    )
    print(
        f"zero pre-activations per layer (kinks): {result['zero_preactivations']}   "
        f"within {result['tolerances']['near_kink']} (near-kinks): {result['near_kinks']}"
    )
    print(
        f"parameters {result['parameters']}, symmetry directions {result['symmetry_dim']}, "
        f"λ_max {result['lambda_max']:.4g}"
    )
    print("lowest eigenvalues:               ", " ".join(f"{x:.3e}" for x in result["lowest_eigenvalues"]))
    print(
        "lowest eigenvalues off symmetries:",
        " ".join(f"{x:.3e}" for x in result["lowest_eigenvalues_off_symmetry"]),
    )
    if refinement is not None:
        print(f"kink refinement: {refinement.note} (verdict before: {before['verdict']})")
    elif args.refine_kinks:
        print(f"kink refinement: not needed (verdict {before['verdict']})")
    if descent is not None:
        print(f"continued descent: {descent.note}")
    elif args.descend:
        print("continued descent: not needed (the point is certified)")
    note = f" ({result['verdict_note']})" if result["verdict_note"] else ""
    tol = result["tolerances"]
    print(f"verdict: {result['verdict']}{note}  [grad_tol {tol['grad_tol']:g}, eig_tol {tol['eig_tol']:g}]")
    print(
        textwrap.fill(
            result["explanation"], 110, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False
        )
    )
    refined = ", refined.npz" if (out / "refined.npz").is_file() else ""
    refined += ", descended.npz" if (out / "descended.npz").is_file() else ""
    figure = Path(result["figure"]).name
    print(f"saved in {out}: landscape.json, {figure} (+ .pdf), landscape_slices.npz{refined}")
    return 0


def _descend(
    out: Any, params: Any, problem: Any, land: Any, args: argparse.Namespace, what: str, progress: bool
) -> tuple[Any, Any, Any]:
    """``--descend``: where ``land`` is not certified, :func:`~deepcollapse.landscape.descent.
    descend_until_certified` for ``args.descend`` rounds; a lower point is saved as ``descended.npz`` and
    judged afresh on the given problem.  Returns ``(params, land, descent)`` (the inputs and ``None`` when
    certified already; the descent's ``params`` are the returned ones exactly when the point moved)."""
    from deepcollapse.landscape.descent import CERTIFIED, descend_until_certified
    from deepcollapse.landscape.verdicts import landscape

    if land.verdict in CERTIFIED:
        return params, land, None
    descent = descend_until_certified(
        params, problem, rounds=args.descend, grad_tol=args.grad_tol, eig_tol=args.eig_tol
    )
    before, after = descent.loss_before, descent.loss_after
    if descent.params is None or before is None or after is None or not after < before:
        return params, land, descent
    _save_refined(out, descent.params, problem, what, name="descended.npz", how="continued descent")
    land = landscape(
        descent.params, problem, k=args.k, grad_tol=args.grad_tol, eig_tol=args.eig_tol, progress=progress
    )
    return descent.params, land, descent


def _descent_record(descent: Any) -> dict[str, Any]:
    """The continued descent in ``landscape.json``: losses, verdicts, rounds, per-round steps, the note."""
    keys = (
        "loss_before",
        "loss_after",
        "verdict_before",
        "verdict",
        "clarke_residual",
        "certified",
        "rounds",
    )
    return {**{k: getattr(descent, k) for k in keys}, "steps": descent.steps, "note": descent.note}


def _save_refined(
    out: Any, params: Any, problem: Any, what: str, name: str = "refined.npz", how: str = "kink refinement"
) -> None:
    """The point returned by the kink refinement (or ``how``), as the solution file ``name`` in ``out``."""
    from deepcollapse.landscape.piecewise import value
    from deepcollapse.landscape.solution_file import save_solution

    H1, *weights = params
    save_solution(
        out / name,
        H1,
        weights,
        n=problem.n,
        lam_h=problem.lam_h,
        lam_w=problem.lam_w,
        extra={"loss": value(list(params), problem), "source": f"{how} of {what}"},
        family=problem.family,
    )


def _save_landscape(
    out: Any,
    result: dict[str, Any],
    inputs: dict[str, Any],
    params: Any,
    problem: Any,
    land: Any,
    progress: bool,
) -> None:
    """The slices (and the zoom on a certified descent), their figure and data, and ``landscape.json``."""
    import numpy as np

    from deepcollapse._core.io import atomic_write_json, finite_or_none
    from deepcollapse.analysis.figures import save_figure
    from deepcollapse.analysis.landscape_plots import plot_slices
    from deepcollapse.landscape.slices import descent_slice
    from deepcollapse.landscape.verdicts import loss_slices

    slices = loss_slices(params, problem, land.directions, progress=progress)
    zoom = None
    if land.certified_descent is not None:  # the descent sits far inside the slice's radius: zoom on it
        step = land.certified_descent["step"]
        zoom = descent_slice(params, problem, land.descent_direction, step, progress=progress)
    fig, _ = plot_slices(slices, result, title=result["target"], zoom=zoom)
    png, _ = save_figure(fig, out, "landscape_slices")
    data = {k: slices[k] for k in ("t", "f1", "s", "f2", "radius", "loss")}
    if zoom is not None:
        data.update(zoom_a=zoom.a, zoom_f=zoom.f, zoom_step=zoom.step)
    np.savez(out / "landscape_slices.npz", **data)
    result["inputs"] = inputs
    result["figure"] = str(png)
    atomic_write_json(out / "landscape.json", finite_or_none(result))


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


def _train(args: argparse.Namespace) -> int:
    from deepcollapse.cli.options import user_words
    from deepcollapse.dufm.trainer import train_dufm

    try:
        config = build_config(args)
    except ConfigError as exc:
        raise user_words(exc, _option_of_field(args)) from None
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
