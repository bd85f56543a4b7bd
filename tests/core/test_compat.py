"""The one compatibility layer (deepcollapse._compat): every old module path and every old public name in its
tables resolves to the object at its new home, with a DeprecationWarning that names that home; the migration
table (docs/migration.md) lists every move."""

from __future__ import annotations

import importlib
import re
import sys
import warnings
from pathlib import Path

import pytest

import deepcollapse  # noqa: F401  (installs the finder)
from deepcollapse._compat import MOVED_MODULES, MOVED_NAMES, OLD_PUBLIC_NAMES, new_home

P = "deepcollapse."
MIGRATION = Path(__file__).resolve().parents[2] / "docs" / "migration.md"


def _new_module(old: str) -> object:
    return importlib.import_module(new_home(old))


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_every_old_module_path_resolves_and_warns(old, monkeypatch):
    monkeypatch.delitem(sys.modules, P + old, raising=False)  # a moved module warns on its first import
    with pytest.warns(
        DeprecationWarning, match=rf"{re.escape(P + old)} moved to {re.escape(new_home(old))}\b"
    ):
        module = importlib.import_module(P + old)
    target = _new_module(old)
    if old in MOVED_NAMES:  # a stand-in reading the other names from the new module
        assert module is not target and module.__dict__["_target"] is target
    else:
        assert module is target  # the same module object


@pytest.mark.parametrize("old", sorted(MOVED_NAMES))
def test_every_moved_name_resolves_and_warns_with_its_new_home(old):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = importlib.import_module(P + old)
    for name, new in MOVED_NAMES[old].items():
        home = importlib.import_module(P + new)
        assert name in vars(home), f"{new_home(old, name)} does not exist"
        assert name not in vars(module), f"{P}{old}.{name} is not moved: drop it from MOVED_NAMES"
        with pytest.warns(
            DeprecationWarning,
            match=rf"{re.escape(P + old + '.' + name)} moved to "
            rf"{re.escape(new_home(old, name))}\b",
        ):
            value = getattr(module, name)
        assert value is getattr(home, name)


@pytest.mark.parametrize("old", sorted(OLD_PUBLIC_NAMES))
def test_every_old_public_name_resolves_through_its_old_path(old):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = importlib.import_module(P + old)
        for name in OLD_PUBLIC_NAMES[old]:
            home, _, attr = new_home(old, name).rpartition(".")
            assert getattr(module, name) is getattr(importlib.import_module(home), attr), f"{P}{old}.{name}"


def test_unknown_names_still_raise():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = importlib.import_module(P + "training.dufm_analysis")
        experiments = importlib.import_module(P + "experiments")
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018
    with pytest.raises(AttributeError):
        experiments.no_such_name  # noqa: B018


def test_the_migration_table_lists_every_move():
    rows = [line for line in MIGRATION.read_text().splitlines() if line.startswith("|")]
    for old, new in MOVED_MODULES.items():
        assert any(f"`{P}{old}`" in r and f"`{P}{new}`" in r for r in rows), old
    for old, names in MOVED_NAMES.items():
        for name, new in names.items():
            assert any(f"`{P}{old}`" in r and f"`{name}`" in r and f"`{P}{new}`" in r for r in rows), (
                old,
                name,
            )
