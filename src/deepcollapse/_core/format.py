"""Numbers for people: the one formatting helper of every terminal print (files keep full precision).

:func:`fmt_num` prints about 5 significant digits (``digits`` from 4 to 6; losses that are compared with each
other use 6), in plain notation where that is short and exact enough (``1e-3 <= |x| < 1e5``) and in
scientific notation otherwise, with a short exponent (``3.1e-3``, ``1.2346e5``, not ``3.1e-03``); integers
are printed exactly, ``None`` as ``-``.  ``17.961154758930206`` is printed ``17.961``,
``126.36472975132585`` ``126.36``, ``0.0030561`` ``0.0030561``, ``4.0820647e-07`` ``4.0821e-7``.

:func:`fmt_time` prints a duration in seconds as ``0.21 s``, ``12 s``, ``3 min 12 s`` or ``1 h 02 min``, and
:func:`fmt_table` lays out rows as a fixed-width text table (numbers right-aligned through :func:`fmt_num`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["fmt_list", "fmt_num", "fmt_ranges", "fmt_table", "fmt_time"]


def _short_exponent(text: str) -> str:
    mantissa, _, exponent = text.partition("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def fmt_num(x: Any, digits: int = 5) -> str:
    """``x`` with about ``digits`` significant digits (module docstring).

    Parameters
    ----------
    x : Any
        A number (Python or numpy; ``bool`` and integers printed as they are), ``None`` (``-``) or anything
        else (``str(x)``).
    digits : int
        Significant digits, 4 to 6 on a terminal.

    Returns
    -------
    str
        The text.

    Examples
    --------
    >>> fmt_num(17.961154758930206), fmt_num(126.36472975132585), fmt_num(4.0820647e-07)
    ('17.961', '126.36', '4.0821e-7')
    >>> fmt_num(0.052384387, 6), fmt_num(123456.0), fmt_num(None), fmt_num(3)
    ('0.0523844', '1.2346e5', '-', '3')
    """
    if x is None:
        return "-"
    if isinstance(x, bool) or isinstance(x, numbers.Integral):
        return str(x) if isinstance(x, bool) else str(int(x))
    if not isinstance(x, numbers.Real):
        return str(x)
    v = float(x)
    if not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if v == 0.0:
        return "0"
    if 1e-3 <= abs(v) < 1e5:
        text = f"{v:.{digits}g}"
        return _short_exponent(text) if "e" in text else text
    return _short_exponent(f"{v:.{digits - 1}e}")


def fmt_list(xs: Sequence[Any] | None, digits: int = 5) -> str:
    """``[a, b, c]`` with each entry through :func:`fmt_num` (``-`` for ``None``)."""
    if xs is None:
        return "-"
    return "[" + ", ".join(fmt_num(x, digits) for x in xs) + "]"


def fmt_ranges(values: Sequence[int], sep: str = "..", empty: str = "none") -> str:
    """Integers as runs of consecutive values: ``[3, 5, 6, 7]`` -> ``"3, 5..7"`` (``empty`` when none).

    Examples
    --------
    >>> fmt_ranges([7, 3, 5, 6]), fmt_ranges([6, 7, 29, 30, 31], sep="-"), fmt_ranges([])
    ('3, 5..7', '6-7, 29-31', 'none')
    """
    runs: list[list[int]] = []
    for v in sorted(values):
        if runs and v == runs[-1][-1] + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}{sep}{r[-1]}" for r in runs) or empty


def fmt_time(seconds: float | None) -> str:
    """A duration for people: ``0.21 s``, ``12 s``, ``3 min 12 s``, ``1 h 02 min`` (``-`` for ``None``).

    Examples
    --------
    >>> fmt_time(0.2134), fmt_time(12.4), fmt_time(192.0), fmt_time(3725.0)
    ('0.21 s', '12 s', '3 min 12 s', '1 h 02 min')
    """
    if seconds is None or not math.isfinite(seconds):
        return "-"
    if seconds < 10:
        return f"{seconds:.2g} s" if seconds < 1 else f"{seconds:.1f} s".replace(".0 s", " s")
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        m, s = divmod(round(seconds), 60)
        return f"{m} min {s} s" if s else f"{m} min"
    h, m = divmod(round(seconds / 60), 60)
    return f"{h} h {m:02d} min"


def fmt_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    *,
    headers: Mapping[str, str] | None = None,
    digits: int = 5,
    max_rows: int | None = None,
) -> str:
    """A fixed-width text table of ``rows`` (numbers through :func:`fmt_num`, right-aligned; text
    left-aligned), one header line; with ``max_rows`` the rest is counted in a last line.

    Parameters
    ----------
    rows : sequence of mappings
        One mapping per row.
    columns : sequence of str, optional
        The keys shown, in order (default: the first row's).
    headers : mapping, optional
        A header per key (default: the key).
    digits : int
        Significant digits of the numbers.
    max_rows : int, optional
        Show at most this many rows.

    Returns
    -------
    str
        The table, without a final newline (``""`` for no rows).

    Examples
    --------
    >>> print(fmt_table([{"point": "a", "loss": 0.123456789}, {"point": "bb", "loss": 12.0}]))
    point     loss
    a      0.12346
    bb          12
    """
    if not rows:
        return ""
    cols = list(columns) if columns is not None else list(rows[0])
    heads = [(headers or {}).get(c, c) for c in cols]
    shown = list(rows if max_rows is None else rows[:max_rows])

    def is_num(v: Any) -> bool:
        return v is None or (isinstance(v, numbers.Number) and not isinstance(v, bool))

    cells = [[fmt_num(r.get(c), digits) for c in cols] for r in shown]
    numeric = [all(is_num(r.get(c)) for r in shown) for c in cols]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(heads)]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)]
        return "  ".join(parts).rstrip()

    out = [line(heads)] + [line(row) for row in cells]
    if max_rows is not None and len(rows) > max_rows:
        more = len(rows) - max_rows
        out.append(f"... {more} more row{'s' if more > 1 else ''}")
    return "\n".join(out)
