"""``deepcollapse net``: train real networks (ResNet20 + bias-free MLP head) and resume interrupted runs.

Examples::

    deepcollapse net train --dataset digits --layers 4 --width 64 --reg dufm --lam 0.005 \\
        --lam-h 5e-6 --lr 0.05 --epochs 30 --out runs/digits
    deepcollapse net train --dataset cifar10 --data-dir ~/data --classes 0,1 --epochs 200 --out runs/c10
    deepcollapse net resume runs/c10
    deepcollapse net resume runs/sweep/points/base/seed_0 runs/sweep/points/base/seed_1 --batch-seeds 2
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from typing import Any

from deepcollapse._core.checks import ConfigError
from deepcollapse.cli.options import add_config_options, config_values, field_options, user_words
from deepcollapse.nets.config import NetConfig


def register(subparsers: Any) -> None:
    """Add ``net train | presets | resume`` to the ``deepcollapse`` parser.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The root parser's sub-parsers (``parser.add_subparsers()``).

    Returns
    -------
    None
        Adds the ``net`` command group (each sub-command sets ``func``).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["net", "train", "--dataset", "digits", "--epochs", "2", "--out", "runs/d"])
    >>> args.net_command, args.dataset, args.epochs, args.out
    ('train', 'digits', 2, 'runs/d')
    """
    p = subparsers.add_parser(
        "net", help="train ResNet20 (or MLP) + MLP head on digits / MNIST-1D / (Fashion-)MNIST / CIFAR-10"
    )
    sub = p.add_subparsers(dest="net_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    t = sub.add_parser("train", help="train a network into a run folder")
    t.add_argument(
        "--preset",
        help="start from a paper preset (see `deepcollapse net presets`); paper-scale presets read the full "
        "MNIST / CIFAR-10 files from the folder data (or --data-dir), never the bundled mnist_5k subset",
    )
    t.add_argument("--smoke", action="store_true", help="with --preset: its seconds-long digits variant")
    t.add_argument("--config", help="NetConfig YAML (over the preset); explicit options override both")
    # every NetConfig field is an option (its --help is the field); old spellings (RENAMES) are hidden aliases
    add_config_options(t, NetConfig, command="net train")
    t.add_argument("--out", required=True, help="run folder")
    t.add_argument("--force", action="store_true", help="replace an existing run in --out")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.set_defaults(func=_train)

    ps = sub.add_parser("presets", help="list the paper presets (2024 Figs. 2, 4, 9, 10; 2023 Fig. 1)")
    ps.set_defaults(func=_presets)

    r = sub.add_parser(
        "resume",
        help="continue runs from their last checkpoints (from epoch 0 if none was written yet); several "
        "folders (the seeds of one batched run) resume as one batch",
    )
    r.add_argument("out", metavar="DIR", nargs="+", help="run folder(s)")
    add_config_options(  # the fields a resumed run may change; not given = the run's own value
        r,
        NetConfig,
        include=("epochs", "max_epochs", "batch_size", "batch_seeds"),
        overrides={
            "epochs": {"help": "new total number of epochs", "shown_default": "the run's"},
            "max_epochs": {
                "help": "new budget of a run of --until converged (a run stopped at its budget continues "
                "exactly)",
                "shown_default": "the run's",
            },
            "batch_size": {
                "help": "new batch size (e.g. after running out of GPU memory)",
                "shown_default": "the run's",
            },
            "batch_seeds": {
                "help": "at most this many of the folders trained as one batch: auto, on, off or N (fewer "
                "after running out of GPU memory)",
                "shown_default": "the runs'",
            },
        },
        command="net resume",
    )
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.set_defaults(func=_resume)


def config_from_args(args: argparse.Namespace) -> Any:
    """Build a NetConfig: defaults, then ``--config`` YAML, then explicit options (named as the fields).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``net train`` command line (``--preset`` / ``--smoke`` start from a paper preset).

    Returns
    -------
    NetConfig
        The validated config (a bad value raises :class:`~deepcollapse.ConfigError`).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["net", "train", "--dataset", "digits", "--classes", "0,1,2",
    ...                           "--epochs", "2", "--out", "runs/d"])
    >>> config = config_from_args(args)
    >>> config.dataset, config.classes, config.epochs
    ('digits', [0, 1, 2], 2)
    """
    base: dict[str, Any] = {}
    if args.preset:
        from deepcollapse.experiments.net_presets import net_preset

        base = net_preset(args.preset, args.smoke).to_dict()
    elif args.smoke:
        raise ConfigError("smoke == True, must come with --preset NAME.")
    if args.config:
        from deepcollapse._core.io import read_yaml

        loaded = read_yaml(args.config, expected="NetConfig fields")
        base.update(NetConfig.upgrade_keys(loaded))  # old keys (n_per_class, ...) with a warning
    base.update(config_values(args, NetConfig))
    if isinstance(base.get("classes"), str):
        from deepcollapse.nets.data.datasets import parse_classes

        base["classes"] = parse_classes(base["classes"])
    if args.preset and not args.smoke:  # full data present before the run folder is made
        from deepcollapse.experiments.net_presets import check_preset_data

        check_preset_data(args.preset, base["dataset"], base.get("data_dir"))
    return NetConfig.from_dict(base)


def _print_summary(summary: Mapping[str, Any], out: str, config: Any = None) -> None:
    """The run's last evaluation for people (numbers through ``fmt_num``; summary.json has every digit) and,
    for a DUFM-like MSE run, its loss against the theory's L_DNC / L_SRG at its own K, L, n and λs."""
    from deepcollapse._core.format import fmt_num, fmt_table, fmt_time

    print(f"run folder: {out}")
    print(
        f"epochs {summary['epochs_done']}/{summary['epochs']}  "
        f"train acc {fmt_num(summary.get('train_acc'), 4)}  "
        f"test acc {fmt_num(summary.get('test_acc'), 4)}  loss {fmt_num(summary.get('loss'))}  "
        f"mean epoch time {fmt_time(summary.get('epoch_time_mean_s'))}"
    )
    layers = summary.get("layers") or {}
    if layers:
        rows = [
            {
                "layer": name,
                "rank": rec.get("rank"),
                "effective rank": rec.get("effective_rank"),
                "DNC1": rec.get("dnc1"),
                "DNC2 cond": rec.get("dnc2_cond"),
            }
            for name, rec in layers.items()
        ]
        print("\n".join("  " + line for line in fmt_table(rows, digits=4).splitlines()))
    if config is not None and summary.get("n_train") and summary.get("loss") is not None:
        _print_theory(summary, config)
    conv = summary.get("convergence")
    if conv:
        if conv.get("converged"):
            print(f"stopped at epoch {summary['epochs_done']}, converged: {conv['why']}")
        elif not summary.get("diverged"):
            import shlex

            more = 2 * int(summary["epochs_done"])
            print(
                f"stopped at --max-epochs {summary['epochs_done']} before converging; continue with: "
                f"deepcollapse net resume {shlex.quote(str(out))} --max-epochs {more}"
            )
    outcome = summary.get("outcome")
    if outcome:
        print(f"outcome: {outcome['label']} ({outcome['why']})")
    if summary.get("diverged"):
        print("warning: the loss diverged (non-finite); training stopped.")


def _print_theory(summary: Mapping[str, Any], config: Any) -> None:
    """A DUFM-like MSE run's loss beside L_DNC / L_SRG of the DUFM it trains (nets.theory_levels)."""
    from deepcollapse._core.format import fmt_num
    from deepcollapse.nets.theory_levels import dufm_problem, theory_levels

    problem = dufm_problem(config, int(summary["n_train"]))
    levels = theory_levels(config, int(summary["n_train"]))
    if problem is None or levels is None:
        return
    loss, dnc, srg = float(summary["loss"]), levels.loss_dnc, levels.loss_srg
    if dnc is None:  # pragma: no cover - compare gives L_DNC for every problem with λ > 0
        return
    print(
        f"DUFM of this run (reg dufm, MSE): K = {problem.classes}, L = {problem.layers}, n = {problem.n}, "
        f"λ_H1 = {fmt_num(problem.lam_h)}, λ_W = {fmt_num(problem.lam_w[0])}: "
        f"L_DNC = {fmt_num(dnc, 6)}, L_SRG = {fmt_num(srg, 6)}"
    )
    best = min(v for v in (dnc, srg) if v is not None)
    print(
        f"  loss {fmt_num(loss, 6)} = {fmt_num(loss / dnc, 4)} × L_DNC"
        + ("" if srg is None else f" = {fmt_num(loss / srg, 4)} × L_SRG")
        + f" (the backbone's H1 can approach, never beat, the DUFM optimum <= {fmt_num(best, 6)})"
    )


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
        print(f"{'':<24} data: {p['data']}; --smoke: the bundled 8×8 digits")
    return 0


def _train(args: argparse.Namespace) -> int:
    from deepcollapse.nets.train import train_net

    try:
        config = config_from_args(args)
    except ConfigError as exc:
        fields = [f.name for f in dataclasses.fields(NetConfig)]
        raise user_words(exc, {**field_options(fields, "net train"), "normalize": "--no-normalize"}) from None
    summary = train_net(config, args.out, force=args.force, progress=not args.no_progress)
    _print_summary(summary, args.out, config)
    return 1 if summary.get("diverged") else 0


def _resume(args: argparse.Namespace) -> int:
    from deepcollapse.cli.options import check_folder_kind

    for out in args.out:
        check_folder_kind(out, "net")
    if len(args.out) == 1 and args.batch_seeds is None:
        from deepcollapse.nets.train import resume_net

        summaries = [
            resume_net(
                args.out[0],
                epochs=args.epochs,
                progress=not args.no_progress,
                batch_size=args.batch_size,
                max_epochs=args.max_epochs,
            )
        ]
    else:
        from deepcollapse.nets.batched import resume_nets

        summaries = resume_nets(
            args.out,
            epochs=args.epochs,
            batch_size=args.batch_size,
            batch_seeds=args.batch_seeds,
            progress=not args.no_progress,
            max_epochs=args.max_epochs,
        )
    for summary, out in zip(summaries, args.out):
        _print_summary(summary, out, NetConfig.from_yaml(f"{out}/config.yaml"))
    return 1 if any(s.get("diverged") for s in summaries) else 0
