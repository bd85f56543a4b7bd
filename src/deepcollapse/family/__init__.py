"""The L-DUFM model family, defined once: a fit loss and an activation, used by every engine.

2024 paper eq. (1) with the loss and the activation as options (issue 9)::

    H~_{l+1} = W_l H_l,   H_{l+1} = σ(H~_{l+1}),
    loss = fit(W_L H_L, Y) + Σ_l λ_{W_l}/2 ‖W_l‖² + λ_{H_1}/2 ‖H_1‖²

``fit`` is ``mse`` (eq. (1)) or ``ce`` (mean softmax cross-entropy, :mod:`.losses`); σ is ``relu``,
``linear`` or ``relu_eps`` (the relaxed ReLU σ_ε of Definition 7, :mod:`.activations`).  numpy-first:
torch is imported only inside the ``torch_*`` methods, so the theory engine stays torch-free.

    fam = get_family(loss="ce", activation="relu_eps", eps=0.1)
    fam.name                                  # 'ce+relu_eps(0.1)'
    fam.activation.forward(X), fam.activation.derivative(X)
    fam.loss.value(out, Y), fam.loss.residual(out, Y)        # residual = N ∂value/∂out
    fam.targets(K, n)                         # Y = I_K ⊗ 1_n^T
    fam.has_closed_form                       # True only for mse+relu (the 2023/2024 papers' closed forms)

The backward pass of every engine is the same for every family (``⊙`` elementwise)::

    G_L = residual(W_L H_L, Y)/N,   G_l = σ'(H~_l) ⊙ (W_l^T G_{l+1})  (l = L .. 2)
    ∂W_l = G_{l+1} H_l^T + λ_{W_l} W_l,   ∂H_1 = W_1^T G_2 + λ_{H_1} H_1
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from deepcollapse._core.checks import ConfigError, check_choice, check_float
from deepcollapse.family.activations import ACTIVATIONS, Activation, Linear, ReLU, ReLUEps
from deepcollapse.family.losses import LOSSES, CrossEntropy, Loss, SquaredError, targets

__all__ = [
    "ACTIVATIONS",
    "LOSSES",
    "Activation",
    "Family",
    "Loss",
    "family_of",
    "get_family",
    "targets",
]

_CLOSED_FORM = {("mse", "relu")}


@dataclass(frozen=True)
class Family:
    """A loss and an activation (build with :func:`get_family`, which validates)."""

    loss: Loss
    activation: Activation

    @property
    def eps(self) -> float | None:
        """ε of σ_ε (``None`` for the other activations).

        Returns
        -------
        float or None
            The activation's ``eps``.

        Examples
        --------
        >>> get_family(activation="relu_eps", eps=0.1).eps, get_family().eps
        (0.1, None)
        """
        return self.activation.eps

    @property
    def name(self) -> str:
        """``"mse+relu"``, ``"ce+linear"``, ``"ce+relu_eps(0.1)"``.

        Returns
        -------
        str
            ``"<loss>+<activation label>"``.

        Examples
        --------
        >>> get_family(loss="ce", activation="relu_eps", eps=0.1).name
        'ce+relu_eps(0.1)'
        """
        return f"{self.loss.name}+{self.activation.label}"

    @property
    def has_closed_form(self) -> bool:
        """Whether the theory engine's closed forms (DNC/SRG losses, the polish) apply: mse+relu only.

        Returns
        -------
        bool
            True for mse+relu.

        Examples
        --------
        >>> get_family().has_closed_form, get_family(loss="ce").has_closed_form
        (True, False)
        """
        return (self.loss.name, self.activation.name) in _CLOSED_FORM

    @property
    def is_default(self) -> bool:
        """Whether this is the default family, mse+relu (2024 paper eq. (1)).

        Returns
        -------
        bool
            True for mse+relu.

        Examples
        --------
        >>> get_family().is_default, get_family(activation="linear").is_default
        (True, False)
        """
        return self.loss.name == "mse" and self.activation.name == "relu"

    def targets(self, classes: int, n: int, dtype: Any = np.float64) -> np.ndarray:
        """``Y = I_K ⊗ 1_n^T`` ``(K, N)`` (the same one-hot targets for both losses).

        Parameters
        ----------
        classes : int
            ``K``.
        n : int
            Samples per class.
        dtype : numpy dtype, default float64
            The dtype of the result.

        Returns
        -------
        numpy.ndarray
            ``(K, K n)`` one-hot targets (:func:`~deepcollapse.family.losses.targets`).

        Examples
        --------
        >>> get_family().targets(2, 1)
        array([[1., 0.],
               [0., 1.]])
        """
        return targets(classes, n, dtype)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Family) and self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Family({self.name!r})"


def get_family(loss: str = "mse", activation: str = "relu", eps: float | None = None) -> Family:
    """The validated family; ``ConfigError`` naming the field (``loss``, ``activation`` or ``eps``).

    Parameters
    ----------
    loss : {"mse", "ce"}, default "mse"
        The fit term (:data:`LOSSES`).
    activation : {"relu", "linear", "relu_eps"}, default "relu"
        σ (:data:`ACTIVATIONS`).
    eps : float, optional
        ε of σ_ε, ``> 0``: required with ``activation="relu_eps"``, ``None`` otherwise.

    Returns
    -------
    Family
        The loss and the activation.

    Examples
    --------
    >>> get_family(loss="ce", activation="relu_eps", eps=0.1)
    Family('ce+relu_eps(0.1)')
    """
    check_choice("loss", loss, LOSSES)
    check_choice("activation", activation, ACTIVATIONS)
    act: Activation
    if activation == "relu_eps":
        if eps is None:
            raise ConfigError("eps == None, must be > 0 with activation = 'relu_eps' (e.g. --eps 0.1).")
        act = ReLUEps(check_float("eps", eps, gt=0.0))
    else:
        if eps is not None:
            raise ConfigError(
                f"eps == {eps}, must be None (unset) unless activation = 'relu_eps' "
                f"(activation == {activation!r})."
            )
        act = ReLU() if activation == "relu" else Linear()
    return Family(loss=SquaredError() if loss == "mse" else CrossEntropy(), activation=act)


def family_of(config: Any) -> Family:
    """The family of a config object or dict with ``loss``/``activation``/``eps`` (missing: the defaults,
    e.g. a run folder written before these fields existed).

    Parameters
    ----------
    config : dict or object
        A dict with (some of) the keys, or an object with (some of) the attributes ``loss``,
        ``activation``, ``eps``.

    Returns
    -------
    Family
        Validated by :func:`get_family`.

    Examples
    --------
    >>> family_of({"loss": "ce"})
    Family('ce+relu')
    """
    if isinstance(config, dict):
        return get_family(config.get("loss", "mse"), config.get("activation", "relu"), config.get("eps"))
    return get_family(
        getattr(config, "loss", "mse"), getattr(config, "activation", "relu"), getattr(config, "eps", None)
    )
