"""Every network run of every network experiment's smoke variant learns: a run that ends at chance training
accuracy checks nothing (issue 18, part 4).

The experiments are enumerated from the registry (``kind == "net"``), so a newly registered network
experiment is covered without touching this file.  The smoke runs are the session's shared ones
(``smoke_report`` in tests/conftest.py, also used by test_experiments_registry.py): nothing is trained twice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml

from deepcollapse.experiments.registry import list_experiments

torch.set_num_threads(1)

# The registry first (it imports the figure modules in their listed order), then a figure module by name:
# importing one alone before would put its experiments first in `reproduce --list`.
NET_EXPERIMENTS = [e.name for e in list_experiments() if e.kind == "net"]
from deepcollapse.experiments.net_figures import NET_FIGURES, figure_spec, smoke_epochs  # noqa: E402


def network_runs(out: Path) -> list[tuple[Path, int, float]]:
    """``(folder, K, final train accuracy)`` of every network run folder under ``out``.

    A network run folder holds the supervised trainer's ``config.yaml`` (with the network-only fields
    ``dataset`` and ``backbone``; DUFM folders have neither) and its ``summary.json``.  K is the number of
    classes the config selects (all 10 when ``classes`` is null), checked against the summary's.
    """
    runs = []
    for summary_path in sorted(out.rglob("summary.json")):
        config_path = summary_path.with_name("config.yaml")
        if not config_path.is_file():
            continue
        config = yaml.safe_load(config_path.read_text())
        if not {"dataset", "backbone"} <= set(config):
            continue
        summary = json.loads(summary_path.read_text())
        K = len(config["classes"]) if config.get("classes") else 10
        assert summary["num_classes"] == K, summary_path
        runs.append((summary_path.parent, K, summary["train_acc"]))
    return runs


def test_network_experiments_are_enumerated_from_the_registry():
    assert {"net-2024-fig4-mnist", "net-2023-fig1", "real-digits-rank-lr", "real-mnist1d-rank-lr"} <= set(
        NET_EXPERIMENTS
    )


@pytest.mark.parametrize("dataset", ["digits", "mnist1d"])
def test_smoke_lr_points_take_the_largest_lrs_lr_times_steps(dataset):
    row = NET_FIGURES[f"real-{dataset}-rank-lr"]
    lrs = [p["lr"] for p in row.points]
    spec = figure_spec(row, smoke=True)
    largest = max(lrs) * spec.base["epochs"]  # lr × epochs; the steps per epoch are the same
    assert {p["lr"] for p in spec.points} == {min(lrs), max(lrs)}
    for p in spec.points:  # enough, and at most one epoch more
        assert largest - 1e-9 <= p["lr"] * p["epochs"] < largest + p["lr"]
    assert smoke_epochs(40, 0.0125, [0.0125, 0.2]) == 640 and smoke_epochs(40, 0.2, [0.0125, 0.2]) == 40
    full = figure_spec(row, smoke=False)
    assert all("epochs" not in p for p in full.points)  # the full experiment keeps one epoch count


@pytest.mark.check
@pytest.mark.parametrize("name", NET_EXPERIMENTS)
def test_every_network_smoke_run_ends_above_chance(name, smoke_report):
    runs = network_runs(smoke_report(name).parent)
    assert runs, f"{name}: no network run folder in its smoke output"
    low = [(str(folder), K, acc) for folder, K, acc in runs if not acc > 1.2 / K]
    assert not low, f"{name}: runs at or near chance (folder, K, train accuracy): {low}"
