"""Tables from run folders: rows per run, mean ± std per point, against numpy on the written values."""

import json

import numpy as np
import pytest

from deepcollapse.analysis.tables import (
    aggregate_runs,
    dufm_run_rows,
    final_singular_values,
    layer_metrics_frame,
    read_jsonl,
    step_metrics_frame,
)


def _write_run(folder, runs, loss_dnc=0.3, loss_srg=0.2, metrics=()):
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(
        json.dumps({"loss_dnc": loss_dnc, "loss_srg": loss_srg, "runs": runs})
    )
    (folder / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))


def _run(seed, loss, ranks, cls="srg_like"):
    return {
        "seed": seed,
        "final_loss": loss,
        "fit": loss / 2,
        "reg": loss / 2,
        "ranks": ranks,
        "dnc1": [1e-3] * len(ranks),
        "classification": cls,
        "diverged": False,
    }


def test_dufm_rows_and_aggregate_match_numpy(tmp_path):
    losses = [0.25, 0.19, 0.21]
    ranks = [[10, 6, 6, 10], [10, 5, 5, 10], [10, 10, 10, 10]]
    classes = ["srg_like", "low_rank", "dnc"]
    _write_run(tmp_path / "a", [_run(s, l, r, c) for s, (l, r, c) in enumerate(zip(losses, ranks, classes))])
    rows = dufm_run_rows(tmp_path / "a")
    assert [r["seed"] for r in rows] == [0, 1, 2]
    # mean_rank = average over the intermediate layers M_2 .. M_{L-1}
    assert [r["mean_rank"] for r in rows] == [6.0, 5.0, 10.0]
    assert [r["is_dnc"] for r in rows] == [0.0, 0.0, 1.0]
    assert [r["below_dnc"] for r in rows] == [1.0, 1.0, 1.0]
    assert rows[1]["loss_ratio_srg"] == pytest.approx(0.19 / 0.2)
    assert rows[0]["rank_2"] == 6 and rows[0]["dnc1_4"] == 1e-3

    import pandas as pd

    df = pd.DataFrame(rows)
    df["point"] = "p"
    agg = aggregate_runs(df, ["point"])
    assert len(agg) == 1 and agg["n_runs"].iloc[0] == 3
    assert agg["final_loss_mean"].iloc[0] == pytest.approx(np.mean(losses))
    assert agg["final_loss_std"].iloc[0] == pytest.approx(np.std(losses, ddof=1))
    assert agg["is_dnc_mean"].iloc[0] == pytest.approx(1 / 3)
    assert "seed_mean" not in agg


def test_aggregate_groups_and_single_run_std_zero(tmp_path):
    import pandas as pd

    df = pd.DataFrame(
        {"point": ["a", "a", "b"], "lam": [0.1, 0.1, 0.2], "seed": [0, 1, 0], "x": [1.0, 3.0, 5.0]}
    )
    agg = aggregate_runs(df, ["point", "lam"])
    assert list(agg["point"]) == ["a", "b"]
    assert list(agg["x_mean"]) == [2.0, 5.0]
    assert agg["x_std"].tolist() == pytest.approx([np.sqrt(2.0), 0.0])
    assert list(agg["n_runs"]) == [2, 1]


def test_metrics_frames_and_final_singular_values(tmp_path):
    recs = []
    for step in (0, 10):
        for run, seed in ((0, 5), (1, 6)):
            recs.append(
                {
                    "step": step,
                    "run": run,
                    "seed": seed,
                    "loss": 1.0 / (step + 1 + run),
                    "fit": 0.1,
                    "reg": 0.1,
                    "diverged": False,
                    "layers": [
                        {
                            "layer": 1,
                            "kind": "post",
                            "dnc1": 0.5 * (step + 1),
                            "rank": 3,
                            "singular_values": [3.0, 2.0 + run],
                        },
                        {"layer": 2, "kind": "pre", "dnc1": 0.1, "rank": 2, "singular_values": [1.0]},
                    ],
                }
            )
    _write_run(tmp_path / "r", [_run(5, 0.2, [3, 3, 3])], metrics=recs)
    with open(tmp_path / "r" / "metrics.jsonl", "a") as fh:
        fh.write('{"step": 20, "run"')  # a writer killed mid-line
    assert len(read_jsonl(tmp_path / "r" / "metrics.jsonl")) == 4
    steps = step_metrics_frame(tmp_path / "r")
    assert steps.shape[0] == 4 and set(steps["seed"]) == {5, 6}
    layers = layer_metrics_frame(tmp_path / "r")
    assert len(layers) == 8
    assert layers[(layers.step == 10) & (layers.layer == 1)]["dnc1"].tolist() == [5.5, 5.5]
    sv = final_singular_values(tmp_path / "r", kind="post")
    assert list(sv) == [1]
    np.testing.assert_array_equal(sv[1], [[3.0, 2.0], [3.0, 3.0]])
