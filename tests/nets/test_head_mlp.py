"""Bias-free MLP head: features against a numpy computation from the weights; DUFM params loading."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deepcollapse import ConfigError
from deepcollapse.nets.head import HeadNetwork, MLPHead, feature_layers, load_dufm_head_weights
from deepcollapse.nets.resnet import ResNet20

torch.set_num_threads(1)


def test_features_match_hand_computation():
    torch.manual_seed(0)
    head = MLPHead(in_dim=6, width=5, num_layers=4, num_classes=3).double()
    H1 = torch.randn(7, 6, dtype=torch.float64)
    out, feats = head(H1)
    W = [layer.weight.detach().numpy() for layer in head.layers]
    assert [w.shape for w in W] == [(5, 6), (5, 5), (5, 5), (3, 5)]
    assert all(layer.bias is None for layer in head.layers)
    h = H1.numpy().T  # paper convention: columns are samples
    np.testing.assert_array_equal(feats["H1"].numpy(), H1.numpy())
    for l in (2, 3, 4):
        pre = W[l - 2] @ h
        h = np.maximum(pre, 0.0)
        np.testing.assert_allclose(feats[f"pre{l}"].detach().numpy(), pre.T, rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(feats[f"post{l}"].detach().numpy(), h.T, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(out.detach().numpy(), (W[3] @ h).T, rtol=1e-13, atol=1e-14)
    assert list(feats) == [k for k, *_ in feature_layers(4)]


def test_feature_layers_names():
    assert feature_layers(1) == [("H1", 1, "post", "H1")]
    assert feature_layers(3) == [
        ("H1", 1, "post", "H1"),
        ("pre2", 2, "pre", "H~2"),
        ("post2", 2, "post", "H2"),
        ("pre3", 3, "pre", "H~3"),
        ("post3", 3, "post", "H3"),
    ]


def test_network_h1_is_backbone_output():
    torch.manual_seed(1)
    net = HeadNetwork(ResNet20(1), MLPHead(64, 16, 2, 10)).eval()
    x = torch.randn(3, 1, 8, 8)
    out, feats = net(x)
    with torch.no_grad():
        torch.testing.assert_close(feats["H1"], net.backbone(x))
        W1, W2 = (w.detach() for w in net.head_weights())
        torch.testing.assert_close(out, torch.relu(feats["H1"] @ W1.T) @ W2.T)


def test_dufm_params_loading(tmp_path):
    R, d1, width, K = 3, 8, 6, 2
    g = torch.Generator().manual_seed(0)
    weights = [
        torch.randn(R, width, d1, generator=g, dtype=torch.float64),
        torch.randn(R, width, width, generator=g, dtype=torch.float64),
        torch.randn(R, K, width, generator=g, dtype=torch.float64),
    ]
    run = tmp_path / "dufm_run"
    run.mkdir()
    torch.save(
        {"H1": torch.randn(R, d1, 10, dtype=torch.float64), "weights": weights, "config": {}},
        run / "params.pt",
    )
    got = load_dufm_head_weights(run, run=2)
    for W, G in zip(weights, got):
        torch.testing.assert_close(G, W[2].float())
    head = MLPHead(d1, width, 3, K)
    head.set_weights(got)
    torch.testing.assert_close(head.layers[1].weight, weights[1][2].float())
    with pytest.raises(ConfigError, match="head_init_run == 3"):
        load_dufm_head_weights(run / "params.pt", run=3)
    with pytest.raises(ConfigError, match=r"W_1 shape == \(6, 8\), must be \(6, 9\)"):
        MLPHead(9, width, 3, K).set_weights(got)
    with pytest.raises(ConfigError, match="must be a DUFM run folder"):
        load_dufm_head_weights(tmp_path / "nowhere")
    (tmp_path / "bad.pt").write_bytes(b"junk")
    with pytest.raises(ConfigError, match="bad.pt: not a readable PyTorch checkpoint"):
        load_dufm_head_weights(tmp_path / "bad.pt")
