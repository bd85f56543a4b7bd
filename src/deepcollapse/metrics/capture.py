"""Per-layer collapse metrics of any ``torch.nn.Module``: forward hooks, streaming statistics, one table.

:func:`layer_metrics` registers forward hooks on the requested sub-modules, feeds a loader of ``(x, y)``
batches through the model in eval mode under ``torch.no_grad``, streams each layer's output (flattened to
``(B, D)``) into a :class:`~deepcollapse.metrics.streaming.CollapseStatistics`, optionally makes a second pass
for NCC accuracy / NC4, and returns a pandas DataFrame with one row per layer.  Hooks are removed and every
module's previous train/eval flag restored before returning (also on error); nothing global is modified.

Layer naming: a layer is a module name of ``model.named_modules()`` (``"0"``, ``"head.fc1"``, ...).  Its
``kind`` is ``"pre"`` for the output of an affine map (``Linear``, ``Conv*``: pre-activations), ``"post"`` for
the output of an activation (``ReLU``, ``GELU``, ...: post-activations) and ``"other"`` otherwise, unless
given explicitly with ``layers={"name": "pre", ...}``.  Outputs are captured inside the hook, before any
following in-place activation can overwrite them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from deepcollapse._core.checks import ConfigError, check_choice, check_int
from deepcollapse.metrics._inputs import ArrayLike
from deepcollapse.metrics.collapse import METRIC_KEYS
from deepcollapse.metrics.streaming import CollapseStatistics, NCCStatistics

__all__ = ["default_layers", "layer_kind", "layer_metrics"]

log = logging.getLogger(__name__)

_PRE = (nn.Linear, nn.Bilinear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.LazyLinear)
_POST = (
    nn.ReLU,
    nn.ReLU6,
    nn.LeakyReLU,
    nn.PReLU,
    nn.ELU,
    nn.SELU,
    nn.CELU,
    nn.GELU,
    nn.SiLU,
    nn.Mish,
    nn.Softplus,
    nn.Tanh,
    nn.Sigmoid,
    nn.Hardtanh,
)
KINDS = ("pre", "post", "other")


def layer_kind(module: nn.Module) -> str:
    """``"pre"`` for affine maps (Linear/Conv), ``"post"`` for activations, ``"other"`` otherwise.

    Parameters
    ----------
    module : torch.nn.Module
        Any module.

    Returns
    -------
    str
        ``"pre"``, ``"post"`` or ``"other"``.

    Examples
    --------
    >>> layer_kind(nn.Linear(2, 3)), layer_kind(nn.ReLU()), layer_kind(nn.Sequential())
    ('pre', 'post', 'other')
    """
    if isinstance(module, _PRE):
        return "pre"
    if isinstance(module, _POST):
        return "post"
    return "other"


def default_layers(model: nn.Module) -> dict[str, str]:
    """Every named Linear/Conv (pre-activation) and activation (post-activation) module, in order.

    Parameters
    ----------
    model : torch.nn.Module
        Any module.

    Returns
    -------
    dict of str to str
        ``{module name: "pre" or "post"}`` in the order of ``model.named_modules()``.

    Examples
    --------
    >>> default_layers(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Dropout()))
    {'0': 'pre', '1': 'post'}
    """
    return {name: layer_kind(m) for name, m in model.named_modules() if name and layer_kind(m) != "other"}


def _resolve_layers(model: nn.Module, layers: Sequence[str] | Mapping[str, str] | None) -> dict[str, str]:
    modules = dict(model.named_modules())
    if layers is None:
        chosen = default_layers(model)
        if not chosen:
            raise ConfigError(
                "layers == None, must name layers: the model has no Linear/Conv/activation module."
            )
        return chosen
    if isinstance(layers, str):
        layers = [layers]
    items = list(layers.items()) if isinstance(layers, Mapping) else [(name, None) for name in layers]
    if not items:
        raise ConfigError("layers == [], must name at least one module.")
    out: dict[str, str] = {}
    for name, kind in items:
        if name not in modules or name == "":
            avail = [n for n in modules if n][:12]
            raise ConfigError(f"layers contains {name!r}, must be a module name of the model, e.g. {avail}.")
        out[name] = (
            layer_kind(modules[name]) if kind is None else check_choice(f"layers[{name!r}]", kind, KINDS)
        )
    return out


def _model_device(model: nn.Module) -> torch.device:
    for p in model.parameters():
        return p.device
    for b in model.buffers():
        return b.device
    return torch.device("cpu")


def _first_tensor(output: Any) -> torch.Tensor:
    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        return output[0]
    raise ConfigError(
        f"layer output type == {type(output).__name__}, must be a tensor (or a tuple starting with one)."
    )


def _to_device(x: Any, device: torch.device) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, (tuple, list)):
        return type(x)(_to_device(v, device) for v in x)
    if isinstance(x, Mapping):
        return {k: _to_device(v, device) for k, v in x.items()}
    return x


def _run(
    model: nn.Module,
    names: Iterable[str],
    loader: Iterable[Any],
    device: torch.device,
    sink: dict[str, Any],
    max_batches: int | None,
    desc: str,
    progress: bool,
) -> None:
    """One pass over ``loader``; each hooked layer's flattened output goes to ``sink[name](h, y)``."""
    modules = dict(model.named_modules())
    current: dict[str, np.ndarray] = {}

    def make_hook(name: str):
        def hook(module: nn.Module, inputs: Any, output: Any) -> None:
            h = _first_tensor(output).detach()
            sink[name](h.reshape(h.shape[0], -1), current["y"])  # (B, D); consumed before in-place ops run

        return hook

    handles = [modules[name].register_forward_hook(make_hook(name)) for name in names]
    try:
        from tqdm.auto import tqdm

        it = tqdm(loader, desc=desc, disable=not progress, leave=False)
        for b, batch in enumerate(it):
            if max_batches is not None and b >= max_batches:
                break
            if not isinstance(batch, (tuple, list)) or len(batch) < 2:
                raise ConfigError(f"loader batch type == {type(batch).__name__}, must be an (x, y) pair.")
            x, y = batch[0], batch[1]
            current["y"] = y.detach().cpu().numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
            model(_to_device(x, device))
    finally:
        for handle in handles:
            handle.remove()


def layer_metrics(
    model: nn.Module,
    layers: Sequence[str] | Mapping[str, str] | None,
    loader: Iterable[Any],
    *,
    num_classes: int | None = None,
    device: str | torch.device | None = None,
    ncc: bool = True,
    weights: Mapping[str, ArrayLike] | None = None,
    max_batches: int | None = None,
    drop_empty: bool = False,
    progress: bool = False,
    **compute_kwargs: Any,
) -> pd.DataFrame:
    """Collapse metrics of the outputs of ``layers`` of ``model`` over ``loader``, one DataFrame row each.

    Parameters
    ----------
    model : torch.nn.Module
        Any module; run in eval mode under ``torch.no_grad`` (previous modes restored).
    layers : sequence of str, mapping of str to str, or None
        Module names (kind inferred, see module docstring), a mapping ``name -> "pre"|"post"|"other"``, or
        ``None`` for every Linear/Conv/activation module.
    loader : iterable
        Re-iterable (iterated twice if ``ncc``) of ``(x, y)`` batches, e.g. a ``DataLoader``; ``x`` is moved
        to ``device``, ``y`` holds integer labels.
    num_classes : int, optional
        ``K``; default: ``max(y) + 1`` from a labels-only pre-pass over the loader.
    device : str or torch.device, optional
        Where the model runs; default the device of its first parameter (the model is not moved: pass a
        model already on ``device``).
    ncc : bool, default True
        Make a second pass for ``ncc_accuracy`` (and ``nc4_agreement`` where ``weights`` has a ``(K, D)``
        classifier); otherwise those columns are ``None``.
    weights : mapping of str to array_like, optional
        ``{layer name: (P, D) weight matrix}`` applied to that layer's features (for ``nc3_alignment``,
        ``self_duality``, ``nc4_agreement``).
    max_batches : int, optional
        Use only the first ``max_batches`` batches (each pass).
    drop_empty : bool, default False
        Drop classes without samples instead of raising ``ConfigError``.
    progress : bool, default False
        Show a progress bar per pass.
    **compute_kwargs
        Passed to :meth:`CollapseStatistics.compute` (``weighted``, ``rtol``, ``dtype``).

    Returns
    -------
    pandas.DataFrame
        Columns ``layer, kind`` and the keys of ``collapse_metrics`` (``singular_values``, ``classes`` and
        ``warnings`` hold lists), one row per layer.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    >>> x = torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, 3.0]]); y = torch.tensor([0, 0, 1, 1])
    >>> layer_metrics(model, None, [(x, y)])[["layer", "kind", "num_samples"]]
      layer  kind  num_samples
    0     0   pre            4
    1     1  post            4
    """
    if not isinstance(model, nn.Module):
        raise ConfigError(f"model == {type(model).__name__}, must be a torch.nn.Module.")
    chosen = _resolve_layers(model, layers)
    if max_batches is not None:
        max_batches = check_int("max_batches", max_batches, min=1)
    dev = torch.device(device) if device is not None else _model_device(model)
    weights = dict(weights or {})
    for name in weights:
        if name not in chosen:
            raise ConfigError(f"weights has key {name!r}, must be one of the layers {list(chosen)}.")
    if num_classes is None:
        top = -1
        for b, batch in enumerate(loader):
            if max_batches is not None and b >= max_batches:
                break
            y = batch[1]
            y = y.detach().cpu().numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
            top = max(top, int(y.max())) if y.size else top
        num_classes = top + 1
    K = check_int("num_classes", num_classes, min=2)

    stats: dict[str, CollapseStatistics] = {}

    def first_pass(name: str):
        def update(h: torch.Tensor, y: np.ndarray) -> None:
            if name not in stats:
                stats[name] = CollapseStatistics(K, int(h.shape[1]))
            stats[name].update(h, y)

        return update

    modes = {m: m.training for m in model.modules()}
    model.eval()
    try:
        with torch.no_grad():
            _run(
                model,
                chosen,
                loader,
                dev,
                {n: first_pass(n) for n in chosen},
                max_batches,
                "metrics",
                progress,
            )
            missing = [n for n in chosen if n not in stats]
            if missing:
                raise ConfigError(f"layers {missing} produced no output, must be used in model.forward.")
            nccs: dict[str, NCCStatistics] = {}
            if ncc:
                for name in chosen:
                    W = weights.get(name)
                    clf = W if W is not None and np.shape(W)[0] == K else None
                    nccs[name] = stats[name].ncc_statistics(clf, drop_empty=drop_empty)
                sinks = {n: nccs[n].update for n in chosen}
                _run(model, chosen, loader, dev, sinks, max_batches, "ncc", progress)
    finally:
        for m, mode in modes.items():
            m.training = mode

    rows = []
    for name, kind in chosen.items():
        res = stats[name].compute(nccs.get(name), weights.get(name), drop_empty=drop_empty, **compute_kwargs)
        rows.append({"layer": name, "kind": kind, **res.to_dict()})
    columns = ["layer", "kind", *METRIC_KEYS]
    return pd.DataFrame(rows, columns=columns)
