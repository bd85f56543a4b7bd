"""S networks of one architecture trained as one batched model (issue 28): stacked parameters, one step.

A :class:`SeedBatch` holds the S networks of S runs (seeds, and sweep points that differ only in the fields of
:data:`~deepcollapse.nets.seed_groups.PER_SEED_FIELDS`), each built by
:func:`~deepcollapse.nets.build.build_network` from its own config, exactly as
:func:`~deepcollapse.nets.train.train_net` builds it.  Their parameters and buffers are stacked
(``torch.func.stack_module_state``: one ``(S, ...)`` leaf per parameter) and every network's own parameters
and buffers are re-pointed to its slice of the stacked storage, so that

- the forward pass of all S networks is one ``torch.func.vmap`` of ``functional_call`` (convolutions become
  one grouped convolution, BatchNorm in training mode one normalisation over S·C channels, its running
  statistics updated in the stacked buffers);
- each seed keeps a real :class:`~deepcollapse.nets.head.HeadNetwork` whose tensors *are* its slice: its own
  optimizer (:func:`~deepcollapse.nets.build.make_optimizer` of its config, so momentum and every optimizer
  convention are the single run's), its own loss scaler, its own :func:`~deepcollapse.nets.evaluate.evaluate`
  and a ``state_dict`` in the single run's format.

One step (:func:`batched_train_step`) is the single run's :func:`~deepcollapse.nets.step.train_step` for
every seed at once: the forward pass under the same autocast, then the loss terms
:func:`~deepcollapse.nets.step.fit_loss` + :func:`~deepcollapse.nets.step.regularisation` of each seed,
computed by a ``vmap`` over the seeds of those very functions (every field they read is the same for all the
seeds of a batch, :mod:`deepcollapse.nets.seed_groups`), one backward pass of the sum of the S losses (the
seeds share no parameter, so each seed's gradient is its own loss's), each seed's gradient handed to its
optimizer as a view of the stacked gradient, and ``scaler.step(optimizer)`` per seed.

Mixed precision: with ``amp`` on CUDA each seed has its own ``GradScaler`` scaling its own loss, so an
overflow in one seed skips only that seed's step and lowers only its scale, exactly as in S separate runs (the
price: one host synchronisation per seed and step, as each scaler checks its seed's gradients).

Memory format: the batched forward pass ignores ``channels_last`` (the grouped convolution of ``vmap`` picks
its own layout); a seed's results equal its single run's to float32 rounding, not bit for bit.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Sequence

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.head import HeadNetwork
from deepcollapse.nets.seed_groups import check_batchable
from deepcollapse.nets.step import fit_loss, regularisation

__all__ = ["SeedBatch", "batched_train_step", "build_seed_batch"]


class _Objective(nn.Module):
    """The single run's training objective of one seed, ``fit + reg_h1 + reg_w``, as a module over the
    network's parameters (so that ``functional_call`` swaps in one seed's slices and ``vmap`` maps it over
    the seeds)."""

    def __init__(self, config: NetConfig, net: nn.Module, n_train: int) -> None:
        super().__init__()
        self.config, self.net, self.n_train = config, net, n_train

    def forward(self, out: torch.Tensor, h1: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        fit = fit_loss(self.config, out.float(), y)  # out (B, K), y (B,)
        reg_h1, reg_w = regularisation(self.config, self.net, h1.float(), self.n_train)  # type: ignore[arg-type]
        return fit + reg_h1 + reg_w


def _alias(
    model: nn.Module, params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], s: int
) -> None:
    """Re-point ``model``'s parameters and buffers to slice ``s`` of the stacked ones (shared storage)."""
    for name, p in list(model.named_parameters()):
        module_name, _, attr = name.rpartition(".")
        module = model.get_submodule(module_name)
        module._parameters[attr] = nn.Parameter(params[name].detach()[s], requires_grad=p.requires_grad)
    for name in [n for n, _ in model.named_buffers()]:
        module_name, _, attr = name.rpartition(".")
        model.get_submodule(module_name)._buffers[attr] = buffers[name][s]


class SeedBatch:
    """S networks of one architecture as one stacked model (see the module docstring).

    Parameters
    ----------
    configs : sequence of NetConfig
        One per seed; equal in every field but those of
        :data:`~deepcollapse.nets.seed_groups.PER_SEED_FIELDS` (checked by the caller,
        :func:`deepcollapse.nets.seed_groups.check_batchable`).
    models : sequence of HeadNetwork
        The seeds' networks, built by :func:`~deepcollapse.nets.build.build_network` and already on their
        device.  Their tensors are re-pointed into the stacked storage here (the modules stay usable: their
        ``forward``, ``state_dict`` and ``load_state_dict`` read and write the seed's slice).
    n_train : int
        Training samples (the same for every seed), for :func:`~deepcollapse.nets.step.regularisation`.

    Attributes
    ----------
    params, buffers : dict of str to Tensor
        The stacked ``(S, ...)`` parameters (leaves) and buffers.
    models : list of HeadNetwork
        The seeds' networks (their tensors are views of ``params`` / ``buffers``).
    """

    def __init__(self, configs: Sequence[NetConfig], models: Sequence[HeadNetwork], n_train: int) -> None:
        if len(configs) != len(models) or not models:
            raise ValueError("SeedBatch needs one config per model and at least one model")
        check_batchable(configs)
        self.configs = list(configs)
        self.models = list(models)
        self.params, self.buffers = stack_module_state(self.models)  # (S, ...) each
        for s, model in enumerate(self.models):
            _alias(model, self.params, self.buffers, s)
        self._per_seed = {  # trainable parameter name -> its S per-seed views
            name: [dict(m.named_parameters())[name] for m in self.models]
            for name, p in self.params.items()
            if p.requires_grad
        }
        structure = copy.deepcopy(self.models[0]).to("meta")  # the architecture, without storage
        self._objective = _Objective(self.configs[0], structure, n_train)
        self._net = structure

    def train(self, mode: bool = True) -> None:
        """Training mode (BatchNorm: batch statistics, running statistics updated) for the batched pass.

        Parameters
        ----------
        mode : bool, default True
            False: evaluation mode.

        Returns
        -------
        None
            The mode of the batched pass is set (the seeds' own modules are not touched).

        Examples
        --------
        >>> import torch
        >>> from deepcollapse.nets.config import NetConfig
        >>> configs = [NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
        ...                      backbone_width=8, device="cpu", seed=s) for s in (0, 1)]
        >>> batch, models, opts, scalers = build_seed_batch(configs, (1, 8, 8), torch.device("cpu"), 6)
        >>> batch.train(False)
        >>> batch._net.training
        False
        """
        self._net.train(mode)

    @property
    def size(self) -> int:
        """S, the number of seeds.

        Returns
        -------
        int
            ``len(models)``.

        Examples
        --------
        >>> import torch
        >>> from deepcollapse.nets.config import NetConfig
        >>> configs = [NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
        ...                      backbone_width=8, device="cpu", seed=s) for s in (0, 1)]
        >>> batch, models, opts, scalers = build_seed_batch(configs, (1, 8, 8), torch.device("cpu"), 6)
        >>> batch.size
        2
        """
        return len(self.models)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Every seed's output and features ``H1`` for its own batch: ``x (S, B, ...) -> ((S, B, K), (S, B,
        d1))``.

        Parameters
        ----------
        x : torch.Tensor
            Seed ``s``'s batch in ``x[s]``, ``(S, B, C, H, W)``.

        Returns
        -------
        tuple of (torch.Tensor, torch.Tensor)
            The outputs ``(S, B, K)`` and the features ``H1`` ``(S, B, d1)``.

        Examples
        --------
        >>> import torch
        >>> from deepcollapse.nets.config import NetConfig
        >>> configs = [NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
        ...                      backbone_width=8, device="cpu", seed=s) for s in (0, 1)]
        >>> batch, models, opts, scalers = build_seed_batch(configs, (1, 8, 8), torch.device("cpu"), 6)
        >>> out, h1 = batch.forward(torch.randn(2, 6, 1, 8, 8))
        >>> tuple(out.shape), tuple(h1.shape)
        ((2, 6, 3), (2, 6, 8))
        """

        def one(
            p: dict[str, torch.Tensor], b: dict[str, torch.Tensor], xs: torch.Tensor
        ) -> tuple[torch.Tensor, torch.Tensor]:
            out, feats = functional_call(self._net, (p, b), (xs,))
            return out, feats["H1"]

        return vmap(one)(self.params, self.buffers, x)  # type: ignore[no-any-return]

    def losses(self, out: torch.Tensor, h1: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Each seed's training objective (``fit + reg_h1 + reg_w`` of the single run): ``(S,)``.

        Parameters
        ----------
        out : torch.Tensor
            The outputs ``(S, B, K)`` of :meth:`forward`.
        h1 : torch.Tensor
            The features ``(S, B, d1)`` of :meth:`forward`.
        y : torch.Tensor
            The labels ``(S, B)``.

        Returns
        -------
        torch.Tensor
            The ``S`` losses (with their graph).

        Examples
        --------
        >>> import torch
        >>> from deepcollapse.nets.config import NetConfig
        >>> configs = [NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
        ...                      backbone_width=8, device="cpu", seed=s) for s in (0, 1)]
        >>> batch, models, opts, scalers = build_seed_batch(configs, (1, 8, 8), torch.device("cpu"), 6)
        >>> x, y = torch.randn(2, 6, 1, 8, 8), torch.tensor([[0, 0, 1, 1, 2, 2]] * 2)
        >>> out, h1 = batch.forward(x)
        >>> tuple(batch.losses(out, h1, y).shape)
        (2,)
        """
        params = {f"net.{k}": v for k, v in self.params.items()}
        buffers = {f"net.{k}": v for k, v in self.buffers.items()}

        def one(
            p: dict[str, torch.Tensor],
            b: dict[str, torch.Tensor],
            o: torch.Tensor,
            h: torch.Tensor,
            t: torch.Tensor,
        ) -> torch.Tensor:
            return functional_call(self._objective, (p, b), (o, h, t))  # type: ignore[no-any-return]

        return vmap(one)(params, buffers, out, h1, y)  # type: ignore[no-any-return]

    def clear_grads(self) -> None:
        """Drop the stacked gradients (the seeds' optimizers drop their views).

        Returns
        -------
        None
            Every stacked parameter's ``grad`` is ``None``.

        Examples
        --------
        >>> import torch
        >>> from deepcollapse.nets.config import NetConfig
        >>> configs = [NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
        ...                      backbone_width=8, device="cpu", seed=s) for s in (0, 1)]
        >>> batch, models, opts, scalers = build_seed_batch(configs, (1, 8, 8), torch.device("cpu"), 6)
        >>> x, y = torch.randn(2, 6, 1, 8, 8), torch.tensor([[0, 0, 1, 1, 2, 2]] * 2)
        >>> batch.losses(*batch.forward(x), y).sum().backward()
        >>> batch.clear_grads()
        >>> all(p.grad is None for p in batch.params.values())
        True
        """
        for p in self.params.values():
            p.grad = None

    def share_grads(self) -> None:
        """Hand each seed's slice of the stacked gradients to its own parameters (views, no copy).

        Returns
        -------
        None
            The seeds' parameters have their ``grad`` set.

        Examples
        --------
        >>> import torch
        >>> from deepcollapse.nets.config import NetConfig
        >>> configs = [NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
        ...                      backbone_width=8, device="cpu", seed=s) for s in (0, 1)]
        >>> batch, models, opts, scalers = build_seed_batch(configs, (1, 8, 8), torch.device("cpu"), 6)
        >>> x, y = torch.randn(2, 6, 1, 8, 8), torch.tensor([[0, 0, 1, 1, 2, 2]] * 2)
        >>> batch.losses(*batch.forward(x), y).sum().backward()
        >>> batch.share_grads()
        >>> tuple(models[1].head_weights()[0].grad.shape)
        (4, 8)
        """
        for name, views in self._per_seed.items():
            g = self.params[name].grad
            if g is None:
                continue
            for p, gs in zip(views, g.unbind(0)):
                p.grad = gs

    def state_dict(self, s: int) -> dict[str, torch.Tensor]:
        """Seed ``s``'s ``state_dict`` as a single run writes it: its own tensors, not views of the stack.

        Parameters
        ----------
        s : int
            The seed's index in the batch.

        Returns
        -------
        dict of str to torch.Tensor
            Copies of the seed's parameters and buffers, keyed as in its ``HeadNetwork``.

        Examples
        --------
        >>> import torch
        >>> from deepcollapse.nets.config import NetConfig
        >>> configs = [NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
        ...                      backbone_width=8, device="cpu", seed=s) for s in (0, 1)]
        >>> batch, models, opts, scalers = build_seed_batch(configs, (1, 8, 8), torch.device("cpu"), 6)
        >>> sd = batch.state_dict(1)
        >>> list(sd)[0], torch.equal(sd["head.layers.0.weight"], models[1].head_weights()[0])
        ('backbone.layers.0.weight', True)
        """
        sd = self.models[s].state_dict()
        out = OrderedDict((k, v.detach().clone()) for k, v in sd.items())
        out._metadata = getattr(sd, "_metadata", None)  # type: ignore[attr-defined]  # module versions
        return out


def build_seed_batch(
    configs: Sequence[NetConfig], in_shape: tuple[int, ...], device: torch.device, n_train: int
) -> tuple[SeedBatch, list[HeadNetwork], list[torch.optim.Optimizer], list[torch.amp.GradScaler]]:
    """The S networks of ``configs`` set up for :func:`batched_train_step`, as the batched loop, the runtime
    calibration and the benchmark set them up: each built by :func:`~deepcollapse.nets.build.build_network`
    on ``device`` in the contiguous memory format (the batched pass picks its own layout), stacked in a
    :class:`SeedBatch`, then each seed's optimizer (:func:`~deepcollapse.nets.build.make_optimizer`, over
    its slices) and loss scaler (:func:`~deepcollapse.nets.build.make_grad_scaler`).

    Parameters
    ----------
    configs : sequence of NetConfig
        One per seed (batchable: :func:`~deepcollapse.nets.seed_groups.check_batchable`).
    in_shape : tuple of int
        One sample's shape ``(C, H, W)``.
    device : torch.device
        Where the networks live.
    n_train : int
        Training samples, for the regularisation.

    Returns
    -------
    (SeedBatch, list of HeadNetwork, list of Optimizer, list of GradScaler)
        The batch, the seeds' networks (views into it), their optimizers and loss scalers.

    Examples
    --------
    >>> import torch
    >>> from deepcollapse.nets.config import NetConfig
    >>> configs = [NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
    ...                      backbone_width=8, device="cpu", seed=s) for s in (0, 1)]
    >>> batch, models, opts, scalers = build_seed_batch(configs, (1, 8, 8), torch.device("cpu"), 6)
    >>> batch.size, len(opts), tuple(batch.params["head.layers.1.weight"].shape)
    (2, 2, (2, 3, 4))
    """
    from deepcollapse.nets.build import build_network, make_grad_scaler, make_optimizer

    models = []
    for c in configs:
        m = build_network(c, in_shape[0], in_shape, device).to(device)
        models.append(m.to(memory_format=torch.contiguous_format))  # type: ignore[call-overload]
    batch = SeedBatch(configs, models, n_train)
    optimizers = [make_optimizer(c, m) for c, m in zip(configs, models)]
    return batch, models, optimizers, [make_grad_scaler(c, device) for c in configs]


def batched_train_step(
    batch: SeedBatch,
    optimizers: Sequence[torch.optim.Optimizer],
    scalers: Sequence[torch.amp.GradScaler],
    x: torch.Tensor,
    y: torch.Tensor,
) -> torch.Tensor:
    """One optimisation step of every seed on its own batch ``(x (S, B, C, H, W), y (S, B))``; returns the
    detached losses ``(S,)`` (device tensors: no synchronisation without ``amp`` on CUDA).

    Seed ``s`` takes the step :func:`~deepcollapse.nets.step.train_step` would take on ``(x[s], y[s])``
    (see the module docstring): the same autocast, loss terms, optimizer and loss scaler.

    Parameters
    ----------
    batch : SeedBatch
        The stacked networks.
    optimizers : sequence of torch.optim.Optimizer
        One per seed (:func:`build_seed_batch`).
    scalers : sequence of torch.amp.GradScaler
        One per seed.
    x : torch.Tensor
        The seeds' batches ``(S, B, C, H, W)``.
    y : torch.Tensor
        Their labels ``(S, B)``.

    Returns
    -------
    torch.Tensor
        The ``S`` losses before the step, detached.

    Examples
    --------
    >>> import torch
    >>> from deepcollapse.nets.config import NetConfig
    >>> configs = [NetConfig(dataset="digits", classes=[0, 1, 2], layers=2, width=4, backbone="mlp",
    ...                      backbone_width=8, device="cpu", seed=s) for s in (0, 1)]
    >>> batch, models, opts, scalers = build_seed_batch(configs, (1, 8, 8), torch.device("cpu"), 6)
    >>> x, y = torch.randn(2, 6, 1, 8, 8), torch.tensor([[0, 0, 1, 1, 2, 2]] * 2)
    >>> losses = batched_train_step(batch, opts, scalers, x, y)
    >>> tuple(losses.shape), losses.requires_grad
    ((2,), False)
    """
    config = batch.configs[0]
    amp_dtype = torch.float16 if x.device.type == "cuda" else torch.bfloat16
    with torch.autocast(x.device.type, dtype=amp_dtype, enabled=config.amp):
        out, h1 = batch.forward(x)  # (S, B, K), (S, B, d1)
    losses = batch.losses(out, h1, y)  # (S,) float32
    batch.clear_grads()
    for opt in optimizers:
        opt.zero_grad(set_to_none=True)
    if any(sc.is_enabled() for sc in scalers):  # each seed's loss through its own scaler
        total = torch.stack([sc.scale(losses[s]) for s, sc in enumerate(scalers)]).sum()
    else:
        total = losses.sum()
    total.backward()
    batch.share_grads()
    for opt, sc in zip(optimizers, scalers):
        sc.step(opt)
        sc.update()
    return losses.detach()
