"""The trainer's config names its problem (:class:`deepcollapse.theory.Problem`) and observes eq. (1) through
the theory's one float64 evaluation."""

from __future__ import annotations

import numpy as np

from deepcollapse.dufm.config import DUFMConfig
from deepcollapse.dufm.trainer import loss_parts, observe_run
from deepcollapse.landscape.search import SearchConfig
from deepcollapse.theory import Problem, dufm_objective, evaluate


def test_config_problem_carries_every_field_of_the_model() -> None:
    c = DUFMConfig(
        classes=4,
        n=3,
        layers=3,
        width=[5, 6, 7],
        lam_h=0.001,
        lam_w=[0.002, 0.003, 0.004],
        loss="ce",
        activation="relu_eps",
        eps=0.1,
    )
    assert c.problem == Problem(4, 3, 3, 0.001, (0.002, 0.003, 0.004), (5, 6, 7), "ce", "relu_eps", 0.1)
    s = SearchConfig(classes=6, layers=3, n=5, lam_h=0.002, lam_w=[0.003] * 3, width=8)
    assert s.problem == Problem(6, 3, 5, 0.002, 0.003, 8)
    assert s.problem.reduced() == Problem(6, 3, 1, 5 * 0.002, 0.003, 8)


def test_trainer_observation_is_the_theory_objective_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    c = DUFMConfig(
        classes=3,
        n=2,
        layers=3,
        width=4,
        lam_h=0.01,
        lam_w=[0.02, 0.03, 0.04],
        loss="ce",
        activation="relu_eps",
        eps=0.2,
    )
    H1 = rng.standard_normal((4, 6)).astype(np.float32)  # the trainer's parameters are float32
    Ws = [rng.standard_normal(s).astype(np.float32) for s in ((4, 4), (4, 4), (3, 4))]
    parts = evaluate(H1, Ws, c.problem)
    assert loss_parts(H1, Ws, c) == (parts.total, parts.fit, parts.reg)
    explicit = dufm_objective(H1, Ws, 0.01, [0.02, 0.03, 0.04], loss="ce", activation="relu_eps", eps=0.2)
    assert explicit == parts
    assert observe_run(H1, Ws, c)["loss"] == parts.total


def test_the_flagship_has_one_home():
    """Issue 30: DUFMConfig's defaults, the theory command's defaults and the DUFM figures' base are the one
    flagship of deepcollapse._core.flagship (K = 10, L = 4, n = 50, λ = 0.004, width 30; 2024 §6.1)."""
    import argparse

    from deepcollapse._core import flagship
    from deepcollapse.cli.theory import _add_problem
    from deepcollapse.dufm.config import DUFMConfig
    from deepcollapse.experiments.dufm_helpers import FLAGSHIP as FIGURES
    from deepcollapse.theory.problem import FLAGSHIP

    assert (flagship.CLASSES, flagship.LAYERS, flagship.N, flagship.LAM, flagship.WIDTH) == (
        10,
        4,
        50,
        0.004,
        30,
    )
    assert DUFMConfig().problem == FLAGSHIP
    parser = argparse.ArgumentParser()
    _add_problem(parser)
    args = parser.parse_args([])
    assert (int(args.classes), int(args.layers), int(args.n), float(args.lam)) == (10, 4, 50, 0.004)
    assert FIGURES["classes"] == 10 and FIGURES["width"] == 30 and FIGURES["lam"] == 0.004
    assert FIGURES["lr"] == DUFMConfig().lr and FIGURES["steps"] == DUFMConfig().steps


def test_the_kernel_takes_a_problem_bit_for_bit_with_the_loose_form() -> None:
    import pytest

    from deepcollapse._core.checks import ConfigError
    from deepcollapse.dufm.kernel import advance, numpy_gradients

    p = Problem(3, 3, 2, 0.01, (0.02, 0.03, 0.04), 5, "ce", "relu_eps", 0.1)
    rng = np.random.default_rng(1)
    shapes = [(4, 5, 6), (4, 5, 5), (4, 5, 5), (4, 3, 5)]  # H1 is d_1 x N, N = K n
    params = [rng.normal(size=s).astype(np.float32) for s in shapes]
    lrs = np.full(20, 0.05)
    loose = (3, 2, 0.01, [0.02, 0.03, 0.04])
    for kernel in ("numpy", "auto"):
        a, da = advance(params, lrs, 7, p, kernel=kernel)
        b, db = advance(params, lrs, 7, *loose, family=p.family, kernel=kernel)
        c, dc = advance(params, lrs, 7, problem=p, kernel=kernel)
        assert da == db == dc and all(
            np.array_equal(x, y) and np.array_equal(x, z) for x, y, z in zip(a, b, c)
        )
    g1 = numpy_gradients(params, p)
    g2 = numpy_gradients(params, *loose, p.family)
    assert all(np.array_equal(x, y) for x, y in zip(g1, g2))
    with pytest.raises(ConfigError, match="not both"):
        advance(params, lrs, 0, p, n=2)
    with pytest.raises(ConfigError, match="not both"):
        advance(params, lrs, 0, p, family=p.family)
    with pytest.raises(ConfigError, match="4 arrays, must be 3"):
        advance(params, lrs, 0, Problem(3, 2, 2, 0.01, 0.02, 5))
    with pytest.raises(ConfigError, match="needs a Problem"):
        advance(params, lrs, 0, 3, 2)
