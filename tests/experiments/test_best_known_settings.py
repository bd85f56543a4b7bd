"""``reproduce best-known --config FILE``: a part of the table from YAML (:class:`BestKnownSettings`); the
shipped files load and name their command; a bad file is one line and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from deepcollapse.cli import main
from deepcollapse.experiments.best_known_settings import BestKnownSettings
from deepcollapse.experiments.search_experiments import BEST_KNOWN_FULL

SHIPPED = sorted((Path(__file__).resolve().parents[2] / "configs" / "best_known").glob("*.yaml"))


def test_the_defaults_are_the_shipped_table():
    assert BestKnownSettings().to_dict() == BEST_KNOWN_FULL


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_settings_load_and_name_their_command(path):
    settings = BestKnownSettings.from_yaml(path)
    assert f"deepcollapse reproduce best-known --config configs/best_known/{path.name}" in path.read_text()
    assert set(settings.layers) <= set(BEST_KNOWN_FULL["layers"])  # a part of the shipped table


def test_a_part_of_the_table_from_yaml(tmp_path, capsys):
    config = tmp_path / "part.yaml"
    config.write_text("classes: [3]\nlayers: [2]\nn: 2\nwidth: 4\nruns: 2\nsteps: 20\nrounds: 1\n")
    out = tmp_path / "out"
    args = ["reproduce", "best-known", "--config", str(config), "--out", str(out), "--registry", "off"]
    assert main([*args, "--no-progress"]) == 0
    table = pd.read_csv(out / "tables" / "best_known.csv")
    assert list(zip(table["classes"], table["layers"])) == [(3, 2)]
    assert (out / "points" / "K3_L2" / "point.json").is_file()
    assert f"--config {config}" in (out / "report.html").read_text()  # the command that made it


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("layers: [1]\n", "layers[0] == 1, must be >= 2"),
        ("classes: []\n", "classes == [], must be a non-empty list"),
        ("rounds: null\n", "set rounds (a count) or budget (minutes)"),
        ("lamb: 0.1\n", "lamb"),
        ("layers: [4\n", "part.yaml"),
    ],
)
def test_a_bad_settings_file_is_one_line_and_writes_nothing(tmp_path, capsys, text, words):
    config = tmp_path / "part.yaml"
    config.write_text(text)
    out = tmp_path / "out"
    assert main(["reproduce", "best-known", "--config", str(config), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err and not out.exists()
