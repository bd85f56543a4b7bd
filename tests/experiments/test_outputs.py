"""Class means recomputed from trained L-DUFM parameters (:mod:`deepcollapse.experiments.outputs`)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from deepcollapse.experiments.outputs import ClassMeans, class_mean_matrices, forward_class_means


def _point(K=3, n=2, widths=(4, 5, 3), seed=0):
    rng = np.random.default_rng(seed)
    H1 = rng.standard_normal((widths[0], K * n))
    weights = [rng.standard_normal((widths[i + 1], widths[i])) for i in range(len(widths) - 1)]
    weights.append(rng.standard_normal((K, widths[-1])))
    return H1, weights


def test_forward_class_means_is_a_typed_result_with_the_dict_of_earlier_releases():
    K, n = 3, 2
    H1, weights = _point(K, n)
    m = forward_class_means(H1, weights, K)
    assert isinstance(m, ClassMeans) and list(m) == ["post", "pre"]
    assert len(m.post) == len(m.pre) == len(weights) and m.pre[0] is None
    H = H1
    for l, W in enumerate(weights[:-1], start=2):  # the forward pass of eq. (1), class means by hand
        Ht = W @ H
        H = np.maximum(Ht, 0.0)
        assert np.allclose(m.pre[l - 1], Ht.reshape(-1, K, n).mean(axis=2))
        assert np.allclose(m.post[l - 1], H.reshape(-1, K, n).mean(axis=2))
    assert m["post"] is m.post and m["pre"][1] is m.pre[1]  # read-only key access of the old dict
    d = m.to_dict()
    assert list(d) == ["post", "pre"] and d["pre"][0] is None and d["post"][1] == m.post[1].tolist()
    back = ClassMeans.from_dict(json.loads(json.dumps(d)))
    assert back == m and isinstance(back.post[0], np.ndarray) and back.pre[0] is None
    with pytest.raises(ValueError, match="multiple of classes"):
        forward_class_means(H1[:, :5], weights, K)


def test_class_mean_matrices_reads_one_run_of_a_folder(tmp_path):
    K, n = 3, 2
    points = [_point(K, n, seed=s) for s in (0, 1)]
    H1 = torch.stack([torch.from_numpy(p[0]) for p in points])
    weights = [torch.stack([torch.from_numpy(p[1][i]) for p in points]) for i in range(len(points[0][1]))]
    torch.save({"H1": H1, "weights": weights, "config": {}}, tmp_path / "params.pt")
    m = class_mean_matrices(tmp_path, 1, K)
    assert isinstance(m, ClassMeans)
    assert m == forward_class_means(points[1][0], points[1][1], K)
