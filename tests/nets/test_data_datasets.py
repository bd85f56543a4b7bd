"""load_dataset: digits split, class subsets and relabelling, balanced subsampling, normalisation, errors."""

from __future__ import annotations

import gzip
import struct
from collections import Counter

import numpy as np
import pytest
import torch

from deepcollapse import ConfigError
from deepcollapse.nets.data import load_dataset, parse_classes
from deepcollapse.nets.data.digits import load_digits_split


def test_digits_split_deterministic_disjoint_stratified():
    from sklearn.datasets import load_digits

    full = load_digits()
    x_tr, y_tr = load_digits_split("train")
    x_te, y_te = load_digits_split("test")
    assert x_tr.shape[1:] == (1, 8, 8) and x_tr.dtype == np.uint8
    assert len(y_tr) + len(y_te) == len(full.target) == 1797
    # train + test is exactly the full set (as a multiset of (image, label) pairs): disjoint and complete
    rows = lambda x, y: Counter(bytes(r) + bytes([c]) for r, c in zip(x.reshape(len(x), -1), y))
    assert rows(x_tr, y_tr) + rows(x_te, y_te) == rows(full.images.astype(np.uint8), full.target)
    for c in range(10):
        n_c = int((full.target == c).sum())
        assert int((y_te == c).sum()) == round(0.2 * n_c)
    x2, y2 = load_digits_split("train")
    np.testing.assert_array_equal(x2, x_tr)
    np.testing.assert_array_equal(y2, y_tr)


def test_class_subset_relabel_and_balanced_subsample():
    d = load_dataset("digits", classes=[7, 3], n_per_class=25, n_test_per_class=5, seed=3)
    assert d.classes == [7, 3] and d.num_classes == 2
    y = d.train.labels.numpy()
    np.testing.assert_array_equal(y, [0] * 25 + [1] * 25)  # ordered by class, relabelled in the given order
    x_raw, y_raw = load_digits_split("train")
    sevens = {bytes(r) for r in x_raw[y_raw == 7].reshape(-1, 64)}
    assert all(bytes(r) in sevens for r in d.train.images[:25].numpy().reshape(-1, 64))
    assert len(d.test) == 10
    again = load_dataset("digits", classes=[7, 3], n_per_class=25, n_test_per_class=5, seed=3)
    assert torch.equal(again.train.images, d.train.images)
    other = load_dataset("digits", classes=[7, 3], n_per_class=25, n_test_per_class=5, seed=4)
    assert not torch.equal(other.train.images, d.train.images)


def test_normalisation_uses_training_statistics():
    d = load_dataset("digits", n_per_class=30)
    x, _ = d.train.batch(slice(None))
    assert x.dtype == torch.float32 and x.shape == (300, 1, 8, 8)
    assert abs(float(x.mean())) < 1e-5
    assert abs(float(x.std(unbiased=False)) - 1.0) < 1e-4
    raw = d.train.images.double() / 16.0
    torch.testing.assert_close(x.double(), (raw - raw.mean()) / raw.std(unbiased=False), rtol=1e-5, atol=1e-5)
    plain = load_dataset("digits", n_per_class=30, normalize=False)
    xp, _ = plain.train.batch(slice(0, 5))
    torch.testing.assert_close(xp, plain.train.images[:5].float() / 16.0)


def test_bad_requests():
    with pytest.raises(ConfigError, match=r"classes == \[0, 12\], has unknown labels \[12\]"):
        load_dataset("digits", classes="0,12")
    with pytest.raises(ConfigError, match="classes == 'a,b'"):
        parse_classes("a,b")
    with pytest.raises(ConfigError, match="at least 2"):
        parse_classes([3])
    with pytest.raises(ConfigError, match="must not repeat"):
        parse_classes([3, 3])
    with pytest.raises(ConfigError, match=r"n_per_class == 1000, must be <= \d+ \(samples of class 0"):
        load_dataset("digits", n_per_class=1000)
    with pytest.raises(ConfigError, match="dataset == 'svhn'"):
        load_dataset("svhn")
    with pytest.raises(ConfigError, match="data_dir == None"):
        load_dataset("mnist")


def _idx(path, arr):
    data = (
        bytes([0, 0, 8, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.astype(np.uint8).tobytes()
    )
    with gzip.open(path, "wb") as fh:
        fh.write(data)


def test_mnist_through_load_dataset(tmp_path):
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(10), 4).astype(np.uint8)
    x = rng.integers(0, 256, size=(40, 28, 28)).astype(np.uint8)
    _idx(tmp_path / "train-images-idx3-ubyte.gz", x)
    _idx(tmp_path / "train-labels-idx1-ubyte.gz", y)
    _idx(tmp_path / "t10k-images-idx3-ubyte.gz", x[:20])
    _idx(tmp_path / "t10k-labels-idx1-ubyte.gz", y[:20])
    d = load_dataset("mnist", tmp_path, classes=[1, 2], n_per_class=3, normalize=False)
    assert d.in_channels == 1 and d.image_size == (28, 28) and len(d.train) == 6
    xb, yb = d.train.batch(slice(None))
    np.testing.assert_array_equal(yb.numpy(), [0, 0, 0, 1, 1, 1])
    originals = {bytes(r) for r in x[(y == 1)].reshape(-1, 784)}
    assert all(
        bytes(r) in originals for r in (xb[:3].numpy() * 255).round().astype(np.uint8).reshape(-1, 784)
    )
