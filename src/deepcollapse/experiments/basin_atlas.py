"""The basin atlas's settings: :class:`Cell` (one setting), :class:`BasinAtlas` (base cell, slices, maps,
runs; validated at construction), the trainer config of a cell (:func:`cell_config`) and the atlas's tasks
(:func:`atlas_tasks`).  The experiment, its tables and figures: :mod:`deepcollapse.experiments.basins`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepcollapse._core.checks import ConfigError, check_choice, check_float, check_int
from deepcollapse._core.config import ConfigMixin
from deepcollapse._core.devices import check_cuda_device
from deepcollapse._core.io import read_json
from deepcollapse.dufm.config import DEVICES as DUFM_DEVICES
from deepcollapse.runs.executors import Task

if TYPE_CHECKING:
    from deepcollapse.dufm.config import DUFMConfig

__all__ = ["AXES", "BASIN_CLASSES", "BasinAtlas", "Cell", "atlas_tasks", "cell_config"]

#: The axes of the atlas: cell fields a slice or a map may vary.
AXES = ("width", "lam", "lr", "init_factor", "classes", "layers")
#: The classes counted, in the order of the figures (the trainer's labels, ``diverged`` last).
BASIN_CLASSES = ("dnc", "dnc_converging", "srg_like", "low_rank", "zero", "not_converged", "diverged")
_INT_AXES = ("width", "classes", "layers")


@dataclass(frozen=True)
class Cell:
    """One setting of the atlas: the problem (K, L, n, width d for every layer, λ for H_1 and every W_l) and
    the GD options (learning rate η, init scale α times the default initial stds)."""

    classes: int
    layers: int
    n: int
    width: int
    lam: float
    lr: float
    init_factor: float

    @property
    def id(self) -> str:
        """Folder name: ``K10_L4_n50_d32_lam0.004_lr0.5_a1``.

        Returns
        -------
        str
            ``K<classes>_L<layers>_n<n>_d<width>_lam<lam>_lr<lr>_a<init_factor>`` (numbers in ``%g`` form).

        Examples
        --------
        >>> Cell(10, 4, 50, 32, 0.004, 0.5, 1.0).id
        'K10_L4_n50_d32_lam0.004_lr0.5_a1'
        """
        return (
            f"K{self.classes}_L{self.layers}_n{self.n}_d{self.width}_lam{self.lam:g}_lr{self.lr:g}"
            f"_a{self.init_factor:g}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The cell's fields by name, in declaration order: its serialisation, spread into the rows of the
        atlas's tables (``{"cell": cell.id, **cell.to_dict(), ...}``,
        :func:`~deepcollapse.experiments.basins.basin_rows`), whose columns these names are.

        Returns
        -------
        dict
            ``classes``, ``layers``, ``n``, ``width``, ``lam``, ``lr``, ``init_factor``.

        Examples
        --------
        >>> Cell(10, 4, 50, 32, 0.004, 0.5, 1.0).to_dict()["width"]
        32
        """
        return {a: getattr(self, a) for a in ("classes", "layers", "n", "width", "lam", "lr", "init_factor")}


def _check_value(axis: str, where: str, v: Any) -> Any:
    if axis in _INT_AXES:
        return check_int(where, v, min={"width": 1, "classes": 2, "layers": 1}[axis])
    if axis == "lam":
        return check_float(where, v, ge=0.0)
    return check_float(where, v, gt=0.0)


@dataclass(frozen=True)
class BasinAtlas(ConfigMixin):
    """One basin atlas: a base cell, the slices (``axes``) and maps through it, and how many runs per cell.

    Validated at construction (``ConfigError`` naming the field as written here, e.g. ``axes['width'][1]``).
    ``reproduce basins --config FILE.yaml`` reads one from YAML (:meth:`from_yaml`: these field names as keys,
    every key optional; unknown keys refused), e.g. ``configs/basins/lr_init.yaml``.

    Attributes
    ----------
    name : str
        ``smoke``, ``laptop``, ``gpu`` or any label (shown in the report).
    classes, layers, n, width, lam, lr, init_factor
        The base cell (:class:`Cell`).
    axes : dict of str to list
        One-at-a-time slices through the base cell: axis name (:data:`AXES`) -> its values (non-empty).
    maps : list of (str, str)
        2-D maps: every combination of the two axes' values (both must be in ``axes``).
    runs : int
        GD runs per cell (seeds ``0 .. runs − 1``).
    runs_per_task : int
        Runs batched in one trainer call (``R``; the last call of a cell may hold fewer).
    steps : int
        GD steps per run.
    records : int
        Logged steps per run besides step 0 (``log_every = steps // records``; the classifier's plateau test
        needs a record at or before 90 % of the steps, so ``records >= 10``).
    loss, activation, eps
        The model family (:mod:`deepcollapse.family`).
    device : {'cpu', 'cuda', 'auto'}
        Where the trainer runs (``auto``: CUDA when present); ``reproduce basins --device`` sets it.
    best_known : str or None
        A ``best_known.csv`` of ``reproduce best-known`` for the reference losses (module docstring).
    rates : str or None
        A ``make gpu-check`` JSON (``benchmarks/gpu_check.py --out``, e.g. under ``benchmarks/results/``)
        whose measured rates give the runtime estimate printed before the atlas runs; ``None``: a short
        calibration on this machine's device
        (:func:`~deepcollapse.experiments.basin_runtime.estimate_runtime`).
    """

    name: str = "custom"
    classes: int = 10
    layers: int = 4
    n: int = 50
    width: int = 32
    lam: float = 0.004
    lr: float = 0.5
    init_factor: float = 1.0
    axes: dict[str, list[Any]] = field(default_factory=dict)
    maps: list[tuple[str, str]] = field(default_factory=list)
    runs: int = 16
    runs_per_task: int = 16
    steps: int = 10_000
    records: int = 10
    loss: str = "mse"
    activation: str = "relu"
    eps: float | None = None
    device: str = field(default="cpu", metadata={"choices": DUFM_DEVICES})
    best_known: str | None = None
    rates: str | None = None

    def __post_init__(self) -> None:
        for a in AXES:
            object.__setattr__(self, a, _check_value(a, a, getattr(self, a)))
        object.__setattr__(self, "n", check_int("n", self.n, min=1))
        if not isinstance(self.axes, dict):
            raise ConfigError(
                f"axes == {self.axes!r}, must map axis names ({', '.join(AXES)}) to value lists."
            )
        axes: dict[str, list[Any]] = {}
        for a, values in self.axes.items():
            check_choice("axes", a, AXES)
            if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
                raise ConfigError(
                    f"axes[{a!r}] == {values!r}, must list at least one value (leave the axis out to keep "
                    f"it at the base value {getattr(self, a)!r})."
                )
            axes[a] = sorted({_check_value(a, f"axes[{a!r}][{i}]", v) for i, v in enumerate(values)})
        object.__setattr__(self, "axes", axes)
        maps = []
        for i, pair in enumerate(self.maps):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2 or pair[0] == pair[1]:
                raise ConfigError(f"maps[{i}] == {pair!r}, must be two different axis names.")
            for a in pair:
                if a not in axes:
                    raise ConfigError(
                        f"maps[{i}] == {tuple(pair)!r}: axis {a!r} must also be in axes "
                        f"(given: {', '.join(axes) or 'none'})."
                    )
            maps.append((str(pair[0]), str(pair[1])))
        object.__setattr__(self, "maps", maps)
        object.__setattr__(self, "runs", check_int("runs", self.runs, min=1))
        object.__setattr__(self, "runs_per_task", check_int("runs_per_task", self.runs_per_task, min=1))
        object.__setattr__(self, "steps", check_int("steps", self.steps, min=1))
        object.__setattr__(self, "records", check_int("records", self.records, min=10))
        if self.records > self.steps:
            raise ConfigError(f"records == {self.records}, must be <= steps = {self.steps}.")
        check_choice("device", self.device, DUFM_DEVICES)
        check_cuda_device("device", self.device)
        if self.rates is not None:
            read_json(self.rates, hint="give the JSON that `benchmarks/gpu_check.py --out FILE` wrote")
        for c in self.cells():  # every cell must be a valid trainer config (CPU here: no CUDA query)
            cell_config(self, c, seed=0, runs=1, device="cpu")

    @property
    def base(self) -> Cell:
        """The base cell (every slice passes through it).

        Returns
        -------
        Cell
            The atlas's ``classes, layers, n, width, lam, lr, init_factor``.

        Examples
        --------
        >>> BasinAtlas(steps=100).base.id
        'K10_L4_n50_d32_lam0.004_lr0.5_a1'
        """
        return Cell(self.classes, self.layers, self.n, self.width, self.lam, self.lr, self.init_factor)

    def cells(self) -> list[Cell]:
        """Every distinct cell of the slices and maps, base first.

        Returns
        -------
        list of Cell
            The base cell, then each slice's cells, then each map's (a cell met twice is kept once).

        Examples
        --------
        >>> atlas = BasinAtlas(steps=100, axes={"width": [16, 32, 64]})
        >>> [c.width for c in atlas.cells()]
        [32, 16, 64]
        """
        base = self.base
        out = [base]
        for a, values in self.axes.items():
            out += [replace(base, **{a: v}) for v in values]
        for a, b in self.maps:
            out += [replace(base, **{a: u, b: v}) for u, v in itertools.product(self.axes[a], self.axes[b])]
        return list(dict.fromkeys(out))

    def slice_cells(self, axis: str) -> list[Cell]:
        """The cells of the slice along ``axis`` (the others at the base values), in axis order.

        Parameters
        ----------
        axis : str
            An axis of ``axes`` (:data:`AXES`).

        Returns
        -------
        list of Cell
            One per value of ``axes[axis]``, sorted.

        Examples
        --------
        >>> atlas = BasinAtlas(steps=100, axes={"lr": [1.0, 0.25]})
        >>> [c.lr for c in atlas.slice_cells("lr")]
        [0.25, 1.0]
        """
        return [replace(self.base, **{axis: v}) for v in self.axes[axis]]

    @property
    def total_runs(self) -> int:
        """The GD runs of the whole atlas: ``runs`` per distinct cell.

        Returns
        -------
        int
            ``len(cells()) * runs``.

        Examples
        --------
        >>> BasinAtlas(steps=100, runs=4, axes={"width": [16, 32]}).total_runs
        8
        """
        return len(self.cells()) * self.runs

    def to_dict(self) -> dict[str, Any]:
        """The atlas in plain YAML/JSON types (``axes`` and ``maps`` as lists).  A plain dict: the form
        written to the experiment's config file (``configs["basins"]``).

        Returns
        -------
        dict
            Every field by name; ``axes`` maps an axis to a list, ``maps`` is a list of two-item lists.

        Examples
        --------
        >>> d = BasinAtlas(steps=100, axes={"lr": [0.5, 1.0], "width": [8]}, maps=[("lr", "width")]).to_dict()
        >>> d["axes"], d["maps"]
        ({'lr': [0.5, 1.0], 'width': [8]}, [['lr', 'width']])
        """
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["axes"] = {a: list(v) for a, v in self.axes.items()}
        d["maps"] = [list(p) for p in self.maps]
        return d


def cell_config(
    atlas: BasinAtlas, cell: Cell, *, seed: int, runs: int, device: str | None = None
) -> DUFMConfig:
    """The :class:`~deepcollapse.dufm.config.DUFMConfig` (validated) of ``runs`` runs of ``cell`` from seed
    ``seed``: no polish (the classification does not use it), one checkpoint at the end.

    Parameters
    ----------
    atlas : BasinAtlas
        The atlas (steps, records, model family, device).
    cell : Cell
        The setting.
    seed, runs : int
        Run ``r`` of the trainer call uses seed ``seed + r``.
    device : str, optional
        Instead of ``atlas.device``.

    Returns
    -------
    DUFMConfig
        The trainer config (``.to_dict()``: the config a task carries, :func:`atlas_tasks`).

    Examples
    --------
    >>> atlas = BasinAtlas(steps=100, runs=4, runs_per_task=2)
    >>> cfg = cell_config(atlas, atlas.base, seed=2, runs=2)
    >>> cfg.classes, cfg.layers, cfg.seed, cfg.runs, cfg.log_every, cfg.polish
    (10, 4, 2, 2, 10, False)
    """
    from deepcollapse.dufm.config import DEFAULT_H1_SCALE, DUFMConfig

    a = cell.init_factor
    cfg = DUFMConfig(
        classes=cell.classes,
        n=cell.n,
        layers=cell.layers,
        width=cell.width,
        lam_h=cell.lam,
        lam_w=cell.lam,
        loss=atlas.loss,
        activation=atlas.activation,
        eps=atlas.eps,
        lr=cell.lr,
        steps=atlas.steps,
        runs=runs,
        seed=seed,
        log_every=max(1, atlas.steps // atlas.records),
        checkpoint_every=atlas.steps,
        init_scale=[a * DEFAULT_H1_SCALE] + [a / math.sqrt(cell.width)] * cell.layers,
        device=device or atlas.device,
        polish=False,
    )
    return cfg


def atlas_tasks(atlas: BasinAtlas, out: Path) -> list[Task]:
    """One ``dufm`` task per trainer call: each cell's runs in calls of ``runs_per_task``.

    Parameters
    ----------
    atlas : BasinAtlas
        The atlas.
    out : Path
        The experiment folder; task folders are ``points/<cell id>/s<first seed>``.

    Returns
    -------
    list of Task
        With ``meta = {"cell": cell id}``.

    Examples
    --------
    >>> from pathlib import Path
    >>> tasks = atlas_tasks(BasinAtlas(steps=100, runs=3, runs_per_task=2), Path("out"))
    >>> [Path(t.out_dir).name for t in tasks], tasks[0].meta
    (['s0', 's2'], {'cell': 'K10_L4_n50_d32_lam0.004_lr0.5_a1'})
    """
    tasks = []
    for cell in atlas.cells():
        for s0 in range(0, atlas.runs, atlas.runs_per_task):
            runs = min(atlas.runs_per_task, atlas.runs - s0)
            folder = out / "points" / cell.id / f"s{s0}"
            tasks.append(
                Task(
                    "dufm",
                    cell_config(atlas, cell, seed=s0, runs=runs).to_dict(),
                    str(folder),
                    cell.id,
                    {"cell": cell.id},
                )
            )
    return tasks
