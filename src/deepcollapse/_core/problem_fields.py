"""The words for the fields of an instance of eq. (1), written once: the help text of each of
:class:`~deepcollapse.theory.problem.Problem`'s fields, which is its field metadata, the option help of every
config that holds a problem (``DUFMConfig``, ``SearchConfig``) and of the ``theory`` command.

Plain strings in a module that imports nothing, so that the command line builds its options without loading
the theory package.  A text states what the value is and its range; where a command adds something of its own
(``λ = 0`` allowed by the trainer, ``--lam`` as the shared alias) it appends it to these words.
"""

from __future__ import annotations

__all__ = ["PROBLEM_HELP"]

#: one help text per field of :class:`~deepcollapse.theory.problem.Problem` (``lam_w`` and ``widths``: one
#: value or comma-separated L values on the command line)
PROBLEM_HELP: dict[str, str] = {
    "classes": "K, number of classes (>= 2)",
    "layers": "L, number of weight matrices W_1..W_L (>= 1; L = 1: the classical UFM)",
    "n": "samples per class (>= 1); N = K n",
    "lam_h": "λ_H1, weight decay of the free features H_1",
    "lam_w": "λ_W: one float or comma-separated L floats, weight decay of W_1..W_L",
    "widths": "d_1..d_L: one int or comma-separated L ints (H1 has d_1 rows, W_L is (K, d_L))",
}
