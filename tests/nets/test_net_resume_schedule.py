"""``net resume --epochs E`` keeps the learning rate of every epoch the run was started with, or refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepcollapse.cli import main
from deepcollapse.nets.config import NetConfig
from deepcollapse.nets.train import _same_schedule, lr_at


@pytest.mark.parametrize("new_epochs", [30, 12, 8])
def test_multistep_milestones_stay_at_their_epochs(new_epochs):
    old = NetConfig(
        dataset="digits", lr=0.1, lr_schedule="multistep", lr_milestones=[0.5, 0.75], lr_decay=0.1, epochs=20
    )
    new = _same_schedule(old, new_epochs, Path("run"))
    assert new.epochs == new_epochs
    for epoch in range(1, min(20, new_epochs) + 1):  # every epoch both runs share: the same learning rate
        assert lr_at(new, epoch) == lr_at(old, epoch), epoch
    if new_epochs > 20:  # after the old end: the last decayed rate, no new milestone
        assert all(lr_at(new, e) == pytest.approx(0.1 * 0.1**2) for e in range(21, new_epochs + 1))


def test_cosine_resume_with_new_length_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    NetConfig(dataset="digits", lr_schedule="cosine", epochs=10).to_yaml(out / "config.yaml")
    assert main(["net", "resume", str(out), "--epochs", "20"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--epochs == 20, must be 10" in err[0] and "cosine" in err[0]
    assert "deepcollapse net train --config" in err[0]
    assert NetConfig.from_yaml(out / "config.yaml").epochs == 10  # nothing changed on disk
