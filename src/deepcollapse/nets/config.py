"""``NetConfig``: the validated configuration of one real-network run (ResNet20 or MLP backbone + bias-free
MLP head).

Every field is checked at construction; a bad value raises :class:`~deepcollapse.ConfigError` naming the
field, the value and what is allowed.  ``to_dict`` / ``from_dict`` (rejecting unknown keys) and ``to_yaml`` /
``from_yaml`` round-trip exactly.

Regularisation (``reg``), with ``B`` the batch, ``h1_i`` the backbone output of sample ``i`` and ``W_l`` the
head:

- ``"standard"``: ``(lam/2) Σ_θ ‖θ‖²`` over **every** parameter (backbone convolutions, BatchNorm scales and
  shifts, projection, head) -- plain coupled weight decay ``lam``.
- ``"dufm"`` ("DUFM-like", 2024 §6.2): ``c · (lam_h/2) · (1/|B|) Σ_{i∈B} ‖h1_i‖²  +  Σ_l (lam/2) ‖W_l‖_F²``;
  nothing on the backbone.  ``lam_h_scale`` fixes ``c``:

  * ``"batch_mean"`` (default), ``c = 1``: the feature term is a mean over the batch, so over the whole
    training set it estimates ``(lam_h/2)(1/N)‖H1‖_F²``; in DUFM terms (eq. (1), fit ``1/(2N)‖W_L H_L − Y‖²``,
    which the ``mse`` loss matches) ``λ_{H1} = lam_h / N``, i.e. ``n λ_{H1} = lam_h / K``.
  * ``"dataset"``, ``c = N`` (training-set size): the minibatch estimate is unbiased for the DUFM term
    ``(lam_h/2)‖H1‖_F²`` itself, so ``λ_{H1} = lam_h`` exactly as in eq. (1) and its strength grows with ``n``
    (the reading of the 2024 paper's "λ_H1 = 5e-6 to compensate for n = 5000").
- ``"none"``: no regularisation.

Loss ``"mse"``: ``(1/(2|B|)) Σ_{i∈B} ‖f(x_i) − e_{y_i}‖²`` (one-hot targets; the DUFM's ``1/(2N)`` convention,
summed over the K outputs); ``"ce"``: mean cross-entropy.

GPU options (both off by default; meant for CUDA, where they speed up the ResNet20 runs):

- ``amp``: the forward pass and the loss run under ``torch.autocast`` -- float16 on CUDA with a
  ``torch.amp.GradScaler`` (dynamic loss scaling, so small float16 gradients do not flush to zero), bfloat16
  on the CPU (no scaler needed: bfloat16 has float32's exponent range).  Collapse metrics are always evaluated
  in float32 without autocast (then accumulated in float64).
- ``channels_last``: the ResNet20 backbone and every image batch use ``torch.channels_last`` memory format
  (NHWC), which lets cuDNN use tensor-core convolutions; a no-op for the MLP backbone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deepcollapse._core.checks import ConfigError, check_choice, check_float, check_int
from deepcollapse._core.config import ConfigMixin
from deepcollapse.nets.data.datasets import BUNDLED_DATASETS, DATASETS, dataset_num_classes, parse_classes

__all__ = ["NetConfig", "REGULARISATIONS", "LOSSES", "OPTIMIZERS", "SCHEDULES", "BACKBONES"]

REGULARISATIONS = ("dufm", "standard", "none")
LOSSES = ("mse", "ce")
OPTIMIZERS = ("sgd", "adam")
SCHEDULES = ("constant", "multistep", "cosine")
BACKBONES = ("resnet20", "mlp")
LAM_H_SCALES = ("batch_mean", "dataset")
DEVICES = ("auto", "cpu", "cuda", "mps")


@dataclass
class NetConfig(ConfigMixin):
    """One end-to-end run; units in the comments, ``reg``/``loss`` in the module docstring."""

    dataset: str = "digits"  # digits | mnist | fashion_mnist | cifar10 | mnist1d
    data_dir: str | None = None  # folder with the dataset files (not needed for digits, mnist1d)
    classes: list[int] | None = (
        None  # original labels to keep (relabelled 0..K-1 in this order); None = all 10
    )
    n_per_class: int | None = None  # balanced training subsample per class; None = every training sample
    n_test_per_class: int | None = None  # same for the test split
    normalize: bool = True  # per-channel standardisation with training-subset mean/std
    backbone: str = "resnet20"  # resnet20 (images >= 8x8) | mlp (models/mlp_backbone.py; any input, MNIST-1D)
    backbone_width: int = 256  # mlp backbone: width w of its layers (= d1, the width of H1)
    backbone_depth: int = 2  # mlp backbone: number D of affine + ReLU layers
    feature_dim: int | None = (
        None  # resnet20 only. None: H1 = the 64 pooled channels; int: bias-free projection 64 -> feature_dim
    )
    head_layers: int = 4  # L, number of bias-free head matrices W_1..W_L (1 = linear classifier)
    head_width: int = 64  # d_2 = ... = d_L
    loss: str = "mse"  # mse | ce
    reg: str = "dufm"  # dufm | standard | none
    lam: float = 0.005  # λ_W of every head layer (dufm) or the weight decay of every parameter (standard)
    lam_h: float = 5e-6  # λ_H1 on the squared norm of the backbone output (dufm only)
    lam_h_scale: str = "batch_mean"  # batch_mean: λ_H1 · mean_batch ‖h1‖²/2; dataset: N × that (DUFM eq. (1))
    optimizer: str = "sgd"  # sgd | adam
    momentum: float = 0.9  # SGD momentum (ignored by adam)
    lr: float = 0.05  # base learning rate
    lr_schedule: str = "multistep"  # constant | multistep | cosine (per epoch)
    milestones: list[float] = field(default_factory=lambda: [0.5, 0.75])  # multistep: fractions of `epochs`
    gamma: float = 0.1  # multistep factor
    epochs: int = 10
    batch_size: int = 128
    eval_every: int = (
        1  # epochs between collapse evaluations (the last epoch is always evaluated); 0 = only last
    )
    eval_batch_size: int = 1000  # batch size of the no-grad evaluation passes
    seed: int = 0  # model init, subsampling and the per-epoch data order all derive from it
    device: str = "auto"  # auto (cuda > mps > cpu) | cpu | cuda | mps
    threads: int | None = None  # torch.set_num_threads(threads) when given
    freeze_head: bool = False  # train the backbone only (2023 experiment)
    head_init: str | None = None  # DUFM run folder (or params.pt) whose W_1..W_L initialise the head
    head_init_run: int = 0  # which run r of the DUFM's batched params to take
    amp: bool = False  # mixed precision: autocast (float16 + GradScaler on cuda, bfloat16 on cpu)
    channels_last: bool = False  # channels-last memory format for the resnet20 backbone and its input batches
    rank_rtol: float | None = (
        1e-3  # singular values below rank_rtol·σ_1 count as zero (None: machine-eps rule)
    )

    def __post_init__(self) -> None:
        check_choice("dataset", self.dataset, DATASETS)
        if self.data_dir is not None:
            self.data_dir = str(self.data_dir)
        if self.dataset not in BUNDLED_DATASETS and self.data_dir is None:
            raise ConfigError(
                f"data_dir == None, must be the folder holding the {self.dataset} files (--data-dir)."
            )
        self.classes = parse_classes(self.classes, dataset_num_classes(self.dataset))
        K = self.num_classes
        for name in ("n_per_class", "n_test_per_class", "feature_dim", "threads"):
            v = getattr(self, name)
            if v is not None:
                setattr(self, name, check_int(name, v, min=1))
        self.normalize = _check_bool("normalize", self.normalize)
        self.freeze_head = _check_bool("freeze_head", self.freeze_head)
        check_choice("backbone", self.backbone, BACKBONES)
        self.backbone_width = check_int("backbone_width", self.backbone_width, min=1)
        self.backbone_depth = check_int("backbone_depth", self.backbone_depth, min=1)
        if self.dataset == "mnist1d" and self.backbone == "resnet20":
            raise ConfigError(
                "backbone == 'resnet20', must be 'mlp' for dataset mnist1d (1-D signals of length 40)."
            )
        if self.backbone == "mlp" and self.feature_dim is not None:
            raise ConfigError(
                f"feature_dim == {self.feature_dim}, must be None with backbone mlp "
                "(set backbone_width, the width of H1)."
            )
        self.amp = _check_bool("amp", self.amp)
        self.channels_last = _check_bool("channels_last", self.channels_last)
        self.head_layers = check_int("head_layers", self.head_layers, min=1)
        self.head_width = check_int("head_width", self.head_width, min=1)
        if self.head_layers >= 2 and self.head_width < K:
            raise ConfigError(
                f"head_width == {self.head_width}, must be >= the number of classes K = {K} (d_l >= K)."
            )
        check_choice("loss", self.loss, LOSSES)
        check_choice("reg", self.reg, REGULARISATIONS)
        self.lam = check_float("lam", self.lam, ge=0.0)
        self.lam_h = check_float("lam_h", self.lam_h, ge=0.0)
        check_choice("lam_h_scale", self.lam_h_scale, LAM_H_SCALES)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        self.momentum = check_float("momentum", self.momentum, ge=0.0, lt=1.0)
        self.lr = check_float("lr", self.lr, gt=0.0)
        check_choice("lr_schedule", self.lr_schedule, SCHEDULES)
        if isinstance(self.milestones, (int, float, str)):
            raise ConfigError(f"milestones == {self.milestones!r}, must be a list of fractions in (0, 1).")
        self.milestones = sorted(
            check_float(f"milestones[{i}]", m, gt=0.0, lt=1.0) for i, m in enumerate(self.milestones)
        )
        self.gamma = check_float("gamma", self.gamma, gt=0.0, le=1.0)
        self.epochs = check_int("epochs", self.epochs, min=1)
        self.batch_size = check_int("batch_size", self.batch_size, min=2)
        if self.n_per_class is not None and self.batch_size > self.n_per_class * K:
            raise ConfigError(
                f"batch_size == {self.batch_size}, must be <= the training set size "
                f"n_per_class · K = {self.n_per_class * K}."
            )
        self.eval_every = check_int("eval_every", self.eval_every, min=0)
        self.eval_batch_size = check_int("eval_batch_size", self.eval_batch_size, min=1)
        self.seed = check_int("seed", self.seed, min=0)
        check_choice("device", self.device, DEVICES)
        if self.head_init is not None:
            self.head_init = str(self.head_init)
        self.head_init_run = check_int("head_init_run", self.head_init_run, min=0)
        if self.rank_rtol is not None:
            self.rank_rtol = check_float("rank_rtol", self.rank_rtol, gt=0.0, lt=1.0)

    @property
    def num_classes(self) -> int:
        """K: the number of selected classes."""
        return len(self.classes) if self.classes else dataset_num_classes(self.dataset)


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} == {value!r}, must be true or false.")
    return value
