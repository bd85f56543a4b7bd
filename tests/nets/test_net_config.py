"""NetConfig: validation messages name the field; YAML round trip; the learning-rate schedule."""

from __future__ import annotations

import math

import pytest

from deepcollapse import ConfigError
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.train import lr_at


def test_yaml_round_trip(tmp_path):
    c = NetConfig(
        dataset="digits",
        classes=[0, 1],
        n=10,
        layers=3,
        width=8,
        lam=0.01,
        lam_h=1e-4,
        lr_schedule="cosine",
        lr_milestones=[0.75, 0.25],
        epochs=7,
        batch_size=4,
    )
    assert c.lr_milestones == [0.25, 0.75]
    c.to_yaml(tmp_path / "c.yaml")
    assert NetConfig.from_yaml(tmp_path / "c.yaml") == c
    assert NetConfig.from_yaml(c.to_yaml()) == c
    assert NetConfig.from_dict(c.to_dict()) == c


@pytest.mark.parametrize(
    "changes,pattern",
    [
        ({"dataset": "imagenet"}, "dataset == 'imagenet', must be one of"),
        ({"dataset": "mnist"}, "data_dir == None"),
        ({"classes": [0, 10]}, r"classes == \[0, 10\], has unknown labels \[10\]"),
        ({"width": 5}, "width == 5, must be >= the number of classes K = 10"),
        ({"layers": 0}, "layers == 0, must be >= 1"),
        ({"n": 3, "batch_size": 50}, "batch_size == 50, must be <= the training set size"),
        ({"batch_size": 1}, "batch_size == 1, must be >= 2"),
        ({"lr": 0}, r"lr == 0.0, must be > 0"),
        ({"lam": -1}, r"lam == -1.0, must be >= 0"),
        ({"reg": "l1"}, "reg == 'l1', must be one of 'dufm', 'standard', 'none'"),
        ({"loss": "hinge"}, "loss == 'hinge'"),
        ({"optimizer": "lbfgs"}, "optimizer == 'lbfgs'"),
        ({"lr_milestones": [1.5]}, r"lr_milestones\[0\] == 1.5, must be < 1"),
        ({"momentum": 1.0}, "momentum == 1.0, must be < 1"),
        ({"device": "tpu"}, "device == 'tpu'"),
        ({"freeze_head": "yes"}, "freeze_head == 'yes', must be true or false"),
        ({"epochs": 0}, "epochs == 0, must be >= 1"),
    ],
)
def test_bad_values_name_the_field(changes, pattern):
    with pytest.raises(ConfigError, match=pattern):
        NetConfig(**changes)


def test_narrow_head_allowed_for_single_layer_and_small_k():
    assert NetConfig(layers=1, width=2).width == 2
    assert NetConfig(classes=[0, 1], width=2).num_classes == 2


def test_unknown_yaml_key():
    with pytest.raises(ConfigError, match="unknown key config.weight_decay"):
        NetConfig.from_dict({"weight_decay": 0.1})


def test_lr_schedules():
    c = NetConfig(lr=0.1, epochs=8, lr_schedule="multistep", lr_milestones=[0.5, 0.75], lr_decay=0.1)
    got = [lr_at(c, e) for e in range(1, 9)]
    expected = [0.1] * 4 + [0.01] * 2 + [0.001] * 2
    assert got == pytest.approx(expected, rel=1e-12)
    c = c.replace(lr_schedule="cosine")
    assert [lr_at(c, e) for e in (1, 5)] == pytest.approx([0.1, 0.1 * 0.5 * (1 + math.cos(math.pi * 4 / 8))])
    assert lr_at(c.replace(lr_schedule="constant"), 8) == 0.1


def test_the_field_names_before_issue_17_still_load_with_a_warning():
    """n_per_class, n_test_per_class, head_layers, head_width, gamma, milestones -> the DUFM/CLI names."""
    old = {
        "n_per_class": 20,
        "n_test_per_class": 5,
        "head_layers": 3,
        "head_width": 12,
        "gamma": 0.5,
        "milestones": [0.6, 0.3],
    }
    with pytest.warns(DeprecationWarning) as record:
        c = NetConfig.from_dict(old)
    assert {str(w.message).split("'")[1] for w in record} == set(old)
    assert c == NetConfig(n=20, n_test=5, layers=3, width=12, lr_decay=0.5, lr_milestones=[0.3, 0.6])
    assert "head_layers" not in c.to_yaml() and "layers: 3" in c.to_yaml()  # written with the new names
    with pytest.warns(DeprecationWarning, match="NetConfig.head_width is deprecated, use NetConfig.width"):
        assert c.head_width == 12
    with pytest.raises(AttributeError):
        c.no_such_field  # noqa: B018
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigError, match="both head_layers and layers"):
        NetConfig.from_dict({"head_layers": 3, "layers": 3})
