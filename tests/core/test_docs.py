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

    # every module of the package (the per-package ``_docs`` modules add their blocks to BLOCKS): functions,
    # classes and their methods
    for info in pkgutil.walk_packages(deepcollapse.__path__, "deepcollapse."):
        if info.name.endswith("__main__"):  # running it is the command line
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, lambda x: inspect.isfunction(x) or inspect.isclass(x)):
            if obj is fill_doc or getattr(obj, "__module__", None) != info.name:
                continue  # fill_doc's own docstring shows a marker; imported names are checked at home
            members = [obj, *(m for _, m in inspect.getmembers(obj, inspect.isfunction))]
            for member in members if inspect.isclass(obj) else [obj]:
                assert "%(" not in (member.__doc__ or ""), (info.name, member.__qualname__)
    for f in (compare, loss_dnc, loss_srg):
        assert "\n".join("    " + b for b in BLOCKS["problem"].splitlines()) in f.__doc__
    assert deepcollapse.__version__
