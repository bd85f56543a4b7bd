"""The model-family options (``--loss``, ``--activation``, ``--eps``) as config fields, defined once.

Every config that names a model family (:class:`~deepcollapse.dufm.config.DUFMConfig`,
:class:`~deepcollapse.landscape.search.SearchConfig`) declares its three fields with these factories, so the
options generated from them (:func:`deepcollapse.cli.options.add_config_options`) have one name, one help
text, one choices list and one default in every command; :func:`check_family_fields` is their one validation.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from deepcollapse._core.checks import check_float
from deepcollapse.family.activations import ACTIVATIONS
from deepcollapse.family.losses import LOSSES

__all__ = ["FAMILY_FIELDS", "activation_field", "check_family_fields", "eps_field", "loss_field"]

#: the names of the three fields (and of the keys of a family in a dict or a solution file)
FAMILY_FIELDS = ("loss", "activation", "eps")


def loss_field() -> Any:
    """The ``loss`` field (``--loss``): ``"mse"`` (eq. (1)) or ``"ce"``.

    Returns
    -------
    dataclasses.Field
        Default ``"mse"``, with its help and choices.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class C:
    ...     loss: str = loss_field()
    >>> C().loss
    'mse'
    """
    return field(
        default="mse",
        metadata={"help": "fit term: mse (eq. (1)) or ce (mean softmax cross-entropy)", "choices": LOSSES},
    )


def activation_field() -> Any:
    """The ``activation`` field (``--activation``): ``"relu"``, ``"linear"`` or ``"relu_eps"``.

    Returns
    -------
    dataclasses.Field
        Default ``"relu"``, with its help and choices.

    Examples
    --------
    >>> from dataclasses import dataclass, fields
    >>> @dataclass
    ... class C:
    ...     activation: str = activation_field()
    >>> fields(C)[0].metadata["choices"]
    ('relu', 'linear', 'relu_eps')
    """
    return field(
        default="relu",
        metadata={
            "help": "σ: relu, linear or relu_eps (the smooth σ_ε of Definition 7, needs --eps)",
            "choices": ACTIVATIONS,
        },
    )


def eps_field() -> Any:
    """The ``eps`` field (``--eps``): ε of σ_ε, only with ``activation = "relu_eps"``.

    Returns
    -------
    dataclasses.Field
        Default ``None``.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class C:
    ...     eps: float | None = eps_field()
    >>> C().eps is None
    True
    """
    return field(
        default=None, metadata={"help": "ε of --activation relu_eps, > 0 (unset for the other activations)"}
    )


def check_family_fields(config: Any) -> None:
    """Validate (and normalise ``eps`` to a float) the three fields of ``config`` in place: a one-line
    ``ConfigError`` naming ``loss``, ``activation`` or ``eps``.

    Parameters
    ----------
    config
        A config dataclass instance with ``loss``, ``activation`` and ``eps`` attributes.

    Returns
    -------
    None
        ``config.eps`` is normalised in place.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> config = SimpleNamespace(loss="mse", activation="relu_eps", eps=1)
    >>> check_family_fields(config); config.eps
    1.0
    """
    from deepcollapse.family import get_family

    if config.eps is not None and not isinstance(config.eps, bool):
        config.eps = check_float("eps", config.eps, gt=0.0)
    get_family(config.loss, config.activation, config.eps)  # ConfigError naming loss / activation / eps
