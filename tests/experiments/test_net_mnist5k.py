"""The 2024 MNIST figures on the bundled real MNIST subset: specs (fast) and smoke directions (check tier)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deepcollapse.experiments.net_figures import N_LAM_H1, NET_FIGURES, PAPER_N_LAM_H1, figure_spec
from deepcollapse.experiments.net_reports import dnc1_change
from deepcollapse.nets.config import NetConfig

#: the rows of the network figures' table on the bundled MNIST subset
MNIST5K_EXPERIMENTS = {name: row for name, row in NET_FIGURES.items() if row.base["dataset"] == "mnist_5k"}


def mnist5k_spec(name: str, smoke: bool):
    return figure_spec(NET_FIGURES[name], smoke)


@pytest.mark.parametrize("name", list(MNIST5K_EXPERIMENTS))
@pytest.mark.parametrize("smoke", [False, True])
def test_every_point_is_a_valid_mnist_5k_config(name, smoke):
    tasks = mnist5k_spec(name, smoke).tasks("/nonexistent")
    assert len({t.config["seed"] for t in tasks}) >= 2
    for t in tasks:
        cfg = NetConfig.from_dict(t.config)
        assert cfg.dataset == "mnist_5k" and cfg.data_dir is None and cfg.backbone == "resnet8"
        assert cfg.n + cfg.n_test <= 500


def test_fig10_has_three_seeds_and_a_geometric_weight_decay_grid():
    tasks = mnist5k_spec("real-mnist5k-fig10", smoke=False).tasks("/nonexistent")
    lams = sorted({t.config["lam"] for t in tasks})
    assert len({t.config["seed"] for t in tasks}) >= 3 and len(lams) >= 3
    assert np.allclose(np.diff(np.log2(lams)), np.log2(lams[1] / lams[0]))


def test_fig2_scales_lambda_h1_as_one_over_n():
    for smoke in (False, True):
        cfg = mnist5k_spec("real-mnist5k-fig2", smoke).tasks("/nonexistent")[0].config
        assert cfg["reg"] == "dufm" and cfg["lam_h_scale"] == "dataset"
        assert cfg["n"] * cfg["lam_h"] == pytest.approx(N_LAM_H1)  # the same n λ_H1 at every n
        assert PAPER_N_LAM_H1 == pytest.approx(5000 * 5e-6)


def test_dnc1_change_reads_first_and_last_per_run():
    rows = []
    for run, (a, b) in enumerate([(2.0, 0.5), (4.0, 1.0)]):
        rows += [
            {"epoch": 0, "layer": 1, "kind": "post", "dnc1": a, "run": run},
            {"epoch": 10, "layer": 1, "kind": "post", "dnc1": b, "run": run},
            {"epoch": 10, "layer": 1, "kind": "pre", "dnc1": 99.0, "run": run},
        ]
    out = dnc1_change(pd.DataFrame(rows)).iloc[0]
    assert out["dnc1_first"] == 3.0 and out["dnc1_last"] == 0.75 and out["ratio"] == 0.25 and out["falls"]


@pytest.mark.check
def test_fig10_smoke_rank_falls_with_weight_decay_and_learns(smoke_report):
    out = smoke_report("real-mnist5k-fig10").parent
    summary = pd.read_csv(out / "tables" / "real-mnist5k-fig10_summary.csv").sort_values("lam")
    assert len(summary) == 2 and (summary["seeds"] == 2).all()
    small, large = summary.iloc[0], summary.iloc[-1]
    assert large["avg_rank_mean"] < small["avg_rank_mean"]
    runs = pd.read_csv(out / "tables" / "real-mnist5k-fig10_runs.csv")
    assert (runs["train_acc"] > 1.2 / 10).all()


@pytest.mark.parametrize("name", ["real-mnist5k-fig4", "real-mnist5k-fig2"])
@pytest.mark.check
def test_dnc_smoke_dnc1_falls_in_every_head_layer_and_learns(smoke_report, name):
    out = smoke_report(name).parent
    change = pd.read_csv(out / "tables" / f"{name}_dnc1.csv")
    layers = int(MNIST5K_EXPERIMENTS[name].base["layers"])
    assert sorted(change["layer"]) == list(range(1, layers + 1))
    assert change["falls"].all(), change
    runs = pd.read_csv(out / "tables" / f"{name}_runs.csv")
    assert len(runs) == 2 and (runs["train_acc"] > 1.2 / 10).all()
    assert (out / "figures" / f"{name}_dnc.png").is_file()
    if name.endswith("fig2"):
        levels = pd.read_csv(out / "tables" / f"{name}_theory.csv")
        assert np.isfinite(levels[["L_DNC", "L_SRG", "final_loss_mean"]].to_numpy()).all()
    else:
        dist = pd.read_csv(out / "tables" / f"{name}_gram_distance.csv")
        assert np.isfinite(dist[["to_srg", "to_dnc"]].to_numpy()).all()


def test_the_gram_figure_shows_both_grams_on_one_colour_scale(tmp_path):
    """Issue 45, point 6: ``real-mnist5k-fig4_gram.png`` put the measured Gram (0.5–1) beside the SRG Gram
    (0–1), each with its own colour limits, and the post-ReLU SRG Gram beside a pre-ReLU one.  Both are now
    cosine Grams of M~_L (pre-ReLU) on one scale, -1 to 1."""
    import json
    from types import SimpleNamespace

    import numpy as np

    from deepcollapse.experiments.net_reports import _gram_panel
    from deepcollapse.theory.constructions.gram import srg_pre_gram

    rng = np.random.default_rng(0)
    M = np.abs(rng.standard_normal((16, 10))) + 0.5  # (d, K): positive class means, cosine Grams near 1
    folder = tmp_path / "seed_0"
    folder.mkdir()
    record = {"epoch": 1, "layers": [{"layer": 5, "kind": "pre", "gram": (M.T @ M).tolist()}]}
    (folder / "metrics.jsonl").write_text(json.dumps(record) + "\n")
    figures, tables = {}, {}
    ctx = SimpleNamespace(
        figure=lambda fig, name, caption: figures.setdefault(name, fig),
        table=lambda frame, name, caption, **kw: tables.setdefault(name, frame),
    )
    row = NET_FIGURES["real-mnist5k-fig4"]
    _gram_panel(ctx, row, [SimpleNamespace(config={"seed": 0}, out_dir=str(folder))], 5, "pre")
    fig = figures["real-mnist5k-fig4_gram"]
    images = [ax.images[0] for ax in fig.axes if ax.images]
    assert len(images) == 2 and all(im.get_clim() == (-1.0, 1.0) for im in images)
    assert np.allclose(images[1].get_array(), srg_pre_gram(10))  # the pre-ReLU SRG Gram, not the post
    assert tables["real-mnist5k-fig4_gram_distance"].columns.tolist() == ["seed", "to_srg", "to_dnc"]
