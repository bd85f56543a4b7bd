"""The batched training step with static inputs, captured once in a CUDA graph and replayed (issue 28).

A network step at batch 128 is launch-bound on a GPU: hundreds of small kernels whose launches take longer
than their work.  :class:`GraphStep` runs :func:`~deepcollapse.nets.seed_batch.batched_train_step`'s body
(forward, the seeds' loss terms, backward, each seed's optimizer step) on *static* tensors: the batch is
copied into fixed input buffers (from data already on the device) and the losses come out in a fixed output
buffer, so that on CUDA the whole step is recorded once as a ``torch.cuda.CUDAGraph`` and every later step is
one replay.  Elsewhere (the CPU) the same body runs eagerly, which is how its logic is tested against the
plain step.

Graph-safe by construction: no host synchronisation in the body (no loss scaler: ``amp`` is refused), every
tensor it reads or writes lives at a fixed address (parameters, stacked gradients allocated during capture,
optimizer state created by the warm-up steps, which are ordinary steps of the training sequence), and a
learning-rate change (the optimizer's Python floats are baked into the graph) re-captures.  Captured, Adam
runs with ``capturable=True`` (its step counters on the device; equal to the plain step to rounding).
``benchmarks/net_throughput.py`` measures it
(``graph`` rows); the training loop does not use it yet.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse.nets.seed_batch import SeedBatch

__all__ = ["GraphStep"]


class GraphStep:
    """The batched step on static buffers (see the module docstring).

    Parameters
    ----------
    batch : SeedBatch
        The S stacked networks.
    optimizers : sequence of torch.optim.Optimizer
        One per seed (SGD, or Adam switched to ``capturable``).
    x, y : Tensor
        Example batch ``(S, B, C, H, W)``, ``(S, B)``: the shapes, dtypes and device of the static inputs.
    capture : bool or None
        Capture a CUDA graph (default: when ``x`` is on CUDA).
    warmup : int
        Eager steps before the capture (CUDA only; they are real steps, creating the optimizer state).
    """

    def __init__(
        self,
        batch: SeedBatch,
        optimizers: Sequence[torch.optim.Optimizer],
        x: torch.Tensor,
        y: torch.Tensor,
        *,
        capture: bool | None = None,
        warmup: int = 3,
    ) -> None:
        if batch.configs[0].amp:
            raise ConfigError(
                "amp == True, must be False for a captured step (the loss scaler synchronises)."
            )
        self.batch, self.optimizers = batch, list(optimizers)
        self.x, self.y = x.clone(), y.clone()  # (S, B, ...), (S, B): static inputs
        self.losses = torch.zeros(batch.size, dtype=torch.float32, device=x.device)  # (S,): static output
        self.capture = x.device.type == "cuda" if capture is None else capture
        if self.capture:  # Adam's step counters on the device (its bias correction then rounds differently)
            for opt in self.optimizers:
                if isinstance(opt, torch.optim.Adam):
                    for g in opt.param_groups:
                        g["capturable"] = True
        self.warmup = warmup
        self.graph: torch.cuda.CUDAGraph | None = None
        self._lrs: list[float] | None = None
        self.steps = 0

    def _body(self) -> None:
        """One step of every seed on the static inputs; losses into the static output (no host sync)."""
        b = self.batch
        out, h1 = b.forward(self.x)  # (S, B, K), (S, B, d1)
        losses = b.losses(out, h1, self.y)  # (S,)
        b.clear_grads()
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=True)
        losses.sum().backward()
        b.share_grads()
        for opt in self.optimizers:
            opt.step()
        self.losses.copy_(losses.detach())

    def _lr_now(self) -> list[float]:
        return [float(g["lr"]) for opt in self.optimizers for g in opt.param_groups]

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Copy ``(x, y)`` into the static inputs and take one step; return the static losses ``(S,)`` (read
        them before the next call)."""
        self.x.copy_(x)
        self.y.copy_(y)
        lrs = self._lr_now()
        if lrs != self._lrs:
            self.graph, self._lrs = None, lrs  # a new learning rate: capture again
        if not self.capture or self.steps < self.warmup:
            if self.capture:  # warm-up steps on a side stream, as torch.cuda.graphs asks
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    self._body()
                torch.cuda.current_stream().wait_stream(stream)
            else:
                self._body()
        else:
            if self.graph is None:
                self.graph = torch.cuda.CUDAGraph()
                self.batch.clear_grads()
                for opt in self.optimizers:
                    opt.zero_grad(set_to_none=True)
                with torch.cuda.graph(self.graph):
                    self._body()
            self.graph.replay()
        self.steps += 1
        return self.losses
