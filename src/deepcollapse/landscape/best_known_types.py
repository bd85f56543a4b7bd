"""The rows of the best-known registry (:mod:`deepcollapse.landscape.best_known`): ``CellKey`` (one instance
of eq. (1)), ``Provenance``, ``RegistryRow`` (the best point of a cell, as written in ``best_known.json``) and
``Offer`` (what an offer did).  Every name here is re-exported by :mod:`~deepcollapse.landscape.best_known`.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CellKey", "Offer", "Provenance", "RegistryRow", "relative_command"]


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
        """The key of a point re-evaluated by :func:`~deepcollapse.landscape.solution_file.check_solution`.

        Parameters
        ----------
        check : mapping
            ``family, classes, layers, n, widths, lam_h, lam_w`` (a check's result or a registry row).

        Returns
        -------
        CellKey
            The cell, ``widths`` and ``lam_w`` as tuples.

        Examples
        --------
        >>> key = CellKey("mse+relu", 3, 2, 2, (3, 3), 0.01, (0.01, 0.01))
        >>> CellKey.from_check(key.to_dict()) == key
        True
        """
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
        """The cell in words: ``"ce+relu K=10 L=4 n=50 width 30 λ_H1 0.004 λ_W 0.004"``.

        Returns
        -------
        str
            One line (a common width or ``λ_W`` is written once).

        Examples
        --------
        >>> key = CellKey("mse+relu", 3, 2, 2, (3, 3), 0.01, (0.01, 0.01))
        >>> key.text()
        'mse+relu K=3 L=2 n=2 width 3 λ_H1 0.01 λ_W 0.01'
        """
        width = str(self.widths[0]) if len(set(self.widths)) == 1 else ",".join(map(str, self.widths))
        lam_w = f"{self.lam_w[0]:g}" if len(set(self.lam_w)) == 1 else ",".join(f"{x:g}" for x in self.lam_w)
        return (
            f"{self.family} K={self.classes} L={self.layers} n={self.n} width {width} "
            f"λ_H1 {self.lam_h:g} λ_W {lam_w}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The key's fields in JSON types (``widths``, ``lam_w`` as lists).  A plain dict: the JSON form
        written to the registry's index, as the first keys of each row.

        Returns
        -------
        dict
            ``family, classes, layers, n, widths, lam_h, lam_w``.

        Examples
        --------
        >>> key = CellKey("mse+relu", 3, 2, 2, (3, 3), 0.01, (0.01, 0.01))
        >>> key.to_dict()["widths"]
        [3, 3]
        """
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
    def now(cls, command: str, cwd: str | Path | None = None) -> Provenance:
        """``command`` with its absolute paths relative to the folder it ran in (:func:`relative_command`),
        this package's version and the current UTC time.

        Parameters
        ----------
        command : str
            The command that found the point.
        cwd : str or Path, optional
            The folder it ran in (default: the working directory).

        Returns
        -------
        Provenance
            ``command``, ``version``, ``date``.

        Examples
        --------
        >>> p = Provenance.now("deepcollapse dufm search --out /home/me/runs/s", cwd="/home/me")
        >>> p.command, p.date.endswith("+00:00")
        ('deepcollapse dufm search --out runs/s', True)
        """
        from deepcollapse import __version__

        date = datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()
        return cls(command=relative_command(command, cwd), version=__version__, date=date)


def relative_command(command: str, cwd: str | Path | None = None) -> str:
    """``command`` (one command or several joined by ``&&``) with every absolute path, a word or the value of
    ``--option=PATH``, made relative to ``cwd``: a registry row names the run's folders as the person who ran
    it typed them from there, not this machine's layout (issue 45).  Other words keep their quoting.

    Parameters
    ----------
    command : str
        The command line (POSIX shell words).
    cwd : str or Path, optional
        The folder it ran in (default: the working directory).

    Returns
    -------
    str
        The command with relative paths; unchanged where it holds none (or cannot be split into words).

    Examples
    --------
    >>> relative_command("deepcollapse reproduce best-known --out /work/runs/bk_ce12", cwd="/work/runs")
    'deepcollapse reproduce best-known --out bk_ce12'
    >>> relative_command("dufm search --out=/tmp/s && dufm landscape /tmp/s --out /tmp/a/l", cwd="/tmp/a")
    'dufm search --out=../s && dufm landscape ../s --out l'
    """
    import os
    import shlex

    base = os.fspath(cwd) if cwd is not None else os.getcwd()

    def rel(word: str) -> str:
        option, eq, value = word.partition("=") if word.startswith("--") else ("", "", word)
        if not os.path.isabs(value):
            return word
        return f"{option}{eq}{os.path.relpath(value, base)}"

    parts = []
    for part in command.split(" && "):
        try:
            words = shlex.split(part)
        except ValueError:  # unbalanced quotes: not a command line this package wrote
            return command
        new = [rel(w) for w in words]
        parts.append(part if new == words else shlex.join(new))
    return " && ".join(parts)


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
        """The row in JSON types, read back by :meth:`from_dict`.  A plain dict: the JSON form written to
        the registry's index (one entry of its ``rows``).

        Returns
        -------
        dict
            The key's fields, ``loss, sha256, solution, verdict, clarke_residual, provenance, check``.

        Examples
        --------
        >>> key = CellKey("mse+relu", 3, 2, 2, (3, 3), 0.01, (0.01, 0.01))
        >>> prov = Provenance("x", "0", "d")
        >>> row = RegistryRow(key, 0.5, "sha256:00", "solutions/00.npz", None, None, prov)
        >>> row.to_dict()["provenance"]
        {'command': 'x', 'version': '0', 'date': 'd'}
        """
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
        """Inverse of :meth:`to_dict` (``KeyError`` / ``TypeError`` / ``ValueError`` on a damaged row).

        Parameters
        ----------
        data : mapping
            One entry of the index's ``rows``.

        Returns
        -------
        RegistryRow
            The row (``path`` and ``registry`` unset).

        Examples
        --------
        >>> key = CellKey("mse+relu", 3, 2, 2, (3, 3), 0.01, (0.01, 0.01))
        >>> prov = Provenance("x", "0", "d")
        >>> row = RegistryRow(key, 0.5, "sha256:00", "solutions/00.npz", None, None, prov)
        >>> RegistryRow.from_dict(row.to_dict()) == row
        True
        """
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
