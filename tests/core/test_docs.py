"""The shared docstring blocks (``_core/docs.py``, issue 30 item 5): a marker line becomes its block, indented
like the marker; an unknown marker fails at import; no docstring of the package keeps a marker."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import deepcollapse
from deepcollapse._core.docs import BLOCKS, fill_doc


def test_a_marker_becomes_its_block_indented_like_the_marker():
    def f():
        """Do.

        Parameters
        ----------
        %(problem)s
        """

    fill_doc(f)
    lines = f.__doc__.splitlines()
    start = lines.index("        classes : int or Problem")
    assert lines[start : start + len(BLOCKS["problem"].splitlines())] == [
        "        " + b for b in BLOCKS["problem"].splitlines()
    ]
    assert "%(" not in f.__doc__


def test_an_unknown_marker_is_an_error_and_no_docstring_is_a_no_op():
    def g():
        """%(no_such_block)s"""

    with pytest.raises(KeyError, match="no_such_block"):
        fill_doc(g)

    def h():
        pass

    assert fill_doc(h) is h and h.__doc__ is None


def test_no_public_docstring_keeps_a_marker_and_the_theory_functions_share_the_block():
    from deepcollapse.theory import compare, loss_dnc, loss_srg

    for name in ("deepcollapse.theory", "deepcollapse.theory.constructions"):
        package = importlib.import_module(name)
        for info in pkgutil.iter_modules(package.__path__, name + "."):
            module = importlib.import_module(info.name)
            for _, obj in inspect.getmembers(module, inspect.isfunction):
                if obj is fill_doc:  # its own docstring shows a marker
                    continue
                assert "%(" not in (obj.__doc__ or ""), (info.name, obj.__name__)
    for f in (compare, loss_dnc, loss_srg):
        assert "\n".join("    " + b for b in BLOCKS["problem"].splitlines()) in f.__doc__
    assert deepcollapse.__version__
