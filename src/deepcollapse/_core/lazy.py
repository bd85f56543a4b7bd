"""Package exports resolved on first use (PEP 562), so ``import deepcollapse.dufm.config`` stays cheap.

Each package ``__init__`` names its public API in one table ``{name: submodule}``; the submodule is imported
the first time the name is read (``from deepcollapse.dufm import train_dufm`` imports ``dufm.trainer`` then,
and torch with it).  Stated reason for the laziness: the command line answers fast, and torch-free packages
(``theory``, ``landscape.solution_file``) stay torch-free when a sibling module needs torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package`` exporting ``table`` (public name -> submodule, or
    ``"submodule:attribute"`` to export an attribute under another name)."""

    def __getattr__(name: str) -> Any:
        try:
            module = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        module, _, attribute = module.partition(":")
        return getattr(importlib.import_module(f"{package}.{module}"), attribute or name)

    def __dir__() -> list[str]:
        return sorted(table)

    return __getattr__, __dir__, sorted(table)
