"""``deepcollapse dufm landscape``: gradient, Hessian spectrum and verdict at a point of eq. (1), with the
kink refinement (``--refine-kinks``) and the continued descent until certified (``--descend ROUNDS``); with
``--registry DIR``, the final point is offered to that best-known registry (without it, to none).

Examples::

    deepcollapse dufm landscape runs/search                      # the search's best solution
    deepcollapse dufm landscape runs/search --refine-kinks --descend 8 --registry my_registry
    deepcollapse dufm landscape --construction srg --classes 10 --layers 4
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from deepcollapse._core.checks import ConfigError, check_int
from deepcollapse.cli.best_known import REGISTRY_NONE, add_registry_option, named_registry, offer_point
from deepcollapse.cli.search_options import _add_problem, _family_given, _problem_values

__all__ = ["register_landscape"]


def register_landscape(sub: Any) -> None:
    """Add ``landscape`` to the ``dufm`` subcommands ``sub``.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subparsers of ``deepcollapse dufm``.

    Returns
    -------
    None
        The parser is added, its handler set.

    Examples
    --------
    >>> import argparse
    >>> sub = argparse.ArgumentParser(prog="deepcollapse dufm").add_subparsers()
    >>> register_landscape(sub)
    >>> sub.choices["landscape"].parse_args(["x.npz", "--descend", "3"]).descend
    3
    """
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
        "--clarke-iter",
        type=int,
        default=300,  # probes.CLARKE_ITER, not imported: the parser stays light (a test checks they agree)
        metavar="N",
        help="L-BFGS-B iterations of the Clarke residual's minimisation over D at the kinks: its minimum "
        "is an upper bound, so more iterations can only lower it and turn 'undecided at kinks' into "
        "'critical at a kink' (--descend runs 4, 8, 16 times N) (default: 300)",
    )
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
        "(descended.npz, refined.npz, a .npz TARGET or a search folder's best solution) with its verdict, "
        "kept only if lower than the cell's row after a float64 re-evaluation (the row's own point: its "
        "verdict recorded); or off",
        REGISTRY_NONE,
    )
    g.set_defaults(func=_landscape)


def _landscape(args: argparse.Namespace) -> int:
    from deepcollapse.landscape.output import claim_output, default_output, landscape_inputs
    from deepcollapse.landscape.probes import CLARKE_ITER
    from deepcollapse.landscape.verdicts import load_point

    check_int("--descend", args.descend, min=0)  # before the point is read
    check_int("--clarke-iter", args.clarke_iter, min=1)
    params, problem, what = load_point(
        args.target,
        construction=args.construction,
        **_problem_values(args),
        run=args.run,
        **_family_given(args),
    )
    inputs = landscape_inputs(params, problem, k=args.k, grad_tol=args.grad_tol, eig_tol=args.eig_tol)
    if args.refine_kinks:  # part of what determines the result (absent otherwise: earlier folders match)
        inputs["refine_kinks"] = True
    if args.descend:
        inputs["descend"] = args.descend
    if args.clarke_iter != CLARKE_ITER:  # absent at the default: earlier folders match
        inputs["clarke_iter"] = args.clarke_iter
    out = (
        Path(args.out)
        if args.out
        else default_output(
            args.target, args.construction, problem.classes, problem.layers, problem.n, problem.family.name
        )
    )
    registry = None
    offers = args.refine_kinks or args.descend > 0
    if offers:  # only to a registry named (issue 45); checked before anything is written
        registry = named_registry(args.registry)
    elif args.registry is not None and args.registry.strip().lower() != "off":
        raise ConfigError(
            f"--registry == {args.registry!r} is offered only the point of --refine-kinks or --descend; "
            "add one of them, or leave --registry out."
        )
    claim_output(out, inputs, force=args.force, option="--out" if args.out else None)  # before the work
    from deepcollapse._core.devices import torch_threads

    with torch_threads(1):  # small autograd graphs: more threads only wait on each other (issue 45)
        return _judge(args, out, params, problem, what, inputs, registry, offers)


def _judge(
    args: argparse.Namespace,
    out: Path,
    params: Any,
    problem: Any,
    what: str,
    inputs: dict[str, Any],
    registry: Any,
    offers: bool,
) -> int:
    """The verdict at the point :func:`_landscape` read (refined, descended): saved in ``out``, printed."""
    import textwrap

    from deepcollapse._core.io import finite_or_none
    from deepcollapse.landscape.verdicts import landscape

    progress = not args.no_progress
    budget = {"k": args.k, "eig_tol": args.eig_tol, "clarke_iter": args.clarke_iter}
    land = landscape(params, problem, grad_tol=args.grad_tol, progress=progress, **budget)
    before = land
    refinement = None
    if args.refine_kinks:
        from deepcollapse.landscape.kinks import refine_verdict

        sharpened = refine_verdict(params, problem, land, grad_tol=args.grad_tol, progress=progress, **budget)
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
        result["descent"] = None if descent is None else descent.to_file_dict()
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
    if offered is None and args.target:  # the point itself: a solution file, or a search folder's best
        given = Path(args.target)
        best = given / "solutions" / "rank01.npz"
        offered = given if given.suffix == ".npz" else (best if best.is_file() else None)
    if offers and offered is not None:
        from deepcollapse.landscape.search_state import search_command

        found_by = search_command(args.target) if args.target else None  # a search folder: its search first
        offer_point(
            registry,
            offered,
            args,
            verdict=land.verdict,
            clarke_residual=land.clarke_residual,
            after=found_by,
        )
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
    descend_until_certified` for ``args.descend`` rounds.  Where it moved
    (:meth:`~deepcollapse.landscape.descent.CertifiedDescent.outcome`) its point is saved as
    ``descended.npz``; the verdict is the descent's last one (same problem, ``k`` and tolerances, the larger
    budgets of an undecided point: not recomputed, minutes on a table's point), also where the descent ended
    on the given point itself; ``land`` otherwise.  Returns ``(params, land, descent)`` (the inputs and
    ``None`` when certified already; the descent's ``params`` are the returned ones exactly when the point
    moved)."""
    from deepcollapse.landscape.descent import CERTIFIED, descend_until_certified

    if land.verdict in CERTIFIED:
        return params, land, None
    descent = descend_until_certified(
        params,
        problem,
        rounds=args.descend,
        k=args.k,
        grad_tol=args.grad_tol,
        eig_tol=args.eig_tol,
        clarke_iter=args.clarke_iter,
        progress=progress,
    )
    ended = descent.outcome(params)
    if ended == "same":  # the given point, judged with the descent's budgets
        return params, descent.landscape, descent
    if ended == "moved":
        _save_refined(out, descent.params, problem, what, name="descended.npz", how="continued descent")
        return descent.params, descent.landscape, descent
    return params, land, descent


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
