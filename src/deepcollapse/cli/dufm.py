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
from typing import Any

from deepcollapse._checks import ConfigError

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
    t.add_argument("--force", action="store_true", help="overwrite an existing run in --out")
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
    r.add_argument("--no-progress", action="store_true")
    r.add_argument("--json", action="store_true", help="print the summary as JSON")
    r.set_defaults(func=_resume)

    a = sub.add_parser("analyze", help="classify the runs of a folder and compare with L_DNC / L_SRG")
    a.add_argument("dir", help="run folder")
    a.add_argument("--json", action="store_true", help="print the full analysis as JSON")
    a.add_argument("--no-write", action="store_true", help="do not (re)write summary.json")
    a.set_defaults(func=_analyze)


def build_config(args: argparse.Namespace) -> Any:
    """DUFMConfig from ``--config`` (if any), then ``--lam``, then every explicit option."""
    from deepcollapse.models.dufm import DUFMConfig

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


def _train(args: argparse.Namespace) -> int:
    from deepcollapse.training.dufm import train_dufm

    config = build_config(args)
    if args.max_steps is not None and args.max_steps < 0:
        raise ConfigError(f"max_steps == {args.max_steps}, must be >= 0.")
    summary = train_dufm(
        config, args.out, force=args.force, progress=not args.no_progress, max_steps=args.max_steps
    )
    print(json.dumps(summary, indent=2)) if args.json else print_summary(summary)
    return 0


def _resume(args: argparse.Namespace) -> int:
    from deepcollapse.training.dufm import resume_dufm

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
    from deepcollapse.training.dufm_analysis import analyze_dufm

    summary = analyze_dufm(args.dir, write=not args.no_write)
    print(json.dumps(summary, indent=2)) if args.json else print_summary(summary)
    return 0
