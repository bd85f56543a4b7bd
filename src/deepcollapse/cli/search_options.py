"""The problem options of the commands that name one instance of eq. (1) by its fields (``dufm search``,
``dufm landscape``): ``--classes .. --width``, ``--lam`` and the model family, generated from
:class:`~deepcollapse.landscape.search_config.SearchConfig`'s fields (their defaults and help words), and
their values as given.  Private helpers shared by :mod:`deepcollapse.cli.dufm` and
:mod:`deepcollapse.cli.landscape`.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from deepcollapse.cli.options import (
    add_config_options,
    add_option,
    config_values,
    field_default,
    shown_default,
)
from deepcollapse.landscape.search_config import SearchConfig

__all__: list[str] = []


def _field(config_cls: type, name: str) -> dataclasses.Field[Any]:
    return next(f for f in dataclasses.fields(config_cls) if f.name == name)


_PROBLEM = ("classes", "layers", "n", "lam_h", "lam_w", "width")  # the SearchConfig fields naming eq. (1)
_FAMILY = ("loss", "activation", "eps")  # and its model family (the same fields as DUFMConfig's)


def _add_problem(p: argparse.ArgumentParser, command: str) -> None:
    """``--lam`` and the problem options of :class:`SearchConfig` (its fields, defaults and help)."""
    add_option(p, "--lam", "every λ", type=float, shown_default=shown_default(_field(SearchConfig, "lam_h")))
    # λ_W stays text: one λ for every layer or L of them (check_per_layer)
    overrides: dict[str, dict[str, Any]] = {"lam_w": {"type": str, "shown_default": "--lam for every layer"}}
    if command == "dufm landscape":  # a file or a run folder brings its own family
        fields = {f.name: f for f in dataclasses.fields(SearchConfig)}
        overrides.update(
            {
                f: {"help": fields[f].metadata["help"] + "; for a construction (a TARGET has its own)"}
                for f in _FAMILY
            }
        )
    add_config_options(p, SearchConfig, include=_PROBLEM + _FAMILY, overrides=overrides, command=command)


def _problem_values(args: argparse.Namespace) -> dict[str, Any]:
    """The problem options given, the SearchConfig defaults for the others; λs from ``--lam`` if not given."""
    values = {name: field_default(_field(SearchConfig, name)) for name in _PROBLEM}
    values.update({k: v for k, v in config_values(args, SearchConfig).items() if k in _PROBLEM})
    lam = args.lam if args.lam is not None else field_default(_field(SearchConfig, "lam_h"))
    values["lam_h"] = lam if args.lam_h is None else args.lam_h
    values["lam_w"] = lam if args.lam_w is None else args.lam_w
    return values


def _family_given(args: argparse.Namespace) -> dict[str, Any]:
    """``loss``, ``activation``, ``eps`` as given (``None``: not given)."""
    return {name: getattr(args, name, None) for name in _FAMILY}
