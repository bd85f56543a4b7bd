"""The evaluation of a network run: accuracy, the objective and the collapse metrics of every head layer.

Owns :func:`evaluate` and its result :class:`NetEvaluation`, the record written to ``metrics.jsonl`` every
``eval_every`` epochs: train/test accuracy, the loss split into fit and regularisation, and per head layer
(``H1``, ``H~l``, ``Hl``) the collapse metrics of :class:`deepcollapse.metrics.streaming.CollapseStatistics`
streamed over the **training set in eval mode** (BatchNorm running statistics, no gradient): DNC1
``tr Σ_W / tr Σ_B``, DNC2 (condition number of the class-mean matrix ``M_l``), numerical rank
(``rank_rtol``), effective rank, singular values and the max-normalised Gram matrix ``M_l^T M_l``; and the
run's outcome so far,
:func:`~deepcollapse.nets.outcome.classify_head` of those class means, the output's and the training accuracy
(``summary.json`` decides it again at the end with the per-epoch losses).  The pass gathers features on the
device and copies each to the host once per evaluation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from deepcollapse._core.results import Result
from deepcollapse.nets.build import channels_last_on
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.data.datasets import DataSplits, ImageData
from deepcollapse.nets.head import HeadNetwork, feature_layers
from deepcollapse.nets.outcome import HeadCriteria, HeadOutcome, classify_head
from deepcollapse.nets.step import feature_penalty, fit_loss, weight_penalty

__all__ = ["NetEvaluation", "bn_scale_norm", "evaluate"]


@dataclass(frozen=True, eq=False)
class NetEvaluation(Result):
    """One evaluation of a network run: returned by :func:`evaluate`; a record of ``metrics.jsonl`` is
    ``{"epoch": ..., <the loop's bookkeeping>, **evaluation.to_dict()}``.

    Attributes
    ----------
    train_acc : float
        Accuracy on the training set (eval mode).
    test_acc : float or None
        Accuracy on the test set (``None`` without one).
    loss : float
        The objective on the training set in eval mode, ``fit + reg``.
    fit : float
        Its mean fit term (MSE or cross-entropy) over the training set.
    reg : float
        ``reg_h1 + reg_w``.
    reg_h1 : float
        The feature term with the mean of ``‖h1‖²`` over the training set (0 unless ``reg == "dufm"``).
    reg_w : float
        The weight term (whatever ``wd_mode``).
    test_fit : float or None
        The mean fit term over the test set (``None`` without one).
    layers : list of dict
        One entry per head feature (``H1``, ``H~l``, ``Hl``): ``{layer, name, kind, key, dnc1, nc1_pinv,
        dnc2_cond, rank, effective_rank, singular_values, gram, negative_fraction, warnings}`` (metrics of
        :class:`deepcollapse.metrics.streaming.CollapseStatistics` over the training set, float64
        accumulation; ``gram``: the max-normalised ``M_l^T M_l`` rounded to 6 digits; ``warnings``: why a
        metric is ``None``).
    bn_scale_norm : float or None
        ``‖γ‖_2`` of every BatchNorm scale of the network together (``None`` without BatchNorm, e.g. the MLP
        backbone): weight decay on all parameters shrinks it, and with it the features' spread.
    head_weight_norms : list of float
        ``‖W_l‖_F`` of each head layer ``l = 1..L``.
    outcome : HeadOutcome
        Where the run is so far (:func:`~deepcollapse.nets.outcome.classify_head` of these class means and
        the training accuracy, rank tolerance ``config.rank_rtol``).
    """

    _nested = {"outcome": HeadOutcome}

    train_acc: float | None = None
    test_acc: float | None = None
    loss: float | None = None
    fit: float | None = None
    reg: float | None = None
    reg_h1: float | None = None
    reg_w: float | None = None
    test_fit: float | None = None
    layers: list[dict[str, Any]] | None = None
    bn_scale_norm: float | None = None
    head_weight_norms: list[float] | None = None
    outcome: HeadOutcome | None = None


def bn_scale_norm(model: torch.nn.Module) -> float | None:
    """``‖γ‖_2`` of all BatchNorm scales of ``model`` together (``None`` when it has none).

    Parameters
    ----------
    model : torch.nn.Module
        The network.

    Returns
    -------
    float or None

    Examples
    --------
    >>> import torch
    >>> bn = torch.nn.BatchNorm1d(4)  # γ = 1: ‖γ‖ = 2
    >>> bn_scale_norm(torch.nn.Sequential(bn, torch.nn.Linear(4, 2))), bn_scale_norm(torch.nn.Linear(4, 2))
    (2.0, None)
    """
    scales = [
        m.weight.detach().double()
        for m in model.modules()
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.weight is not None
    ]
    return float(torch.linalg.vector_norm(torch.cat(scales))) if scales else None


def _finite(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _layer_record(
    stats: Any, key: str, layer: int, kind: str, name: str, rtol: float | None
) -> dict[str, Any]:
    from deepcollapse.metrics import functional as MF

    m = stats.compute(rtol=rtol)
    means = np.asarray(stats.class_means)  # (K, D)
    K = means.shape[0]
    gram = MF.class_mean_gram(means, np.arange(K), K)
    return {
        "layer": layer,
        "name": name,
        "kind": kind,
        "key": key,
        "dnc1": _finite(m.nc1_trace_ratio),
        "nc1_pinv": _finite(m.nc1_pinv),
        "dnc2_cond": _finite(m.nc2_cond),
        "rank": m.rank,
        "effective_rank": _finite(m.effective_rank),
        "singular_values": [float(s) for s in m.singular_values or ()],
        "gram": np.round(gram, 6).tolist(),
        "negative_fraction": _finite(m.negative_fraction),
        "warnings": list(m.warnings or []),  # why a metric is null (from deepcollapse.metrics)
    }


@torch.no_grad()
def _pass(
    config: NetConfig, model: HeadNetwork, data: ImageData, stats: dict[str, Any] | None
) -> dict[str, float]:
    """One no-grad pass in eval mode: accuracy, fit and the H1 term; features streamed into ``stats``.

    Everything stays on the model's device during the pass (sums in float64 device tensors, features gathered
    in device buffers); the host sees one copy per feature at the end, not one per batch.
    """
    n = len(data)
    device = data.labels.device
    correct = torch.zeros((), dtype=torch.int64, device=device)
    fit_sum = torch.zeros((), dtype=torch.float64, device=device)
    h1_sq = torch.zeros((), dtype=torch.float64, device=device)
    gathered: dict[str, list[torch.Tensor]] = {key: [] for key in (stats or {})}
    bs = config.eval_batch_size
    for start in range(0, n, bs):
        x, y = data.batch(slice(start, min(start + bs, n)))  # on the device already
        if x.ndim == 4 and channels_last_on(config, device):
            x = x.contiguous(memory_format=torch.channels_last)
        out, feats = model(x)
        correct += (out.argmax(dim=1) == y).sum()
        fit_sum += fit_loss(config, out, y).double() * y.shape[0]
        h1_sq += feats["H1"].double().pow(2).sum()
        for key, chunks in gathered.items():
            chunks.append(feats[key].detach())
    if stats is not None:
        labels = data.labels.cpu()
        for key, st in stats.items():
            st.update(torch.cat(gathered[key]).cpu(), labels)  # one host copy; accumulated in float64
    m = max(n, 1)
    return {"acc": int(correct) / m, "fit": float(fit_sum) / m, "h1_sq": float(h1_sq) / m}


def evaluate(config: NetConfig, model: HeadNetwork, data: DataSplits) -> NetEvaluation:
    """Evaluation record (the ``metrics.jsonl`` object without the epoch bookkeeping).

    The full objective on the training set in eval mode (``fit`` its mean, ``reg_h1`` with the mean of
    ``‖h1‖²`` over the training set), the test accuracy and fit, the collapse metrics of every head
    feature (:class:`deepcollapse.metrics.streaming.CollapseStatistics`, float64 accumulation) and the
    outcome of these class means (rank tolerance ``config.rank_rtol``).  The model is put back in the mode
    it was in.

    Parameters
    ----------
    config : NetConfig
        The run's config (loss, regularisation, head layers, ``eval_batch_size``, ``rank_rtol``).
    model : HeadNetwork
        The network, on the device of ``data``.
    data : DataSplits
        The training and test sets.

    Returns
    -------
    NetEvaluation
        ``train_acc, test_acc, loss, fit, reg, reg_h1, reg_w, test_fit, layers, outcome``; its ``to_dict()``
        is the dict of earlier releases (key for key, ``outcome`` as a dict).

    Examples
    --------
    >>> from deepcollapse.nets.build import build_network, load_net_data
    >>> from deepcollapse.nets.config import NetConfig
    >>> config = NetConfig(dataset="digits", classes=[0, 1, 2], n=3, n_test=2, batch_size=9, layers=2,
    ...                    width=4, backbone="mlp", backbone_width=8, device="cpu", threads=1)
    >>> data = load_net_data(config)
    >>> model = build_network(config, data.in_channels, tuple(data.train.images.shape[1:]))
    >>> ev = evaluate(config, model, data)
    >>> list(ev)  # doctest: +NORMALIZE_WHITESPACE
    ['train_acc', 'test_acc', 'loss', 'fit', 'reg', 'reg_h1', 'reg_w', 'test_fit', 'layers', 'bn_scale_norm',
     'head_weight_norms', 'outcome']
    >>> [m["name"] for m in ev.layers], ev.loss == ev.fit + ev.reg, ev.outcome.classes
    (['H1', 'H~2', 'H2'], True, 3)
    """
    from deepcollapse.metrics.streaming import CollapseStatistics

    was_training = model.training
    model.eval()
    K = data.num_classes
    layers = feature_layers(config.layers)
    dims = {"H1": model.head.in_dim}
    stats = {key: CollapseStatistics(K, dims.get(key, model.head.width)) for key, *_ in layers}
    tr = _pass(config, model, data.train, stats)
    te = (
        _pass(config, model, data.test, None)
        if len(data.test)
        else {"acc": float("nan"), "fit": float("nan")}
    )
    with torch.no_grad():
        reg_w = weight_penalty(config, model)  # the objective's weight term, whatever wd_mode
    reg_h1 = feature_penalty(config, tr["h1_sq"], len(data.train)) if config.reg == "dufm" else 0.0
    reg = reg_h1 + float(reg_w)
    model.train(was_training)
    W_L = model.head_weights()[-1].detach().double().cpu().numpy()  # (K, d_L)
    outcome = classify_head(
        {name: stats[key].class_means for key, _, _, name in layers},
        outputs=stats[layers[-1][0]].class_means @ W_L.T,  # (K, K): the output's class means W_L M_L
        train_acc=tr["acc"],
        criteria=HeadCriteria(rank_rtol=config.rank_rtol),
    )
    return NetEvaluation(
        train_acc=tr["acc"],
        test_acc=_finite(te["acc"]),
        loss=tr["fit"] + reg,
        fit=tr["fit"],
        reg=reg,
        reg_h1=reg_h1,
        reg_w=float(reg_w),
        test_fit=_finite(te["fit"]),
        layers=[_layer_record(stats[k], k, l, kind, name, config.rank_rtol) for k, l, kind, name in layers],
        bn_scale_norm=bn_scale_norm(model),
        head_weight_norms=[float(W.detach().double().norm()) for W in model.head_weights()],
        outcome=outcome,
    )
