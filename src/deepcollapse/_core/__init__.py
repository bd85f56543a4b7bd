"""deepcollapse._core: what every other package stands on (private to the toolkit; public names re-exported).

- :mod:`.checks` -- :class:`ConfigError` (one message format, ``"<field> == <value>, must be <allowed>."``),
  ``check_int / check_float / check_choice / check_keys / check_per_layer``, ``did_you_mean`` and the
  dtype-aware ``rank_tolerance`` used by every "is this singular value zero" decision.
- :mod:`.config` -- :class:`ConfigMixin`: dict/YAML round trips rejecting unknown keys, ``replace()``.
- :mod:`.io` -- run-folder I/O: atomic writes, JSON lines, the never-overwrite rule.
- :mod:`.lazy` -- package exports resolved on first use.
"""

from deepcollapse._core.checks import ConfigError, DeepCollapseError, Interrupted, rank_tolerance
from deepcollapse._core.config import ConfigMixin

__all__ = ["ConfigError", "ConfigMixin", "DeepCollapseError", "Interrupted", "rank_tolerance"]
