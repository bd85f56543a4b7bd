"""Typed results of the slices, the descent probe and describe_solution: the type, the old keys, the round
trip through ``to_dict`` and the values against eq. (1) written out with explicit numpy matrices."""

from __future__ import annotations

import doctest
import importlib
import json

import numpy as np
import pytest

from deepcollapse.landscape.piecewise import Problem
from deepcollapse.landscape.probes import DescentProbe, descent_probe
from deepcollapse.landscape.search_state import SolutionDescription, describe_solution
from deepcollapse.landscape.slices import DescentSlice, LossSlices, descent_slice, loss_slices

LAM_H, LAM_W = 0.05, (0.1, 0.2)
PROBLEM = Problem.make(2, 2, LAM_H, LAM_W, 2)  # K = 2, n = 2, L = 2, MSE + ReLU
H1 = np.array([[1.0, 0.8, -0.5, 0.2], [0.1, 0.3, 1.2, 0.9]])  # (d_1, K n), columns ordered by class
W1 = np.array([[1.0, -0.5], [0.3, 1.1], [-0.2, 0.4]])  # (3, 2)
W2 = np.array([[0.9, 0.1, -0.3], [-0.4, 0.8, 0.5]])  # (K, 3)
SHAPES = [H1.shape, W1.shape, W2.shape]
X = np.concatenate([H1.ravel(), W1.ravel(), W2.ravel()])
Y = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])


def _f(x: np.ndarray) -> float:
    """Eq. (1) by hand at the flat point ``x``."""
    a, b = H1.size, H1.size + W1.size
    H, A, B = x[:a].reshape(H1.shape), x[a:b].reshape(W1.shape), x[b:].reshape(W2.shape)
    fit = float(np.sum((B @ np.maximum(A @ H, 0.0) - Y) ** 2)) / (2 * 4)
    reg = (
        LAM_H / 2 * float(np.sum(H**2))
        + LAM_W[0] / 2 * float(np.sum(A**2))
        + LAM_W[1] / 2 * float(np.sum(B**2))
    )
    return fit + reg


def _directions() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    return rng.standard_normal(X.size), rng.standard_normal(X.size)


def test_loss_slices_typed_and_by_hand():
    v1, v2 = _directions()
    sl = loss_slices([H1, W1, W2], PROBLEM, [v1, v2], radius=0.3, points=5, grid=3)
    assert isinstance(sl, LossSlices) and list(sl) == ["t", "f1", "s", "f2", "radius", "loss"]
    assert sl["f1"] is sl.f1 and sl.radius == 0.3
    u1, u2 = v1 / np.linalg.norm(v1), v2 / np.linalg.norm(v2)
    assert np.allclose(sl.t, [-0.3, -0.15, 0.0, 0.15, 0.3])
    assert sl.f1 == pytest.approx([_f(X + t * u1) for t in sl.t], rel=1e-13)
    by_hand = [[_f(X + a * u1 + b * u2) for a in sl.s] for b in sl.s]
    assert np.allclose(sl.f2, by_hand, rtol=1e-13, atol=0)
    assert sl.loss == pytest.approx(_f(X), rel=1e-14)
    back = LossSlices.from_dict(sl.to_dict())
    assert back == sl and isinstance(back.f2, np.ndarray) and back.f2.shape == (3, 3)
    assert json.dumps(sl.to_dict()) == json.dumps({k: np.asarray(v).tolist() for k, v in sl.items()})


def test_descent_slice_typed_and_by_hand():
    v1, _ = _directions()
    zoom = descent_slice([H1, W1, W2], PROBLEM, v1, 0.01, span=2.0, points=5)
    assert isinstance(zoom, DescentSlice) and list(zoom) == ["a", "f", "step", "loss"]
    assert 0.01 in zoom.a and 0.0 in zoom.a and zoom["step"] == 0.01 and np.all(np.diff(zoom.a) > 0)
    assert zoom.a[0] == pytest.approx(-0.02) and zoom.a[-1] == pytest.approx(0.02)
    u = v1 / np.linalg.norm(v1)
    assert zoom.f == pytest.approx([_f(X + a * u) for a in zoom.a], rel=1e-13)
    assert DescentSlice.from_dict(zoom.to_dict()) == zoom


def test_descent_probe_typed_and_by_hand():
    v1, v2 = _directions()
    probe = descent_probe([H1, W1, W2], PROBLEM, [np.zeros_like(v1), v1, v2])
    assert isinstance(probe, DescentProbe) and list(probe) == ["delta", "step", "direction"]
    f0, scale = _f(X), float(np.linalg.norm(X))
    tries = [
        (_f(X - scale * 10.0**-k * v / np.linalg.norm(v)) - f0, scale * 10.0**-k, i)
        for i, v in ((1, v1), (2, v2))
        for k in range(1, 11)
    ]
    delta, step, direction = min(tries, key=lambda t: t[0])
    assert probe.direction == direction == probe["direction"] and probe.step == pytest.approx(step, rel=1e-15)
    assert probe.delta == pytest.approx(delta, rel=1e-10, abs=1e-15)
    assert DescentProbe.from_dict(probe.to_dict()) == probe
    none = descent_probe([H1, W1, W2], PROBLEM, [np.zeros_like(v1)])
    assert none.to_dict() == {"delta": float("inf"), "step": None, "direction": None}


def test_landscape_holds_typed_probes_and_writes_the_same_json():
    from deepcollapse.landscape.verdicts import Landscape, landscape

    land = landscape([H1, W1, W2], PROBLEM, k=2, reduce=False)
    assert isinstance(land.descent_probe, DescentProbe)  # the gradient is not zero here
    assert land["descent_probe"]["delta"] == land.descent_probe.delta
    back = Landscape.from_dict(json.loads(json.dumps(land.to_file_dict())))
    assert isinstance(back.descent_probe, DescentProbe) and back == land.to_file_dict()


def test_describe_solution_typed_and_by_hand():
    desc = describe_solution(H1, [W1, W2], PROBLEM)
    assert isinstance(desc, SolutionDescription)
    assert list(desc)[-3:] == ["grams", "loss_dnc", "loss_srg"] and "classification" in desc
    M1 = H1.reshape(2, 2, 2).mean(axis=2)  # (d_1, K) class means
    M2 = np.maximum(W1 @ H1, 0.0).reshape(3, 2, 2).mean(axis=2)
    for G, M in zip(desc.grams, (M1, M2)):
        assert np.allclose(G, M.T @ M, rtol=1e-13, atol=1e-15)
    assert desc.ranks == [np.linalg.matrix_rank(M1), np.linalg.matrix_rank(M2)] == desc["ranks"]
    assert desc.final_loss == pytest.approx(_f(X), rel=1e-13)
    assert desc.loss_dnc is not None and desc.loss_dnc > 0
    back = SolutionDescription.from_dict(desc.to_dict())
    assert back == desc and isinstance(back.grams[0], np.ndarray)


@pytest.mark.parametrize(
    "module",
    ["deepcollapse.landscape.slices", "deepcollapse.landscape.probes", "deepcollapse.landscape.search_state"],
)
def test_docstring_examples_run(module):
    result = doctest.testmod(
        importlib.import_module(module), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 0 and result.failed == 0, result
