"""The best-known registry: the lowest point found so far of every cell of eq. (1), fed by every search.

A *cell* is one instance of eq. (1): the model family (its :mod:`deepcollapse.family` name, ``"mse+relu"``,
``"ce+relu"``, ``"ce+relu_eps(0.1)"``), ``K``, ``L``, ``n``, the widths ``d_1 .. d_L`` and the λ's
(:class:`CellKey`).  A registry is a folder::

    best_known.json            {"format": "deepcollapse.best_known", "format_version": 1, "rows": [...]}
    solutions/<sha256>.npz     the point of each row (the solution-file format of
                               :mod:`~deepcollapse.landscape.solution_file`), named by its sha256

One row per cell (:class:`RegistryRow`; the row types live in :mod:`.best_known_types`): the loss, the
solution file's sha256, the verdict and its Clarke residual when the offerer had them, the provenance
(command, package version, date) and the ``theory check`` re-evaluation
(:func:`~deepcollapse.landscape.solution_file.check_solution`: the file's family's eq. (1) in float64 from its
matrices alone, never the number the offerer claims).

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
``~/.local/share/deepcollapse/best_known``: :func:`user_registry_dir`), which a full-size ``reproduce
best-known`` / ``depth-bound`` (each point as it finishes) reads and offers its points to; ``dufm search``,
``dufm landscape --refine-kinks`` and ``reproduce basins`` (each cell's lowest run) offer theirs only to a
registry named with ``--registry DIR``, a smoke run to none (issue 45).  A row's command names its paths
relative to the folder it ran in (:func:`~deepcollapse.landscape.best_known_types.relative_command`).  A
damaged index, one written by a newer version, or a row whose solution file is missing is a one-line
``ConfigError`` naming the file and the row; nothing is written then.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from deepcollapse._core.checks import ConfigError
from deepcollapse._core.io import atomic_write_bytes, atomic_write_json, finite_or_none
from deepcollapse.landscape.best_known_types import CellKey, Offer, Provenance, RegistryRow
from deepcollapse.landscape.verdict_classes import is_certified

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


def _preferred(loss: float, verdict: str | None, current: RegistryRow) -> bool:
    """A point of ``loss`` and ``verdict`` replaces the row ``current`` (an offer, a merge): lower beyond
    rounding, or at its loss to rounding and certified where ``current`` is not."""
    if is_below(loss, current.loss) or is_below(current.loss, loss):
        return loss < current.loss
    return is_certified(verdict) and not is_certified(current.verdict)


def _sharper(verdict: str | None, current: str | None) -> bool:
    """``verdict`` says more of a row's own point than ``current``: the row has none, or ``verdict``
    certifies the point and ``current`` does not."""
    return verdict is not None and (current is None or (is_certified(verdict) and not is_certified(current)))


def _file_sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def is_below(loss: float, current: float) -> bool:
    """``loss`` is below ``current`` by more than float64 rounding (:data:`ROUNDING`).

    Parameters
    ----------
    loss : float
        The new loss.
    current : float
        The row's loss.

    Returns
    -------
    bool
        ``loss < current − ROUNDING · max(1, |current|)``.

    Examples
    --------
    >>> is_below(1.0, 1.0), is_below(1.0 - 1e-17, 1.0), is_below(0.9, 1.0)
    (False, False, True)
    """
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
        is missing.

        Parameters
        ----------
        path : str or Path
            The registry folder (``~`` expanded).
        read_only : bool, default False
            Refuse offers (the shipped registry).
        name : str, optional
            The name rows are read under (default the path).

        Returns
        -------
        Registry
            Its rows read and checked.

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
        >>> len(reg), reg.path.exists()  # nothing is created before the first kept offer
        (0, False)
        """
        path = Path(path).expanduser()
        if path.exists() and not path.is_dir():
            raise ConfigError(
                f"registry == {str(path)!r} is a file, must be a registry folder (or 'off'); give a folder."
            )
        return cls(path, _read_rows(path, name or str(path)), read_only=read_only, name=name or str(path))

    @property
    def rows(self) -> list[RegistryRow]:
        """The rows, sorted by family, L, K, n, widths, λ's.

        Returns
        -------
        list of RegistryRow
            Every cell's row, sorted.

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
        >>> _ = reg.offer(f, Provenance.now("doctest"))
        >>> [row.key.text() for row in reg.rows]
        ['mse+relu K=3 L=2 n=2 width 3 λ_H1 0.01 λ_W 0.01']
        """
        return sorted(self._rows.values(), key=lambda r: _sort_key(r.key))

    def get(self, key: CellKey) -> RegistryRow | None:
        """The row of ``key``, or ``None``.

        Parameters
        ----------
        key : CellKey
            The cell.

        Returns
        -------
        RegistryRow or None
            Its row; ``None`` for an empty cell.

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
        >>> offer = reg.offer(f, Provenance.now("doctest"))
        >>> reg.get(offer.key).loss == offer.loss
        True
        """
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
        sha256.  The row's own file offered again with a verdict records that verdict where the row has none
        or the new one certifies the point and the row's does not (the point judged after it was offered,
        or judged again with larger budgets); nothing else of a row changes.  Another file at the row's loss
        to rounding (neither below nor above by more than :data:`ROUNDING`) replaces the row where its verdict
        certifies the point and the row's does not (the same minimum, certified: a continued descent can end
        there, its last refinement moving the point by rounding).  ``ConfigError``
        for a read-only registry or a file that is not a valid solution file (nothing written).

        Parameters
        ----------
        point_file : str or Path
            A solution file (:func:`~deepcollapse.landscape.solution_file.save_solution`).
        provenance : Provenance
            Where the point came from.
        verdict : str, optional
            Its Hessian verdict, when the offerer has one.
        clarke_residual : float, optional
            Its Clarke residual (with the verdict).

        Returns
        -------
        Offer
            Whether the point was kept and why.

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
        >>> offer = reg.offer(f, Provenance.now("doctest"))
        >>> offer.kept, offer.reason
        (True, 'new cell')
        """
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
            if current is not None and (current.sha256 == sha or not _preferred(loss, verdict, current)):
                same = " (the same file)" if current.sha256 == sha else ""  # the row's own file: no new row
                if current.sha256 == sha and _sharper(verdict, current.verdict):
                    # the row's own point, judged since it was offered (`dufm search`, then `dufm landscape`)
                    # or certified since (`dufm landscape --descend`: larger budgets)
                    self._rows[key] = replace(
                        current,
                        verdict=verdict,
                        clarke_residual=None if clarke_residual is None else float(clarke_residual),
                    )
                    self._write()
                    same = f" (the same file; its verdict {verdict!r} recorded)"
                return Offer(
                    False,
                    f"not below the row {current.loss:.12g}{same}: {loss:.12g}",
                    key,
                    loss,
                    current.loss,
                )
            return self._keep(point_file, sha, key, loss, check, provenance, verdict, clarke_residual)

    def _keep(
        self,
        point_file: Path,
        sha: str,
        key: CellKey,
        loss: float,
        check: Any,
        provenance: Provenance,
        verdict: str | None,
        clarke_residual: float | None,
    ) -> Offer:
        """Write the offered point as its cell's row (the registry locked and read by :meth:`offer`)."""
        current = self._rows.get(key)
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
        if current is None:
            reason = "new cell"
        elif is_below(loss, current.loss):
            reason = f"below the row by {current.loss - loss:.3g}"
        else:
            reason = f"certified ({verdict}) at the row's loss {current.loss:.12g} to rounding"
        return Offer(True, reason, key, loss, None if current is None else current.loss, row)

    def merge_from(self, other: Registry) -> list[Offer]:
        """Offer every row of ``other`` (its solution file re-evaluated, its provenance, verdict and residual
        kept): afterwards each cell holds the lower of the two rows.

        Parameters
        ----------
        other : Registry
            The registry whose rows are offered.

        Returns
        -------
        list of Offer
            One per row of ``other``, in its order.

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
        >>> _ = reg.offer(f, Provenance.now("doctest"))
        >>> other = Registry.load(f"{tmp}/other")
        >>> [offer.kept for offer in other.merge_from(reg)], len(other)
        ([True], 1)
        """
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
    row of lowest loss; among rows at the same loss to rounding (:data:`ROUNDING`) a certified one over an
    uncertified one (as :meth:`Registry.offer` keeps it), else the first registry's.

    Parameters
    ----------
    *registries : Registry or mapping of CellKey to RegistryRow
        In order of preference on ties.

    Returns
    -------
    dict
        ``{CellKey: RegistryRow}``.  A plain dict: a lookup table keyed by cell (what a registry's rows
        are), not a result to serialise.

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
    >>> _ = reg.offer(f, Provenance.now("doctest"))
    >>> merged = merge(reg, shipped_registry())  # the shipped rows are of other cells
    >>> merged[reg.rows[0].key].registry == str(reg.path), len(merged) == len(shipped_registry().rows) + 1
    (True, True)
    """
    out: dict[CellKey, RegistryRow] = {}
    for reg in registries:
        rows = reg.rows if isinstance(reg, Registry) else list(reg.values())
        for row in rows:
            if row.key not in out or _preferred(row.loss, row.verdict, out[row.key]):
                out[row.key] = row
    return out


def user_registry_dir() -> Path:
    """``$DEEPCOLLAPSE_REGISTRY``, else ``$XDG_DATA_HOME/deepcollapse/best_known``, else
    ``~/.local/share/deepcollapse/best_known``.

    Returns
    -------
    Path
        The user registry's folder (not created).

    Examples
    --------
    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"DEEPCOLLAPSE_REGISTRY": "/nonexistent/registry"}):
    ...     print(user_registry_dir())
    /nonexistent/registry
    """
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "deepcollapse" / "best_known"


def shipped_registry() -> Registry:
    """The registry shipped with the package (read-only).

    Returns
    -------
    Registry
        Read-only, named ``"shipped"``.

    Examples
    --------
    >>> reg = shipped_registry()
    >>> reg.read_only, reg.name
    (True, 'shipped')
    """
    return Registry.load(_SHIPPED, read_only=True, name="shipped")


def open_registry(spec: str | Path | None) -> Registry | None:
    """The user registry named by a ``--registry`` value: ``"off"`` → ``None``; ``None`` → the default
    folder (:func:`user_registry_dir`); else that folder.  Read (and checked) now, written only by offers.

    Parameters
    ----------
    spec : str, Path or None
        ``"off"``, ``None`` (the default folder) or a folder.

    Returns
    -------
    Registry or None
        The registry; ``None`` for ``"off"``.

    Examples
    --------
    >>> import tempfile
    >>> open_registry("off") is None, len(open_registry(tempfile.mkdtemp()))
    (True, 0)
    """
    if spec is not None and str(spec).strip().lower() == "off":
        return None
    if spec is None:
        return Registry.load(user_registry_dir(), name="user")
    return Registry.load(Path(spec), name=str(spec))


def registry_rows(user: Registry | None) -> list[RegistryRow]:
    """The shipped rows and ``user``'s, cell-wise minimum (:func:`merge`), sorted.

    Parameters
    ----------
    user : Registry or None
        The user registry (``None``: the shipped rows alone).

    Returns
    -------
    list of RegistryRow
        One row per cell, sorted.

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
    >>> _ = reg.offer(f, Provenance.now("doctest"))
    >>> len(registry_rows(reg)) >= 1
    True
    """
    merged = merge(*([user] if user is not None else []), shipped_registry())
    return sorted(merged.values(), key=lambda r: _sort_key(r.key))


def rows_json(rows: Sequence[RegistryRow]) -> str:
    """Rows as a JSON list (``show --json``), each with its ``registry``.

    Parameters
    ----------
    rows : sequence of RegistryRow
        The rows.

    Returns
    -------
    str
        An indented JSON list, non-finite numbers as ``null``.

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
    >>> import json
    >>> _ = reg.offer(f, Provenance.now("doctest"))
    >>> json.loads(rows_json(reg.rows))[0]["family"]
    'mse+relu'
    """
    return json.dumps(finite_or_none([{**r.to_dict(), "registry": r.registry} for r in rows]), indent=2)
