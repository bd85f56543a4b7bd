"""The flagship instance of eq. (1), the one place its values live: the 2024 paper's 4-DUFM of §6.1 / Fig. 2
top -- K = 10 classes, L = 4 layers, n = 50 samples per class, λ = 0.004 for H_1 and every W_l, width 30.

Plain numbers in a module that imports nothing, so that the command line reads its defaults from here without
loading the theory package.  Readers: :data:`deepcollapse.theory.problem.FLAGSHIP` (the same as a
:class:`~deepcollapse.theory.problem.Problem`), ``DUFMConfig``'s defaults, the ``theory`` command's defaults
and the DUFM figures' base setting (:data:`deepcollapse.experiments.dufm_helpers.FLAGSHIP`).
"""

from __future__ import annotations

__all__ = ["CLASSES", "LAM", "LAYERS", "N", "WIDTH"]

CLASSES = 10
LAYERS = 4
N = 50
LAM = 0.004
WIDTH = 30
