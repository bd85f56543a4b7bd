"""The typed results of the network loop (issue 30, item 4): ``evaluate`` -> :class:`NetEvaluation`,
``run_summary`` -> :class:`NetSummary`; each keeps the keys of the dict of earlier releases, reads back with
``from_dict`` and reads the files of earlier releases."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from deepcollapse.nets.build import build_network, load_net_data
from deepcollapse.nets.evaluate import NetEvaluation, evaluate
from deepcollapse.nets.outcome import HeadOutcome
from deepcollapse.nets.summary import NetSummary, run_summary

EVAL_KEYS = [
    "train_acc",
    "test_acc",
    "loss",
    "fit",
    "reg",
    "reg_h1",
    "reg_w",
    "test_fit",
    "layers",
    "bn_scale_norm",
    "head_weight_norms",
    "outcome",
]
LAYER_KEYS = [
    "layer",
    "name",
    "kind",
    "key",
    "dnc1",
    "nc1_pinv",
    "dnc2_cond",
    "rank",
    "effective_rank",
    "singular_values",
    "gram",
    "negative_fraction",
    "warnings",
]


@pytest.fixture
def small(tiny_net):
    cfg = tiny_net(
        dataset="digits",
        classes=[0, 1, 2],
        n=6,
        n_test=2,
        batch_size=9,
        layers=2,
        width=5,
        backbone="mlp",
        backbone_width=8,
        reg="dufm",
        lam=0.3,
        lam_h=0.7,
    )
    data = load_net_data(cfg)
    torch.manual_seed(0)
    model = build_network(cfg, data.in_channels, tuple(data.train.images.shape[1:]))
    return cfg, model, data


def test_evaluate_returns_a_net_evaluation_with_the_old_keys(small):
    cfg, model, data = small
    ev = evaluate(cfg, model, data)
    assert isinstance(ev, NetEvaluation) and isinstance(ev.outcome, HeadOutcome)
    d = ev.to_dict()
    assert list(d) == EVAL_KEYS and isinstance(d["outcome"], dict)

    # the reference: one forward pass over each set in eval mode, the formulas written out in numpy
    model.eval()
    with torch.no_grad():
        x, y = data.train.batch(slice(None))
        out, feats = model(x)
        xt, yt = data.test.batch(slice(None))
        out_t, _ = model(xt)
    o, y = out.double().numpy(), y.numpy()
    K = 3
    Y = np.eye(K)[y]
    fit = 0.5 * np.mean(np.sum((o - Y) ** 2, axis=1))
    h1 = feats["H1"].double().numpy()
    reg_h1 = 0.5 * 0.7 * np.mean(np.sum(h1**2, axis=1))
    reg_w = 0.5 * 0.3 * sum(np.sum(w.detach().double().numpy() ** 2) for w in model.head_weights())
    assert d["train_acc"] == pytest.approx(np.mean(o.argmax(1) == y))
    assert d["test_acc"] == pytest.approx(np.mean(out_t.numpy().argmax(1) == yt.numpy()))
    assert d["fit"] == pytest.approx(fit, rel=1e-5)
    assert d["reg_h1"] == pytest.approx(reg_h1, rel=1e-5)
    assert d["reg_w"] == pytest.approx(reg_w, rel=1e-5)
    assert d["reg"] == pytest.approx(reg_h1 + reg_w, rel=1e-5)
    assert d["loss"] == pytest.approx(fit + reg_h1 + reg_w, rel=1e-5)
    assert d["test_fit"] == pytest.approx(
        0.5 * np.mean(np.sum((out_t.double().numpy() - np.eye(K)[yt]) ** 2, 1))
    )
    assert d["head_weight_norms"] == pytest.approx(
        [float(np.linalg.norm(w.detach().double().numpy())) for w in model.head_weights()]
    )
    bn = [m.weight.detach().double().numpy() for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert (d["bn_scale_norm"] is None) == (not bn)
    if bn:
        assert d["bn_scale_norm"] == pytest.approx(np.sqrt(sum(np.sum(g**2) for g in bn)))
    assert [m["name"] for m in d["layers"]] == ["H1", "H~2", "H2"]
    for m in d["layers"]:
        assert list(m) == LAYER_KEYS
        X = feats[m["key"]].double().numpy()  # (N, D)
        means = np.stack([X[y == c].mean(axis=0) for c in range(K)])  # (K, D)
        within = np.mean(np.sum((X - means[y]) ** 2, axis=1))
        between = np.mean(np.sum((means - X.mean(axis=0)) ** 2, axis=1))
        assert m["dnc1"] == pytest.approx(within / between, rel=1e-4)
        s = np.linalg.svd(means, compute_uv=False)
        assert m["singular_values"] == pytest.approx(list(s), rel=1e-4, abs=1e-6)
        assert m["rank"] == int(np.sum(s > cfg.rank_rtol * s[0]))
    assert d["outcome"]["classes"] == K and d["outcome"]["layers"] == 2

    assert ev["reg_w"] == ev.reg_w and ev["outcome"]["label"] == ev.outcome.label  # Mapping access
    assert NetEvaluation.from_dict(d) == ev
    assert {"epoch": 1, **ev.to_dict()}["outcome"] == ev.outcome.to_dict()  # the metrics.jsonl record
    json.dumps(d)


def test_net_evaluation_reads_an_old_metrics_record(tmp_path):
    """A ``metrics.jsonl`` record written by an earlier release (its outcome a plain dict)."""
    layer = {
        "layer": 1,
        "name": "H1",
        "kind": "post",
        "key": "H1",
        "dnc1": 0.5,
        "nc1_pinv": 0.25,
        "dnc2_cond": 2.0,
        "rank": 2,
        "effective_rank": 1.5,
        "singular_values": [2.0, 1.0],
        "gram": [[1.0, 0.5], [0.5, 0.25]],
        "negative_fraction": 0.0,
        "warnings": [],
    }
    outcome = {"label": "not_converged", "why": "training accuracy 0.5 < 0.99", "classes": 2, "layers": 1}
    old = {
        "epoch": 3,
        "lr": 0.05,
        "train_loss_epoch": 0.4,
        "epoch_time": 0.1,
        "train_acc": 0.5,
        "test_acc": None,
        "loss": 0.375,
        "fit": 0.25,
        "reg": 0.125,
        "reg_h1": 0.0,
        "reg_w": 0.125,
        "test_fit": None,
        "layers": [layer],
        "outcome": outcome,
    }
    path = tmp_path / "metrics.jsonl"
    path.write_text(json.dumps(old) + "\n")
    ev = NetEvaluation.from_dict(json.loads(path.read_text()))
    assert isinstance(ev.outcome, HeadOutcome) and ev.outcome.label == "not_converged"
    assert ev["epoch"] == 3 and ev.loss == 0.375 and ev.layers[0]["rank"] == 2 and ev.test_acc is None
    assert json.dumps(ev.to_dict()) + "\n" == path.read_text()


SUMMARY_KEYS = [
    "dataset",
    "classes",
    "num_classes",
    "n_train",
    "epochs_done",
    "epochs",
    "diverged",
    "device",
    "num_parameters",
    "epoch_time_mean_s",
    "elapsed_s",
    "train_loss_per_epoch",
    "until",
    "stop_reason",
]


def _state(losses, times):
    history = [
        {"epoch": i + 1, "train_loss": v, "epoch_time": t} for i, (v, t) in enumerate(zip(losses, times))
    ]
    return {"epoch": len(losses), "diverged": False, "elapsed": float(sum(times)), "history": history}


def test_run_summary_returns_a_net_summary_with_the_old_keys(small):
    cfg, model, data = small
    ev = evaluate(cfg, model, data).to_dict()
    last = {"epoch": 3, "lr": 0.05, "train_loss_epoch": 0.3, "epoch_time": 0.2, **ev}
    losses, times = [0.9, 0.5, 0.3], [0.25, 0.5, 0.2]
    summary = run_summary(cfg, _state(losses, times), last, torch.device("cpu"), 123, 18)
    assert isinstance(summary, NetSummary) and isinstance(summary.outcome, HeadOutcome)
    d = summary.to_dict()
    assert list(d) == SUMMARY_KEYS + ["epoch", "train_acc", "test_acc", "loss", "fit", "reg"] + [
        "layers",
        "ranks",
        "dnc1",
        "outcome",
    ]
    assert d["epoch_time_mean_s"] == pytest.approx((0.25 + 0.5 + 0.2) / 3)
    assert d["elapsed_s"] == pytest.approx(0.95) and d["train_loss_per_epoch"] == losses
    assert (d["dataset"], d["classes"], d["num_classes"], d["n_train"]) == ("digits", [0, 1, 2], 3, 18)
    assert (d["epochs_done"], d["diverged"], d["device"], d["num_parameters"]) == (3, False, "cpu", 123)
    for k in ("epoch", "train_acc", "test_acc", "loss", "fit", "reg"):
        assert d[k] == last[k]
    assert list(d["layers"]) == ["H1", "H~2", "H2"]
    for m in ev["layers"]:
        want = {k: m[k] for k in ("layer", "kind", "dnc1", "dnc2_cond", "rank", "effective_rank")}
        assert d["layers"][m["name"]] == want
        assert d["ranks"][m["name"]] == m["rank"] and d["dnc1"][m["name"]] == m["dnc1"]
    assert d["outcome"]["classes"] == 3
    assert summary["num_classes"] == summary.num_classes == 3  # Mapping access of earlier releases
    assert NetSummary.from_dict(d) == summary
    json.dumps(d)


def test_run_summary_without_an_evaluation_holds_the_loop_fields_only(small):
    cfg, _, _ = small
    summary = run_summary(cfg, _state([0.5], [1.0]), None, torch.device("cpu"), 7, 18)
    assert isinstance(summary, NetSummary) and summary.outcome is None and summary.epoch is None
    assert list(summary.to_dict()) == SUMMARY_KEYS
    diverged = {**_state([0.5], [1.0]), "diverged": True}
    summary = run_summary(cfg, diverged, None, torch.device("cpu"), 7, 18)
    assert list(summary) == SUMMARY_KEYS + ["outcome"] and summary.outcome.label == "diverged"


def test_a_summary_json_of_an_earlier_release_still_loads(tmp_path):
    """A ``summary.json`` written before results were typed (no ``outcome``, as before issue 22)."""
    old = {
        "dataset": "digits",
        "classes": None,
        "num_classes": 10,
        "n_train": 100,
        "epochs_done": 2,
        "epochs": 2,
        "diverged": False,
        "device": "cpu",
        "num_parameters": 1234,
        "epoch_time_mean_s": 0.5,
        "elapsed_s": 1.0,
        "train_loss_per_epoch": [0.5, 0.4],
        "epoch": 2,
        "train_acc": 0.75,
        "test_acc": None,
        "loss": 0.4,
        "fit": 0.3,
        "reg": 0.1,
        "layers": {
            "H1": {
                "layer": 1,
                "kind": "post",
                "dnc1": 0.5,
                "dnc2_cond": 2.0,
                "rank": 10,
                "effective_rank": 5.0,
            }
        },
        "ranks": {"H1": 10},
        "dnc1": {"H1": 0.5},
    }
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(old, indent=2) + "\n")
    summary = NetSummary.from_dict(json.loads(path.read_text()))
    assert summary.outcome is None and summary.ranks == {"H1": 10} and summary["train_acc"] == 0.75
    assert json.dumps(summary.to_dict(), indent=2) + "\n" == path.read_text()
