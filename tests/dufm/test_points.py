"""A fit held in memory and its run folder are read alike (dufm.points.as_runs) by classify, landscape,
polish and collapse_metrics (issue 44, point 2a)."""

from __future__ import annotations

import numpy as np
import pytest

import deepcollapse as dc
from deepcollapse.dufm.points import as_point, as_runs
from deepcollapse.dufm.trainer import train_dufm
from deepcollapse.landscape.piecewise import polish
from deepcollapse.landscape.verdicts import landscape

CONFIG = dict(classes=3, n=2, layers=2, width=4, lam_h=0.01, lam_w=0.01, steps=200, log_every=50, runs=2)


@pytest.fixture(scope="module")
def fit_and_folder(tmp_path_factory):
    config = dc.DUFMConfig(**CONFIG)
    folder = tmp_path_factory.mktemp("points") / "run"
    train_dufm(config, folder, progress=False)
    return dc.fit_dufm(config), folder


def test_fit_and_folder_give_the_same_runs(fit_and_folder):
    fit, folder = fit_and_folder
    a, b = as_runs(fit), as_runs(folder)
    assert a.config == b.config and a.step == b.step == 200
    for p, q in zip(a.params, b.params):
        np.testing.assert_allclose(p, q, rtol=0, atol=1e-6)  # float32 training: the same runs
    assert a.best_run() == b.best_run()
    assert as_runs([fit.H1, *fit.weights]) is None


def test_landscape_takes_a_fit_with_its_problem_and_a_folder(fit_and_folder):
    fit, folder = fit_and_folder
    problem = dc.Problem(classes=3, layers=2, n=2, lam_h=0.01, lam_w=0.01)  # no widths: still the fit's
    from_fit = landscape(fit, problem, run=1, k=2)  # was TypeError: 'DUFMFit' object is not subscriptable
    from_folder = landscape(folder, run=1, k=2)
    assert from_fit.verdict == from_folder.verdict
    assert from_fit.loss == pytest.approx(from_folder.loss, rel=1e-5)
    params, _ = as_point(fit, run=1)
    assert landscape(params, problem, k=2).loss == pytest.approx(from_fit.loss, rel=1e-12)


def test_classify_and_polish_take_a_folder_as_a_fit(fit_and_folder):
    fit, folder = fit_and_folder
    s_fit, s_folder = dc.classify(fit), dc.classify(folder)
    assert [r.classification for r in s_fit.runs] == [r.classification for r in s_folder.runs]
    assert s_folder.step == 200
    p_fit, p_folder = polish(fit, run=0, lbfgs_iter=50), polish(str(folder), run=0, lbfgs_iter=50)
    assert p_fit.start_loss == pytest.approx(p_folder.start_loss, rel=1e-5)
    assert p_fit.loss <= p_fit.start_loss


def test_collapse_metrics_of_a_fit_is_its_best_runs_last_layer(fit_and_folder):
    fit, folder = fit_and_folder
    features, labels, W = as_runs(fit).collapse_inputs()
    by_hand = dc.collapse_metrics(features, labels, W)
    assert dc.collapse_metrics(fit) == by_hand
    assert dc.collapse_metrics(as_runs(folder)).rank == by_hand.rank


def test_wrong_combinations_are_one_line_config_errors(fit_and_folder):
    fit, folder = fit_and_folder
    with pytest.raises(dc.ConfigError, match="problem: required with arrays"):
        landscape([fit.H1[0], fit.weights[0][0], fit.weights[1][0]])
    with pytest.raises(dc.ConfigError, match="differs from the runs'"):
        landscape(fit, dc.Problem(classes=3, layers=2, n=2, lam_h=0.02, lam_w=0.01))
    with pytest.raises(dc.ConfigError, match=r"run == 5, must be in 0 \.\. 1"):
        polish(folder, run=5)
    with pytest.raises(dc.ConfigError, match="a fit brings its own"):
        dc.collapse_metrics(fit, np.zeros(6, dtype=int))
    with pytest.raises(dc.ConfigError, match="as_runs"):
        dc.collapse_metrics(str(folder))
