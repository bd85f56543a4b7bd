"""One entry point for the image datasets: class subsets, relabelling, balanced subsampling, normalisation.

``load_dataset("digits" | "mnist" | "cifar10", data_dir, classes, n_per_class, ...)`` returns a
:class:`DataSplits` holding raw ``uint8`` image tensors (memory-light: CIFAR-10's training set is 150 MB) and
the normalisation, applied per batch by :meth:`ImageData.batch`:

    x = (raw · scale − mean_c) / std_c        (scale = 1/255, or 1/16 for the digits)

with per-channel ``mean_c`` and ``std_c`` computed on the *selected training subset* (``normalize=False``
keeps ``mean = 0, std = 1``, i.e. pixels in [0, 1]).  No augmentation (collapse is measured on the training
set itself).

Class subsets: ``classes=[3, 5]`` keeps those original labels and relabels them ``0, 1`` in the given order.
Balanced subsampling: ``n_per_class=n`` keeps ``n`` training samples of every selected class, drawn without
replacement by ``numpy.random.default_rng(seed)``; samples are stored ordered by class (labels ``0..0 1..1
...``, the DUFM convention).  ``n_test_per_class`` does the same on the test split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from deepcollapse._checks import ConfigError, check_choice, check_int

__all__ = ["DATASETS", "DataSplits", "ImageData", "load_dataset", "parse_classes", "dataset_num_classes"]

DATASETS = ("digits", "mnist", "cifar10")


@dataclass
class ImageData:
    """Raw images ``(N, C, H, W)`` uint8 with labels ``(N,)`` int64 in 0..K-1, and the normalisation."""

    images: torch.Tensor
    labels: torch.Tensor
    scale: float
    mean: torch.Tensor  # (C,)
    std: torch.Tensor  # (C,)

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def to(self, device: torch.device | str) -> ImageData:
        return ImageData(
            self.images.to(device),
            self.labels.to(device),
            self.scale,
            self.mean.to(device),
            self.std.to(device),
        )

    def batch(self, idx: torch.Tensor | slice) -> tuple[torch.Tensor, torch.Tensor]:
        """Normalised float32 images ``(B, C, H, W)`` and labels ``(B,)`` of the samples ``idx``."""
        x = self.images[idx].to(torch.float32) * self.scale  # (B, C, H, W)
        x = (x - self.mean.view(1, -1, 1, 1)) / self.std.view(1, -1, 1, 1)
        return x, self.labels[idx]


@dataclass
class DataSplits:
    """Train and test parts of a dataset after class selection, subsampling and normalisation."""

    name: str
    train: ImageData
    test: ImageData
    classes: list[int]  # original labels, in the order of the new labels 0..K-1

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def in_channels(self) -> int:
        return int(self.train.images.shape[1])

    @property
    def image_size(self) -> tuple[int, int]:
        return int(self.train.images.shape[2]), int(self.train.images.shape[3])


def dataset_num_classes(name: str) -> int:
    """All three datasets have 10 classes (labels 0..9)."""
    check_choice("dataset", name, DATASETS)
    return 10


def parse_classes(value: str | Sequence[int] | None, num_classes: int = 10) -> list[int] | None:
    """``"0,1"`` or ``[0, 1]`` -> ``[0, 1]``; checks labels exist, are distinct, and at least 2 are given."""
    if value is None:
        return None
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
        try:
            vals = [int(p) for p in parts]
        except ValueError:
            raise ConfigError(
                f"classes == {value!r}, must be comma-separated integer labels, e.g. '0,1'."
            ) from None
    else:
        vals = [check_int("classes", v) for v in value]
    bad = [v for v in vals if not 0 <= v < num_classes]
    if bad:
        raise ConfigError(
            f"classes == {vals}, has unknown labels {bad}: must be labels in 0..{num_classes - 1}."
        )
    if len(set(vals)) != len(vals):
        raise ConfigError(f"classes == {vals}, must not repeat a label.")
    if len(vals) < 2:
        raise ConfigError(f"classes == {vals}, must list at least 2 labels.")
    return vals


def _raw(name: str, data_dir: str | Path | None, split: str) -> tuple[np.ndarray, np.ndarray, float]:
    if name == "digits":
        from deepcollapse.data.digits import DIGITS_MAX, load_digits_split

        x, y = load_digits_split(split)
        return x, y, 1.0 / DIGITS_MAX
    if data_dir is None:
        raise ConfigError(f"data_dir == None, must be the folder holding the {name} files (--data-dir).")
    if name == "mnist":
        from deepcollapse.data.idx import load_mnist

        x, y = load_mnist(data_dir, split)
        return x[:, None, :, :], y, 1.0 / 255.0
    from deepcollapse.data.cifar import load_cifar10

    x, y = load_cifar10(data_dir, split)
    return x, y, 1.0 / 255.0


def _select(
    x: np.ndarray,
    y: np.ndarray,
    classes: list[int],
    n: int | None,
    rng: np.random.Generator,
    field: str,
    split: str,
) -> tuple[np.ndarray, np.ndarray]:
    keep_x, keep_y = [], []
    for new, c in enumerate(classes):
        idx = np.flatnonzero(y == c)
        if n is not None:
            if n > idx.size:
                raise ConfigError(
                    f"{field} == {n}, must be <= {idx.size} (samples of class {c} in the {split} split)."
                )
            idx = np.sort(rng.choice(idx, size=n, replace=False))
        keep_x.append(x[idx])
        keep_y.append(np.full(idx.size, new, dtype=np.int64))
    return np.concatenate(keep_x), np.concatenate(keep_y)


def load_dataset(
    name: str,
    data_dir: str | Path | None = None,
    *,
    classes: Sequence[int] | str | None = None,
    n_per_class: int | None = None,
    n_test_per_class: int | None = None,
    seed: int = 0,
    normalize: bool = True,
) -> DataSplits:
    """Load ``name`` from ``data_dir`` (ignored for the bundled ``digits``); see the module docstring."""
    check_choice("dataset", name, DATASETS)
    chosen = parse_classes(classes, dataset_num_classes(name)) or list(range(dataset_num_classes(name)))
    if n_per_class is not None:
        n_per_class = check_int("n_per_class", n_per_class, min=1)
    if n_test_per_class is not None:
        n_test_per_class = check_int("n_test_per_class", n_test_per_class, min=1)
    rng = np.random.default_rng(seed)
    x_tr, y_tr, scale = _raw(name, data_dir, "train")
    x_te, y_te, _ = _raw(name, data_dir, "test")
    x_tr, y_tr = _select(x_tr, y_tr, chosen, n_per_class, rng, "n_per_class", "train")
    x_te, y_te = _select(x_te, y_te, chosen, n_test_per_class, rng, "n_test_per_class", "test")
    channels = x_tr.shape[1]
    if normalize:
        flat = x_tr.transpose(1, 0, 2, 3).reshape(channels, -1).astype(np.float64) * scale
        mean = torch.tensor(flat.mean(axis=1), dtype=torch.float32)
        std = torch.tensor(np.maximum(flat.std(axis=1), 1e-8), dtype=torch.float32)
    else:
        mean, std = torch.zeros(channels), torch.ones(channels)
    train = ImageData(torch.from_numpy(np.ascontiguousarray(x_tr)), torch.from_numpy(y_tr), scale, mean, std)
    test = ImageData(torch.from_numpy(np.ascontiguousarray(x_te)), torch.from_numpy(y_te), scale, mean, std)
    return DataSplits(name, train, test, chosen)
