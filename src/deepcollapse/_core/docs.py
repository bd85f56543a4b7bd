"""Shared docstring blocks, written once (SciPy's ``doccer`` style): a docstring line that holds only
``%(name)s`` is replaced by the block ``name`` of :data:`BLOCKS`, indented like the marker, when the function
is decorated with :func:`fill_doc`.

To add a block: put its numpydoc text (unindented) in :data:`BLOCKS`; write ``%(name)s`` on its own line in
each docstring that repeats it and decorate the function with ``@fill_doc``.  A marker without a block is a
``KeyError`` at import, so a misspelt name cannot ship.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["BLOCKS", "fill_doc"]

T = TypeVar("T")

#: the blocks, by name: numpydoc text without indentation
BLOCKS: dict[str, str] = {
    # the five arguments of a theory function that takes a problem (deepcollapse.theory.problem.problem_of)
    "problem": """\
classes : int or Problem
    ``K >= 2``, or the whole :class:`~deepcollapse.theory.problem.Problem` (then ``layers`` .. ``lam_w``
    are left out; ``problem=`` works too).
layers, n, lam_h, lam_w
    ``L >= 1``, samples per class ``n >= 1``, ``λ_{H_1}``, ``λ_{W_1} .. λ_{W_L}`` (one value, ``L``
    values, or a comma-separated string).""",
    "problem_kw": """\
problem : Problem, optional
    The problem by keyword.""",
}


def fill_doc(obj: T) -> T:
    """Replace every docstring line ``%(name)s`` of ``obj`` by ``BLOCKS[name]``, indented like the marker.

    Parameters
    ----------
    obj : function or class
        Its ``__doc__`` is rewritten in place (nothing happens when docstrings are stripped, ``python -OO``).

    Returns
    -------
    function or class
        ``obj`` itself.

    Examples
    --------
    >>> @fill_doc
    ... def f(problem=None):
    ...     '''Parameters
    ...     ----------
    ...     %(problem_kw)s
    ...     '''
    >>> print(f.__doc__.splitlines()[2].strip())
    problem : Problem, optional
    """
    doc = obj.__doc__
    if not doc:
        return obj
    lines: list[str] = []
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped.startswith("%(") and stripped.endswith(")s"):
            indent = line[: len(line) - len(line.lstrip())]
            block = BLOCKS[stripped[2:-2]]
            lines.extend(indent + b if b else b for b in block.splitlines())
        else:
            lines.append(line)
    obj.__doc__ = "\n".join(lines) + ("\n" if doc.endswith("\n") else "")
    return obj
