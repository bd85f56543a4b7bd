"""The supervised loop on the bundled digits: loss falls, per-layer metrics are right, resume is exact."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from deepcollapse import ConfigError
from deepcollapse._core.io import finite_or_none
from deepcollapse.metrics.functional import collapse_metrics
from deepcollapse.nets.train import (
    NetConfig,
    NetSummary,
    build_network,
    evaluate,
    fit_loss,
    load_net_data,
    regularisation,
    resume_net,
    train_net,
)

torch.set_num_threads(1)

SMALL = dict(n=12, n_test=4, batch_size=24, eval_every=1)  # on top of TINY_NET (conftest)


def _records(run):
    return [json.loads(s) for s in (run / "metrics.jsonl").read_text().splitlines()]


def test_smoke_training_loss_falls_and_writes_layer_metrics(tmp_path, tiny_net):
    cfg = tiny_net(**{**SMALL, "epochs": 6})
    summary = train_net(cfg, tmp_path / "run", progress=False)
    run = tmp_path / "run"
    for name in ("config.yaml", "metrics.jsonl", "checkpoint.pt", "summary.json"):
        assert (run / name).is_file()
    recs = _records(run)
    assert [r["epoch"] for r in recs] == list(range(7))  # epoch 0 = initialisation
    losses = summary["train_loss_per_epoch"]
    assert len(losses) == 6 and losses[-1] < 0.8 * losses[0]
    assert recs[-1]["loss"] < recs[0]["loss"]
    assert recs[-1]["loss"] == pytest.approx(recs[-1]["fit"] + recs[-1]["reg"])
    names = [(r["layer"], r["kind"], r["name"]) for r in recs[-1]["layers"]]
    assert names == [
        (1, "post", "H1"),
        (2, "pre", "H~2"),
        (2, "post", "H2"),
        (3, "pre", "H~3"),
        (3, "post", "H3"),
    ]
    for layer in recs[-1]["layers"]:
        assert layer["dnc1"] > 0 and 1 <= layer["rank"] <= 10 and len(layer["singular_values"]) == 10
        assert np.array(layer["gram"]).shape == (10, 10)
    assert json.loads((run / "summary.json").read_text())["ranks"]["H~3"] == recs[-1]["layers"][3]["rank"]
    # the typed result is summary.json and reads back from it
    on_disk = json.loads((run / "summary.json").read_text())
    assert isinstance(summary, NetSummary) and finite_or_none(summary.to_dict()) == on_disk
    assert NetSummary.from_dict(on_disk) == summary and summary.epochs_done == summary["epochs_done"] == 6


def test_layer_metrics_match_full_batch_computation(tmp_path, tiny_net):
    cfg = tiny_net(**{**SMALL, "epochs": 2})
    train_net(cfg, tmp_path / "run", progress=False)
    data = load_net_data(cfg)
    model = build_network(cfg, data.in_channels)
    model.load_state_dict(torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)["model"])
    model.eval()
    with torch.no_grad():
        x, y = data.train.batch(slice(None))
        out, feats = model(x)
    last = _records(tmp_path / "run")[-1]
    assert last["train_acc"] == pytest.approx(float((out.argmax(1) == y).double().mean()))
    onehot = np.eye(10)[y.numpy()]
    assert last["fit"] == pytest.approx(
        0.5 * np.mean(np.sum((out.double().numpy() - onehot) ** 2, 1)), rel=1e-5
    )
    for rec in last["layers"]:
        H = feats[rec["key"]].double().numpy()  # (N, D), concatenated, not streamed
        ref = collapse_metrics(H, y.numpy(), num_classes=10, rtol=cfg.rank_rtol)
        assert rec["dnc1"] == pytest.approx(ref["nc1_trace_ratio"], rel=1e-4)
        if ref["nc2_cond"] is None:  # rank-deficient class means: undefined in both
            assert rec["dnc2_cond"] is None
        else:
            assert rec["dnc2_cond"] == pytest.approx(ref["nc2_cond"], rel=1e-4)
        assert rec["rank"] == ref["rank"]
        np.testing.assert_allclose(rec["singular_values"], ref["singular_values"], rtol=1e-4, atol=1e-6)
        # DNC1 and Gram from the definitions (formulas.md): Σ_W with 1/N, Σ_B with 1/K, G = M^T M / max|G|
        mu = np.stack([H[y.numpy() == c].mean(0) for c in range(10)])
        tr_w = np.mean(np.sum((H - mu[y.numpy()]) ** 2, 1))
        tr_b = np.mean(np.sum((mu - H.mean(0)) ** 2, 1))
        assert rec["dnc1"] == pytest.approx(tr_w / tr_b, rel=1e-4)
        G = mu @ mu.T
        np.testing.assert_allclose(rec["gram"], G / np.abs(G).max(), atol=2e-6)


def test_resume_after_interruption_is_bit_identical(tmp_path, tiny_net):
    cfg = tiny_net(**{**SMALL, "epochs": 3, "lr_schedule": "multistep", "lr_milestones": [0.5]})
    train_net(cfg, tmp_path / "full", progress=False)

    class Stop(Exception):
        pass

    def interrupt(epoch, record):
        if epoch == 2:
            raise Stop

    with pytest.raises(Stop):
        train_net(cfg, tmp_path / "cut", progress=False, callback=interrupt)
    assert [r["epoch"] for r in _records(tmp_path / "cut")] == [0, 1, 2]
    # a record written after the last checkpoint (interrupted between the two writes) must be dropped
    with open(tmp_path / "cut" / "metrics.jsonl", "a") as fh:
        fh.write(json.dumps({"epoch": 3, "loss": -1.0}) + "\n" + '{"epoch": 4, "los')
    resume_net(tmp_path / "cut", progress=False)
    a = torch.load(tmp_path / "full" / "checkpoint.pt", weights_only=False)
    b = torch.load(tmp_path / "cut" / "checkpoint.pt", weights_only=False)
    assert a["state"]["epoch"] == b["state"]["epoch"] == 3
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    strip = lambda rs: [{k: v for k, v in r.items() if k != "epoch_time"} for r in rs]
    assert strip(_records(tmp_path / "full")) == strip(_records(tmp_path / "cut"))

    # a finished 2-epoch run extended to 3 epochs equals the 3-epoch run (same lr: the drop is after epoch 2)
    train_net(cfg.replace(epochs=2, lr_milestones=[0.75]), tmp_path / "short", progress=False)
    resume_net(tmp_path / "short", epochs=3, progress=False)
    c = torch.load(tmp_path / "short" / "checkpoint.pt", weights_only=False)
    assert all(torch.equal(a["model"][k], c["model"][k]) for k in a["model"])


def test_regularisation_terms_by_hand(tiny_net):
    cfg = tiny_net(**{**SMALL, "reg": "dufm", "lam": 0.3, "lam_h": 0.7})
    data = load_net_data(cfg)
    model = build_network(cfg, 1)
    x, y = data.train.batch(slice(0, 10))
    out, feats = model(x)
    h1 = feats["H1"].detach().double().numpy()
    W = [w.detach().double().numpy() for w in model.head_weights()]
    reg_h1, reg_w = (t.detach() for t in regularisation(cfg, model, feats["H1"]))
    assert float(reg_h1) == pytest.approx(0.5 * 0.7 * np.mean(np.sum(h1**2, axis=1)), rel=1e-5)
    assert float(reg_w) == pytest.approx(0.5 * 0.3 * sum(np.sum(w**2) for w in W), rel=1e-5)
    std = cfg.replace(reg="standard")
    reg_h1, reg_w = (t.detach() for t in regularisation(std, model, feats["H1"]))
    params = [p.detach().double().numpy() for p in model.parameters()]
    assert float(reg_h1) == 0.0
    assert float(reg_w) == pytest.approx(0.5 * 0.3 * sum(np.sum(p**2) for p in params), rel=1e-5)
    assert [float(t) for t in regularisation(cfg.replace(reg="none"), model, feats["H1"])] == [0.0, 0.0]
    o = out.detach().double().numpy()
    out = out.detach()
    assert float(fit_loss(cfg, out, y)) == pytest.approx(
        0.5 * np.mean(np.sum((o - np.eye(10)[y]) ** 2, 1)), 1e-5
    )
    ce = -np.mean(o[np.arange(10), y] - np.log(np.exp(o).sum(1)))
    assert float(fit_loss(cfg.replace(loss="ce"), out, y)) == pytest.approx(ce, rel=1e-5)
    # the evaluation reports the same decomposition over the whole training set
    rec = evaluate(cfg, model, data)
    assert rec["reg_w"] == pytest.approx(0.5 * 0.3 * sum(np.sum(w**2) for w in W), rel=1e-5)


def _dufm_params(path, d1, width, K, R=2, layers=3):
    g = torch.Generator().manual_seed(7)
    dims = [d1] + [width] * (layers - 1) + [K]
    weights = [
        0.3 * torch.randn(R, dims[i + 1], dims[i], generator=g, dtype=torch.float64) for i in range(layers)
    ]
    path.mkdir()
    torch.save(
        {"H1": torch.randn(R, d1, 4, dtype=torch.float64), "weights": weights, "config": {}},
        path / "params.pt",
    )
    return weights


def test_frozen_dufm_head_trains_backbone_only(tmp_path, tiny_net):
    weights = _dufm_params(tmp_path / "dufm", d1=64, width=12, K=2)
    cfg = tiny_net(
        **{
            **SMALL,
            "classes": [0, 1],
            "n": 20,
            "batch_size": 10,
            "epochs": 2,
            "freeze_head": True,
            "head_init": str(tmp_path / "dufm"),
            "head_init_run": 1,
            "reg": "none",
        }
    )
    train_net(cfg, tmp_path / "run", progress=False)
    ck = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)["model"]
    for l, W in enumerate(weights):
        torch.testing.assert_close(ck[f"head.layers.{l}.weight"], W[1].float(), rtol=0, atol=0)
    init = build_network(cfg, 1).state_dict()
    assert not torch.equal(init["backbone.conv.weight"], ck["backbone.conv.weight"])
    # a head whose input width differs from the backbone's needs a projection
    _dufm_params(tmp_path / "d30", d1=30, width=12, K=2)
    bad = cfg.replace(head_init=str(tmp_path / "d30"))
    with pytest.raises(ConfigError, match="feature_dim == None .*d1 = 30"):
        train_net(bad, tmp_path / "bad", progress=False)
    ok = bad.replace(feature_dim=30, epochs=1)
    train_net(ok, tmp_path / "ok", progress=False)
    with pytest.raises(ConfigError, match="layers == 4, must equal the DUFM head's number of layers 3"):
        train_net(cfg.replace(layers=4), tmp_path / "bad2", progress=False)


def test_bad_runs_rejected(tmp_path, tiny_net):
    cfg = tiny_net(**{**SMALL, "epochs": 1})
    train_net(cfg, tmp_path / "run", progress=False)
    with pytest.raises(ConfigError, match="must be a new or empty folder .*deepcollapse net resume"):
        train_net(cfg, tmp_path / "run", progress=False)
    train_net(cfg, tmp_path / "run", progress=False, force=True)
    big = NetConfig(dataset="digits", classes=[0, 1], batch_size=1000, device="cpu")
    with pytest.raises(ConfigError, match=r"batch_size == 1000, must be <= the training set size \d+"):
        train_net(big, tmp_path / "big", progress=False)
    with pytest.raises(ConfigError, match="must be a net run folder"):
        resume_net(tmp_path / "nothing", progress=False)


def test_divergence_is_reported_not_raised(tmp_path, tiny_net):
    cfg = tiny_net(**{**SMALL, "epochs": 3, "lr": 1e6, "momentum": 0.0})
    summary = train_net(cfg, tmp_path / "run", progress=False)
    assert summary["diverged"] is True and summary["epochs_done"] < 3
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["diverged"] is True
    # the result holds exactly the keys summary.json was written with, in the same order
    on_disk = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert list(summary) == list(on_disk) and finite_or_none(summary.to_dict()) == on_disk


def test_lam_h_dataset_scale_multiplies_by_training_set_size(tiny_net):
    cfg = tiny_net(**{**SMALL, "reg": "dufm", "lam": 0.0, "lam_h": 0.01, "lam_h_scale": "dataset"})
    data = load_net_data(cfg)
    model = build_network(cfg, 1).eval()
    with torch.no_grad():
        x, _ = data.train.batch(slice(0, 8))
        _, feats = model(x)
        h1 = feats["H1"].double().numpy()
        reg_h1, _ = regularisation(cfg, model, feats["H1"], n_train=len(data.train))
        ref = 0.5 * 0.01 * len(data.train) * np.mean(np.sum(h1**2, axis=1))
        assert float(reg_h1) == pytest.approx(ref, rel=1e-5)
        # over the whole training set this is the DUFM term (λ_H1/2)‖H1‖_F² of eq. (1)
        x_all, _ = data.train.batch(slice(None))
        H1 = model(x_all)[1]["H1"].double().numpy()
    assert evaluate(cfg, model, data)["reg_h1"] == pytest.approx(0.5 * 0.01 * np.sum(H1**2), rel=1e-5)


def test_cifar_files_train_end_to_end(tmp_path):
    """Three-channel 32×32 path: tiny CIFAR-10 pickle batches written in the real format, one epoch."""
    import pickle

    folder = tmp_path / "data" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        blob = {b"data": rng.integers(0, 256, size=(10, 3072), dtype=np.uint8), b"labels": list(range(10))}
        with open(folder / name, "wb") as fh:
            pickle.dump(blob, fh, protocol=2)
    cfg = NetConfig(
        dataset="cifar10",
        data_dir=str(tmp_path / "data"),
        classes=[2, 5, 7],
        layers=2,
        width=8,
        batch_size=5,
        epochs=1,
        device="cpu",
        threads=1,
    )
    summary = train_net(cfg, tmp_path / "run", progress=False)
    assert summary["n_train"] == 15 and summary["num_classes"] == 3
    assert set(summary["ranks"]) == {"H1", "H~2", "H2"}
