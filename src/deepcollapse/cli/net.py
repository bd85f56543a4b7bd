"""``deepcollapse net``: train real networks (ResNet20 + bias-free MLP head) and resume interrupted runs.

Examples::

    deepcollapse net train --dataset digits --layers 4 --width 64 --reg dufm --lam 0.005 \\
        --lam-h 5e-6 --lr 0.05 --epochs 30 --out runs/digits
    deepcollapse net train --dataset cifar10 --data-dir ~/data --classes 0,1 --epochs 200 --out runs/c10
    deepcollapse net resume runs/c10
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from deepcollapse._core.checks import ConfigError


def _opt_int(s: str) -> int | None:
    return None if s.lower() in ("none", "all") else int(s)


def _floats(s: str) -> list[float]:
    try:
        return [float(v) for v in s.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"milestones == {s!r}, must be comma-separated fractions, e.g. 0.5,0.75.") from None


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "net", help="train ResNet20 (or MLP) + MLP head on digits / MNIST-1D / (Fashion-)MNIST / CIFAR-10"
    )
    sub = p.add_subparsers(dest="net_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    t = sub.add_parser(
        "train",
        help="train a network into a run folder",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    t.add_argument("--preset", help="start from a paper preset (see `deepcollapse net presets`)")
    t.add_argument("--smoke", action="store_true", help="with --preset: its seconds-long digits variant")
    t.add_argument("--config", help="NetConfig YAML (over the preset); explicit options override both")
    t.add_argument(
        "--dataset",
        choices=["digits", "mnist1d", "mnist", "fashion_mnist", "cifar10"],
        help="(default digits; digits and mnist1d ship with a package)",
    )
    t.add_argument("--data-dir", help="folder with the (Fashion-)MNIST IDX files or cifar-10-batches-py")
    t.add_argument("--classes", help="comma-separated original labels to keep, e.g. 0,1 (default all)")
    t.add_argument("--n-per-class", type=_opt_int, help="balanced training subsample per class (default all)")
    t.add_argument(
        "--n-test-per-class", type=_opt_int, help="balanced test subsample per class (default all)"
    )
    t.add_argument("--no-normalize", action="store_true", help="keep pixels in [0, 1]")
    t.add_argument("--backbone", choices=["resnet20", "mlp"], help="(default resnet20)")
    t.add_argument("--backbone-width", type=int, help="mlp backbone: width of H1 (default 256)")
    t.add_argument("--backbone-depth", type=int, help="mlp backbone: affine + ReLU layers (default 2)")
    t.add_argument("--feature-dim", type=_opt_int, help="bias-free projection of the 64 backbone channels")
    t.add_argument("--head-layers", type=int, help="number L of head weight matrices (default 4)")
    t.add_argument("--head-width", type=int, help="head width d_2..d_L (default 64)")
    t.add_argument("--loss", choices=["mse", "ce"], help="(default mse)")
    t.add_argument("--reg", choices=["dufm", "standard", "none"], help="(default dufm)")
    t.add_argument(
        "--lam", type=float, help="λ_W of the head (dufm) or weight decay (standard) (default 0.005)"
    )
    t.add_argument("--lam-h", type=float, help="λ_H1 on the backbone features (dufm) (default 5e-6)")
    t.add_argument(
        "--lam-h-scale",
        choices=["batch_mean", "dataset"],
        help="λ_H1 times the batch mean of ‖h1‖²/2 (batch_mean, default) or N times that (dataset: eq. (1))",
    )
    t.add_argument("--optimizer", choices=["sgd", "adam"], help="(default sgd)")
    t.add_argument("--momentum", type=float, help="(default 0.9)")
    t.add_argument("--lr", type=float, help="(default 0.05)")
    t.add_argument("--lr-schedule", choices=["constant", "multistep", "cosine"], help="(default multistep)")
    t.add_argument(
        "--milestones", type=_floats, help="multistep milestones as fractions of epochs (0.5,0.75)"
    )
    t.add_argument("--gamma", type=float, help="multistep factor (default 0.1)")
    t.add_argument("--epochs", type=int, help="(default 10)")
    t.add_argument("--batch-size", type=int, help="(default 128)")
    t.add_argument("--eval-every", type=int, help="epochs between collapse evaluations (default 1)")
    t.add_argument("--seed", type=int, help="(default 0)")
    t.add_argument("--device", choices=["auto", "cpu", "cuda", "mps"], help="(default auto)")
    t.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    t.add_argument("--amp", action="store_true", help="mixed precision (float16 + GradScaler on cuda)")
    t.add_argument("--channels-last", action="store_true", help="channels-last memory format (resnet20)")
    t.add_argument("--freeze-head", action="store_true", help="train the backbone only")
    t.add_argument("--head-init", help="DUFM run folder (or params.pt) providing W_1..W_L of the head")
    t.add_argument("--head-init-run", type=int, help="run index r in the DUFM params (default 0)")
    t.add_argument("--rank-rtol", type=float, help="relative rank threshold (default 1e-3)")
    t.add_argument("--out", required=True, help="run folder")
    t.add_argument("--force", action="store_true", help="replace an existing run in --out")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.set_defaults(func=_train)

    ps = sub.add_parser("presets", help="list the paper presets (2024 Figs. 2, 4, 9, 10; 2023 Fig. 1)")
    ps.set_defaults(func=_presets)

    r = sub.add_parser("resume", help="continue a run from its last checkpoint")
    r.add_argument("out", metavar="DIR", help="run folder")
    r.add_argument("--epochs", type=int, help="new total number of epochs")
    r.add_argument("--batch-size", type=int, help="new batch size (e.g. after running out of GPU memory)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.set_defaults(func=_resume)


def config_from_args(args: argparse.Namespace) -> Any:
    """Build a NetConfig: defaults, then ``--config`` YAML, then explicit options (named as the fields)."""
    from deepcollapse.nets.config import NetConfig

    base: dict[str, Any] = {}
    if args.preset:
        from deepcollapse.experiments.net_presets import net_preset

        base = net_preset(args.preset, args.smoke).to_dict()
    elif args.smoke:
        raise ConfigError("smoke == True, must come with --preset NAME.")
    if args.config:
        import yaml

        try:
            with open(args.config) as fh:
                loaded = yaml.safe_load(fh) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"config == {args.config!r}, must be a readable YAML file ({exc}).") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"config == {args.config!r}, must hold a mapping of NetConfig fields.")
        base.update(loaded)
    for field in dataclasses.fields(NetConfig):  # options are named as the fields (dashes for underscores)
        if field.type == "bool" or field.name not in vars(args):
            continue
        v = getattr(args, field.name)
        if v is not None:
            base[field.name] = v
    if args.no_normalize:
        base["normalize"] = False
    for flag in ("freeze_head", "amp", "channels_last"):
        if getattr(args, flag):
            base[flag] = True
    if isinstance(base.get("classes"), str):
        from deepcollapse.nets.data.datasets import parse_classes

        base["classes"] = parse_classes(base["classes"])
    return NetConfig.from_dict(base)


def _print_summary(summary: dict[str, Any], out: str) -> None:
    t = summary.get("epoch_time_mean_s")
    print(f"run folder: {out}")
    print(
        f"epochs {summary['epochs_done']}/{summary['epochs']}  train acc {summary.get('train_acc')}  "
        f"test acc {summary.get('test_acc')}  loss {summary.get('loss')}  "
        f"mean epoch time {'-' if t is None else f'{t:.2f} s'}"
    )
    for name, rec in summary.get("layers", {}).items():
        print(
            f"  {name:>4}: rank {rec['rank']}  effective rank {rec['effective_rank']}  DNC1 {rec['dnc1']}  "
            f"DNC2 cond {rec['dnc2_cond']}"
        )
    if summary.get("diverged"):
        print("warning: the loss diverged (non-finite); training stopped.")


def _presets(args: argparse.Namespace) -> int:
    from deepcollapse.experiments.net_presets import list_net_presets

    for p in list_net_presets():
        sweep = (
            "; sweep " + ", ".join(f"{k} over {len(v)} values" for k, v in p["sweep"].items())
            if p["sweep"]
            else ""
        )
        print(f"{p['name']:<24} {p['paper']} {p['figure']:<15} {p['seeds']} seeds{sweep}")
        print(f"{'':<24} {p['description']}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from deepcollapse.cli.options import field_options, user_words
    from deepcollapse.nets.config import NetConfig
    from deepcollapse.nets.train import train_net

    try:
        config = config_from_args(args)
    except ConfigError as exc:
        fields = [f.name for f in dataclasses.fields(NetConfig)] + ["milestones"]
        raise user_words(exc, field_options(fields, "net train")) from None
    summary = train_net(config, args.out, force=args.force, progress=not args.no_progress)
    _print_summary(summary, args.out)
    return 1 if summary.get("diverged") else 0


def _resume(args: argparse.Namespace) -> int:
    from deepcollapse.cli.options import check_folder_kind
    from deepcollapse.nets.train import resume_net

    check_folder_kind(args.out, "net")
    summary = resume_net(
        args.out, epochs=args.epochs, progress=not args.no_progress, batch_size=args.batch_size
    )
    _print_summary(summary, args.out)
    return 1 if summary.get("diverged") else 0
