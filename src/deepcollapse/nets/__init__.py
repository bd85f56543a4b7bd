"""deepcollapse.nets: real networks -- a backbone, a bias-free MLP head, data, and the supervised loop.

- :mod:`.config` -- :class:`NetConfig`, one network training job, validated once.
- :mod:`.resnet` (ResNet20), :mod:`.mlp_backbone` (a small MLP backbone for tests and tabular inputs),
  :mod:`.head` (``HeadNetwork``: backbone + L-layer bias-free head, the features of every layer).
- :mod:`.data` -- dataset loaders from standard files (IDX, CIFAR pickles, bundled digits and MNIST-1D).
- :mod:`.train` -- ``train_net`` / ``resume_net`` and the one optimisation step ``train_step``.

Extension point: a backbone is one module plus one entry in ``build_network`` (:mod:`.train`) and in
``BACKBONES`` (:mod:`.config`); a dataset is one loader plus one entry in ``data.datasets.DATASETS``.
"""

from deepcollapse._core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "NetConfig": "config",
        "HeadNetwork": "head",
        "MLPHead": "head",
        "ResNet20": "resnet",
        "MLPBackbone": "mlp_backbone",
        "train_net": "train",
        "NetSummary": "train",
        "resume_net": "train",
        "train_step": "train",
        "build_network": "train",
        "DeviceMemoryError": "train",
    },
)
