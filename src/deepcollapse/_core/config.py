"""One serialisation for every config dataclass: dict and YAML round trips that reject unknown keys.

A config class is a ``@dataclass`` that validates itself in ``__post_init__`` and inherits
:class:`ConfigMixin`; ``from_dict`` names the first unknown key (``unknown key config.lrr, must be one of
...``) and YAML syntax errors name the file.  ``_ALIASES`` maps a convenience key to the fields it sets when
they are not given explicitly (the ``lam`` alias of the DUFM config sets ``lam_h`` and ``lam_w``);
``_RENAMED`` maps an old key to the field that replaced it (accepted with a ``DeprecationWarning`` for one
release, so YAML files and run folders written before the rename still load).

:class:`KeywordChecked` (a base of :class:`ConfigMixin`, and of the ``Problem`` and ``Criteria`` values)
turns a misspelt keyword of the constructor itself (``DUFMConfig(widht=3)``) into a one-line
:class:`ConfigError` with the nearest field (``did you mean 'width'?``) instead of the dataclass's bare
``TypeError``.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

import yaml

from deepcollapse._core.checks import ConfigError, check_keys, one_of_message
from deepcollapse._core.io import atomic_write_text, parse_yaml, read_yaml

__all__ = ["ConfigMixin", "KeywordChecked"]


class KeywordChecked:
    """A dataclass base whose constructor names a misspelt keyword and its nearest field (``ConfigError``).

    The check runs in ``__new__``, before the generated ``__init__``: every keyword must be an ``init``
    field of the dataclass.

    Examples
    --------
    >>> import dataclasses
    >>> @dataclasses.dataclass
    ... class Job(KeywordChecked):
    ...     width: int = 1
    >>> Job(width=3).width
    3
    >>> try:
    ...     Job(widht=3)
    ... except ConfigError as e:
    ...     print(e)
    unknown keyword Job(widht=...): did you mean 'width'? Must be one of width.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        if kwargs and dataclasses.is_dataclass(cls):
            names = [f.name for f in dataclasses.fields(cls) if f.init]
            for key in kwargs:
                if key not in names:
                    raise ConfigError(
                        one_of_message(
                            f"unknown keyword {cls.__name__}({key}=...)", key, names, show_value=False
                        )
                    )
        return super().__new__(cls)


class ConfigMixin(KeywordChecked):
    """``to_dict`` / ``from_dict`` / ``to_yaml`` / ``from_yaml`` / ``replace`` for a config dataclass."""

    _ALIASES: ClassVar[dict[str, tuple[str, ...]]] = {}
    _RENAMED: ClassVar[dict[str, str]] = {}  # old key -> new field name (deprecated spellings)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, (list, tuple)) else v
        return out

    @classmethod
    def upgrade_keys(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``data`` with the old keys of :attr:`_RENAMED` replaced by the new ones, warning once
        per old key (``DeprecationWarning``); a key given under both names is a :class:`ConfigError`.

        Parameters
        ----------
        data
            Config keys and values (a YAML file's mapping, ``from_dict``'s argument).

        Returns
        -------
        dict[str, Any]
            The same values under the current field names.
        """
        d = dict(data)
        for old, new in cls._RENAMED.items():
            if old in d:
                warnings.warn(
                    f"{cls.__name__} key {old!r} is deprecated, use {new!r} "
                    "(the old key is accepted until the next release).",
                    DeprecationWarning,
                    stacklevel=3,
                )
                if new in d:
                    raise ConfigError(f"config has both {old} and {new}, must have only {new}.")
                d[new] = d.pop(old)
        return d

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        if not isinstance(data, dict):
            raise ConfigError(f"config == {data!r}, must be a mapping of {cls.__name__} fields.")
        d = cls.upgrade_keys(data)
        for alias, targets in cls._ALIASES.items():
            if alias in d:
                value = d.pop(alias)
                for target in targets:
                    d.setdefault(target, value)
        check_keys("config", d.keys(), [f.name for f in dataclasses.fields(cls)])  # type: ignore[arg-type]
        return cls(**d)

    def to_yaml(self, path: str | Path | None = None) -> str:
        text = yaml.safe_dump(self.to_dict(), sort_keys=False)
        if path is not None:
            atomic_write_text(path, text)
        return text

    @classmethod
    def from_yaml(cls, path_or_text: str | Path) -> Self:
        """Read a config from a YAML file, or from YAML text (a string with a newline)."""
        expected = f"{cls.__name__} fields"
        if isinstance(path_or_text, str) and "\n" in path_or_text:
            if not path_or_text.strip():
                return cls.from_dict({})
            return cls.from_dict(parse_yaml(path_or_text, "<text>", expected=expected))
        return cls.from_dict(read_yaml(path_or_text, expected=expected))

    def replace(self, **changes: Any) -> Self:
        """A validated copy with ``changes`` applied."""
        return type(self).from_dict({**self.to_dict(), **changes})
