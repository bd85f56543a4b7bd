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

Training conventions (issue 29: the settings a paper's code may use without saying; the defaults are this
toolkit's, and each alternative is one option):

- ``mse_reduction``: ``"sum"`` (default) is the ``mse`` loss above, ``0.5 · Σ_k (f_k − e_{y,k})²`` averaged
  over the batch; ``"mean"`` is ``torch.nn.MSELoss()``: ``(1/(|B| K)) Σ_{i,k} (f_k(x_i) − e_{y_i,k})²``, i.e.
  ``2/K`` times ``"sum"`` (the fit's gradient is ``2/K`` as large, so every λ acts ``K/2`` times as strongly
  relative to it; the DUFM's ``L_DNC`` / ``L_SRG`` and the zero point's 1/2 are in the ``"sum"`` convention).
- ``wd_scope``: which parameters the weight decay acts on with ``reg: standard``: ``"all"`` (default, every
  parameter) or ``"weights"`` (parameters with at least 2 dimensions: convolution kernels and linear weights;
  BatchNorm scales and shifts and biases are not decayed -- the common practice of e.g. nanoGPT and timm).
  ``reg: dufm`` decays the head's weight matrices only, which are all "weights".
- ``wd_mode``: ``"coupled"`` (default): the decay is the term ``(lam/2)‖θ‖²`` of the loss, so its gradient
  ``lam · θ`` passes through SGD's momentum (or Adam's moments) like the fit's -- torch's
  ``SGD(weight_decay=)`` is the same thing; ``"decoupled"``: the optimiser step shrinks the decayed
  parameters itself, ``θ ← θ − lr_t · lam · θ`` before the update from the fit's gradient (Loshchilov &
  Hutter's SGDW / AdamW; torch's ``AdamW``).  With momentum ``μ`` the coupled decay's steady-state step is
  ``lr · lam / (1 − μ)``, ten times the decoupled one at ``μ = 0.9``.  The loss has no decay term then
  (``train_loss_per_epoch``), while the reported objective (``metrics.jsonl``'s ``reg``, ``loss``) still adds
  ``(lam/2)‖θ‖²``: the function whose stationary points both modes seek.  ``λ_H1`` (on features, not
  parameters) always stays in the loss.
- ``head_init_scale``: the head's weights ``W_1 .. W_L`` are PyTorch's default initialisation
  (Kaiming-uniform, ``U(−1/√d_in, 1/√d_in)``) times this factor (default 1: unchanged).

Speed options (``amp`` off by default; ``channels_last`` ``"auto"``):

- ``amp``: the forward pass and the loss run under ``torch.autocast`` -- float16 on CUDA with a
  ``torch.amp.GradScaler`` (dynamic loss scaling, so small float16 gradients do not flush to zero), bfloat16
  on the CPU (no scaler needed: bfloat16 has float32's exponent range).  Collapse metrics are always evaluated
  in float32 without autocast (then accumulated in float64).
- ``channels_last``: the ResNet backbone and every image batch use ``torch.channels_last`` memory format
  (NHWC), which lets cuDNN use tensor-core convolutions and oneDNN skip its NCHW reorders; a no-op for the
  MLP backbone.  ``"auto"`` (default): on for the CPU, off on GPUs (where it pays only with ``amp``).  On the
  CPU it is the fastest option that keeps a run bit-reproducible per seed (``benchmarks/net_throughput.py``
  measures it against NCHW, ``torch.compile`` and bfloat16); its results equal NCHW's up to float32
  rounding (convolution and BatchNorm sums in another order), not bit for bit.  YAML ``true`` / ``false``
  (older run folders) keep their meaning.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from deepcollapse._core.checks import ConfigError, check_choice, check_float, check_int
from deepcollapse._core.config import ConfigMixin
from deepcollapse._core.io import atomic_write_text
from deepcollapse.nets.data.names import (
    BUNDLED_DATASETS,
    DATASET_LABELS,
    DATASETS,
    dataset_num_classes,
    parse_classes,
)

__all__ = [
    "BACKBONES",
    "LOSSES",
    "MSE_REDUCTIONS",
    "NetConfig",
    "OPTIMIZERS",
    "REGULARISATIONS",
    "SCHEDULES",
    "UNTIL",
    "WD_MODES",
    "WD_SCOPES",
]

REGULARISATIONS = ("dufm", "standard", "none")
LOSSES = ("mse", "ce")
OPTIMIZERS = ("sgd", "adam")
SCHEDULES = ("constant", "multistep", "cosine")
BACKBONES = ("resnet20", "resnet8", "mlp")
LAM_H_SCALES = ("batch_mean", "dataset")
DEVICES = ("auto", "cpu", "cuda", "mps")
MSE_REDUCTIONS = ("sum", "mean")
WD_SCOPES = ("all", "weights")
WD_MODES = ("coupled", "decoupled")
BATCH_SEEDS = ("auto", "on", "off")
UNTIL = ("epochs", "converged")


@dataclass
class NetConfig(ConfigMixin):
    """One end-to-end run; each field described in its metadata (its --help), ``reg``/``loss`` in the module
    docstring."""

    # Each field's metadata is its command-line option (deepcollapse.cli.options.add_config_options): "help"
    # describes it (without its default, which is the field's), "choices" the allowed values, "option" the
    # option's name where it is not --field-name.
    dataset: str = field(
        default="digits",
        metadata={
            "help": "dataset to train on (digits, mnist1d and mnist_5k, 5 000 real MNIST images, ship with a "
            "package)",
            "choices": DATASETS,
        },
    )
    data_dir: str | None = field(
        default=None,
        metadata={
            "help": "folder with the (Fashion-)MNIST IDX files or cifar-10-batches-py (not needed for the "
            "bundled digits, mnist1d and mnist_5k)"
        },
    )
    classes: list[int] | None = field(
        default=None,
        metadata={
            "help": "original labels to keep, comma-separated, e.g. 0,1 (relabelled 0..K-1 in this order)",
            "shown_default": "all",
        },
    )
    n: int | None = field(
        default=None,
        metadata={"help": "balanced training subsample per class", "shown_default": "every training sample"},
    )
    n_test: int | None = field(
        default=None,
        metadata={"help": "balanced test subsample per class", "shown_default": "every test sample"},
    )
    normalize: bool = field(
        default=True,
        metadata={
            "help": "keep pixels in [0, 1] (no per-channel standardisation with the training-subset "
            "mean/std)",
            "option": "--no-normalize",
        },
    )
    backbone: str = field(
        default="resnet20",
        metadata={
            "help": "feature extractor in front of the MLP head: resnet20 (images >= 8x8), resnet8 (its "
            "one-block-per-stage sibling, ~1/3 the FLOPs) or mlp (any input, MNIST-1D)",
            "choices": BACKBONES,
        },
    )
    backbone_width: int = field(
        default=256, metadata={"help": "mlp backbone: width w of its layers (= d_1, the width of H1)"}
    )
    backbone_depth: int = field(
        default=2, metadata={"help": "mlp backbone: number D of affine + ReLU layers"}
    )
    feature_dim: int | None = field(
        default=None,
        metadata={
            "help": "resnet20/resnet8 only: width of a bias-free projection of the 64 backbone channels",
            "shown_default": "no projection, H1 = the 64 pooled channels",
        },
    )
    layers: int = field(
        default=4,
        metadata={"help": "L, number of bias-free head weight matrices W_1..W_L (1 = linear classifier)"},
    )
    width: int = field(default=64, metadata={"help": "head width d_2 = ... = d_L"})
    loss: str = field(
        default="mse",
        metadata={"help": "fit term: mse (squared error) or ce (softmax cross-entropy)", "choices": LOSSES},
    )
    mse_reduction: str = field(
        default="sum",
        metadata={
            "help": "mse normalisation: sum (0.5 · Σ_k (f_k − e_y,k)², the DUFM's) or mean "
            "(torch.nn.MSELoss: the mean over the K outputs, 2/K times sum); both averaged over the batch",
            "choices": MSE_REDUCTIONS,
        },
    )
    reg: str = field(
        default="dufm",
        metadata={
            "help": "regularisation: dufm (λ_H1 on features, λ on head weights), standard (weight decay), "
            "none",
            "choices": REGULARISATIONS,
        },
    )
    lam: float = field(
        default=0.005,
        metadata={"help": "λ_W of every head layer (dufm) or the weight decay of every parameter (standard)"},
    )
    lam_h: float = field(
        default=5e-6, metadata={"help": "λ_H1 on the squared norm of the backbone features (dufm only)"}
    )
    lam_h_scale: str = field(
        default="batch_mean",
        metadata={
            "help": "λ_H1 times the batch mean of ‖h1‖²/2 (batch_mean) or N times that (dataset: eq. (1))",
            "choices": LAM_H_SCALES,
        },
    )
    wd_scope: str = field(
        default="all",
        metadata={
            "help": "reg standard: decay every parameter (all) or only those with >= 2 dimensions (weights: "
            "no decay on BatchNorm scales/shifts and biases)",
            "choices": WD_SCOPES,
        },
    )
    wd_mode: str = field(
        default="coupled",
        metadata={
            "help": "weight decay as (lam/2)‖θ‖² in the loss (coupled: through momentum) or applied by the "
            "optimiser step, θ ← θ − lr·lam·θ (decoupled: SGDW / AdamW)",
            "choices": WD_MODES,
        },
    )
    optimizer: str = field(default="sgd", metadata={"help": "optimiser", "choices": OPTIMIZERS})
    momentum: float = field(default=0.9, metadata={"help": "SGD momentum (ignored by adam)"})
    lr: float = field(default=0.05, metadata={"help": "base learning rate"})
    lr_schedule: str = field(
        default="multistep", metadata={"help": "learning-rate schedule (per epoch)", "choices": SCHEDULES}
    )
    lr_milestones: list[float] = field(
        default_factory=lambda: [0.5, 0.75],
        metadata={"help": "multistep milestones as comma-separated fractions of --epochs"},
    )
    lr_decay: float = field(
        default=0.1, metadata={"help": "factor by which the multistep schedule multiplies the learning rate"}
    )
    epochs: int = field(
        default=10,
        metadata={"help": "training epochs (with --until converged: left out, the budget is --max-epochs)"},
    )
    until: str = field(
        default="epochs",
        metadata={
            "help": "when training stops: after --epochs (epochs), or once the convergence criterion holds "
            "(converged: relative change of the training loss and change of the training accuracy over the "
            "last --converge-window of the epochs below --converge-rtol and --converge-acc-tol, tested once "
            "the learning rate has reached its last value; at --max-epochs at the latest)",
            "choices": UNTIL,
        },
    )
    max_epochs: int | None = field(
        default=None,
        metadata={
            "help": "--until converged: the budget, where training stops if the criterion has not held "
            "(required with it; the learning-rate schedule is laid over it)",
            "shown_default": "none",
        },
    )
    converge_rtol: float = field(
        default=0.01,
        metadata={
            "help": "--until converged: largest relative change |ℓ_a − ℓ_b| / ℓ_a between the mean training "
            "losses of the two halves of the window"
        },
    )
    converge_acc_tol: float = field(
        default=0.01,
        metadata={
            "help": "--until converged: largest change of the (running, minibatch) training accuracy "
            "between the two halves of the window"
        },
    )
    converge_window: float = field(
        default=0.1,
        metadata={
            "help": "--until converged: the fraction of the epochs done that the criterion looks back "
            "(at least 10 epochs)"
        },
    )
    batch_size: int = field(default=128, metadata={"help": "mini-batch size"})
    eval_every: int = field(
        default=1,
        metadata={
            "help": "epochs between collapse evaluations (the last epoch is always evaluated; 0 = only the "
            "last)"
        },
    )
    eval_batch_size: int = field(
        default=1000, metadata={"help": "batch size of the no-grad evaluation passes"}
    )
    seed: int = field(
        default=0,
        metadata={"help": "random seed: model init, subsampling and the per-epoch data order derive from it"},
    )
    device: str = field(
        default="auto", metadata={"help": "where to compute (auto: cuda > mps > cpu)", "choices": DEVICES}
    )
    threads: int | None = field(
        default=None, metadata={"help": "torch threads (torch.set_num_threads)", "shown_default": "torch's"}
    )
    batch_seeds: str | int = field(
        default="auto",
        metadata={
            "help": "train the seeds of a sweep or experiment (and its points that differ only in seed or "
            "learning rate) as one batched network, each seed with its own data order, initialisation, "
            "metrics and run folder: auto (on cuda; off on the cpu, where it measured slower), on, off, or N "
            "(at most N seeds per batch); one run of net train is one seed",
            "metavar": "{auto,on,off,N}",
        },
    )
    freeze_head: bool = field(default=False, metadata={"help": "train the backbone only (2023 experiment)"})
    head_init: str | None = field(
        default=None,
        metadata={"help": "DUFM run folder (or params.pt) whose W_1..W_L initialise the head"},
    )
    head_init_run: int = field(
        default=0, metadata={"help": "which run r of the DUFM's batched params --head-init takes"}
    )
    head_init_scale: float = field(
        default=1.0,
        metadata={
            "help": "multiplier of the head weights' initialisation, PyTorch's for nn.Linear "
            "(Kaiming-uniform, U(±1/√d_in))"
        },
    )
    amp: bool = field(
        default=False,
        metadata={"help": "mixed precision: autocast (float16 + GradScaler on cuda, bfloat16 on cpu)"},
    )
    channels_last: bool | str = field(
        default="auto",
        metadata={
            "help": "channels-last (NHWC) memory format for the resnet backbone and its input batches: auto "
            "(on for the cpu, where it is faster; off on gpus), true (also the bare flag) or false",
            "choices": ("auto", "true", "false"),
            "const": "true",
        },
    )
    rank_rtol: float | None = field(
        default=1e-3,
        metadata={
            "help": "relative rank threshold: singular values below rank_rtol·σ_1 count as zero (none: the "
            "machine-epsilon rule)"
        },
    )

    #: Fields that say how a run is executed, not what it computes: a sweep relaunched with another value
    #: reuses its run folders (runs.sweep), e.g. fewer seeds per batch after running out of GPU memory.
    EXECUTION_FIELDS: ClassVar[tuple[str, ...]] = ("batch_seeds",)

    # Renamed fields (issue 17: the names of the DUFM config and of the command line); the old keys of YAML
    # files and run folders are accepted with a DeprecationWarning for one release.
    _RENAMED: ClassVar[dict[str, str]] = {
        "n_per_class": "n",
        "n_test_per_class": "n_test",
        "head_layers": "layers",
        "head_width": "width",
        "gamma": "lr_decay",
        "milestones": "lr_milestones",
    }

    def __post_init__(self) -> None:
        check_choice("dataset", self.dataset, DATASETS)
        if self.data_dir is not None:
            self.data_dir = str(self.data_dir)
        if self.dataset not in BUNDLED_DATASETS and self.data_dir is None:
            hint = " or use --dataset mnist_5k (5 000 bundled MNIST images)" * (self.dataset == "mnist")
            raise ConfigError(
                f"data_dir == None, must be the folder holding the {self.dataset} files (--data-dir){hint}."
            )
        self.classes = parse_classes(self.classes, dataset_num_classes(self.dataset))
        K = self.num_classes
        for name in ("n", "n_test", "feature_dim", "threads"):
            v = getattr(self, name)
            if v is not None:
                setattr(self, name, check_int(name, v, min=1))
        if self.dataset == "mnist_5k":  # one 500-per-class file: n + n_test <= 500 (torch-free check)
            from deepcollapse.nets.data.mnist5k import mnist5k_sizes

            mnist5k_sizes(self.n, self.n_test)
        self.normalize = _check_bool("normalize", self.normalize)
        self.freeze_head = _check_bool("freeze_head", self.freeze_head)
        check_choice("backbone", self.backbone, BACKBONES)
        self.backbone_width = check_int("backbone_width", self.backbone_width, min=1)
        self.backbone_depth = check_int("backbone_depth", self.backbone_depth, min=1)
        if self.dataset == "mnist1d" and self.backbone != "mlp":
            raise ConfigError(
                f"backbone == {self.backbone!r}, must be 'mlp' for dataset mnist1d (1-D signals, length 40)."
            )
        if self.backbone == "mlp" and self.feature_dim is not None:
            raise ConfigError(
                f"feature_dim == {self.feature_dim}, must be None with backbone mlp "
                "(set backbone_width, the width of H1)."
            )
        self.batch_seeds = check_batch_seeds(self.batch_seeds)
        self.amp = _check_bool("amp", self.amp)
        self.channels_last = _check_auto_bool("channels_last", self.channels_last)
        self.layers = check_int("layers", self.layers, min=1)
        self.width = check_int("width", self.width, min=1)
        if self.layers >= 2 and self.width < K:
            raise ConfigError(f"width == {self.width}, must be >= the number of classes K = {K} (d_l >= K).")
        check_choice("loss", self.loss, LOSSES)
        check_choice("mse_reduction", self.mse_reduction, MSE_REDUCTIONS)
        check_choice("wd_scope", self.wd_scope, WD_SCOPES)
        check_choice("wd_mode", self.wd_mode, WD_MODES)
        check_choice("reg", self.reg, REGULARISATIONS)
        self.lam = check_float("lam", self.lam, ge=0.0)
        self.lam_h = check_float("lam_h", self.lam_h, ge=0.0)
        check_choice("lam_h_scale", self.lam_h_scale, LAM_H_SCALES)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        self.momentum = check_float("momentum", self.momentum, ge=0.0, lt=1.0)
        self.lr = check_float("lr", self.lr, gt=0.0)
        check_choice("lr_schedule", self.lr_schedule, SCHEDULES)
        if isinstance(self.lr_milestones, (int, float, str)):
            raise ConfigError(
                f"lr_milestones == {self.lr_milestones!r}, must be a list of fractions in (0, 1)."
            )
        self.lr_milestones = sorted(
            check_float(f"lr_milestones[{i}]", m, gt=0.0, lt=1.0) for i, m in enumerate(self.lr_milestones)
        )
        self.lr_decay = check_float("lr_decay", self.lr_decay, gt=0.0, le=1.0)
        self.epochs = check_int("epochs", self.epochs, min=1)
        self._check_until()
        self.batch_size = check_int("batch_size", self.batch_size, min=2)
        if self.n is not None and self.batch_size > self.n * K:
            raise ConfigError(
                f"batch_size == {self.batch_size}, must be <= the training set size n · K = {self.n * K}."
            )
        self.eval_every = check_int("eval_every", self.eval_every, min=0)
        self.eval_batch_size = check_int("eval_batch_size", self.eval_batch_size, min=1)
        self.seed = check_int("seed", self.seed, min=0)
        check_choice("device", self.device, DEVICES)
        if self.head_init is not None:
            self.head_init = str(self.head_init)
        self.head_init_run = check_int("head_init_run", self.head_init_run, min=0)
        self.head_init_scale = check_float("head_init_scale", self.head_init_scale, gt=0.0)
        if self.head_init is not None and self.head_init_scale != 1.0:
            raise ConfigError(
                f"head_init_scale == {self.head_init_scale}, must be 1 with head_init (the head is the DUFM "
                "run's weights)."
            )
        if self.rank_rtol is not None:
            self.rank_rtol = check_float("rank_rtol", self.rank_rtol, gt=0.0, lt=1.0)

    def _check_until(self) -> None:
        """``until`` with its budget: ``converged`` needs ``max_epochs`` (which then sets ``epochs``, the
        schedule's length), ``epochs`` refuses one; tolerances > 0."""
        check_choice("until", self.until, UNTIL)
        if self.max_epochs is not None:
            self.max_epochs = check_int("max_epochs", self.max_epochs, min=1)
        self.converge_rtol = check_float("converge_rtol", self.converge_rtol, gt=0.0)
        self.converge_acc_tol = check_float("converge_acc_tol", self.converge_acc_tol, gt=0.0)
        self.converge_window = check_float("converge_window", self.converge_window, gt=0.0, le=1.0)
        if self.until == "epochs":
            if self.max_epochs is not None:
                raise ConfigError(
                    f"max_epochs == {self.max_epochs}, must come with until 'converged' (--until converged); "
                    "with until 'epochs' training runs --epochs."
                )
            return
        if self.max_epochs is None:
            raise ConfigError(
                "until == 'converged' needs max_epochs (--max-epochs N), the budget where training stops if "
                "the convergence criterion has not held by then."
            )
        if self.lr_schedule == "cosine":
            raise ConfigError(
                "lr_schedule == 'cosine', must be constant or multistep with until 'converged' (the cosine "
                "learning rate reaches its last value only at the last epoch)."
            )
        default = type(self).__dataclass_fields__["epochs"].default
        if self.epochs not in (default, self.max_epochs):
            raise ConfigError(
                f"epochs == {self.epochs} with until 'converged', must be left out: the budget is "
                f"max_epochs == {self.max_epochs}."
            )
        self.epochs = self.max_epochs

    if not TYPE_CHECKING:  # hidden from mypy, which keeps flagging misspelt attributes

        def __getattr__(self, name: str) -> Any:
            """The renamed fields' old attribute names (``config.head_layers``), with a DeprecationWarning."""
            new = type(self)._RENAMED.get(name)
            if new is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            warnings.warn(
                f"NetConfig.{name} is deprecated, use NetConfig.{new} (accepted until the next release).",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(self, new)

    @property
    def num_classes(self) -> int:
        """K: the number of selected classes.

        Returns
        -------
        int
            ``len(classes)``, or the dataset's number of classes when ``classes`` is empty.

        Examples
        --------
        >>> NetConfig(dataset="digits", classes=[3, 5]).num_classes, NetConfig(dataset="digits").num_classes
        (2, 10)
        """
        return len(self.classes) if self.classes else dataset_num_classes(self.dataset)

    def to_yaml(self, path: str | Path | None = None) -> str:
        """The YAML of :meth:`to_dict`, headed by a comment naming the dataset (e.g. ``# dataset: MNIST
        (bundled 5 000-image subset, 500 per class)``); written atomically to ``path`` when given.

        Parameters
        ----------
        path
            Where to write it (``None``: only return it).

        Returns
        -------
        str
            The YAML text.

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> path = Path(tempfile.mkdtemp()) / "config.yaml"
        >>> text = NetConfig(dataset="digits").to_yaml(path)
        >>> text.splitlines()[:2], path.read_text() == text
        (['# dataset: 8×8 digits (scikit-learn)', 'dataset: digits'], True)
        """
        text = f"# dataset: {DATASET_LABELS[self.dataset]}\n" + super().to_yaml()
        if path is not None:
            atomic_write_text(path, text)
        return text


def check_batch_seeds(value: Any, name: str = "batch_seeds") -> str | int:
    """``"auto"``, ``"on"``, ``"off"`` or a positive int (the command line's ``"4"`` becomes ``4``; YAML reads
    a bare ``on`` / ``off`` as true / false, which mean the same).

    Parameters
    ----------
    value : str, int or bool
        The setting as given (config file or command line).
    name : str, default "batch_seeds"
        The name in the error message.

    Returns
    -------
    str or int
        ``"auto"``, ``"on"``, ``"off"`` or the number of seeds per batch.

    Raises
    ------
    ConfigError
        Any other value.

    Examples
    --------
    >>> check_batch_seeds("4"), check_batch_seeds(True), check_batch_seeds(" Auto ")
    (4, 'on', 'auto')
    """
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, str) and value.strip().lower() in BATCH_SEEDS:
        return value.strip().lower()
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise ConfigError(f"{name} == {value!r}, must be auto, on, off or a number of seeds >= 1.")


def _check_auto_bool(name: str, value: Any) -> bool | str:
    """``"auto"``, or a bool (``"true"`` / ``"false"`` from the command line become bools)."""
    if isinstance(value, str) and value.lower() in ("auto", "true", "false"):
        return "auto" if value.lower() == "auto" else value.lower() == "true"
    if not isinstance(value, bool):
        raise ConfigError(f"{name} == {value!r}, must be auto, true or false.")
    return value


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} == {value!r}, must be true or false.")
    return value
