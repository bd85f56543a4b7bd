"""A misspelt keyword of a config constructor is a one-line ConfigError with the nearest field, not a bare
TypeError (issue 44, point 2b): every ConfigMixin config, Problem and Criteria."""

from __future__ import annotations

import pytest

import deepcollapse as dc
from deepcollapse.landscape.search_config import SearchConfig


@pytest.mark.parametrize(
    ("make", "typo", "field"),
    [
        (lambda: dc.DUFMConfig(widht=3), "widht", "width"),
        (lambda: SearchConfig(classes=3, layers=2, n=1, lam_h=0.01, lam_w=0.01, widht=3), "widht", "width"),
        (lambda: dc.Problem(classes=3, layers=2, n=1, lam_h=0.01, lam_ww=0.01), "lam_ww", "lam_w"),
        (lambda: dc.Criteria(dnc2_toll=0.5), "dnc2_toll", "dnc2_tol"),
    ],
)
def test_a_keyword_typo_names_the_nearest_field(make, typo, field):
    with pytest.raises(
        dc.ConfigError, match=rf"unknown keyword \w+\({typo}=\.\.\.\): did you mean '{field}'\?"
    ):
        make()


def test_from_dict_typo_and_valid_keywords_are_unchanged():
    with pytest.raises(dc.ConfigError, match="did you mean 'width'"):
        dc.DUFMConfig.from_dict({"widht": 3})
    config = dc.DUFMConfig(width=3, steps=10)
    assert (config.width, config.steps) == ([3, 3, 3, 3], 10)
    assert config.replace(width=5).width == [5, 5, 5, 5]
    assert dc.DUFMConfig.from_dict(config.to_dict()) == config
