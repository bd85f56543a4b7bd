"""The typed results of the DUFM steps (issue 30, item 4): ``polish`` -> :class:`PolishResult`,
``observe_run`` -> :class:`RunObservation`, ``classify_run`` -> :class:`DUFMRun`; each keeps the keys of the
dict of earlier releases, reads back with ``from_dict`` and reads the files of earlier releases."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from deepcollapse.dufm import DUFMConfig
from deepcollapse.dufm.classify import polish
from deepcollapse.dufm.results import PolishResult

# a small problem: K = 3 classes, n = 2 samples per class, L = 2 layers of width 3
K, N, LAM = 3, 2, 0.01
CONFIG = DUFMConfig(classes=K, n=N, layers=2, width=3, lam_h=LAM, lam_w=LAM)


def _dnc_loss_l2(K: int, n: int, lam_h: float, lam_w: float) -> tuple[float, float]:
    """``min_α √(λ_W n λ_H) K √α + K λ_W / (2 (α + K λ_W))`` (the optimal DNC loss at L = 2, its scale α)."""
    f = lambda a: math.sqrt(lam_w * n * lam_h) * K * math.sqrt(a) + K * lam_w / (2 * (a + K * lam_w))  # noqa: E731
    res = minimize_scalar(f, bounds=(1e-12, 100.0), method="bounded", options={"xatol": 1e-12})
    return float(res.fun), float(res.x)


def test_polish_returns_a_polish_result_with_the_old_keys():
    """An orthogonal frame polishes to the optimal DNC loss, with the scale c = √α of the closed form."""
    result = polish([np.eye(K)], CONFIG)
    assert isinstance(result, PolishResult)
    d = result.to_dict()
    assert list(d) == ["polished_loss", "scales", "source"]
    loss, alpha = _dnc_loss_l2(K, N, LAM, LAM)
    assert d["polished_loss"] == pytest.approx(loss, rel=1e-9)
    assert d["scales"][0] ** 2 == pytest.approx(alpha, rel=1e-4)
    assert d["source"] == "learned"
    assert result["polished_loss"] == result.polished_loss  # Mapping access of earlier releases
    assert PolishResult.from_dict(d) == result
    json.dumps(d)  # JSON-ready


def test_polish_of_zero_means_and_of_nothing():
    result = polish([np.zeros((K, K))], CONFIG)
    assert isinstance(result, PolishResult)
    assert result.to_dict() == {"polished_loss": 0.5, "scales": [0.0], "source": "zero"}
    assert polish([np.full((K, K), np.nan)], CONFIG) is None
    assert polish([], CONFIG) is None


def test_polish_result_reads_an_old_dict(tmp_path):
    old = {"polished_loss": 0.125, "scales": [1.5, 0.25], "source": "collapsed"}
    path = tmp_path / "polish.json"
    path.write_text(json.dumps(old))
    result = PolishResult.from_dict(json.loads(path.read_text()))
    assert result.polished_loss == 0.125 and result.scales == [1.5, 0.25] and result.source == "collapsed"
    assert json.dumps(result.to_dict()) == path.read_text()
