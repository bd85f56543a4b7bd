"""MNIST-1D (Greydanus & Steinbach 2024), generated offline by the ``mnist1d`` package from its default
arguments.

``mnist1d.data.make_dataset(get_dataset_args())`` builds the dataset procedurally from ten hard-coded 1-D
templates (one per digit) by padding, shearing, translating, adding correlated and i.i.d. noise and resampling
to 40 points, all from the fixed seed 42 of the default arguments: 5000 signals, the first 4000 (after the
package's own shuffle) for training and the last 1000 for testing, about 400 / 100 per class.  Its download
path (``get_dataset``, a pickle fetched from GitHub) is never used, so nothing touches the network.

The package seeds numpy's and Python's *global* generators; :func:`load_mnist1d_split` restores both
afterwards, so loading the data changes no other random stream.  The generated arrays are cached per process.

Shape convention: signals are returned as ``(N, 1, 1, 40)`` float32 "images" (one channel, height 1), so the
dataset layer treats them like the image datasets (per-channel normalisation, class subsets, subsampling). The
package's generator already centres the whole dataset and scales it to unit standard deviation.
"""

from __future__ import annotations

import functools
import random

import numpy as np

from deepcollapse._core.checks import ConfigError

__all__ = ["load_mnist1d_split", "MNIST1D_LENGTH", "MNIST1D_VERSION"]

MNIST1D_LENGTH = 40  # final_seq_length of the default arguments
MNIST1D_VERSION = "0.0.2.post1"  # the pinned package version whose generator defines the data


@functools.lru_cache(maxsize=1)
def _generate() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    try:
        from mnist1d.data import get_dataset_args, make_dataset
    except ImportError as exc:
        raise ConfigError(
            f"dataset == 'mnist1d', needs the mnist1d package (pip install mnist1d=={MNIST1D_VERSION})."
        ) from exc
    np_state, py_state = np.random.get_state(), random.getstate()  # noqa: NPY002 - restored below
    try:
        data = make_dataset(get_dataset_args())  # offline: procedural generation from the default args
    finally:
        np.random.set_state(np_state)  # noqa: NPY002
        random.setstate(py_state)
    return (
        np.asarray(data["x"], dtype=np.float32),
        np.asarray(data["y"], dtype=np.int64),
        np.asarray(data["x_test"], dtype=np.float32),
        np.asarray(data["y_test"], dtype=np.int64),
    )


def load_mnist1d_split(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """``(signals (N, 1, 1, 40) float32, labels (N,) int64)`` of the ``"train"`` (4000) or ``"test"`` (1000)
    part of MNIST-1D generated from the package's default arguments (see the module docstring).

    Parameters
    ----------
    split : {"train", "test"}, default "train"
        Which part.

    Returns
    -------
    tuple of numpy.ndarray
        The signals ``(N, 1, 1, 40)`` float32 and the labels ``(N,)`` int64.

    Examples
    --------
    >>> x, y = load_mnist1d_split("test")  # generated offline, about a second
    >>> x.shape, x.dtype, y.shape
    ((1000, 1, 1, 40), dtype('float32'), (1000,))
    """
    if split not in ("train", "test"):
        raise ConfigError(f"split == {split!r}, must be one of 'train', 'test'.")
    x_tr, y_tr, x_te, y_te = _generate()
    x, y = (x_tr, y_tr) if split == "train" else (x_te, y_te)
    return x[:, None, None, :].copy(), y.copy()
