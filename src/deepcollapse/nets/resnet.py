"""ResNet20 in its CIFAR form, used as the backbone ``B(x)`` of the end-to-end experiments.

Architecture (He et al. 2016, §4.2, the 6n+2 family with n = 3):

- stem: 3×3 convolution to 16 channels, BatchNorm, ReLU;
- three stages of 3 basic blocks each, with 16, 32, 64 channels; the first block of stages 2 and 3 has
  stride 2; a basic block is conv3×3-BN-ReLU-conv3×3-BN plus the shortcut, then ReLU; where the shape
  changes the shortcut is a 1×1 convolution with stride 2 followed by BatchNorm ("option B");
- adaptive average pooling to 1×1 and flattening: the output ``H1`` has 64 non-negative entries per sample
  (the average of post-ReLU activations).

Any input with 1 or 3 channels (any number ``in_channels >= 1`` actually) and spatial size at least 8×8 is
accepted: 28×28 MNIST, 32×32 CIFAR-10 and the 8×8 scikit-learn digits all work (the last stage then sees 2×2).

``depth`` picks the member of the 6n+2 family: 20 (default, n = 3 blocks per stage) or 8 (``resnet8``: one
block per stage, the same stem, widths, shortcuts and pooling, about a third of ResNet20's convolution FLOPs;
the CPU-sized backbone of the ``real-mnist5k-*`` experiments).

Optional projection: with ``out_dim`` set, a bias-free linear map ``P ∈ R^{out_dim×64}`` is appended, so the
features ``H1 = P · pool(...)`` may have any width and sign.  It belongs to the backbone (it is not
regularised by the DUFM-like scheme, which only penalises ``H1`` itself and the head).

Initialisation: He (Kaiming) normal, fan-out, for convolutions; BatchNorm weight 1, bias 0; the projection
uses PyTorch's default linear initialisation.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from deepcollapse._core.checks import ConfigError, check_int

__all__ = ["BasicBlock", "ResNet20", "MIN_INPUT_SIZE"]

MIN_INPUT_SIZE = 8


class BasicBlock(nn.Module):
    """conv3×3-BN-ReLU-conv3×3-BN + shortcut, then ReLU (He et al. 2016, Fig. 2 left)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut: nn.Module
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )
        else:
            self.shortcut = nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block applied to ``x``.

        Parameters
        ----------
        x : torch.Tensor
            ``(B, in_channels, H, W)``.

        Returns
        -------
        torch.Tensor
            ``(B, out_channels, ceil(H / stride), ceil(W / stride))``, non-negative.

        Examples
        --------
        >>> import torch
        >>> block = BasicBlock(4, 8, stride=2)
        >>> tuple(block(torch.randn(2, 4, 5, 5)).shape)
        (2, 8, 3, 3)
        """
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet20(nn.Module):
    """ResNet20 (CIFAR form) mapping images ``(B, C, H, W)`` to features ``H1`` ``(B, out_features)``.

    Parameters
    ----------
    in_channels:
        1 (MNIST, digits) or 3 (CIFAR-10); any positive number is accepted.
    out_dim:
        ``None`` (default): the 64 pooled channels are the features.  An integer: append a bias-free linear
        projection ``64 -> out_dim`` (see the module docstring).
    depth:
        ``6n + 2`` layers, ``n`` basic blocks per stage: 20 (ResNet20) or 8 (ResNet8); any ``6n + 2 >= 8``.
    """

    def __init__(self, in_channels: int = 3, out_dim: int | None = None, depth: int = 20) -> None:
        super().__init__()
        in_channels = check_int("in_channels", in_channels, min=1)
        depth = check_int("depth", depth, min=8)
        if (depth - 2) % 6:
            raise ConfigError(f"depth == {depth}, must be 6n + 2 (8, 14, 20, ...).")
        self.in_channels = in_channels
        self.conv = nn.Conv2d(in_channels, 16, 3, stride=1, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        blocks: list[nn.Module] = []
        channels = 16
        for stage, width in enumerate((16, 32, 64)):
            for b in range((depth - 2) // 6):
                stride = 2 if (stage > 0 and b == 0) else 1
                blocks.append(BasicBlock(channels, width, stride))
                channels = width
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.projection: nn.Linear | None = None
        if out_dim is not None:
            out_dim = check_int("feature_dim", out_dim, min=1)
            self.projection = nn.Linear(64, out_dim, bias=False)
        self.out_features = out_dim if out_dim is not None else 64
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The features ``H1`` of a batch of images.

        Parameters
        ----------
        x : torch.Tensor
            ``(B, in_channels, H, W)`` with ``H, W >= MIN_INPUT_SIZE``.

        Returns
        -------
        torch.Tensor
            ``(B, out_features)`` (non-negative without a projection).

        Examples
        --------
        >>> import torch
        >>> net = ResNet20(in_channels=1, out_dim=10, depth=8)
        >>> tuple(net(torch.randn(2, 1, 8, 8)).shape), ResNet20(depth=8).out_features
        ((2, 10), 64)
        """
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise ConfigError(
                f"input shape == {tuple(x.shape)}, must be (batch, {self.in_channels}, height, width)."
            )
        if min(x.shape[2], x.shape[3]) < MIN_INPUT_SIZE:
            raise ConfigError(
                f"input size == {x.shape[2]}x{x.shape[3]}, "
                f"must be at least {MIN_INPUT_SIZE}x{MIN_INPUT_SIZE}."
            )
        out = F.relu(self.bn(self.conv(x)))  # (B, 16, H, W)
        out = self.blocks(out)  # (B, 64, ceil(H/4), ceil(W/4))
        out = self.pool(out).flatten(1)  # (B, 64)
        if self.projection is not None:
            out = self.projection(out)  # (B, out_dim)
        return out
