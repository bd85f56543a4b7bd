"""The DUFM trainer's torch engine: ``R`` runs of plain GD stepped together on one device (cpu or cuda).

Each step is ``θ ← θ − lr_t ∇ eq.(1)`` for every run that is still alive, with the gradients of
:func:`~deepcollapse.dufm.model.analytic_gradients` (or autograd).  A run whose step (``lr_t`` times its
gradient) is not finite at step ``t`` is *diverged at t* and frozen there; the others go on.  How the steps
are issued is :attr:`DUFMConfig.step_loop <deepcollapse.dufm.config.DUFMConfig.step_loop>`:

``eager``
    Per step: gradients (the learning rate folded into them), the divergence test read on the host
    (``bool(new_bad.any())``), the masked update.  One host synchronisation per step, which on a GPU leaves
    the device idle between kernels; the reference the other loops are tested against.
``chunk``
    The *graph-safe* step (:func:`gd_step`): static shapes; the learning rate of the step read from a device
    buffer at a device position; the divergence tracked on the device (the first non-finite step of each run
    written with ``torch.where`` into a device tensor; a diverged run frozen by masking its update).
    :meth:`TorchEngine.advance` synchronises with the host once per call (to read which runs diverged).
``graph``
    The same step captured once in CUDA graphs (``torch.cuda.CUDAGraph``: one of :data:`GRAPH_STEPS` steps
    and one of a single step per group of runs) and replayed: no per-kernel launch cost.  The replayed
    kernels are the chunk's own, so the trajectory is the chunk's bit for bit.  cuda only.
``compile``
    The graph-safe step compiled by ``torch.compile`` (inductor: the elementwise work fused), on cuda
    captured in CUDA graphs as ``graph`` is -- what ``mode="reduce-overhead"`` does, with the capture kept
    here because the step updates the parameters in place.  Equal to ``chunk`` to float rounding.

``auto`` is ``graph`` on cuda and ``chunk`` on the CPU.  The chunk, graph and compile loops fold ``lr_t``
(a device tensor) into the gradient with the regularisation terms added outside the GEMMs; ``eager`` folds
the number ``lr`` into them as the engine always did (the GEMM's ``beta``), so the two agree to float32
rounding, not bit for bit.  Every loop gives
the same result however a trajectory is cut into calls (resume is bit-identical).

Memory: the parameters of all ``R`` runs stay on the device; a step's intermediates (activations,
gradients) are made for one *group* of runs at a time, sized by :func:`step_bytes_per_run` to fit what the
device has free (:func:`group_runs`), so ``R`` is limited by the parameters alone (72 KB a run at the
flagship K = 10, n = 50, L = 4, width 30 in float32).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import torch

from deepcollapse._core.docs import fill_doc
from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.engine import Engine
from deepcollapse.dufm.model import analytic_gradients, autograd_gradients, targets
from deepcollapse.family import Family
from deepcollapse.theory.objective_torch import objective

__all__ = ["GRAPH_STEPS", "TorchEngine", "gd_step", "group_runs", "step_bytes_per_run"]

log = logging.getLogger(__name__)

GRAPH_STEPS = 16  # steps per replay of the long CUDA graph (a one-step graph does the rest of a chunk)
_LR_CAPACITY = 1024  # steps whose learning rates the device buffer holds (longer calls run in pieces)
_CPU_GROUP_BYTES = 2 << 30  # intermediates of one group on the CPU (cache and RAM friendly)
_DEVICE_FREE_FRACTION = 0.8  # of the free device memory (after the parameters) a group may use


# ------------------------------------------------------------------------------------------------------------
# memory
# ------------------------------------------------------------------------------------------------------------
@fill_doc
def step_bytes_per_run(config: DUFMConfig) -> int:
    """Bytes one run's step needs besides its parameters (an upper estimate, 1.5 x the tensors counted).

    Counted: the pre- and post-activations ``H~_l, H_l`` of layers 2..L, the output, residual and ``G_L``
    (``3 K N``), three ``(d_l, N)`` tensors of the backward pass at a time, and three parameter-sized
    tensors (the step, the masked step, a scaled weight); autograd keeps about twice as much.

    Parameters
    ----------
    %(dufm_config)s

    Returns
    -------
    int
        The estimate, in bytes.

    Examples
    --------
    >>> from deepcollapse.dufm.config import DUFMConfig
    >>> step_bytes_per_run(DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10))
    1344
    """
    N, d = config.N, list(config.width)
    params = sum(a * b for a, b in config.shapes)
    acts = 2 * sum(w * N for w in d[1:])
    out = 3 * config.classes * N
    back = 3 * max(d) * N
    size = 4 if config.dtype == "float32" else 8
    total = 1.5 * size * (acts + out + back + 3 * params)
    return int(total * (2 if config.grad == "autograd" else 1))


@fill_doc
def group_runs(config: DUFMConfig, runs: int, device: torch.device) -> int:
    """Runs per group: all ``runs`` where their step fits, else as many as fit in
    :data:`_DEVICE_FREE_FRACTION` of the free memory of a CUDA device (measured now, after the parameters
    were placed) or in 2 GiB on the CPU.

    Parameters
    ----------
    %(dufm_config)s
    runs : int
        The number of runs to step.
    device : torch.device
        Where they are stepped.

    Returns
    -------
    int
        Runs per group, ``1 <= . <= runs``.

    Examples
    --------
    >>> from deepcollapse.dufm.config import DUFMConfig
    >>> config = DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, log_every=10)
    >>> group_runs(config, 2, torch.device("cpu"))
    2
    """
    per_run = step_bytes_per_run(config)
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        budget = _DEVICE_FREE_FRACTION * free
    else:
        budget = _CPU_GROUP_BYTES
    return int(max(1, min(runs, budget // per_run)))


# ------------------------------------------------------------------------------------------------------------
# the graph-safe step
# ------------------------------------------------------------------------------------------------------------
def gd_step(
    P: Sequence[torch.Tensor],
    alive: torch.Tensor,
    first_bad: torch.Tensor,
    lr_buf: torch.Tensor,
    pos: torch.Tensor,
    t0: torch.Tensor,
    Y: torch.Tensor,
    lam_h: float,
    lam_w: Sequence[float],
    family: Family,
    grad: str = "analytic",
) -> None:
    """One GD step of a group of runs, in place, with no host synchronisation (safe to capture in a graph).

    Parameters
    ----------
    P : list of Tensor
        ``[H1 (r, d_1, N), W_1 (r, d_2, d_1), ..., W_L (r, K, d_L)]``, updated in place.
    alive : Tensor
        ``(r,)`` bool: runs still stepping; a run whose step is not finite is switched off here.
    first_bad : Tensor
        ``(r,)`` int64: the step at which each run diverged (``-1``: not yet); written here.
    lr_buf, pos, t0 : Tensor
        The learning rates of the call's steps ``(capacity,)``, the position of this step in it ``(1,)``
        (advanced by one here), and the global step number of position 0 ``(1,)``.
    Y : Tensor
        Targets ``(K, N)``.
    lam_h, lam_w, family, grad
        The problem (:class:`~deepcollapse.dufm.config.DUFMConfig` fields).

    Returns
    -------
    None
        ``P``, ``alive``, ``first_bad`` and ``pos`` are updated in place.

    Examples
    --------
    >>> from deepcollapse.dufm.config import DUFMConfig
    >>> from deepcollapse.dufm.model import init_params
    >>> c = DUFMConfig(classes=2, layers=2, n=2, width=4, runs=2, steps=20, dtype="float64")
    >>> P = init_params(c).tensors()
    >>> alive, first_bad = torch.ones(2, dtype=torch.bool), torch.full((2,), -1)
    >>> lr_buf = torch.full((4,), 0.1, dtype=torch.float64)
    >>> pos, t0 = torch.zeros(1, dtype=torch.int64), torch.zeros(1, dtype=torch.int64)
    >>> gd_step(P, alive, first_bad, lr_buf, pos, t0, targets(2, 2), c.lam_h, c.lam_w, c.family)
    >>> pos.item(), first_bad.tolist()
    (1, [-1, -1])
    """
    lr = lr_buf.index_select(0, pos)  # (1,): a device read, no .item()
    t = t0 + pos  # (1,) int64: this step's number
    H1, Ws = P[0], P[1:]
    if grad == "autograd":
        steps = [gi.mul_(lr) for gi in autograd_gradients(H1, Ws, Y, lam_h, lam_w, family=family)]
    else:
        steps = analytic_gradients(H1, Ws, Y, lam_h, lam_w, scale=lr, family=family)
    ok = torch.stack([torch.isfinite(d.flatten(1).sum(1)) for d in steps]).all(0)  # (r,)
    first_bad.copy_(torch.where(alive & ~ok, t, first_bad))
    alive.logical_and_(ok)
    keep = alive.view(-1, 1, 1)
    for p, d in zip(P, steps):
        p.sub_(torch.where(keep, d, 0.0))  # a frozen run: p − 0 = p exactly
    pos.add_(1)


class _Group:
    """One group of runs: views ``[a, b)`` of the engine's tensors, and its captured graphs."""

    def __init__(self, engine: TorchEngine, a: int, b: int) -> None:
        self.a, self.b = a, b
        self.P = [p[a:b] for p in engine.params]
        self.alive = engine.alive[a:b]
        self.first_bad = engine.first_bad[a:b]
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}

    def tensors(self) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
        return self.P, self.alive, self.first_bad


class TorchEngine(Engine):
    """Parameters as torch tensors on ``config.device``, stepped by the loop of ``config.step_loop``
    (module docstring).

    Parameters
    ----------
    params : list of ndarray or Tensor
        ``[H1 (R, d_1, N), W_1, ..., W_L]``: arrays are copied to the device, tensors already there
        (contiguous, of the config's dtype) are stepped in place.
    config : DUFMConfig
        The problem, device, dtype, gradient and step loop.
    group_size : int, optional
        Runs per group of a step's intermediates (default: :func:`group_runs`, as many as fit).
    step_loop : str, optional
        Instead of ``config.resolved_step_loop`` (benchmarks compare the loops on one config).

    Attributes
    ----------
    step_loop : str
        The loop that runs (``graph`` becomes ``chunk`` if capturing fails; logged).
    groups : list of (int, int)
        The run ranges stepped together.
    """

    timed_chunks = True  # advance returns when the device is done: chunks sized from the measured rate

    def __init__(
        self,
        params: Sequence[np.ndarray | torch.Tensor],
        config: DUFMConfig,
        *,
        group_size: int | None = None,
        step_loop: str | None = None,
    ) -> None:
        self.config = config
        self.device = torch.device(config.device)
        self.params = [
            (
                p.to(self.device)
                if isinstance(p, torch.Tensor)
                else torch.from_numpy(np.array(p)).to(self.device)
            ).contiguous()
            for p in params
        ]
        R = self.params[0].shape[0]
        self.Y = targets(config.classes, config.n, config.torch_dtype, self.device)
        self.family = config.family
        self.alive = torch.ones(R, dtype=torch.bool, device=self.device)
        self.first_bad = torch.full((R,), -1, dtype=torch.int64, device=self.device)
        self.step_loop = step_loop or config.resolved_step_loop
        size = group_size or group_runs(config, R, self.device)
        self._groups = [_Group(self, a, min(R, a + size)) for a in range(0, R, size)]
        self.groups = [(g.a, g.b) for g in self._groups]
        self._lr_buf = torch.zeros(_LR_CAPACITY, dtype=config.torch_dtype, device=self.device)
        self._pos = torch.zeros(1, dtype=torch.int64, device=self.device)
        self._t0 = torch.zeros(1, dtype=torch.int64, device=self.device)
        self._pool: Any = None
        self._compiled: Callable[..., None] | None = None
        self._use_graphs = self.step_loop in ("graph", "compile") and self.device.type == "cuda"
        if self.step_loop == "compile":
            self._compiled = torch.compile(gd_step, dynamic=False, fullgraph=True)

    # --- the loops -------------------------------------------------------------------------------------
    def advance(self, start: int, lrs: np.ndarray) -> dict[int, int]:
        # by the loop of step_loop: one host synchronisation per call (per step with eager)
        if len(lrs) == 0:
            return {}
        if self.step_loop == "eager":
            return self._advance_eager(start, lrs)
        before = self.first_bad.clone()
        for k in range(0, len(lrs), _LR_CAPACITY):
            piece = np.asarray(lrs[k : k + _LR_CAPACITY])
            self._lr_buf[: len(piece)].copy_(torch.as_tensor(piece, dtype=self._lr_buf.dtype))
            for g in self._groups:
                self._pos.zero_()
                self._t0.fill_(start + k)
                self._run(g, len(piece))
        was, now = torch.stack([before, self.first_bad]).cpu().numpy()  # the call's one host synchronisation
        return {int(r): int(now[r]) for r in np.flatnonzero((was < 0) & (now >= 0))}

    def _run(self, g: _Group, n: int) -> None:
        """``n`` graph-safe steps of group ``g`` (positions 0 .. n-1 of the learning-rate buffer)."""
        if self._use_graphs:
            long, rest = divmod(n, GRAPH_STEPS)
            for steps, count in ((GRAPH_STEPS, long), (1, rest)):
                if count:
                    graph = self._graph(g, steps)
                    if graph is None:  # capture failed: stepped without graphs from now on
                        self._run(g, steps * count)
                    else:
                        for _ in range(count):
                            graph.replay()
            return
        step = self._compiled or gd_step
        for _ in range(n):
            step(*g.tensors(), *self._step_args())

    def _step_args(self) -> tuple[Any, ...]:
        c = self.config
        return self._lr_buf, self._pos, self._t0, self.Y, c.lam_h, c.lam_w, self.family, c.grad

    def _graph(self, g: _Group, steps: int) -> torch.cuda.CUDAGraph | None:
        """The CUDA graph of ``steps`` graph-safe steps of group ``g`` (captured on first use; all graphs
        share one memory pool: they run one after the other and keep no outputs)."""
        if steps in g.graphs:
            return g.graphs[steps]
        step = self._compiled or gd_step
        try:
            self._warm_up(g, step)
            if self._pool is None:
                self._pool = torch.cuda.graph_pool_handle()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self._pool):
                for _ in range(steps):
                    step(*g.tensors(), *self._step_args())
        except Exception as exc:  # e.g. an operation that cannot be captured on this build
            log.warning("CUDA graph capture failed (%s); stepping without graphs", str(exc).splitlines()[0])
            self._use_graphs = False
            if self.step_loop == "graph":
                self.step_loop = "chunk"
            return None
        g.graphs[steps] = graph
        return graph

    def _warm_up(self, g: _Group, step: Callable[..., None]) -> None:
        """Two steps on copies of group ``g`` on a side stream before a capture (compiles, initialises cuBLAS
        and the allocator; the engine's state is untouched, and the copies are freed before the capture)."""
        P, alive, first = g.tensors()
        scratch = ([p.clone() for p in P], alive.clone(), first.clone())
        pos = self._pos.clone()  # the warm-up advances the position: put it back afterwards
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(2):
                step(*scratch, *self._step_args())
        torch.cuda.current_stream(self.device).wait_stream(side)
        self._pos.copy_(pos)

    def _advance_eager(self, start: int, lrs: np.ndarray) -> dict[int, int]:
        """The reference loop: the learning rate folded into the gradient, a host sync per step."""
        c = self.config
        diverged: dict[int, int] = {}
        for g in self._groups:
            P, alive, first = g.tensors()
            for i, lr in enumerate(lrs):
                lr = float(lr)
                H1, Ws = P[0], P[1:]
                if c.grad == "autograd":
                    steps = [
                        t.mul_(lr) for t in autograd_gradients(H1, Ws, self.Y, c.lam_h, c.lam_w, self.family)
                    ]
                else:
                    steps = analytic_gradients(H1, Ws, self.Y, c.lam_h, c.lam_w, scale=lr, family=self.family)
                ok = torch.stack([torch.isfinite(t.flatten(1).sum(1)) for t in steps]).all(0)  # (r,)
                new_bad = alive & ~ok
                if bool(new_bad.any()):
                    for r in torch.nonzero(new_bad).flatten().tolist():
                        diverged[g.a + int(r)] = start + i
                    first[new_bad] = start + i
                    alive &= ok
                with torch.no_grad():
                    for p, d in zip(P, steps):
                        a = alive.view(-1, *([1] * (p.dim() - 1)))
                        p.copy_(torch.where(a, p - d, p))
                if not bool(alive.any()):
                    break
        return diverged

    # --- state -----------------------------------------------------------------------------------------
    def freeze(self, runs: Iterable[int]) -> None:
        for r in runs:
            self.alive[int(r)] = False

    def best_loss(self) -> float:
        """:meth:`Engine.best_loss` in the config's dtype, on the device."""
        c = self.config
        best = torch.full((), float("inf"), dtype=c.torch_dtype, device=self.device)
        with torch.no_grad():
            for g in self._groups:
                total, _, _ = objective(g.P[0], g.P[1:], self.Y, c.lam_h, c.lam_w, self.family)
                total = torch.where(g.alive & torch.isfinite(total), total, torch.inf)
                best = torch.minimum(best, total.min())
        value = float(best)
        return value if np.isfinite(value) else float("nan")

    def numpy_params(self) -> list[np.ndarray]:
        """:meth:`Engine.numpy_params`, copied to the host."""
        return [p.detach().cpu().numpy().copy() for p in self.params]

    def close(self) -> None:
        # the captured CUDA graphs
        for g in self._groups:
            g.graphs.clear()
        self._pool = None
