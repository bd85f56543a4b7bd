"""The experiment catalogue fails loudly on a broken experiment module (issue 44, point 6): only a missing
third-party package skips a module, with a warning naming both."""

from __future__ import annotations

import logging
import textwrap

import pytest

from deepcollapse.experiments import registry

PAPER = "deepcollapse.experiments.paper2023"  # a real module, imported beside the broken ones


def _write_module(tmp_path, monkeypatch, name: str, source: str) -> str:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.mark.parametrize(
    ("source", "missing"),
    [
        ("from deepcollapse.experiments.dufm_helpers import best_meanz\n", "best_meanz"),
        ("import deepcollapse.experiments.dufm_helperz\n", "deepcollapse.experiments.dufm_helperz"),
        ("from numpy import arrayy\n", "arrayy"),  # an installed package, a wrong name
    ],
)
def test_a_broken_import_raises_naming_the_module(tmp_path, monkeypatch, source, missing):
    name = _write_module(tmp_path, monkeypatch, "dc_broken_experiments", source)
    monkeypatch.setattr(registry, "EXPERIMENT_MODULES", (PAPER, name))
    with pytest.raises(ImportError) as err:
        registry.list_experiments()
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"experiment module {name} does not import") and missing in message
    assert isinstance(err.value.__cause__, ImportError)


def test_a_typo_in_the_module_list_raises(monkeypatch):
    monkeypatch.setattr(registry, "EXPERIMENT_MODULES", (PAPER, "deepcollapse.experiments.paper2O24"))
    with pytest.raises(ImportError, match=r"experiment module deepcollapse\.experiments\.paper2O24 does not"):
        registry.list_experiments()


def test_a_missing_third_party_package_is_reported_not_silent(tmp_path, monkeypatch, caplog):
    name = _write_module(tmp_path, monkeypatch, "dc_needs_a_package", "import dc_no_such_package_44.sub\n")
    monkeypatch.setattr(registry, "EXPERIMENT_MODULES", (PAPER, name))
    with caplog.at_level(logging.WARNING, logger=registry.__name__):
        names = [e.name for e in registry.list_experiments()]
    assert "dnc2023-binary" in names  # the other modules' experiments are still listed
    (record,) = [r for r in caplog.records if name in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert "'dc_no_such_package_44'" in record.getMessage() and "not installed" in record.getMessage()
