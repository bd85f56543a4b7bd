"""The papers' end-to-end (real-network) experiments, registered from the presets of
:mod:`deepcollapse.experiments.net_presets` (2024 Figs. 2 bottom, 4, 9, 10; 2023 Fig. 1).

Each preset becomes an experiment of the same name: a ``kind: net`` sweep over the preset's seeds (and its
ablation grid for Figs. 9 and 10), run by the supervised trainer, then figures from the run folders: DNC1 per
head layer over the epochs and singular values of the class means at the end (mean ± std over seeds), the
class-mean Gram matrix of the middle layer of the first seed, and for ablations the average rank against log2
of the swept value. The 2023 experiment first pre-trains its 3-layer DUFM head with the DUFM trainer (K = 2)
and points the network's ``head_init`` at that run folder.  Full-size runs read the full MNIST / CIFAR-10
files from ``--data-dir`` of ``deepcollapse reproduce`` (default ``data``; checked before anything runs by
:func:`~deepcollapse.experiments.net_presets.check_preset_data`, never replaced by the bundled ``mnist_5k``
subset); the smoke variants use the bundled 8×8 digits.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deepcollapse.experiments.framework import Context, Experiment, register
from deepcollapse.experiments.net_presets import NET_PRESETS, NetPreset, check_preset_data, net_preset
from deepcollapse.runs.sweep import SweepResult, SweepSpec

__all__ = ["NET_RUNTIMES"]

# Expected full-size runtimes: no assumed FLOP rate.  Every run of these experiments (not --smoke) prints its
# runtime estimated from a short calibration on its own device first (experiments.net_runtime); the README's
# table of paper-scale runtimes on a GPU is computed from `make gpu-check`'s measured images/s
# (tools/runtime_table.py).  On a 2-core CPU a 200-epoch CIFAR-10 run takes days.
NET_RUNTIMES = {
    name: "estimated at the start from a calibration on the device (--device cuda: seeds batched); on one "
    "GPU: the README's table of paper-scale runtimes, where make gpu-check has measured it"
    for name in NET_PRESETS
}

# The Gram matrices shown by the papers' Fig. 4: M_3 for CIFAR-10, M~_5 for MNIST (layer, kind).
GRAM_PANELS = {"net-2024-fig4-cifar10": (3, "post"), "net-2024-fig4-mnist": (5, "pre")}

# The 2023 head: 3-layer DUFM of width 64, weight decay 1e-5, lr 1e-3, 1e6 full GD steps, K = 2 (2023 App. C).
DUFM_HEAD_2023: dict[str, Any] = {
    "classes": 2,
    "n": 50,
    "layers": 3,
    "lam": 1e-5,
    "lr": 1e-3,
    "steps": 1_000_000,
    "log_every": 10_000,
}


def _layers_frame(result: SweepResult) -> pd.DataFrame:
    from deepcollapse.analysis.tables import layer_metrics_frame

    frames = []
    for t in result.spec.tasks(result.out_dir):
        df = layer_metrics_frame(t.out_dir, x="epoch")
        if not df.empty:
            df["run"] = t.meta["seeds"][0]
            frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _final_sv(result: SweepResult) -> dict[Any, np.ndarray]:
    from deepcollapse.analysis.tables import final_singular_values

    acc: dict[Any, list[np.ndarray]] = {}
    for t in result.spec.tasks(result.out_dir):
        for layer, arr in final_singular_values(t.out_dir, kind="post", x="epoch").items():
            acc.setdefault(layer, []).append(arr)
    out = {}
    for layer, arrs in sorted(acc.items()):
        k = max(a.shape[1] for a in arrs)
        out[layer] = np.vstack([np.pad(a, ((0, 0), (0, k - a.shape[1]))) for a in arrs])
    return out


def _gram(result: SweepResult, layer: int, kind: str) -> np.ndarray | None:
    from deepcollapse.analysis.tables import read_jsonl

    tasks = result.spec.tasks(result.out_dir)
    if not tasks:
        return None
    recs = read_jsonl(Path(tasks[0].out_dir) / "metrics.jsonl")
    if not recs:
        return None
    for entry in recs[-1].get("layers", []):
        if entry.get("layer") == layer and entry.get("kind") == kind and "gram" in entry:
            return np.asarray(entry["gram"], dtype=float)
    return None


def _pretrain_head(ctx: Context, width: list[int]) -> Path:
    """Train the 2023 DUFM head (one seed) with the DUFM trainer; return its run folder."""
    from deepcollapse.experiments.dufm_helpers import SMOKE

    base = {**DUFM_HEAD_2023, "width": width}
    if ctx.smoke:
        base.update(SMOKE, steps=200)
    spec = SweepSpec(base=base, seeds=[0], name="dufm-head")
    result = ctx.sweep(spec, "dufm_head")
    return Path(result.spec.tasks(result.out_dir)[0].out_dir)


def _loss_panel(ctx: Context, preset: NetPreset, result: SweepResult) -> None:
    """2024 Fig. 2 bottom, left: the training loss over the epochs (mean ± std over seeds) against the optimal
    DNC and SRG losses of the theory engine at the run's K, L, n and λ values (DUFM-like regularisation, MSE
    only)."""
    import json

    from deepcollapse.analysis.figures import plot_loss_curves
    from deepcollapse.analysis.tables import read_jsonl
    from deepcollapse.nets.theory_levels import theory_levels

    curves, levels = [], None
    for t in result.spec.tasks(result.out_dir):
        folder = Path(t.out_dir)
        if not (folder / "summary.json").is_file():
            continue
        n_train = int(json.loads((folder / "summary.json").read_text())["n_train"])
        levels = theory_levels(t.config, n_train)
        if levels is None:
            return
        recs = [r for r in read_jsonl(folder / "metrics.jsonl") if r.get("epoch", 0) > 0]
        curves.append(
            pd.DataFrame({"step": [r["epoch"] for r in recs], "loss": [r.get("loss") for r in recs]})
        )
        curves[-1]["run"] = t.config["seed"]
    if levels is None or not curves:
        return
    fig, ax = plot_loss_curves(
        pd.concat(curves, ignore_index=True),
        levels["loss_dnc"],
        levels["loss_srg"],
        label="network (mean ± std)",
    )
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss (fit + regularisation)")
    ctx.report.section("Training loss against the theory (2024 Fig. 2 bottom, left)")
    ctx.figure(
        fig,
        f"{preset.name}_loss",
        "Training loss on the training set (mean ± std over seeds) against L_DNC and L_SRG from "
        f"deepcollapse.theory.compare at K = {levels['classes']}, L = {levels['layers']}, n = {levels['n']}, "
        f"λ_H1 = {levels['lam_h']:.3g}, λ_W = {levels['lam_w'][0]:.3g} (the run's DUFM-equivalent values).",
    )


def _net_body(preset: NetPreset) -> Callable[[Context], None]:
    def body(ctx: Context) -> None:
        from deepcollapse.analysis.figures import (
            plot_layer_metric,
            plot_matrix,
            plot_singular_values,
            plot_sweep_curve,
        )

        cfg = net_preset(preset.name, ctx.smoke).to_dict()
        cfg.pop("seed", None)
        if not ctx.smoke:  # the full data, from --data-dir, before anything is trained
            cfg["data_dir"] = ctx.data_dir or cfg["data_dir"]
            check_preset_data(preset.name, cfg["dataset"], cfg["data_dir"])
        if preset.needs_dufm_head:
            d1 = cfg.get("feature_dim") or 64  # ResNet20's pooled output has 64 channels
            head = _pretrain_head(ctx, [int(d1)] + [int(cfg["width"])] * (int(cfg["layers"]) - 1))
            cfg["head_init"] = str(head)
        grid = {k: (v[:2] if ctx.smoke else v) for k, v in preset.sweep.items()}
        n_seeds = 1 if ctx.smoke else preset.seeds
        spec = SweepSpec(base=cfg, grid=grid, seeds=list(range(n_seeds)), kind="net", name=preset.name)
        result = ctx.sweep(spec, "net")
        if grid:
            ctx.report.section("Average rank of the head's class means against the swept parameter")
            for key in grid:
                fig, _ = plot_sweep_curve(result.summary, key, "mean_rank", log2x=True, ylabel="average rank")
                ctx.figure(
                    fig,
                    f"{preset.name}_rank_vs_{key}",
                    f"Average rank (intermediate head layers) against log2 {key}, mean ± std over seeds.",
                )
        else:
            _loss_panel(ctx, preset, result)
            ctx.report.section("Collapse in the head (mean ± std over seeds)")
            layers = _layers_frame(result)
            if not layers.empty and "dnc1" in layers:
                fig, _ = plot_layer_metric(layers, "dnc1", x="epoch")
                ctx.figure(fig, f"{preset.name}_dnc1", "DNC1 per head layer (post-ReLU) over the epochs.")
            sv = _final_sv(result)
            if sv:
                fig, _ = plot_singular_values(sv)
                ctx.figure(
                    fig, f"{preset.name}_sv", "Singular values of the class means per layer at the end."
                )
            layer, kind = GRAM_PANELS.get(preset.name, (max(2, (int(cfg["layers"]) + 1) // 2 + 1), "post"))
            gram = _gram(result, layer, kind)
            if gram is not None:
                sym = "\\tilde M" if kind == "pre" else "M"
                fig, _ = plot_matrix(gram, title=f"Gram of ${sym}_{layer}$ (seed 0)")
                ctx.figure(
                    fig,
                    f"{preset.name}_gram",
                    f"Class-mean Gram matrix of layer {layer} ({kind}-ReLU), "
                    "first seed, as given by the trainer's metrics.",
                )
        ctx.report.section("Results")
        keys = list(grid)
        from deepcollapse.analysis.tables import format_mean_std

        (ctx.out_dir / "tables").mkdir(parents=True, exist_ok=True)
        result.summary.to_csv(ctx.out_dir / "tables" / f"{preset.name}_summary.csv", index=False)
        shown = format_mean_std(
            result.summary, ["point", *keys], ["train_acc", "test_acc", "loss", "mean_rank"]
        )
        ctx.report.add_table(shown, "Mean ± std over seeds.")
        rank_cols = [c for c in result.runs.columns if c.startswith(("rank_", "dnc1_"))]
        ctx.table(
            result.runs,
            f"{preset.name}_runs",
            "Per run (last evaluation).",
            columns=["point", *keys, "seed", "train_acc", "test_acc", "loss", *rank_cols],
        )

    return body


for _p in NET_PRESETS.values():
    _settings = ", ".join(f"{k} = {v}" for k, v in _p.config.items() if k not in ("data_dir",))
    if _p.sweep:
        _settings += "; sweep " + "; ".join(f"{k} ∈ {v}" for k, v in _p.sweep.items())
    _settings += f"; {_p.seeds} seeds"
    register(
        Experiment(
            _p.name,
            _p.paper,
            _p.figure,
            f"{_p.description}; data: {_p.data}",
            _settings,
            NET_RUNTIMES.get(_p.name, "hours on a GPU"),
            "net",
            _net_body(_p),
        )
    )
