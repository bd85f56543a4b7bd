"""Bias-free MLP head and the backbone + head network used in the end-to-end experiments.

Notation (2024 paper §3, formulas.md): the backbone's output is ``H1 = B(X)`` ("unconstrained features"), the
head has ``L`` bias-free weight matrices ``W_1 ∈ R^{d_2×d_1}, ..., W_L ∈ R^{K×d_L}`` and computes

    H~_{l+1} = W_l H_l,   H_{l+1} = ReLU(H~_{l+1})   for l = 1..L-1,      output = W_L H_L.

``L = 1`` is a single linear classifier (the classical UFM head).  All hidden widths equal ``width`` (the
paper's setting), so ``d_2 = ... = d_L = width`` and ``d_1`` is the backbone's feature width.

Features are returned with the output by ``forward`` (no hooks).  Rows are samples (``(B, d)``), the
transpose of the paper's column convention.  The feature dictionary has, in this order::

    "H1"                      the backbone output                           layer 1, kind "post"
    "pre2",  "post2"          H~_2 = W_1 H_1 and H_2 = ReLU(H~_2)           layer 2
    ...
    "preL",  "postL"          H~_L and H_L                                  layer L

(the backbone output counts as "post": ResNet20's pooled features are averages of post-ReLU activations).  Use
:func:`feature_layers` for the ``(key, layer, kind, name)`` list, where ``name`` is the paper's symbol
(``"H1"``, ``"H~2"``, ``"H2"``, ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import torch
from torch import nn
from torch.nn import functional as F

from deepcollapse._core.checks import ConfigError, check_int
from deepcollapse._core.io import load_checkpoint

__all__ = ["MLPHead", "HeadNetwork", "feature_layers", "load_dufm_head_weights"]


def feature_layers(head_layers: int) -> list[tuple[str, int, str, str]]:
    """The features a head of ``head_layers`` weight matrices exposes: ``(key, layer, kind, paper_name)``.

    Parameters
    ----------
    head_layers : int
        ``L``, the head's number of weight matrices.

    Returns
    -------
    list of tuple of (str, int, str, str)
        ``(key, layer, kind, name)`` per feature, in the order of the module docstring.

    Examples
    --------
    >>> feature_layers(2)
    [('H1', 1, 'post', 'H1'), ('pre2', 2, 'pre', 'H~2'), ('post2', 2, 'post', 'H2')]
    """
    out = [("H1", 1, "post", "H1")]
    for l in range(2, head_layers + 1):
        out.append((f"pre{l}", l, "pre", f"H~{l}"))
        out.append((f"post{l}", l, "post", f"H{l}"))
    return out


class MLPHead(nn.Module):
    """``L`` bias-free linear layers with ReLU between them: ``in_dim -> width -> ... -> width -> K``.

    ``layers[l-1]`` is ``W_l`` (``nn.Linear`` stores ``(out, in)``, i.e. exactly the paper's ``W_l``).
    Initialisation: PyTorch's default for ``nn.Linear`` (Kaiming-uniform, ``a = sqrt(5)``).
    """

    def __init__(self, in_dim: int, width: int, num_layers: int, num_classes: int) -> None:
        super().__init__()
        in_dim = check_int("in_dim", in_dim, min=1)
        width = check_int("head_width", width, min=1)
        num_layers = check_int("head_layers", num_layers, min=1)
        num_classes = check_int("num_classes", num_classes, min=2)
        dims = [in_dim] + [width] * (num_layers - 1) + [num_classes]
        self.in_dim, self.width, self.num_layers, self.num_classes = in_dim, width, num_layers, num_classes
        self.layers = nn.ModuleList(nn.Linear(dims[i], dims[i + 1], bias=False) for i in range(num_layers))

    def linears(self) -> list[nn.Linear]:
        """The layers ``W_1 .. W_L`` as ``nn.Linear`` modules.

        Returns
        -------
        list of torch.nn.Linear
            ``L`` bias-free layers.

        Examples
        --------
        >>> import torch
        >>> head = MLPHead(in_dim=3, width=4, num_layers=2, num_classes=2)
        >>> [tuple(m.weight.shape) for m in head.linears()]
        [(4, 3), (2, 4)]
        """
        return [cast(nn.Linear, m) for m in self.layers]

    def forward(self, h1: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Return ``(output (B, K), features)`` with the feature keys of the module docstring.

        Parameters
        ----------
        h1 : torch.Tensor, (B, in_dim)
            The backbone's features ``H1`` (rows are samples).

        Returns
        -------
        tuple of (torch.Tensor, dict of str to torch.Tensor)
            The output ``(B, K)`` and the features ``H1``, ``pre2``, ``post2``, ...

        Examples
        --------
        >>> import torch
        >>> head = MLPHead(in_dim=3, width=4, num_layers=2, num_classes=2)
        >>> out, feats = head(torch.ones(5, 3))
        >>> tuple(out.shape), list(feats), bool((feats["post2"] >= 0).all())
        ((5, 2), ['H1', 'pre2', 'post2'], True)
        """
        feats: dict[str, torch.Tensor] = {"H1": h1}
        h = h1  # (B, d1)
        for l, layer in enumerate(self.layers[:-1], start=2):
            pre = layer(h)  # (B, width) = H~_l^T
            h = F.relu(pre)  # (B, width) = H_l^T
            feats[f"pre{l}"] = pre
            feats[f"post{l}"] = h
        return self.layers[-1](h), feats  # (B, K)

    @torch.no_grad()
    def set_weights(self, weights: list[torch.Tensor]) -> None:
        """Copy ``[W_1, ..., W_L]`` (paper shapes ``(d_{l+1}, d_l)``) into the layers; shapes must match.

        Parameters
        ----------
        weights : list of torch.Tensor
            One matrix per layer (cast to the layers' dtype).

        Returns
        -------
        None
            The layers' weights are overwritten (no gradient recorded).

        Examples
        --------
        >>> import torch
        >>> head = MLPHead(in_dim=3, width=4, num_layers=2, num_classes=2)
        >>> head.set_weights([torch.zeros(4, 3), torch.ones(2, 4)])
        >>> head.linears()[1].weight.sum().item()
        8.0
        """
        if len(weights) != self.num_layers:
            raise ConfigError(
                f"head_layers == {self.num_layers}, must equal the {len(weights)} given weights."
            )
        for l, (layer, W) in enumerate(zip(self.linears(), weights), start=1):
            if tuple(W.shape) != tuple(layer.weight.shape):
                raise ConfigError(
                    f"W_{l} shape == {tuple(W.shape)}, must be {tuple(layer.weight.shape)} for this head "
                    f"(in_dim {self.in_dim}, head_width {self.width}, {self.num_classes} classes)."
                )
            layer.weight.copy_(W.to(layer.weight.dtype))


class HeadNetwork(nn.Module):
    """``f(x) = W_L σ(... W_1 B(x))``: a backbone followed by an :class:`MLPHead`.

    ``forward(x)`` returns ``(output (B, K), features)``; see the module docstring for the feature keys.
    """

    def __init__(self, backbone: nn.Module, head: MLPHead) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = head

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The backbone, then the head: ``(output (B, K), features)``.

        Parameters
        ----------
        x : torch.Tensor
            A batch of images ``(B, C, H, W)``.

        Returns
        -------
        tuple of (torch.Tensor, dict of str to torch.Tensor)
            The output ``(B, K)`` and the features (keys as in the module docstring).

        Examples
        --------
        >>> import torch
        >>> from deepcollapse.nets.mlp_backbone import MLPBackbone
        >>> net = HeadNetwork(MLPBackbone((1, 2, 2), width=3, depth=1), MLPHead(3, 4, 2, 2))
        >>> out, feats = net(torch.ones(5, 1, 2, 2))
        >>> tuple(out.shape), {k: tuple(v.shape) for k, v in feats.items()}
        ((5, 2), {'H1': (5, 3), 'pre2': (5, 4), 'post2': (5, 4)})
        """
        h1 = self.backbone(x)  # (B, d1)
        if h1.shape[1] != self.head.in_dim:
            raise ConfigError(
                f"backbone feature width == {h1.shape[1]}, must equal head in_dim {self.head.in_dim}."
            )
        return self.head(h1)

    def head_weights(self) -> list[torch.Tensor]:
        """``[W_1, ..., W_L]`` (views of the parameters).

        Returns
        -------
        list of torch.Tensor
            The head's weight parameters, ``W_l`` of shape ``(d_{l+1}, d_l)``.

        Examples
        --------
        >>> import torch
        >>> from deepcollapse.nets.mlp_backbone import MLPBackbone
        >>> net = HeadNetwork(MLPBackbone((1, 2, 2), width=3, depth=1), MLPHead(3, 4, 2, 2))
        >>> [tuple(W.shape) for W in net.head_weights()]
        [(4, 3), (2, 4)]
        """
        return [layer.weight for layer in self.head.linears()]


def load_dufm_head_weights(path: str | Path, run: int = 0) -> list[torch.Tensor]:
    """Read ``[W_1, ..., W_L]`` of run ``run`` from a DUFM run folder (or its ``params.pt``).

    ``params.pt`` holds ``{"H1": (R, d1, N), "weights": [(R, d_{l+1}, d_l), ...], "config": dict}`` (the DUFM
    trainer's contract, docs/architecture.md); a single unbatched ``(d_{l+1}, d_l)`` matrix per layer is
    accepted too.  Returned tensors are float32 copies on the CPU.

    Parameters
    ----------
    path : str or Path
        A DUFM run folder or its ``params.pt``.
    run : int, default 0
        Which of the ``R`` batched runs.

    Returns
    -------
    list of torch.Tensor
        ``W_1 .. W_L``, float32 on the CPU.

    Examples
    --------
    >>> import tempfile, torch
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> torch.save({"weights": [torch.ones(2, 4, 3), torch.ones(2, 3, 4)]}, folder / "params.pt")
    >>> [tuple(W.shape) for W in load_dufm_head_weights(folder, run=1)]
    [(4, 3), (3, 4)]
    """
    p = Path(path)
    if p.is_dir():
        p = p / "params.pt"
    if not p.is_file():
        raise ConfigError(
            f"head_init == {str(path)!r}, must be a DUFM run folder containing params.pt (or the file)."
        )
    hint = "head_init must name a finished DUFM run folder or its params.pt"
    blob = load_checkpoint(p, keys=("weights",), hint=hint)
    out: list[torch.Tensor] = []
    for l, W in enumerate(blob["weights"], start=1):
        W = torch.as_tensor(W)
        if W.ndim == 3:
            if not 0 <= run < W.shape[0]:
                raise ConfigError(f"head_init_run == {run}, must be in [0, {W.shape[0] - 1}] for {str(p)!r}.")
            W = W[run]
        if W.ndim != 2:
            raise ConfigError(f"W_{l} in {str(p)!r} has shape {tuple(W.shape)}, must be (R, d_out, d_in).")
        out.append(W.detach().to(torch.float32).clone())
    if not out:
        raise ConfigError(f"head_init == {str(p)!r}, must hold at least one weight matrix.")
    return out
