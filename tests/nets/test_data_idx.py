"""MNIST IDX reader: files written here byte by byte in the real format (plain and gzip), then read back."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest

from deepcollapse.nets.data.idx import DataFileError, load_mnist, read_idx, write_idx


def _idx_bytes(arr: np.ndarray) -> bytes:
    """The IDX encoding written out from the format's definition (independent of write_idx)."""
    assert arr.dtype == np.uint8
    header = bytes([0, 0, 0x08, arr.ndim]) + b"".join(struct.pack(">I", s) for s in arr.shape)
    return header + arr.tobytes(order="C")


def _write(path, arr, gz=False):
    data = _idx_bytes(arr)
    if gz:
        with gzip.open(path, "wb") as fh:
            fh.write(data)
    else:
        path.write_bytes(data)


def _fake_mnist(n, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8), rng.integers(0, 10, size=n).astype(
        np.uint8
    )


@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_round_trip(tmp_path, gz):
    images, labels = _fake_mnist(7, 0)
    p_img = tmp_path / ("img.idx3" + (".gz" if gz else ""))
    p_lab = tmp_path / ("lab.idx1" + (".gz" if gz else ""))
    _write(p_img, images, gz)
    _write(p_lab, labels, gz)
    got = read_idx(p_img)
    assert got.shape == (7, 28, 28) and got.dtype == np.uint8
    np.testing.assert_array_equal(got, images)
    np.testing.assert_array_equal(read_idx(p_lab), labels)
    # the header really is the MNIST magic number 2051 / 2049
    raw = gzip.open(p_img).read() if gz else p_img.read_bytes()
    assert struct.unpack(">I", raw[:4])[0] == 2051


def test_write_idx_matches_reference_encoding(tmp_path):
    images, _ = _fake_mnist(3, 1)
    write_idx(tmp_path / "a", images)
    assert (tmp_path / "a").read_bytes() == _idx_bytes(images)
    arr = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    write_idx(tmp_path / "b.gz", arr)
    np.testing.assert_array_equal(read_idx(tmp_path / "b.gz"), arr)


def test_wrong_magic_names_file(tmp_path):
    p = tmp_path / "train-images-idx3-ubyte"
    p.write_bytes(b"\x12\x34\x08\x03" + b"\x00" * 20)
    with pytest.raises(DataFileError, match=r"train-images-idx3-ubyte.*wrong magic number"):
        read_idx(p)


def test_truncated_and_padded_files(tmp_path):
    images, _ = _fake_mnist(4, 2)
    data = _idx_bytes(images)
    p = tmp_path / "t.idx"
    p.write_bytes(data[:-10])
    with pytest.raises(DataFileError, match=r"t\.idx: truncated.*\(4, 28, 28\)"):
        read_idx(p)
    p.write_bytes(data + b"\x00")
    with pytest.raises(DataFileError, match="trailing bytes"):
        read_idx(p)
    p.write_bytes(data[:6])
    with pytest.raises(DataFileError, match="truncated header"):
        read_idx(p)
    p.write_bytes(b"\x00\x00")
    with pytest.raises(DataFileError, match="too short"):
        read_idx(p)


def test_bad_gzip_names_file(tmp_path):
    p = tmp_path / "x-idx1-ubyte.gz"
    p.write_bytes(b"not gzip at all")
    with pytest.raises(DataFileError, match=r"x-idx1-ubyte\.gz: cannot read"):
        read_idx(p)


def _mnist_folder(folder, gz_train=False, gz_test=True, n_train=12, n_test=5):
    folder.mkdir(parents=True, exist_ok=True)
    tr_x, tr_y = _fake_mnist(n_train, 3)
    te_x, te_y = _fake_mnist(n_test, 4)
    sfx = lambda gz: ".gz" if gz else ""
    _write(folder / f"train-images-idx3-ubyte{sfx(gz_train)}", tr_x, gz_train)
    _write(folder / f"train-labels-idx1-ubyte{sfx(gz_train)}", tr_y, gz_train)
    _write(folder / f"t10k-images-idx3-ubyte{sfx(gz_test)}", te_x, gz_test)
    _write(folder / f"t10k-labels-idx1-ubyte{sfx(gz_test)}", te_y, gz_test)
    return tr_x, tr_y, te_x, te_y


def test_load_mnist_plain_and_gz(tmp_path):
    tr_x, tr_y, te_x, te_y = _mnist_folder(tmp_path)
    x, y = load_mnist(tmp_path, "train")
    np.testing.assert_array_equal(x, tr_x)
    np.testing.assert_array_equal(y, tr_y.astype(np.int64))
    x, y = load_mnist(tmp_path, "test")
    np.testing.assert_array_equal(x, te_x)
    np.testing.assert_array_equal(y, te_y)


def test_load_mnist_torchvision_layout(tmp_path):
    tr_x, *_ = _mnist_folder(tmp_path / "MNIST" / "raw")
    x, _ = load_mnist(tmp_path, "train")
    np.testing.assert_array_equal(x, tr_x)


def test_missing_mnist_error_names_folder_files_and_source(tmp_path):
    with pytest.raises(DataFileError) as err:
        load_mnist(tmp_path, "train")
    msg = str(err.value)
    assert str(tmp_path) in msg
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte"):
        assert name in msg
    assert "download" in msg


def test_mismatched_counts_and_bad_labels(tmp_path):
    _mnist_folder(tmp_path)
    _write(tmp_path / "train-labels-idx1-ubyte", np.zeros(3, dtype=np.uint8))
    with pytest.raises(DataFileError, match="12 images but .* 3 labels"):
        load_mnist(tmp_path, "train")
    _write(tmp_path / "train-labels-idx1-ubyte", np.full(12, 11, dtype=np.uint8))
    with pytest.raises(DataFileError, match=r"labels must be in 0\.\.9"):
        load_mnist(tmp_path, "train")
