"""deepcollapse._core: what every other package stands on (private to the toolkit; public names re-exported).

- :mod:`.checks` -- :class:`ConfigError` (one message format, ``"<field> == <value>, must be <allowed>."``),
  ``check_int / check_float / check_choice / check_keys / check_per_layer``, ``did_you_mean`` and the
  dtype-aware ``rank_tolerance`` used by every "is this singular value zero" decision.
- :mod:`.devices` -- ``check_cuda_device``: a ``--device cuda`` that this machine lacks, in one line naming
  what was found (the torch build, the devices it sees).
- :mod:`.config` -- :class:`ConfigMixin`: dict/YAML round trips rejecting unknown keys, ``replace()``.
- :mod:`.io` -- run-folder I/O: atomic writes, JSON lines, the never-overwrite rule.
- :mod:`.interrupt` -- ``stop_on_signals()`` / :class:`StopFlag`: SIGINT / SIGTERM set a flag that the long
  loops poll (trainer, network loop, search, executors); they save, then raise :class:`Interrupted`.
- :mod:`.lazy` -- package exports resolved on first use.
- :mod:`.results` -- :class:`Result`: base of the typed results (``to_dict``, ``from_dict``, key access).
"""

from deepcollapse._core.checks import ConfigError, DeepCollapseError, Interrupted, rank_tolerance
from deepcollapse._core.config import ConfigMixin
from deepcollapse._core.results import Result

__all__ = ["ConfigError", "ConfigMixin", "DeepCollapseError", "Interrupted", "Result", "rank_tolerance"]
