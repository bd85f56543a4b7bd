"""The 8×8 handwritten digits bundled with scikit-learn (offline), with a deterministic stratified split.

``sklearn.datasets.load_digits``: 1797 grey images of 8×8 pixels with integer intensities 0..16, 10 classes
(about 180 per class).  The split puts, in every class, a fixed fraction of samples in the test set, chosen
by a permutation from ``numpy.random.default_rng(split_seed)`` (default seed 0, test fraction 0.2), so it
never changes between runs or machines.
"""

from __future__ import annotations

import numpy as np

from deepcollapse._core.checks import ConfigError, check_float

__all__ = ["load_digits_split", "DIGITS_MAX"]

DIGITS_MAX = 16  # intensities are integers in 0..16


def load_digits_split(
    split: str = "train", test_fraction: float = 0.2, split_seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``(images (N, 1, 8, 8) uint8 in 0..16, labels (N,) int64)`` of the ``"train"`` or ``"test"`` part.

    Parameters
    ----------
    split : {"train", "test"}, default "train"
        Which part.
    test_fraction : float, default 0.2
        The share of every class in the test part, in ``(0, 1)``.
    split_seed : int, default 0
        The seed of the permutation that chooses it.

    Returns
    -------
    tuple of numpy.ndarray
        The images ``(N, 1, 8, 8)`` uint8 in ``0..DIGITS_MAX`` and the labels ``(N,)`` int64, in the order of
        scikit-learn's file.

    Examples
    --------
    >>> images, labels = load_digits_split("test")
    >>> images.shape, int(images.max()), sorted(set(labels.tolist())) == list(range(10))
    ((359, 1, 8, 8), 16, True)
    """
    if split not in ("train", "test"):
        raise ConfigError(f"split == {split!r}, must be one of 'train', 'test'.")
    test_fraction = check_float("test_fraction", test_fraction, gt=0.0, lt=1.0)
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:  # pragma: no cover - scikit-learn is a declared dependency
        raise ConfigError("dataset == 'digits', needs scikit-learn (pip install scikit-learn).") from exc
    bunch = load_digits()
    images = bunch.images.astype(np.uint8)[:, None, :, :]  # (1797, 1, 8, 8)
    labels = bunch.target.astype(np.int64)
    rng = np.random.default_rng(split_seed)
    chosen = []
    for c in range(10):
        idx = np.flatnonzero(labels == c)
        idx = idx[rng.permutation(idx.size)]
        n_test = int(round(test_fraction * idx.size))
        chosen.append(np.sort(idx[:n_test] if split == "test" else idx[n_test:]))
    sel = np.sort(np.concatenate(chosen))
    return images[sel], labels[sel]
