"""CIFAR-10 from its standard Python pickle batches (``cifar-10-batches-py``), read directly (no torchvision).

Each batch file (``data_batch_1`` ... ``data_batch_5``, ``test_batch``) is a pickled dict with ``b"data"`` a
``(10000, 3072)`` uint8 array (rows = images, the 1024 red, then green, then blue values in row-major 32×32
order) and ``b"labels"`` a list of 10000 ints in 0..9 (Krizhevsky 2009,
https://www.cs.toronto.edu/~kriz/cifar.html). Files are unpickled with a restricted unpickler that only
rebuilds numpy arrays, so a crafted file cannot run code.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError
from deepcollapse.nets.data.idx import DataFileError

__all__ = ["load_cifar10", "read_cifar_batch", "write_cifar_batch", "CIFAR10_FILES", "CIFAR10_CLASSES"]

CIFAR10_FILES = {
    "train": tuple(f"data_batch_{i}" for i in range(1, 6)),
    "test": ("test_batch",),
}
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")

_HOW_TO_GET = (
    "download https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz and extract it (tar xzf) "
    "inside that folder; "
    "nothing is downloaded automatically"
)

_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("_codecs", "encode"),
}


class _NumpyOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"global {module}.{name} is not allowed in a CIFAR batch")


def read_cifar_batch(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read one batch file: ``(images (n, 3, 32, 32) uint8, labels (n,) int64)``.

    Raises :class:`DataFileError` naming the file for a bad pickle, missing keys, or wrong sizes/ranges.

    Parameters
    ----------
    path : str or Path
        The batch file (``data_batch_1`` .. ``data_batch_5``, ``test_batch``).

    Returns
    -------
    tuple of numpy.ndarray
        The images ``(n, 3, 32, 32)`` uint8 and the labels ``(n,)`` int64.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "test_batch"
    >>> write_cifar_batch(path, np.zeros((2, 3, 32, 32), dtype=np.uint8), np.array([3, 7]))
    >>> images, labels = read_cifar_batch(path)
    >>> images.shape, labels.tolist()
    ((2, 3, 32, 32), [3, 7])
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read the file ({exc}).") from None
    try:
        blob = _NumpyOnlyUnpickler(io.BytesIO(raw), encoding="bytes").load()
    except Exception as exc:  # noqa: BLE001 - any unpickling failure means a corrupted file
        raise DataFileError(
            f"{path}: bad pickle, not a CIFAR-10 batch ({type(exc).__name__}: {exc})."
        ) from None
    if not isinstance(blob, dict):
        raise DataFileError(
            f"{path}: holds a {type(blob).__name__}, must be a dict with b'data' and b'labels'."
        )
    blob = {(k.decode() if isinstance(k, bytes) else k): v for k, v in blob.items()}
    for key in ("data", "labels"):
        if key not in blob:
            raise DataFileError(f"{path}: key {key!r} missing (keys: {sorted(map(str, blob))}).")
    data = np.asarray(blob["data"])
    labels = np.asarray(blob["labels"])
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or data.dtype != np.uint8:
        raise DataFileError(
            f"{path}: data has shape {data.shape} and dtype {data.dtype}, must be (n, 3072) uint8."
        )
    if labels.ndim != 1 or labels.shape[0] != data.shape[0]:
        raise DataFileError(
            f"{path}: {labels.shape} labels for {data.shape[0]} images, must be one per image."
        )
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise DataFileError(f"{path}: labels must be in 0..9, found {labels.min()}..{labels.max()}.")
    return data.reshape(-1, 3, 32, 32), labels.astype(np.int64)


def write_cifar_batch(path: str | Path, images: np.ndarray, labels: np.ndarray) -> None:
    """Write a batch in the standard format (``images (n, 3, 32, 32)`` uint8); the inverse of the reader.

    Parameters
    ----------
    path : str or Path
        The file to write.
    images : numpy.ndarray, (n, 3, 32, 32)
        The images (cast to uint8).
    labels : numpy.ndarray, (n,)
        Their labels in 0..9.

    Returns
    -------
    None
        The file is written (a pickled dict, protocol 2).

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "data_batch_1"
    >>> write_cifar_batch(path, np.full((1, 3, 32, 32), 255, dtype=np.uint8), np.array([9]))
    >>> int(read_cifar_batch(path)[0].max())
    255
    """
    images = np.asarray(images, dtype=np.uint8)
    blob = {
        b"batch_label": b"written by deepcollapse",
        b"labels": [int(v) for v in labels],
        b"data": images.reshape(images.shape[0], -1),
        b"filenames": [b"img%d.png" % i for i in range(len(labels))],
    }
    with open(path, "wb") as fh:
        pickle.dump(blob, fh, protocol=2)


def cifar10_folder(data_dir: str | Path) -> Path | None:
    """``data_dir/cifar-10-batches-py`` or ``data_dir`` itself, whichever holds ``data_batch_1``.

    Parameters
    ----------
    data_dir : str or Path
        The data folder.

    Returns
    -------
    Path or None
        The folder of the batch files; ``None`` if neither holds ``data_batch_1``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> root = Path(tempfile.mkdtemp())
    >>> cifar10_folder(root) is None
    True
    >>> (root / "cifar-10-batches-py").mkdir()
    >>> (root / "cifar-10-batches-py" / "data_batch_1").touch()
    >>> cifar10_folder(root).name
    'cifar-10-batches-py'
    """
    root = Path(data_dir)
    for folder in (root / "cifar-10-batches-py", root):
        if (folder / "data_batch_1").is_file():
            return folder
    return None


def load_cifar10(data_dir: str | Path, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """Return ``(images (N, 3, 32, 32) uint8, labels (N,) int64)`` of the ``"train"`` or ``"test"`` split.

    Parameters
    ----------
    data_dir : str or Path
        The folder holding ``cifar-10-batches-py`` (or the batch files themselves).
    split : {"train", "test"}, default "train"
        Which split: the five training batches or ``test_batch``.

    Returns
    -------
    tuple of numpy.ndarray
        The images ``(N, 3, 32, 32)`` uint8 and the labels ``(N,)`` int64.

    Raises
    ------
    DataFileError
        A batch file is missing (the message says how to obtain them) or damaged.

    Examples
    --------
    A tiny ``test_batch`` written by :func:`write_cifar_batch` into ``cifar-10-batches-py``:

    >>> import tempfile
    >>> import numpy as np
    >>> from pathlib import Path
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "cifar-10-batches-py").mkdir()
    >>> images = np.zeros((3, 3, 32, 32), dtype=np.uint8)
    >>> write_cifar_batch(root / "cifar-10-batches-py" / "test_batch", images, np.array([0, 1, 2]))
    >>> images, labels = load_cifar10(root, "test")
    >>> images.shape, labels.tolist()
    ((3, 3, 32, 32), [0, 1, 2])
    """
    if split not in CIFAR10_FILES:
        raise ConfigError(f"split == {split!r}, must be one of 'train', 'test'.")
    folder = cifar10_folder(data_dir) or Path(data_dir) / "cifar-10-batches-py"
    images, labels = [], []
    for name in CIFAR10_FILES[split]:
        p = folder / name
        if not p.is_file():
            expected = ", ".join(CIFAR10_FILES["train"] + CIFAR10_FILES["test"])
            raise DataFileError(
                f"data_dir == {str(data_dir)!r}: CIFAR-10 file {name} not found (looked in {folder}). "
                f"Expected files in {Path(data_dir) / 'cifar-10-batches-py'}: {expected}. "
                f"To obtain them, {_HOW_TO_GET}."
            )
        x, y = read_cifar_batch(p)
        images.append(x)
        labels.append(y)
    return np.concatenate(images), np.concatenate(labels)
