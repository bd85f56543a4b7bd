"""Checkpoints and solution files carry a checksum (issue 32, point 5).

Overwriting 14 bytes inside ``checkpoint.pt`` used to resume silently from garbage (a run reported
``diverged``).  Now the damage is one line naming the file, the previous checkpoint (``checkpoint.prev.pt``,
rotated atomically at every write) is where the run resumes, and the resumed run ends exactly where an
uninterrupted one does.  Files written before checksums existed still load.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch

from deepcollapse import ConfigError
from deepcollapse._core.io import atomic_torch_save, load_checkpoint, previous_path
from deepcollapse.cli import main
from deepcollapse.dufm import DUFMConfig, resume_dufm, train_dufm

torch.set_num_threads(1)

CONFIG = dict(classes=3, n=4, layers=2, width=6, lam_h=0.01, lam_w=0.01, lr=0.3, runs=2, polish=False)


@pytest.fixture(autouse=True)
def _numpy_kernel(monkeypatch):
    monkeypatch.setenv("DEEPCOLLAPSE_KERNEL", "numpy")  # tens of steps: not worth numba's compile


def _damage_inside_a_tensor(path: Path, tensor: torch.Tensor) -> int:
    """Overwrite 14 bytes in the middle of ``tensor``'s bytes inside the file ``path``; return the offset."""
    raw = bytearray(path.read_bytes())
    data = tensor.contiguous().numpy().tobytes()
    at = raw.find(data)
    assert at >= 0 and len(data) >= 28, "the tensor's bytes are stored as they are in torch's zip format"
    at += len(data) // 2 - 7
    raw[at : at + 14] = b"\xff" * 14
    path.write_bytes(bytes(raw))
    return at


def _params(folder: Path) -> list[torch.Tensor]:
    d = torch.load(folder / "params.pt", weights_only=True)
    return [d["H1"], *d["weights"]]


def test_a_damaged_checkpoint_resumes_from_the_previous_one_and_ends_as_an_uninterrupted_run(
    tmp_path, caplog
):
    config = DUFMConfig(**CONFIG, steps=60, checkpoint_every=20, log_every=20)
    train_dufm(config, tmp_path / "full", progress=False)
    cut = tmp_path / "cut"
    train_dufm(config, cut, progress=False, max_steps=40)  # checkpoints at 20 and 40
    ck = cut / "checkpoint.pt"
    assert torch.load(previous_path(ck), weights_only=True)["step"] == 20
    _damage_inside_a_tensor(ck, torch.load(ck, weights_only=True)["params"][0])
    with pytest.raises(ConfigError, match=r"checkpoint.pt: damaged: its content does not match the checksum"):
        load_checkpoint(ck)
    with caplog.at_level(logging.WARNING, logger="deepcollapse"):
        summary = resume_dufm(cut, progress=False)
    said = [r.getMessage() for r in caplog.records if "checkpoint" in r.getMessage()]
    assert len(said) == 1 and "\n" not in said[0]
    assert f"{ck}: damaged" in said[0] and "checkpoint.prev.pt (step 20)" in said[0]
    assert (cut / "checkpoint.damaged.pt").is_file()  # kept for inspection, never loaded again
    assert [r.classification != "diverged" for r in summary.runs] == [True, True]
    for a, b in zip(_params(tmp_path / "full"), _params(cut)):
        assert torch.equal(a, b)
    steps = [json.loads(line)["step"] for line in (cut / "metrics.jsonl").read_text().splitlines()]
    assert steps == [s for s in (0, 20, 40, 60) for _ in range(2)]  # the log was cut back to step 20


def test_the_command_line_warns_in_one_line_and_resumes(tmp_path, capsys, caplog):
    args = ["--classes", "3", "--n", "4", "--layers", "2", "--width", "6", "--runs", "2", "--no-polish"]
    args += ["--steps", "40", "--checkpoint-every", "20", "--log-every", "20", "--no-progress"]
    assert main(["dufm", "train", *args, "--max-steps", "40", "--out", str(tmp_path / "r")]) == 0
    ck = tmp_path / "r" / "checkpoint.pt"
    _damage_inside_a_tensor(ck, torch.load(ck, weights_only=True)["params"][1])
    with caplog.at_level(logging.WARNING):
        assert main(["dufm", "resume", str(tmp_path / "r"), "--no-progress"]) == 0
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1 and "\n" not in said[0] and "resuming from the previous checkpoint" in said[0]
    assert "(step 20)" in said[0] and "L_DNC" in capsys.readouterr().out


def test_without_a_good_previous_checkpoint_the_damage_is_one_error_line(tmp_path, capsys):
    config = DUFMConfig(**CONFIG, steps=20, checkpoint_every=20)
    train_dufm(config, tmp_path / "r", progress=False, max_steps=20)  # one checkpoint: no previous
    ck = tmp_path / "r" / "checkpoint.pt"
    assert not previous_path(ck).exists()
    _damage_inside_a_tensor(ck, torch.load(ck, weights_only=True)["params"][0])
    before = ck.read_bytes()
    assert main(["dufm", "resume", str(tmp_path / "r"), "--no-progress"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"deepcollapse: error: {ck}: damaged: its content does not match the checksum")
    assert ck.read_bytes() == before  # nothing changed


def test_checkpoints_written_before_checksums_still_load(tmp_path):
    config = DUFMConfig(**CONFIG, steps=40, checkpoint_every=20)
    train_dufm(config, tmp_path / "full", progress=False)
    train_dufm(config, tmp_path / "old", progress=False, max_steps=20)
    ck = tmp_path / "old" / "checkpoint.pt"
    data = torch.load(ck, weights_only=True)
    del data["checksum"]
    torch.save(data, ck)  # as the release before this one wrote it
    resume_dufm(tmp_path / "old", progress=False)
    for a, b in zip(_params(tmp_path / "full"), _params(tmp_path / "old")):
        assert torch.equal(a, b)


def test_the_checksum_covers_every_entry_and_the_rotation_keeps_the_file_it_replaces(tmp_path):
    path = tmp_path / "c.pt"
    atomic_torch_save({"step": 1, "x": torch.arange(4.0), "state": {"lr": 0.1}}, path, keep_previous=True)
    assert not previous_path(path).exists()
    atomic_torch_save({"step": 2, "x": torch.arange(4.0), "state": {"lr": 0.1}}, path, keep_previous=True)
    assert load_checkpoint(previous_path(path))["step"] == 1 and load_checkpoint(path)["step"] == 2
    for change in ({"step": 3}, {"state": {"lr": 0.2}}):
        data = torch.load(path, weights_only=True)
        data.update(change)
        torch.save(data, path)  # the old checksum, another content
        with pytest.raises(ConfigError, match="does not match the checksum"):
            load_checkpoint(path)


def test_a_network_checkpoint_falls_back_to_the_previous_epoch(tmp_path, tiny_net, caplog):
    from deepcollapse.nets.train import resume_net, train_net

    cfg = tiny_net(backbone="mlp", n=10, n_test=5, epochs=3, batch_size=16, eval_every=1)
    train_net(cfg, tmp_path / "full", progress=False)
    stop = type("Stop", (Exception,), {})

    def after(epoch, record):
        if epoch == 2:
            raise stop

    with pytest.raises(stop):
        train_net(cfg, tmp_path / "cut", progress=False, callback=after)
    ck = tmp_path / "cut" / "checkpoint.pt"
    model = torch.load(ck, weights_only=True)["model"]
    biggest = max((t for t in model.values() if t.dim() == 2), key=lambda t: t.numel())  # a head layer
    _damage_inside_a_tensor(ck, biggest)
    with caplog.at_level(logging.WARNING, logger="deepcollapse"):
        resume_net(tmp_path / "cut", progress=False)
    said = [r.getMessage() for r in caplog.records if "previous checkpoint" in r.getMessage()]
    assert len(said) == 1 and "(epoch 1)" in said[0]
    a = torch.load(tmp_path / "full" / "checkpoint.pt", weights_only=True)["model"]
    b = torch.load(ck, weights_only=True)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_solution_files_carry_a_checksum(tmp_path, capsys):
    from deepcollapse.landscape.solution_file import load_solution, save_solution

    rng = np.random.default_rng(0)
    H1, W = rng.normal(size=(4, 6)), [rng.normal(size=(4, 4)), rng.normal(size=(3, 4))]
    path = save_solution(tmp_path / "s.npz", H1, W, n=2, lam_h=0.01, lam_w=[0.01, 0.01], extra={"loss": 1.0})
    assert np.array_equal(load_solution(path)["H1"], H1)
    arrays = dict(np.load(path))
    arrays["H1"] = arrays["H1"] * 1.001  # edited, the old checksum kept
    np.savez(tmp_path / "edited.npz", **arrays)
    assert main(["theory", "check", str(tmp_path / "edited.npz")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"{tmp_path / 'edited.npz'}: damaged or edited: its arrays do not match the checksum" in line
    del arrays["checksum"]  # a file of an earlier release: no checksum, loads as before
    np.savez(tmp_path / "old.npz", **arrays)
    assert main(["theory", "check", str(tmp_path / "old.npz")]) == 0
