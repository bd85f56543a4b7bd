"""The one validation-message format: field, value, what is allowed."""

import math

import numpy as np
import pytest

from deepcollapse._core.checks import (
    ConfigError,
    check_choice,
    check_finite_array,
    check_float,
    check_int,
    check_keys,
    check_per_layer,
    rank_tolerance,
)


def test_check_int_accepts_and_rejects():
    assert check_int("classes", 10, min=2) == 10
    assert check_int("classes", 3.0, min=2) == 3
    with pytest.raises(ConfigError, match=r"classes == 1, must be >= 2\."):
        check_int("classes", 1, min=2)
    with pytest.raises(ConfigError, match=r"classes == 'x', must be an integer"):
        check_int("classes", "x")
    with pytest.raises(ConfigError, match="must be an integer"):
        check_int("classes", True)


@pytest.mark.parametrize("bad", [0.0, -0.1, math.inf, math.nan])
def test_check_float_positive(bad):
    with pytest.raises(ConfigError, match=r"^lr == "):
        check_float("lr", bad, gt=0)


def test_check_float_bounds_and_type():
    assert check_float("lr", "0.5", gt=0) == 0.5
    with pytest.raises(ConfigError, match="must be a real number"):
        check_float("lr", "abc")
    with pytest.raises(ConfigError, match=r"must be <= 1"):
        check_float("p", 2, le=1)


def test_check_choice_and_keys():
    assert check_choice("dtype", "float32", ["float32", "float64"]) == "float32"
    with pytest.raises(ConfigError, match=r"dtype == 'f16', must be one of 'float32', 'float64'"):
        check_choice("dtype", "f16", ["float32", "float64"])
    with pytest.raises(
        ConfigError, match=r"unknown key config.lrr: did you mean 'lr'\? Must be one of lr, steps"
    ):
        check_keys("config", ["lr", "lrr"], ["steps", "lr"])  # the suggestion first (issue 32)
    with pytest.raises(ConfigError, match=r"unknown key config.zzz, must be one of lr, steps"):
        check_keys("config", ["zzz"], ["steps", "lr"])


def test_check_per_layer_expands_and_validates():
    assert check_per_layer("lam_w", 0.004, 3) == [0.004] * 3
    assert check_per_layer("lam_w", "0.1,0.2,0.3", 3) == [0.1, 0.2, 0.3]
    assert check_per_layer("lam_w", [1, 2], 2) == [1.0, 2.0]
    with pytest.raises(ConfigError, match=r"lam_w has 2 values .* must have 1 or layers = 3"):
        check_per_layer("lam_w", "0.1,0.2", 3)
    with pytest.raises(ConfigError, match=r"lam_w\[1\] == -0.2, must be > 0"):
        check_per_layer("lam_w", "0.1,-0.2", 2)


def test_check_finite_array_counts():
    check_finite_array("features", np.ones((3, 2)))
    a = np.ones((3, 2))
    a[0, 0] = np.nan
    a[2, 1] = np.inf
    with pytest.raises(ConfigError, match="features has 2 non-finite entries"):
        check_finite_array("features", a)


def test_rank_tolerance_is_dtype_aware():
    t64 = rank_tolerance(2.0, (30, 10), np.float64)
    t32 = rank_tolerance(2.0, (30, 10), "torch.float32")
    assert t64 == pytest.approx(30 * np.finfo(np.float64).eps * 2.0)
    assert t32 == pytest.approx(30 * np.finfo(np.float32).eps * 2.0)
    assert rank_tolerance(2.0, (30, 10), rtol=1e-3) == pytest.approx(2e-3)


@pytest.mark.parametrize(
    "dtype, eps",
    [
        (np.float32, np.finfo(np.float32).eps),
        (np.dtype("float32"), np.finfo(np.float32).eps),
        ("float32", np.finfo(np.float32).eps),
        ("torch.float16", np.finfo(np.float16).eps),
        ("torch.bfloat16", 2.0**-7),
        (np.float64, np.finfo(np.float64).eps),
        ("float", np.finfo(np.float64).eps),
    ],
)
def test_rank_tolerance_dtype_spellings(dtype, eps):
    assert rank_tolerance(1.0, (4, 2), dtype) == pytest.approx(4 * eps)


def test_a_missing_cuda_device_is_one_message_for_every_device_option():
    """The DUFM trainer's, the basin atlas's and the network loop's ``device: cuda`` on a machine without
    one: the same line from one function, naming the option, the device and what torch found."""
    import torch

    from deepcollapse._core.devices import check_cuda_device, cuda_found
    from deepcollapse.dufm.config import DUFMConfig
    from deepcollapse.experiments.basin_atlas import BasinAtlas
    from deepcollapse.nets.build import select_device

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    messages = []
    for make in (
        lambda: check_cuda_device("device", "cuda"),
        lambda: select_device("cuda"),
        lambda: DUFMConfig(device="cuda"),
        lambda: BasinAtlas(device="cuda"),
    ):
        with pytest.raises(ConfigError) as err:
            make()
        messages.append(str(err.value))
    assert len(set(messages)) == 1, messages
    assert messages[0] == (
        f"device == 'cuda', must be a CUDA device of this machine (found {cuda_found()}); use cpu (or auto: "
        "cuda where present)."
    )
    assert f"torch {torch.__version__}" in cuda_found()
    check_cuda_device("device", "cpu")  # nothing to check
