"""Where ``deepcollapse dufm landscape`` saves its result, and when it may replace an earlier one.

Without ``--out`` the result goes next to the input: ``RUN/landscape/`` for a run or search folder,
``X.landscape/`` for a solution file ``X.npz``, ``landscape_<dnc|srg>_K.._L.._n../`` in the working folder for
a construction.  ``landscape.json`` records the ``inputs`` that determine the result (the problem, a SHA-256
of the point's float64 parameters, ``k`` and the tolerances); an earlier result with other inputs is kept
unless ``--force`` (the same inputs give the same numbers, so a re-run replaces it silently).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError

__all__ = ["RESULT_FILES", "claim_output", "default_output", "landscape_inputs"]

#: the files a landscape result consists of (``--force`` replaces these, nothing else in the folder)
RESULT_FILES = ("landscape.json", "landscape_slices.png", "landscape_slices.pdf", "landscape_slices.npz")


def default_output(
    target: str | None, construction: str | None, classes: int, layers: int, n: int, family: str | None = None
) -> Path:
    """The folder a landscape is saved in when no ``--out`` is given.

    Parameters
    ----------
    target : str or None
        The TARGET as typed (a run folder, a search folder or a solution ``.npz``); ``None`` with
        ``construction``.
    construction : str or None
        ``"dnc"`` or ``"srg"`` when the point is a construction.
    classes, layers, n : int
        The problem of a construction (names its folder).
    family : str, optional
        The model family of a construction other than MSE + ReLU (``"ce+relu"``), appended to its folder's
        name.

    Returns
    -------
    Path
        ``TARGET/landscape`` for a folder, ``X.landscape`` for ``X.npz``, ``landscape_<c>_K.._L.._n..``
        (in the working folder) for a construction.

    Examples
    --------
    >>> default_output(None, "dnc", 3, 2, 2), default_output("x.npz", None, 3, 2, 2)
    (PosixPath('landscape_dnc_K3_L2_n2'), PosixPath('x.landscape'))
    >>> default_output(None, "srg", 6, 3, 1, "ce+relu").name
    'landscape_srg_K6_L3_n1_ce_relu'
    """
    if target is None:
        tail = "" if family is None or family == "mse+relu" else "_" + re.sub(r"[^A-Za-z0-9.]+", "_", family)
        tail = tail.rstrip("_")
        return Path(f"landscape_{construction}_K{classes}_L{layers}_n{n}{tail}")
    path = Path(target)
    if path.is_dir():
        return path / "landscape"
    return path.with_suffix(".landscape") if path.suffix == ".npz" else path.parent / f"{path.name}.landscape"


def landscape_inputs(
    params: Sequence[np.ndarray], problem: Any, *, k: int, grad_tol: float, eig_tol: float
) -> dict[str, Any]:
    """What determines a landscape result: the problem, the point (SHA-256 of its float64 parameters and
    shapes), ``k`` and the tolerances (``landscape.json``'s ``inputs``).  A plain dict: the JSON compared
    key by key with a cached file's ``inputs`` to decide whether the cache answers, not a result.

    Parameters
    ----------
    params : sequence of ndarray
        The point ``[H_1, W_1, .., W_L]`` as loaded.
    problem : Problem
        Its problem (``classes, layers, n, lam_h, lam_w``).
    k, grad_tol, eig_tol
        The command's ``--k``, ``--grad-tol``, ``--eig-tol``.

    Returns
    -------
    dict
        JSON-ready.  A plain dict: the JSON ``inputs`` entry written to ``landscape.json``.

    Examples
    --------
    >>> import numpy as np
    >>> from deepcollapse.theory.problem import Problem
    >>> inputs = landscape_inputs([np.eye(2), np.eye(2)], Problem(2, 1, 1, 0.1, 0.1), k=6, grad_tol=1e-6,
    ...     eig_tol=1e-6)
    >>> inputs["lam_w"], len(inputs["point_sha256"])
    ([0.1], 64)
    """
    digest = hashlib.sha256()
    for p in params:
        a = np.ascontiguousarray(p, dtype=np.float64)
        digest.update(repr(a.shape).encode())
        digest.update(a.tobytes())
    inputs = {
        "classes": int(problem.classes),
        "layers": int(problem.layers),
        "n": int(problem.n),
        "lam_h": float(problem.lam_h),
        "lam_w": [float(x) for x in problem.lam_w],
        "k": int(k),
        "grad_tol": float(grad_tol),
        "eig_tol": float(eig_tol),
        "point_sha256": digest.hexdigest(),
    }
    family = getattr(problem, "family", None)
    if family is not None and not family.is_default:  # MSE + ReLU results keep the inputs they always had
        inputs["family"] = family.name
    return inputs


def _point(inputs: Any) -> Any:
    """``inputs`` without ``refine_kinks``: the kink refinement of a point continues that point's landscape
    (``dufm landscape X && dufm landscape X --refine-kinks``), it is not another point."""
    return {k: v for k, v in inputs.items() if k != "refine_kinks"} if isinstance(inputs, dict) else inputs


def claim_output(out: Path, inputs: dict[str, Any], *, force: bool, option: str | None) -> Path:
    """Create ``out`` for a landscape result; refuse a folder holding the result of other ``inputs`` unless
    ``force`` (checked before the computation, so a refusal costs nothing).  The same point and settings with
    or without ``--refine-kinks`` replace each other silently (the refinement continues that landscape).

    Parameters
    ----------
    out : Path
        The output folder.
    inputs : dict
        :func:`landscape_inputs` of this command.
    force : bool
        Replace an earlier result of other inputs.
    option : str or None
        ``"--out"`` when the user named the folder, ``None`` for the default folder (the message differs).

    Returns
    -------
    Path
        ``out``, created.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from deepcollapse.theory.problem import Problem
    >>> inputs = landscape_inputs([np.eye(2), np.eye(2)], Problem(2, 1, 1, 0.1, 0.1), k=6, grad_tol=1e-6,
    ...     eig_tol=1e-6)
    >>> claim_output(Path(tempfile.mkdtemp()) / "out", inputs, force=False, option=None).is_dir()
    True
    """
    where = f"{option} == {str(out)!r}" if option else f"the default output folder {str(out)!r}"
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{where} is a file, must be a folder (pass --out to save elsewhere).")
    saved = out / "landscape.json"
    if saved.is_file() and not force:
        try:
            old = json.loads(saved.read_text()).get("inputs")
        except (OSError, ValueError, AttributeError):
            old = "unreadable"
        if _point(old) != _point(inputs):
            if isinstance(old, dict):
                diff = ", ".join(
                    "another point (its parameters differ)"
                    if key == "point_sha256"
                    else f"{key} {old.get(key)} -> {value}"
                    for key, value in inputs.items()
                    if old.get(key) != value
                )
            else:
                diff = (
                    "its landscape.json is unreadable"
                    if old == "unreadable"
                    else "written without its inputs"
                )
            raise ConfigError(
                f"{where} holds the landscape of another point or settings ({diff}); pass --force to replace "
                f"it{'' if option else ', or --out to save elsewhere'}."
            )
    out.mkdir(parents=True, exist_ok=True)
    return out
