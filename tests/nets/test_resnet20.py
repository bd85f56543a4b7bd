"""ResNet20 (CIFAR form): shapes for 1/3-channel inputs of several sizes; parameter count by hand."""

from __future__ import annotations

import pytest
import torch

from deepcollapse import ConfigError
from deepcollapse.nets.resnet import ResNet20

torch.set_num_threads(1)


def _expected_params(in_channels: int) -> int:
    """ResNet20 (He et al. 2016 §4.2) with 1×1-conv shortcuts counted by hand: 3×3 convs, no bias, BN 2/ch."""
    conv = lambda cin, cout, k=3: cin * cout * k * k
    bn = lambda c: 2 * c
    total = conv(in_channels, 16) + bn(16)
    cin = 16
    for width in (16, 32, 64):
        for _ in range(3):
            total += conv(cin, width) + bn(width) + conv(width, width) + bn(width)
            if cin != width:
                total += conv(cin, width, 1) + bn(width)
            cin = width
    return total


@pytest.mark.parametrize("channels,size", [(1, 8), (1, 28), (3, 32), (3, 9)])
def test_shapes(channels, size):
    net = ResNet20(channels)
    out = net(torch.randn(2, channels, size, size))
    assert out.shape == (2, 64)
    assert (out >= 0).all()  # average of post-ReLU maps
    assert sum(p.numel() for p in net.parameters()) == _expected_params(channels)


def test_stage_layout():
    net = ResNet20(3)
    convs = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d) and m.kernel_size == (3, 3)]
    assert len(convs) == 19  # 1 stem + 9 blocks × 2; with the linear head this is the "20" of ResNet20
    assert [c.out_channels for c in convs] == [16] + [16] * 6 + [32] * 6 + [64] * 6
    strides = [c.stride[0] for c in convs]
    assert strides.count(2) == 2


def test_projection_width_and_sign():
    net = ResNet20(1, out_dim=30)
    assert net.out_features == 30
    out = net(torch.randn(4, 1, 8, 8))
    assert out.shape == (4, 30)


def test_bad_inputs():
    net = ResNet20(3)
    with pytest.raises(ConfigError, match="at least 8x8"):
        net(torch.randn(1, 3, 7, 7))
    with pytest.raises(ConfigError, match=r"input shape == \(1, 1, 8, 8\)"):
        net(torch.randn(1, 1, 8, 8))
    with pytest.raises(ConfigError, match="in_channels == 0"):
        ResNet20(0)


def test_resnet8_is_the_one_block_per_stage_member_of_the_family():
    from deepcollapse.nets.resnet import BasicBlock

    net8, net20 = ResNet20(1, depth=8), ResNet20(1)
    blocks = [sum(isinstance(m, BasicBlock) for m in n.modules()) for n in (net8, net20)]
    assert blocks == [3, 9]  # (depth - 2) / 6 blocks in each of the 3 stages
    convs = sum(isinstance(m, torch.nn.Conv2d) for m in net8.modules())
    assert convs == 1 + 3 * 2 + 2  # stem, two per block, two 1x1 shortcuts (not counted in the 6n + 2)
    assert net8(torch.zeros(2, 1, 28, 28)).shape == (2, 64)
    with pytest.raises(ConfigError, match="depth == 9, must be 6n \\+ 2"):
        ResNet20(1, depth=9)
