"""Old module paths and names of deepcollapse 0.1/0.2 work for one more release, with a DeprecationWarning.

The one compatibility layer of the package (remove in 0.4; the migration table is docs/migration.md).
The package was laid out by concept in 0.3 (``dufm/``, ``landscape/``, ``nets/``, ``runs/``, ``_core/``).
Two tables say where everything went:

* :data:`MOVED_MODULES` -- an old module path and its new one.  ``import deepcollapse.training.dufm``
  returns :mod:`deepcollapse.dufm.trainer` itself (the same module object, so isinstance checks and
  monkeypatches see one module) and warns with the new path.
* :data:`MOVED_NAMES` -- public names that are not in their module's new home: per old module path, each
  name's new module.  Reading one (``from deepcollapse.training.dufm_analysis import polish``,
  ``deepcollapse.experiments.run_tasks``) warns with the name's new home and returns the object there.  An
  old path with moved names answers with a stand-in module that reads every other name from the new module.
  A module that still exists (``experiments``) keeps its own module and gains the moved names on import.

:data:`OLD_PUBLIC_NAMES` records the ``__all__`` of the 0.2 modules that moved (read from the 0.2 sources):
every one of them resolves through its old path (``tests/core/test_compat.py``).

Installed by ``import deepcollapse`` (a finder first on ``sys.meta_path``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["MOVED_MODULES", "MOVED_NAMES", "OLD_PUBLIC_NAMES", "new_home"]

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

_CLASSIFY = "dufm.classify"
#: old module path -> {public name: its new module}, for the names that are not in the module's new home
MOVED_NAMES: dict[str, dict[str, str]] = {
    "training.dufm_analysis": {
        name: _CLASSIFY
        for name in (
            "CLASSIFICATIONS",
            "DNC2_TOL",
            "DNC_CONVERGING_COND",
            "DNC_CONVERGING_GAP",
            "GRAD_TOL",
            "GRAM_TOL",
            "PLATEAU_TOL",
            "ZERO_TOL",
            "collapsed_pre_means",
            "gram_match",
            "polish",
        )
    },
    "experiments": {
        "run_tasks": "runs.executors",
        "SweepResult": "runs.sweep",
        "SweepSpec": "runs.sweep",
        "collect_results": "runs.sweep",
        "load_sweep": "runs.sweep",
        "run_sweep": "runs.sweep",
    },
    "dufm.classify": {"analyze_dufm": "dufm.summary"},
}

#: ``__all__`` of the 0.2 modules that moved (0.2 sources, commit 5b71e65^); each resolves via its old path
OLD_PUBLIC_NAMES: dict[str, tuple[str, ...]] = {
    old: tuple(names.split())
    for old, names in {
        "_checks": "ConfigError DeepCollapseError Interrupted check_choice check_finite_array check_float "
        "check_int check_keys check_per_layer did_you_mean rank_tolerance",
        "_config": "ConfigMixin",
        "_io": "append_jsonl atomic_torch_save atomic_write_bytes atomic_write_json atomic_write_text "
        "finite_or_none prepare_run_folder read_jsonl truncate_jsonl",
        "models.dufm": "DUFMConfig DUFMParams INITS LR_SCHEDULES analytic_gradients autograd_gradients "
        "forward init_params init_run labels objective targets",
        "models.resnet": "BasicBlock ResNet20 MIN_INPUT_SIZE",
        "models.head": "MLPHead HeadNetwork feature_layers load_dufm_head_weights",
        "models.mlp_backbone": "MLPBackbone",
        "training.dufm": "DUFMConfig RUN_FILES observe_run resume_dufm train_dufm",
        "training.dufm_kernel": "NumpyDUFM advance advance_limited estimate_runs_steps_per_s flops_per_step "
        "flush_denormal_is_on numpy_gradients resolve_kernel",
        "training.dufm_compiled": "AVAILABLE advance_compiled",
        "training.dufm_analysis": "CLASSIFICATIONS DNC2_TOL DNC_CONVERGING_COND DNC_CONVERGING_GAP GRAD_TOL "
        "GRAM_TOL PLATEAU_TOL ZERO_TOL analyze_dufm collapsed_pre_means gram_match polish",
        "training.dufm_piecewise": "PolishResult Problem activation_pattern collapse expand flatten "
        "forward_backward grad_norm hessian_operator polish sigma_eps_polish unflatten value value_and_grad "
        "zero_preactivations",
        "training.dufm_search": "SearchConfig SearchInterrupted describe_solution search_dufm",
        "training.dufm_landscape": "KINK_RTOL VERDICTS clarke_direction clarke_residual descent_probe "
        "kink_masks landscape loss_slices symmetry_basis",
        "training.supervised": "NetConfig DeviceMemoryError build_network evaluate load_net_data lr_at "
        "regularisation resume_net select_device train_net train_step",
        "training.net_config": "NetConfig REGULARISATIONS LOSSES OPTIMIZERS SCHEDULES BACKBONES",
        "data": "DATASETS DataFileError DataSplits ImageData load_dataset parse_classes",
        "data.datasets": "BUNDLED_DATASETS DATASETS DataSplits ImageData load_dataset parse_classes "
        "dataset_num_classes",
        "data.idx": "read_idx write_idx load_mnist load_fashion_mnist MNIST_FILES DataFileError",
        "data.cifar": "load_cifar10 read_cifar_batch write_cifar_batch CIFAR10_FILES CIFAR10_CLASSES",
        "data.digits": "load_digits_split DIGITS_MAX",
        "data.mnist1d": "load_mnist1d_split MNIST1D_LENGTH MNIST1D_VERSION",
        "experiments": "Experiment SweepResult SweepSpec collect_results get_experiment list_experiments "
        "load_sweep run_sweep run_tasks",
        "experiments.executors": "EXECUTORS RAY_AUTH_HINT RAY_INSTALL_HINT Task TaskError connect_ray "
        "run_task run_tasks",
        "experiments.sweep": "SWEEP_KEYS SweepResult SweepSpec collect_results config_fields load_sweep "
        "parse_assignments run_sweep write_sweep_report",
        "experiments.search_point": "run_search_point",
        "theory.solution_file": "EXPECTED_ARRAYS check_solution load_solution save_solution",
    }.items()
}


def new_home(old: str, name: str | None = None) -> str:
    """Where an old module (``name=None``) or an old module's public name lives now, as a dotted path.

    Parameters
    ----------
    old : str
        The old module path below ``deepcollapse.`` (e.g. ``"training.dufm_analysis"``).
    name : str, optional
        A public name of that module.

    Returns
    -------
    str
        ``"deepcollapse.<new module>"`` or ``"deepcollapse.<new module>.<name>"``.

    Examples
    --------
    >>> new_home("training.dufm_analysis", "polish")
    'deepcollapse.dufm.classify.polish'
    >>> new_home("training.dufm_analysis")
    'deepcollapse.dufm.summary'
    """
    if name is not None and name in MOVED_NAMES.get(old, {}):
        return f"{_P}{MOVED_NAMES[old][name]}.{name}"
    module = _P + MOVED_MODULES.get(old, old)
    return module if name is None else f"{module}.{name}"


def _moved_name(old: str, name: str) -> Any:
    """The object behind the moved name ``name`` of the old module ``old``, with the warning."""
    new = MOVED_NAMES[old][name]
    warnings.warn(
        f"{_P}{old}.{name} moved to {new_home(old, name)} in deepcollapse 0.3; the old name works until 0.4.",
        DeprecationWarning,
        stacklevel=3,
    )
    return getattr(importlib.import_module(_P + new), name)


def _add_moved_names(module: ModuleType, old: str) -> None:
    """Give ``module`` (imported under ``deepcollapse.<old>``) a module ``__getattr__`` for the moved names of
    ``old``, falling back to the module's own ``__getattr__`` (PEP 562) when it has one."""
    own: Callable[[str], Any] | None = module.__dict__.get("__getattr__")

    def __getattr__(name: str) -> Any:
        if name in MOVED_NAMES[old]:
            return _moved_name(old, name)
        if own is not None:
            return own(name)
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

    module.__getattr__ = __getattr__  # type: ignore[method-assign]


class _OldModule(ModuleType):
    """An old module path with moved names: those come from :data:`MOVED_NAMES`, the rest from ``target``."""

    def __init__(self, name: str, old: str, target: ModuleType) -> None:
        super().__init__(name, target.__doc__)
        self.__dict__["_old"], self.__dict__["_target"] = old, target

    def __getattr__(self, name: str) -> Any:
        if name in MOVED_NAMES[self._old]:
            return _moved_name(self._old, name)
        return getattr(self._target, name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._target)) | set(MOVED_NAMES[self._old]))


class _AddNamesLoader(importlib.abc.Loader):
    """The real loader of a module that still exists, plus :func:`_add_moved_names` after it ran."""

    def __init__(self, loader: Any, old: str) -> None:
        self.loader, self.old = loader, old

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        _add_moved_names(module, self.old)

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, get_source, ...
        return getattr(self.loader, name)


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an old module path with the module at its new path (or a stand-in, :class:`_OldModule`), and
    adds the moved names to a module that still exists."""

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        old = fullname[len(_P) :] if fullname.startswith(_P) else None
        if old in MOVED_MODULES:
            return importlib.util.spec_from_loader(fullname, self)
        if old in MOVED_NAMES:  # a module that still exists: its own spec, with the names added after loading
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    if spec.loader is not None:
                        spec.loader = _AddNamesLoader(spec.loader, old)
                    return spec
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        old = spec.name[len(_P) :]
        warnings.warn(
            f"{spec.name} moved to {new_home(old)} in deepcollapse 0.3; the old name works until 0.4.",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new_home(old))
        if old in MOVED_NAMES:
            return _OldModule(spec.name, old, module)
        self._spec = module.__spec__  # importlib overwrites __spec__ of what we return: restored below
        return module

    def exec_module(self, module: ModuleType) -> None:
        if not isinstance(module, _OldModule):
            module.__spec__ = self._spec


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedModuleFinder())
