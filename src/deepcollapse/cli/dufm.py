"""``deepcollapse dufm``: train the batched L-DUFM with full-batch GD, resume it, analyse it vs the theory.

Examples::

    deepcollapse dufm train --classes 10 --n 50 --layers 4 --width 30 --lam 0.004 --lr 0.5 --steps 100000 \\
        --runs 10 --seed 0 --workers 2 --out runs/flagship
    deepcollapse dufm train --config flagship.yaml --out runs/flagship      # any DUFMConfig field in YAML
    deepcollapse dufm resume runs/flagship deepcollapse dufm analyze runs/flagship --json
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from deepcollapse._core.checks import ConfigError

# (option, config field, type, help): options given explicitly override --config; --lam sets every λ first.
_OPTIONS: list[tuple[str, str, Any, str]] = [
    ("--classes", "classes", int, "K (default 10)"),
    ("--n", "n", int, "samples per class (default 50)"),
    ("--layers", "layers", int, "L, number of weight matrices (default 4)"),
    ("--width", "width", str, "d_1..d_L: one int or comma-separated L ints (default 30)"),
    ("--lam-h", "lam_h", float, "λ_H1 (overrides --lam)"),
    ("--lam-w", "lam_w", str, "λ_W: one float or comma-separated L floats (overrides --lam)"),
    ("--loss", "loss", str, "fit term: mse | ce (softmax cross-entropy) (default mse)"),
    (
        "--activation",
        "activation",
        str,
        "relu | linear | relu_eps (smooth σ_ε, needs --eps) (default relu)",
    ),
    ("--eps", "eps", float, "ε of --activation relu_eps, > 0"),
    ("--lr", "lr", float, "learning rate (default 0.5)"),
    ("--lr-schedule", "lr_schedule", str, "constant | step | cosine (default constant)"),
    ("--lr-decay", "lr_decay", float, "step schedule factor (default 0.1)"),
    ("--lr-decay-every", "lr_decay_every", int, "step schedule period in steps (default 0 = never)"),
    ("--lr-min", "lr_min", float, "cosine schedule floor (default 0)"),
    ("--steps", "steps", int, "GD steps (default 100000)"),
    ("--runs", "runs", int, "independent runs R (default 1)"),
    ("--seed", "seed", int, "run r uses seed + r (default 0)"),
    ("--seeds", "seeds", str, "explicit comma-separated seeds, one per run"),
    ("--log-every", "log_every", int, "steps between metric records (default 1000)"),
    ("--checkpoint-every", "checkpoint_every", int, "steps between checkpoints (default 5000)"),
    ("--init", "init", str, "normal | uniform (default normal)"),
    (
        "--init-scale",
        "init_scale",
        str,
        "std of H1, W_1..W_L entries: one float or L+1 (default 0.1, 1/sqrt(d_in))",
    ),
    ("--dtype", "dtype", str, "float32 | float64 (default float32)"),
    ("--device", "device", str, "cpu | cuda | auto (default cpu)"),
    ("--grad", "grad", str, "analytic | autograd (default analytic)"),
    ("--backend", "backend", str, "auto | numpy | torch (default auto)"),
    ("--workers", "workers", int, "CPU processes to split the runs over (default 1)"),
    ("--sub-batch", "sub_batch", int, "runs per kernel call (default 4)"),
    ("--rank-rtol", "rank_rtol", float, "relative numerical-rank threshold (default 1e-3)"),
]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("dufm", help="train / resume / analyse the batched L-DUFM (full-batch GD)")
    sub = p.add_subparsers(dest="dufm_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    t = sub.add_parser(
        "train", help="train R runs into a run folder", formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    t.add_argument("--config", help="DUFMConfig YAML; options given explicitly override it")
    t.add_argument("--lam", type=float, help="set λ_H1 and every λ_W (default 0.004)")
    for opt, _, typ, hlp in _OPTIONS:
        t.add_argument(opt, type=typ, help=hlp)
    t.add_argument("--out", required=True, help="run folder")
    t.add_argument("--force", action="store_true", help="replace an existing run in --out")
    t.add_argument(
        "--max-steps", type=int, help="stop after this many steps with a checkpoint (resume later)"
    )
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.add_argument("--json", action="store_true", help="print the summary as JSON")
    t.set_defaults(func=_train)

    r = sub.add_parser("resume", help="continue a run folder from its checkpoint")
    r.add_argument("dir", help="run folder")
    r.add_argument("--steps", type=int, help="new total number of steps (extend a run)")
    r.add_argument("--workers", type=int, help="change the number of worker processes")
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


def _add_problem(p: argparse.ArgumentParser) -> None:
    p.add_argument("--classes", type=int, default=10, help="K (default 10)")
    p.add_argument("--layers", type=int, default=4, help="L, number of weight matrices (default 4)")
    p.add_argument("--n", type=int, default=50, help="samples per class (default 50)")
    p.add_argument("--lam", type=float, default=0.004, help="every λ (default 0.004)")
    p.add_argument("--lam-h", type=float, help="λ_H1 (overrides --lam)")
    p.add_argument("--lam-w", type=str, help="λ_W: one float or comma-separated L floats (overrides --lam)")
    p.add_argument("--width", type=int, default=30, help="d_1 = .. = d_L (default 30)")


def _register_search(sub: Any) -> None:
    s = sub.add_parser("search", help="global search for the lowest loss of eq. (1) (resumable)")
    _add_problem(s)
    s.add_argument(
        "--budget",
        type=float,
        default=30.0,
        help="minutes for this call; a call always finishes one round (default 30)",
    )
    s.add_argument("--runs", type=int, default=32, help="GD starts per round (default 32)")
    s.add_argument("--steps", type=int, default=10_000, help="GD steps per round (default 10000)")
    s.add_argument("--lr", type=float, default=0.5, help="GD learning rate (default 0.5)")
    s.add_argument("--keep", type=int, default=5, help="solutions written (default 5)")
    s.add_argument("--seed", type=int, default=0, help="seed of the starts (default 0)")
    s.add_argument("--rounds", type=int, help="stop after this many rounds (default: only the budget)")
    s.add_argument("--out", required=True, help="search folder (re-run the same command to resume)")
    s.add_argument("--force", action="store_true", help="start over in an existing search folder")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.set_defaults(func=_search)

    from deepcollapse.landscape.verdicts import TARGET_HELP

    g = sub.add_parser(
        "landscape", help="gradient, Hessian spectrum and verdict (minimum / saddle) at a point"
    )
    g.add_argument("target", nargs="?", help=TARGET_HELP)
    g.add_argument("--construction", help="dnc | srg: build the point with the problem options below")
    _add_problem(g)
    g.add_argument("--run", type=int, help="run index of a run folder (default: lowest loss)")
    g.add_argument("--k", type=int, default=6, help="eigenvalues computed (default 6)")
    g.add_argument("--grad-tol", type=float, default=1e-6, help="critical if ‖∇f‖ <= this (default 1e-6)")
    g.add_argument("--eig-tol", type=float, default=1e-6, help="negative if λ < −this (default 1e-6)")
    g.add_argument("--out", help="folder for landscape.json and the slice figure (PNG + PDF)")
    g.add_argument("--json", action="store_true", help="print the result as JSON")
    g.set_defaults(func=_landscape)


def _lams(args: argparse.Namespace) -> tuple[float, Any]:
    lam_h = args.lam if args.lam_h is None else args.lam_h
    lam_w = args.lam if args.lam_w is None else args.lam_w
    return lam_h, lam_w


def _search(args: argparse.Namespace) -> int:
    from deepcollapse._core.checks import check_per_layer
    from deepcollapse.landscape.search import SearchConfig, SearchInterrupted, search_dufm

    lam_h, lam_w = _lams(args)
    config = SearchConfig(
        classes=args.classes,
        layers=args.layers,
        n=args.n,
        lam_h=lam_h,
        lam_w=check_per_layer("--lam-w", lam_w, max(int(args.layers), 1)),
        width=args.width,
        runs=args.runs,
        steps=args.steps,
        lr=args.lr,
        keep=args.keep,
        seed=args.seed,
        budget=args.budget,
        rounds=args.rounds,
    )
    try:
        summary = search_dufm(config, args.out, force=args.force, progress=not args.no_progress)
    except SearchInterrupted as exc:
        print(f"deepcollapse: {exc}", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(summary, indent=2))
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
    from pathlib import Path

    from deepcollapse._core.io import atomic_write_json, finite_or_none
    from deepcollapse.landscape.verdicts import landscape, load_point, loss_slices

    lam_h, lam_w = _lams(args)
    params, problem, what = load_point(
        args.target,
        construction=args.construction,
        classes=args.classes,
        layers=args.layers,
        n=args.n,
        lam_h=lam_h,
        lam_w=lam_w,
        width=args.width,
        run=args.run,
    )
    result = landscape(params, problem, k=args.k, grad_tol=args.grad_tol, eig_tol=args.eig_tol)
    directions = result.pop("directions")
    result["target"] = what
    if result["reduced"]:  # the analysis (and so the slices) ran on the n = 1 problem at (M_1, W)
        from deepcollapse.landscape.piecewise import collapse

        params = [collapse(params[0], problem.classes), *params[1:]]
        problem = problem.reduced()
        what += " (collapsed H_1: analysed as the n = 1 problem with nλ_H1, same verdict)"
        result["target"] = what
    if args.out:
        from deepcollapse.analysis.figures import save_figure
        from deepcollapse.analysis.landscape_plots import plot_slices

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        slices = loss_slices(params, problem, directions)
        fig, _ = plot_slices(slices, result, title=what)
        png, _ = save_figure(fig, out, "landscape_slices")
        result["figure"] = str(png)
        atomic_write_json(out / "landscape.json", finite_or_none(result))
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
    note = f" ({result['verdict_note']})" if result["verdict_note"] else ""
    tol = result["tolerances"]
    print(f"verdict: {result['verdict']}{note}  [grad_tol {tol['grad_tol']:g}, eig_tol {tol['eig_tol']:g}]")
    if "figure" in result:
        print(f"figure: {result['figure']}")
    return 0


def build_config(args: argparse.Namespace) -> Any:
    """DUFMConfig from ``--config`` (if any), then ``--lam``, then every explicit option."""
    from deepcollapse.dufm.config import DUFMConfig

    data: dict[str, Any] = {}
    if args.config:
        data = DUFMConfig.from_yaml(args.config).to_dict()
    if args.lam is not None:
        data["lam_h"] = data["lam_w"] = args.lam
    for _, field, _, _ in _OPTIONS:
        v = getattr(args, field, None)
        if v is not None:
            data[field] = v
    if args.seeds is not None and args.runs is None:  # --seeds 3,5,8 alone implies --runs 3
        data["runs"] = len([s for s in str(args.seeds).split(",") if s.strip()])
    return DUFMConfig.from_dict(data)


def print_summary(summary: dict[str, Any]) -> None:
    """The readable per-run analysis of a DUFM run folder (``dufm train/resume/analyze`` and ``demo``)."""
    if "runs" not in summary:
        print(f"stopped at step {summary.get('step')}; continue with `deepcollapse dufm resume`")
        return
    fmt = lambda x: "-" if x is None else f"{x:.6f}"
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
        print(
            f"{r['run']:>3} {r['seed']:>5} {fmt(r['final_loss']):>10} {fmt(r['polished_loss']):>10} "
            f"{r['classification']:>14}  {str(r['ranks']):16} {'-' if d1 is None else f'{d1:.2e}'}"
        )
    print(
        "classifications:",
        ", ".join(f"{k} {v}" for k, v in sorted(summary["classifications"].items())),
        f"| below L_DNC: {summary['n_below_dnc']}/{len(summary['runs'])}",
    )


def _option_of_field(args: argparse.Namespace) -> dict[str, str]:
    """The option the user typed for each config field (``--lam`` for λ_H1 / λ_W when it set them)."""
    names = {field: opt for opt, field, _, _ in _OPTIONS}
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
    print(json.dumps(summary, indent=2)) if args.json else print_summary(summary)
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
    print(json.dumps(summary, indent=2)) if args.json else print_summary(summary)
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from deepcollapse.cli.options import check_folder_kind
    from deepcollapse.dufm.classify import analyze_dufm

    check_folder_kind(args.dir, "dufm")
    summary = analyze_dufm(args.dir, write=not args.no_write)
    print(json.dumps(summary, indent=2)) if args.json else print_summary(summary)
    return 0
