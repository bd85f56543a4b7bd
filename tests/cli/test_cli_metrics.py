"""``deepcollapse metrics FILE.npz [--json]``: keys, nulls with warnings, and exit code 2 on bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from deepcollapse.cli import main


def data(seed=0, K=4, n=10, D=6):
    rng = np.random.default_rng(seed)
    y = np.arange(K).repeat(n)
    H = 3 * rng.normal(size=(K, D))[y] + rng.normal(size=(K * n, D))
    return H, y


def run_json(capsys, *argv):
    code = main(["metrics", *argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_json_keys_and_values(tmp_path, capsys, required_metric_keys):
    H, y = data()
    W = np.random.default_rng(1).normal(size=(4, 6))
    f = tmp_path / "feat.npz"
    np.savez(f, features=H, labels=y, weights=W)
    code, out = run_json(capsys, str(f))
    assert code == 0
    for key in required_metric_keys:
        assert key in out
    assert out["warnings"] == []
    # independent reference: definitions in numpy
    mu = np.stack([H[y == c].mean(0) for c in range(4)])
    sw = sum(np.sum((H[y == c] - mu[c]) ** 2) for c in range(4)) / H.shape[0]
    sb = np.sum((mu - H.mean(0)) ** 2) / 4
    assert out["nc1_trace_ratio"] == pytest.approx(sw / sb, rel=1e-12)
    np.testing.assert_allclose(out["singular_values"], np.linalg.svd(mu.T, compute_uv=False), rtol=1e-12)
    assert len(out["singular_values"]) == 4
    assert out["rank"] == 4
    assert out["nc2_cond"] == pytest.approx(np.linalg.cond(mu.T), rel=1e-10)
    assert out["nc4_agreement"] is not None


def test_table_output(tmp_path, capsys):
    H, y = data(1)
    f = tmp_path / "feat.npz"
    np.savez(f, features=H, labels=y)
    assert main(["metrics", str(f)]) == 0
    text = capsys.readouterr().out
    assert "nc1_trace_ratio" in text and "singular_values" in text and "ncc_accuracy" in text


def test_identical_means_null_with_warnings(tmp_path, capsys):
    X = np.random.default_rng(2).normal(size=(5, 3))
    f = tmp_path / "same.npz"
    np.savez(f, features=np.vstack([X] * 3), labels=np.arange(3).repeat(5))
    code, out = run_json(capsys, str(f))
    assert code == 0
    assert out["nc1_trace_ratio"] is None and out["cdnv"] is None and out["nc2_cond"] is None
    assert any("nc1_trace_ratio" in w and "identical" in w for w in out["warnings"])


def test_drop_empty_classes_flag(tmp_path, capsys):
    H, y = data(3)
    y = np.where(y == 2, 3, y)
    f = tmp_path / "empty.npz"
    np.savez(f, features=H, labels=y)
    assert main(["metrics", str(f), "--json"]) == 2
    err = capsys.readouterr().err
    assert "deepcollapse: error: labels has no sample of class(es) [2]" in err
    assert "--drop-empty-classes" in err
    code, out = run_json(capsys, str(f), "--drop-empty-classes")
    assert code == 0 and out["classes"] == [0, 1, 3]


@pytest.mark.parametrize(
    "arrays, message",
    [
        (
            {"features": np.zeros((5, 2)), "labels": np.zeros(4, dtype=int)},
            "labels.shape == (4,), must be (5,)",
        ),
        ({"features": np.ones((4, 2)), "labels": np.array([0, 1, 2, -1])}, "labels contains -1"),
        ({"features": np.full((4, 2), np.nan), "labels": np.array([0, 1, 0, 1])}, "non-finite"),
        (
            {"features": np.ones((4, 2)), "labels": np.zeros(4, dtype=int)},
            "number of classes with samples == 1",
        ),
        ({"features": np.ones((4, 2))}, "must contain 'labels'"),
        (
            {"features": np.ones((4, 2)), "labels": np.arange(4), "extra": np.ones(2)},
            "unknown keys ['extra']",
        ),
    ],
)
def test_bad_input_exit_code_2(tmp_path, capsys, arrays, message):
    f = tmp_path / "bad.npz"
    np.savez(f, **arrays)
    assert main(["metrics", str(f), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("deepcollapse: error: ")
    assert message in captured.err


def test_missing_file_and_bad_options(tmp_path, capsys):
    assert main(["metrics", str(tmp_path / "nope.npz")]) == 2
    assert "must be an existing .npz file" in capsys.readouterr().err
    H, y = data(4)
    f = tmp_path / "feat.npz"
    np.savez(f, features=H, labels=y)
    assert main(["metrics", str(f), "--rtol", "-1"]) == 2
    assert "--rtol == -1.0, must be > 0.0" in capsys.readouterr().err
    assert main(["metrics", str(f), "--num-classes", "3"]) == 2
    assert "labels contains [3], must be in 0..2" in capsys.readouterr().err
