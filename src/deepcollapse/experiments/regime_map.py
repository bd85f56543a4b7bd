"""The network regime map's settings and tables: :class:`RegimeMap` (the grid, the network, the conventions;
validated at construction), its sweep (:meth:`RegimeMap.spec`), the per-run and per-cell tables read from the
run folders (:func:`run_table`, :func:`cell_table`); where a setting lies on a map:
:mod:`deepcollapse.experiments.regime_location`.  The
experiment, its report and figures: :mod:`deepcollapse.experiments.net_regime_map`.

A map is a grid over weight decay ``lam`` × learning rate ``lr`` (× head ``width``, the GPU variant's third
axis), several seeds per cell, every run a :class:`~deepcollapse.nets.config.NetConfig` of ``base`` with
``conventions`` applied.  Every run folder's ``summary.json`` holds its outcome
(:mod:`deepcollapse.nets.outcome`: ``zero``, ``dnc``, ``srg_like``, ``low_rank``, ``full_rank``,
``not_converged``, ``diverged``); a cell holds the fraction of its seeds in each outcome with Wilson 95%
intervals, the ranks of every head layer at the outcome's two tolerances, the Gram distances of ``M~_L`` to
the SRG and the DNC Gram, accuracies, the loss and, where the regularisation is DUFM-like (``reg: dufm``),
``L_DNC`` and ``L_SRG`` of the DUFM with the run's own ``K, L, n, λ``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from deepcollapse._core.checks import ConfigError, check_float, check_int, one_of_message
from deepcollapse._core.config import ConfigMixin
from deepcollapse.nets.outcome import OUTCOMES

__all__ = [
    "CONVENTIONS",
    "PAPER_SETTINGS",
    "RegimeMap",
    "cell_table",
    "norm_curves",
    "run_table",
    "task_rows",
]

#: The training conventions a map may set (fields of :class:`~deepcollapse.nets.config.NetConfig`, issue 29):
#: weight decay on BatchNorm parameters and biases or not, coupled or decoupled weight decay, the MSE
#: normalisation, the initialisation scale of the head.
CONVENTIONS = ("wd_scope", "wd_mode", "mse_reduction", "head_init_scale")

#: The 2024 paper's settings marked on every map: (label, λ, η) -- Fig. 4 bottom and Fig. 10 on MNIST
#: (ResNet20 + 5-layer head, standard weight decay 0.04, lr 0.01; Fig. 10 varies λ at that lr).
PAPER_SETTINGS: tuple[tuple[str, float, float], ...] = (("paper Fig. 4 (MNIST)", 0.04, 0.01),)

_AXES = ("lam", "lr", "width")


def _axis(name: str, values: Any, integer: bool = False) -> list[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
        raise ConfigError(f"{name} == {values!r}, must list at least one value.")
    out: list[Any] = []
    for i, v in enumerate(values):
        where = f"{name}[{i}]"
        out.append(check_int(where, v, min=1) if integer else check_float(where, v, gt=0.0))
    if len(set(out)) != len(out):
        raise ConfigError(f"{name} == {list(values)!r}, must not repeat a value.")
    return sorted(out)


@dataclass(frozen=True)
class RegimeMap(ConfigMixin):
    """One regime map: the network (``base``), the grid (``lam`` × ``lr`` × ``width``), the conventions and
    the seeds.

    Validated at construction (``ConfigError`` naming the field, e.g. ``lam[1] == -0.01, must be > 0``;
    every run's :class:`~deepcollapse.nets.config.NetConfig` is built once, so a bad ``base`` field is
    refused before anything is written).  ``reproduce net-regime-map --config FILE.yaml`` reads one from YAML
    (these field names as keys, every key optional, unknown keys refused), e.g.
    ``configs/regime/fig4_conventions.yaml``.

    Attributes
    ----------
    name : str
        ``smoke``, ``laptop``, ``gpu`` or any label (shown in the report).
    base : dict
        NetConfig fields of every run (dataset, backbone, head ``layers``, ``n``, ``epochs``, ``reg`` ...).
    lam : list of float
        Weight decays (NetConfig ``lam``; with ``reg: standard`` the weight decay of every parameter), > 0.
    lr : list of float
        Learning rates (NetConfig ``lr``), > 0.
    width : list of int or None
        Head widths (NetConfig ``width``), the third axis; ``None``: ``base``'s width only.
    seeds : int
        Runs per cell (seeds ``0 .. seeds − 1``).
    conventions : dict
        Values of the :data:`CONVENTIONS` fields for every run (empty: NetConfig's defaults).
    variants : dict of str to dict, or None
        Named sets of :data:`CONVENTIONS` values, a further axis of the map (each cell runs under each
        variant, over ``conventions``); ``None``: ``conventions`` only.  E.g. ``{default: {}, decoupled:
        {wd_mode: decoupled}}`` measures one cell under two conventions.
    """

    name: str = "custom"
    base: dict[str, Any] = field(default_factory=dict)
    lam: list[float] = field(default_factory=lambda: [0.04])
    lr: list[float] = field(default_factory=lambda: [0.01])
    width: list[int] | None = None
    seeds: int = 3
    conventions: dict[str, Any] = field(default_factory=dict)
    variants: dict[str, dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.base, dict):
            raise ConfigError(f"base == {self.base!r}, must map NetConfig fields to values.")
        by_map = {"lam", "lr", "seed", *CONVENTIONS} | ({"width"} if self.width is not None else set())
        clash = sorted(set(self.base) & by_map)
        if clash:
            key = clash[0]
            where = "the map's seeds" if key == "seed" else f"the map's {key}"
            raise ConfigError(f"base[{key!r}] is set by {where}, must not be in base; give it as {key}.")
        object.__setattr__(self, "lam", _axis("lam", self.lam))
        object.__setattr__(self, "lr", _axis("lr", self.lr))
        if self.width is not None:
            object.__setattr__(self, "width", _axis("width", self.width, integer=True))
        object.__setattr__(self, "seeds", check_int("seeds", self.seeds, min=1))
        if not isinstance(self.conventions, dict):
            raise ConfigError(
                f"conventions == {self.conventions!r}, must map convention names ({', '.join(CONVENTIONS)}) "
                "to values."
            )
        for key in self.conventions:
            if key not in CONVENTIONS:
                raise ConfigError(one_of_message("conventions", key, CONVENTIONS))
        if self.variants is not None:
            if not isinstance(self.variants, dict) or not self.variants:
                raise ConfigError(
                    f"variants == {self.variants!r}, must map variant names to conventions (e.g. "
                    "{default: {}, decoupled: {wd_mode: decoupled}}), or be left out."
                )
            for name, conv in self.variants.items():
                if not isinstance(conv, dict):
                    raise ConfigError(f"variants[{name!r}] == {conv!r}, must map convention names to values.")
                for key in conv:
                    if key not in CONVENTIONS:
                        raise ConfigError(one_of_message(f"variants[{name!r}]", key, CONVENTIONS))
        self.spec()  # every run's NetConfig, validated now (one line naming the field)

    # --------------------------------------------------------------------------------------------------------
    @property
    def widths(self) -> list[int | None]:
        """The head widths of the grid (``[None]``: the base's).

        Returns
        -------
        list of int or None

        Examples
        --------
        >>> regime = RegimeMap(base={"dataset": "digits"}, lam=[0.01, 0.04], lr=[0.01], width=[32, 64],
        ...                    seeds=2)
        >>> regime.widths, RegimeMap(base={"dataset": "digits"}).widths
        ([32, 64], [None])
        """
        return list(self.width) if self.width is not None else [None]

    @property
    def cells(self) -> list[dict[str, Any]]:
        """Every cell's overrides ``{lam, lr[, width]}`` and its variant's conventions, in grid order.

        Returns
        -------
        list of dict
            ``lam`` × ``lr`` × ``width`` × variants, the last varying fastest.

        Examples
        --------
        >>> regime = RegimeMap(base={"dataset": "digits"}, lam=[0.01, 0.04], lr=[0.01], width=[32, 64],
        ...                    seeds=2)
        >>> regime.cells[:2]
        [{'lam': 0.01, 'lr': 0.01, 'width': 32}, {'lam': 0.01, 'lr': 0.01, 'width': 64}]
        """
        out = []
        variants = list((self.variants or {"": {}}).values())
        for lam, lr, width, conv in itertools.product(self.lam, self.lr, self.widths, variants):
            cell: dict[str, Any] = {"lam": lam, "lr": lr}
            if width is not None:
                cell["width"] = width
            out.append({**cell, **conv})
        return out

    def variant_of(self, overrides: dict[str, Any]) -> str:
        """The name of the variant a cell's ``overrides`` belong to (``""`` without variants).

        Parameters
        ----------
        overrides : dict
            A cell of :attr:`cells` (its :data:`CONVENTIONS` keys name the variant).

        Returns
        -------
        str

        Examples
        --------
        >>> regime = RegimeMap(base={"dataset": "digits"},
        ...                    variants={"default": {}, "decoupled": {"wd_mode": "decoupled"}})
        >>> [regime.variant_of(cell) for cell in regime.cells]
        ['default', 'decoupled']
        """
        conv = {k: v for k, v in overrides.items() if k in CONVENTIONS}
        for name, values in (self.variants or {}).items():
            if values == conv:
                return name
        return ""

    @property
    def total_runs(self) -> int:
        """The runs of the whole map: ``seeds`` per cell.

        Returns
        -------
        int
            ``len(cells) * seeds``.

        Examples
        --------
        >>> regime = RegimeMap(base={"dataset": "digits"}, lam=[0.01, 0.04], lr=[0.01], width=[32, 64],
        ...                    seeds=2)
        >>> regime.total_runs
        8
        """
        return len(self.cells) * self.seeds

    def spec(self, options: dict[str, Any] | None = None) -> Any:
        """The ``kind: net`` :class:`~deepcollapse.runs.sweep.SweepSpec` of the map (``options``: run options
        such as ``device``, applied to every run).

        Parameters
        ----------
        options : dict, optional
            NetConfig fields set in every run (over ``base`` and ``conventions``).

        Returns
        -------
        SweepSpec
            One point per cell, seeds ``0 .. seeds − 1``, named ``regime-<name>``.

        Examples
        --------
        >>> regime = RegimeMap(base={"dataset": "digits"}, lam=[0.01, 0.04], lr=[0.01], width=[32, 64],
        ...                    seeds=2)
        >>> spec = regime.spec({"device": "cpu"})
        >>> spec.kind, spec.name, len(spec.points), spec.seeds, spec.base["device"]
        ('net', 'regime-custom', 4, [0, 1], 'cpu')
        """
        from deepcollapse.runs.sweep import SweepSpec

        base = {**self.base, **self.conventions, **(options or {})}
        return SweepSpec(
            base=base,
            points=self.cells,
            seeds=list(range(self.seeds)),
            kind="net",
            name=f"regime-{self.name}",
        )

    def describe(self) -> str:
        """The settings in one paragraph (for the experiment's ``settings`` and the report).

        Returns
        -------
        str

        Examples
        --------
        >>> regime = RegimeMap(base={"dataset": "digits"}, lam=[0.01, 0.04], lr=[0.01], width=[32, 64],
        ...                    seeds=2)
        >>> regime.describe().split("; ")[1]
        'grid λ ∈ {0.01, 0.04} × η ∈ {0.01} × head width ∈ {32, 64}'
        """
        b = self.base

        def vals(v: Sequence[Any]) -> str:
            return "{" + ", ".join(f"{x:g}" for x in v) + "}"

        text = (
            f"{b.get('backbone', 'resnet20')} + {b.get('layers', 3)}-layer bias-free head"
            f"{'' if self.width else ' of width ' + str(b.get('width', 64))} on {b.get('dataset', 'digits')} "
            f"({b.get('n', 'all')} training and {b.get('n_test', 'all')} held-out images per class), "
            f"{b.get('reg', 'dufm')} regularisation, {_length(b)} of batch "
            f"{b.get('batch_size', 128)}, {b.get('optimizer', 'sgd')} (momentum {b.get('momentum', 0.9):g}), "
            f"{b.get('lr_schedule', 'multistep')} schedule; grid λ ∈ {vals(self.lam)} × η ∈ {vals(self.lr)}"
        )
        if self.width:
            text += f" × head width ∈ {vals(self.width)}"
        if self.variants:
            shown = "; ".join(
                f"{name}: " + (", ".join(f"{k} = {v}" for k, v in c.items()) or "as below")
                for name, c in self.variants.items()
            )
            text += f" × conventions ∈ {{{shown}}}"
        text += f"; {self.seeds} seeds per cell, {self.total_runs} runs"
        conv = ", ".join(f"{k} = {v}" for k, v in self.conventions.items())
        return text + (f"; conventions: {conv}" if conv else "; NetConfig's default conventions")


# ------------------------------------------------------------------------------------------------------------
# Tables
# ------------------------------------------------------------------------------------------------------------


def _length(base: dict[str, Any]) -> str:
    """How long a map's runs train, in words."""
    if base.get("until") == "converged":
        return f"until converged within {base.get('max_epochs')} epochs"
    return f"{base.get('epochs', 10)} epochs"


def norm_curves(regime: RegimeMap, out_dir: str | Path) -> pd.DataFrame:
    """The norms of every evaluation of every run of the map: one row per (run, epoch) with ``lam, lr, width,
    variant, seed, epoch``, ``bn_scale_norm`` (``‖γ‖`` of the BatchNorm scales) and ``W<l>`` (``‖W_l‖_F`` of
    head layer ``l``), read from the runs' ``metrics.jsonl``.

    Parameters
    ----------
    regime : RegimeMap
        The map.
    out_dir : str or Path
        Its folder.

    Returns
    -------
    pandas.DataFrame
        Empty when no run has recorded norms (run folders of earlier releases).

    Examples
    --------
    >>> import json, tempfile
    >>> regime = RegimeMap(name="tiny", base={"dataset": "digits"}, lam=[0.01], lr=[0.04], seeds=1)
    >>> out = Path(tempfile.mkdtemp())
    >>> task = regime.spec().tasks(out)[0]
    >>> Path(task.out_dir).mkdir(parents=True)
    >>> rec = {"epoch": 5, "bn_scale_norm": 2.0, "head_weight_norms": [1.0, 0.5]}
    >>> _ = (Path(task.out_dir) / "metrics.jsonl").write_text(json.dumps(rec) + "\\n")
    >>> norm_curves(regime, out)[["epoch", "bn_scale_norm", "W1", "W2"]].values.tolist()
    [[5.0, 2.0, 1.0, 0.5]]
    """
    from deepcollapse._core.io import read_jsonl

    rows = []
    for task in regime.spec().tasks(Path(out_dir)):
        path = Path(task.out_dir) / "metrics.jsonl"
        if not path.is_file():
            continue
        try:
            records = read_jsonl(path)
        except ConfigError:
            continue
        cfg = task.config
        variant = regime.variant_of(task.meta["overrides"]) if regime.variants else ""
        for rec in records:
            norms = rec.get("head_weight_norms")
            if not norms:
                continue
            row: dict[str, Any] = {
                "lam": cfg["lam"],
                "lr": cfg["lr"],
                "width": cfg["width"],
                "variant": variant,
                "seed": cfg["seed"],
                "epoch": rec["epoch"],
                "bn_scale_norm": rec.get("bn_scale_norm"),
            }
            row.update({f"W{l + 1}": v for l, v in enumerate(norms)})
            rows.append(row)
    return pd.DataFrame(rows)


def _read_summary(folder: Path) -> dict[str, Any] | None:
    from deepcollapse._core.io import read_json

    path = folder / "summary.json"
    if not path.is_file():
        return None
    try:
        data = read_json(path)
    except ConfigError:
        return None
    return data if isinstance(data, dict) else None


def run_table(regime: RegimeMap, out_dir: str | Path, options: dict[str, Any] | None = None) -> pd.DataFrame:
    """One row per finished run of the map in ``out_dir``: ``lam, lr, width, seed``, the outcome ``label``,
    ``bottleneck_rank``, the rank of every head layer (``rank_<name>``, at the outcome's ``rank_rtol``, and
    ``coarse_<name>`` at ``rank_rtol_coarse``), ``gram_to_srg``, ``gram_to_dnc``, ``train_acc``, ``test_acc``,
    ``loss``.  Runs without a ``summary.json`` (unfinished) are left out.

    Parameters
    ----------
    regime : RegimeMap
        The map.
    out_dir : str or Path
        Its folder (the sweep's).
    options : dict, optional
        The run options the map ran with (``device`` ...), as given to :meth:`RegimeMap.spec`.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> import json, tempfile
    >>> regime = RegimeMap(name="tiny", base={"dataset": "digits"}, lam=[0.01], lr=[0.04], seeds=2)
    >>> out = Path(tempfile.mkdtemp())
    >>> task = regime.spec().tasks(out)[0]  # one finished run, seed 0
    >>> Path(task.out_dir).mkdir(parents=True)
    >>> summary = {"outcome": {"label": "dnc"}, "train_acc": 1.0}
    >>> _ = (Path(task.out_dir) / "summary.json").write_text(json.dumps(summary))
    >>> run_table(regime, out)[["lam", "lr", "seed", "label", "train_acc"]].values.tolist()
    [[0.01, 0.04, 0, 'dnc', 1.0]]
    """
    tasks = regime.spec(options).tasks(Path(out_dir))
    runs = task_rows(tasks)
    if regime.variants and not runs.empty:
        names = {t.out_dir: regime.variant_of(t.meta["overrides"]) for t in tasks}
        finished = [t for t in tasks if _read_summary(Path(t.out_dir)) is not None]  # task_rows' rows
        runs.insert(3, "variant", [names[t.out_dir] for t in finished])
    return runs


def task_rows(tasks: Sequence[Any]) -> pd.DataFrame:
    """:func:`run_table`'s rows for any network sweep's tasks (a figure experiment's runs, too).

    Parameters
    ----------
    tasks : sequence of Task
        ``kind: net`` tasks (:meth:`~deepcollapse.runs.sweep.SweepSpec.tasks`).

    Returns
    -------
    pandas.DataFrame
        One row per task whose folder holds a ``summary.json``.

    Examples
    --------
    >>> import json, tempfile
    >>> regime = RegimeMap(name="tiny", base={"dataset": "digits"}, lam=[0.01], lr=[0.04], seeds=2)
    >>> out = Path(tempfile.mkdtemp())
    >>> task = regime.spec().tasks(out)[0]  # one finished run, seed 0
    >>> Path(task.out_dir).mkdir(parents=True)
    >>> summary = {"outcome": {"label": "dnc"}, "train_acc": 1.0}
    >>> _ = (Path(task.out_dir) / "summary.json").write_text(json.dumps(summary))
    >>> rows = task_rows(regime.spec().tasks(out))
    >>> len(rows), rows.loc[0, "label"]
    (1, 'dnc')
    """
    rows = []
    for task in tasks:
        s = _read_summary(Path(task.out_dir))
        if s is None:
            continue
        cfg = task.config
        o = s.get("outcome") or {}
        row: dict[str, Any] = {
            "lam": cfg["lam"],
            "lr": cfg["lr"],
            "width": cfg["width"],
            "seed": cfg["seed"],
            "label": o.get("label", "not_converged"),
            "bottleneck": o.get("bottleneck"),
            "bottleneck_rank": o.get("bottleneck_rank"),
            "gram_to_srg": o.get("gram_distance_srg"),
            "gram_to_dnc": o.get("gram_distance_dnc"),
            "train_acc": s.get("train_acc"),
            "test_acc": s.get("test_acc"),
            "loss": s.get("loss"),
            "epochs_done": s.get("epochs_done"),
            "stop_reason": s.get("stop_reason", "epochs"),
            "elapsed_s": s.get("elapsed_s"),
        }
        levels = _levels(cfg, s.get("n_train"))
        if levels is not None:  # DUFM-like regularisation: the DUFM's levels at the run's own K, L, n, λ
            row["L_DNC"], row["L_SRG"] = levels
        for name, r in (o.get("ranks") or {}).items():
            row[f"rank_{name}"] = r
        for name, r in (o.get("ranks_coarse") or {}).items():
            row[f"coarse_{name}"] = r
        rows.append(row)
    return pd.DataFrame(rows)


def _levels(cfg: dict[str, Any], n_train: Any) -> tuple[float, float | None] | None:
    from deepcollapse.nets.theory_levels import theory_levels

    if cfg.get("reg") != "dufm" or not n_train:
        return None
    comp = theory_levels(cfg, int(n_train))
    return None if comp is None or comp.loss_dnc is None else (float(comp.loss_dnc), comp.loss_srg)


def cell_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell ``(lam, lr, width)``: seeds, the fraction in each outcome with its Wilson 95% interval
    (``p_<label>``, ``p_<label>_lo``, ``p_<label>_hi``), the majority outcome and its agreement (seeds in it /
    seeds), mean ranks per layer at both tolerances, mean bottleneck rank, mean Gram distances, accuracies
    and loss; ``L_DNC`` / ``L_SRG`` where the runs have them (DUFM-like regularisation).

    Parameters
    ----------
    runs : DataFrame
        :func:`run_table`.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> runs = pd.DataFrame({"lam": 0.01, "lr": 0.04, "width": 64, "label": ["dnc", "dnc", "low_rank"]})
    >>> cell_table(runs)[["seeds", "outcome", "outcomes"]].values.tolist()
    [[3, 'dnc', 'dnc 2, low_rank 1']]
    """
    from deepcollapse.analysis.stats import wilson_interval

    if runs.empty:
        return pd.DataFrame()
    keys = ["lam", "lr", "width", *(["variant"] if "variant" in runs else [])]
    rank_cols = [c for c in runs.columns if c.startswith(("rank_", "coarse_"))]
    out = []
    for key, sub in runs.groupby(keys, sort=True):
        n = len(sub)
        row: dict[str, Any] = dict(zip(keys, key))
        row["seeds"] = n
        counts = sub["label"].value_counts()
        for label in OUTCOMES:
            k = int(counts.get(label, 0))
            lo, hi = wilson_interval(k, n)
            row[f"p_{label}"], row[f"p_{label}_lo"], row[f"p_{label}_hi"] = k / n, float(lo), float(hi)
        # majority: the most frequent label, ties broken by the order of OUTCOMES
        best = max(OUTCOMES, key=lambda lab: (int(counts.get(lab, 0)), -OUTCOMES.index(lab)))
        row["outcome"] = best
        row["agreement"] = int(counts.get(best, 0)) / n
        row["outcomes"] = ", ".join(f"{lab} {int(counts[lab])}" for lab in OUTCOMES if lab in counts)
        for c in (
            "bottleneck_rank",
            "gram_to_srg",
            "gram_to_dnc",
            "train_acc",
            "test_acc",
            "loss",
            "epochs_done",
            *(c for c in ("L_DNC", "L_SRG") if c in runs),
            *rank_cols,
        ):
            vals = pd.to_numeric(sub[c], errors="coerce") if c in sub else pd.Series(dtype=float)
            row[c] = float(vals.mean()) if vals.notna().any() else math.nan
        out.append(row)
    return pd.DataFrame(out)
