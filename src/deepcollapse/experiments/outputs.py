"""Read trained L-DUFM parameters back from a run folder and recompute the class-mean matrices.

``params.pt`` holds ``{"H1": (R, d1, N), "weights": [(R, d_{l+1}, d_l), ...], "config": dict}``
(docs/architecture.md).  The forward pass below is eq. (1) of the 2024 paper written out in float64 numpy
(``H~_{l+1} = W_l H_l``, ``H_{l+1} = σ(H~_{l+1})``, σ of the run's model family, ReLU by default),
followed by class means over the ``n`` samples of each class (samples are ordered by class, labels
``arange(K).repeat(n)``).  It is used only to *visualise* finished runs and theory constructions (2024
Figs. 1, 5–8); the trainer's own metrics are in ``metrics.jsonl``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from deepcollapse._core.io import read_json

__all__ = ["best_run", "class_mean_matrices", "forward_class_means"]


def _np(t: Any) -> np.ndarray:
    return t.detach().cpu().double().numpy() if hasattr(t, "detach") else np.asarray(t, dtype=np.float64)


def forward_class_means(
    H1: Any, weights: Sequence[Any], classes: int, family: Any = None
) -> dict[str, list[Any]]:
    """Class means of every layer: ``{"post": [M_1, ..., M_L], "pre": [None, M~_2, ..., M~_L]}``, each
    ``(d_l, K)``; list index ``l - 1`` holds layer ``l``, ``M_1`` are the class means of the free features
    ``H_1``.

    ``H1``: ``(d1, N)`` with samples ordered by class; ``weights``: ``[W_1, ..., W_L]`` (``W_L`` is not
    applied: the output layer has no class-mean matrix of its own).
    """
    from deepcollapse.family import get_family

    act = (family or get_family()).activation  # σ of the run's model family (ReLU by default)
    H = _np(H1)  # (d1, N)
    N = H.shape[1]
    if N % classes:
        raise ValueError(f"H1 has N = {N} columns, not a multiple of classes = {classes}")
    n = N // classes

    def means(A: np.ndarray) -> np.ndarray:
        return A.reshape(A.shape[0], classes, n).mean(axis=2)  # (d, K): columns ordered by class

    post: list[Any] = [means(H)]
    pre: list[Any] = [None]
    for W in list(weights)[:-1]:
        Ht = _np(W) @ H  # (d_{l+1}, N)
        H = act.forward(Ht)
        pre.append(means(Ht))
        post.append(means(H))
    return {"post": post, "pre": pre}


def class_mean_matrices(folder: str | Path, run: int, classes: int) -> dict[str, list[Any]]:
    """:func:`forward_class_means` of run ``run`` (index within the folder) of a DUFM run folder's
    ``params.pt``."""
    import torch

    from deepcollapse.family import family_of

    params = torch.load(Path(folder) / "params.pt", map_location="cpu", weights_only=False)
    fam = family_of(params.get("config") or {})  # the folder's loss / activation
    return forward_class_means(params["H1"][run], [W[run] for W in params["weights"]], classes, fam)


def best_run(folder: str | Path) -> tuple[int, dict[str, Any]]:
    """Index (within the folder) and summary entry of the non-diverged run with the lowest final loss."""
    summary = read_json(Path(folder) / "summary.json")
    runs = summary["runs"]
    ok = [
        i
        for i, r in enumerate(runs)
        if not r.get("diverged") and np.isfinite(float(r.get("final_loss", np.nan)))
    ]
    if not ok:
        ok = list(range(len(runs)))
    i = min(ok, key=lambda j: float(runs[j].get("final_loss", np.inf)))
    return i, runs[i]
