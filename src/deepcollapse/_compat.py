"""Old module paths of deepcollapse 0.1/0.2 keep working for one release, with a ``DeprecationWarning``.

The package was laid out by concept in 0.3 (``dufm/``, ``landscape/``, ``nets/``, ``runs/``, ``_core/``);
``import deepcollapse.training.dufm`` now returns :mod:`deepcollapse.dufm.trainer` itself (the same module
object, so isinstance checks and monkeypatches see one module) and says where it moved.  Installed by
``import deepcollapse``; remove in 0.4.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

__all__ = ["MOVED_MODULES"]

_P = "deepcollapse."
#: old dotted path (below ``deepcollapse.``) -> new one
MOVED_MODULES: dict[str, str] = {
    "_checks": "_core.checks",
    "_config": "_core.config",
    "_io": "_core.io",
    "models": "nets",
    "models.dufm": "dufm",
    "models.resnet": "nets.resnet",
    "models.head": "nets.head",
    "models.mlp_backbone": "nets.mlp_backbone",
    "training": "dufm",
    "training.dufm": "dufm.trainer",
    "training.dufm_kernel": "dufm.kernel",
    "training.dufm_compiled": "dufm.compiled",
    "training.dufm_analysis": "dufm.summary",
    "training.dufm_piecewise": "landscape.piecewise",
    "training.dufm_search": "landscape.search",
    "training.dufm_landscape": "landscape.verdicts",
    "training.supervised": "nets.train",
    "training.net_config": "nets.config",
    "data": "nets.data",
    "data.datasets": "nets.data.datasets",
    "data.idx": "nets.data.idx",
    "data.cifar": "nets.data.cifar",
    "data.digits": "nets.data.digits",
    "data.mnist1d": "nets.data.mnist1d",
    "experiments.executors": "runs.executors",
    "experiments.sweep": "runs.sweep",
    "experiments.search_point": "runs.search_point",
    "theory.solution_file": "landscape.solution_file",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an old module path with the module at its new path."""

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if not fullname.startswith(_P) or fullname[len(_P) :] not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = _P + MOVED_MODULES[spec.name[len(_P) :]]
        warnings.warn(
            f"{spec.name} moved to {new} in deepcollapse 0.3; the old name works until 0.4.",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        self._spec = module.__spec__  # importlib overwrites __spec__ of what we return: restored below
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedModuleFinder())
