"""The problem value (:class:`deepcollapse.theory.Problem`): validation, ``reduced()``, the Problem forms of
the theory functions, and the one float64 evaluation of eq. (1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import deepcollapse.theory as th
from deepcollapse import ConfigError
from deepcollapse.landscape import piecewise
from deepcollapse.theory import Problem, evaluate, problem_of

BASE = {"classes": 3, "layers": 2, "n": 4, "lam_h": 0.01, "lam_w": 0.02}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"classes": 1}, r"^classes == 1, must be >= 2\.$"),
        ({"layers": 0}, r"^layers == 0, must be >= 1\.$"),
        ({"n": 0}, r"^n == 0, must be >= 1\.$"),
        ({"lam_h": -1.0}, r"^lam_h == -1\.0, must be >= 0"),
        (
            {"lam_w": [0.1, 0.2, 0.3]},
            r"^lam_w has 3 values \(0\.1, 0\.2, 0\.3\), must have 1 or layers = 2\.$",
        ),
        ({"lam_w": [0.1, -0.2]}, r"^lam_w\[1\] == -0\.2, must be >= 0"),
        ({"widths": [4]}, r"^widths == \[4\], must be None, one int or a list of layers = 2 ints\.$"),
        ({"widths": [4, 0]}, r"^widths\[1\] == 0, must be >= 1\.$"),
        ({"loss": "hinge"}, r"^loss == 'hinge', must be one of"),
        ({"activation": "relu_eps"}, r"^eps == None, must be > 0"),
        ({"eps": 0.1}, r"^eps == 0\.1, must be None"),
    ],
)
def test_invalid_fields_raise_one_line_errors_naming_the_field(change: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        Problem(**{**BASE, **change})
    assert "\n" not in str(info.value)


def test_fields_are_normalised_once_and_the_value_is_immutable() -> None:
    p = Problem(classes=3, layers=2, n=4, lam_h=1, lam_w="0.01,0.02", widths=5)
    assert p.lam_h == 1.0 and isinstance(p.lam_h, float)
    assert p.lam_w == (0.01, 0.02) and p.widths == (5, 5) and p.N == 12
    assert p.family.name == "mse+relu" and p.Lambda == pytest.approx(4 * 1.0 * 0.01 * 0.02)
    assert np.array_equal(p.targets(), np.kron(np.eye(3), np.ones((1, 4))))
    with pytest.raises(AttributeError):
        p.n = 2  # type: ignore[misc]
    assert Problem.from_dict(p.to_dict()) == p
    assert Problem(**BASE).to_dict()["widths"] is None


def test_regularised_and_the_dict_form_refuse_what_the_closed_forms_cannot_take() -> None:
    assert Problem(**BASE).regularised() == Problem(**BASE)
    with pytest.raises(ConfigError, match=r"^lam_h == 0\.0, must be > 0"):
        Problem(**{**BASE, "lam_h": 0.0}).regularised()
    with pytest.raises(ConfigError, match=r"^lam_w\[0\] == 0\.0, must be > 0"):
        Problem(**{**BASE, "lam_w": [0.0, 0.1]}).regularised()
    with pytest.raises(ConfigError, match=r"^lam_h == 0\.0, must be > 0"):
        th.loss_dnc(3, 2, 4, 0.0, 0.1)  # the keyword form validates through the same value
    with pytest.raises(ConfigError, match=r"^problem key 'width' is unknown"):
        Problem.from_dict({**BASE, "width": 3})
    with pytest.raises(ConfigError, match=r"^n is given with a Problem, must be left out"):
        problem_of(Problem(**BASE), n=3)
    with pytest.raises(ConfigError, match=r"^lam_w is missing"):
        problem_of(3, 2, 4, 0.01)


def _explicit_eq1(
    H1: np.ndarray, weights: list[np.ndarray], K: int, lam_h: float, lams: list[float]
) -> float:
    """Eq. (1) written out here with explicit matrices (MSE + ReLU), independent of the package."""
    N = H1.shape[1]
    Y = np.zeros((K, N))
    for i in range(N):
        Y[i // (N // K), i] = 1.0
    H = H1
    for W in weights[:-1]:
        H = np.where(W @ H > 0, W @ H, 0.0)
    E = weights[-1] @ H - Y
    reg = lam_h / 2 * np.sum(H1 * H1) + sum(lam / 2 * np.sum(W * W) for lam, W in zip(lams, weights))
    return float(np.sum(E * E) / (2 * N) + reg)


@pytest.mark.parametrize(("K", "L", "n"), [(2, 1, 3), (3, 3, 5), (6, 4, 2)])
def test_reduced_problem_has_the_value_of_the_collapsed_n_sample_point(K: int, L: int, n: int) -> None:
    rng = np.random.default_rng(K * 100 + L)
    d = K + 2
    lam_h, lams = 0.003, [0.002 * (l + 1) for l in range(L)]
    M1 = rng.standard_normal((d, K))
    weights = [rng.standard_normal((d, d)) / math.sqrt(d) for _ in range(L - 1)] + [
        rng.standard_normal((K, d))
    ]
    H1 = np.kron(M1, np.ones((1, n)))  # every sample equals its class mean
    p = Problem(K, L, n, lam_h, lams)
    red = p.reduced()
    assert (red.n, red.lam_h, red.lam_w, red.classes) == (1, n * lam_h, p.lam_w, K)
    at_n = _explicit_eq1(H1, weights, K, lam_h, lams)
    at_1 = _explicit_eq1(M1, weights, K, n * lam_h, lams)
    assert at_n == pytest.approx(at_1, rel=1e-12)
    assert evaluate(H1, weights, p).total == pytest.approx(at_n, rel=1e-12)
    assert evaluate(M1, weights, red).total == pytest.approx(at_1, rel=1e-12)


def test_reduction_holds_for_cross_entropy_too() -> None:
    rng = np.random.default_rng(5)
    K, n, d = 4, 3, 6
    M1, W1, W2 = rng.standard_normal((d, K)), rng.standard_normal((d, d)), rng.standard_normal((K, d))
    p = Problem(K, 2, n, 0.01, 0.02, loss="ce", activation="relu_eps", eps=0.2)
    full = evaluate(np.kron(M1, np.ones((1, n))), [W1, W2], p).total
    assert full == pytest.approx(evaluate(M1, [W1, W2], p.reduced()).total, rel=1e-12)


def test_keyword_forms_equal_the_problem_forms() -> None:
    args = (6, 4, 3, 0.004, [0.004, 0.003, 0.005, 0.004])
    p = Problem(*args)
    assert th.loss_dnc(p) == th.loss_dnc(*args) == th.loss_dnc(problem=p)
    assert th.loss_srg(p, construction="def11.2") == th.loss_srg(*args, construction="def11.2")
    assert th.compare(p).to_dict() == th.compare(*args).to_dict() == th.compare(problem=p).to_dict()
    for make in (th.dnc_solution, th.srg_solution):
        a, b = make(p, width=8), make(*args, width=8)
        assert a.loss == b.loss and all(
            np.array_equal(x, y) for x, y in zip([a.H1, *a.weights], [b.H1, *b.weights])
        )
    assert th.linear_optimum(p).to_dict() == th.linear_optimum(*args).to_dict()
    small = (3, 2, 2, 0.01, 0.02)
    assert th.ce_dnc(Problem(*small)).to_dict() == th.ce_dnc(*small).to_dict()
    fam = Problem(*small, loss="ce", activation="relu")
    assert (
        th.compare_family(fam).to_dict() == th.compare_family(*small, loss="ce", activation="relu").to_dict()
    )


def test_the_landscape_problem_is_the_theory_problem() -> None:
    assert piecewise.Problem is Problem
    p = piecewise.Problem.make(3, 5, 0.01, [0.01, 0.02, 0.03], 3)  # the landscape's former argument order
    assert (p.classes, p.layers, p.n, p.lam_h, p.lam_w) == (3, 3, 5, 0.01, (0.01, 0.02, 0.03))
    with pytest.raises(ConfigError, match=r"^lam_h == 0\.0, must be > 0"):
        piecewise.Problem.make(3, 5, 0.0, 0.01, 3)


def test_the_landscape_value_is_the_theory_objective() -> None:
    rng = np.random.default_rng(2)
    K, n, d = 3, 2, 5
    params = [rng.standard_normal((d, K * n)), rng.standard_normal((d, d)), rng.standard_normal((K, d))]
    p = Problem(K, 2, n, 0.01, [0.02, 0.03])
    assert piecewise.value(params, p) == evaluate(params[0], params[1:], p).total
    assert (
        evaluate(params[0], params[1:], p).total
        == th.dufm_objective(params[0], params[1:], 0.01, [0.02, 0.03]).total
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"classes": 1},
        {"n": 0},
        {"lam_h": -1.0},
        {"lam_w": [0.1, -0.2, 0.1]},
        {"lam_w": "0.1,0.2"},
        {"classes": "three"},
    ],
)
def test_the_configs_validate_the_problem_fields_as_problem_does(bad):
    """One validation of the problem's fields (``_core.problem_fields.check_problem_fields``): ``Problem``,
    ``DUFMConfig`` and ``SearchConfig`` give the same one-line error for the same bad field (issue 30)."""
    from deepcollapse.dufm.config import DUFMConfig
    from deepcollapse.landscape.search_config import SearchConfig

    base = {"classes": 3, "layers": 3, "n": 2, "lam_h": 0.1, "lam_w": [0.1] * 3}
    messages = set()
    for make in (
        lambda kw: Problem(**kw),
        lambda kw: DUFMConfig(**kw, width=4, runs=1, steps=1),
        lambda kw: SearchConfig(**kw, width=4, runs=1, steps=1, rounds=1),
    ):
        with pytest.raises(ConfigError) as err:
            make({**base, **bad})
        messages.add(str(err.value))
    assert len(messages) == 1, messages
