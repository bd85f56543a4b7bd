"""Paper-scale presets read the full datasets from --data-dir and say so; a folder without the files is
refused in one line before anything is written, and the bundled mnist_5k subset is never used in their
place (issue 18, part 5)."""

from __future__ import annotations

import numpy as np
import pytest

from deepcollapse._core.checks import ConfigError
from deepcollapse.cli import main
from deepcollapse.experiments.net_presets import NET_PRESETS, check_preset_data, net_preset
from deepcollapse.experiments.registry import get_experiment
from deepcollapse.nets.data.idx import write_idx

MNIST_PRESETS = [n for n, p in NET_PRESETS.items() if p.config["dataset"] == "mnist"]
#: The IDX file names of MNIST (LeCun et al.), written out here rather than taken from the loader.
IDX_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)


def _assert_one_line_pointing_to_data_dir(message: str) -> None:
    assert "\n" not in message.strip()
    assert "--data-dir" in message and "mnist_5k" in message
    assert all(name in message for name in IDX_FILES)


def test_the_mnist_presets_read_full_mnist_never_the_bundled_subset():
    assert MNIST_PRESETS == ["net-2024-fig4-mnist", "net-2024-fig10"]
    for name in MNIST_PRESETS:
        cfg = net_preset(name)
        assert (cfg.dataset, cfg.data_dir) == ("mnist", "data")
        data = NET_PRESETS[name].data  # what `net presets` and the experiment's description say
        assert "--data-dir" in data and "never the bundled mnist_5k" in data
    assert all(net_preset(n).dataset != "mnist_5k" for n in NET_PRESETS)


@pytest.mark.parametrize("data_dir", [None, "empty"])
def test_missing_mnist_files_are_one_line_naming_them_and_the_flag(tmp_path, data_dir):
    folder = None if data_dir is None else str(tmp_path / data_dir)
    with pytest.raises(ConfigError) as err:
        check_preset_data("net-2024-fig10", "mnist", folder)
    _assert_one_line_pointing_to_data_dir(str(err.value))
    assert "net-2024-fig10" in str(err.value)


def test_a_folder_with_the_idx_files_passes_and_other_datasets_are_not_checked(tmp_path):
    for name in IDX_FILES:  # tiny but valid IDX files (the check only looks for them)
        shape = (2, 28, 28) if "images" in name else (2,)
        write_idx(tmp_path / f"{name}.gz", np.zeros(shape, dtype=np.uint8))
    check_preset_data("net-2024-fig4-mnist", "mnist", str(tmp_path))
    check_preset_data("net-2024-fig4-mnist", "mnist_5k", None)  # an explicit --dataset mnist_5k
    with pytest.raises(ConfigError, match="cifar-10-batches-py"):
        check_preset_data("net-2024-fig2-bottom", "cifar10", str(tmp_path))


def test_net_train_with_a_paper_preset_and_no_data_fails_before_writing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the presets' default data folder, ./data, does not exist here
    out = tmp_path / "run"
    assert main(["net", "train", "--preset", "net-2024-fig4-mnist", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepcollapse: error: ") and err.count("\n") == 1
    _assert_one_line_pointing_to_data_dir(err)
    assert not out.exists()


def test_presets_listing_says_where_the_data_comes_from(capsys):
    assert main(["net", "presets"]) == 0
    text = capsys.readouterr().out
    assert text.count("data: full MNIST") == len(MNIST_PRESETS)
    assert text.count("from --data-dir") == len(NET_PRESETS)


def test_reproduce_takes_the_same_flag_and_checks_before_training(tmp_path):
    out = tmp_path / "exp"
    with pytest.raises(ConfigError) as err:
        get_experiment("net-2024-fig4-mnist").run(out, data_dir=tmp_path / "nothing")
    _assert_one_line_pointing_to_data_dir(str(err.value))
    assert str(tmp_path / "nothing") in str(err.value)
    assert not (out / "net").exists()  # no run folder
