"""deepcollapse.nets: real networks -- a backbone, a bias-free MLP head, data, and the supervised loop.

- :mod:`.config` -- :class:`NetConfig`, one network training job, validated once.
- :mod:`.resnet` (ResNet20), :mod:`.mlp_backbone` (a small MLP backbone for tests and tabular inputs),
  :mod:`.head` (``HeadNetwork``: backbone + L-layer bias-free head, the features of every layer).
- :mod:`.data` -- dataset loaders from standard files (IDX, CIFAR pickles, bundled digits and MNIST-1D).
- :mod:`.build` (device, data, ``build_network``, optimizer), :mod:`.step` (objective, the one optimisation
  step ``train_step``), :mod:`.evaluate` (the metrics record, ``NetEvaluation``), :mod:`.summary`
  (``NetSummary``), :mod:`.checkpoint` (run files, checkpoint, stop errors).
- :mod:`.outcome` -- where a run landed (``classify_head``: zero, DNC, SRG-like, low-rank, ...), numpy only.
- :mod:`.train` -- the epoch loop: ``fit_net`` (in memory) / ``train_net`` / ``resume_net`` (re-exports the
  pieces above).
- :mod:`.batched` -- S runs as one batched network, each in its own run folder: ``train_nets`` /
  ``resume_nets``; :mod:`.seed_batch` (``SeedBatch``, ``batched_train_step``), :mod:`.seed_groups` (which runs
  share a batch, ``batch_seeds``), :mod:`.graph_step` (the step captured in a CUDA graph),
  :mod:`.throughput` (the measured step time behind runtime estimates).

Extension point: a backbone is one module plus one entry in ``build_network`` (:mod:`.build`) and in
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
        "fit_net": "train",
        "NetFit": "train",
        "train_net": "train",
        "NetSummary": "summary",
        "NetEvaluation": "evaluate",
        "resume_net": "train",
        "train_step": "step",
        "build_network": "build",
        "DeviceMemoryError": "checkpoint",
        "classify_head": "outcome",
        "HeadCriteria": "outcome",
        "HeadOutcome": "outcome",
        "OUTCOMES": "outcome",
        "train_nets": "batched",
        "resume_nets": "batched",
        "SeedBatch": "seed_batch",
        "batched_train_step": "seed_batch",
    },
)
