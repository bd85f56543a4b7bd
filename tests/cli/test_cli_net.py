"""`deepcollapse net train|resume`: a tiny digits run end to end; bad options rejected, option named."""

from __future__ import annotations

import json

import pytest
import torch

from deepcollapse.cli import main

torch.set_num_threads(1)

TINY = [
    "net",
    "train",
    "--dataset",
    "digits",
    "--n",
    "8",
    "--n-test",
    "2",
    "--layers",
    "2",
    "--width",
    "10",
    "--reg",
    "dufm",
    "--lam",
    "0.005",
    "--lam-h",
    "5e-6",
    "--lr",
    "0.05",
    "--batch-size",
    "20",
    "--lr-schedule",
    "constant",
    "--device",
    "cpu",
    "--threads",
    "1",
    "--no-progress",
]


def test_train_then_resume(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*TINY, "--epochs", "1", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "layer  rank  effective rank" in text and "\n  H~2 " in text and "train acc" in text
    # the run's outcome (deepcollapse.nets.outcome) is printed and stored
    summary = json.loads((out / "summary.json").read_text())
    assert f"outcome: {summary['outcome']['label']} ({summary['outcome']['why']})" in text
    assert main(["net", "resume", str(out), "--epochs", "2", "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["epochs_done"] == 2 and set(summary["ranks"]) == {"H1", "H~2", "H2"}
    assert "epochs: 2" in (out / "config.yaml").read_text()
    # the same folder again without --force is refused, with --force accepted
    assert main([*TINY, "--epochs", "1", "--out", str(out)]) == 2
    assert "must be a new or empty folder" in capsys.readouterr().err
    assert main([*TINY, "--epochs", "1", "--out", str(out), "--force"]) == 0


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--classes", "0,11"], "classes == [0, 11], has unknown labels [11]"),
        (["--width", "4"], "--width == 4, must be >= the number of classes K = 10"),
        (["--batch-size", "500"], "--batch-size == 500, must be <= the training set size"),
        (["--dataset", "mnist"], "--data-dir == None"),
        (["--dataset", "fashion_mnist"], "--data-dir == None"),
        pytest.param(
            ["--device", "cuda"],
            "--device == 'cuda', must be a CUDA device of this machine (found torch ",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present"),
        ),
        (["--backbone", "mlp", "--feature-dim", "8"], "--feature-dim == 8, must be None with backbone mlp"),
    ],
)
def test_bad_options(tmp_path, capsys, extra, message):
    assert main([*TINY, "--epochs", "1", "--out", str(tmp_path / "r"), *extra]) == 2
    assert message in capsys.readouterr().err


def test_missing_data_dir_message(tmp_path, capsys):
    args = [
        *TINY,
        "--epochs",
        "1",
        "--out",
        str(tmp_path / "r"),
        "--dataset",
        "cifar10",
        "--data-dir",
        str(tmp_path / "empty"),
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "cifar-10-batches-py" in err and "data_batch_1" in err and "download" in err


@pytest.mark.filterwarnings("ignore:.*is deprecated:DeprecationWarning")  # old spellings on purpose
def test_config_file_with_override(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    # the keys before issue 17 (n_per_class, head_layers, head_width): accepted with a warning
    cfg.write_text(
        "dataset: digits\nn_per_class: 8\nhead_layers: 2\nhead_width: 10\nbatch_size: 20\n"
        "epochs: 3\ndevice: cpu\nthreads: 1\n"
    )
    with pytest.warns(DeprecationWarning, match="'head_layers' is deprecated, use 'layers'"):
        code = main(
            [
                "net",
                "train",
                "--config",
                str(cfg),
                "--epochs",
                "1",
                "--width",  # the option wins over the file's old key
                "12",
                "--out",
                str(tmp_path / "r"),
                "--no-progress",
            ]
        )
    assert code == 0
    assert "width: 12" in (tmp_path / "r" / "config.yaml").read_text()
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["epochs_done"] == 1
    cfg.write_text("dataset: digits\nhead_depth: 3\n")
    assert main(["net", "train", "--config", str(cfg), "--out", str(tmp_path / "r2")]) == 2
    assert "unknown key config.head_depth" in capsys.readouterr().err


def test_presets_listing_and_smoke_preset_run(tmp_path, capsys):
    assert main(["net", "presets"]) == 0
    text = capsys.readouterr().out
    assert "net-2024-fig2-bottom" in text and "net-2023-fig1" in text
    out = tmp_path / "p"
    args = ["net", "train", "--preset", "net-2024-fig2-bottom", "--smoke", "--epochs", "1", "--out", str(out)]
    assert main([*args, "--no-progress"]) == 0
    text = (out / "config.yaml").read_text()
    assert "reg: dufm" in text and "layers: 4" in text and "dataset: digits" in text
    assert main(["net", "train", "--smoke", "--out", str(tmp_path / "q")]) == 2
    assert "must come with --preset" in capsys.readouterr().err


# A run folder written before issue 17 renamed the NetConfig fields: its config.yaml has the old keys.
_OLD_KEYS = {
    "n": "n_per_class",
    "n_test": "n_test_per_class",
    "layers": "head_layers",
    "width": "head_width",
    "lr_decay": "gamma",
    "lr_milestones": "milestones",
}


@pytest.mark.filterwarnings("ignore:.*is deprecated:DeprecationWarning")  # old spellings on purpose
def test_resume_of_a_run_folder_with_the_old_config_keys(tmp_path, capsys):
    import yaml

    out = tmp_path / "old"
    argv = [*TINY, "--backbone", "mlp", "--backbone-width", "16", "--epochs", "1", "--out", str(out)]
    assert main(argv) == 0
    new = yaml.safe_load((out / "config.yaml").read_text())
    assert set(_OLD_KEYS) <= set(new) and not set(_OLD_KEYS.values()) & set(new)  # written with the new names
    # rewrite it by hand as the release before wrote it: same values, old keys, in the old order
    old = {_OLD_KEYS.get(k, k): v for k, v in new.items()}
    (out / "config.yaml").write_text(yaml.safe_dump(old, sort_keys=False))
    assert "head_layers: 2" in (out / "config.yaml").read_text()

    from deepcollapse.nets.config import NetConfig

    with pytest.warns(DeprecationWarning, match="'n_per_class' is deprecated, use 'n'"):
        loaded = NetConfig.from_yaml(out / "config.yaml")
    assert (loaded.n, loaded.n_test, loaded.layers, loaded.width) == (8, 2, 2, 10)
    assert loaded.to_dict() == new
    with pytest.warns(DeprecationWarning, match="'gamma' is deprecated, use 'lr_decay'"):
        assert main(["net", "resume", str(out), "--epochs", "2", "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["epochs_done"] == 2
    rewritten = yaml.safe_load((out / "config.yaml").read_text())  # the resumed run's config: new names
    assert rewritten == {**new, "epochs": 2}


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_device_cuda_without_one_is_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "r"
    assert main([*TINY, "--epochs", "1", "--out", str(out), "--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--device == 'cuda', must be a CUDA device of this machine (found " in err
    assert f"torch {torch.__version__}" in err and "use cpu" in err
    assert not out.exists()


def test_net_resume_takes_the_folders_of_a_batched_run(tmp_path, capsys):
    from deepcollapse.nets.batched import train_nets
    from deepcollapse.nets.config import NetConfig

    cfg = dict(dataset="digits", backbone="mlp", backbone_width=16, layers=3, width=12, n=10, n_test=4,
               batch_size=20, epochs=1, device="cpu", threads=1, batch_seeds="on")  # fmt: skip
    outs = [tmp_path / "s0", tmp_path / "s1"]
    train_nets([NetConfig(**cfg, seed=s) for s in (0, 1)], outs, progress=False)
    args = ["net", "resume", *map(str, outs), "--epochs", "2", "--batch-seeds", "2", "--no-progress"]
    assert main(args) == 0
    assert capsys.readouterr().out.count("epochs 2/2") == 2
    assert all("batch_seeds: 2" in (o / "config.yaml").read_text() for o in outs)
    assert main(["net", "resume", str(outs[0]), "--batch-seeds", "two"]) == 2
    assert (
        "--batch-seeds == 'two', must be auto, on, off or a number of seeds >= 1." in capsys.readouterr().err
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_a_net_sweep_on_cuda_without_one_writes_nothing(tmp_path, capsys):
    sweep = tmp_path / "s.yaml"
    sweep.write_text("kind: net\nbase: {dataset: digits, device: cuda, epochs: 1}\nruns: 2\n")
    out = tmp_path / "out"
    assert main(["sweep", str(sweep), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "device == 'cuda', must be a CUDA device of this machine (found torch " in err
    assert not out.exists()


def test_train_prints_numbers_for_people_and_the_theory_levels_of_its_own_dufm(tmp_path, capsys):
    """Issue 32, point 6: no 17-digit numbers on the terminal (summary.json keeps them), and a DUFM-like MSE
    run's loss beside L_DNC / L_SRG of the DUFM with its own K, L, n and λs."""
    import re

    from deepcollapse.theory import compare

    out = tmp_path / "run"
    assert main([*TINY, "--classes", "0,1,2,3,4,5", "--epochs", "1", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    numbers = re.findall(r"\d+\.\d+(?:e-?\d+)?", text)
    assert numbers and all(len(n.split("e")[0].replace(".", "").lstrip("0")) <= 6 for n in numbers), text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_train"] == 6 * 8
    # the DUFM of this run, by hand: K = 6 classes, L = 2 head layers, n = 8, λ_H1 = lam_h / N (batch mean)
    levels = compare(6, 2, 8, 5e-6 / 48, 0.005)
    line = next(line for line in text.splitlines() if line.startswith("DUFM of this run"))
    assert "K = 6, L = 2, n = 8, λ_H1 = 1.0417e-7, λ_W = 0.005" in line
    assert f"L_DNC = {levels.loss_dnc:.6g}" in line
    ratio = next(line for line in text.splitlines() if "× L_DNC" in line)
    assert f"= {summary['loss'] / levels.loss_dnc:.4g} × L_DNC" in ratio
