"""A small fully connected backbone ``B(x)`` for the CPU-sized real-data experiments (8×8 digits, MNIST-1D).

    B(x) = ReLU(A_D ... ReLU(A_2 ReLU(A_1 vec(x) + b_1) + b_2) ... + b_D),
    A_1 ∈ R^{w×(C·H·W)},  A_j ∈ R^{w×w} (j ≥ 2)

``D = depth`` affine layers of width ``w = width`` with biases, each followed by ReLU, so the features ``H1 =
B(X)`` are non-negative like ResNet20's pooled post-ReLU features.  The backbone is the "feature extractor" of
the DUFM picture: its output is what the DUFM-like regularisation penalises (``λ_H1``), and the bias-free MLP
head (:mod:`deepcollapse.nets.head`) sits on top.  No BatchNorm (so evaluation is the training map exactly).
Initialisation: PyTorch's default for ``nn.Linear``; ``torch.manual_seed`` is set by the caller.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from deepcollapse._core.checks import ConfigError, check_int

__all__ = ["MLPBackbone"]


class MLPBackbone(nn.Module):
    """Flatten, then ``depth`` × (affine + ReLU) of width ``width``: ``(B, C, H, W) -> (B, width)``."""

    def __init__(self, in_shape: tuple[int, ...], width: int = 256, depth: int = 2) -> None:
        super().__init__()
        self.in_shape = tuple(int(s) for s in in_shape)
        in_features = 1
        for s in self.in_shape:
            in_features *= s
        width = check_int("backbone_width", width, min=1)
        depth = check_int("backbone_depth", depth, min=1)
        dims = [in_features] + [width] * depth
        self.layers = nn.ModuleList(nn.Linear(dims[i], dims[i + 1]) for i in range(depth))
        self.out_features = width

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The features ``H1 = B(x)``.

        Parameters
        ----------
        x : torch.Tensor
            A batch ``(B, *in_shape)``.

        Returns
        -------
        torch.Tensor
            ``(B, width)``, non-negative.

        Examples
        --------
        >>> import torch
        >>> backbone = MLPBackbone((1, 8, 8), width=16, depth=2)
        >>> h1 = backbone(torch.randn(5, 1, 8, 8))
        >>> tuple(h1.shape), bool((h1 >= 0).all())
        ((5, 16), True)
        """
        if tuple(x.shape[1:]) != self.in_shape:
            raise ConfigError(
                f"input shape == {tuple(x.shape)}, must be (batch, {', '.join(map(str, self.in_shape))})."
            )
        h = x.flatten(1)  # (B, C·H·W)
        for layer in self.layers:
            h = F.relu(layer(h))  # (B, width)
        return h
