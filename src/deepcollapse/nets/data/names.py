"""The dataset names and class labels, without torch (so :class:`~deepcollapse.nets.config.NetConfig` and the
command line can validate them without loading torch); :mod:`.datasets` re-exports them."""

from __future__ import annotations

from collections.abc import Sequence

from deepcollapse._core.checks import ConfigError, check_choice, check_int

__all__ = ["BUNDLED_DATASETS", "DATASETS", "DATASET_LABELS", "dataset_num_classes", "parse_classes"]

DATASETS = ("digits", "mnist", "fashion_mnist", "cifar10", "mnist1d", "mnist_5k")
BUNDLED_DATASETS = ("digits", "mnist1d", "mnist_5k")  # ship with a package: no data_dir

#: How tables, reports and ``config.yaml`` name each dataset.
DATASET_LABELS = {
    "digits": "8×8 digits (scikit-learn)",
    "mnist": "MNIST (IDX files)",
    "fashion_mnist": "Fashion-MNIST (IDX files)",
    "cifar10": "CIFAR-10 (pickle batches)",
    "mnist1d": "MNIST-1D (mnist1d package)",
    "mnist_5k": "MNIST (bundled 5 000-image subset, 500 per class)",
}


def dataset_num_classes(name: str) -> int:
    """Every dataset here has 10 classes (labels 0..9).

    Parameters
    ----------
    name : str
        A dataset of :data:`DATASETS` (checked).

    Returns
    -------
    int
        Its number of classes.

    Examples
    --------
    >>> dataset_num_classes("cifar10")
    10
    """
    check_choice("dataset", name, DATASETS)
    return 10


def parse_classes(value: str | Sequence[int] | None, num_classes: int = 10) -> list[int] | None:
    """``"0,1"`` or ``[0, 1]`` -> ``[0, 1]``; checks labels exist, are distinct, and at least 2 are given.

    Parameters
    ----------
    value : str or sequence of int or None
        Comma-separated labels or a list of them; ``None``: all classes.
    num_classes : int, default 10
        The dataset's number of classes (labels ``0..num_classes-1``).

    Returns
    -------
    list of int or None
        The labels in the given order; ``None`` for ``value=None``.

    Raises
    ------
    ConfigError
        An unknown or repeated label, or fewer than 2.

    Examples
    --------
    >>> parse_classes("3, 5"), parse_classes([0, 1]), parse_classes(None)
    ([3, 5], [0, 1], None)
    """
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
