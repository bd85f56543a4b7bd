"""Solution files (.npz) and `check_solution`: eq. (1) re-evaluated from explicit matrices."""

from __future__ import annotations

import numpy as np
import pytest

from deepcollapse._core.checks import ConfigError
from deepcollapse.landscape.solution_file import check_solution, load_solution, save_solution


def _point(rng: np.random.Generator, K: int = 3, n: int = 2, d: int = 4, L: int = 3) -> tuple:
    H1 = rng.standard_normal((d, K * n))
    weights = [rng.standard_normal((d, d)) for _ in range(L - 1)] + [rng.standard_normal((K, d))]
    return H1, weights


def _by_hand(H1: np.ndarray, weights: list, n: int, lam_h: float, lam_w: list) -> float:
    """Eq. (1) written out independently: a loop over samples, ReLU as max(x, 0)."""
    K = weights[-1].shape[0]
    total = 0.0
    for i in range(H1.shape[1]):
        h = H1[:, i]
        for W in weights[:-1]:
            h = np.maximum(W @ h, 0.0)
        y = np.zeros(K)
        y[i // n] = 1.0
        total += float(np.sum((weights[-1] @ h - y) ** 2))
    reg = lam_h / 2 * float(np.sum(H1**2)) + sum(l / 2 * float(np.sum(W**2)) for l, W in zip(lam_w, weights))
    return total / (2 * H1.shape[1]) + reg


def test_roundtrip_and_check(tmp_path):
    rng = np.random.default_rng(0)
    H1, weights = _point(rng)
    lam_w = [0.01, 0.02, 0.03]
    path = save_solution(tmp_path / "s.npz", H1, weights, n=2, lam_h=0.005, lam_w=lam_w, extra={"loss": 1.25})
    sol = load_solution(path)
    assert np.array_equal(sol["H1"], H1) and all(
        np.array_equal(a, b) for a, b in zip(sol["weights"], weights)
    )
    r = check_solution(path)
    expected = _by_hand(H1, weights, 2, 0.005, lam_w)
    assert r["loss"] == pytest.approx(expected, rel=1e-13)
    assert r["claimed_loss"] == 1.25 and r["difference"] == pytest.approx(expected - 1.25)
    assert r["classes"] == 3 and r["layers"] == 3 and r["widths"] == [4, 4, 4]


def test_missing_arrays_listed(tmp_path):
    np.savez(tmp_path / "bad.npz", H1=np.zeros((2, 4)))
    with pytest.raises(ConfigError, match=r"must hold H1, W_1 \.\. W_L, n, lam_h, lam_w"):
        load_solution(tmp_path / "bad.npz")
    (tmp_path / "text.npz").write_text("not a zip")
    with pytest.raises(ConfigError, match=r"text.npz: not a readable \.npz archive \(unrecognised content\)"):
        load_solution(tmp_path / "text.npz")
    with pytest.raises(ConfigError, match=r"absent.npz: no such file, must be an existing \.npz file"):
        load_solution(tmp_path / "absent.npz")


def test_shapes_that_do_not_chain_name_the_array(tmp_path):
    rng = np.random.default_rng(1)
    H1, weights = _point(rng)
    weights[1] = rng.standard_normal((4, 5))
    save_solution(tmp_path / "s.npz", H1, weights, n=2, lam_h=0.01, lam_w=[0.01] * 3)
    with pytest.raises(ConfigError, match=r"W_2\.shape == \(4, 5\), must be \(d, 4\) to chain with W_1"):
        load_solution(tmp_path / "s.npz")


def test_non_finite_entries_name_the_array(tmp_path):
    rng = np.random.default_rng(2)
    H1, weights = _point(rng)
    weights[0][0, 0] = np.nan
    save_solution(tmp_path / "s.npz", H1, weights, n=2, lam_h=0.01, lam_w=[0.01] * 3)
    with pytest.raises(ConfigError, match="W_1 has 1 non-finite entries"):
        check_solution(tmp_path / "s.npz")


def test_columns_must_be_k_times_n(tmp_path):
    rng = np.random.default_rng(3)
    H1, weights = _point(rng)
    save_solution(tmp_path / "s.npz", H1, weights, n=3, lam_h=0.01, lam_w=[0.01] * 3)
    with pytest.raises(ConfigError, match=r"must have N == K n == 3 x 3 == 9 columns"):
        load_solution(tmp_path / "s.npz")


def test_load_solution_is_typed_and_mapping(tmp_path):
    """load_solution gives a LoadedSolution: attributes, the old dict keys, the theory's Problem/Solution."""
    import dataclasses

    from deepcollapse.landscape.solution_file import LoadedSolution
    from deepcollapse.theory.layers import Solution
    from deepcollapse.theory.problem import Problem

    rng = np.random.default_rng(3)
    H1, weights = _point(rng, K=3, n=2, d=4, L=3)
    lam_w = [0.01, 0.02, 0.03]
    path = save_solution(tmp_path / "s.npz", H1, weights, n=2, lam_h=0.005, lam_w=lam_w, extra={"loss": 2.5})
    sol = load_solution(path)
    assert isinstance(sol, LoadedSolution)
    assert list(sol) == ["family", "H1", "weights", "n", "lam_h", "lam_w", "classes", "arrays"]
    assert sol["H1"] is sol.H1 and np.array_equal(sol.H1, H1) and sol.classes == 3 and sol["n"] == 2
    assert all(np.array_equal(a, b) for a, b in zip(sol.weights, weights))
    assert sol.layers == 3 and sol.widths == [4, 4, 4] and sol.claimed_loss == 2.5
    assert dict(sol).keys() == sol.to_dict().keys() and sol.to_dict()["family"] == "mse+relu"
    back = LoadedSolution.from_dict(sol.to_dict())
    assert back == sol and isinstance(back.H1, np.ndarray) and back.family == sol.family
    assert isinstance(sol.problem, Problem)
    assert sol.problem == Problem(3, 3, 2, 0.005, (0.01, 0.02, 0.03), widths=(4, 4, 4))
    assert isinstance(sol.solution, Solution)
    expected = _by_hand(H1, weights, 2, 0.005, lam_w)
    assert sol.solution.loss == pytest.approx(expected, rel=1e-13)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sol.n = 3  # type: ignore[misc]


def test_check_solution_is_typed(tmp_path):
    """check_solution returns a SolutionCheck; values against explicit numpy matrices; JSON unchanged."""
    import json

    from deepcollapse.landscape.solution_file import SolutionCheck

    H1 = np.array([[1.0, 2.0, -1.0, 0.5], [0.0, 1.0, 1.0, -2.0]])  # d_1 = 2, K = 2, n = 2
    W1 = np.array([[1.0, -1.0], [0.5, 2.0], [1.0, 1.0]])  # (3, 2)
    W2 = np.array([[0.5, 0.0, 1.0], [-1.0, 1.0, 0.0]])  # (K, 3)
    path = save_solution(
        tmp_path / "s.npz", H1, [W1, W2], n=2, lam_h=0.1, lam_w=[0.2, 0.3], extra={"loss": 1.0}
    )
    r = check_solution(path)
    assert isinstance(r, SolutionCheck)
    Y = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    out = W2 @ np.maximum(W1 @ H1, 0.0)
    fit = float(np.sum((out - Y) ** 2)) / (2 * 4)
    reg = 0.1 / 2 * float(np.sum(H1**2)) + 0.2 / 2 * float(np.sum(W1**2)) + 0.3 / 2 * float(np.sum(W2**2))
    assert r.fit == pytest.approx(fit, rel=1e-14) and r.reg == pytest.approx(reg, rel=1e-14)
    assert r["loss"] == pytest.approx(fit + reg, rel=1e-14) and r.difference == pytest.approx(fit + reg - 1.0)
    assert (r.classes, r.layers, r.n, r.widths) == (2, 2, 2, [2, 3])
    assert (r.lam_h, r.lam_w, r.family) == (0.1, [0.2, 0.3], "mse+relu")
    assert list(r) == [
        "loss", "fit", "reg", "claimed_loss", "difference", "classes", "layers", "n", "widths", "lam_h",
        "lam_w", "family",
    ]  # fmt: skip
    assert SolutionCheck.from_dict(r.to_dict()) == r
    assert json.dumps(r.to_dict()) == json.dumps(dict(r))  # `theory check --json` writes the same bytes


def test_solution_file_doctests():
    import doctest

    import deepcollapse.landscape.solution_file as module

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0, result


def test_files_are_compressed_and_uncompressed_ones_still_load(tmp_path):
    """save_solution deflates (a collapsed H_1 repeats each class column n times); an uncompressed ``.npz``
    of an earlier release (``numpy.savez``) with the same arrays loads to the same point."""
    import zipfile

    rng = np.random.default_rng(0)
    K, n, d = 3, 40, 6
    H1 = np.repeat(rng.normal(size=(d, K)), n, axis=1)  # collapsed: n equal columns per class
    weights = [rng.normal(size=(d, d)), rng.normal(size=(K, d))]
    path = save_solution(tmp_path / "new.npz", H1, weights, n=n, lam_h=0.01, lam_w=[0.01, 0.01])
    with zipfile.ZipFile(path) as z:
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist())
    old = tmp_path / "old.npz"
    np.savez(old, **dict(np.load(path)))  # the same arrays (checksum included), stored
    assert path.stat().st_size < old.stat().st_size / 2
    a, b = load_solution(path), load_solution(old)
    assert np.array_equal(a.H1, b.H1) and all(np.array_equal(x, y) for x, y in zip(a.weights, b.weights))
    assert check_solution(old).loss == check_solution(path).loss
