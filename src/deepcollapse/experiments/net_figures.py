"""The network figures, one table: one :class:`NetFigure` row per registered experiment.

A row holds what a figure needs and nothing it computes: its name, paper and figure, the base ``NetConfig``
fields, the sweep points, seeds, the smoke changes, the panels its report shows and the runtime in words.
:func:`figure_spec` turns a row into the ``kind: net`` sweep; the report bodies (one per figure *kind*:
``"dnc"``, the DNC panels, and ``"rank"``, the average rank against a swept value) read the row.

The rows, by family:

- the papers' paper-scale figures (:mod:`deepcollapse.experiments.net_presets` gives their settings and our
  choices; ``net train --preset NAME`` trains one run of a row): ``net-2024-fig2-bottom``, ``-fig4-cifar10``,
  ``-fig4-mnist``, ``-fig9-wd``, ``-fig9-lr``, ``-fig10``, ``net-2023-fig1``; full MNIST / CIFAR-10 from
  ``--data-dir``, their smoke variants on the bundled digits;
- the small real-data figures, the small counterparts of the 2024 paper's end-to-end figures with an MLP
  backbone (two affine + ReLU layers, :mod:`deepcollapse.nets.mlp_backbone`) in place of ResNet20 and the same
  bias-free 4-layer head, on data that ships with a package (scikit-learn's 8×8 digits; MNIST-1D generated
  offline by ``mnist1d``): ``real-<data>-rank-wd`` (2024 Figs. 9 left and 10: average rank against log2
  weight decay, DUFM-like regularisation -- ``λ`` on the head, ``λ_H1`` on the backbone output -- and
  standard -- ``λ`` on every parameter), ``-rank-lr`` (Fig. 9 right: against log2 learning rate) and ``-dnc``
  (Figs. 2 bottom and 4: the DNC panels, with the loss against the theory's levels);
- the 2024 MNIST figures a laptop trains, ResNet8 on the bundled ``mnist_5k`` subset (the comment above
  their rows says why each setting): ``real-mnist5k-fig4`` (Fig. 4 bottom: DNC1 per head layer, singular
  values, the cosine Gram of ``M~_5`` beside the SRG's), ``-fig10`` (Fig. 10: average rank against log2 weight
  decay), ``-fig2`` (Fig. 2 bottom: DUFM-like regularisation, the loss against ``L_DNC`` / ``L_SRG``).

**The small real-data settings** (the papers have no such runs): balanced training subsamples (digits 139 per
class of the fixed stratified split, MNIST-1D 200 per class of its 4000 training signals), batch 128, SGD with
momentum 0.9, lr 0.05 with a ×0.1 step at 50 % and 75 % of 200 (digits) / 100 (MNIST-1D) epochs, MSE loss,
``λ_H1 = 5e-4`` (``batch_mean``), MLP backbone of width 128 (digits) / 256 (MNIST-1D), head width 32.
Weight-decay grids run from values that keep every rank at ``K`` to values where the rank is well below ``K``
(the largest DUFM-like value on digits costs training accuracy). The small MLP does not fit MNIST-1D
completely in 100 epochs and its accuracy falls along the grids (and at small learning rates): read MNIST-1D
ranks together with the accuracy panel. Smoke variants: 30 samples per class, 40 epochs of batch 60, grid
ends, 2 seeds; the rank-vs-lr smoke points train ``⌈40 · max(lr) / lr⌉`` epochs (:func:`smoke_epochs`: 640 at
lr 0.0125, 40 at lr 0.2), so every point takes the ``lr × steps`` of the largest learning rate (in 40 epochs
the smallest one ends at chance accuracy and checks nothing).

**Smoke variants**: the row's ``smoke`` changes on the base, ``smoke_seeds`` seeds, and of each group of
points (one per value of ``split``, e.g. per regularisation) the first and the last; a rank-vs-lr row with
``smoke_lr_epochs`` gives each smoke point ``⌈epochs · max(lr) / lr⌉`` epochs (:func:`smoke_epochs`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deepcollapse._core.checks import check_choice
from deepcollapse.nets.data.names import DATASET_LABELS
from deepcollapse.runs.sweep import SweepSpec

__all__ = [
    "NET_FIGURES",
    "NET_PRESETS",
    "NET_RUNTIMES",
    "PRESET_DATA",
    "NetFigure",
    "figure_spec",
    "smoke_epochs",
]

#: The figure kinds, each with one report body.
KINDS = ("dnc", "rank")
#: The regularisation schemes of the real-data rows (one curve or panel each).
REGS = ("dufm", "standard")


@dataclass(frozen=True)
class NetFigure:
    """One network figure: its sweep (full size; ``smoke``: the changes of the smoke variant) and report.

    Attributes
    ----------
    name, paper, figure, what
        The experiment's name, paper (``"2024"``, ``"2023"``), figure and what it shows.
    kind
        ``"dnc"`` (DNC1 per layer, singular values, optional Gram and theory panels) or ``"rank"`` (average
        rank against the swept field ``x``).
    base
        ``NetConfig`` fields of every run.
    points
        Each point's changes to ``base`` (``[{}]``: one point).
    seeds, smoke_seeds
        Seeds of the full-size and of the smoke sweep.
    smoke
        Changes to ``base`` in the smoke variant.
    panels
        Optional parts of the report: ``"claims"`` (the section "On the regime map").
    runtime
        The expected runtime, in words.
    x
        The swept field of a rank figure (``"lam"``, ``"lr"``).
    split
        A field whose values get a panel (``"dnc"``) or a curve (``"rank"``) each, e.g. ``"reg"``.
    smoke_ends
        Smoke points: the first and the last of each group (``False``: the first two).
    smoke_lr_epochs
        Smoke points train :func:`smoke_epochs` epochs (a rank-vs-lr row).
    gram
        ``(layer, kind)`` of the head layer whose class-mean Gram a DNC figure shows (``None``: none).
    needs_dufm_head
        The head is a pre-trained DUFM, trained first (2023 Fig. 1).
    rank_figure
        The rank figure's file name (default ``<name>_rank``).
    apart
        A DNC figure's panels as figures of their own (``<name>_dnc1``, ``_sv``, ``_loss``; the presets').
    """

    name: str
    paper: str
    figure: str
    what: str
    kind: str
    base: Mapping[str, Any]
    points: Sequence[Mapping[str, Any]] = ({},)
    seeds: int = 3
    smoke: Mapping[str, Any] = field(default_factory=dict)
    smoke_seeds: int = 2
    panels: tuple[str, ...] = ()
    runtime: str = "minutes"
    x: str | None = None
    split: str | None = None
    smoke_ends: bool = True
    smoke_lr_epochs: bool = False
    gram: tuple[int, str] | None = None
    needs_dufm_head: bool = False
    rank_figure: str | None = None
    apart: bool = False

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, list(KINDS))

    @property
    def data(self) -> str:
        """Where the full-size runs read their data from, in words (:data:`PRESET_DATA` for the full
        datasets, else :data:`~deepcollapse.nets.data.names.DATASET_LABELS`).

        Returns
        -------
        str
            The words.

        Examples
        --------
        >>> NET_FIGURES["net-2024-fig4-mnist"].data.split(" (")[0]
        'full MNIST'
        """
        dataset = self.base["dataset"]
        return PRESET_DATA.get(dataset, DATASET_LABELS[dataset])

    # What a paper preset is called in ``net presets`` and by the importers of ``NET_PRESETS``.
    @property
    def description(self) -> str:
        """:attr:`what` (the preset listing's name for it)."""
        return self.what

    @property
    def config(self) -> Mapping[str, Any]:
        """:attr:`base` (the preset listing's name for it)."""
        return self.base

    @property
    def sweep(self) -> dict[str, list[Any]]:
        """A rank figure's swept values, ``{x: [values]}`` (``{}`` for a DNC figure)."""
        return {self.x: [p[self.x] for p in self.points]} if self.kind == "rank" and self.x else {}


def smoke_epochs(epochs: int, lr: float, lrs: Sequence[float]) -> int:
    """Epochs of a smoke rank-vs-lr point: ``⌈epochs · max(lrs) / lr⌉``.

    Every point then takes at least the ``lr × steps`` that the largest learning rate takes in ``epochs``
    (the number of steps per epoch is the same at every point), so a small learning rate is not left at
    chance accuracy for want of steps.

    Parameters
    ----------
    epochs : int
        The smoke epochs of the largest learning rate.
    lr : float
        The point's learning rate.
    lrs : sequence of float
        The experiment's learning rates.

    Returns
    -------
    int
        The point's epochs (``epochs`` at the largest learning rate).

    Examples
    --------
    >>> smoke_epochs(40, 0.0125, [0.0125, 0.2]), smoke_epochs(40, 0.2, [0.0125, 0.2])
    (640, 40)
    """
    return math.ceil(round(epochs * max(lrs) / lr, 9))


def _smoke_points(row: NetFigure) -> list[dict[str, Any]]:
    groups: dict[Any, list[dict[str, Any]]] = {}
    for p in row.points:
        groups.setdefault(p.get(row.split) if row.split else None, []).append(dict(p))
    keep = []
    for pts in groups.values():
        keep += ([pts[0], pts[-1]] if len(pts) > 2 else pts) if row.smoke_ends else pts[:2]
    return keep


def figure_spec(row: NetFigure, smoke: bool, **changes: Any) -> SweepSpec:
    """The ``kind: net`` sweep of figure ``row`` (full size, or its smoke variant; see the module docstring).

    Parameters
    ----------
    row : NetFigure
        A row of :data:`NET_FIGURES`.
    smoke : bool
        The smoke variant.
    **changes
        Changes to the base after the smoke changes (``data_dir``, ``head_init``).

    Returns
    -------
    SweepSpec
        Base configuration, points and seeds, named after the row.

    Examples
    --------
    >>> spec = figure_spec(NET_FIGURES["real-digits-rank-lr"], smoke=True)
    >>> spec.name, [(p["reg"], p["lr"], p["epochs"]) for p in spec.points][:2]
    ('real-digits-rank-lr', [('dufm', 0.0125, 640), ('dufm', 0.2, 40)])
    """
    base = {**row.base, **(row.smoke if smoke else {}), **changes}
    points = _smoke_points(row) if smoke else [dict(p) for p in row.points]
    if smoke and row.smoke_lr_epochs:
        lrs = [float(p["lr"]) for p in row.points]
        points = [{**p, "epochs": smoke_epochs(int(base["epochs"]), float(p["lr"]), lrs)} for p in points]
    seeds = list(range(row.smoke_seeds if smoke else row.seeds))
    return SweepSpec(base=base, points=points, seeds=seeds, kind="net", name=row.name)


# ------------------------------------------------------------------------------------------------------------
# The papers' paper-scale figures (the settings and our choices: net_presets' docstring)
# ------------------------------------------------------------------------------------------------------------

#: What each preset dataset reads, in words (``net presets``, the experiments' descriptions).
PRESET_DATA = {
    "mnist": "full MNIST (4 IDX files, 60 000 training images) from --data-dir (default data); never the "
    "bundled mnist_5k subset",
    "cifar10": "full CIFAR-10 (cifar-10-batches-py) from --data-dir (default data)",
}
# Expected full-size runtimes: no assumed FLOP rate.  Every run of these experiments (not --smoke) prints its
# runtime estimated from a short calibration on its own device first (experiments.net_runtime); the README's
# table of paper-scale runtimes on a GPU is computed from `make gpu-check`'s measured images/s
# (tools/runtime_table.py).  On a 2-core CPU a 200-epoch CIFAR-10 run takes days.
_GPU = (
    "estimated at the start from a calibration on the device (--device cuda: seeds batched); on one "
    "GPU: the README's table of paper-scale runtimes, where make gpu-check has measured it"
)

_CIFAR = {"dataset": "cifar10", "data_dir": "data"}
_MNIST = {"dataset": "mnist", "data_dir": "data"}
_LONG = {
    "epochs": 200,
    "batch_size": 128,
    "lr_schedule": "multistep",
    "lr_milestones": [0.5, 0.75],
    "optimizer": "sgd",
    "momentum": 0.9,
    "loss": "mse",
    "eval_every": 10,
}
_FIG2 = {
    **_CIFAR,
    **_LONG,
    "layers": 4,
    "width": 64,
    "reg": "dufm",
    "lam": 0.005,
    "lam_h": 5e-6,
    "lam_h_scale": "dataset",  # λ_H1 as in DUFM eq. (1), so its strength grows with n (net_presets)
    "lr": 0.05,
}
_FIG4_C10 = {**_CIFAR, **_LONG, "layers": 5, "width": 64, "reg": "standard", "lam": 0.08, "lr": 0.005}
_FIG4_MNIST = {**_MNIST, **_LONG, "layers": 5, "width": 64, "reg": "standard", "lam": 0.04, "lr": 0.01}
_FIG1_2023 = {
    **_CIFAR,
    "classes": [0, 1],
    "layers": 3,
    "width": 64,
    "freeze_head": True,
    "reg": "none",
    "optimizer": "sgd",
    "momentum": 0.0,
    "lr": 1e-5,
    "lr_schedule": "constant",
    "epochs": 10000,
    "batch_size": 128,
    "loss": "mse",
    "eval_every": 100,
}
# Smoke: bundled 8×8 digits, 20 per class, head width 16, 10 epochs of batch 20 (100 SGD steps), constant lr.
# The standard-regularisation presets use weight decay 0.005 and lr 0.05 (the paper's 0.04-0.08 on every
# parameter, BatchNorm included, sends 200 digits to the all-zero solution at chance accuracy); the 2023
# learning rate is raised (1e-5 -> 1e-2 with momentum 0.9: the paper's does not move in 100 steps).
_PRESET_SMOKE = {
    "dataset": "digits",
    "data_dir": None,
    "n": 20,
    "n_test": 10,
    "width": 16,
    "epochs": 10,
    "batch_size": 20,
    "eval_every": 1,
    "threads": 1,
    "device": "cpu",
    "lr_schedule": "constant",
}
_STANDARD_SMOKE = {**_PRESET_SMOKE, "lam": 0.005, "lr": 0.05}


def _preset(*args: Any, **fields: Any) -> NetFigure:
    """A paper preset's row: one smoke seed, the grid's first two values, the runtime from the device."""
    return NetFigure(*args, **{"smoke_seeds": 1, "smoke_ends": False, "runtime": _GPU, **fields})


_PRESET_ROWS = [
    _preset(
        "net-2024-fig2-bottom",
        "2024",
        "Fig. 2 (bottom)",
        "ResNet20 + 4-layer head on CIFAR-10, DUFM-like regularisation: loss vs L_DNC/L_SRG, DNC1 "
        "progression, singular values per layer",
        "dnc",
        _FIG2,
        seeds=5,
        smoke=_PRESET_SMOKE,
        gram=(3, "post"),
        apart=True,
    ),
    _preset(
        "net-2024-fig4-cifar10",
        "2024",
        "Fig. 4 (top)",
        "ResNet20 + 5-layer head on CIFAR-10, standard weight decay 0.08: DNC1, singular values, Gram of M_3",
        "dnc",
        _FIG4_C10,
        seeds=5,
        smoke=_STANDARD_SMOKE,
        gram=(3, "post"),
        apart=True,
    ),
    _preset(
        "net-2024-fig4-mnist",
        "2024",
        "Fig. 4 (bottom)",
        "ResNet20 + 5-layer head on MNIST, standard weight decay 0.04: DNC1, singular values, Gram of "
        "M~_5 (SRG)",
        "dnc",
        _FIG4_MNIST,
        seeds=5,
        smoke=_STANDARD_SMOKE,
        gram=(5, "pre"),
        apart=True,
    ),
    _preset(
        "net-2024-fig9-wd",
        "2024",
        "Fig. 9 (left)",
        "average head rank vs log2 weight decay, ResNet20 + 4-layer head on CIFAR-10 (DUFM-like)",
        "rank",
        _FIG2,
        [{"lam": 2.0**k} for k in range(-10, -4)],
        seeds=3,
        smoke=_PRESET_SMOKE,
        x="lam",
        rank_figure="net-2024-fig9-wd_rank_vs_lam",
    ),
    _preset(
        "net-2024-fig9-lr",
        "2024",
        "Fig. 9 (right)",
        "average head rank vs log2 learning rate, ResNet20 + 4-layer head on CIFAR-10 (DUFM-like)",
        "rank",
        _FIG2,
        [{"lr": 2.0**k} for k in range(-7, -2)],
        seeds=2,
        smoke=_PRESET_SMOKE,
        x="lr",
        rank_figure="net-2024-fig9-lr_rank_vs_lr",
    ),
    _preset(
        "net-2024-fig10",
        "2024",
        "Fig. 10",
        "average head rank vs log2 weight decay, ResNet20 + 5-layer head on MNIST (standard wd)",
        "rank",
        _FIG4_MNIST,
        [{"lam": 2.0**k} for k in range(-8, -3)],
        seeds=4,
        smoke=_STANDARD_SMOKE,
        x="lam",
        rank_figure="net-2024-fig10_rank_vs_lam",
    ),
    _preset(
        "net-2023-fig1",
        "2023",
        "Fig. 1",
        "frozen pre-trained 3-layer DUFM head (K = 2) on a random ResNet20; backbone trained on CIFAR-10 "
        "classes 0, 1; DNC across the head (set head_init to the DUFM run folder)",
        "dnc",
        _FIG1_2023,
        seeds=7,
        smoke={**_PRESET_SMOKE, "lr": 1e-2, "momentum": 0.9, "n": 40, "batch_size": 20},
        gram=(3, "post"),
        needs_dufm_head=True,
        apart=True,
    ),
]

# ------------------------------------------------------------------------------------------------------------
# The small real-data figures: MLP backbone on the 8×8 digits and MNIST-1D (net_real's docstring)
# ------------------------------------------------------------------------------------------------------------

_MLP: dict[str, Any] = {
    "backbone": "mlp",
    "backbone_depth": 2,
    "layers": 4,
    "width": 32,
    "loss": "mse",
    "lam_h": 5e-4,
    "lam_h_scale": "batch_mean",
    "optimizer": "sgd",
    "momentum": 0.9,
    "lr": 0.05,
    "lr_schedule": "multistep",
    "lr_milestones": [0.5, 0.75],
    "batch_size": 128,
    "eval_every": 0,
    "threads": 1,
    "device": "cpu",
}
# Smoke: 30 samples per class, 40 epochs of 5 batches; a second or two per run.
_MLP_SMOKE: dict[str, Any] = {"n": 30, "n_test": 10, "epochs": 40, "batch_size": 60}
_REAL_CPU = " on 2 CPU cores (idle to heavily shared)"


def _real_rows(
    base: dict[str, Any],
    smoke: dict[str, Any],
    wd: dict[str, list[float]],
    lrs: list[float],
    lam_at_lr: dict[str, float],
    dnc_lam: dict[str, float],
    runtime: dict[str, str],
) -> list[NetFigure]:
    """The three real-data figures of one dataset: rank vs weight decay, rank vs learning rate, DNC."""
    name = f"real-{base['dataset']}"
    how = f"; MLP backbone + 4-layer bias-free head on {DATASET_LABELS[base['dataset']]}, DUFM-like and "
    how += "standard regularisation"
    what = "average rank of the head's class means against"
    return [
        NetFigure(
            f"{name}-rank-wd",
            "2024",
            "Figs. 9 left, 10 (small)",
            f"{what} weight decay{how}",
            "rank",
            base,
            [{"reg": r, "lam": v} for r in REGS for v in wd[r]],
            smoke=smoke,
            runtime=runtime["wd"] + _REAL_CPU,
            x="lam",
            split="reg",
        ),
        NetFigure(
            f"{name}-rank-lr",
            "2024",
            "Fig. 9 right (small)",
            f"{what} learning rate{how}",
            "rank",
            base,
            [{"reg": r, "lam": lam_at_lr[r], "lr": v} for r in REGS for v in lrs],
            smoke=smoke,
            runtime=runtime["lr"] + _REAL_CPU,
            x="lr",
            split="reg",
            smoke_lr_epochs=True,
        ),
        NetFigure(
            f"{name}-dnc",
            "2024",
            "Figs. 2 bottom, 4 (small)",
            f"DNC1 per head layer, singular values, loss vs L_DNC / L_SRG{how}",
            "dnc",
            {**base, "eval_every": 5},
            [{"reg": r, "lam": dnc_lam[r]} for r in REGS],
            smoke={**smoke, "eval_every": 4},
            runtime=runtime["dnc"] + _REAL_CPU,
            split="reg",
        ),
    ]


_REAL_ROWS = [
    *_real_rows(
        {**_MLP, "dataset": "digits", "n": 139, "n_test": 35, "backbone_width": 128, "epochs": 200},
        _MLP_SMOKE,
        wd={"dufm": [0.002, 0.004, 0.008, 0.012, 0.016], "standard": [0.001, 0.002, 0.004, 0.006, 0.008]},
        lrs=[0.0125, 0.025, 0.05, 0.1, 0.2],
        lam_at_lr={"dufm": 0.008, "standard": 0.004},
        dnc_lam={"dufm": 0.008, "standard": 0.004},
        runtime={"wd": "30 runs of 5-40 s", "lr": "30 runs of 5-40 s", "dnc": "6 runs of 10-60 s"},
    ),
    *_real_rows(
        {**_MLP, "dataset": "mnist1d", "n": 200, "n_test": 89, "backbone_width": 256, "epochs": 100},
        {**_MLP_SMOKE, "backbone_width": 64},
        wd={
            "dufm": [0.00025, 0.0005, 0.001, 0.002, 0.004],
            "standard": [0.0001, 0.0002, 0.0005, 0.001, 0.002],
        },
        lrs=[0.0125, 0.025, 0.05, 0.1, 0.2],
        lam_at_lr={"dufm": 0.002, "standard": 0.0005},
        dnc_lam={"dufm": 0.001, "standard": 0.0005},
        runtime={"wd": "30 runs of 10-45 s", "lr": "30 runs of 10-45 s", "dnc": "6 runs of 15-60 s"},
    ),
]

# ------------------------------------------------------------------------------------------------------------
# The 2024 MNIST figures on the bundled mnist_5k subset, ResNet8 backbone
# ------------------------------------------------------------------------------------------------------------
# Backbone: ``resnet8``, the one-block-per-stage member of ResNet20's family (same stem, 16/32/64 channels,
# option-B shortcuts, pooling; :mod:`deepcollapse.nets.resnet`), with a third of ResNet20's basic blocks: a
# ResNet20 run of these sizes does not fit the ~15 minutes each experiment is given on 2 cores
# (``benchmarks/net_throughput.py`` measures the step rates). The paper-scale ResNet20 presets stay in
# :mod:`deepcollapse.experiments.net_presets` (``net-2024-fig4-mnist``, ``net-2024-fig10``) for a GPU and
# the full MNIST files.
#
# Our choices (the paper's are ResNet20, 60 000 images, 200 epochs): ``n`` training and ``n_test`` held-out
# images per class drawn from the 500 of each class by the seed, batch 64 (Fig. 10: 25), SGD momentum 0.9,
# MSE, multistep ×0.1 at 50 % and 75 % of the epochs, head width 64, rank threshold ``rank_rtol = 1e-3``
# (relative to the largest singular value). The paper's Fig. 4 MNIST pair (wd 0.04, lr 0.01) sends this
# network to the all-zero solution (chance accuracy, every rank 1) within 10 epochs, so Fig. 4 uses lr 0.05
# and weight decay ``2^-8``; Fig. 10's grid is ``2^-11, 2^-9, 2^-7`` (runs at ``2^-7`` can end at the all-
# zero solution: read the ranks with the accuracy panel). Smoke variants: 20 images per class, 40 epochs of
# batch 40 (200 SGD steps), 2 seeds (grid ends for Fig. 10).

_RESNET8: dict[str, Any] = {
    "dataset": "mnist_5k",
    "backbone": "resnet8",
    "width": 64,
    "loss": "mse",
    "optimizer": "sgd",
    "momentum": 0.9,
    "lr_schedule": "multistep",
    "lr_milestones": [0.5, 0.75],
    "batch_size": 128,
    "threads": 1,
    "device": "cpu",
}
_RESNET8_SMOKE: dict[str, Any] = {"n": 20, "n_test": 10, "epochs": 40, "batch_size": 40}  # 200 SGD steps

#: n λ_H1 of the paper's Fig. 2 bottom (λ_H1 = 5e-6 at n = 5000 per class, eq. (1)'s feature term).
PAPER_N_LAM_H1 = 0.025
#: What the laptop runs use: the paper's n λ_H1 (and a tenth of it) sends the 200-step pilot on 20 images per
#: class to the all-zero solution (chance accuracy, H1 shrunk to nothing); a hundredth of it learns.  λ_H1 is
#: still scaled as 1/n, so every n sees the same n λ_H1, the quantity L_DNC and L_SRG depend on.
N_LAM_H1 = PAPER_N_LAM_H1 / 100

# The paper's Fig. 4 MNIST setting, wd 0.04 with lr 0.01, heads for the all-zero solution here (chance
# accuracy, ranks falling to 1 within 10 epochs of 2 000 images in a pilot; so do wd 0.04 and 0.01 with lr
# 0.05, and one of two seeds at wd 2^-7 with 2 500 images): the laptop runs use lr 0.05 and wd 2^-8.
_M5K_FIG4 = {**_RESNET8, "layers": 5, "reg": "standard", "lam": 2.0**-8, "lr": 0.05, "batch_size": 64}
_M5K_FIG2 = {
    **_RESNET8,
    "layers": 4,
    "reg": "dufm",
    "lam": 0.005,
    "lam_h_scale": "dataset",
    "lam_h": N_LAM_H1 / 150,
    "lr": 0.05,
    "n": 150,
    "n_test": 100,
    "batch_size": 64,
}
_M5K_CPU = " on 2 CPU cores with --workers 2"
_M5K_HOW = f"; ResNet8 backbone + bias-free head on {DATASET_LABELS['mnist_5k']}"

_MNIST5K_ROWS = [
    NetFigure(
        "real-mnist5k-fig4",
        "2024",
        "Fig. 4 bottom (laptop)",
        "DNC1 per head layer, singular values, Gram of M~_5 vs the SRG Gram; standard weight decay"
        + _M5K_HOW,
        "dnc",
        {**_M5K_FIG4, "n": 150, "n_test": 100, "epochs": 40, "eval_every": 5},
        seeds=2,
        smoke={**_RESNET8_SMOKE, "eval_every": 10},
        panels=("claims",),
        gram=(5, "pre"),
        runtime="≈ 5–10 min, idle to busy (2 runs of 1 500 images × 40 epochs)" + _M5K_CPU,
    ),
    NetFigure(
        "real-mnist5k-fig10",
        "2024",
        "Fig. 10 (laptop)",
        "average rank of the head's class means against log2 weight decay; standard weight decay" + _M5K_HOW,
        "rank",
        {**_M5K_FIG4, "n": 50, "n_test": 50, "epochs": 50, "batch_size": 25, "eval_every": 0},
        [{"lam": 2.0**k} for k in (-11, -9, -7)],
        seeds=3,
        smoke={**_RESNET8_SMOKE, "eval_every": 0},
        panels=("claims",),
        runtime="≈ 10–30 min, idle to busy (9 runs of 500 images × 50 epochs)" + _M5K_CPU,
        x="lam",
    ),
    NetFigure(
        "real-mnist5k-fig2",
        "2024",
        "Fig. 2 bottom (laptop)",
        "training loss against L_DNC / L_SRG, DNC1 per head layer, singular values; DUFM-like "
        "regularisation" + _M5K_HOW,
        "dnc",
        {**_M5K_FIG2, "epochs": 40, "eval_every": 5},
        seeds=2,
        smoke={**_RESNET8_SMOKE, "lam_h": N_LAM_H1 / 20, "eval_every": 10},
        panels=("claims",),
        gram=(4, "pre"),
        runtime="≈ 5–15 min, idle to busy (2 runs of 1 500 images × 40 epochs)" + _M5K_CPU,
    ),
]

#: Every network figure by name, in the order of ``reproduce --list``.
NET_FIGURES: dict[str, NetFigure] = {row.name: row for row in (*_PRESET_ROWS, *_REAL_ROWS, *_MNIST5K_ROWS)}
#: The papers' paper-scale figures (``net train --preset NAME``, ``net presets``).
NET_PRESETS: dict[str, NetFigure] = {row.name: row for row in _PRESET_ROWS}
#: Where each preset's runtime comes from, in words (``reproduce --list``).
NET_RUNTIMES: dict[str, str] = {row.name: row.runtime for row in _PRESET_ROWS}
