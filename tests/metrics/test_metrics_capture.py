"""Layer capture on small networks equals metrics on features extracted by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from deepcollapse._core.checks import ConfigError
from deepcollapse.metrics.capture import default_layers, layer_metrics
from deepcollapse.metrics.functional import collapse_metrics

torch.set_num_threads(1)

KEYS = ("nc1_trace_ratio", "nc1_pinv", "cdnv", "nc2_orth_error", "nc2_etf_error", "effective_rank")


def make_data(seed=0, N=120, d_in=5, K=3):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(N) % K
    centres = 2.0 * torch.randn(K, d_in, generator=g, dtype=torch.float64)
    x = centres[y] + torch.randn(N, d_in, generator=g, dtype=torch.float64)
    return x, y


def make_mlp(seed=0, inplace=False):
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(5, 16),
        nn.ReLU(inplace=inplace),
        nn.Linear(16, 8),
        nn.ReLU(inplace=inplace),
        nn.Linear(8, 3),
    ).double()


def by_hand(model, x):
    """Per-layer features computed explicitly from the weights (no hooks)."""
    W1, b1 = model[0].weight, model[0].bias
    W2, b2 = model[2].weight, model[2].bias
    W3, b3 = model[4].weight, model[4].bias
    with torch.no_grad():
        z1 = x @ W1.T + b1
        a1 = torch.clamp(z1, min=0)
        z2 = a1 @ W2.T + b2
        a2 = torch.clamp(z2, min=0)
        z3 = a2 @ W3.T + b3
    return {"0": z1, "1": a1, "2": z2, "3": a2, "4": z3}


@pytest.mark.parametrize("inplace", [False, True])
def test_mlp_layers_match_features_extracted_by_hand(inplace):
    x, y = make_data()
    model = make_mlp(inplace=inplace)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=False)
    W3 = model[4].weight.detach()
    df = layer_metrics(model, ["0", "1", "2", "3", "4"], loader, num_classes=3, weights={"3": W3})
    assert isinstance(df, pd.DataFrame)
    assert df["layer"].tolist() == ["0", "1", "2", "3", "4"]
    assert df["kind"].tolist() == ["pre", "post", "pre", "post", "pre"]
    feats = by_hand(model, x)
    for _, row in df.iterrows():
        ref = collapse_metrics(feats[row["layer"]], y, W3 if row["layer"] == "3" else None)
        for key in KEYS:
            assert row[key] == pytest.approx(ref[key], rel=1e-10), (row["layer"], key)
        assert row["rank"] == ref["rank"]
        assert row["dim"] == feats[row["layer"]].shape[1]
        assert row["ncc_accuracy"] == ref["ncc_accuracy"]
        assert row["negative_fraction"] == pytest.approx(ref["negative_fraction"])
        np.testing.assert_allclose(row["singular_values"], ref["singular_values"], rtol=1e-10, atol=1e-13)
    # post-ReLU layers have no negative entries; pre-activations do
    assert df.loc[df.kind == "post", "negative_fraction"].eq(0).all()
    assert df.loc[df.layer == "0", "negative_fraction"].item() > 0
    # classifier given for layer "3": NC4 agreement with the bias-free W3 and NC3 measures filled in
    row3 = df[df.layer == "3"].iloc[0]
    ref3 = collapse_metrics(feats["3"], y, W3)
    assert row3["nc4_agreement"] == ref3["nc4_agreement"]
    assert row3["self_duality"] == pytest.approx(ref3["self_duality"], rel=1e-10)


def test_modes_restored_hooks_removed_and_no_grad():
    x, y = make_data(1)
    model = make_mlp(1)
    model.train()
    model[2].eval()  # mixed modes must be restored exactly
    loader = [(x[:60], y[:60]), (x[60:], y[60:])]
    seen = {}

    def spy(module, inputs, output):
        seen["training"] = module.training
        seen["grad"] = torch.is_grad_enabled()

    model[0].register_forward_hook(spy)
    layer_metrics(model, None, loader)
    assert seen == {"training": False, "grad": False}
    assert model.training and model[0].training and not model[2].training
    assert all(len(m._forward_hooks) == (1 if m is model[0] else 0) for m in model.modules())
    assert torch.is_grad_enabled()


def test_default_layers_and_kinds_and_inferred_num_classes():
    x, y = make_data(2)
    model = make_mlp(2)
    assert default_layers(model) == {"0": "pre", "1": "post", "2": "pre", "3": "post", "4": "pre"}
    loader = [(x, y)]
    df = layer_metrics(model, {"2": "other", "3": "post"}, loader, ncc=False)
    assert df["kind"].tolist() == ["other", "post"]
    assert df["num_classes"].tolist() == [3, 3]
    assert df["ncc_accuracy"].isna().all()


def test_conv_features_are_flattened():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3)).double()
    g = torch.Generator().manual_seed(3)
    x = torch.randn(40, 1, 6, 6, generator=g, dtype=torch.float64)
    y = torch.arange(40) % 4
    df = layer_metrics(model, ["0", "1"], [(x[:25], y[:25]), (x[25:], y[25:])])
    with torch.no_grad():
        h = model[0](x).reshape(40, -1)
    ref = collapse_metrics(h, y)
    row = df.iloc[0]
    assert row["dim"] == 32
    assert row["nc1_trace_ratio"] == pytest.approx(ref["nc1_trace_ratio"], rel=1e-10)


def test_bad_arguments():
    x, y = make_data(3)
    model = make_mlp(3)
    with pytest.raises(ConfigError, match=r"layers contains 'fc9', must be a module name"):
        layer_metrics(model, ["fc9"], [(x, y)])
    with pytest.raises(ConfigError, match=r"layers\['0'\] == 'mid', must be one of"):
        layer_metrics(model, {"0": "mid"}, [(x, y)])
    with pytest.raises(ConfigError, match=r"weights has key '2'"):
        layer_metrics(model, ["0"], [(x, y)], weights={"2": torch.zeros(3, 8)})
    with pytest.raises(ConfigError, match=r"no sample of class\(es\) \[3\]"):
        layer_metrics(model, ["0"], [(x, y)], num_classes=4)
    df = layer_metrics(model, ["0"], [(x, y)], num_classes=4, drop_empty=True)
    assert df["classes"].iloc[0] == [0, 1, 2]
