"""Neural-collapse metrics as pure functions of ``features (N, D)`` and ``labels (N,)``.

Conventions (one notation, see ``docs/formulas.md``):

* ``features`` holds one sample per **row** (``(N, D)``); ``labels`` are integers in ``0..K-1``.  The DUFM
  stores ``H`` as ``(d, N)`` (columns = samples): pass ``H.T``.  numpy arrays and torch tensors are accepted;
  everything is computed in **float64** numpy and returned as plain Python floats / numpy arrays.
* Class means are returned as rows, ``means (K, D)``; the paper's class-mean matrix is its transpose
  ``M = means.T (D, K)`` (same singular values).  ``μ_G`` is the global mean: sample-weighted
  ``(1/N) Σ_i h_i = Σ_c (n_c/N) μ_c`` by default, or the unweighted ``(1/K) Σ_c μ_c`` (``weighted=False``).
* ``Σ_W = (1/N) Σ_c Σ_{i∈c} (h_ci − μ_c)(h_ci − μ_c)^T`` (no Bessel correction) and
  ``Σ_B = (1/K) Σ_c (μ_c − μ_G)(μ_c − μ_G)^T`` (the 2024 paper, §6).
* Functions whose name starts with ``nc2_``, ``equi``, ``class_mean_gram``, ``nc3_`` and ``self_duality`` take
  ``(features, labels)`` **or** a class-mean matrix ``means (K, D)`` alone (``labels=None``): the fast path
  for callers that already hold the class means (e.g. the DUFM trainer, whose samples are ordered by class).
  With means alone the global mean is the unweighted average of the means.
* Spectral functions (``singular_values``, ``numerical_rank``, ``effective_rank``, ``stable_rank``) take any
  matrix.
* A metric that is mathematically undefined/infinite returns ``inf`` or ``nan`` here; :func:`collapse_metrics`
  turns such values into ``None`` with a human-readable reason in ``warnings``.

Bad input (shape mismatch, labels outside ``0..K-1``, empty classes, NaN/inf features, fewer than two classes)
raises :class:`~deepcollapse.ConfigError`.  Empty classes are an error unless ``drop_empty=True``,
which drops them and renumbers the remaining classes ``0..K'-1`` in increasing order of their original label
(the kept original labels are reported as ``classes`` by :func:`collapse_metrics`).

The same functional core (:func:`metrics_from_moments`) is used by :func:`collapse_metrics` and by the
streaming :class:`~deepcollapse.metrics.streaming.CollapseStatistics`, so both give the same numbers up to
rounding.

The functions live in one module per family; this module re-exports them all (import from here or from
:mod:`deepcollapse.metrics`): ``_inputs`` (input checks), ``means`` (class means, covariances,
:class:`Moments`), ``spectra`` (singular values, ranks), ``geometry`` (NC2), ``classifier`` (NC3, NC4),
``core`` (the functional core, NC1) and ``collapse`` (:func:`collapse_metrics`).
"""

from deepcollapse.metrics import classifier as _classifier
from deepcollapse.metrics import collapse as _collapse
from deepcollapse.metrics import core as _core
from deepcollapse.metrics import geometry as _geometry
from deepcollapse.metrics import means as _means
from deepcollapse.metrics import spectra as _spectra
from deepcollapse.metrics._inputs import ArrayLike as ArrayLike
from deepcollapse.metrics.classifier import *  # noqa: F403  (re-export: the names in each module's __all__)
from deepcollapse.metrics.collapse import *  # noqa: F403
from deepcollapse.metrics.core import *  # noqa: F403
from deepcollapse.metrics.geometry import *  # noqa: F403
from deepcollapse.metrics.means import *  # noqa: F403
from deepcollapse.metrics.spectra import *  # noqa: F403

__all__: list[str] = []
__all__ += _means.__all__
__all__ += _spectra.__all__
__all__ += _geometry.__all__
__all__ += _classifier.__all__
__all__ += _core.__all__
__all__ += _collapse.__all__
