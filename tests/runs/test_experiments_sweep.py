"""Sweeps: validation of sweep files, batching of seeds, resume without duplicated rows, executors agree."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from deepcollapse._core.checks import ConfigError
from deepcollapse.dufm.trainer import DUFMConfig, train_dufm
from deepcollapse.runs.executors import TaskError, import_ray, run_tasks
from deepcollapse.runs.sweep import SweepSpec, collect_results, load_sweep, run_sweep

torch.set_num_threads(1)

BASE = {"classes": 3, "n": 4, "layers": 3, "width": 6, "steps": 60, "log_every": 20, "checkpoint_every": 20}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"base": BASE, "grdi": {"lam": [0.1]}}, "unknown key sweep.grdi"),
        ({"base": {**BASE, "widht": 3}}, "unknown key base.widht"),
        ({"base": BASE, "grid": {"nosuch": [1]}}, "unknown key grid.nosuch"),
        ({"base": BASE, "grid": {}}, "grid == {}"),
        ({"base": BASE, "grid": {"lam": []}}, "grid.lam == [], must be a non-empty list"),
        ({"base": BASE, "grid": {"lam": 0.1}}, "grid.lam == 0.1, must be a non-empty list"),
        ({"base": BASE, "points": []}, "points == []"),
        ({"base": BASE, "grid": {"lr": [0.1, -1.0]}}, "lr == -1.0, must be > 0"),
        ({"base": {**BASE, "seed": 3}}, "base.seed == 3, must not be set"),
        ({"base": BASE, "grid": {"runs": [2]}}, "grid.runs == [2], must not be set"),
        ({"base": BASE, "seeds": [0, 0]}, "must not repeat"),
        ({"base": BASE, "seeds": [], "name": "x"}, "seeds == [], must be a non-empty list"),
        ({"base": BASE, "seeds": [0], "n_seeds": 2}, "both seeds and n_seeds"),
        ({"base": BASE, "kind": "cnn"}, "kind == 'cnn'"),
        ({"base": BASE, "points": [{"width": 4}, {"width": 4}]}, "twice"),
        ([1, 2], "must be a mapping"),
    ],
)
@pytest.mark.filterwarnings("ignore:.*is deprecated:DeprecationWarning")  # old spellings on purpose
def test_bad_sweeps_are_rejected_naming_the_key(data, message):
    with pytest.raises(ConfigError) as err:
        SweepSpec.from_dict(data)
    assert message in str(err.value)


def test_load_sweep_errors(tmp_path):
    with pytest.raises(ConfigError, match="must be an existing YAML file"):
        load_sweep(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("base: {classes: [1,\n")
    with pytest.raises(ConfigError, match="bad.yaml line 2, column 1: expected the node content"):
        load_sweep(bad)


@pytest.mark.filterwarnings("ignore:.*is deprecated:DeprecationWarning")  # old spellings on purpose
def test_overrides_points_ids_and_seed_batching(tmp_path):
    spec = SweepSpec.from_dict(
        {
            "base": BASE,
            "points": [{"width": 4}, {"width": 8}],
            "grid": {"lam": [0.001, 0.002]},
            "n_seeds": 5,
            "seeds_per_run": 2,
        }
    )
    assert spec.overrides() == [
        {"width": 4, "lam": 0.001},
        {"width": 4, "lam": 0.002},
        {"width": 8, "lam": 0.001},
        {"width": 8, "lam": 0.002},
    ]
    tasks = spec.tasks(tmp_path)
    assert len(tasks) == 4 * 3  # 5 seeds in chunks of 2, 2, 1
    assert [t.config["seeds"] for t in tasks[:3]] == [[0, 1], [2, 3], [4]]
    assert [t.config["runs"] for t in tasks[:3]] == [2, 2, 1]
    assert tasks[0].meta["point"] == "width=4_lam=0.001"
    assert tasks[0].out_dir.endswith("points/width=4_lam=0.001/seeds_0-1")
    # `lam` sets every regularisation parameter (λ_H1 and each λ_W)
    cfg = DUFMConfig.from_dict(tasks[3].config)  # point 2: width 4, lam 0.002
    assert cfg.lam_h == 0.002 and list(cfg.lam_w) == [0.002] * 3
    assert cfg.width == [4, 4, 4]
    # all seeds of a point in one trainer call by default
    one = SweepSpec.from_dict({"base": BASE, "seeds": [3, 7]}).tasks(tmp_path)
    assert len(one) == 1 and one[0].config["seeds"] == [3, 7] and one[0].config["runs"] == 2


def _table(res):
    cols = ["point", "seed", "final_loss", "fit", "reg", "classification", "mean_rank"]
    return res.runs[cols].sort_values(["point", "seed"]).reset_index(drop=True)


def test_interrupted_sweep_resumes_without_duplicates(tmp_path):
    spec = SweepSpec.from_dict({"base": BASE, "grid": {"lam": [0.004, 0.008]}, "seeds": [0, 1], "name": "r"})
    out = tmp_path / "sweep"
    tasks = spec.tasks(out)
    # point 1 finished, point 2 interrupted after 20 of 60 steps (checkpoint on disk, no summary)
    run_tasks(tasks[:1], workers=1)
    train_dufm(DUFMConfig.from_dict(tasks[1].config), tasks[1].out_dir, progress=False, max_steps=20)
    assert tasks[0].done and not tasks[1].done
    partial_runs, _ = collect_results(spec, out)
    assert len(partial_runs) == 2

    res = run_sweep(spec, out, workers=1)
    assert [s["status"] for s in res.statuses] == ["skipped", "resumed"]
    assert len(res.runs) == 4
    assert not res.runs.duplicated(["point", "seed"]).any()
    assert len(pd.read_csv(out / "results.csv")) == 4
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary["n_runs"]) == [2, 2]

    again = run_sweep(spec, out, workers=1)
    assert [s["status"] for s in again.statuses] == ["skipped", "skipped"]
    pd.testing.assert_frame_equal(_table(again), _table(res))

    # the resumed sweep equals an uninterrupted one (resume is bit-identical, GD deterministic per seed)
    fresh = run_sweep(spec, tmp_path / "fresh", workers=1)
    pd.testing.assert_frame_equal(_table(fresh), _table(res))
    # mean ± std per point recomputed with numpy from the per-run table
    for pid, sub in res.runs.groupby("point"):
        row = res.summary[res.summary["point"] == pid].iloc[0]
        assert row["final_loss_mean"] == pytest.approx(np.mean(sub["final_loss"]))
        assert row["final_loss_std"] == pytest.approx(np.std(sub["final_loss"], ddof=1))


def test_relaunch_with_a_changed_config_is_refused(tmp_path):
    spec = SweepSpec.from_dict({"base": BASE, "seeds": [0]})
    run_sweep(spec, tmp_path, workers=1)
    changed = SweepSpec.from_dict({"base": {**BASE, "steps": 80}, "seeds": [0]})
    with pytest.raises(ConfigError, match="steps == 60"):
        run_sweep(changed, tmp_path, workers=1)


@pytest.mark.check  # two sweeps, one in a pool of two processes (≈ 8 s)
def test_batched_split_and_process_pool_give_the_same_table(tmp_path):
    data = {"base": BASE, "grid": {"width": [5, 7]}, "seeds": [0, 1, 2]}
    batched = run_sweep(SweepSpec.from_dict(data), tmp_path / "a", workers=1)
    split = run_sweep(SweepSpec.from_dict({**data, "seeds_per_run": 1}), tmp_path / "b", workers=2)
    assert len(split.statuses) == 6 and len(batched.statuses) == 2
    pd.testing.assert_frame_equal(_table(batched), _table(split))


def test_failing_task_reports_its_label_and_others_finish(tmp_path, monkeypatch):
    spec = SweepSpec.from_dict({"base": BASE, "grid": {"lam": [0.004, 0.008]}})
    tasks = spec.tasks(tmp_path)
    broken = type(tasks[0])(
        tasks[0].kind, {**tasks[0].config, "steps": -1}, tasks[0].out_dir, label="bad/point"
    )
    with pytest.raises(TaskError, match="bad/point"):
        run_tasks([broken, tasks[1]], workers=1)
    assert tasks[1].done and not tasks[0].done


def test_missing_ray_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError, match=r"pip install 'deepcollapse\[ray\]'"):
        import_ray()


@pytest.mark.ray
@pytest.mark.check  # starts a local Ray instance (seconds); the fast tier has the stand-in test below
def test_ray_executor_matches_local(tmp_path):
    pytest.importorskip("ray")
    data = {"base": BASE, "grid": {"lam": [0.004, 0.008]}, "seeds": [0, 1], "seeds_per_run": 1}
    local = run_sweep(SweepSpec.from_dict(data), tmp_path / "local", executor="local", workers=1)
    ray_res = run_sweep(SweepSpec.from_dict(data), tmp_path / "ray", executor="ray", workers=2)
    assert [s["status"] for s in ray_res.statuses] == ["trained"] * 4
    pd.testing.assert_frame_equal(_table(local), _table(ray_res))
    pd.testing.assert_frame_equal(
        local.summary.drop(columns=[c for c in local.summary if "run_dir" in c]),
        ray_res.summary.drop(columns=[c for c in ray_res.summary if "run_dir" in c]),
    )


CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_example_configs_are_valid_and_documented(path):
    spec = load_sweep(path)
    assert spec.tasks(path.parent / "unused")
    header = path.read_text().split("\nname:")[0]
    for needed in ("deepcollapse sweep configs/", "Expected runtime", "Expected result"):
        assert needed in header


def test_force_retrains_folders_with_a_changed_config(tmp_path):
    spec = SweepSpec.from_dict({"base": BASE, "seeds": [0]})
    first = run_sweep(spec, tmp_path, workers=1)
    changed = SweepSpec.from_dict({"base": {**BASE, "lam": 0.02}, "seeds": [0]})
    res = run_sweep(changed, tmp_path, workers=1, force=True)
    assert [s["status"] for s in res.statuses] == ["trained"]
    fresh = run_sweep(changed, tmp_path / "fresh", workers=1)
    pd.testing.assert_frame_equal(_table(res), _table(fresh))
    assert res.runs["final_loss"].iloc[0] != first.runs["final_loss"].iloc[0]


def test_ray_address_is_used_to_connect(tmp_path, monkeypatch):
    """--ray-address reaches ray.init(address=...) (checked with a recording stand-in for the ray module that
    runs the remote function in-process; the real local-instance path is test_ray_executor_matches_local)."""
    import types

    calls = {}

    class _Ref:
        def __init__(self, value):
            self.value = value

    fake = types.SimpleNamespace(
        is_initialized=lambda: False,
        init=lambda **kw: calls.setdefault("init", kw),
        shutdown=lambda: calls.setdefault("shutdown", True),
        remote=lambda **opts: lambda fn: types.SimpleNamespace(remote=lambda *a: _Ref(fn(*a))),
        wait=lambda refs, num_returns=1: (refs[:num_returns], refs[num_returns:]),
        get=lambda ref: ref.value,
    )
    monkeypatch.setitem(sys.modules, "ray", fake)
    spec = SweepSpec.from_dict({"base": BASE, "seeds": [0]})
    res = run_sweep(spec, tmp_path, executor="ray", ray_address="ray://head:10001")
    assert calls["init"]["address"] == "ray://head:10001" and calls["shutdown"] is True
    assert [s["status"] for s in res.statuses] == ["trained"] and len(res.runs) == 1
