"""Typed results: the base of every result dataclass (training summaries, searches, landscapes, comparisons).

A result is a frozen dataclass whose fields are named and documented in its class docstring (the schema of the
JSON the toolkit writes) and that derives from :class:`Result`, which gives it

- ``to_dict()`` -- the JSON-ready dict (nested results, tuples and numpy values converted recursively);
  for a result returned by the toolkit it is exactly the dict its function returned before results were typed,
  key for key and in the same order, so the files written from it are byte-identical;
- ``from_dict(data)`` -- the result read back from such a dict, e.g. a ``summary.json`` written by this or an
  earlier release: keys a file lacks read as the field's default (``None``) and are left out again by
  ``to_dict()``; keys the class does not know are kept and written back, so ``from_dict(d).to_dict() == d``;
- read-only ``Mapping`` access -- ``result["loss_dnc"]``, ``result.get(...)``, ``"runs" in result``,
  ``keys()``, ``items()``, ``dict(result)``, ``{**result}`` -- so that code written against the plain dicts
  of earlier releases keeps working for one release (new code reads the attributes: ``result.loss_dnc``).
  Like SciPy's ``OptimizeResult``, one object answers both.

Which keys a result holds is part of its value: a DUFM run that diverged has no ``norms``, a training stopped
early by ``max_steps`` only ``step`` and ``finished``. ``from_dict`` records the keys (and their order) of the
dict it reads; a result built directly from its fields holds all of them, in declaration order.

To add a result: ``@dataclass(frozen=True, eq=False) class MyResult(Result)`` with one field per key and a
numpydoc ``Attributes`` section; a key every produced instance holds may be a required field
(``kw_only=True``), the others default to ``None``; ``from_dict`` reads a key an older file lacks as
``None`` either way.  Name the fields that hold nested results in ``_nested`` (a result or a list of them)
or ``_nested_values`` (a dict of them).

Equality compares the ``to_dict()`` values, with NaN equal to NaN in the same place.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, TypeVar

import numpy as np

__all__ = ["Result", "to_jsonable"]

R = TypeVar("R", bound="Result")


def to_jsonable(x: Any, *, strict: bool = False) -> Any:
    """``x`` with every result, mapping, tuple and numpy value converted recursively to JSON types.

    ``strict=False`` keeps non-finite floats (``NaN``, ``inf``); ``strict=True`` maps them to ``None`` (strict
    JSON: :func:`deepcollapse._core.io.finite_or_none`, which every run-folder writer uses).
    """
    if isinstance(x, Result):
        x = x.to_dict()
    elif dataclasses.is_dataclass(x) and not isinstance(x, type) and hasattr(x, "to_dict"):
        x = x.to_dict()  # a config dataclass (ConfigMixin) held by a result
    if isinstance(x, Mapping):
        return {k: to_jsonable(v, strict=strict) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v, strict=strict) for v in x]
    if isinstance(x, np.ndarray):
        return to_jsonable(x.tolist(), strict=strict)
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return None if strict and not math.isfinite(x) else float(x)
    return x


def _same(a: Any, b: Any) -> bool:
    """``a == b`` for JSON values, with NaN equal to NaN in the same place (a result holding NaN equals
    itself)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


# names a field may not take: the Mapping and conversion methods of Result
_RESERVED = frozenset({"get", "items", "keys", "values", "to_dict", "from_dict"})


class Result(Mapping[str, Any]):
    """Base of the result dataclasses: ``to_dict()``, ``from_dict()`` and read-only ``Mapping`` access.

    Subclasses are ``@dataclass(frozen=True, eq=False)`` (``eq=False`` keeps this class's ``__eq__``, which
    compares the JSON dicts and so also answers ``result == json.load(f)``).  See the module docstring.
    """

    #: fields holding a nested result (or a list of them), read back with that class's ``from_dict``
    _nested: ClassVar[dict[str, type[Result]]] = {}
    #: fields holding a dict ``{name: nested result}``
    _nested_values: ClassVar[dict[str, type[Result]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        hidden = sorted(set(inspect.get_annotations(cls)) & _RESERVED)
        if hidden:
            raise TypeError(f"{cls.__name__}: a field named {', '.join(hidden)} would hide that method.")

    # -- the keys this result holds ----------------------------------------------------------------------
    def _keys(self) -> tuple[str, ...]:
        keys = self.__dict__.get("_present")
        if keys is None:
            return tuple(f.name for f in dataclasses.fields(self))  # type: ignore[arg-type]
        return keys  # type: ignore[no-any-return]

    def _extra(self) -> dict[str, Any]:
        return self.__dict__.get("_unknown") or {}

    # -- conversion ----------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of this result (see the module docstring); a new dict on every call.

        Returns
        -------
        dict
            One entry per key the result holds, in order; nested results, tuples and numpy values are
            converted recursively (:func:`to_jsonable`).
        """
        return {k: to_jsonable(self[k]) for k in self._keys()}

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        """The result held by ``data`` (a dict returned or written by this or an earlier release).

        Parameters
        ----------
        data : mapping
            Keys as in the class docstring; missing keys read as ``None`` (and stay missing in
            ``to_dict()``), unknown keys are kept as they are.

        Returns
        -------
        Result
            An instance of ``cls``; nested results are read with their own ``from_dict``.
        """
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping):
            raise TypeError(f"{cls.__name__}.from_dict needs a mapping, got {type(data).__name__}")
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]
        names = {f.name for f in fields}
        kwargs = {k: cls._read(k, v) for k, v in data.items() if k in names}
        for f in fields:  # a required field an older file lacks reads as None (and stays missing)
            if f.name not in kwargs and f.default is f.default_factory is dataclasses.MISSING:
                kwargs[f.name] = None
        obj = cls(**kwargs)
        object.__setattr__(obj, "_present", tuple(data))
        object.__setattr__(obj, "_unknown", {k: v for k, v in data.items() if k not in names})
        return obj

    @classmethod
    def _read(cls, name: str, value: Any) -> Any:
        if name in cls._nested:
            sub = cls._nested[name]
            if isinstance(value, Mapping):
                return sub.from_dict(value)
            if isinstance(value, list):
                return [sub.from_dict(v) if isinstance(v, Mapping) else v for v in value]
        elif name in cls._nested_values and isinstance(value, Mapping):
            sub = cls._nested_values[name]
            return {k: sub.from_dict(v) if isinstance(v, Mapping) else v for k, v in value.items()}
        return value

    # -- read-only Mapping access (the plain dicts of earlier releases) ------------------------------------
    def __getitem__(self, key: str) -> Any:
        if key in self._keys():
            extra = self._extra()
            return extra[key] if key in extra else getattr(self, key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Result):
            return type(self) is type(other) and _same(self.to_dict(), other.to_dict())
        if isinstance(other, Mapping):
            return _same(self.to_dict(), to_jsonable(other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]
