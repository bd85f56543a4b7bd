"""CIFAR-10 pickle reader: batches written here in the real format (a pickled dict), then read back."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from deepcollapse.nets.data.cifar import load_cifar10, read_cifar_batch, write_cifar_batch
from deepcollapse.nets.data.idx import DataFileError


def _batch(n, seed):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n).tolist()
    return data, labels


def _write_real(path, data, labels):
    # the format as distributed: bytes keys, data (n, 3072) uint8, labels a list of ints, pickled
    blob = {
        b"batch_label": b"training batch 1 of 5",
        b"labels": labels,
        b"data": data,
        b"filenames": [b"x.png"] * len(labels),
    }
    with open(path, "wb") as fh:
        pickle.dump(blob, fh, protocol=2)


def _folder(root, n=6):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    batches = {}
    for i, name in enumerate([f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]):
        batches[name] = _batch(n, i)
        _write_real(folder / name, *batches[name])
    return folder, batches


def test_read_batch_layout(tmp_path):
    data, labels = _batch(4, 0)
    p = tmp_path / "data_batch_1"
    _write_real(p, data, labels)
    x, y = read_cifar_batch(p)
    assert x.shape == (4, 3, 32, 32) and x.dtype == np.uint8
    # channel c of image i = data[i, 1024 c : 1024 (c+1)] in row-major 32x32 order (R, G, B planes)
    for i in range(4):
        for c in range(3):
            np.testing.assert_array_equal(x[i, c], data[i, 1024 * c : 1024 * (c + 1)].reshape(32, 32))
    np.testing.assert_array_equal(y, labels)


def test_write_cifar_batch_round_trip(tmp_path):
    images = np.random.default_rng(5).integers(0, 256, size=(3, 3, 32, 32), dtype=np.uint8)
    write_cifar_batch(tmp_path / "b", images, [1, 2, 3])
    x, y = read_cifar_batch(tmp_path / "b")
    np.testing.assert_array_equal(x, images)
    np.testing.assert_array_equal(y, [1, 2, 3])


def test_load_cifar10_concatenates_batches(tmp_path):
    _, batches = _folder(tmp_path)
    x, y = load_cifar10(tmp_path, "train")
    assert x.shape == (30, 3, 32, 32)
    np.testing.assert_array_equal(x[6:12].reshape(6, -1), batches["data_batch_2"][0])
    np.testing.assert_array_equal(y[:6], batches["data_batch_1"][1])
    x, y = load_cifar10(tmp_path / "cifar-10-batches-py", "test")  # the folder itself works too
    np.testing.assert_array_equal(y, batches["test_batch"][1])


def test_missing_files_error(tmp_path):
    with pytest.raises(DataFileError) as err:
        load_cifar10(tmp_path, "train")
    msg = str(err.value)
    assert "cifar-10-batches-py" in msg and "data_batch_1" in msg and "test_batch" in msg
    assert "cifar-10-python.tar.gz" in msg
    folder, _ = _folder(tmp_path / "other")
    os.remove(folder / "data_batch_4")
    with pytest.raises(DataFileError, match="data_batch_4 not found"):
        load_cifar10(tmp_path / "other", "train")


def test_corrupted_batches(tmp_path):
    p = tmp_path / "data_batch_1"
    p.write_bytes(b"\x80\x02garbage that is not a pickle")
    with pytest.raises(DataFileError, match=r"data_batch_1: bad pickle"):
        read_cifar_batch(p)
    data, labels = _batch(4, 1)
    raw = pickle.dumps({b"data": data, b"labels": labels}, protocol=2)
    p.write_bytes(raw[: len(raw) // 2])  # truncated
    with pytest.raises(DataFileError, match="bad pickle"):
        read_cifar_batch(p)
    _write_real(p, data[:, :100], labels)
    with pytest.raises(DataFileError, match=r"data has shape \(4, 100\).*must be \(n, 3072\)"):
        read_cifar_batch(p)
    _write_real(p, data, labels[:3])
    with pytest.raises(DataFileError, match="labels for 4 images"):
        read_cifar_batch(p)
    with open(p, "wb") as fh:
        pickle.dump({b"data": data}, fh, protocol=2)
    with pytest.raises(DataFileError, match="key 'labels' missing"):
        read_cifar_batch(p)
    with open(p, "wb") as fh:
        pickle.dump([1, 2, 3], fh, protocol=2)
    with pytest.raises(DataFileError, match="holds a list"):
        read_cifar_batch(p)


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_pickle_with_code_is_refused(tmp_path):
    p = tmp_path / "data_batch_1"
    with open(p, "wb") as fh:
        pickle.dump({b"data": _Evil(), b"labels": []}, fh, protocol=2)
    with pytest.raises(DataFileError, match="not allowed"):
        read_cifar_batch(p)
