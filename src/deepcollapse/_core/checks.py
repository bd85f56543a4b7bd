"""Validation helpers: one message format for every bad input in the toolkit.

Every user-facing check raises :class:`ConfigError` (a ``ValueError``) with a message of the form

    ``<field> == <value>, must be <what is allowed>.``

(the scikit-learn ``check_scalar`` convention), so the command line can print it as a one-line error with exit
code 2 and library users can catch a single exception type.  Use ``raise``, never ``assert``, for user input.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "ConfigError",
    "DeepCollapseError",
    "Interrupted",
    "check_choice",
    "check_finite_array",
    "check_float",
    "check_int",
    "check_keys",
    "check_per_layer",
    "did_you_mean",
    "one_of_message",
    "rank_tolerance",
]


class DeepCollapseError(Exception):
    """Base class of the errors this package raises on purpose."""


class ConfigError(DeepCollapseError, ValueError):
    """A bad value for a named field (option, argument, config key)."""


class Interrupted(KeyboardInterrupt):
    """Long work stopped by a signal after saving its state: ``signum`` (SIGINT 2, SIGTERM 15), a one-line
    ``message`` and ``resume``, the command that continues where it stopped.  The CLI prints both and exits
    with ``128 + signum`` (130 for Ctrl-C, 143 for SIGTERM), the shell convention."""

    def __init__(self, signum: int, message: str, resume: str | None = None) -> None:
        super().__init__(message)
        self.signum = int(signum)
        self.message = message
        self.resume = resume

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    def __reduce__(self) -> tuple[Any, ...]:
        # picklable with its fields (a worker process or a Ray task sends it back to the driver)
        return (type(self), (self.signum, self.message, self.resume))


def one_of_message(head: str, value: Any, allowed: Iterable[Any], *, show_value: bool = True) -> str:
    """``"<head> == <value>, must be one of a, b, c."``, or with a near miss the suggestion first, where it is
    seen however long the list: ``"<head> == <value>: did you mean 'x'? Must be one of a, b, c."``.

    Parameters
    ----------
    head : str
        What the value is (``"experiment"``, ``"unknown key DUFMConfig.lamm"``).
    value : Any
        The value given (near misses are looked for among ``allowed``).
    allowed : iterable
        The values allowed.
    show_value : bool
        Write ``" == <value>"`` after ``head`` (``False`` when ``head`` names it already).

    Returns
    -------
    str
        The message.
    """
    import difflib

    names = list(allowed)
    shown = ", ".join(map(_fmt, names)) if show_value else ", ".join(map(str, names))
    text = f"{head} == {_fmt(value)}" if show_value else head
    close = (
        difflib.get_close_matches(value, [str(a) for a in names], n=1, cutoff=0.6)
        if isinstance(value, str)
        else []
    )
    if close:
        return f"{text}: did you mean {close[0]!r}? Must be one of {shown}."
    return f"{text}, must be one of {shown}."


def did_you_mean(value: Any, allowed: Iterable[Any]) -> str:
    """``" Did you mean 'x'?"`` when ``value`` is a near miss of one of ``allowed`` (difflib), else ``""``."""
    import difflib

    if not isinstance(value, str):
        return ""
    names = [str(a) for a in allowed]
    close = difflib.get_close_matches(value, names, n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def _fmt(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def check_int(name: str, value: Any, *, min: int | None = None, max: int | None = None) -> int:
    """Return ``value`` as an int or raise ``ConfigError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise ConfigError(f"{name} == {_fmt(value)}, must be an integer.")
    value = int(value)
    if min is not None and value < min:
        raise ConfigError(f"{name} == {value}, must be >= {min}.")
    if max is not None and value > max:
        raise ConfigError(f"{name} == {value}, must be <= {max}.")
    return value


def check_float(
    name: str,
    value: Any,
    *,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
) -> float:
    """Return ``value`` as a finite float or raise ``ConfigError`` naming ``name``."""
    if isinstance(value, bool):
        raise ConfigError(f"{name} == {value}, must be a real number.")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} == {_fmt(value)}, must be a real number.") from None
    if not math.isfinite(x):
        raise ConfigError(f"{name} == {x}, must be finite.")
    if gt is not None and not x > gt:
        raise ConfigError(f"{name} == {x}, must be > {gt}.")
    if ge is not None and not x >= ge:
        raise ConfigError(f"{name} == {x}, must be >= {ge}.")
    if lt is not None and not x < lt:
        raise ConfigError(f"{name} == {x}, must be < {lt}.")
    if le is not None and not x <= le:
        raise ConfigError(f"{name} == {x}, must be <= {le}.")
    return x


def check_choice(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    """Raise ``ConfigError`` unless ``value`` is one of ``allowed``."""
    allowed = list(allowed)
    if value not in allowed:
        raise ConfigError(one_of_message(name, value, allowed))
    return value


def check_keys(name: str, keys: Iterable[str], allowed: Iterable[str]) -> None:
    """Raise ``ConfigError`` naming the first unknown key of a mapping (e.g. a YAML config)."""
    allowed = sorted(allowed)
    for key in keys:
        if key not in allowed:
            message = one_of_message(f"unknown key {name}.{key}", key, allowed, show_value=False)
            raise ConfigError(message)


def check_per_layer(name: str, value: Any, layers: int, *, gt: float | None = 0.0) -> list[float]:
    """Expand one number, a sequence of ``layers`` numbers, or a comma-separated string, into a float list.

    Used for per-layer weight decays (``--lam-w 0.004`` or ``--lam-w 0.004,0.004,0.002``).
    """
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if not parts:
            raise ConfigError(f"{name} == {value!r}, must be a number or a comma-separated list of {layers}.")
        value = parts if len(parts) > 1 else parts[0]
    if isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, str):
        vals = list(value)
        if len(vals) != layers:
            raise ConfigError(
                f"{name} has {len(vals)} values ({', '.join(map(str, vals))}), "
                f"must have 1 or layers = {layers}."
            )
        return [check_float(f"{name}[{i}]", v, gt=gt) for i, v in enumerate(vals)]
    return [check_float(name, value, gt=gt)] * layers


def check_finite_array(name: str, array: Any) -> None:
    """Raise ``ConfigError`` if a numpy array / torch tensor holds NaN or inf (counting them)."""
    a = array.detach().cpu().numpy() if hasattr(array, "detach") else np.asarray(array)
    bad = ~np.isfinite(a)
    if bad.any():
        raise ConfigError(f"{name} has {int(bad.sum())} non-finite entries (NaN or inf), must be all finite.")


def rank_tolerance(
    s_max: float, shape: tuple[int, int], dtype: Any = np.float64, rtol: float | None = None
) -> float:
    """The absolute threshold below which a singular value counts as zero.

    Default (numpy ``matrix_rank`` convention): ``max(shape) * eps(dtype) * s_max``, with ``eps`` the
    machine epsilon of the dtype the matrix was *computed* in (2.2e-16 for float64, 1.2e-7 for float32).
    Pass ``rtol`` to use ``rtol * s_max`` instead (e.g. ``rtol=1e-3`` for "numerically low rank" after
    finite training).
    """
    if rtol is not None:
        return float(rtol) * float(s_max)
    np_type = _np_dtype(dtype)
    eps = 2.0**-7 if np_type == "bfloat16" else float(np.finfo(np_type).eps)
    return float(max(shape)) * eps * float(s_max)


def _np_dtype(dtype: Any) -> Any:
    """Map a torch or numpy dtype (or its name) to the numpy floating type whose epsilon applies."""
    name = str(dtype).replace("torch.", "")
    if name == "bfloat16":  # 8 significand bits: eps = 2**-7 (no numpy type)
        return "bfloat16"
    try:
        np_dtype = np.dtype(name if "torch." in str(dtype) or isinstance(dtype, str) else dtype)
    except TypeError:
        np_dtype = np.dtype(np.float64)
    if np_dtype.kind != "f":
        return np.float64
    return np_dtype.type
