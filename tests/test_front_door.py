"""The front door: ``import deepcollapse as dc`` gives the names a notebook starts with, lazily (no torch at
import), and the Examples of their docstrings run."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys

import pytest

import deepcollapse as dc

# the torch-free part of the front door: theory, metrics, the classification of parameters in memory
TORCH_FREE = ("Problem", "loss_dnc", "loss_srg", "compare", "collapse_metrics", "Criteria", "classify")


def test_import_and_the_torch_free_names_load_no_torch():
    code = (
        "import sys, deepcollapse as dc; "
        "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')); "
        f"[getattr(dc, name) for name in {TORCH_FREE!r}]; "
        "bad += sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_name_is_the_object_of_its_module():
    from deepcollapse import _FRONT_DOOR

    expected = {
        "Problem",
        "loss_dnc",
        "loss_srg",
        "DUFMConfig",
        "DUFMFit",
        "fit_dufm",
        "classify",
        "Criteria",
        "train_dufm",
        "collapse_metrics",
        "search",
        "load_solution",
    }
    assert expected <= set(_FRONT_DOOR)
    for name, where in _FRONT_DOOR.items():
        module, _, attribute = where.partition(":")
        obj = getattr(importlib.import_module(f"deepcollapse.{module}"), attribute or name)
        assert getattr(dc, name) is obj, name
        assert callable(obj), name
        assert name in dir(dc) and name in dc.__all__
    assert {"ConfigError", "DeepCollapseError", "__version__"} <= set(dc.__all__)
    with pytest.raises(AttributeError, match="no attribute 'fit_duf'"):
        dc.fit_duf  # noqa: B018


def test_a_name_shared_with_a_submodule_stays_the_function():
    """``deepcollapse.dufm.classify`` is a module and ``dc.classify`` its function, in either import order."""
    import deepcollapse.dufm.classify as module

    assert callable(dc.classify) and dc.classify is module.classify
    assert dc.fit_dufm.__module__ == "deepcollapse.dufm.fit"


@pytest.mark.parametrize(
    "module",
    [
        "deepcollapse",
        "deepcollapse.dufm.fit",
        "deepcollapse.dufm.classify",
        "deepcollapse.dufm.criteria",
        "deepcollapse.dufm.trainer",
        "deepcollapse.nets.evaluate",
        "deepcollapse.nets.summary",
    ],
)
def test_docstring_examples_run(module):
    result = doctest.testmod(
        importlib.import_module(module), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 0 and result.failed == 0, result
