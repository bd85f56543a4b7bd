"""The network regime map (issue 29): its settings refuse bad input in one line before anything is written,
its cell table counts outcomes with Wilson intervals (checked against the interval's definition, solved
numerically), it places a setting on a grid, and the figure experiments' claims are judged from the runs.

The map's smoke run is part of the registry's smoke test (tests/experiments/test_experiments_registry.py).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq

from deepcollapse._core.checks import ConfigError
from deepcollapse.cli import main
from deepcollapse.experiments.net_claims import fig2_claim, fig4_claim, fig10_claim
from deepcollapse.experiments.net_regime_map import REGIME_SMOKE
from deepcollapse.experiments.regime_location import SETTINGS_FILE, find_map, locate
from deepcollapse.experiments.regime_map import RegimeMap, cell_table, run_table
from deepcollapse.nets.outcome import OUTCOMES

BASE = dict(REGIME_SMOKE.base)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lam: []", "lam == [], must list at least one value."),
        ("lam: [0.01, -0.04]", "lam[1] == -0.04, must be > 0"),
        ("lam: [0.01, 0]", "lam[1] == 0"),
        ("lr: [0.0]", "lr[0] == 0"),
        ("lr: []", "lr == [], must list at least one value."),
        ("conventions: {wd_scop: weights}", "did you mean 'wd_scope'?"),
        ("conventions: {wd_mode: sideways}", "wd_mode == 'sideways', must be one of"),
        ("width: [64, 0]", "width[1] == 0, must be >= 1"),
        ("seeds: 0", "seeds == 0, must be >= 1"),
        ("base: {lr: 0.1}", "base['lr'] is set by the map's lr"),
        ("lamm: [0.1]", "lamm"),
    ],
)
def test_bad_map_is_one_line_exit_2_nothing_written(tmp_path, capsys, text, message):
    config = tmp_path / "map.yaml"
    config.write_text(text + "\n")
    out = tmp_path / "out"
    assert main(["reproduce", "net-regime-map", "--config", str(config), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


SHIPPED = sorted((Path(__file__).resolve().parents[2] / "configs" / "regime").glob("*.yaml"))


def test_shipped_map_files_load_and_their_headers_hold():
    assert SHIPPED, "configs/regime/ ships at least one example"
    for path in SHIPPED:
        regime = RegimeMap.from_yaml(path)
        head = path.read_text().split("\nname:")[0]
        assert f"deepcollapse reproduce net-regime-map --config configs/regime/{path.name}" in head, path
        m = re.search(
            r"(\d+) cells? x (\d+) variants x (\d+) seeds = (\d+) runs of (?:at most )?(\d+) epochs", head
        )
        assert m, f"{path.name}: the header states the map's size"
        cells, variants, seeds, total, epochs = (int(g) for g in m.groups())
        assert cells * variants == len(regime.cells) and variants == len(regime.variants or {"": 0})
        # trained until converged: the header's epochs are the budget, max_epochs
        budget = (
            regime.base["max_epochs"] if regime.base.get("until") == "converged" else regime.base["epochs"]
        )
        assert (seeds, total, epochs) == (regime.seeds, regime.total_runs, budget)
        assert ("at most" in m.group(0)) == (regime.base.get("until") == "converged")


def test_variants_are_a_further_axis_and_name_each_runs_conventions(tmp_path):
    m = RegimeMap(base=BASE, variants={"defaults": {}, "decoupled": {"wd_mode": "decoupled"}}, seeds=1)
    assert m.cells == [{"lam": 0.04, "lr": 0.01}, {"lam": 0.04, "lr": 0.01, "wd_mode": "decoupled"}]
    assert [m.variant_of(c) for c in m.cells] == ["defaults", "decoupled"]
    with pytest.raises(ConfigError, match=r"variants\['x'\] == 'wd_mod': did you mean 'wd_mode'"):
        RegimeMap(base=BASE, variants={"x": {"wd_mod": "decoupled"}})
    for task in m.spec().tasks(tmp_path):
        Path(task.out_dir).mkdir(parents=True)
        label = "zero" if "wd_mode" not in task.meta["overrides"] else "low_rank"
        (Path(task.out_dir) / "summary.json").write_text(json.dumps({"outcome": {"label": label}}))
    runs = run_table(m, tmp_path).set_index("variant")
    assert runs.loc["defaults", "label"] == "zero" and runs.loc["decoupled", "label"] == "low_rank"
    assert len(cell_table(run_table(m, tmp_path))) == 2  # one cell per variant


def test_the_map_validates_every_runs_config_and_describes_itself():
    with pytest.raises(ConfigError, match="backbone == 'resnet9'"):
        RegimeMap(base={**BASE, "backbone": "resnet9"})
    with pytest.raises(ConfigError, match=r"base\['width'\] is set by the map's width"):
        RegimeMap(base=BASE, width=[16, 32])
    base = {k: v for k, v in BASE.items() if k != "width"}
    m = RegimeMap(base=base, lam=[0.04, 0.01], lr=[0.01], width=[16, 32], seeds=2)
    assert m.lam == [0.01, 0.04] and m.total_runs == 8
    assert {"lam": 0.01, "lr": 0.01, "width": 16} in m.cells
    assert "head width ∈ {16, 32}" in m.describe() and "8 runs" in m.describe()
    assert RegimeMap.from_yaml(m.to_yaml()) == m  # the settings file a map's folder records


def _wilson_by_definition(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson interval as the set of p with |k/n − p| <= z sqrt(p(1−p)/n), its ends found by root
    finding (not the closed form the code uses)."""
    phat = k / n

    def f(p: float) -> float:
        return (phat - p) ** 2 - z * z * p * (1 - p) / n

    lo = 0.0 if k == 0 else brentq(f, 1e-15, phat)
    hi = 1.0 if k == n else brentq(f, max(phat, 1e-12), 1 - 1e-15)
    return lo, hi


def _runs(cells: dict[tuple[float, float], list[str]]) -> pd.DataFrame:
    rows = []
    for (lam, lr), labels in cells.items():
        for seed, label in enumerate(labels):
            rows.append(
                {
                    "lam": lam,
                    "lr": lr,
                    "width": 64,
                    "seed": seed,
                    "label": label,
                    "bottleneck_rank": {"zero": 1, "low_rank": 5}.get(label, 10),
                    "gram_to_srg": 0.1 * (seed + 1),
                    "gram_to_dnc": 0.7,
                    "train_acc": 0.1 if label == "zero" else 1.0,
                    "test_acc": 0.1,
                    "loss": 0.5,
                    "rank_H~5": 3 + seed,
                }
            )
    return pd.DataFrame(rows)


def test_cells_count_outcomes_with_wilson_intervals_and_the_majority():
    runs = _runs(
        {
            (0.04, 0.01): ["zero", "zero", "zero"],
            (0.01, 0.01): ["low_rank", "zero", "low_rank"],
            (0.01, 0.04): ["dnc", "diverged", "srg_like"],
        }
    )
    cells = cell_table(runs).set_index(["lam", "lr"])
    assert len(cells) == 3 and (cells["seeds"] == 3).all()
    c = cells.loc[(0.01, 0.01)]
    assert c["outcome"] == "low_rank" and c["agreement"] == pytest.approx(2 / 3)
    assert c["outcomes"] == "zero 1, low_rank 2"
    for label, k in (("low_rank", 2), ("zero", 1), ("dnc", 0)):
        lo, hi = _wilson_by_definition(k, 3)
        assert c[f"p_{label}"] == pytest.approx(k / 3)
        assert c[f"p_{label}_lo"] == pytest.approx(lo, abs=1e-9) and c[f"p_{label}_hi"] == pytest.approx(hi)
    assert cells.loc[(0.04, 0.01), "agreement"] == 1.0 and cells.loc[(0.04, 0.01), "p_zero_lo"] > 0.4
    # a three-way tie goes to the first label in the order of OUTCOMES (diverged before srg_like before dnc)
    tie = cells.loc[(0.01, 0.04)]
    assert tie["outcome"] == min(("dnc", "diverged", "srg_like"), key=OUTCOMES.index)
    assert c["rank_H~5"] == pytest.approx(np.mean([3, 4, 5]))  # the mean of the seeds' ranks
    assert c["gram_to_srg"] == pytest.approx(0.2)


def test_run_table_reads_each_runs_outcome_from_its_folder(tmp_path):
    m = RegimeMap(base=BASE, lam=[0.04, 0.01], lr=[0.01], seeds=2)
    tasks = m.spec().tasks(tmp_path)
    assert len(tasks) == 4
    labels = ["zero", "dnc", "low_rank"]  # the fourth run is unfinished: no summary.json
    for task, label in zip(tasks, labels):
        folder = Path(task.out_dir)
        folder.mkdir(parents=True)
        outcome = {
            "label": label,
            "bottleneck_rank": 4,
            "gram_distance_srg": 0.3,
            "gram_distance_dnc": 0.6,
            "ranks": {"H1": 10, "H~2": 4},
            "ranks_coarse": {"H1": 9, "H~2": 3},
        }
        summary = {"train_acc": 1.0, "test_acc": 0.9, "loss": 0.2, "n_train": 200, "outcome": outcome}
        (folder / "summary.json").write_text(json.dumps(summary))
    runs = run_table(m, tmp_path)
    assert sorted(runs["label"]) == sorted(labels)
    assert {"rank_H1", "rank_H~2", "coarse_H~2"} <= set(runs.columns)
    assert (runs["coarse_H~2"] == 3).all() and "L_DNC" not in runs  # standard weight decay: no DUFM levels
    first = runs[(runs["lam"] == tasks[0].config["lam"]) & (runs["seed"] == tasks[0].config["seed"])]
    assert first["label"].item() == "zero"


def test_a_setting_is_placed_on_the_grid_in_log_scale():
    lams, lrs = [0.04 / 4**k for k in range(5)], [0.0025, 0.01, 0.04, 0.16]
    on = locate(lams, lrs, 0.04, 0.01)
    assert on.on_grid and on.inside and on.steps == 0.0 and "is a cell of the map" in on.describe()
    near = locate(lams, lrs, 2.0**-8, 0.05)  # the laptop Fig. 4 setting: between λ cells, η above 0.04
    assert (near.cell_lam, near.cell_lr) == (0.0025, 0.04) and near.inside and not near.on_grid
    assert near.steps == pytest.approx(max(math.log(0.05 / 0.04), math.log(2.0**-8 / 0.0025)) / math.log(4))
    out = locate(lams, lrs, 1.0, 0.01)
    assert not out.inside and out.cell_lam == 0.04 and "outside" in out.describe()


def test_find_map_reads_a_finished_map_next_to_a_figure_folder(tmp_path):
    assert find_map(tmp_path / "real-mnist5k-fig4") is None
    folder = tmp_path / "net-regime-map"
    (folder / "tables").mkdir(parents=True)
    REGIME_SMOKE.to_yaml(folder / SETTINGS_FILE)
    assert find_map(tmp_path / "real-mnist5k-fig4") is None  # no cells table yet: not finished
    cell_table(_runs({(0.04, 0.01): ["zero", "zero"]})).to_csv(folder / "tables" / "regime_cells.csv")
    found = find_map(tmp_path / "real-mnist5k-fig4")
    assert found is not None and found[0] == folder.resolve() and found[1] == REGIME_SMOKE
    assert found[2]["outcome"].tolist() == ["zero"]


def test_claims_are_judged_from_the_runs():
    rows = _runs({(2.0**-8, 0.05): ["low_rank", "zero"]})
    rows["bottleneck_rank"] = [6, 1]
    c4 = fig4_claim(rows)
    assert c4.holds == "in part" and "1 low-rank with rank 5–7" in c4.text
    assert fig4_claim(rows.assign(label="srg_like")).holds == "yes"
    assert fig4_claim(rows.assign(label="zero")).holds == "no"
    ranks = pd.DataFrame(
        {
            "lam": [1e-3, 1e-3, 4e-3, 1.6e-2],
            "label": ["low_rank", "full_rank", "low_rank", "zero"],
            "avg_rank": [9.0, 8.0, 6.0, 1.0],
        }
    )
    c10 = fig10_claim(ranks)  # the zero run at the largest λ is left out: 8.5 -> 6 falls
    assert c10.holds == "yes" and "λ 0.001: 8.50" in c10.text
    assert "1 run(s) at the zero or a constant output" in c10.text
    assert fig10_claim(ranks.assign(avg_rank=[5.0, 5.0, 6.0, 1.0])).holds == "no"
    # a constant output is left out like the zero one (chance accuracy, rank 1 for that reason)
    constant = fig10_claim(ranks.assign(label=["low_rank", "full_rank", "low_rank", "constant"]))
    assert constant.holds == "yes" and "1 run(s) at the zero or a constant output" in constant.text
    c2 = fig2_claim(pd.Series([0.06, 0.08]), loss_dnc=0.0683, loss_srg=0.0557)
    assert c2.holds == "in part" and "1 of 2 run(s) below L_DNC" in c2.text
