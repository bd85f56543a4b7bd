"""The one number format of the terminal (issue 32, point 6): 4-6 significant digits, scientific where it
reads better, integers exact; its docstring examples run here."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

from deepcollapse._core import format as fmt_module
from deepcollapse._core.format import fmt_num, fmt_table, fmt_time


def test_docstring_examples_run():
    result = doctest.testmod(fmt_module)
    assert result.attempted >= 4 and result.failed == 0


@pytest.mark.parametrize(
    ("x", "digits", "text"),
    [
        (17.961154758930206, 5, "17.961"),  # the epoch line
        (126.36472975132585, 5, "126.36"),  # and its per-layer table
        (0.052384387139, 6, "0.0523844"),
        (3.0e-3, 5, "0.003"),
        (4.0820647196460825e-07, 5, "4.0821e-7"),
        (-2.5e-12, 4, "-2.5e-12"),
        (123456.0, 5, "1.2346e5"),
        (1e5, 5, "1e5"),
        (0.0, 5, "0"),
        (np.float32(0.1), 5, "0.1"),
        (np.int64(12345678), 5, "12345678"),
        (True, 5, "True"),
        (None, 5, "-"),
        (math.inf, 5, "inf"),
        (math.nan, 5, "nan"),
    ],
)
def test_numbers_for_people(x, digits, text):
    assert fmt_num(x, digits) == text


def test_at_most_digits_significant_digits_and_the_value_kept_to_that_precision():
    rng = np.random.default_rng(0)
    for x in 10.0 ** rng.uniform(-12, 12, size=200) * rng.choice([-1, 1], size=200):
        for digits in (4, 5, 6):
            text = fmt_num(x, digits)
            mantissa = text.split("e")[0].lstrip("-").replace(".", "").lstrip("0")
            assert len(mantissa) <= digits, (x, text)
            assert float(text) == pytest.approx(x, rel=10.0 ** (1 - digits))


def test_durations_and_tables():
    assert [fmt_time(s) for s in (0.05, 2.0, 59.4, 61, 7200)] == [
        "0.05 s",
        "2 s",
        "59 s",
        "1 min 1 s",
        "2 h 00 min",
    ]
    table = fmt_table([{"a": "x", "b": 1.23456789}, {"a": "yy", "b": None}], max_rows=1)
    assert table.splitlines() == ["a       b", "x  1.2346", "... 1 more row"]
