"""The network figures' reports: what they read from run folders, one body per figure kind, the registration.

Every row of :data:`~deepcollapse.experiments.net_figures.NET_FIGURES` becomes an experiment of the same name
(in the table's order) whose body trains the row's sweep (:func:`~deepcollapse.experiments.net_figures.
figure_spec`) and writes the report of its kind:

- ``"dnc"`` (:func:`dnc_body`): per group of runs (one per value of the row's ``split``, else one) DNC1 of
  every post-ReLU head feature over the epochs, the normalised singular values of ``M~_l`` at the end and,
  where the theory describes the runs (DUFM-like regularisation, MSE), the training loss against ``L_DNC``
  and ``L_SRG``; the DNC1 change table, the theory levels, the runs; with ``gram`` the cosine Gram of one
  layer's class means (pre-ReLU: beside the SRG's, with :func:`deepcollapse.nets.outcome.gram_distances`);
- ``"rank"`` (:func:`rank_body`): the average rank of ``M~_2 .. M~_L`` and the training accuracy against log2
  of the swept value, one curve per regularisation; the summary over seeds and the runs.

A row with panel ``"claims"`` adds the section "On the regime map" (its setting on the map, and whether the
paper's claim holds in its own runs: :mod:`deepcollapse.experiments.net_claims`).

**Average rank** (what Figs. 3, 9 and 10 plot): the mean numerical rank (``rank_rtol = 1e-3``, relative to the
largest singular value) of the pre-activation class-mean matrices ``M~_2, ..., M~_L`` of the head, the
matrices whose rank the SRG construction lowers to ``r ≈ √(2K)``; ``M_L = ReLU(M~_L)`` has rank ``K`` in every
good fit and ``H1`` is the backbone's, so neither enters.  The tables also give the mean rank of the post-ReLU
middle layers ``M_2 .. M_{L-1}`` (``avg_rank_post``) and the training accuracy: a run whose accuracy is at
chance has collapsed to the trivial (all-zero) solution, whose rank is 1 for a different reason.

**The theory levels**: :func:`deepcollapse.nets.theory_levels.theory_levels` at the run's ``K``, ``L``,
training-set size and ``λ`` values (DUFM-like regularisation is eq. (1) with ``λ_W = lam`` and ``λ_H1`` as its
``lam_h_scale`` says, :mod:`deepcollapse.nets.config`).  The network's ``H1`` is constrained by the backbone,
so its loss can approach, never beat, the DUFM optimum, which is at most ``min(L_DNC, L_SRG)``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deepcollapse.experiments.framework import Context, Experiment, register
from deepcollapse.experiments.net_figures import NET_FIGURES, PRESET_DATA, NetFigure, figure_spec
from deepcollapse.experiments.net_presets import check_preset_data
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.data.names import DATASET_LABELS
from deepcollapse.nets.theory_levels import theory_levels  # the one definition (nets may import theory)
from deepcollapse.runs.sweep import SweepResult, SweepSpec

__all__ = ["average_ranks", "dnc1_change", "dnc_body", "dnc_runs", "rank_body", "rank_table", "summarise"]

#: The swept fields of the rank figures, in words and symbols.
X_WORDS = {"lam": ("weight decay", "λ"), "lr": ("learning rate", "η")}
#: The regularisation schemes, in words.
REG_WORDS = {
    "dufm": "DUFM-like regularisation",
    "standard": "standard weight decay",
    "none": "no regularisation",
}

# ------------------------------------------------------------------------------------------------------------
# What the reports read from run folders
# ------------------------------------------------------------------------------------------------------------


def _records(folder: str | Path) -> list[dict[str, Any]]:
    from deepcollapse.analysis.tables import read_jsonl

    return read_jsonl(Path(folder) / "metrics.jsonl")


def average_ranks(record: Mapping[str, Any]) -> tuple[float, float]:
    """``(avg_rank, avg_rank_post)`` of one evaluation record: the mean rank of ``M~_2 .. M~_L`` and of the
    post-ReLU middle layers ``M_2 .. M_{L-1}`` (NaN where a layer has no rank or the head has no such
    layer).

    Parameters
    ----------
    record : mapping
        One record of a run's ``metrics.jsonl``; its ``layers`` entries have ``layer``, ``kind`` and ``rank``.

    Returns
    -------
    tuple of float
        ``(avg_rank, avg_rank_post)``.

    Examples
    --------
    >>> layers = [{"layer": 1, "kind": "post", "rank": 10}, {"layer": 2, "kind": "pre", "rank": 8},
    ...           {"layer": 2, "kind": "post", "rank": 7}, {"layer": 3, "kind": "pre", "rank": 6},
    ...           {"layer": 3, "kind": "post", "rank": 6}]
    >>> average_ranks({"layers": layers})
    (7.0, 7.0)
    """
    layers = record.get("layers", [])
    top = max((int(e["layer"]) for e in layers), default=1)
    pre = [e["rank"] for e in layers if e.get("kind") == "pre" and e.get("rank") is not None]
    post = [
        e["rank"]
        for e in layers
        if e.get("kind") == "post" and 2 <= int(e["layer"]) < top and e.get("rank") is not None
    ]
    return (float(np.mean(pre)) if pre else math.nan, float(np.mean(post)) if post else math.nan)


def rank_table(result: SweepResult) -> pd.DataFrame:
    """One row per run: ``reg, lam, lr, seed, train_acc, test_acc, loss, avg_rank, avg_rank_post`` and the
    rank of every head feature (``rank_<name>``), from the last evaluation of each run folder.

    Parameters
    ----------
    result : SweepResult
        A network sweep (:func:`~deepcollapse.experiments.net_figures.figure_spec`); runs without an
        evaluation are left out.

    Returns
    -------
    DataFrame
        The rows above.

    Examples
    --------
    A 2-epoch run on 100 digits (seconds):

    >>> import dataclasses, tempfile
    >>> from deepcollapse.runs.sweep import run_sweep
    >>> spec = figure_spec(NET_FIGURES["real-digits-dnc"], smoke=True)
    >>> tiny = {**spec.base, "epochs": 2, "eval_every": 1, "n": 10, "batch_size": 50}
    >>> spec = dataclasses.replace(spec, base=tiny, points=spec.points[:1], seeds=[0])
    >>> result = run_sweep(spec, tempfile.mkdtemp(), workers=1)
    >>> rank_table(result)[["reg", "lam", "seed"]].values.tolist()
    [['dufm', 0.008, 0]]
    """
    rows = []
    for task in result.spec.tasks(result.out_dir):
        recs = _records(task.out_dir)
        if not recs:
            continue
        rec, cfg = recs[-1], _full_config(task.config)
        avg, avg_post = average_ranks(rec)
        row = {
            "reg": cfg["reg"],
            "lam": cfg["lam"],
            "lr": cfg["lr"],
            "seed": cfg["seed"],
            "train_acc": rec.get("train_acc"),
            "test_acc": rec.get("test_acc"),
            "loss": rec.get("loss"),
            "avg_rank": avg,
            "avg_rank_post": avg_post,
        }
        for e in rec.get("layers", []):
            row[f"rank_{e['name']}"] = e.get("rank")
        rows.append(row)
    return pd.DataFrame(rows)


def summarise(runs: pd.DataFrame, x: str) -> pd.DataFrame:
    """Mean and sample std over seeds per ``(reg, x)``: ``avg_rank``, ``avg_rank_post``, accuracies, loss.

    Parameters
    ----------
    runs : DataFrame
        :func:`rank_table`'s rows.
    x : str
        The swept setting (``"lam"`` or ``"lr"``).

    Returns
    -------
    DataFrame
        ``reg``, ``x``, ``<metric>_mean`` and ``<metric>_std`` of each metric above, and ``seeds``.

    Examples
    --------
    >>> runs = pd.DataFrame({"reg": "dufm", "lam": [0.002, 0.002, 0.008], "avg_rank": [9.0, 8.0, 5.0],
    ...                      "avg_rank_post": [9.0, 8.0, 5.0], "train_acc": [1.0, 1.0, 0.9],
    ...                      "test_acc": [0.9, 0.9, 0.8], "loss": [0.1, 0.1, 0.2]})
    >>> summarise(runs, "lam")[["lam", "avg_rank_mean", "seeds"]].values.tolist()
    [[0.002, 8.5, 2.0], [0.008, 5.0, 1.0]]
    """
    cols = ["avg_rank", "avg_rank_post", "train_acc", "test_acc", "loss"]
    g = runs.groupby(["reg", x])[cols]
    mean, std = g.mean().add_suffix("_mean"), g.std(ddof=1).add_suffix("_std")
    out = pd.concat([mean, std], axis=1).reset_index()
    out["seeds"] = g.size().to_numpy()
    return out


def _n_train(task: Any, cfg: Mapping[str, Any]) -> int | None:
    """The run's training-set size: its ``summary.json`` once trained, else ``n`` per class × K."""
    summary = Path(task.out_dir) / "summary.json"
    if summary.is_file():
        return int(json.loads(summary.read_text())["n_train"])
    if cfg.get("n") is None:
        return None
    return int(cfg["n"]) * (len(cfg["classes"]) if cfg.get("classes") else 10)


def dnc_runs(
    tasks: list[Any],
) -> tuple[pd.DataFrame, dict[int, np.ndarray], pd.DataFrame, Mapping[str, Any] | None] | None:
    """What the DNC panels of a set of network runs show (:func:`~deepcollapse.analysis.net_real_plots.
    plot_dnc_panels`), read from their run folders.

    Parameters
    ----------
    tasks : list
        The sweep tasks of the runs (``out_dir`` and ``config`` each).

    Returns
    -------
    tuple or None
        ``(layers, singular_values, curves, levels)``: the per-layer metrics over the epochs (column ``run`` =
        the seed), the final singular values of ``M~_l`` for ``l >= 2`` stacked over runs, the training-loss
        curves, and the theory's ``L_DNC`` / ``L_SRG`` levels at the runs' problem (:func:`theory_levels`;
        ``None`` for runs it does not describe); ``None`` when no run has written metrics yet.

    Examples
    --------
    A 2-epoch run on 100 digits (seconds):

    >>> import dataclasses, tempfile
    >>> from deepcollapse.runs.sweep import run_sweep
    >>> spec = figure_spec(NET_FIGURES["real-digits-dnc"], smoke=True)
    >>> tiny = {**spec.base, "epochs": 2, "eval_every": 1, "n": 10, "batch_size": 50}
    >>> spec = dataclasses.replace(spec, base=tiny, points=spec.points[:1], seeds=[0])
    >>> result = run_sweep(spec, tempfile.mkdtemp(), workers=1)
    >>> layers, sv, curves, levels = dnc_runs(result.spec.tasks(result.out_dir))
    >>> sorted(sv), curves["epoch"].tolist(), levels.classes
    ([2, 3, 4], [0, 1, 2], 10)
    """
    from deepcollapse.analysis.tables import final_singular_values, layer_metrics_frame

    layers: list[pd.DataFrame] = []
    curves: list[pd.DataFrame] = []
    sv_acc: dict[int, list[np.ndarray]] = {}
    levels = None
    for t in tasks:
        df = layer_metrics_frame(t.out_dir, x="epoch")
        if df.empty:
            continue
        layers.append(df.assign(run=t.config["seed"]))
        recs = _records(t.out_dir)
        curves.append(
            pd.DataFrame({"epoch": [r["epoch"] for r in recs], "loss": [r.get("loss") for r in recs]}).assign(
                run=t.config["seed"]
            )
        )
        for layer, arr in final_singular_values(t.out_dir, kind="pre", x="epoch").items():
            sv_acc.setdefault(layer, []).append(arr)
        n_train = _n_train(t, t.config)
        levels = theory_levels(t.config, n_train) if n_train else None
    if not layers:
        return None
    sv = {}
    for layer, arrs in sorted(sv_acc.items()):
        if int(layer) >= 2:  # runs of other widths: pad with zeros to the widest
            k = max(a.shape[1] for a in arrs)
            sv[layer] = np.vstack([np.pad(a, ((0, 0), (0, k - a.shape[1]))) for a in arrs])
    return pd.concat(layers, ignore_index=True), sv, pd.concat(curves, ignore_index=True), levels


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


def _last_gram(folder: str | Path, layer: int, kind: str) -> np.ndarray | None:
    recs = _records(folder)
    for entry in recs[-1].get("layers", []) if recs else []:
        if entry.get("layer") == layer and entry.get("kind") == kind and "gram" in entry:
            return np.asarray(entry["gram"], dtype=float)
    return None


def _full_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A task's config with every ``NetConfig`` default filled in (the rows give only what they change)."""
    return NetConfig.from_dict(dict(config)).to_dict()


# ------------------------------------------------------------------------------------------------------------
# The bodies
# ------------------------------------------------------------------------------------------------------------


def _sweep(ctx: Context, row: NetFigure) -> SweepResult:
    """Train the row's sweep: full-size runs of a preset read ``--data-dir`` (checked first); a frozen-head
    row pre-trains its DUFM head."""
    changes: dict[str, Any] = {}
    if not ctx.smoke and "data_dir" in row.base:  # the full data, from --data-dir, before anything is trained
        changes["data_dir"] = ctx.data_dir or row.base["data_dir"]
        check_preset_data(row.name, row.base["dataset"], changes["data_dir"])
    if row.needs_dufm_head:
        cfg = _full_config({**figure_spec(row, ctx.smoke).base, "seed": 0})
        d1 = cfg.get("feature_dim") or 64  # ResNet20's pooled output has 64 channels
        changes["head_init"] = str(_pretrain_head(ctx, [int(d1)] + [int(cfg["width"])] * (cfg["layers"] - 1)))
    return ctx.sweep(figure_spec(row, ctx.smoke, **changes), "net")


#: The 2023 head: 3-layer DUFM of width 64, weight decay 1e-5, lr 1e-3, 1e6 full GD steps, K = 2 (2023
#: App. C).
DUFM_HEAD_2023: dict[str, Any] = {
    "classes": 2,
    "n": 50,
    "layers": 3,
    "lam": 1e-5,
    "lr": 1e-3,
    "steps": 1_000_000,
    "log_every": 10_000,
}


def _pretrain_head(ctx: Context, width: list[int]) -> Path:
    """Train the 2023 DUFM head (one seed) with the DUFM trainer; return its run folder."""
    from deepcollapse.experiments.dufm_helpers import SMOKE

    base = {**DUFM_HEAD_2023, "width": width}
    if ctx.smoke:
        base.update(SMOKE, steps=200)
    result = ctx.sweep(SweepSpec(base=base, seeds=[0], name="dufm-head"), "dufm_head")
    return Path(result.spec.tasks(result.out_dir)[0].out_dir)


def _what_ran(cfg: Mapping[str, Any], seeds: int) -> str:
    n = f"{cfg['n']} training images per class" if cfg.get("n") else "every training image"
    head = f"{cfg['backbone']} + {cfg['layers']}-layer bias-free head"
    data = DATASET_LABELS[cfg["dataset"]]
    return f"{data}, {n}; {head}, {REG_WORDS.get(cfg['reg'], cfg['reg'])}; {seeds} seeds"


def _groups(row: NetFigure, tasks: list[Any]) -> list[tuple[str | None, list[Any]]]:
    if row.split is None:
        return [(None, tasks)]
    out: dict[str, list[Any]] = {}
    for t in tasks:
        out.setdefault(str(t.config[row.split]), []).append(t)
    return list(out.items())


def _write_summary(ctx: Context, summary: pd.DataFrame, name: str, x: str, caption: str) -> None:
    """``tables/<name>.csv`` with every column; the report shows mean ± std."""
    (ctx.out_dir / "tables").mkdir(parents=True, exist_ok=True)
    summary.to_csv(ctx.out_dir / "tables" / f"{name}.csv", index=False)
    shown = summary[["reg", x, "seeds"]].copy()
    for c in ("avg_rank", "avg_rank_post", "train_acc", "test_acc"):
        shown[c] = [
            f"{m:.3g} ± {s:.2g}" if np.isfinite(s) else f"{m:.3g}"
            for m, s in zip(summary[f"{c}_mean"], summary[f"{c}_std"])
        ]
    ctx.report.add_table(shown, caption)


def dnc_body(row: NetFigure) -> Callable[[Context], None]:
    """The report of a ``"dnc"`` figure (see the module docstring).

    Parameters
    ----------
    row : NetFigure
        The figure.

    Returns
    -------
    callable
        The experiment's body.
    """

    def body(ctx: Context) -> None:
        from deepcollapse.analysis.net_real_plots import plot_dnc_figures, plot_dnc_panels

        result = _sweep(ctx, row)
        tasks = result.spec.tasks(result.out_dir)
        frames, theory, finals = [], [], []
        for group, sub in _groups(row, tasks):
            runs = dnc_runs(sub)
            if runs is None:
                continue
            layers, _, curves, levels = runs
            frames.append(layers)
            cfg = _full_config(sub[0].config)
            what = f"{_what_ran(cfg, len(sub))}, λ = {cfg['lam']}, lr {cfg['lr']}"
            captions = {  # what each panel shows, after what was trained
                "dnc1": "DNC1 of every post-ReLU head feature H_l over the epochs, median and 25–75 % over "
                "seeds",
                "sv": "singular values of M~_l at the end (normalised by the largest), mean ± std over seeds",
            }
            if levels is not None:
                captions["loss"] = (
                    "training loss (mean ± std over seeds) against L_DNC and L_SRG of the theory engine at "
                    f"K = {levels['classes']}, L = {levels['layers']}, n = {levels['n']}, "
                    f"λ_H1 = {levels['lam_h']:.3g}, λ_W = {cfg['lam']} "
                    f"(n λ_H1 = {levels['n'] * levels['lam_h']:.3g})"
                )
                final = curves.groupby("run")["loss"].last()
                finals.append(final)
                theory.append(
                    {"reg": cfg["reg"], "K": levels["classes"], "L": levels["layers"], "n": levels["n"]}
                    | {"lam_h1": levels["lam_h"], "lam_w": cfg["lam"], "L_DNC": levels["loss_dnc"]}
                    | {"L_SRG": levels["loss_srg"], "srg_construction": levels["srg_construction"]}
                    | {"final_loss_mean": float(final.mean())}
                    | {"final_loss_std": float(final.std(ddof=1)) if len(final) > 1 else math.nan}
                )
            ctx.report.section(f"Collapse in the head ({group or DATASET_LABELS[cfg['dataset']]})")
            if row.apart:  # the panels as figures of their own
                for key, fig in plot_dnc_figures(*runs).items():
                    name = f"{row.name}_{key}" if group is None else f"{row.name}_{group}_{key}"
                    ctx.figure(fig, name, f"{what}: {captions[key]}.")
            else:
                where = ["left", "middle", "right"] if levels is not None else ["left", "right"]
                shown = "; ".join(f"{w}: {c}" for w, c in zip(where, captions.values()))
                ctx.figure(plot_dnc_panels(*runs), f"{row.name}_{group or 'dnc'}", f"{what}. {shown}.")
        if not frames:
            return
        ctx.table(
            dnc1_change(pd.concat(frames, ignore_index=True)),
            f"{row.name}_dnc1",
            "DNC1 of H_l at the first and the last evaluation (mean over seeds).",
        )
        if theory:
            ctx.table(
                pd.DataFrame(theory),
                f"{row.name}_theory",
                "Final training loss (fit + regularisation) against the theory levels at the run's n and λ.",
            )
        runs = rank_table(result)
        _write_summary(
            ctx,
            summarise(runs, "lam"),
            f"{row.name}_summary",
            "lam",
            "Mean ± std over seeds (avg_rank: M~_2..M~_L; post: M_2..M_{L-1}).",
        )
        ctx.table(
            runs,
            f"{row.name}_runs",
            "Per run (last evaluation): training and held-out accuracy, loss (fit + regularisation), rank "
            "of every head feature (rank_rtol = 1e-3 unless the config says otherwise).",
        )
        if "claims" in row.panels:
            _claim_section(
                ctx, row, tasks, pd.concat(finals) if finals else None, theory[0] if theory else None
            )
        if row.gram is not None:
            _gram_panel(ctx, row, tasks, *row.gram)

    return body


def _claim_section(
    ctx: Context,
    row: NetFigure,
    tasks: list[Any],
    finals: pd.Series | None = None,
    theory: Mapping[str, Any] | None = None,
    runs: pd.DataFrame | None = None,
) -> None:
    """The report's "On the regime map" section: this setting on the map and whether the paper's claim holds
    in these runs (:mod:`deepcollapse.experiments.net_claims`)."""
    from deepcollapse.experiments.net_claims import fig2_claim, fig4_claim, fig10_claim
    from deepcollapse.experiments.regime_location import regime_section
    from deepcollapse.experiments.regime_map import task_rows

    cfg = _full_config(tasks[0].config)
    settings = sorted({(float(t.config.get("lam", cfg["lam"])), float(cfg["lr"])) for t in tasks})
    if runs is not None:  # a rank figure
        labels = task_rows(tasks)[["lam", "seed", "label"]]
        check = fig10_claim(runs.merge(labels, on=["lam", "seed"], how="left"))
    elif finals is not None and theory is not None:
        check = fig2_claim(finals, theory["L_DNC"], theory["L_SRG"])
    else:
        check = fig4_claim(task_rows(tasks))
    regime_section(ctx, settings, check.text)


def _gram_panel(ctx: Context, row: NetFigure, tasks: list[Any], layer: int, kind: str) -> None:
    """The cosine Gram of layer ``layer`` (``kind``-ReLU) of the first seed; pre-ReLU with K = 10: beside the
    SRG's and with the Gram distances of every seed."""
    from matplotlib.figure import Figure

    from deepcollapse.analysis.figures import plot_matrix
    from deepcollapse.nets.outcome import gram_distances
    from deepcollapse.theory.constructions.gram import cosine_gram, srg_pre_gram

    grams = [(t.config["seed"], g) for t in tasks if (g := _last_gram(t.out_dir, layer, kind)) is not None]
    if not grams:
        return
    srg = kind == "pre" and grams[0][1].shape[0] == 10
    sym = rf"\tilde M_{layer}" if kind == "pre" else f"M_{layer}"
    fig = Figure(figsize=(8.4 if srg else 4.4, 3.8))
    axes = fig.subplots(1, 2 if srg else 1, squeeze=False)[0]
    # cosine Grams (unit diagonal, entries in [-1, 1]) on one colour scale, -1 .. 1
    plot_matrix(
        cosine_gram(grams[0][1]),
        ax=axes[0],
        title=f"cosine Gram of ${sym}$ (seed 0)",
        symmetric=True,
        vmax=1.0,
    )
    caption = (
        f"Cosine-normalised Gram matrix of the class means of layer {layer} ({kind}-ReLU) at the end of "
        "training, first seed"
    )
    if srg:
        plot_matrix(
            srg_pre_gram(10),
            ax=axes[1],
            title=r"SRG's $\tilde M_L$ Gram (K = 10, r = 5)",
            symmetric=True,
            vmax=1.0,
        )
        caption += (
            ". Right: the SRG solution's Gram of M~_L before the ReLU (deepcollapse.theory.constructions."
            "gram.srg_pre_gram, the paper's Fig. 1 middle right); one colour scale, -1 to 1"
        )
    fig.tight_layout()
    ctx.figure(fig, f"{row.name}_gram", caption + ".")
    if srg:
        rows = []
        for seed, g in grams:
            to_dnc, to_srg = gram_distances(g)  # the outcome's measure: pre-ReLU SRG, best permutation
            rows.append({"seed": seed, "to_srg": to_srg, "to_dnc": to_dnc})
        ctx.table(
            pd.DataFrame(rows),
            f"{row.name}_gram_distance",
            f"Relative Frobenius distance of the cosine Gram of M~_{layer} to the SRG's pre-ReLU Gram (best "
            "class permutation) and to the DNC (identity) Gram: deepcollapse.nets.outcome.gram_distances, "
            "the measure of the run's outcome.",
        )


def rank_body(row: NetFigure) -> Callable[[Context], None]:
    """The report of a ``"rank"`` figure (see the module docstring).

    Parameters
    ----------
    row : NetFigure
        The figure; ``row.x`` is the swept field.

    Returns
    -------
    callable
        The experiment's body.
    """
    x = str(row.x)
    words, sym = X_WORDS[x]

    def body(ctx: Context) -> None:
        from deepcollapse.analysis.net_real_plots import plot_rank_sweep

        result = _sweep(ctx, row)
        tasks = result.spec.tasks(result.out_dir)
        runs = rank_table(result)
        if runs.empty:
            return
        summary = summarise(runs, x)
        seeds = int(summary["seeds"].min())
        cfg = _full_config(tasks[0].config)
        data = DATASET_LABELS[cfg["dataset"]]
        ctx.report.section(f"Average rank of the head's class means against {words} ({data})")
        title = f"Average rank against {words}: {_what_ran(cfg, seeds)}"
        ctx.figure(
            plot_rank_sweep(summary, x, title=title),
            f"{row.name}_rank" if row.rank_figure is None else row.rank_figure,
            f"Left: average rank of M~_2..M~_L (rank_rtol = {cfg['rank_rtol']}) at the end of training "
            f"against log2 {words} {sym}, one curve per regularisation, mean ± std over {seeds} seeds; "
            f"{_what_ran(cfg, seeds)}. Right: training accuracy (chance 1/K: a run there has reached "
            "the all-zero solution, whose ranks are low for that reason).",
        )
        _write_summary(
            ctx,
            summary,
            f"{row.name}_summary",
            x,
            "Mean ± std over seeds (avg_rank: M~_2..M~_L; post: M_2..M_{L-1}).",
        )
        ctx.table(runs, f"{row.name}_runs", "Per run (last evaluation).")
        if "claims" in row.panels:
            _claim_section(ctx, row, tasks, runs=runs)

    return body


def settings_text(row: NetFigure) -> str:
    """The row's settings in one line (``reproduce --list``): data, base fields, the points per group, seeds.

    Parameters
    ----------
    row : NetFigure
        The figure.

    Returns
    -------
    str
        The line.

    Examples
    --------
    >>> settings_text(NET_FIGURES["real-mnist5k-fig10"]).split("; ")[-2:]
    ['lam ∈ [0.00048828125, 0.001953125, 0.0078125]', '3 seeds (smoke: 2)']
    >>> settings_text(NET_FIGURES["real-digits-rank-lr"]).split("; ")[-2]
    'standard: lam = 0.004, lr ∈ [0.0125, 0.025, 0.05, 0.1, 0.2]'
    """
    skip = ("threads", "device", "data_dir", "dataset")
    base = ", ".join(f"{k} = {v}" for k, v in row.base.items() if k not in skip)
    groups: dict[Any, list[Mapping[str, Any]]] = {}
    for p in row.points:
        groups.setdefault(p.get(row.split) if row.split else None, []).append(p)
    grid = []
    for group, pts in groups.items():
        keys = [k for k in dict.fromkeys(k for p in pts for k in p) if k != row.split]
        parts = []
        for k in keys:
            values = list(dict.fromkeys(p[k] for p in pts))
            parts.append(f"{k} = {values[0]}" if len(values) == 1 else f"{k} ∈ {values}")
        if parts:
            grid.append((f"{group}: " if group is not None else "") + ", ".join(parts))
    return "; ".join(
        [DATASET_LABELS[row.base["dataset"]], base, *grid, f"{row.seeds} seeds (smoke: {row.smoke_seeds})"]
    )


for _row in NET_FIGURES.values():
    register(
        Experiment(
            _row.name,
            _row.paper,
            _row.figure,
            _row.what + (f"; data: {_row.data}" if _row.base["dataset"] in PRESET_DATA else ""),
            settings_text(_row),
            _row.runtime,
            "net",
            dnc_body(_row) if _row.kind == "dnc" else rank_body(_row),
        )
    )
