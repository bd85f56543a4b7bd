"""Where a setting lies on a network regime map (:mod:`deepcollapse.experiments.regime_map`):
:func:`locate` (the nearest cell of a grid in log scale), :func:`find_map` (a finished map next to an
experiment's folder) and :func:`regime_section`, the "On the regime map" section of the figure experiments'
reports (the ``real-mnist5k`` figures place their setting on the map and say whether the paper's claim holds
in their runs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deepcollapse.experiments.regime_map import RegimeMap

__all__ = [
    "CELLS_TABLE",
    "SETTINGS_FILE",
    "MapLocation",
    "find_map",
    "locate",
    "panel_name",
    "regime_section",
]


# ------------------------------------------------------------------------------------------------------------
# Where a setting lies on a map
# ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MapLocation:
    """The cell of a map nearest to a setting (in log λ and log η) and whether the setting is a grid cell.

    Attributes
    ----------
    lam, lr : float
        The setting.
    cell_lam, cell_lr : float
        The nearest cell's.
    on_grid : bool
        The setting is that cell (to 1e-9 relative).
    inside : bool
        The setting lies within the grid's ranges of λ and η.
    steps : float
        log-distance to the cell in units of the grid's steps (max over the two axes; 0 on the grid).
    """

    lam: float
    lr: float
    cell_lam: float
    cell_lr: float
    on_grid: bool
    inside: bool
    steps: float

    def describe(self) -> str:
        """The location in words.

        Returns
        -------
        str
            Whether the setting is a cell of the map, else where it lies and its nearest cell.

        Examples
        --------
        >>> locate([0.01, 0.04], [0.01, 0.04], 0.04, 0.01).describe()
        'λ = 0.04, η = 0.01 is a cell of the map'
        >>> locate([0.01, 0.04], [0.01, 0.04], 0.16, 0.01).describe().split("; ")[0]
        "λ = 0.16, η = 0.01 lies outside the map's grid"
        """
        if self.on_grid:
            return f"λ = {self.lam:g}, η = {self.lr:g} is a cell of the map"
        where = "inside" if self.inside else "outside"
        return (
            f"λ = {self.lam:g}, η = {self.lr:g} lies {where} the map's grid; the nearest cell is λ = "
            f"{self.cell_lam:g}, η = {self.cell_lr:g} ({self.steps:.2g} grid steps away in log scale)"
        )


def _step(values: np.ndarray) -> float:
    lv = np.log(np.sort(values))
    return float(np.median(np.diff(lv))) if len(lv) > 1 else 1.0


def locate(lam_values: Sequence[float], lr_values: Sequence[float], lam: float, lr: float) -> MapLocation:
    """The cell of a ``lam_values`` × ``lr_values`` grid nearest to ``(lam, lr)`` in log scale.

    Parameters
    ----------
    lam_values, lr_values : sequence of float
        The grid's axes (positive).
    lam, lr : float
        The setting (positive).

    Returns
    -------
    MapLocation

    Examples
    --------
    >>> loc = locate([0.01, 0.04], [0.01, 0.04], 0.02, 0.01)
    >>> (loc.cell_lr, loc.on_grid, loc.inside)
    (0.01, False, True)
    """
    lams, lrs = np.asarray(lam_values, dtype=float), np.asarray(lr_values, dtype=float)
    dl = np.abs(np.log(lams) - math.log(lam)) / _step(lams)
    dr = np.abs(np.log(lrs) - math.log(lr)) / _step(lrs)
    i, j = int(np.argmin(dl)), int(np.argmin(dr))
    on = bool(math.isclose(lams[i], lam, rel_tol=1e-9) and math.isclose(lrs[j], lr, rel_tol=1e-9))
    inside = bool(lams.min() <= lam <= lams.max() and lrs.min() <= lr <= lrs.max())
    return MapLocation(
        lam, lr, float(lams[i]), float(lrs[j]), on, inside, 0.0 if on else float(max(dl[i], dr[j]))
    )


# ------------------------------------------------------------------------------------------------------------
# The figure experiments read the map
# ------------------------------------------------------------------------------------------------------------

#: The file a map's folder records its settings in, and its cells table (what :func:`find_map` reads).
SETTINGS_FILE = "regime_map.yaml"
CELLS_TABLE = "regime_cells"


def panel_name(row: Any) -> str:
    """``head width 64[, variant]``: a cell's panel in words.

    Parameters
    ----------
    row : mapping or Series
        A row of :func:`~deepcollapse.experiments.regime_map.cell_table` (``width``, optional ``variant``).

    Returns
    -------
    str

    Examples
    --------
    >>> panel_name({"width": 64, "variant": "decoupled"}), panel_name(pd.Series({"width": 32.0}))
    ('head width 64, decoupled', 'head width 32')
    """
    variant = row.get("variant")
    return f"head width {int(row['width'])}" + (
        f", {variant}" if isinstance(variant, str) and variant else ""
    )


def find_map(out_dir: Path) -> tuple[Path, RegimeMap, pd.DataFrame] | None:
    """A finished regime map next to ``out_dir`` (a sibling folder ``net-regime-map*`` holding its settings
    and its cells table), the full-size ones first; ``None`` where there is none.

    Parameters
    ----------
    out_dir : Path
        A figure experiment's folder (``out/real-mnist5k-fig4``: looks in ``out/``).

    Returns
    -------
    (Path, RegimeMap, DataFrame) or None
        The map's folder, settings and :func:`~deepcollapse.experiments.regime_map.cell_table`.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "net-regime-map" / "tables").mkdir(parents=True)
    >>> regime = RegimeMap(name="tiny", base={"dataset": "digits"})
    >>> _ = regime.to_yaml(root / "net-regime-map" / SETTINGS_FILE)
    >>> cells = pd.DataFrame({"lam": [0.04], "lr": [0.01], "width": [64], "outcomes": ["low_rank 2, dnc 1"]})
    >>> cells.to_csv(root / "net-regime-map" / "tables" / f"{CELLS_TABLE}.csv", index=False)
    >>> folder, regime, cells = find_map(root / "real-mnist5k-fig4")
    >>> folder.name, regime.name, len(cells)
    ('net-regime-map', 'tiny', 1)
    >>> find_map(Path(tempfile.mkdtemp()) / "real-mnist5k-fig4") is None
    True
    """
    parent = Path(out_dir).resolve().parent
    for folder in sorted(parent.glob("net-regime-map*"), key=lambda p: ("smoke" in p.name, p.name)):
        settings, cells = folder / SETTINGS_FILE, folder / "tables" / f"{CELLS_TABLE}.csv"
        if settings.is_file() and cells.is_file():
            try:
                return folder, RegimeMap.from_yaml(settings), pd.read_csv(cells)
            except Exception:  # a damaged or foreign folder is no map
                continue
    return None


def regime_section(ctx: Any, settings: list[tuple[float, float]], claim: str) -> None:
    """Add the report section "On the regime map": where each ``(λ, η)`` of ``settings`` lies on a map found
    next to the experiment's folder (:func:`find_map`) and what the map found there, then ``claim`` (whether
    the paper's claim holds in this experiment's own runs, in words with the numbers).

    Parameters
    ----------
    ctx : Context
        The figure experiment's context.
    settings : list of (float, float)
        Its weight decays and learning rates.
    claim : str
        The claim's verdict in words.

    Returns
    -------
    None
        Adds the section to ``ctx.report`` (without a map: how to make one).

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "net-regime-map" / "tables").mkdir(parents=True)
    >>> regime = RegimeMap(name="tiny", base={"dataset": "digits"})
    >>> _ = regime.to_yaml(root / "net-regime-map" / SETTINGS_FILE)
    >>> cells = pd.DataFrame({"lam": [0.04], "lr": [0.01], "width": [64], "outcomes": ["low_rank 2, dnc 1"]})
    >>> cells.to_csv(root / "net-regime-map" / "tables" / f"{CELLS_TABLE}.csv", index=False)
    >>> from deepcollapse.experiments.framework import Context
    >>> from deepcollapse.experiments.registry import get_experiment
    >>> exp = get_experiment("real-mnist5k-fig4")
    >>> ctx = Context(exp, root / "real-mnist5k-fig4", True, "local", 1, None, False)
    >>> regime_section(ctx, [(0.04, 0.01)], "The claim holds.")
    >>> ctx.report.sections[-1].text.split("; ")[-1]
    "the map's seeds there ended head width 64: low_rank 2, dnc 1. The claim holds."
    """
    found = find_map(ctx.out_dir)
    parent = ctx.out_dir.resolve().parent
    if found is None:
        where = (
            f"No regime map was found next to this folder (a net-regime-map* folder in {parent}); "
            f"`deepcollapse reproduce net-regime-map --out {parent / 'net-regime-map'}` makes one, and a "
            "re-run of this command (its runs are reused) then places this setting on it."
        )
    else:
        folder, regime, cells = found
        parts = []
        for lam, lr in settings:
            loc = locate(regime.lam, regime.lr, lam, lr)
            here = cells[(cells["lam"] == loc.cell_lam) & (cells["lr"] == loc.cell_lr)]
            seen = "; ".join(f"{panel_name(r)}: {r['outcomes']}" for _, r in here.iterrows())
            parts.append(f"{loc.describe()}; the map's seeds there ended {seen or 'in no finished run'}")
        where = (
            f"On the {regime.name} regime map in {folder} ({regime.describe()}; its network differs from "
            "this experiment's in what the two settings list): " + ". ".join(parts) + "."
        )
    ctx.report.section("On the regime map", f"{where} {claim}")
