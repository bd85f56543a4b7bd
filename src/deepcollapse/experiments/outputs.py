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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deepcollapse._core.io import read_json
from deepcollapse._core.results import Result

__all__ = ["ClassMeans", "best_run", "class_mean_matrices", "forward_class_means"]


def _np(t: Any) -> np.ndarray:
    return t.detach().cpu().double().numpy() if hasattr(t, "detach") else np.asarray(t, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class ClassMeans(Result):
    """Class means of every layer of an L-DUFM point: the result of :func:`forward_class_means` and
    :func:`class_mean_matrices`.

    List index ``l - 1`` holds layer ``l``.  Read-only key access (``means["post"]``, ``means[kind]``) works
    as for the dict of earlier releases; ``to_dict()`` holds the same keys, JSON-ready (arrays as nested
    lists), and ``from_dict`` reads them back as arrays.

    Attributes
    ----------
    post : list of ndarray
        ``[M_1, ..., M_L]``, each ``(d_l, K)`` (columns = classes): the class means after the activation;
        ``M_1`` are the class means of the free features ``H_1``.
    pre : list of ndarray or None
        ``[None, M~_2, ..., M~_L]``, each ``(d_l, K)``: the class means before the activation (layer 1 has
        none).
    """

    post: list[np.ndarray] | None = None
    pre: list[np.ndarray | None] | None = None

    @classmethod
    def _read(cls, name: str, value: Any) -> Any:
        if name in ("post", "pre") and value is not None:
            return [None if M is None else np.asarray(M, dtype=np.float64) for M in value]
        return value


def forward_class_means(H1: Any, weights: Sequence[Any], classes: int, family: Any = None) -> ClassMeans:
    """Class means of every layer: ``post = [M_1, ..., M_L]``, ``pre = [None, M~_2, ..., M~_L]``, each
    ``(d_l, K)``; list index ``l - 1`` holds layer ``l``, ``M_1`` are the class means of the free features
    ``H_1``.

    Parameters
    ----------
    H1 : array_like or torch.Tensor, (d1, N)
        The features, samples ordered by class (``N = K n``).
    weights : sequence of array_like or torch.Tensor
        ``[W_1, ..., W_L]``; ``W_L`` is not applied (the output layer has no class-mean matrix of its own).
    classes : int
        ``K``.
    family : Family, optional
        The model family whose activation ``σ`` is applied (default: MSE + ReLU).

    Returns
    -------
    ClassMeans
        ``post`` and ``pre`` (float64 numpy arrays).

    Examples
    --------
    >>> import numpy as np
    >>> H1 = np.array([[1.0, 1.0, -1.0, -1.0], [0.0, 2.0, 1.0, 1.0]])  # K = 2 classes, n = 2
    >>> W1 = np.array([[1.0, 0.0], [0.0, -1.0]])
    >>> means = forward_class_means(H1, [W1, np.eye(2)], classes=2)
    >>> means.post[1]  # ReLU(W_1 H_1), averaged per class
    array([[1., 0.],
           [0., 0.]])
    >>> means.pre[1]
    array([[ 1., -1.],
           [-1., -1.]])
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

    post: list[np.ndarray] = [means(H)]
    pre: list[np.ndarray | None] = [None]
    for W in list(weights)[:-1]:
        Ht = _np(W) @ H  # (d_{l+1}, N)
        H = act.forward(Ht)
        pre.append(means(Ht))
        post.append(means(H))
    return ClassMeans(post=post, pre=pre)


def class_mean_matrices(folder: str | Path, run: int, classes: int) -> ClassMeans:
    """:func:`forward_class_means` of run ``run`` (index within the folder) of a DUFM run folder's
    ``params.pt``, with the folder's model family.

    Parameters
    ----------
    folder : str or Path
        A DUFM run folder (``params.pt``: ``H1`` ``(R, d1, N)``, ``weights`` ``[(R, d_{l+1}, d_l), ...]``,
        ``config``).
    run : int
        The run's index within the folder.
    classes : int
        ``K``.

    Returns
    -------
    ClassMeans
        ``post`` and ``pre`` of that run.

    Examples
    --------
    >>> import tempfile, torch
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> H1 = torch.tensor([[[1.0, 1.0, -1.0, -1.0], [0.0, 2.0, 1.0, 1.0]]])  # R = 1 run
    >>> torch.save({"H1": H1, "weights": [torch.eye(2)[None], torch.eye(2)[None]]}, folder / "params.pt")
    >>> class_mean_matrices(folder, 0, classes=2).post[1]  # ReLU(H_1): no weight applied yet
    array([[1., 0.],
           [1., 1.]])
    """
    import torch

    from deepcollapse.family import family_of

    params = torch.load(Path(folder) / "params.pt", map_location="cpu", weights_only=False)
    fam = family_of(params.get("config") or {})  # the folder's loss / activation
    return forward_class_means(params["H1"][run], [W[run] for W in params["weights"]], classes, fam)


def best_run(folder: str | Path) -> tuple[int, dict[str, Any]]:
    """Index (within the folder) and summary entry of the non-diverged run with the lowest final loss.

    Parameters
    ----------
    folder : str or Path
        A DUFM run folder (its ``summary.json``).

    Returns
    -------
    tuple of (int, dict)
        The run's index in ``summary["runs"]`` and its entry (the lowest of all runs when every run diverged).

    Examples
    --------
    >>> import json, tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> runs = [{"final_loss": 0.3}, {"final_loss": 0.1, "diverged": True}, {"final_loss": 0.2}]
    >>> _ = (folder / "summary.json").write_text(json.dumps({"runs": runs}))
    >>> best_run(folder)
    (2, {'final_loss': 0.2})
    """
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
