"""Explicit L-DUFM points on disk (``.npz``) and their independent check against eq. (1).

File format (``numpy.savez``; every array float64 unless stated):

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError, check_float, check_int
from deepcollapse._core.io import CHECKSUM_KEY, content_checksum, read_npz
from deepcollapse.family import Family, get_family
from deepcollapse.theory.objective import dufm_objective

__all__ = ["EXPECTED_ARRAYS", "check_family_matches", "check_solution", "load_solution", "save_solution"]

EXPECTED_ARRAYS = "H1, W_1 .. W_L, n, lam_h, lam_w"


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
    (default MSE + ReLU), the ``extra`` arrays and the ``checksum`` of them all, atomically."""
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
    np.savez(tmp, **arrays)
    os.replace(tmp, path)
    return path


def load_solution(path: str | Path) -> dict[str, Any]:
    """Read a solution file: ``{"H1", "weights", "n", "lam_h", "lam_w", "classes", "arrays"}``.

    Raises ``ConfigError`` (one line) for a file that is not an ``.npz`` with the expected arrays, for
    matrices whose shapes do not chain (naming the array) and for non-finite entries (naming the array).
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
    return {
        "family": family,
        "H1": H1,
        "weights": weights,
        "n": n,
        "lam_h": lam_h,
        "lam_w": lams,
        "classes": K,
        "arrays": arrays,
    }


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
) -> dict[str, Any]:
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
    dict
        ``{"loss", "fit", "reg", "claimed_loss", "difference", "classes", "layers", "n", "widths", "lam_h",
        "lam_w", "family"}``; ``claimed_loss`` is the file's ``loss`` array (``None`` when absent),
        ``difference = loss − claimed_loss``, ``family`` the family's name (``"ce+relu"``).
    """
    sol = load_solution(path)
    fam = check_family_matches(sol["family"], f"FILE == {str(path)!r}", loss, activation, eps)
    parts = dufm_objective(
        sol["H1"],
        sol["weights"],
        sol["lam_h"],
        sol["lam_w"],
        loss=fam.loss.name,
        activation=fam.activation.name,
        eps=fam.eps,
    )
    claimed = float(sol["arrays"]["loss"]) if "loss" in sol["arrays"] else None
    return {
        "loss": parts.total,
        "fit": parts.fit,
        "reg": parts.reg,
        "claimed_loss": claimed,
        "difference": None if claimed is None else parts.total - claimed,
        "classes": sol["classes"],
        "layers": len(sol["weights"]),
        "n": sol["n"],
        "widths": [sol["H1"].shape[0]] + [W.shape[0] for W in sol["weights"][:-1]],
        "lam_h": sol["lam_h"],
        "lam_w": sol["lam_w"],
        "family": fam.name,
    }
