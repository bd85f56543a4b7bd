"""The best-known registry: the lowest point found so far of every cell of eq. (1), fed by every search.

A *cell* is one instance of eq. (1): the model family (its :mod:`deepcollapse.family` name, ``"mse+relu"``,
``"ce+relu"``, ``"ce+relu_eps(0.1)"``), ``K``, ``L``, ``n``, the widths ``d_1 .. d_L`` and the λ's
(:class:`CellKey`).  A registry is a folder::

    best_known.json            {"format": "deepcollapse.best_known", "format_version": 1, "rows": [...]}
    solutions/<sha256>.npz     the point of each row (the solution-file format of
                               :mod:`~deepcollapse.landscape.solution_file`), named by its sha256

One row per cell (:class:`RegistryRow`): the loss, the solution file's sha256, the verdict and its Clarke
residual when the offerer had them, the provenance (command, package version, date) and the ``theory check``
re-evaluation (:func:`~deepcollapse.landscape.solution_file.check_solution`: the file's family's eq. (1) in
float64 from its matrices alone, never the number the offerer claims).

:meth:`Registry.offer` keeps a point only if that re-evaluation is below the cell's row by more than float64
rounding (``4 eps`` relative, :data:`ROUNDING`): an offer at or above the row is refused, with the reason
(:class:`Offer`).  Writes happen under an exclusive ``fcntl.flock`` on ``.lock`` in the folder, re-reading
the index inside the lock, and replace files atomically (temporary file + ``os.replace``), so two processes
offering at once (a sweep, a Ray cluster on a shared disk) lose no row and a crash leaves the old index.
:func:`merge` is the cell-wise minimum of registries (in memory); :meth:`Registry.merge_from` offers every
row of another registry (each re-evaluated), so merging the registries of two machines keeps the lower
point of each cell.

Two registries are read: the *shipped* one (package data, read-only: :func:`shipped_registry`) and the
*user* one (``$DEEPCOLLAPSE_REGISTRY``, else ``$XDG_DATA_HOME/deepcollapse/best_known``, else
``~/.local/share/deepcollapse/best_known``: :func:`user_registry_dir`), which ``dufm search``, ``dufm
landscape --refine-kinks`` and ``reproduce best-known`` / ``depth-bound`` offer their best points to
(``--registry DIR|off``).  A damaged index, one written by a newer version, or a row whose solution file is
missing is a one-line ``ConfigError`` naming the file and the row; nothing is written then.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import math
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.io import atomic_write_bytes, atomic_write_json, finite_or_none

__all__ = [
    "FORMAT_VERSION",
    "ROUNDING",
    "CellKey",
    "Offer",
    "Provenance",
    "Registry",
    "RegistryRow",
    "merge",
    "open_registry",
    "shipped_registry",
    "user_registry_dir",
]

FORMAT = "deepcollapse.best_known"
FORMAT_VERSION = 1
INDEX = "best_known.json"
ENV = "DEEPCOLLAPSE_REGISTRY"
#: a point replaces a row only if its loss is lower by more than this (relative, at least absolute 1·this)
ROUNDING = 4 * sys.float_info.epsilon  # float64
_SHIPPED = Path(__file__).parent / "data" / "best_known"


@dataclass(frozen=True)
class CellKey:
    """One instance of eq. (1): the registry's row key.

    Attributes
    ----------
    family : str
        The model family's name (:attr:`deepcollapse.family.Family.name`: ``"mse+relu"``, ``"ce+relu"``).
    classes, layers, n : int
        ``K``, ``L`` and the samples per class.
    widths : tuple of int
        ``d_1 .. d_L``.
    lam_h : float
        λ_{H_1}.
    lam_w : tuple of float
        λ_{W_1} .. λ_{W_L}.
    """

    family: str
    classes: int
    layers: int
    n: int
    widths: tuple[int, ...]
    lam_h: float
    lam_w: tuple[float, ...]

    @classmethod
    def from_check(cls, check: Mapping[str, Any]) -> CellKey:
        """The key of a point re-evaluated by :func:`~deepcollapse.landscape.solution_file.check_solution`."""
        return cls(
            family=str(check["family"]),
            classes=int(check["classes"]),
            layers=int(check["layers"]),
            n=int(check["n"]),
            widths=tuple(int(d) for d in check["widths"]),
            lam_h=float(check["lam_h"]),
            lam_w=tuple(float(x) for x in check["lam_w"]),
        )

    def text(self) -> str:
        """The cell in words: ``"ce+relu K=10 L=4 n=50 width 30 λ_H1 0.004 λ_W 0.004"``."""
        width = str(self.widths[0]) if len(set(self.widths)) == 1 else ",".join(map(str, self.widths))
        lam_w = f"{self.lam_w[0]:g}" if len(set(self.lam_w)) == 1 else ",".join(f"{x:g}" for x in self.lam_w)
        return (
            f"{self.family} K={self.classes} L={self.layers} n={self.n} width {width} "
            f"λ_H1 {self.lam_h:g} λ_W {lam_w}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "classes": self.classes,
            "layers": self.layers,
            "n": self.n,
            "widths": list(self.widths),
            "lam_h": self.lam_h,
            "lam_w": list(self.lam_w),
        }


@dataclass(frozen=True)
class Provenance:
    """Where a row came from: the ``command`` that found the point, the package ``version``, the UTC
    ``date`` (ISO 8601)."""

    command: str
    version: str
    date: str

    @classmethod
    def now(cls, command: str) -> Provenance:
        """``command`` with this package's version and the current UTC time."""
        from deepcollapse import __version__

        date = datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()
        return cls(command=command, version=__version__, date=date)


@dataclass(frozen=True)
class RegistryRow:
    """The best point of one cell.

    Attributes
    ----------
    key : CellKey
        The cell.
    loss : float
        Eq. (1) at the point, re-evaluated in float64 by ``theory check`` when it was offered.
    sha256 : str
        ``sha256:<hex>`` of the solution file's bytes.
    solution : str
        The file, relative to the registry folder (``solutions/<hex>.npz``).
    verdict : str or None
        The Hessian verdict of the point when the offerer had one (:data:`~deepcollapse.landscape.verdicts.
        VERDICTS`), else ``None``.
    clarke_residual : float or None
        Its Clarke residual (with the verdict).
    provenance : Provenance
        Command, version and date of the offer.
    check : dict
        The re-evaluation: ``fit``, ``reg``, ``claimed_loss`` (the file's own ``loss`` array, or ``None``) and
        ``difference`` (``loss − claimed_loss``).
    path : Path or None
        The solution file on this machine (set when read; not written).
    registry : str
        The registry it was read from (``"shipped"``, ``"user"`` or the folder; not written).
    """

    key: CellKey
    loss: float
    sha256: str
    solution: str
    verdict: str | None
    clarke_residual: float | None
    provenance: Provenance
    check: dict[str, Any] = field(default_factory=dict)
    path: Path | None = field(default=None, compare=False)
    registry: str = field(default="", compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.key.to_dict(),
            "loss": self.loss,
            "sha256": self.sha256,
            "solution": self.solution,
            "verdict": self.verdict,
            "clarke_residual": self.clarke_residual,
            "provenance": {
                "command": self.provenance.command,
                "version": self.provenance.version,
                "date": self.provenance.date,
            },
            "check": dict(self.check),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RegistryRow:
        """Inverse of :meth:`to_dict` (``KeyError`` / ``TypeError`` / ``ValueError`` on a damaged row)."""
        prov = data["provenance"]
        clarke = data.get("clarke_residual")
        loss = float(data["loss"])
        if not math.isfinite(loss):
            raise ValueError(f"loss == {loss}")
        return cls(
            key=CellKey.from_check(data),
            loss=loss,
            sha256=str(data["sha256"]),
            solution=str(data["solution"]),
            verdict=None if data.get("verdict") is None else str(data["verdict"]),
            clarke_residual=None if clarke is None else float(clarke),
            provenance=Provenance(str(prov["command"]), str(prov["version"]), str(prov["date"])),
            check=dict(data.get("check") or {}),
        )


@dataclass(frozen=True)
class Offer:
    """What :meth:`Registry.offer` did with a point.

    Attributes
    ----------
    kept : bool
        The point is now the cell's row.
    reason : str
        Why, in words (``"new cell"``, ``"below the row by 1.2e-05"``, ``"not below the row …"``).
    key : CellKey
        The point's cell.
    loss : float
        Its re-evaluated loss.
    previous : float or None
        The cell's row before the offer (``None``: the cell was empty).
    row : RegistryRow or None
        The new row when kept.
    """

    kept: bool
    reason: str
    key: CellKey
    loss: float
    previous: float | None = None
    row: RegistryRow | None = None


def _file_sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def is_below(loss: float, current: float) -> bool:
    """``loss`` is below ``current`` by more than float64 rounding (:data:`ROUNDING`)."""
    return loss < current - ROUNDING * max(1.0, abs(current))


class Registry:
    """A registry folder (module docstring); build with :meth:`load`.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from deepcollapse.landscape.solution_file import save_solution
    >>> tmp = tempfile.mkdtemp()
    >>> rng = np.random.default_rng(0)
    >>> f = save_solution(f"{tmp}/p.npz", rng.normal(size=(3, 6)), [rng.normal(size=(3, 3)),
    ...     rng.normal(size=(3, 3))], n=2, lam_h=0.01, lam_w=[0.01, 0.01])
    >>> reg = Registry.load(f"{tmp}/registry")
    >>> reg.offer(f, Provenance.now("doctest")).kept
    True
    >>> reg.offer(f, Provenance.now("doctest")).kept   # the same point again: not below its own row
    False
    """

    def __init__(self, path: Path, rows: dict[CellKey, RegistryRow], *, read_only: bool, name: str) -> None:
        self.path = path
        self._rows = rows
        self.read_only = read_only
        self.name = name

    # --------------------------------------------------------------------------------------------------------
    # reading
    # --------------------------------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path, *, read_only: bool = False, name: str | None = None) -> Registry:
        """The registry in folder ``path`` (empty when the folder or its index does not exist yet; nothing
        is created before the first kept offer).  ``ConfigError`` (one line naming the file and the row)
        for a path that is a file, a damaged index, a newer ``format_version``, or a row whose solution file
        is missing."""
        path = Path(path).expanduser()
        if path.exists() and not path.is_dir():
            raise ConfigError(
                f"registry == {str(path)!r} is a file, must be a registry folder (or 'off'); give a folder."
            )
        return cls(path, _read_rows(path, name or str(path)), read_only=read_only, name=name or str(path))

    @property
    def rows(self) -> list[RegistryRow]:
        """The rows, sorted by family, L, K, n, widths, λ's."""
        return sorted(self._rows.values(), key=lambda r: _sort_key(r.key))

    def get(self, key: CellKey) -> RegistryRow | None:
        """The row of ``key``, or ``None``."""
        return self._rows.get(key)

    def __len__(self) -> int:
        return len(self._rows)

    # --------------------------------------------------------------------------------------------------------
    # writing
    # --------------------------------------------------------------------------------------------------------
    def offer(
        self,
        point_file: str | Path,
        provenance: Provenance,
        *,
        verdict: str | None = None,
        clarke_residual: float | None = None,
    ) -> Offer:
        """Offer the point of a solution file: re-evaluate it (``theory check``, float64) and keep it as its
        cell's row only if below the row (:func:`is_below`); a kept file is copied to ``solutions/`` under its
        sha256.  ``ConfigError`` for a read-only registry or a file that is not a valid solution file
        (nothing written)."""
        from deepcollapse.landscape.solution_file import check_solution

        if self.read_only:
            raise ConfigError(
                f"registry {self.name} ({self.path}) is read-only (the shipped one); offer to the user "
                "registry (--registry DIR)."
            )
        point_file = Path(point_file)
        check = check_solution(point_file)
        sha = _file_sha256(point_file)
        key, loss = CellKey.from_check(check), float(check["loss"])
        if not math.isfinite(loss):
            raise ConfigError(f"FILE == {str(point_file)!r} evaluates to loss {loss}, must be finite.")
        with self._locked():
            self._rows = _read_rows(self.path, self.name)  # other processes may have written meanwhile
            current = self._rows.get(key)
            if current is not None and not is_below(loss, current.loss):
                same = " (the same file)" if current.sha256 == sha else ""
                return Offer(
                    False,
                    f"not below the row {current.loss:.12g}{same}: {loss:.12g}",
                    key,
                    loss,
                    current.loss,
                )
            rel = f"solutions/{sha.split(':', 1)[1]}.npz"
            target = self.path / rel
            if not target.is_file() or _file_sha256(target) != sha:
                target.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_bytes(target, point_file.read_bytes())
            row = RegistryRow(
                key=key,
                loss=loss,
                sha256=sha,
                solution=rel,
                verdict=verdict,
                clarke_residual=None if clarke_residual is None else float(clarke_residual),
                provenance=provenance,
                check={k: check[k] for k in ("fit", "reg", "claimed_loss", "difference")},
                path=target,
                registry=self.name,
            )
            self._rows[key] = row
            self._write()
        reason = "new cell" if current is None else f"below the row by {current.loss - loss:.3g}"
        return Offer(True, reason, key, loss, None if current is None else current.loss, row)

    def merge_from(self, other: Registry) -> list[Offer]:
        """Offer every row of ``other`` (its solution file re-evaluated, its provenance, verdict and residual
        kept): afterwards each cell holds the lower of the two rows."""
        offers = []
        for row in other.rows:
            assert row.path is not None  # rows read from a folder know their file
            offers.append(
                self.offer(row.path, row.provenance, verdict=row.verdict, clarke_residual=row.clarke_residual)
            )
        return offers

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive ``fcntl.flock`` on ``<folder>/.lock`` (created with the folder)."""
        import fcntl

        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / ".lock", "a+") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _write(self) -> None:
        data = {"format": FORMAT, "format_version": FORMAT_VERSION, "rows": [r.to_dict() for r in self.rows]}
        atomic_write_json(self.path / INDEX, finite_or_none(data))


def _sort_key(key: CellKey) -> tuple[Any, ...]:
    return (key.family, key.layers, key.classes, key.n, key.widths, key.lam_h, key.lam_w)


def _read_rows(path: Path, name: str) -> dict[CellKey, RegistryRow]:
    """The rows of ``path/best_known.json`` (``{}`` without one), checked (module docstring)."""
    from deepcollapse._core.io import read_json

    index = path / INDEX
    if not index.is_file():
        return {}
    keep = "nothing in the registry was changed"
    data = read_json(index, hint=f"restore it from a copy or move it away ({keep})")
    version = data.get("format_version")
    if data.get("format") != FORMAT or not isinstance(version, int):
        raise ConfigError(f"{index}: not a best-known registry (format {data.get('format')!r}); {keep}.")
    if version > FORMAT_VERSION:
        raise ConfigError(
            f"{index}: written by a newer deepcollapse (format_version {version} > {FORMAT_VERSION}); "
            f"upgrade deepcollapse to read it ({keep})."
        )
    rows_data = data.get("rows")
    if not isinstance(rows_data, list):
        raise ConfigError(f"{index}: 'rows' is not a list (damaged); restore it from a copy ({keep}).")
    rows: dict[CellKey, RegistryRow] = {}
    for i, item in enumerate(rows_data, 1):
        try:
            row = RegistryRow.from_dict(item)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(
                f"{index}: row {i} is damaged ({type(exc).__name__}: {exc}); restore the file from a copy "
                f"({keep})."
            ) from None
        file = path / row.solution
        if not file.is_file():
            raise ConfigError(
                f"{index}: row {i} ({row.key.text()}, loss {row.loss:.12g}) names {row.solution}, which is "
                f"missing; restore that file or the registry from a copy ({keep})."
            )
        row = replace(row, path=file, registry=name)
        if row.key not in rows or row.loss < rows[row.key].loss:
            rows[row.key] = row
    return rows


def merge(*registries: Registry | Mapping[CellKey, RegistryRow]) -> dict[CellKey, RegistryRow]:
    """The cell-wise minimum of registries (in memory; rows as read, not re-evaluated): for each cell the
    row of lowest loss, the first registry's on a tie.

    Parameters
    ----------
    *registries : Registry or mapping of CellKey to RegistryRow
        In order of preference on ties.

    Returns
    -------
    dict
        ``{CellKey: RegistryRow}``.
    """
    out: dict[CellKey, RegistryRow] = {}
    for reg in registries:
        rows = reg.rows if isinstance(reg, Registry) else list(reg.values())
        for row in rows:
            if row.key not in out or row.loss < out[row.key].loss:
                out[row.key] = row
    return out


def user_registry_dir() -> Path:
    """``$DEEPCOLLAPSE_REGISTRY``, else ``$XDG_DATA_HOME/deepcollapse/best_known``, else
    ``~/.local/share/deepcollapse/best_known``."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "deepcollapse" / "best_known"


def shipped_registry() -> Registry:
    """The registry shipped with the package (read-only)."""
    return Registry.load(_SHIPPED, read_only=True, name="shipped")


def open_registry(spec: str | Path | None) -> Registry | None:
    """The user registry named by a ``--registry`` value: ``"off"`` → ``None``; ``None`` → the default
    folder (:func:`user_registry_dir`); else that folder.  Read (and checked) now, written only by offers."""
    if spec is not None and str(spec).strip().lower() == "off":
        return None
    if spec is None:
        return Registry.load(user_registry_dir(), name="user")
    return Registry.load(Path(spec), name=str(spec))


def registry_rows(user: Registry | None) -> list[RegistryRow]:
    """The shipped rows and ``user``'s, cell-wise minimum (:func:`merge`), sorted."""
    merged = merge(*([user] if user is not None else []), shipped_registry())
    return sorted(merged.values(), key=lambda r: _sort_key(r.key))


def rows_json(rows: Sequence[RegistryRow]) -> str:
    """Rows as a JSON list (``show --json``), each with its ``registry``."""
    return json.dumps(finite_or_none([{**r.to_dict(), "registry": r.registry} for r in rows]), indent=2)
