"""Fashion-MNIST through the IDX loader (small files written here in the real format) and MNIST-1D generated
offline by the mnist1d package."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from deepcollapse import ConfigError
from deepcollapse.nets.data import load_dataset
from deepcollapse.nets.data.idx import DataFileError, load_fashion_mnist
from deepcollapse.nets.data.mnist1d import load_mnist1d_split

FILES = {
    "train-images-idx3-ubyte": 3,
    "train-labels-idx1-ubyte": 1,
    "t10k-images-idx3-ubyte": 3,
    "t10k-labels-idx1-ubyte": 1,
}


def _idx(arr: np.ndarray) -> bytes:
    """IDX bytes from the format's definition: 00 00 08 ndim, big-endian sizes, the uint8 payload."""
    return bytes([0, 0, 0x08, arr.ndim]) + b"".join(struct.pack(">I", s) for s in arr.shape) + arr.tobytes()


def _write_fashion(folder, n_train=30, n_test=20, seed=0):
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    data = {}
    for split, n in (("train", n_train), ("t10k", n_test)):
        x = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        y = (np.arange(n) % 10).astype(np.uint8)
        (folder / f"{split}-images-idx3-ubyte").write_bytes(_idx(x))
        (folder / f"{split}-labels-idx1-ubyte").write_bytes(_idx(y))
        data[split] = (x, y)
    return data


@pytest.mark.parametrize("layout", ["", "FashionMNIST/raw", "fashion_mnist"])
def test_fashion_mnist_reads_idx_files(tmp_path, layout):
    data = _write_fashion(tmp_path / layout if layout else tmp_path)
    x, y = load_fashion_mnist(tmp_path, "train")
    np.testing.assert_array_equal(x, data["train"][0])
    np.testing.assert_array_equal(y, data["train"][1].astype(np.int64))
    splits = load_dataset("fashion_mnist", tmp_path, classes=[3, 7], n_per_class=2, n_test_per_class=1)
    assert splits.train.images.shape == (4, 1, 28, 28) and splits.test.images.shape == (2, 1, 28, 28)
    assert splits.train.labels.tolist() == [0, 0, 1, 1] and splits.classes == [3, 7]


def test_fashion_mnist_wrong_folder_is_one_line(tmp_path):
    (tmp_path / "data_batch_1").write_bytes(b"not idx")  # a CIFAR folder, say
    with pytest.raises(DataFileError) as info:
        load_fashion_mnist(tmp_path, "train")
    msg = str(info.value)
    assert "Fashion-MNIST file train-images-idx3-ubyte[.gz] not found" in msg and "\n" not in msg
    assert "fashion-mnist" in msg
    _write_fashion(tmp_path / "f")
    (tmp_path / "f" / "t10k-labels-idx1-ubyte").write_bytes(_idx(np.zeros(5, dtype=np.uint8)))
    with pytest.raises(DataFileError, match="has 20 images but .* has 5 labels"):
        load_fashion_mnist(tmp_path / "f", "test")


def test_mnist1d_is_generated_offline_and_leaves_global_rngs_alone(monkeypatch):
    import mnist1d.data

    def no_download(*args, **kwargs):
        raise AssertionError("the download path must not be used")

    monkeypatch.setattr(mnist1d.data, "get_dataset", no_download)
    np.random.seed(123)  # noqa: NPY002 - the legacy global RNG is what mnist1d reseeds
    random.seed(123)
    before = (np.random.random(), random.random())  # noqa: NPY002
    np.random.seed(123)  # noqa: NPY002 - the legacy global RNG is what mnist1d reseeds
    random.seed(123)
    x, y = load_mnist1d_split("train")
    assert (
        np.random.random(),  # noqa: NPY002
        random.random(),
    ) == before  # the package seeds the global RNGs; we restore them
    xt, yt = load_mnist1d_split("test")
    assert x.shape == (4000, 1, 1, 40) and xt.shape == (1000, 1, 1, 40) and x.dtype == np.float32
    assert sorted(set(y.tolist())) == list(range(10)) and np.bincount(y).min() >= 350
    both = np.concatenate([x, xt]).ravel()
    assert abs(both.mean()) < 1e-3 and abs(both.std() - 1) < 1e-3  # the generator standardises the dataset
    splits = load_dataset("mnist1d", classes=[0, 1], n_per_class=5, n_test_per_class=2)
    assert splits.train.images.shape == (10, 1, 1, 40) and splits.image_size == (1, 40)
    with pytest.raises(ConfigError, match="split == 'val'"):
        load_mnist1d_split("val")
