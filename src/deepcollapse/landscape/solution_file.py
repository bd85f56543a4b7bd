"""Explicit L-DUFM points on disk (``.npz``) and their independent check against eq. (1).

File format (``numpy.savez_compressed``, read by ``numpy.load`` as any ``.npz``, so the uncompressed files of
earlier releases read the same; every array float64 unless stated):

    H1            (d_1, N)        unconstrained features, columns = samples ordered by class (N = K n)
    W_1 .. W_L    (d_{l+1}, d_l)  the weight matrices, W_L is (K, d_L)
    n             ()  int         samples per class
    lam_h         ()              λ_{H_1}
    lam_w         (L,)            λ_{W_1} .. λ_{W_L}
    loss          ()              (optional) the claimed loss; :func:`check_solution` re-evaluates it
    family_loss        () str     (optional) the model family's fit term, ``mse`` or ``ce``
    family_activation  () str     (optional) its activation, ``relu``, ``linear`` or ``relu_eps``
    family_eps         ()         (optional) ε of ``relu_eps``
    checksum           () str     (optional) ``sha256:...`` of every other array (name, dtype, shape, bytes:
                                  :func:`~deepcollapse._core.io.content_checksum`); written by
                                  :func:`save_solution`, checked by :func:`load_solution` when present

A file without the ``family_*`` arrays (written before they existed) is MSE + ReLU.  Writers may add more
arrays (ranks, Gram matrices, labels as 0-d string arrays); readers ignore them.  :func:`check_solution`
evaluates the file's family's eq. (1) in float64 from ``H1`` and ``W_l`` alone
(:func:`~deepcollapse.theory.objective.dufm_objective`), so a claimed loss can be verified without trusting
the code that found the point; family options that contradict the file's are refused
(:func:`check_family_matches`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deepcollapse._core.checks import ConfigError, check_float, check_int
from deepcollapse._core.io import CHECKSUM_KEY, content_checksum, read_npz
from deepcollapse._core.results import Result
from deepcollapse.family import Family, get_family
from deepcollapse.theory.objective import dufm_objective

if TYPE_CHECKING:
    from deepcollapse.theory.layers import Solution
    from deepcollapse.theory.problem import Problem

__all__ = [
    "EXPECTED_ARRAYS",
    "LoadedSolution",
    "SolutionCheck",
    "check_family_matches",
    "check_solution",
    "load_solution",
    "save_solution",
]

EXPECTED_ARRAYS = "H1, W_1 .. W_L, n, lam_h, lam_w"


def _family_from(value: Any) -> Any:
    """A :class:`Family` from itself or from its name (``"mse+relu"``, ``"ce+relu_eps(0.1)"``)."""
    if not isinstance(value, str):
        return value
    m = re.fullmatch(r"(\w+)\+(\w+?)(?:\((.+)\))?", value)
    if m is None:
        raise ConfigError(f"family == {value!r}, must be a family name such as 'mse+relu'.")
    return get_family(m.group(1), m.group(2), None if m.group(3) is None else float(m.group(3)))


@dataclass(frozen=True, eq=False)
class LoadedSolution(Result):
    """A solution file read and checked by :func:`load_solution`: the point ``(H_1, W_1 .. W_L)`` of eq. (1)
    and the instance it belongs to.

    Read-only key access (``sol["H1"]``) works as for the dict of earlier releases; ``to_dict()`` holds the
    same keys, JSON-ready (arrays as lists, ``family`` as its name).  :attr:`problem` and :attr:`solution`
    give the point as the theory's :class:`~deepcollapse.theory.problem.Problem` and
    :class:`~deepcollapse.theory.layers.Solution`.

    Attributes
    ----------
    family : Family
        The model family the file records (MSE + ReLU for a file without ``family_*`` arrays).
    H1 : ndarray, (d_1, N)
        The features, columns ordered by class (float64).
    weights : list of ndarray
        ``W_1 .. W_L`` (float64); ``W_L`` is ``(K, d_L)``.
    n : int
        Samples per class.
    lam_h : float
        ``λ_{H_1} > 0``.
    lam_w : list of float
        ``λ_{W_1} .. λ_{W_L} > 0`` (one stored value is repeated for every layer).
    classes : int
        ``K``, the rows of ``W_L``.
    arrays : dict of ndarray
        Every array of the file but ``checksum`` (``loss``, ranks, Gram matrices, ... as written).
    """

    family: Family | None = None
    H1: np.ndarray | None = None
    weights: list[np.ndarray] | None = None
    n: int | None = None
    lam_h: float | None = None
    lam_w: list[float] | None = None
    classes: int | None = None
    arrays: dict[str, Any] | None = None

    @classmethod
    def _read(cls, name: str, value: Any) -> Any:
        if name == "family":
            return _family_from(value)
        if name == "H1":
            return np.asarray(value, dtype=np.float64)
        if name == "weights":
            return [np.asarray(W, dtype=np.float64) for W in value]
        if name == "arrays" and isinstance(value, Mapping):
            return {k: np.asarray(v) for k, v in value.items()}
        return value

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict (see :meth:`Result.to_dict`), with ``family`` as its name (``"mse+relu"``).

        Returns
        -------
        dict
            ``family, H1, weights, n, lam_h, lam_w, classes, arrays``; arrays as nested lists.  A plain
            dict: the JSON form of the result.

        Examples
        --------
        >>> import tempfile
        >>> f = save_solution(f"{tempfile.mkdtemp()}/p.npz", np.eye(2), [np.eye(2), np.eye(2)], n=1,
        ...     lam_h=0.1, lam_w=[0.1, 0.1], extra={"loss": np.array(0.3)})
        >>> s = load_solution(f)
        >>> s.to_dict()["family"], s.to_dict()["H1"]
        ('mse+relu', [[1.0, 0.0], [0.0, 1.0]])
        """
        out = super().to_dict()
        if isinstance(out.get("family"), Family):
            out["family"] = out["family"].name
        return out

    @property
    def layers(self) -> int:
        """``L``, the number of weight matrices.

        Returns
        -------
        int
            ``len(weights)`` (0 when unset).

        Examples
        --------
        >>> import tempfile
        >>> f = save_solution(f"{tempfile.mkdtemp()}/p.npz", np.eye(2), [np.eye(2), np.eye(2)], n=1,
        ...     lam_h=0.1, lam_w=[0.1, 0.1], extra={"loss": np.array(0.3)})
        >>> s = load_solution(f)
        >>> s.layers
        2
        """
        return len(self.weights or [])

    @property
    def widths(self) -> list[int]:
        """``d_1 .. d_L``: the rows of ``H_1`` and of ``W_1 .. W_{L-1}``.

        Returns
        -------
        list of int
            ``L`` widths.

        Examples
        --------
        >>> import tempfile
        >>> f = save_solution(f"{tempfile.mkdtemp()}/p.npz", np.eye(2), [np.eye(2), np.eye(2)], n=1,
        ...     lam_h=0.1, lam_w=[0.1, 0.1], extra={"loss": np.array(0.3)})
        >>> s = load_solution(f)
        >>> s.widths
        [2, 2]
        """
        assert self.H1 is not None and self.weights is not None
        return [int(self.H1.shape[0])] + [int(W.shape[0]) for W in self.weights[:-1]]

    @property
    def params(self) -> list[np.ndarray]:
        """The point ``[H_1, W_1 .. W_L]`` (the order of :mod:`deepcollapse.landscape.piecewise`).

        Returns
        -------
        list of ndarray
            ``L + 1`` arrays.

        Examples
        --------
        >>> import tempfile
        >>> f = save_solution(f"{tempfile.mkdtemp()}/p.npz", np.eye(2), [np.eye(2), np.eye(2)], n=1,
        ...     lam_h=0.1, lam_w=[0.1, 0.1], extra={"loss": np.array(0.3)})
        >>> s = load_solution(f)
        >>> [p.shape for p in s.params]
        [(2, 2), (2, 2), (2, 2)]
        """
        return [np.asarray(self.H1), *(self.weights or [])]

    @property
    def claimed_loss(self) -> float | None:
        """The file's ``loss`` array (the loss its writer claims), ``None`` when absent.

        Returns
        -------
        float or None
            The claimed loss.

        Examples
        --------
        >>> import tempfile
        >>> f = save_solution(f"{tempfile.mkdtemp()}/p.npz", np.eye(2), [np.eye(2), np.eye(2)], n=1,
        ...     lam_h=0.1, lam_w=[0.1, 0.1], extra={"loss": np.array(0.3)})
        >>> s = load_solution(f)
        >>> s.claimed_loss
        0.3
        """
        arrays = self.arrays or {}
        return float(arrays["loss"]) if "loss" in arrays else None

    @property
    def problem(self) -> Problem:
        """The instance of eq. (1) the point belongs to (``K, L, n, λ``'s, widths and family).

        Returns
        -------
        Problem
            Validated, with the file's widths.

        Examples
        --------
        >>> import tempfile
        >>> f = save_solution(f"{tempfile.mkdtemp()}/p.npz", np.eye(2), [np.eye(2), np.eye(2)], n=1,
        ...     lam_h=0.1, lam_w=[0.1, 0.1], extra={"loss": np.array(0.3)})
        >>> s = load_solution(f)
        >>> s.problem.widths, s.problem.family.name
        ((2, 2), 'mse+relu')
        """
        from deepcollapse.theory.problem import Problem

        fam = self.family
        assert fam is not None and self.classes is not None and self.n is not None and self.lam_h is not None
        return Problem(
            self.classes,
            self.layers,
            self.n,
            self.lam_h,
            tuple(self.lam_w or ()),
            widths=tuple(self.widths),
            loss=fam.loss.name,
            activation=fam.activation.name,
            eps=fam.eps,
        )

    @property
    def solution(self) -> Solution:
        """The point as a :class:`~deepcollapse.theory.layers.Solution`: eq. (1) of the file's family
        evaluated in float64 on its matrices (``construction = "file"``).

        Returns
        -------
        Solution
            The matrices and their loss.

        Examples
        --------
        >>> import tempfile
        >>> f = save_solution(f"{tempfile.mkdtemp()}/p.npz", np.eye(2), [np.eye(2), np.eye(2)], n=1,
        ...     lam_h=0.1, lam_w=[0.1, 0.1], extra={"loss": np.array(0.3)})
        >>> s = load_solution(f)
        >>> sol = s.solution
        >>> sol.construction, round(sol.loss, 12)  # exact fit, reg = 0.05 · 6
        ('file', 0.3)
        """
        from deepcollapse.theory.layers import Solution

        fam = self.family
        assert fam is not None and self.H1 is not None and self.weights is not None and self.n is not None
        parts = dufm_objective(
            self.H1,
            self.weights,
            float(self.lam_h or 0.0),
            list(self.lam_w or ()),
            loss=fam.loss.name,
            activation=fam.activation.name,
            eps=fam.eps,
        )
        return Solution(
            H1=self.H1,
            weights=list(self.weights),
            loss=parts.total,
            parts=parts,
            n=self.n,
            construction="file",
        )


@dataclass(frozen=True, eq=False)
class SolutionCheck(Result):
    """Eq. (1) of a solution file re-evaluated in float64 by :func:`check_solution` (``deepcollapse theory
    check``; ``--json`` prints ``to_dict()``).

    Read-only key access (``r["loss"]``) works as for the dict of earlier releases.

    Attributes
    ----------
    loss : float
        Eq. (1) of the file's family at the file's matrices.
    fit, reg : float
        Its fit and regularisation terms.
    claimed_loss : float or None
        The file's ``loss`` array (``None`` when absent).
    difference : float or None
        ``loss − claimed_loss``.
    classes, layers, n : int
        ``K``, ``L`` and the samples per class.
    widths : list of int
        ``d_1 .. d_L``.
    lam_h : float
        ``λ_{H_1}``.
    lam_w : list of float
        ``λ_{W_1} .. λ_{W_L}``.
    family : str
        The family's name (``"mse+relu"``, ``"ce+relu"``).
    """

    loss: float | None = None
    fit: float | None = None
    reg: float | None = None
    claimed_loss: float | None = None
    difference: float | None = None
    classes: int | None = None
    layers: int | None = None
    n: int | None = None
    widths: list[int] | None = None
    lam_h: float | None = None
    lam_w: list[float] | None = None
    family: str | None = None


def save_solution(
    path: str | Path,
    H1: np.ndarray,
    weights: Sequence[np.ndarray],
    *,
    n: int,
    lam_h: float,
    lam_w: Sequence[float],
    extra: dict[str, Any] | None = None,
    family: Family | None = None,
) -> Path:
    """Write ``H1``, ``W_1 .. W_L``, ``n``, ``lam_h``, ``lam_w``, the ``family_*`` arrays of ``family``
    (default MSE + ReLU), the ``extra`` arrays and the ``checksum`` of them all, atomically.

    Parameters
    ----------
    path : str or Path
        The ``.npz`` file (its folder is created).
    H1 : ndarray, (d_1, K n)
        The features, samples ordered by class.
    weights : sequence of ndarray
        ``W_1 .. W_L``.
    n : int
        Samples per class.
    lam_h : float
        ``λ_{H_1}``.
    lam_w : sequence of float
        ``λ_{W_1} .. λ_{W_L}``.
    extra : dict, optional
        More arrays to store (e.g. ``loss``, the loss the writer claims).
    family : Family, optional
        The model family (default MSE + ReLU).

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> import tempfile
    >>> f = save_solution(f"{tempfile.mkdtemp()}/p.npz", np.eye(2), [np.eye(2), np.eye(2)], n=1, lam_h=0.1,
    ...     lam_w=[0.1, 0.1], extra={"loss": np.array(0.3)})
    >>> s = load_solution(f)
    >>> f.suffix, s.n, s.lam_w
    ('.npz', 1, [0.1, 0.1])
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, Any] = {"H1": np.asarray(H1, dtype=np.float64)}
    for l, W in enumerate(weights, 1):
        arrays[f"W_{l}"] = np.asarray(W, dtype=np.float64)
    arrays.update(n=np.int64(n), lam_h=np.float64(lam_h), lam_w=np.asarray(lam_w, dtype=np.float64))
    fam = family or get_family()
    arrays.update(family_loss=np.asarray(fam.loss.name), family_activation=np.asarray(fam.activation.name))
    if fam.eps is not None:
        arrays["family_eps"] = np.float64(fam.eps)
    for key, value in (extra or {}).items():
        arrays[key] = np.asarray(value)
    arrays.pop(CHECKSUM_KEY, None)
    arrays[CHECKSUM_KEY] = np.asarray(content_checksum(arrays))
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}.npz")
    np.savez_compressed(tmp, **arrays)  # deflate: a collapsed H_1 (n equal columns per class) shrinks ~5x
    os.replace(tmp, path)
    return path


def load_solution(path: str | Path) -> LoadedSolution:
    """Read and check a solution file (module docstring).

    Raises ``ConfigError`` (one line) for a file that is not an ``.npz`` with the expected arrays, for one
    whose ``checksum`` does not match, for matrices whose shapes do not chain (naming the array), for
    non-finite entries (naming the array) and for an invalid recorded family.

    Parameters
    ----------
    path : str or Path
        The ``.npz`` solution file (written by :func:`save_solution` or by hand).

    Returns
    -------
    LoadedSolution
        ``family, H1, weights, n, lam_h, lam_w, classes, arrays`` (the keys of the dict of earlier
        releases); ``.problem`` and ``.solution`` give the point as the theory's ``Problem`` and ``Solution``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> from deepcollapse.landscape.solution_file import load_solution, save_solution
    >>> H1, W1 = np.ones((2, 4)), np.eye(2)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = save_solution(pathlib.Path(tmp) / "p.npz", H1, [W1], n=2, lam_h=0.1, lam_w=[0.2])
    ...     sol = load_solution(path)
    >>> sol.classes, sol.layers, sol.lam_w, sol.family.name
    (2, 1, [0.2], 'mse+relu')
    >>> sol["n"], sol.problem.N, round(sol.solution.loss, 6)
    (2, 4, 1.1)
    """
    arrays = read_npz(path, hint=f"a solution file holds arrays {EXPECTED_ARRAYS}")
    if CHECKSUM_KEY in arrays:  # files written before checksums existed have none and load as before
        stored = str(arrays.pop(CHECKSUM_KEY))
        if stored != content_checksum(arrays):
            raise ConfigError(
                f"{path}: damaged or edited: its arrays do not match the checksum written with them; "
                "write it "
                f"again, or delete its {CHECKSUM_KEY!r} array to use it as it is."
            )
    path = Path(path)
    layers = sorted(int(m.group(1)) for k in arrays if (m := re.fullmatch(r"W_(\d+)", k)))
    missing = [k for k in ("H1", "n", "lam_h", "lam_w") if k not in arrays]
    if missing or not layers or layers != list(range(1, len(layers) + 1)):
        found = ", ".join(sorted(arrays)) or "none"
        raise ConfigError(
            f"FILE == {str(path)!r} holds arrays {found}, "
            f"must hold {EXPECTED_ARRAYS} (W_1 .. W_L consecutive)."
        )
    H1 = np.asarray(arrays["H1"], dtype=np.float64)
    weights = [np.asarray(arrays[f"W_{l}"], dtype=np.float64) for l in layers]
    if H1.ndim != 2:
        raise ConfigError(f"H1.shape == {H1.shape}, must be (d_1, N).")
    d_prev = H1.shape[0]
    for l, W in enumerate(weights, 1):
        if W.ndim != 2 or W.shape[1] != d_prev:
            prev = "H1" if l == 1 else f"W_{l - 1}"
            raise ConfigError(
                f"W_{l}.shape == {W.shape}, must be (d, {d_prev}) to chain with {prev} (d_{l} == {d_prev})."
            )
        d_prev = W.shape[0]
    for name, A in [("H1", H1)] + [(f"W_{l}", W) for l, W in enumerate(weights, 1)]:
        bad = ~np.isfinite(A)
        if bad.any():
            raise ConfigError(
                f"{name} has {int(bad.sum())} non-finite entries (NaN or inf), must be all finite."
            )
    K = weights[-1].shape[0]
    n = check_int("n", int(arrays["n"]), min=1)
    if H1.shape[1] != K * n:
        raise ConfigError(f"H1.shape == {H1.shape}, must have N == K n == {K} x {n} == {K * n} columns.")
    lam_h = check_float("lam_h", float(arrays["lam_h"]), gt=0.0)
    lam_w = np.atleast_1d(np.asarray(arrays["lam_w"], dtype=np.float64))
    if lam_w.shape == (1,):
        lam_w = np.repeat(lam_w, len(weights))
    if lam_w.shape != (len(weights),):
        raise ConfigError(f"lam_w.shape == {lam_w.shape}, must be ({len(weights)},) (one λ_W per layer).")
    lams = [check_float(f"lam_w[{i}]", x, gt=0.0) for i, x in enumerate(lam_w)]
    try:
        family = get_family(
            str(arrays.get("family_loss", "mse")),
            str(arrays.get("family_activation", "relu")),
            float(arrays["family_eps"]) if "family_eps" in arrays else None,
        )
    except (ConfigError, TypeError, ValueError) as exc:
        raise ConfigError(f"FILE == {str(path)!r} records an invalid model family ({exc})") from None
    return LoadedSolution(
        family=family, H1=H1, weights=weights, n=n, lam_h=lam_h, lam_w=lams, classes=K, arrays=arrays
    )


def check_family_matches(
    family: Family,
    where: str,
    loss: str | None = None,
    activation: str | None = None,
    eps: float | None = None,
) -> Family:
    """``family`` (recorded in ``where``, e.g. a solution file) if the options given agree with it, else a
    one-line ``ConfigError`` naming the first contradicting option.

    Parameters
    ----------
    family : Family
        The recorded family.
    where : str
        What records it, as the user named it (``"FILE == 'x.npz'"``).
    loss, activation, eps
        ``--loss``, ``--activation``, ``--eps`` as given (``None``: not given, the recorded value is used).

    Returns
    -------
    Family
        ``family``.

    Examples
    --------
    >>> from deepcollapse.family import get_family
    >>> check_family_matches(get_family(), "FILE == 'x.npz'", loss="mse").name
    'mse+relu'
    """
    recorded = {"loss": family.loss.name, "activation": family.activation.name, "eps": family.eps}
    for name, given in (("loss", loss), ("activation", activation), ("eps", eps)):
        if given is None:
            continue
        same = (
            recorded["eps"] is not None and float(given) == float(family.eps or 0.0)
            if name == "eps"
            else str(given) == recorded[name]
        )
        if not same:
            raise ConfigError(
                f"--{name} == {given!r} contradicts {where}, which holds a {family.name} point; leave out "
                "--loss/--activation/--eps (the recorded family is used) or give the recorded ones."
            )
    return family


def check_solution(
    path: str | Path, *, loss: str | None = None, activation: str | None = None, eps: float | None = None
) -> SolutionCheck:
    """Evaluate the file's family's eq. (1) in float64 from the matrices of a solution file.

    Parameters
    ----------
    path : str or Path
        The ``.npz`` solution file.
    loss, activation, eps
        Family options as given on the command line (``None``: not given); any that contradicts the file's
        recorded family (MSE + ReLU for a file without one) is refused (:func:`check_family_matches`).

    Returns
    -------
    SolutionCheck
        ``loss, fit, reg, claimed_loss, difference, classes, layers, n, widths, lam_h, lam_w, family`` (the
        keys of the dict of earlier releases); ``claimed_loss`` is the file's ``loss`` array (``None`` when
        absent), ``difference = loss − claimed_loss``, ``family`` the family's name (``"ce+relu"``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> from deepcollapse.landscape.solution_file import check_solution, save_solution
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp) / "p.npz"
    ...     _ = save_solution(path, np.ones((2, 4)), [np.eye(2)], n=2, lam_h=0.1, lam_w=[0.2],
    ...                       extra={"loss": 1.1})
    ...     r = check_solution(path)
    >>> round(r.loss, 6), round(r.fit, 6), round(r.reg, 6), r.claimed_loss, r.widths, r["family"]
    (1.1, 0.5, 0.6, 1.1, [2], 'mse+relu')
    """
    sol = load_solution(path)
    assert sol.family is not None and sol.H1 is not None and sol.weights is not None
    fam = check_family_matches(sol.family, f"FILE == {str(path)!r}", loss, activation, eps)
    parts = dufm_objective(
        sol.H1,
        sol.weights,
        float(sol.lam_h or 0.0),
        list(sol.lam_w or ()),
        loss=fam.loss.name,
        activation=fam.activation.name,
        eps=fam.eps,
    )
    claimed = sol.claimed_loss
    return SolutionCheck(
        loss=parts.total,
        fit=parts.fit,
        reg=parts.reg,
        claimed_loss=claimed,
        difference=None if claimed is None else parts.total - claimed,
        classes=sol.classes,
        layers=sol.layers,
        n=sol.n,
        widths=sol.widths,
        lam_h=sol.lam_h,
        lam_w=sol.lam_w,
        family=fam.name,
    )
