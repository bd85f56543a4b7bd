"""The configuration of a batched L-DUFM training job (:class:`DUFMConfig`), validated at construction.

The problem it describes is eq. (1) of the 2024 paper (see :mod:`deepcollapse.dufm.model`); the training
options (learning rate and schedule, steps, seeds, initialisation, engine) are read by
:mod:`deepcollapse.dufm.trainer`.  torch is imported only where a field needs it (``device="auto"``,
:attr:`DUFMConfig.torch_dtype`), so building a config is cheap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from deepcollapse._core import flagship
from deepcollapse._core.checks import (
    ConfigError,
    check_choice,
    check_float,
    check_int,
    check_per_layer,
)
from deepcollapse._core.config import ConfigMixin
from deepcollapse._core.devices import check_cuda_device
from deepcollapse._core.problem_fields import PROBLEM_HELP, check_problem_fields
from deepcollapse.family import Family, get_family
from deepcollapse.family.fields import activation_field, check_family_fields, eps_field, loss_field

if TYPE_CHECKING:
    import torch

    from deepcollapse.theory.problem import Problem


__all__ = [
    "BACKENDS",
    "DEFAULT_H1_SCALE",
    "DEVICES",
    "DTYPES",
    "DUFMConfig",
    "GRADS",
    "HoldsProblem",
    "INITS",
    "LR_SCHEDULES",
    "STEP_LOOPS",
]

INITS = ("normal", "uniform")
LR_SCHEDULES = ("constant", "step", "cosine")
DTYPES = ("float32", "float64")
DEVICES = ("cpu", "cuda", "auto")
GRADS = ("analytic", "autograd")
BACKENDS = ("auto", "numpy", "torch")
STEP_LOOPS = ("auto", "chunk", "graph", "compile", "eager")
# Default std of the H1 entries (the W_l default is 1/√d_l, LeCun).  Measured at the flagship setting (K = 10,
# n = 50, L = 4, width 30, λ = 0.004, lr 0.5, float32, seeds 0-7, 50k steps): H1 std 0.1 gets stuck in
# rank-1/2 stationary points (loss 0.44-0.47), 0.5 leaves 7/8 runs below L_DNC, the best 3.2 % above L_SRG,
# 1.0 puts 8/8 below L_DNC with the best 2.0 % above L_SRG.  Divergence with std 1.0 and these W_l: none in
# those 8 runs nor in 32 more seeds (3000 steps); performance.md's "N(0, 1) diverges in half the seeds" does
# not state its W initialisation (presumably a larger one).
DEFAULT_H1_SCALE = 1.0


def _int_list(name: str, value: Any, layers: int, *, min: int) -> list[int]:
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
        value = parts if len(parts) > 1 else (parts[0] if parts else value)
        if isinstance(value, str):
            try:
                value = int(value)
            except ValueError:
                raise ConfigError(f"{name} == {value!r}, must be an integer or a list of {layers}.") from None
    if isinstance(value, (list, tuple)):
        if len(value) != layers:
            raise ConfigError(f"{name} has {len(value)} values, must have 1 or layers = {layers}.")
        return [
            check_int(f"{name}[{i}]", int(v) if isinstance(v, str) else v, min=min)
            for i, v in enumerate(value)
        ]
    return [check_int(name, value, min=min)] * layers


class HoldsProblem:
    """Mixin of a config (this module's :class:`DUFMConfig`, the search's
    :class:`~deepcollapse.landscape.search_config.SearchConfig`) that holds an instance of eq. (1) as fields
    under :class:`Problem <deepcollapse.theory.problem.Problem>`'s words (``classes, layers, n, lam_h, lam_w``
    and the family's ``loss, activation, eps``), so that its YAML and command-line spellings stay flat:
    :attr:`problem` is the ``Problem`` those fields describe, built in this one place. The hidden widths
    come from the config's ``width``: the list ``d_1 .. d_L`` (``DUFMConfig``) or one width for every layer
    (``SearchConfig``).
    """

    classes: int
    layers: int
    n: int
    lam_h: float
    lam_w: Any
    width: Any
    loss: str
    activation: str
    eps: float | None

    @property
    def problem(self) -> Problem:
        """The instance of eq. (1) this config describes: classes, layers, n, λ's, widths and model family.

        Returns
        -------
        Problem
            The theory's description of the instance (:class:`deepcollapse.theory.problem.Problem`).

        Examples
        --------
        >>> from deepcollapse.dufm.config import DUFMConfig
        >>> from deepcollapse.landscape.search_config import SearchConfig
        >>> DUFMConfig(classes=2, layers=2, n=1, width=[3, 4], runs=2, steps=10).problem.widths
        (3, 4)
        >>> p = SearchConfig(classes=3, layers=2, n=1, lam_h=0.01, lam_w=[0.01, 0.01], width=3).problem
        >>> p.widths, p.family.name
        ((3, 3), 'mse+relu')
        """
        from deepcollapse.theory.problem import Problem  # lazily: `--help` never imports the theory

        w = self.width
        widths = tuple(w) if isinstance(w, (list, tuple)) else (w,) * self.layers
        return Problem(
            self.classes,
            self.layers,
            self.n,
            self.lam_h,
            tuple(self.lam_w),
            widths,
            self.loss,
            self.activation,
            self.eps,
        )


@dataclass
class DUFMConfig(HoldsProblem, ConfigMixin):
    """One L-DUFM training problem and ``runs`` seeds of plain full-batch gradient descent on it.

    Validated at construction (``ConfigError`` naming the field).  ``width``/``lam_w``/``init_scale`` are
    normalised to lists (``d_1..d_L``; ``λ_{W_1}..λ_{W_L}``; stds of ``H1, W_1..W_L``).
    ``to_dict``/``from_dict`` and ``to_yaml``/``from_yaml`` round-trip; unknown keys are rejected with the
    key named.
    """

    # The CLI / sweep alias: one λ for λ_H1 and every λ_W unless those are given explicitly.
    _ALIASES: ClassVar[dict[str, tuple[str, ...]]] = {"lam": ("lam_h", "lam_w")}

    # Each field's metadata is its command-line option (deepcollapse.cli.options.add_config_options): "help"
    # describes it (without its default, which is the field's), "choices" the allowed values; a field whose
    # default is computed (init_scale) states it in "shown_default", computed from the same constants.
    # the problem's fields: their words are Problem's (deepcollapse._core.problem_fields)
    classes: int = field(default=flagship.CLASSES, metadata={"help": PROBLEM_HELP["classes"]})
    n: int = field(default=flagship.N, metadata={"help": PROBLEM_HELP["n"]})
    layers: int = field(default=flagship.LAYERS, metadata={"help": PROBLEM_HELP["layers"]})
    width: Any = field(default=flagship.WIDTH, metadata={"help": PROBLEM_HELP["widths"]})
    lam_h: float = field(
        default=flagship.LAM, metadata={"help": PROBLEM_HELP["lam_h"] + " (overrides --lam)"}
    )
    lam_w: Any = field(
        default=flagship.LAM,
        metadata={"help": PROBLEM_HELP["lam_w"] + " (λ = 0: unregularised; overrides --lam)"},
    )
    loss: str = loss_field()
    activation: str = activation_field()
    eps: float | None = eps_field()
    lr: float = field(default=0.5, metadata={"help": "(initial) learning rate of plain GD"})
    lr_schedule: str = field(
        default="constant",
        metadata={
            "help": "learning-rate schedule: constant, step (× --lr-decay every --lr-decay-every steps) or "
            "cosine (to --lr-min)",
            "choices": LR_SCHEDULES,
        },
    )
    lr_decay: float = field(default=0.1, metadata={"help": "step schedule factor"})
    lr_decay_every: int = field(default=0, metadata={"help": "step schedule period in steps (0 = never)"})
    lr_min: float = field(default=0.0, metadata={"help": "cosine schedule floor"})
    steps: int = field(default=100_000, metadata={"help": "GD steps"})
    runs: int = field(default=1, metadata={"help": "R, independent runs batched together"})
    seed: int = field(default=0, metadata={"help": "run r uses seed + r (unless --seeds)"})
    seeds: list[int] | None = field(
        default=None,
        metadata={"help": "explicit comma-separated seeds, one per run", "shown_default": "seed + r"},
    )
    log_every: int = field(
        default=1000,
        metadata={"help": "steps between metric records (step 0 and the last step are always logged)"},
    )
    checkpoint_every: int = field(default=5000, metadata={"help": "steps between atomic checkpoints"})
    init: str = field(
        default="normal",
        metadata={"help": "distribution of the initial entries (same std)", "choices": INITS},
    )
    init_scale: Any = field(
        default=None,
        metadata={
            "help": "std of the entries of H1, W_1..W_L: one float or L+1 comma-separated floats",
            "shown_default": f"H1 {DEFAULT_H1_SCALE}, W_l 1/sqrt(d_l)",
        },
    )
    dtype: str = field(default="float32", metadata={"help": "floating-point type", "choices": DTYPES})
    device: str = field(
        default="cpu", metadata={"help": "where to compute (auto: cuda when present)", "choices": DEVICES}
    )
    grad: str = field(
        default="analytic",
        metadata={
            "help": "gradient: analytic (hand-written backward) or autograd (torch autograd of eq. (1))",
            "choices": GRADS,
        },
    )
    backend: str = field(
        default="auto",
        metadata={
            "help": "engine: auto (numpy on CPU, torch on cuda), numpy (analytic gradient only) or torch",
            "choices": BACKENDS,
        },
    )
    step_loop: str = field(
        default="auto",
        metadata={
            "help": "the torch engine's step loop: chunk (graph-safe steps, one host sync per chunk), graph "
            "(the chunk replayed as CUDA graphs; cuda only), compile (the step compiled by torch.compile, on "
            "cuda also captured in CUDA graphs), eager (one host sync per step: the reference); auto: graph "
            "on cuda, chunk on cpu. The trajectory does not depend on it beyond float rounding",
            "choices": STEP_LOOPS,
        },
    )
    workers: int = field(
        default=1,
        metadata={"help": "CPU processes the runs are split across (numpy backend), 1 = in-process"},
    )
    sub_batch: int = field(
        default=4,
        metadata={
            "help": "runs advanced together per kernel call (cache blocking; results do not depend on it)"
        },
    )
    rank_rtol: float = field(
        default=1e-3,
        metadata={"help": "numerical rank threshold: singular values > rank_rtol · σ_1 count"},
    )
    polish: bool = field(
        default=True,
        metadata={
            "help": "do not polish each run's class-mean structure in summary.json (polished_loss: a "
            "Nelder-Mead fit per run, the slowest part of the analysis); the classification does not use it",
            "option": "--no-polish",
        },
    )

    def __post_init__(self) -> None:
        self.classes, self.layers, self.n, self.lam_h, self.lam_w = check_problem_fields(
            self.classes, self.layers, self.n, self.lam_h, self.lam_w
        )
        self.width = _int_list("width", self.width, self.layers, min=1)
        check_family_fields(self)  # ConfigError naming loss / activation / eps
        self.lr = check_float("lr", self.lr, gt=0.0)
        check_choice("lr_schedule", self.lr_schedule, LR_SCHEDULES)
        self.lr_decay = check_float("lr_decay", self.lr_decay, gt=0.0, le=1.0)
        self.lr_decay_every = check_int("lr_decay_every", self.lr_decay_every, min=0)
        self.lr_min = check_float("lr_min", self.lr_min, ge=0.0)
        if self.lr_min > self.lr:
            raise ConfigError(f"lr_min == {self.lr_min}, must be <= lr = {self.lr}.")
        self.steps = check_int("steps", self.steps, min=0)
        self.runs = check_int("runs", self.runs, min=1)
        self.seed = check_int("seed", self.seed, min=0)
        if self.seeds is not None:
            if isinstance(self.seeds, str):
                parts = [s.strip() for s in self.seeds.split(",") if s.strip()]
                self.seeds = [int(s) if s.lstrip("-").isdigit() else s for s in parts]
            if not isinstance(self.seeds, (list, tuple)) or len(self.seeds) != self.runs:
                raise ConfigError(f"seeds == {self.seeds}, must be a list of runs = {self.runs} integers.")
            self.seeds = [check_int(f"seeds[{i}]", s, min=0) for i, s in enumerate(self.seeds)]
        self.log_every = check_int("log_every", self.log_every, min=1)
        self.checkpoint_every = check_int("checkpoint_every", self.checkpoint_every, min=1)
        check_choice("init", self.init, INITS)
        if self.init_scale is None:
            scales = [DEFAULT_H1_SCALE] + [1.0 / math.sqrt(d) for d in self.width]
        else:
            scales = check_per_layer("init_scale", self.init_scale, self.layers + 1, gt=0.0)
        self.init_scale = [float(s) for s in scales]
        check_choice("dtype", self.dtype, DTYPES)
        check_choice("device", self.device, DEVICES)
        if self.device == "auto":
            import torch  # here, not at module top: the CLI builds configs without loading torch

            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        check_cuda_device("device", self.device)
        check_choice("grad", self.grad, GRADS)
        check_choice("backend", self.backend, BACKENDS)
        if self.backend == "numpy" and self.device != "cpu":
            raise ConfigError(f"backend == 'numpy', must be 'torch' or 'auto' on device {self.device!r}.")
        if self.backend == "numpy" and self.grad == "autograd":
            raise ConfigError("backend == 'numpy', must be 'torch' or 'auto' with grad = 'autograd'.")
        check_choice("step_loop", self.step_loop, STEP_LOOPS)
        if self.step_loop != "auto" and self.resolved_backend == "numpy":
            raise ConfigError(
                f"step_loop == {self.step_loop!r}, must be 'auto' with the numpy engine (backend "
                f"{self.backend!r} on {self.device}); set backend to 'torch' for the torch engine's loops."
            )
        if self.step_loop == "graph" and self.device != "cuda":
            raise ConfigError(
                f"step_loop == 'graph', must be 'auto', 'chunk', 'compile' or 'eager' on device "
                f"{self.device!r} (CUDA graphs need a CUDA device)."
            )
        if self.step_loop == "compile" and self.grad == "autograd":
            raise ConfigError(
                "step_loop == 'compile', must be 'auto', 'chunk', 'graph' or 'eager' with grad = 'autograd'."
            )
        self.workers = check_int("workers", self.workers, min=1)
        self.sub_batch = check_int("sub_batch", self.sub_batch, min=1)
        self.rank_rtol = check_float("rank_rtol", self.rank_rtol, gt=0.0, lt=1.0)
        if not isinstance(self.polish, bool):
            raise ConfigError(f"polish == {self.polish!r}, must be true or false.")

    # --- derived -----------------------------------------------------------------------------------------
    @property
    def family(self) -> Family:
        """The model family (loss, activation) of :mod:`deepcollapse.family`.

        Returns
        -------
        Family
            ``get_family(loss, activation, eps)``.

        Examples
        --------
        >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
        >>> c.family
        Family('mse+relu')
        """
        return get_family(self.loss, self.activation, self.eps)

    @property
    def N(self) -> int:
        """The number of samples ``N = K n``.

        Returns
        -------
        int
            ``classes · n``.

        Examples
        --------
        >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
        >>> c.N
        2
        """
        return self.classes * self.n

    @property
    def run_seeds(self) -> list[int]:
        """The seed of each run: ``seeds``, or ``seed, seed + 1, ..., seed + runs − 1``.

        Returns
        -------
        list of int
            One seed per run.

        Examples
        --------
        >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
        >>> c.run_seeds
        [0, 1]
        """
        return list(self.seeds) if self.seeds is not None else [self.seed + r for r in range(self.runs)]

    @property
    def shapes(self) -> list[tuple[int, int]]:
        """``[(d_1, N), (d_2, d_1), ..., (K, d_L)]``: shapes of ``H1, W_1, ..., W_L`` of one run.

        Returns
        -------
        list of tuple of int
            ``L + 1`` shapes.

        Examples
        --------
        >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
        >>> c.shapes
        [(3, 2), (3, 3), (2, 3)]
        """
        d = list(self.width) + [self.classes]
        return [(d[0], self.N)] + [(d[l + 1], d[l]) for l in range(self.layers)]

    @property
    def torch_dtype(self) -> torch.dtype:
        """The torch dtype of ``dtype`` (``float32`` or ``float64``).

        Returns
        -------
        torch.dtype
            ``torch.float32`` or ``torch.float64``.

        Examples
        --------
        >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
        >>> c.torch_dtype
        torch.float64
        """
        import torch  # lazily, as above

        return torch.float32 if self.dtype == "float32" else torch.float64

    @property
    def resolved_backend(self) -> str:
        """The engine: ``backend``, with ``auto`` as numpy for analytic gradients on the CPU, torch otherwise.

        Returns
        -------
        str
            ``"numpy"`` or ``"torch"``.

        Examples
        --------
        >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
        >>> c.resolved_backend
        'numpy'
        """
        if self.backend != "auto":
            return self.backend
        return "numpy" if self.device == "cpu" and self.grad == "analytic" else "torch"

    @property
    def resolved_step_loop(self) -> str:
        """The torch engine's step loop: ``step_loop``, with ``auto`` as graph on cuda, chunk on cpu.

        Returns
        -------
        str
            ``"graph"`` or ``"chunk"`` (or another explicit ``step_loop``).

        Examples
        --------
        >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
        >>> c.resolved_step_loop
        'chunk'
        """
        if self.step_loop != "auto":
            return self.step_loop
        return "graph" if self.device == "cuda" else "chunk"

    def learning_rate(self, step: int) -> float:
        """Learning rate of GD step ``step`` (0-based): constant, ``lr · lr_decay^⌊step/lr_decay_every⌋``, or
        cosine ``lr_min + (lr − lr_min)(1 + cos(π step / steps))/2``.

        Parameters
        ----------
        step : int
            The GD step, 0-based.

        Returns
        -------
        float
            Its learning rate.

        Examples
        --------
        >>> c = DUFMConfig(classes=2, layers=2, n=1, width=[3, 3], runs=2, steps=10, dtype='float64')
        >>> c.learning_rate(0) == c.lr
        True
        """
        if self.lr_schedule == "step":
            return (
                self.lr * self.lr_decay ** (step // self.lr_decay_every) if self.lr_decay_every else self.lr
            )
        if self.lr_schedule == "cosine":
            return self.lr_min + 0.5 * (self.lr - self.lr_min) * (
                1.0 + math.cos(math.pi * step / max(self.steps, 1))
            )
        return self.lr
